// SPDX-License-Identifier: Apache-2.0
// The graph of a key, from the core's `list` answer.

#include "gecko/graph.hpp"

#include "discovery/core_query.hpp"
#include "gecko/error.hpp"
#include "gecko/node.hpp"
#include "gecko/options.hpp"

namespace gecko {

const GraphTopic* Graph::find(const std::string& name, bool service) const {
    for (const auto& t : topics)
        if (t.name == name && t.service == service) return &t;
    return nullptr;
}

const GraphNode* Graph::node_of(std::uint64_t session) const {
    for (const auto& n : nodes)
        if (n.session == session) return &n;
    return nullptr;
}

net::FinderOptions finder_options(const NodeOptions& options) {
    net::FinderOptions f;
    f.key = options.key;
    f.node = options.name;
    f.interface = options.interface;
    f.multicast = options.multicast_enabled;
    if (!options.multicast.empty()) {
        if (const auto why = parse_multicast(options.multicast, f.multicast_group, f.multicast_port); !why.empty())
            throw Error(Errc::invalid_argument, "multicast '" + options.multicast + "': " + why);
    }
    if (!options.core.empty() && net::normalize_core_address(options.core).empty())
        throw Error(Errc::invalid_argument, "core '" + options.core + "' is not host, host:port or tcp://host:port");
    f.core = options.core;
    return f;
}

Graph query_graph(const net::FinderOptions& options, std::chrono::milliseconds timeout) {
    return detail::query_core(options, timeout);
}

Graph query_graph(const NodeOptions& options, std::chrono::milliseconds timeout) {
    return detail::query_core(finder_options(options), timeout);
}

}  // namespace gecko
