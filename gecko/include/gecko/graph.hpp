#pragma once
/// @file graph.hpp
/// What a key's network looks like: its nodes, and its topics and services
/// with their types, publishers, subscribers, servers and clients, as the
/// geckocore of the key knows them. For tools, bridges and recorders:
/// `node.graph()` asks once, `node.on_graph_change()` follows topics as they
/// appear and go, and query_graph() asks without a node of your own.

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gecko/net/finder.hpp"
#include "gecko/wire/schema.hpp"

namespace gecko {

struct NodeOptions;

/// The figures a node last reported for one of its entities (every ~3 s).
struct GraphFigures {
    double messages_per_s = 0;
    double bytes_per_s = 0;
    std::uint64_t drops = 0;        ///< publishers: frames a link dropped; subscribers: messages that never arrived
    std::int64_t latency_ns = -1;   ///< subscribers: receive minus send time of the last message (-1: unknown)
    std::uint64_t unheard = 0;      ///< publishers: messages sent while nobody subscribed
    std::int64_t age_ms = 0;        ///< how old the report is
};

/// One publisher, subscriber, server or client.
struct GraphEntity {
    std::uint64_t id = 0;
    std::string kind;               ///< "publisher", "subscriber", "server", "client"
    std::string topic;              ///< the topic or service name
    std::string type;               ///< its type ("<request>-><reply>" for services; "*" any)
    bool latched = false;           ///< a publisher that replays its last message to late subscribers
    std::string node;               ///< its node's name
    std::uint64_t session = 0;      ///< its node's session
    std::string host;
    std::int32_t pid = 0;
    std::optional<GraphFigures> figures;
};

struct GraphTopic {
    std::string name;
    bool service = false;
    std::string type;                     ///< the type of the first publisher/server (else of the first consumer)
    std::vector<std::string> types;       ///< every type declared on it (more than one: a conflict)
    std::uint64_t channel = 0;            ///< the channel id its frames carry; 0 for a service
    std::shared_ptr<const wire::Schema> schema;  ///< the fields declared for `type` (directory.hpp); null: none
    std::vector<GraphEntity> producers;   ///< publishers or servers
    std::vector<GraphEntity> consumers;   ///< subscribers or clients
};

/// A link a node receives another node's messages through.
struct GraphLink {
    std::uint64_t session = 0;  ///< the other node's session
    std::string node;           ///< its name (empty if the core no longer lists it)
    std::string transport;      ///< the locator scheme the link uses: "shm", "ipc", "tcp", "inproc"
};

struct GraphNode {
    std::string name, host;
    std::int32_t pid = 0;
    std::uint64_t session = 0;
    std::int64_t silent_ms = 0;           ///< since the core last heard from it
    std::vector<std::string> locators;    ///< where other nodes reach it
    std::size_t entities = 0;
    std::vector<GraphLink> links;         ///< the nodes it receives from, and how (reported every ~3 s)
};

struct GraphConflict {
    std::string topic;
    bool service = false;
    std::vector<std::string> types;
    std::string message;
};

struct Graph {
    std::string key;
    std::string core_endpoint;            ///< where the answer came from
    std::uint64_t core_instance = 0;
    std::string core_host;
    std::int32_t core_pid = 0;
    /// The fingerprint of the key's secret when the core answered over a
    /// CURVE link made with it: the key is secured, and every tcp and ipc link
    /// of its nodes is CurveZMQ (docs/SECURITY.md). "" when it runs plain.
    std::string secured_fingerprint;
    std::vector<GraphNode> nodes;
    std::vector<GraphTopic> topics;       ///< topics and services, sorted by (service, name)
    std::vector<GraphEntity> key_wide;    ///< key-wide subscribers (recorders, bridges): of no one topic
    std::vector<GraphConflict> conflicts;
    std::map<std::string, std::uint64_t> counters;  ///< the core's counters (malformed_datagrams, ...)

    /// The topic (or service) named `name`, or nullptr.
    const GraphTopic* find(const std::string& name, bool service = false) const;
    /// The node whose session is `session` (an entity's `session`), or nullptr.
    const GraphNode* node_of(std::uint64_t session) const;
};

/// A topic or service appeared (its first entity registered) or went (its last left).
struct GraphEvent {
    enum class Kind { appeared, gone };
    Kind kind = Kind::appeared;
    std::string name;
    bool service = false;
    std::string type;
};

/// Keeps an on_graph_change() callback registered; destroy it to stop.
class GraphWatch {
public:
    GraphWatch() = default;
    explicit GraphWatch(std::function<void()> stop) : stop_(std::move(stop)) {}
    ~GraphWatch() { reset(); }
    GraphWatch(GraphWatch&& o) noexcept : stop_(std::move(o.stop_)) { o.stop_ = nullptr; }
    GraphWatch& operator=(GraphWatch&& o) noexcept {
        if (this != &o) {
            reset();
            stop_ = std::move(o.stop_);
            o.stop_ = nullptr;
        }
        return *this;
    }
    GraphWatch(const GraphWatch&) = delete;
    GraphWatch& operator=(const GraphWatch&) = delete;
    void reset() {
        if (stop_) stop_();
        stop_ = nullptr;
    }

private:
    std::function<void()> stop_;
};

/// Finds the core of `options.key` as a node would (multicast, else the
/// explicit core address and the host door) and fetches its graph, without
/// registering anything. Large tables come page by page.
/// @throws gecko::Error (Errc::discovery) naming what was tried if no core
/// answered within `timeout`; (Errc::invalid_argument) for a malformed
/// `multicast` or `core` option.
Graph query_graph(const NodeOptions& options, std::chrono::milliseconds timeout);
/// The same, searching as `options` say (tools that try several ways).
Graph query_graph(const net::FinderOptions& options, std::chrono::milliseconds timeout);

/// Where a node with `options` looks for its core (query_graph() and the
/// node itself): the key, the multicast group, the explicit core address.
/// @throws gecko::Error (Errc::invalid_argument) for a malformed `multicast` or `core`.
net::FinderOptions finder_options(const NodeOptions& options);

}  // namespace gecko
