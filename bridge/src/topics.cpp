// SPDX-License-Identifier: Apache-2.0
// The key's directory as Foxglove channels, and the Gecko subscriptions that
// feed them (bridge.hpp). A topic has two channels: `json` (transcoded, with
// a JSON Schema) and `msgpack` (the bytes as published). A Gecko
// subscription exists only while some client subscribes to one of them, so
// nothing travels for a topic nobody watches.
#include "state.hpp"
#include "transcode.hpp"

#include <gecko/error.hpp>
#include <gecko/wire/value.hpp>

#include <boost/asio/post.hpp>

#include <algorithm>

namespace gecko::bridge {

namespace {

// Frames a topic may have waiting for the io thread (beyond them, the oldest go).
constexpr std::size_t kPendingFrames = 4096;

std::pair<std::string, std::string> split_service_type(const std::string& type) {
    const auto arrow = type.find("->");
    if (arrow == std::string::npos) return {type, ""};
    return {type.substr(0, arrow), type.substr(arrow + 2)};
}

}  // namespace

void Bridge::on_directory(const DirectoryEvent& event) {
    const ChannelInfo& info = *event.channel;
    if (info.service) {
        if (event.kind == DirectoryEvent::Kind::removed) remove_service(info.topic);
        else add_service(info);
    } else if (event.kind == DirectoryEvent::Kind::removed) {
        remove_topic(info.topic);
    } else if (const auto it = topics_.find(info.topic); it != topics_.end()) {
        update_topic(*it->second, info);
    } else {
        add_topic(info);
    }
    if (!graph_pending_) {  // the graph changed: subscribers of it hear, once per burst of events
        graph_pending_ = true;
        graph_debounce_.expires_after(std::chrono::milliseconds(200));
        graph_debounce_.async_wait([weak = weak_from_this()](const boost::system::error_code& ec) {
            auto self = weak.lock();
            if (!self) return;
            self->graph_pending_ = false;
            if (!ec) self->refresh_graph();
        });
    }
}

void Bridge::add_topic(const ChannelInfo& info) {
    auto topic = std::make_unique<Topic>();
    topic->name = info.topic;
    topic->type = info.type_name;
    topic->publishers = info.publishers;
    topic->schema = info.schema;
    Topic& t = *topic;
    topics_[info.topic] = std::move(topic);
    if (t.schema && t.schema->find(t.type)) {
        t.shape = shape_of(*t.schema->find(t.type));
        t.json_schema = json_schema_of(*t.schema, t.type, t.shape);
        advertise_topic(t);
        return;
    }
    // No declared fields: listen for a first message to learn its shape, and
    // advertise then (or after the probe time with an open schema).
    t.json_schema = SchemaInference().json();
    t.probing = true;
    const auto generation = ++t.probe_generation;
    open_feed(t);
    auto timer = std::make_shared<boost::asio::steady_timer>(io_, options_.probe);
    timer->async_wait([weak = weak_from_this(), name = t.name, generation, timer](const boost::system::error_code& ec) {
        if (auto self = weak.lock(); self && !ec) self->probe_done(name, generation);
    });
}

void Bridge::probe_done(const std::string& name, std::uint64_t generation) {
    const auto it = topics_.find(name);
    if (it == topics_.end()) return;
    Topic& t = *it->second;
    if (!t.probing || t.probe_generation != generation) return;
    t.probing = false;
    if (t.feed) {
        std::lock_guard<std::mutex> lock(t.feed->inference_mutex);
        if (!t.feed->inference.empty()) t.json_schema = t.feed->inference.json();
    }
    if (t.json_subs.empty() && t.msgpack_subs.empty()) t.feed.reset();
    advertise_topic(t);
}

void Bridge::update_topic(Topic& t, const ChannelInfo& info) {
    t.publishers = info.publishers;
    // The bridge's own subscriber keeps a topic listed after its publishers
    // left, typeless: the type it had stays.
    if (info.type_name.empty()) return;
    const bool type_changed = info.type_name != t.type;
    const bool schema_changed = info.schema && (!t.schema || info.schema->encode() != t.schema->encode());
    if (!type_changed && !schema_changed) return;
    t.type = info.type_name;
    if (info.schema && info.schema->find(t.type)) {
        t.schema = info.schema;
        t.shape = shape_of(*t.schema->find(t.type));
        if (t.feed) t.feed->shape = t.shape;  // read by the callback thread: a plain enum, set before use
        if (t.probing) {
            t.probing = false;
            if (t.json_subs.empty() && t.msgpack_subs.empty()) t.feed.reset();
        }
        readvertise_json(t, json_schema_of(*t.schema, t.type, t.shape));
    } else if (type_changed) {
        t.schema.reset();
        readvertise_json(t, SchemaInference().json());
    }
    if (type_changed && t.msgpack_id) {  // the msgpack channel names the type: a new one
        broadcast(unadvertise({t.msgpack_id}));
        for (auto [client, sub] : std::vector<std::pair<Client*, std::uint32_t>>(t.msgpack_subs)) drop_subscription(*client, sub);
        channels_.erase(t.msgpack_id);
        t.msgpack_id = next_channel_++;
        channels_[t.msgpack_id] = {&t, false};
        auto all = channels_of(t);
        all.erase(all.begin());
        broadcast(advertise(all));
    }
}

std::vector<AdvertisedChannel> Bridge::channels_of(const Topic& t) const {
    std::vector<AdvertisedChannel> out;
    out.push_back({t.json_id, t.name, "json", schema_name_of(t.type.empty() ? t.name : t.type, t.shape), t.json_schema,
                   "jsonschema"});
    // The raw bytes: no schema encoding Foxglove knows; the json channel's schema describes them.
    out.push_back({t.msgpack_id, t.name, "msgpack", t.type, "", ""});
    return out;
}

void Bridge::advertise_topic(Topic& t) {
    if (t.json_id) return;
    t.json_id = next_channel_++;
    t.msgpack_id = next_channel_++;
    channels_[t.json_id] = {&t, true};
    channels_[t.msgpack_id] = {&t, false};
    broadcast(advertise(channels_of(t)));
}

void Bridge::unadvertise_topic(Topic& t) {
    if (!t.json_id) return;
    for (auto [client, sub] : std::vector<std::pair<Client*, std::uint32_t>>(t.json_subs)) drop_subscription(*client, sub);
    for (auto [client, sub] : std::vector<std::pair<Client*, std::uint32_t>>(t.msgpack_subs)) drop_subscription(*client, sub);
    broadcast(unadvertise({t.json_id, t.msgpack_id}));
    channels_.erase(t.json_id);
    channels_.erase(t.msgpack_id);
    t.json_id = t.msgpack_id = 0;
}

void Bridge::readvertise_json(Topic& t, std::string schema) {
    if (schema == t.json_schema) return;
    t.json_schema = std::move(schema);
    if (!t.json_id) return;  // still probing: advertised later with this schema
    // A channel id names one schema for good (the protocol's rule): a new id.
    // Its subscribers are dropped with it; clients subscribe again by topic.
    for (auto [client, sub] : std::vector<std::pair<Client*, std::uint32_t>>(t.json_subs)) drop_subscription(*client, sub);
    broadcast(unadvertise({t.json_id}));
    channels_.erase(t.json_id);
    t.json_id = next_channel_++;
    channels_[t.json_id] = {&t, true};
    auto all = channels_of(t);
    all.pop_back();
    broadcast(advertise(all));
}

void Bridge::remove_topic(const std::string& name) {
    const auto it = topics_.find(name);
    if (it == topics_.end()) return;
    unadvertise_topic(*it->second);
    topics_.erase(it);
}

Bridge::Topic* Bridge::topic_of_channel(std::uint32_t channel, bool* json) {
    const auto it = channels_.find(channel);
    if (it == channels_.end()) return nullptr;
    if (json) *json = it->second.second;
    return it->second.first;
}

void Bridge::add_service(const ChannelInfo& info) {
    auto [request, reply] = split_service_type(info.type_name);
    if (const auto it = services_.find(info.topic); it != services_.end()) {
        Service& s = *it->second;
        if (s.type == info.type_name && (!info.schema || s.schema == info.schema)) return;
        remove_service(info.topic);
    }
    if (reply.empty()) return;  // no typed server yet: nothing to call
    auto s = std::make_unique<Service>();
    s->id = next_service_++;
    s->name = info.topic;
    s->type = info.type_name;
    s->request_type = request;
    s->reply_type = reply;
    s->schema = info.schema;
    s->caller = std::make_shared<Caller>();
    s->caller->name = s->name;
    s->caller->request_type = request;
    s->caller->reply_type = reply;
    s->caller->schema = info.schema;
    AdvertisedService a;
    a.id = s->id;
    a.name = s->name;
    a.type = s->type;
    a.request_type = request;
    a.reply_type = reply;
    const wire::Schema empty;
    a.request_schema = json_schema_of(s->schema ? *s->schema : empty, request);
    a.reply_schema = json_schema_of(s->schema ? *s->schema : empty, reply);
    service_ids_[s->id] = s.get();
    services_[s->name] = std::move(s);
    broadcast(advertise_services({a}));
}

void Bridge::remove_service(const std::string& name) {
    const auto it = services_.find(name);
    if (it == services_.end()) return;
    broadcast(unadvertise_services({it->second->id}));
    service_ids_.erase(it->second->id);
    services_.erase(it);
}

// ---------------------------------------------------------------- feeds

void Bridge::open_feed(Topic& t) {
    if (t.feed) return;
    auto feed = std::make_shared<Feed>();
    feed->topic = t.name;
    feed->shape = t.shape;
    feed->infer = !t.schema;
    SubscriberOptions o;
    o.depth = options_.topic_depth;
    std::weak_ptr<Bridge> weak = weak_from_this();
    std::weak_ptr<Feed> weak_feed = feed;
    // Runs on the node's spin threads: encodes once for every client, then
    // hands the message to the io thread.
    feed->subscriber = node_->raw_subscriber(t.name, o, [weak, weak_feed, this](const RawView& view) {
        auto self = weak.lock();
        auto feed = weak_feed.lock();
        if (!self || !feed) return;
        auto frame = std::make_shared<Frame>();
        frame->receive_ns = static_cast<std::uint64_t>(view.info.receive_time_ns);
        if (feed->msgpack.load(std::memory_order_relaxed))
            frame->msgpack = std::make_shared<const std::string>(reinterpret_cast<const char*>(view.payload), view.size);
        if (feed->json.load(std::memory_order_relaxed)) {
            try {
                auto text = std::make_shared<std::string>();
                text->reserve(view.size * 4 / 3 + 64);
                append_message_json(*text, view.payload, view.size, feed->shape.load(std::memory_order_relaxed));
                frame->json = std::move(text);
            } catch (const std::exception&) {
                counters_.transcode_errors.fetch_add(1, std::memory_order_relaxed);
            }
        }
        if (feed->infer) {
            std::string refined;
            {
                std::lock_guard<std::mutex> lock(feed->inference_mutex);
                try {
                    if (feed->inference.observe(wire::Value::parse(view.payload, view.size)))
                        refined = feed->inference.json();
                } catch (const std::exception&) {
                    counters_.transcode_errors.fetch_add(1, std::memory_order_relaxed);
                }
            }
            if (!refined.empty())
                boost::asio::post(io_, [self, feed, refined = std::move(refined)]() mutable {
                    self->refine(feed, std::move(refined));
                });
        }
        if (!frame->msgpack && !frame->json) return;
        bool first = false;
        {
            std::lock_guard<std::mutex> lock(feed->pending_mutex);
            first = feed->pending.empty();
            if (feed->pending.size() >= kPendingFrames) {
                feed->pending.pop_front();
                counters_.feed_drops.fetch_add(1, std::memory_order_relaxed);
            }
            feed->pending.push_back(std::move(frame));
        }
        // The io thread takes the whole batch: a busy topic costs one wake-up per batch.
        if (first) boost::asio::post(io_, [self, feed] { self->deliver_pending(feed); });
    });
    t.feed = std::move(feed);
}

void Bridge::sync_feed(Topic& t) {
    if (!t.json_subs.empty() || !t.msgpack_subs.empty()) open_feed(t);
    if (t.feed) {
        t.feed->json.store(!t.json_subs.empty());
        t.feed->msgpack.store(!t.msgpack_subs.empty());
    }
    if (t.json_subs.empty() && t.msgpack_subs.empty() && !t.probing) t.feed.reset();
}

void Bridge::refine(const std::shared_ptr<Feed>& feed, std::string schema) {
    const auto it = topics_.find(feed->topic);
    if (it == topics_.end() || it->second->feed != feed || it->second->schema) return;
    Topic& t = *it->second;
    if (t.probing) {  // the first message: advertise now, with its shape
        t.json_schema = std::move(schema);
        probe_done(t.name, t.probe_generation);
        return;
    }
    readvertise_json(t, std::move(schema));
}

void Bridge::deliver_pending(const std::shared_ptr<Feed>& feed) {
    std::deque<std::shared_ptr<const Frame>> batch;
    {
        std::lock_guard<std::mutex> lock(feed->pending_mutex);
        batch.swap(feed->pending);
    }
    for (const auto& frame : batch) deliver(feed, frame);
}

void Bridge::deliver(const std::shared_ptr<Feed>& feed, const std::shared_ptr<const Frame>& frame) {
    const auto it = topics_.find(feed->topic);
    if (it == topics_.end() || it->second->feed != feed) return;
    Topic& t = *it->second;
    auto fan_out = [&](const std::vector<std::pair<Client*, std::uint32_t>>& subs, const SharedBytes& bytes) {
        if (!bytes) return;
        for (const auto& [client, sub] : subs) {
            const auto before = client->outbox.dropped_total();
            const auto drop = client->outbox.push(sub, frame->receive_ns, bytes);
            if (drop != Outbox::Drop::none) {
                counters_.drops.fetch_add(client->outbox.dropped_total() - before, std::memory_order_relaxed);
                after_push(*client, sub, drop, t.name);
            }
            if (client->connection) client->connection->wake();
        }
    };
    fan_out(t.json_subs, frame->json);
    fan_out(t.msgpack_subs, frame->msgpack);
}

}  // namespace gecko::bridge
