// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file state.hpp
/// The bridge's records (bridge.hpp): a topic and its two channels, a
/// service, a client, a Gecko subscription feeding clients, a message on its
/// way. Private to bridge/src.

#include "bridge.hpp"
#include "json_schema.hpp"

#include <gecko/raw_publisher.hpp>
#include <gecko/raw_service.hpp>
#include <gecko/raw_subscriber.hpp>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

namespace gecko::bridge {

/// A Gecko subscription to one topic, shared with the node's callback thread.
struct Bridge::Feed {
    std::string topic;
    std::atomic<bool> json{false};     ///< a client wants the json channel
    std::atomic<bool> msgpack{false};  ///< a client wants the msgpack channel
    std::atomic<JsonShape> shape{JsonShape::plain};
    bool infer = false;                ///< no declared schema: learn one from the messages
    std::mutex inference_mutex;
    SchemaInference inference;
    // Frames on their way from the node's thread to the io thread: one post
    // per batch, not per message; bounded, the oldest dropped (feed_drops).
    std::mutex pending_mutex;
    std::deque<std::shared_ptr<const Frame>> pending;
    RawSubscriber subscriber;
};

/// One message, in the encodings wanted, shared by every client that receives it.
struct Bridge::Frame {
    std::uint64_t receive_ns = 0;
    SharedBytes msgpack, json;
};

struct Bridge::Topic {
    std::string name;
    std::string type;
    std::shared_ptr<const wire::Schema> schema;  ///< declared; null: inferred
    JsonShape shape = JsonShape::plain;
    std::string json_schema;                      ///< what the json channel advertises
    std::uint32_t json_id = 0, msgpack_id = 0;    ///< 0: not advertised (yet)
    std::vector<PublisherInfo> publishers;
    std::shared_ptr<Feed> feed;                   ///< while anyone subscribes, or during a probe
    std::vector<std::pair<Client*, std::uint32_t>> json_subs, msgpack_subs;  ///< (client, subscription)
    std::uint64_t probe_generation = 0;           ///< a schemaless topic waits for a first message
    bool probing = false;
};

/// Calls one service; shared with the threads that make the calls.
struct Caller {
    std::mutex mutex;
    std::string name, request_type, reply_type;
    std::shared_ptr<const wire::Schema> schema;
    RawClient client;  ///< made at the first call
};

struct Bridge::Service {
    std::uint32_t id = 0;
    std::string name, type, request_type, reply_type;
    std::shared_ptr<const wire::Schema> schema;
    std::shared_ptr<Caller> caller;
};

struct Client {
    std::uint64_t id = 0;
    std::string remote, subprotocol;
    Connection* connection = nullptr;  ///< null once it is gone
    Outbox outbox;

    struct Subscription {
        std::uint32_t channel = 0;
        std::string topic;
        bool json = false;
        bool warned = false;         ///< told of its first drop
        std::uint64_t reported = 0;  ///< drops told so far
    };
    std::map<std::uint32_t, Subscription> subscriptions;

    struct Publication {
        std::string topic, type, encoding;
        std::shared_ptr<const wire::Schema> schema;  ///< null: unchecked
        RawPublisher publisher;
        std::uint64_t refused = 0;
    };
    std::map<std::uint32_t, Publication> publications;

    bool graph = false;                                  ///< subscribed to the connection graph
    std::set<std::string> graph_topics, graph_services;  ///< what it was last told
    std::size_t calls = 0;                               ///< service calls in flight
    bool closing = false;
};

}  // namespace gecko::bridge
