// SPDX-License-Identifier: Apache-2.0
// What a client asks of the bridge (bridge.hpp): subscriptions, its own
// channels and their messages, service calls. Every refusal is counted and
// answered with a status (or a serviceCallFailure) that says why and what
// to do instead.
#include "state.hpp"
#include "transcode.hpp"

#include <gecko/error.hpp>
#include <gecko/wire/json.hpp>
#include <gecko/wire/value.hpp>

#include <boost/asio/post.hpp>

#include <algorithm>

namespace gecko::bridge {

namespace {

// "a; b; c and 4 more"
std::string summarise(const std::vector<std::string>& errors) {
    std::string out;
    const std::size_t shown = std::min<std::size_t>(errors.size(), 3);
    for (std::size_t i = 0; i < shown; ++i) out += (i ? "; " : "") + errors[i];
    if (errors.size() > shown) out += " (and " + std::to_string(errors.size() - shown) + " more)";
    return out;
}

std::string human_bytes(std::size_t n) {
    if (n >= (1u << 20)) return std::to_string(n >> 20) + " MiB";
    if (n >= 1024) return std::to_string(n >> 10) + " KiB";
    return std::to_string(n) + " B";
}

}  // namespace

void Bridge::send(Client& client, std::string frame, bool binary) {
    if (client.closing || !client.connection) return;
    if (!client.outbox.push_control(std::move(frame), binary)) {
        counters_.control_overflows.fetch_add(1, std::memory_order_relaxed);
        client.closing = true;
        client.connection->disconnect("control messages not read: more than " +
                                      std::to_string(client.outbox.limits().control_messages) + " messages or " +
                                      human_bytes(client.outbox.limits().control_budget) + " waiting");
        return;
    }
    client.connection->wake();
}

void Bridge::tell(Client& client, StatusLevel level, const std::string& message, const std::string& id) {
    send(client, status(level, message, id));
}

void Bridge::broadcast(const std::string& frame) {
    for (auto& [id, client] : clients_) send(*client, frame);
}

void Bridge::on_text(Client& client, std::string_view text) {
    auto parsed = parse_text(text);
    if (!parsed) {
        const bool unknown = parsed.error.rfind("unknown op", 0) == 0;
        (unknown ? counters_.unknown_ops : counters_.malformed_requests).fetch_add(1, std::memory_order_relaxed);
        tell(client, StatusLevel::error, parsed.error);
        return;
    }
    const TextRequest& r = *parsed.request;
    using Op = TextRequest::Op;
    switch (r.op) {
        case Op::subscribe: subscribe(client, r); break;
        case Op::unsubscribe: unsubscribe(client, r.ids); break;
        case Op::advertise: client_advertise(client, r); break;
        case Op::unadvertise: client_unadvertise(client, r.ids); break;
        case Op::subscribe_connection_graph:
            client.graph = true;
            client.graph_topics.clear();
            client.graph_services.clear();
            if (last_graph_) send_graph(client, *last_graph_, true);
            refresh_graph();
            break;
        case Op::unsubscribe_connection_graph: client.graph = false; break;
        case Op::get_parameters:
        case Op::set_parameters:
        case Op::subscribe_parameter_updates:
        case Op::unsubscribe_parameter_updates:
            counters_.refused_requests.fetch_add(1, std::memory_order_relaxed);
            tell(client, StatusLevel::error,
                 "'" + parsed.op + "': this bridge offers no parameters (serverInfo's capabilities do not list them)");
            break;
        case Op::fetch_asset:
            counters_.refused_requests.fetch_add(1, std::memory_order_relaxed);
            tell(client, StatusLevel::error, "'fetchAsset': this bridge serves no assets (no 'assets' capability)");
            break;
    }
}

void Bridge::on_binary(Client& client, const std::uint8_t* data, std::size_t size) {
    auto parsed = parse_binary(data, size);
    if (!parsed) {
        counters_.malformed_requests.fetch_add(1, std::memory_order_relaxed);
        tell(client, StatusLevel::error, parsed.error);
        return;
    }
    if (parsed.request->op == BinaryRequest::Op::message_data) client_message(client, *parsed.request);
    else service_call(client, *parsed.request);
}

// ---------------------------------------------------------------- subscriptions

void Bridge::subscribe(Client& client, const TextRequest& r) {
    std::vector<std::string> errors;
    for (const auto& item : r.subscriptions) {
        bool json = false;
        Topic* topic = topic_of_channel(item.channel, &json);
        if (client.subscriptions.count(item.id)) {
            errors.push_back("subscription id " + std::to_string(item.id) + " is in use; unsubscribe it first");
        } else if (client.subscriptions.size() >= options_.max_subscriptions) {
            errors.push_back("at most " + std::to_string(options_.max_subscriptions) +
                             " subscriptions per connection; unsubscribe some first");
        } else if (!topic) {
            errors.push_back("channel " + std::to_string(item.channel) +
                             " is not advertised (its topic may have gone; subscribe to a channel of the latest "
                             "advertise)");
        } else {
            client.outbox.open(item.id, item.latest ? 1 : item.depth.value_or(0));
            client.subscriptions[item.id] = {item.channel, topic->name, json};
            (json ? topic->json_subs : topic->msgpack_subs).emplace_back(&client, item.id);
            sync_feed(*topic);
            continue;
        }
        counters_.refused_requests.fetch_add(1, std::memory_order_relaxed);
    }
    if (!errors.empty()) tell(client, StatusLevel::error, "subscribe refused: " + summarise(errors));
}

void Bridge::unsubscribe(Client& client, const std::vector<std::uint32_t>& ids) {
    std::vector<std::string> errors;
    for (const auto id : ids) {
        if (!client.subscriptions.count(id)) {
            counters_.refused_requests.fetch_add(1, std::memory_order_relaxed);
            errors.push_back("no subscription " + std::to_string(id));
            continue;
        }
        drop_subscription(client, id);
    }
    if (!errors.empty()) tell(client, StatusLevel::warning, "unsubscribe: " + summarise(errors));
}

void Bridge::drop_subscription(Client& client, std::uint32_t id) {
    const auto it = client.subscriptions.find(id);
    if (it == client.subscriptions.end()) return;
    client.outbox.close(id);
    const auto t = topics_.find(it->second.topic);
    client.subscriptions.erase(it);
    if (t == topics_.end()) return;
    Topic& topic = *t->second;
    for (auto* subs : {&topic.json_subs, &topic.msgpack_subs})
        subs->erase(std::remove(subs->begin(), subs->end(), std::make_pair(&client, id)), subs->end());
    sync_feed(topic);
}

void Bridge::after_push(Client& client, std::uint32_t subscription, Outbox::Drop drop, const std::string& topic) {
    const auto it = client.subscriptions.find(subscription);
    if (it == client.subscriptions.end() || it->second.warned) return;
    it->second.warned = true;
    it->second.reported = client.outbox.dropped(subscription);
    std::string why;
    switch (drop) {
        case Outbox::Drop::too_large:
            why = "a message is larger than this connection's budget of " +
                  human_bytes(client.outbox.limits().data_budget) + " (gecko-bridge --client-budget raises it)";
            break;
        case Outbox::Drop::queue_full:
        case Outbox::Drop::budget:
        case Outbox::Drop::none:
            why = "this connection reads slower than they arrive; the oldest queued go first (a subscription keeps "
                  "the depth it asked for, else up to " + std::to_string(client.outbox.limits().default_depth) +
                  " messages within " + human_bytes(client.outbox.limits().default_bytes) + "; all within " +
                  human_bytes(client.outbox.limits().data_budget) + ")";
            break;
    }
    tell(client, StatusLevel::warning,
         "messages of '" + topic + "' are being dropped: " + why + ". Drops are counted and told every few seconds.",
         "gecko.drops");
}

void Bridge::report_drops() {
    for (auto& [cid, client] : clients_) {
        std::string list;
        bool news = false;
        for (auto& [id, sub] : client->subscriptions) {
            const auto dropped = client->outbox.dropped(id);
            if (dropped == 0) continue;
            news = news || dropped > sub.reported;
            sub.reported = dropped;
            list += (list.empty() ? "" : ", ") + sub.topic + (sub.json ? "" : " (msgpack)") + " " + std::to_string(dropped);
        }
        if (news) tell(*client, StatusLevel::warning, "messages dropped so far for this connection: " + list, "gecko.drops");
    }
}

// ---------------------------------------------------------------- client publications

void Bridge::client_advertise(Client& client, const TextRequest& r) {
    std::vector<std::string> errors;
    for (const auto& ch : r.channels) {
        auto refuse = [&](std::string why) {
            counters_.refused_requests.fetch_add(1, std::memory_order_relaxed);
            errors.push_back("channel " + std::to_string(ch.id) + " ('" + ch.topic + "'): " + std::move(why));
        };
        if (client.publications.count(ch.id)) {
            refuse("the id is in use; unadvertise it first");
            continue;
        }
        if (client.publications.size() >= options_.max_client_channels) {
            refuse("at most " + std::to_string(options_.max_client_channels) + " channels per connection");
            continue;
        }
        if (ch.encoding != "json" && ch.encoding != "msgpack") {
            refuse("encoding '" + ch.encoding + "' is not one this bridge takes (json, msgpack)");
            continue;
        }
        Client::Publication p;
        p.topic = ch.topic;
        p.encoding = ch.encoding;
        const auto existing = topics_.find(ch.topic);
        if (existing != topics_.end() && !existing->second->type.empty()) {
            p.type = existing->second->type;  // the topic's type wins: its subscribers decode that
            p.schema = existing->second->schema;
        } else {
            p.type = ch.schema_name;
        }
        if (p.type.empty()) {
            refuse("the topic does not exist yet: give schemaName, the Gecko type of what you publish");
            continue;
        }
        if (!p.schema) {  // a type declared on another topic has the same fields
            for (const auto& [name, t] : topics_)
                if (t->schema && t->schema->find(p.type)) {
                    p.schema = t->schema;
                    break;
                }
        }
        try {
            if (p.schema) node_->declare_schema(*p.schema);
            p.publisher = node_->raw_publisher(p.topic, p.type);
        } catch (const std::exception& e) {
            refuse(e.what());
            continue;
        }
        if (!p.schema)
            tell(client, StatusLevel::warning,
                 "channel " + std::to_string(ch.id) + " ('" + ch.topic + "'): no schema is known for type '" + p.type +
                     "', so its messages are published unchecked");
        else if (!ch.schema_name.empty() && ch.schema_name != p.type)
            tell(client, StatusLevel::info,
                 "channel " + std::to_string(ch.id) + ": topic '" + ch.topic + "' carries " + p.type +
                     "; your messages are checked against it (schemaName '" + ch.schema_name + "' is not used)");
        client.publications.emplace(ch.id, std::move(p));
    }
    if (!errors.empty()) tell(client, StatusLevel::error, "advertise refused: " + summarise(errors));
}

void Bridge::client_unadvertise(Client& client, const std::vector<std::uint32_t>& ids) {
    std::vector<std::string> errors;
    for (const auto id : ids)
        if (!client.publications.erase(id)) errors.push_back("no channel " + std::to_string(id));
    if (!errors.empty()) {
        counters_.refused_requests.fetch_add(errors.size(), std::memory_order_relaxed);
        tell(client, StatusLevel::warning, "unadvertise: " + summarise(errors));
    }
}

void Bridge::client_message(Client& client, const BinaryRequest& r) {
    const auto it = client.publications.find(r.channel);
    auto refuse = [&](const std::string& why) {
        counters_.refused_publishes.fetch_add(1, std::memory_order_relaxed);
        if (it != client.publications.end()) ++it->second.refused;
        tell(client, StatusLevel::error, why);
    };
    if (it == client.publications.end()) {
        refuse("message on channel " + std::to_string(r.channel) +
               " refused: this connection did not advertise it (advertise it first, with clientPublish)");
        return;
    }
    Client::Publication& p = it->second;
    std::vector<std::uint8_t> converted;
    const std::uint8_t* bytes = r.payload;
    std::size_t size = r.size;
    if (p.encoding == "json") {
        try {
            converted = wire::json_to_msgpack(std::string_view(reinterpret_cast<const char*>(r.payload), r.size));
        } catch (const std::exception& e) {
            refuse("message on '" + p.topic + "' refused, nothing was published: " + e.what());
            return;
        }
        bytes = converted.data();
        size = converted.size();
    }
    std::string why;
    if (p.schema) {
        why = p.schema->check(p.type, bytes, size, wire::Schema::Check::strict);
    } else {
        try {
            if (wire::Value::parse(bytes, size).type() != wire::Type::map) why = "a message must be a map of fields";
        } catch (const std::exception& e) {
            why = e.what();
        }
    }
    if (!why.empty()) {
        refuse("message on '" + p.topic + "' refused, nothing was published: " + why);
        return;
    }
    try {
        p.publisher.publish(bytes, size);
        counters_.published.fetch_add(1, std::memory_order_relaxed);
    } catch (const std::exception& e) {
        refuse("message on '" + p.topic + "' could not be published: " + e.what());
    }
}

// ---------------------------------------------------------------- services

void Bridge::service_call(Client& client, const BinaryRequest& r) {
    auto fail = [&](const std::string& why) {
        counters_.service_failures.fetch_add(1, std::memory_order_relaxed);
        send(client, service_call_failure(r.service, r.call, why));
    };
    const auto it = service_ids_.find(r.service);
    if (it == service_ids_.end()) {
        fail("no service " + std::to_string(r.service) + " (it may have gone; services are listed in advertiseServices)");
        return;
    }
    const Service& s = *it->second;
    if (r.encoding != "json" && r.encoding != "msgpack") {
        fail("encoding '" + r.encoding + "' is not one this bridge takes (json, msgpack)");
        return;
    }
    if (client.calls >= options_.max_calls_in_flight) {
        fail("too many calls in flight on this connection (at most " + std::to_string(options_.max_calls_in_flight) +
             "); wait for answers first");
        return;
    }
    std::vector<std::uint8_t> request;
    if (r.encoding == "json") {
        try {
            request = wire::json_to_msgpack(std::string_view(reinterpret_cast<const char*>(r.payload), r.size));
        } catch (const std::exception& e) {
            fail(std::string("request to '") + s.name + "' not sent: " + e.what());
            return;
        }
    } else {
        request.assign(r.payload, r.payload + r.size);
    }
    if (s.schema) {
        const auto why = s.schema->check(s.request_type, request.data(), request.size(), wire::Schema::Check::strict);
        if (!why.empty()) {
            fail("request to '" + s.name + "' not sent: " + why);
            return;
        }
    }
    ++client.calls;
    counters_.service_calls.fetch_add(1, std::memory_order_relaxed);
    run_blocking([weak = weak_from_this(), caller = s.caller, request = std::move(request), client_id = client.id,
                  service = r.service, call = r.call, encoding = r.encoding, timeout = options_.call_timeout]() {
        auto self = weak.lock();
        if (!self) return;
        std::string reply, error;
        try {
            std::lock_guard<std::mutex> lock(caller->mutex);
            if (!caller->client) caller->client = self->node_->raw_client(caller->name, caller->request_type, caller->reply_type);
            Buffer buffer;
            buffer.resize(RawPublisher::frame_header_room());
            buffer.write(reinterpret_cast<const char*>(request.data()), request.size());
            caller->client.call(buffer, timeout, [&](const RawView& view) {
                if (encoding == "json") append_message_json(reply, view.payload, view.size, JsonShape::plain);
                else reply.assign(reinterpret_cast<const char*>(view.payload), view.size);
            });
        } catch (const std::exception& e) {
            error = e.what();
        }
        boost::asio::post(self->io_, [self, client_id, service, call, encoding, reply = std::move(reply),
                                      error = std::move(error)] {
            const auto c = self->clients_.find(client_id);
            if (c == self->clients_.end()) return;
            Client& client = *c->second;
            --client.calls;
            if (!error.empty()) {
                self->counters_.service_failures.fetch_add(1, std::memory_order_relaxed);
                self->send(client, service_call_failure(service, call, error));
                return;
            }
            self->send(client,
                       service_call_response(service, call, encoding, reinterpret_cast<const std::uint8_t*>(reply.data()),
                                             reply.size()),
                       true);
        });
    });
}

}  // namespace gecko::bridge
