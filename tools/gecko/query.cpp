// SPDX-License-Identifier: Apache-2.0
#include "query.hpp"

#include <algorithm>
#include <cstdio>
#include <set>
#include <thread>

#include "gecko/error.hpp"
#include "gecko/signals.hpp"

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

std::string wait_for_topic_type(const Connection& connection, const std::string& command, const std::string& topic,
                                std::map<std::uint64_t, std::string>* names) {
    const auto options = discovery_options(connection.node);
    bool said = false;
    while (ok()) {
        const auto r = query(options, connection.timeout);
        if (names) *names = producer_names(r, topic);
        if (const auto* t = r.find(topic)) {
            std::set<std::string> types;
            for (const auto& p : t->producers) types.insert(p.peer.reg.type_name);
            if (!t->producers.empty()) {
                const std::string& chosen = t->producers.front().peer.reg.type_name;
                if (types.size() > 1) {
                    std::string all;
                    for (const auto& ty : types) all += (all.empty() ? "" : ", ") + ty;
                    std::fprintf(stderr, "gecko %s: publishers of '%s' declare different types (%s); reading %s (pick one with --type)\n",
                                 command.c_str(), topic.c_str(), all.c_str(), chosen.c_str());
                }
                return chosen;
            }
            if (!t->type.empty()) return t->type;
        }
        if (!said) {
            std::fprintf(stderr, "gecko %s: no publisher of '%s' in key '%s' yet; waiting (Ctrl-C to stop)\n",
                         command.c_str(), topic.c_str(), options.key.c_str());
            said = true;
        }
        for (int i = 0; i < 5 && ok(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));  // poll period
    }
    return {};
}

}  // namespace gecko::tools
