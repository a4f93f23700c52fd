// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file discovery_client.hpp
/// The node side of discovery (internal). A DiscoveryClient finds the
/// geckocore of its key (UDP multicast query, else the explicit core address),
/// keeps a ZeroMQ DEALER session to it, registers the node's entities, and
/// reports the peers each subscriber/client should connect to.
///
/// Registrations are soft state: they are re-sent whenever a core does not
/// know this node (core restart), and watchers keep their last peer set while
/// no core is reachable: a core going away never tells the node that its
/// publishers vanished. See docs/DISCOVERY.md for the wire protocol.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "gecko/net/finder.hpp"
#include "gecko/net/zmq_socket.hpp"
#include "gecko/wire/discovery.hpp"
#include "node/directory.hpp"

namespace gecko::detail {

using discovery::EntityKind;
using discovery::Peer;
using discovery::Registration;
using discovery::TopicStats;

/// How a node finds and talks to its core: where to look (net::FinderOptions)
/// and how to keep its session. Every field has a default.
struct DiscoveryOptions : net::FinderOptions {
    std::chrono::milliseconds lease{3000};          ///< heartbeat every lease/3; core considered lost after a lease of silence
    std::vector<std::string> locators;              ///< the node's locators (tcp wildcards rewritten when sent)
    /// The key's CurveZMQ keys when this process holds its secret: the link
    /// to the core is CURVE, and a core that is not secured is refused.
    std::shared_ptr<const net::CurveKeys> curve;
    std::string secret_path;  ///< where the key's secret was looked for (for the error messages)
};

class Reactor;

class DiscoveryClient {
public:
    /// Starts discovering on `reactor` (the node's, not running yet: it must
    /// outlive this client or be stopped first), or on a reactor of its own
    /// when null. With the node's reactor, the search starts at once, on the
    /// calling thread (a multicast query out, or a connection to the explicit
    /// core under way); everything after runs on the reactor. Never blocks
    /// waiting for the core. Callbacks (watch, on_error) run on that reactor.
    /// @throws gecko::Error(invalid_argument) on a malformed option.
    explicit DiscoveryClient(DiscoveryOptions options, Reactor* reactor = nullptr);
    /// Withdraws every registration (best effort, bounded to ~200 ms). With the
    /// node's reactor, call close() first, then stop the reactor.
    ~DiscoveryClient();
    /// Says goodbye to the core (from any thread; idempotent).
    void close();
    /// Replaces DiscoveryOptions::locators (a node opens its ports while the
    /// search runs): used by every hello from now on.
    void set_locators(std::vector<std::string> locators);
    DiscoveryClient(const DiscoveryClient&) = delete;
    DiscoveryClient& operator=(const DiscoveryClient&) = delete;

    /// Registers now (or as soon as a core answers), and again after any core restart.
    /// Re-adding an existing id replaces it.
    void add(const Registration& r);
    /// Withdraws a registration and drops its watcher.
    void remove(std::uint64_t id);
    /// For a subscriber: the publishers of its topic (same type only); for a client: the
    /// servers of its service. Called on the discovery thread with the full current set
    /// once after the first answer, then whenever that set changes.
    void watch(std::uint64_t id, std::function<void(const std::vector<Peer>&)> on_peers);
    /// Errors the core reports about one of our entities (`code`: type_conflict,
    /// duplicate, refused, collision, ...). Called on the discovery thread.
    void on_error(std::function<void(std::uint64_t id, const std::string& code, const std::string& message)> cb);
    /// Latest figures, forwarded to the core on the next report tick (~3 s).
    /// `links`: the other nodes' sessions this node receives from, with the
    /// transport of each link ("shm", "ipc", ...), for `gecko info`.
    void report(std::vector<TopicStats> stats, std::vector<std::pair<std::uint64_t, std::string>> links = {});
    /// Follows the key's topics: `on_event(appeared, service, name, type)`,
    /// first for every topic that exists, then as they change. Empty: stop.
    void watch_graph(std::function<void(bool appeared, bool service, const std::string& name, const std::string& type)> on_event);
    /// Follows the key's channel directory (docs/DISCOVERY.md §4.1): each
    /// `directory` message the core sends, read; `on_unsupported` once if the
    /// core keeps none (an older core). Called on the discovery thread.
    void watch_directory(std::function<void(const DirectoryUpdate&)> on_update, std::function<void()> on_unsupported);
    /// True once a core acknowledged this node (returns at once if it already has).
    /// @throws gecko::Error (Errc::security) once the core and this node
    /// disagree on security (security_error()).
    bool wait_for_core(std::chrono::milliseconds timeout);
    /// Why the key's core cannot be joined, for good: it is secured and this
    /// node has no secret (or another one), or this node has the secret and
    /// the core is plain. "" while no such thing was seen.
    std::string security_error() const;
    /// True while a core is acknowledging our heartbeats.
    bool connected() const noexcept;
    /// What was tried to find the core and what came of it, for error messages.
    std::string describe_attempts() const;
    /// tcp://0.0.0.0:P and tcp://*:P -> tcp://<address other hosts can reach>:P
    /// (the local address of the route towards the core, or towards the multicast
    /// group, or of `interface`); anything else is returned unchanged.
    std::string local_endpoint_for(const std::string& bound) const;
    /// This node's session id (random, new for each DiscoveryClient).
    std::uint64_t session() const noexcept;
    /// The core's instance id (0 while none acknowledged us).
    std::uint64_t core_instance() const noexcept;
    /// Where the core that acknowledged us listens ("" while none did).
    std::string core_endpoint() const;

    /// One turn on a shared reactor (the node's tick calls it): returns when next.
    using Clock = std::chrono::steady_clock;
    Clock::time_point service(Clock::time_point now);

    struct Impl;

private:
    std::unique_ptr<Impl> impl_;
};

}  // namespace gecko::detail
