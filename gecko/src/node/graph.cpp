// SPDX-License-Identifier: Apache-2.0
// The graph of a key, from the core's `list` answer.

#include "gecko/graph.hpp"

#include "discovery/core_query.hpp"
#include "discovery/protocol.hpp"
#include "gecko/node.hpp"
#include "node/node_impl.hpp"

namespace gecko {

const GraphTopic* Graph::find(const std::string& name, bool service) const {
    for (const auto& t : topics)
        if (t.name == name && t.service == service) return &t;
    return nullptr;
}

namespace {

GraphEntity entity_of(const detail::QueryEntity& q) {
    GraphEntity e;
    e.id = q.peer.reg.id;
    e.kind = detail::proto::to_string(q.peer.reg.kind);
    e.topic = q.peer.reg.topic;
    e.type = q.peer.reg.type_name;
    e.latched = q.peer.reg.latched;
    e.node = q.peer.node;
    e.session = q.peer.session;
    e.host = q.peer.host;
    e.pid = q.peer.pid;
    if (q.stats) {
        GraphFigures f;
        f.messages_per_s = q.stats->messages_per_s;
        f.bytes_per_s = q.stats->bytes_per_s;
        f.drops = q.stats->drops;
        f.latency_ns = q.stats->latency_ns;
        f.unheard = q.stats->unheard;
        f.age_ms = q.stats_age_ms;
        e.figures = f;
    }
    return e;
}

}  // namespace

Graph to_graph(const detail::QueryResult& r) {
    Graph g;
    g.key = r.key;
    g.core_endpoint = r.core_endpoint;
    g.core_instance = r.instance;
    g.core_host = r.core_host;
    g.core_pid = r.core_pid;
    for (const auto& n : r.nodes)
        g.nodes.push_back(GraphNode{n.node, n.host, n.pid, n.session, n.silent_ms, n.locators, n.entities});
    for (const auto& t : r.topics) {
        GraphTopic gt;
        gt.name = t.name;
        gt.service = t.service;
        gt.type = t.type;
        gt.types = t.types;
        for (const auto& p : t.producers) gt.producers.push_back(entity_of(p));
        for (const auto& c : t.consumers) gt.consumers.push_back(entity_of(c));
        g.topics.push_back(std::move(gt));
    }
    for (const auto& c : r.conflicts) g.conflicts.push_back(GraphConflict{c.topic, c.service, c.types, c.message});
    g.counters = r.counters;
    return g;
}

Graph query_graph(const NodeOptions& options, std::chrono::milliseconds timeout) {
    detail::DiscoveryOptions d;
    d.key = options.key;
    d.node = options.name;
    d.core = options.core;
    d.interface = options.interface;
    d.multicast = options.multicast_enabled;
    if (!options.multicast.empty() && !detail::parse_multicast(options.multicast, d.multicast_group, d.multicast_port))
        throw Error(Errc::invalid_argument, "multicast '" + options.multicast + "' is not GROUP[:PORT]");
    return to_graph(detail::query_core(d, timeout));
}

}  // namespace gecko
