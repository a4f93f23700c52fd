// SPDX-License-Identifier: Apache-2.0
// gecko list: the key's topics and services as the core sees them.
#include <cstdio>
#include <set>

#include "cli.hpp"
#include "commands.hpp"
#include "format.hpp"
#include "query.hpp"

#include <nlohmann/json.hpp>

namespace gecko::tools {

namespace {

std::string join_where(const std::vector<GraphEntity>& entities) {
    if (entities.empty()) return "-";
    std::string s;
    for (const auto& e : entities) s += (s.empty() ? "" : ", ") + where(e);
    return s;
}

nlohmann::json entity_json(const GraphEntity& e) {
    nlohmann::json j = {{"id", e.id},     {"kind", e.kind}, {"topic", e.topic}, {"type", e.type}, {"latched", e.latched},
                        {"node", e.node}, {"session", e.session}, {"host", e.host}, {"pid", e.pid}};
    if (e.figures) {
        const auto& f = *e.figures;
        j["figures"] = {{"messages_per_s", f.messages_per_s}, {"bytes_per_s", f.bytes_per_s}, {"drops", f.drops},
                        {"latency_ns", f.latency_ns},         {"unheard", f.unheard},         {"age_ms", f.age_ms}};
    } else {
        j["figures"] = nullptr;
    }
    return j;
}

// The graph as one JSON object: what `gecko list --json` prints (documented in tools/gecko/README.md).
std::string graph_json(const Graph& g) {
    nlohmann::json j;
    j["key"] = g.key;
    j["core"] = {{"endpoint", g.core_endpoint}, {"instance", g.core_instance}, {"host", g.core_host}, {"pid", g.core_pid}};
    j["secured"] = !g.secured_fingerprint.empty();
    if (!g.secured_fingerprint.empty()) j["fingerprint"] = g.secured_fingerprint;
    j["nodes"] = nlohmann::json::array();
    for (const auto& n : g.nodes) {
        nlohmann::json links = nlohmann::json::array();
        for (const auto& l : n.links) links.push_back({{"session", l.session}, {"node", l.node}, {"transport", l.transport}});
        j["nodes"].push_back({{"name", n.name}, {"host", n.host}, {"pid", n.pid}, {"session", n.session},
                              {"silent_ms", n.silent_ms}, {"locators", n.locators}, {"entities", n.entities},
                              {"links", links}});
    }
    j["topics"] = nlohmann::json::array();
    j["services"] = nlohmann::json::array();
    for (const auto& t : g.topics) {
        nlohmann::json producers = nlohmann::json::array(), consumers = nlohmann::json::array();
        for (const auto& e : t.producers) producers.push_back(entity_json(e));
        for (const auto& e : t.consumers) consumers.push_back(entity_json(e));
        nlohmann::json item = {{"name", t.name}, {"type", t.type}, {"types", t.types}};
        item[t.service ? "servers" : "publishers"] = std::move(producers);
        item[t.service ? "clients" : "subscribers"] = std::move(consumers);
        j[t.service ? "services" : "topics"].push_back(std::move(item));
    }
    j["conflicts"] = nlohmann::json::array();
    for (const auto& c : g.conflicts)
        j["conflicts"].push_back({{"topic", c.topic}, {"service", c.service}, {"types", c.types}, {"message", c.message}});
    j["counters"] = g.counters;
    // Names come from other nodes: invalid UTF-8 is replaced, never thrown over.
    return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

std::string render_list(const Graph& r) {
    std::string out = "key '" + r.key + "': " + std::to_string(r.nodes.size()) + " node" +
                      (r.nodes.size() == 1 ? "" : "s") + ", core " + r.core_endpoint + " (" + r.core_host + ", pid " +
                      std::to_string(r.core_pid) + ")" +
                      (r.secured_fingerprint.empty() ? std::string()
                                                     : ", secured (secret " + r.secured_fingerprint + "): every tcp and ipc link is CurveZMQ") +
                      "\n\n";
    std::set<std::pair<bool, std::string>> conflicted;
    for (const auto& c : r.conflicts) conflicted.emplace(c.service, c.topic);

    Table topics({"TOPIC", "TYPE", "RATE", "BANDWIDTH", "DROPS", "LATENCY", "PUBLISHERS", "SUBSCRIBERS"});
    Table services({"SERVICE", "TYPE", "SERVERS", "CLIENTS"});
    for (const auto& t : r.topics) {
        // A topic only tools (typeless subscribers) listen to has no type yet.
        const std::string type = (t.type.empty() || t.type == "*" ? std::string("-") : t.type) +
                                 (conflicted.count({t.service, t.name}) ? " (!)" : "");
        if (t.service) {
            services.add({t.name, type, join_where(t.producers), join_where(t.consumers)});
            continue;
        }
        // Rates are what the publishers report; drops and latency what the subscribers see.
        double rate = 0, bandwidth = 0, latency_sum = 0;
        std::uint64_t drops = 0;
        int rate_reports = 0, drop_reports = 0, latency_reports = 0;
        for (const auto& p : t.producers) {
            if (!p.figures) continue;
            rate += p.figures->messages_per_s;
            bandwidth += p.figures->bytes_per_s;
            ++rate_reports;
        }
        for (const auto& c : t.consumers) {
            if (!c.figures) continue;
            drops += c.figures->drops;
            ++drop_reports;
            if (c.figures->latency_ns >= 0) {
                latency_sum += static_cast<double>(c.figures->latency_ns);
                ++latency_reports;
            }
        }
        topics.add({t.name, type, rate_reports ? format_hz(rate) : "-",
                    rate_reports ? format_bytes(bandwidth) + "/s" : "-", drop_reports ? std::to_string(drops) : "-",
                    latency_reports ? format_ns(latency_sum / latency_reports) : "-", join_where(t.producers),
                    join_where(t.consumers)});
    }
    if (topics.rows() == 0)
        out += "no topics\n";
    else
        out += topics.render();
    if (services.rows() > 0) out += "\n" + services.render();
    if (!r.conflicts.empty()) {
        out += "\n(!) type conflicts: no data flows between entities of different types\n";
        for (const auto& c : r.conflicts) out += "  " + c.message + "\n";
    }
    // The core's counters that mean something is wrong on the network.
    static const std::pair<const char*, const char*> problems[] = {
        {"duplicate_cores", "announcements from another geckocore for this key: nodes may be split between two cores"},
        {"malformed_datagrams", "malformed datagrams on the multicast port (ignored)"},
        {"malformed_messages", "malformed messages from nodes (ignored)"},
        {"datagrams_refused", "discovery datagrams that were not authentic (refused: docs/SECURITY.md §6)"},
        {"handshakes_refused", "connections whose CURVE handshake failed (no secret, or another one: docs/SECURITY.md §5)"},
    };
    std::string notes;
    for (const auto& [name, meaning] : problems) {
        const auto it = r.counters.find(name);
        if (it != r.counters.end() && it->second > 0) notes += "  " + std::to_string(it->second) + " " + meaning + "\n";
    }
    if (!notes.empty()) out += "\n(!) geckocore counters:\n" + notes;
    return out;
}

int run_list(const Args& args) {
    Connection connection;
    bool json = false, topic_names = false, service_names = false;
    Parser parser("list", "[options]",
                  "Lists the topics and services of a key as its geckocore sees them: type, publishers and\n"
                  "subscribers (node@host:pid), rates (messages/s and bytes/s reported by publishers every\n"
                  "~3 s), drops and latency (reported by subscribers). Type conflicts are flagged (!).\n"
                  "--names and --service-names print bare names, one a line (for scripts and completion).");
    parser.flag("--json", "print the whole graph as one JSON object", json)
        .flag("--names", "print only the topic names, one a line", topic_names)
        .flag("--service-names", "print only the service names, one a line", service_names)
        .connection(connection);
    if (!parser.parse(args)) return exit_ok;

    const auto result = query(connection);
    if (json) {
        std::printf("%s\n", graph_json(result).c_str());
        return exit_ok;
    }
    if (topic_names || service_names) {
        for (const auto& t : result.topics)
            if (t.service ? service_names : topic_names) std::printf("%s\n", t.name.c_str());
        return exit_ok;
    }
    std::fputs(render_list(result).c_str(), stdout);
    return exit_ok;
}

}  // namespace gecko::tools
