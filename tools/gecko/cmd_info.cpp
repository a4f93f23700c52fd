// SPDX-License-Identifier: Apache-2.0
// gecko info TOPIC: one topic (or service) in detail.
#include <cstdio>
#include <set>

#include "cli.hpp"
#include "commands.hpp"
#include "format.hpp"
#include "gecko/error.hpp"
#include "known_types.hpp"
#include "query.hpp"

namespace gecko::tools {

namespace {

std::string describe_figures(const GraphFigures& s, bool producer) {
    std::string out = format_hz(s.messages_per_s) + ", " + format_bytes(s.bytes_per_s) + "/s";
    if (!producer) {
        out += ", drops " + std::to_string(s.drops);
        out += ", latency " + format_ns(static_cast<double>(s.latency_ns));
    }
    return out;
}

// What a link of `transport` is protected by in a secured key (docs/SECURITY.md).
std::string protection(const Graph& graph, const std::string& transport) {
    if (graph.secured_fingerprint.empty()) return "";
    if (transport == "tcp" || transport == "ipc") return " (CurveZMQ)";
    if (transport == "shm") return " (one host: file modes, no crypto)";
    return "";
}

// How `e`'s messages travel to or from each of `others` (the topic's other
// side): the transport of the receiving node's link, as that node reported it,
// and in a secured key what protects it.
std::string describe_links(const Graph& graph, const GraphEntity& e, const std::vector<GraphEntity>& others, bool producer) {
    std::string out;
    std::set<std::uint64_t> seen;
    for (const auto& o : others) {
        if (o.session == e.session || !seen.insert(o.session).second) continue;
        const std::uint64_t receiver = producer ? o.session : e.session;
        const std::uint64_t sender = producer ? e.session : o.session;
        std::string via = "not reported yet";
        if (const GraphNode* node = graph.node_of(receiver))
            for (const auto& l : node->links)
                if (l.session == sender) via = l.transport + protection(graph, l.transport);
        out += (out.empty() ? "" : ", ") + std::string(producer ? "to " : "from ") + o.node + " over " + via;
    }
    return out;
}

void print_entities(std::string& out, const Graph& graph, const char* title, const std::vector<GraphEntity>& entities,
                    const std::vector<GraphEntity>& others, bool producer, bool service) {
    out += std::string(title) + " (" + std::to_string(entities.size()) + "):" + (entities.empty() ? " none\n" : "\n");
    for (const auto& e : entities) {
        out += "  " + where(e) + "\n";
        Table t({"", ""});
        t.add({"node", e.node});
        t.add({"host", e.host});
        t.add({"pid", std::to_string(e.pid)});
        t.add({"id", hex_id(e.id)});
        t.add({"type", e.type});
        {
            std::string eps;
            if (const GraphNode* node = graph.node_of(e.session))
                for (const auto& ep : node->locators) eps += (eps.empty() ? "" : ", ") + ep;
            t.add({"node's locators", eps.empty() ? "-" : eps});
        }
        if (const auto links = describe_links(graph, e, others, producer); !links.empty()) t.add({"links", links});
        if (e.latched) t.add({"latched", "yes: replays its last message to late subscribers"});
        const char* doing = producer ? (service ? "serving" : "sending") : (service ? "calling" : "receiving");
        t.add({doing, e.figures ? describe_figures(*e.figures, producer) : "no report yet"});
        std::string rendered = t.render("    ");
        out += rendered.substr(rendered.find('\n') + 1);  // no header line
    }
}

// "fields:" and the type's fields, or how to learn them.
std::string describe_fields(const std::string& title, const std::string& type) {
    if (type.empty() || type == "*") return "";
    if (const Shape* shape = known_shape(type)) return title + ":\n" + render_fields(*shape, "  ");
    return title + ": " + type + " is not a gecko.msgs type and its publisher declared no schema; `gecko type " + type +
           "` infers them from a message\n";
}

}  // namespace

int run_info(const Args& args) {
    Connection connection;
    std::string name;
    Parser parser("info", "TOPIC [options]",
                  "Everything the key's geckocore knows about one topic (or service): its type, and for each\n"
                  "publisher and subscriber its node, host, pid, id, its node's locators and latest reported figures;\n"
                  "and the fields of its type (of its request and reply for a service), as `gecko type`.");
    parser.positional("TOPIC", "topic (or service) name", name).connection(connection);
    if (!parser.parse(args)) return exit_ok;

    const auto r = query(connection);
    learn_schemas(r);
    std::string out;
    for (bool service : {false, true}) {
        const auto* t = r.find(name, service);
        if (!t) continue;
        if (!out.empty()) out += "\n";
        out += std::string(service ? "service" : "topic") + " '" + t->name + "' in key '" + r.key + "'\n";
        out += "type: " + t->type + "\n";
        if (const auto arrow = t->type.find("->"); service && arrow != std::string::npos)
            out += describe_fields("request fields", t->type.substr(0, arrow)) +
                   describe_fields("reply fields", t->type.substr(arrow + 2));
        else if (!service)
            out += describe_fields("fields", t->type);
        for (const auto& c : r.conflicts)
            if (c.topic == t->name && c.service == service) out += "(!) " + c.message + "\n";
        out += "\n";
        print_entities(out, r, service ? "servers" : "publishers", t->producers, t->consumers, true, service);
        print_entities(out, r, service ? "clients" : "subscribers", t->consumers, t->producers, false, service);
    }
    if (out.empty()) {
        std::string message = not_found(r, "topic or service", name);
        if (message.find("did you mean") == std::string::npos) {
            std::string known;
            for (const auto& t : r.topics) known += (known.empty() ? "" : ", ") + t.name;
            message += known.empty() ? std::string(" (it has none)") : " (known: " + known + ")";
        }
        throw Error(Errc::no_peer, message);
    }
    std::fputs(out.c_str(), stdout);
    return exit_ok;
}

}  // namespace gecko::tools
