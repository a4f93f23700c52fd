// SPDX-License-Identifier: Apache-2.0
#include "query.hpp"

#include "known_types.hpp"

#include <gecko/wire/names.hpp>

#include <algorithm>
#include <cstdio>

#include "gecko/error.hpp"
#include "format.hpp"
#include "suggest.hpp"

namespace gecko::tools {

net::FinderOptions search_options(const NodeOptions& node) {
    try {
        return gecko::finder_options(node);
    } catch (const Error& e) {
        throw UsageError(std::string(e.what()) + " (--multicast / GECKO_MULTICAST, --core / GECKO_CORE)");
    }
}

namespace {

// Every name in a graph made safe to print (gecko/wire/names.hpp printable()): the
// answer may come from anything listening where the core was expected.
void make_printable(Graph& g) {
    auto fix = [](std::string& s) { s = wire::printable(s); };
    auto fix_all = [&](std::vector<std::string>& v) {
        for (auto& s : v) fix(s);
    };
    fix(g.key);
    fix(g.core_endpoint);
    fix(g.core_host);
    for (auto& n : g.nodes) {
        fix(n.name);
        fix(n.host);
        fix_all(n.locators);
        for (auto& l : n.links) {  // as a node's stats said them: the core keeps them raw
            fix(l.node);
            fix(l.transport);
        }
    }
    for (auto& t : g.topics) {
        fix(t.name);
        fix(t.type);
        fix_all(t.types);
        for (auto* list : {&t.producers, &t.consumers})
            for (auto& e : *list) {
                fix(e.kind);
                fix(e.topic);
                fix(e.type);
                fix(e.node);
                fix(e.host);
            }
    }
    for (auto& c : g.conflicts) {
        fix(c.topic);
        fix_all(c.types);
        fix(c.message);
    }
    std::map<std::string, std::uint64_t> counters;
    for (const auto& [name, value] : g.counters) counters[wire::printable(name)] = value;
    g.counters = std::move(counters);
}

}  // namespace

Graph query(const net::FinderOptions& options, std::chrono::milliseconds timeout) {
    Graph r;
    try {
        r = query_graph(options, timeout);
    } catch (const Error& e) {
        if (e.code() != Errc::discovery) throw;
        throw Error(Errc::discovery, std::string(e.what()) + " (`gecko doctor` checks the network)");
    }
    if (r.key != options.key)
        throw Error(Errc::discovery, "the geckocore at " + wire::printable(r.core_endpoint) + " serves key '" + wire::printable(r.key) +
                                         "', not '" + options.key + "': check --key / GECKO_KEY and --core / GECKO_CORE");
    make_printable(r);
    return r;
}

Graph query(const Connection& connection) {
    auto options = search_options(connection.node);
    // A tool waits `timeout` in all: leave time for the explicit core after multicast.
    options.find_timeout = std::min(options.find_timeout, connection.timeout / 2);
    return query(options, connection.timeout);
}

std::string where(const std::string& node, const std::string& host, std::int32_t pid) {
    return node + "@" + host + ":" + std::to_string(pid);
}

std::string where(const GraphEntity& e) { return where(e.node, e.host, e.pid); }

std::map<std::uint64_t, std::string> producer_names(const Graph& result, const std::string& topic) {
    std::map<std::uint64_t, std::string> names;
    if (const auto* t = result.find(topic))
        for (const auto& p : t->producers) names[p.id] = where(p);
    return names;
}

std::vector<std::string> names_of(const Graph& result, bool service, bool with_producers) {
    std::vector<std::string> names;
    for (const auto& t : result.topics)
        if (t.service == service && (!with_producers || !t.producers.empty())) names.push_back(t.name);
    return names;
}

std::string not_found(const Graph& result, const std::string& what, const std::string& name) {
    std::vector<std::string> candidates;
    if (what != "service") candidates = names_of(result, false);
    if (what != "topic")
        for (const auto& s : names_of(result, true)) candidates.push_back(s);
    return "no " + what + " '" + name + "' under key '" + result.key + "'" + did_you_mean(name, candidates);
}

TopicGlance glance_at_topic(const Connection& connection, const std::string& command, const std::string& topic) {
    const auto r = query(connection);
    learn_schemas(r);  // the key's own types are checked as gecko.msgs ones are
    TopicGlance glance;
    glance.names = producer_names(r, topic);
    const auto* t = r.find(topic);
    if (t) glance.type = t->type == "*" ? "" : t->type;
    if (t && !t->producers.empty()) return glance;
    const std::string hint = did_you_mean(topic, names_of(r, false, true));
    const std::string missing = t ? "no publisher of '" + topic + "' under key '" + r.key + "' yet"
                                  : "no topic '" + topic + "' under key '" + r.key + "'" + (hint.empty() ? " yet" : "");
    std::fprintf(stderr, "gecko %s: %s%s waiting for it (Ctrl-C to stop)\n", command.c_str(), missing.c_str(),
                 hint.empty() ? ";" : hint.c_str());
    return glance;
}

}  // namespace gecko::tools
