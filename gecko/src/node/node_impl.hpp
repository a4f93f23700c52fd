// SPDX-License-Identifier: Apache-2.0
#pragma once
// A node session: what a gecko::Node is. It owns
//   - one out-port and one in-port per transport (outbound.hpp, inbound.hpp),
//   - its reactor thread (reactor.hpp) and, on it, its discovery session,
//   - its links to other nodes: one per node it receives from, on the one
//     locator chosen for that pair (usable_locators),
//   - its entities, which handles (Publisher, Subscriber, ...) share with it:
//     a handle keeps the NodeImpl's memory alive, but close() (at ~Node) ends
//     everything it does; the handles then see `closed()`.
//
// Lock order, outermost first: entities_mutex_ → (sink | table | port) locks.
// No lock is held while user code (callbacks, handlers, log sinks) runs.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "discovery/discovery_client.hpp"
#include "gecko/net/zap_handler.hpp"
#include "gecko/security/key_security.hpp"
#include "gecko/graph.hpp"
#include "gecko/log.hpp"
#include "gecko/node.hpp"
#include "node/directory.hpp"
#include "node/dispatchable.hpp"
#include "node/inbound.hpp"
#include "node/notices.hpp"
#include "node/outbound.hpp"
#include "node/reactor.hpp"
#include "transport/transport.hpp"

namespace gecko::detail {

/// What every entity of a node is to its node.
class Entity {
public:
    virtual ~Entity() = default;
    virtual std::uint64_t id() const = 0;
    /// Figures for the periodic report to the core (called on the reactor).
    virtual TopicStats report() = 0;
    /// The node closes: stop using it (called once, on the thread that closes it).
    virtual void node_closed() = 0;
    /// Discovery's current list of this entity's peers (consumers: producers;
    /// servers: clients). Called on the reactor with the node's entity lock
    /// held, so never after the entity detached.
    virtual void peers_changed(const std::vector<Peer>& /*peers*/) {}
    /// Called on the reactor every ~100 ms (publishers say where their sequence is).
    virtual void tick() {}
    /// Whether a frame from one of `senders` reached this entity since `since_ns` (now_ns clock).
    virtual bool heard_since(const std::vector<std::uint64_t>& /*senders*/, std::int64_t /*since_ns*/) const { return false; }
    /// The core refused its registration for good (its topic's channel id is
    /// another topic's): it must neither send nor take messages. Reactor, entity lock held.
    virtual void refused(const std::string& /*message*/) {}
    /// The key's directory changed (reactor thread, entity lock held).
    virtual void directory_changed(const std::vector<DirectoryEvent>& /*events*/) {}
    /// The core keeps no directory (an older geckocore; reactor thread, entity lock held).
    virtual void directory_unsupported() {}
};

class NodeImpl : public std::enable_shared_from_this<NodeImpl> {
public:
    explicit NodeImpl(NodeOptions options);
    ~NodeImpl();
    NodeImpl(const NodeImpl&) = delete;
    NodeImpl& operator=(const NodeImpl&) = delete;

    /// Ends the session: stops spinning, withdraws every entity, says goodbye
    /// to the core, stops the reactor, closes the ports. Idempotent.
    void close();
    bool closed() const noexcept { return closed_.load(std::memory_order_acquire); }
    /// Throws Errc::closed, saying which handle (`what`) outlived its node.
    [[noreturn]] void throw_closed(const std::string& what) const;

    const NodeOptions& options() const noexcept { return options_; }
    const Logger& logger() const noexcept { return logger_; }
    std::uint64_t session() const noexcept { return session_; }
    const std::string& key() const noexcept { return options_.key; }
    std::uint64_t new_id();

    Inbound& inbound() noexcept { return *inbound_; }
    Outbound& outbound() noexcept { return *outbound_; }
    Notices& notices() noexcept { return notices_; }
    Reactor& reactor() noexcept { return reactor_; }

    // ---- entities -----------------------------------------------------------------------------
    void attach(Entity& e, const Registration& registration);
    /// For consumers (and servers): also links to the nodes of the peers
    /// discovery lists, and tells the entity (Entity::peers_changed).
    void attach_watching(Entity& e, const Registration& registration);
    void detach(Entity& e);
    /// Callback entities spin() runs. `self` is `d` (its destructor calls
    /// remove_dispatchable, so the list never needs a strong reference to find it).
    void add_dispatchable(const Dispatchable* self, std::weak_ptr<Dispatchable> d);
    void remove_dispatchable(const Dispatchable* d);

    /// The type name and node of another node's entity, as discovery named it ("" if unknown).
    std::string type_name_of(std::uint64_t entity) const;

    // ---- spinning ---------------------------------------------------------------------------
    /// `background`: on the node's background spinner (Inbound::wait).
    std::size_t spin_once(std::chrono::milliseconds timeout, bool background = false);
    void start_spinner();
    void stop_spinner();

    // ---- the rest of the Node API --------------------------------------------------------------
    bool wait_for_core(std::chrono::milliseconds timeout);
    void connect(const std::string& locator);
    std::vector<std::string> locators() const { return outbound_->locators(); }
    GraphWatch on_graph_change(std::function<void(const GraphEvent&)> callback);
    DirectoryWatch watch_directory(std::function<void(const DirectoryEvent&)> callback);
    /// The directory now (waiting up to `timeout` for the core's first answer).
    std::vector<std::shared_ptr<const ChannelInfo>> directory(std::chrono::milliseconds timeout);
    /// Starts following the key's directory (once; key-wide subscribers need it).
    /// False without discovery: there is none to follow.
    bool follow_directory();
    const Directory& directory_state() const noexcept { return key_directory_; }
    void declare_schema(const wire::Schema& schema);
    /// The schema of `type_name` (a service's "A->B": of A and B) from the
    /// declared ones, encoded; "" if none is declared.
    std::string schema_for(const std::string& type_name) const;
    DiscoveryOptions discovery_options() const;
    /// The key's graph, from the core this node is registered with (else found afresh).
    Graph graph(std::chrono::milliseconds timeout);

private:
    struct Link {
        std::string locator;
        std::set<std::uint64_t> users;  // local entities whose peers live on that node
        Reactor::Clock::time_point unlisted_since{};  // no user left, but kept while we still hear from it
    };
    struct RemoteEntity {
        std::string type, node;
        std::uint64_t session = 0;
    };

    Reactor::Clock::time_point tick(Reactor::Clock::time_point now);  // the reactor's
    void on_peers(std::uint64_t entity, const std::vector<Peer>& peers);       // reactor
    // Applies NodeOptions::shared_memory to a peer's usable locators; false: do not link to it.
    bool restrict_to_shared_memory(std::vector<std::string>& usable, const Peer& peer, const Whereabouts& there);
    void prune_links(Reactor::Clock::time_point now);                           // reactor
    bool heard_from(std::uint64_t session, std::chrono::milliseconds within);   // reactor
    void report_stats(Reactor::Clock::time_point now);                          // reactor
    std::size_t dispatch_ready();
    std::size_t dispatch_graph_events();
    std::size_t dispatch_directory_events();
    bool any_ready();

    NodeOptions options_;
    Logger logger_;
    Whereabouts here_;
    std::uint64_t session_ = 0;
    security::KeySecurity security_;          // the key's secret here, if any (docs/SECURITY.md §5)
    std::optional<net::ZapAdmission> zap_;    // with a secret: our CURVE sockets admit the key's clients; outlives them
    std::vector<std::unique_ptr<Transport>> transports_;
    Notices notices_;
    Reactor reactor_;
    std::unique_ptr<Outbound> outbound_;
    std::unique_ptr<Inbound> inbound_;
    std::unique_ptr<DiscoveryClient> discovery_;
    std::atomic<bool> closed_{false};
    std::mutex close_mutex_;

    std::mutex random_mutex_;
    std::mt19937_64 random_;

    mutable std::mutex entities_mutex_;
    std::map<std::uint64_t, Entity*> entities_;
    std::vector<std::pair<const Dispatchable*, std::weak_ptr<Dispatchable>>> dispatchables_;
    // Strong references to dispatchables, taken under entities_mutex_ and released
    // after it: one may be the last (its owner dropped the handle meanwhile), and
    // its destructor takes entities_mutex_ to unregister.
    bool collect_ready(std::vector<std::shared_ptr<Dispatchable>>* out);

    // Reactor thread only.
    std::map<std::uint64_t, std::set<std::uint64_t>> wants_;  // local entity -> remote sessions it needs
    std::map<std::uint64_t, Link> links_;                      // by remote session
    Reactor::Clock::time_point next_report_{};
    Reactor::Clock::time_point next_entity_tick_{};
    Reactor::Clock::time_point tidy_at_{};  // when the ports' housekeeping runs (once; then max())
    Reactor::Clock::time_point last_report_{};
    std::map<std::uint64_t, TopicStats> last_figures_;

    mutable std::mutex directory_mutex_;
    std::map<std::uint64_t, RemoteEntity> directory_;  // other nodes' entities discovery told us of

    std::mutex graph_mutex_;
    std::map<std::uint64_t, std::function<void(const GraphEvent&)>> graph_watches_;
    std::vector<GraphEvent> graph_events_;  // waiting for spin()
    bool graph_dispatching_ = false;        // a thread runs the watches (one at a time, in order)
    std::uint64_t next_graph_watch_ = 1;

    // The key's channel directory, and the watch_directory() callbacks.
    void on_directory(const DirectoryUpdate& update);  // reactor
    void on_directory_unsupported();                    // reactor
    Directory key_directory_;
    std::atomic<bool> following_directory_{false};
    struct DirectoryNote {
        std::uint64_t watch;  // 0: for every watch
        DirectoryEvent event;
    };
    std::mutex directory_watch_mutex_;
    std::map<std::uint64_t, std::function<void(const DirectoryEvent&)>> directory_watches_;
    std::vector<DirectoryNote> directory_events_;  // waiting for spin()
    bool directory_dispatching_ = false;           // a thread runs the watches (one at a time, in order)
    std::uint64_t next_directory_watch_ = 1;

    mutable std::mutex schemas_mutex_;
    std::map<std::string, wire::MessageSchema> schemas_;  // declared message types, by name

    std::thread spinner_;
    std::atomic<bool> spinning_{false};
};

}  // namespace gecko::detail
