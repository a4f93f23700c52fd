// SPDX-License-Identifier: Apache-2.0
#include "query.hpp"

#include <algorithm>
#include <cstdio>

#include "gecko/error.hpp"
#include "suggest.hpp"

namespace gecko::tools {

detail::DiscoveryOptions discovery_options(const NodeOptions& node) {
    detail::DiscoveryOptions d;
    d.key = node.key;
    d.node = node.name;
    d.interface = node.interface;
    d.multicast = node.multicast_enabled;
    d.lease = node.lease;
    if (!node.multicast.empty() && !detail::parse_multicast(node.multicast, d.multicast_group, d.multicast_port))
        throw UsageError("--multicast (or GECKO_MULTICAST) '" + node.multicast + "' is not GROUP[:PORT] with GROUP in 224.0.0.0/4");
    if (!node.core.empty() && detail::normalize_core_address(node.core).empty())
        throw UsageError("--core (or GECKO_CORE) '" + node.core + "' is not HOST[:PORT]");
    d.core = node.core;
    return d;
}

detail::QueryResult query(const detail::DiscoveryOptions& options, std::chrono::milliseconds timeout) {
    detail::QueryResult r;
    try {
        r = detail::query_core(options, timeout);
    } catch (const Error& e) {
        if (e.code() != Errc::discovery) throw;
        throw Error(Errc::discovery, std::string(e.what()) + " (`gecko doctor` checks the network)");
    }
    if (r.key != options.key)
        throw Error(Errc::discovery, "the geckocore at " + r.core_endpoint + " serves key '" + r.key + "', not '" +
                                         options.key + "': check --key / GECKO_KEY and --core / GECKO_CORE");
    return r;
}

detail::QueryResult query(const Connection& connection) {
    auto options = discovery_options(connection.node);
    // A tool waits `timeout` in all: leave time for the explicit core after multicast.
    options.find_timeout = std::min(options.find_timeout, connection.timeout / 2);
    return query(options, connection.timeout);
}

std::string where(const std::string& node, const std::string& host, std::int32_t pid) {
    return node + "@" + host + ":" + std::to_string(pid);
}

std::string where(const detail::Peer& peer) { return where(peer.node, peer.host, peer.pid); }

std::map<std::uint64_t, std::string> producer_names(const detail::QueryResult& result, const std::string& topic) {
    std::map<std::uint64_t, std::string> names;
    if (const auto* t = result.find(topic))
        for (const auto& p : t->producers) names[p.peer.reg.id] = where(p.peer);
    return names;
}

std::vector<std::string> names_of(const detail::QueryResult& result, bool service, bool with_producers) {
    std::vector<std::string> names;
    for (const auto& t : result.topics)
        if (t.service == service && (!with_producers || !t.producers.empty())) names.push_back(t.name);
    return names;
}

std::string not_found(const detail::QueryResult& result, const std::string& what, const std::string& name) {
    std::vector<std::string> candidates;
    if (what != "service") candidates = names_of(result, false);
    if (what != "topic")
        for (const auto& s : names_of(result, true)) candidates.push_back(s);
    return "no " + what + " '" + name + "' under key '" + result.key + "'" + did_you_mean(name, candidates);
}

TopicGlance glance_at_topic(const Connection& connection, const std::string& command, const std::string& topic) {
    const auto r = query(connection);
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
