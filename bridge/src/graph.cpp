// SPDX-License-Identifier: Apache-2.0
// The key's graph for clients that subscribe to it (connectionGraph), and
// the figures of its topics for the page (bridge.hpp). Both come from
// geckocore's graph, asked on a worker thread: a query waits on the network.
#include "state.hpp"
#include "json_text.hpp"

#include <gecko/wire/json.hpp>

#include <boost/asio/post.hpp>

#include <nlohmann/json.hpp>

namespace gecko::bridge {

namespace {

GraphUpdate update_of(const Graph& graph) {
    GraphUpdate u;
    for (const auto& t : graph.topics) {
        GraphUpdate::Entry producers{t.name, {}}, consumers{t.name, {}};
        for (const auto& e : t.producers) producers.ids.push_back(e.node + "#" + std::to_string(e.id));
        for (const auto& e : t.consumers) consumers.ids.push_back(e.node + "#" + std::to_string(e.id));
        if (t.service) {
            u.services.push_back(std::move(producers));
        } else {
            if (!producers.ids.empty()) u.published.push_back(std::move(producers));
            if (!consumers.ids.empty()) u.subscribed.push_back(std::move(consumers));
        }
    }
    for (const auto& e : graph.key_wide) {  // recorders and such: subscribers of every topic
        for (auto& s : u.subscribed) s.ids.push_back(e.node + "#" + std::to_string(e.id));
    }
    return u;
}

}  // namespace

void Bridge::refresh_graph() {
    bool wanted = false;
    for (const auto& [id, c] : clients_) wanted = wanted || c->graph;
    if (!wanted || graph_query_running_) return;
    graph_query_running_ = true;
    run_blocking([weak = weak_from_this()] {
        auto self = weak.lock();
        if (!self) return;
        std::shared_ptr<const GraphUpdate> update;
        try {
            update = std::make_shared<const GraphUpdate>(update_of(self->node_->graph(std::chrono::milliseconds(2000))));
        } catch (const std::exception& e) {
            self->node_->logger().warn(std::string("gecko-bridge: graph query failed: ") + e.what());
        }
        boost::asio::post(self->io_, [self, update] {
            self->graph_query_running_ = false;
            if (update) {
                self->last_graph_ = update;
                for (auto& [id, c] : self->clients_)
                    if (c->graph) self->send_graph(*c, *update, false);
            }
            // Subscribers and figures change without a directory event: look again in a while.
            self->graph_timer_.expires_after(std::chrono::milliseconds(2000));
            self->graph_timer_.async_wait([weak = std::weak_ptr<Bridge>(self)](const boost::system::error_code& ec) {
                if (auto s = weak.lock(); s && !ec) s->refresh_graph();
            });
        });
    });
}

void Bridge::send_graph(Client& client, const GraphUpdate& update, bool full) {
    GraphUpdate u = update;
    std::set<std::string> topics, services;
    for (const auto& e : u.published) topics.insert(e.name);
    for (const auto& e : u.subscribed) topics.insert(e.name);
    for (const auto& e : u.services) services.insert(e.name);
    if (!full) {
        for (const auto& t : client.graph_topics)
            if (!topics.count(t)) u.removed_topics.push_back(t);
        for (const auto& s : client.graph_services)
            if (!services.count(s)) u.removed_services.push_back(s);
    }
    client.graph_topics = std::move(topics);
    client.graph_services = std::move(services);
    send(client, connection_graph_update(u));
}

void Bridge::topics_json(std::function<void(std::string)> done) {
    using Json = nlohmann::json;
    const auto now = std::chrono::steady_clock::now();
    if (!topics_cache_.empty() && now - topics_cache_at_ < std::chrono::milliseconds(1000)) {
        done(topics_cache_);
        return;
    }
    // The bridge's own view (types, channels, drops to its clients), then the core's figures.
    Json mine = Json::object();
    for (const auto& [name, t] : topics_) {
        std::uint64_t dropped = 0;
        for (const auto* subs : {&t->json_subs, &t->msgpack_subs})
            for (const auto& [client, sub] : *subs) dropped += client->outbox.dropped(sub);
        Json publishers = Json::array();
        for (const auto& p : t->publishers) publishers.push_back(p.node);
        mine[name] = Json{{"type", t->type}, {"json_channel", t->json_id}, {"msgpack_channel", t->msgpack_id},
                          {"publishers", publishers}, {"bridge_drops", dropped}};
    }
    run_blocking([weak = weak_from_this(), mine = std::move(mine), done = std::move(done)]() mutable {
        auto self = weak.lock();
        if (!self) return;
        try {
            const Graph g = self->node_->graph(std::chrono::milliseconds(2000));
            for (const auto& t : g.topics) {
                if (t.service || !mine.contains(t.name)) continue;
                double rate = 0, bandwidth = 0;
                std::uint64_t drops = 0;
                for (const auto& p : t.producers)
                    if (p.figures) {
                        rate += p.figures->messages_per_s;
                        bandwidth += p.figures->bytes_per_s;
                        drops += p.figures->drops;
                    }
                for (const auto& c : t.consumers)
                    if (c.figures) drops += c.figures->drops;
                auto& entry = mine[t.name];
                entry["rate"] = rate;
                entry["bandwidth"] = bandwidth;
                entry["drops"] = drops;
                entry["subscribers"] = t.consumers.size();
            }
        } catch (const std::exception&) {
            // The page shows what the bridge knows; figures come back with the core.
        }
        std::string text = json_text(Json{{"topics", mine}});
        boost::asio::post(self->io_, [self, text = std::move(text), done = std::move(done)] {
            self->topics_cache_ = text;
            self->topics_cache_at_ = std::chrono::steady_clock::now();
            done(text);
        });
    });
}

}  // namespace gecko::bridge
