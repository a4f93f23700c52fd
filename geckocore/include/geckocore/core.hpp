// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file core.hpp
/// geckocore, the discovery daemon of one key, as a library class so that
/// tests can run it in-process. `geckocore` (src/main.cpp) only parses its
/// arguments into CoreOptions and calls Core::run().
///
/// The core answers multicast queries for its key, announces itself on the
/// group, keeps the table of every node's registrations (soft state: leases,
/// plus a kill(pid, 0) check for nodes on its own host), checks topic types,
/// pushes peer sets to subscribers and clients, and answers "list" queries.
/// The wire protocol is specified in docs/DISCOVERY.md.

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

namespace gecko::core {

/// How a Core runs. Every field has a default.
struct CoreOptions {
    std::string key;                                  ///< required: the key this core serves
    std::string multicast_group = "239.255.71.67";    ///< shared by every key; 239.255.0.0/16 is administratively scoped
    std::uint16_t multicast_port = 7650;              ///< UDP port of the group
    int ttl = 1;                                      ///< multicast TTL
    std::string interface;                            ///< interface name or IPv4 address to join on; empty = default
    std::string listen = "tcp://0.0.0.0:*";           ///< this core's ROUTER endpoint ("*" port: any free one; multicast announces it)
    /// The host door's tcp port: the first core on a host holds it and redirects
    /// `GECKO_CORE=host` users to the core of their key; the others register
    /// with it (over loopback) and take it over when its holder exits. 0: none.
    std::uint16_t door_port = 7651;
    bool multicast = true;                            ///< false: unicast only (nodes need GECKO_CORE)
    std::chrono::milliseconds lease{3000};            ///< a node silent this long is dropped; also the warm-up after start
    std::chrono::milliseconds announce_period{2000};  ///< period of announcements on the group (after 3 quick ones at start)
    std::chrono::milliseconds pid_check_period{200};  ///< kill(pid, 0) on same-host nodes
    // Bounds on what one peer can make the core do or hold (refused with a reason, counted).
    std::size_t max_entities_per_session = 4096;      ///< publishers, subscribers, servers, clients of one node
    /// Entities of all nodes together: what the table may hold (~1.2 kB each),
    /// whatever number of connections and sessions peers open.
    std::size_t max_entities = 100000;
    /// Nodes registered from one host: from one peer address (the connection's,
    /// not the host name a hello claims, which anyone can claim for another host).
    std::size_t max_sessions_per_host = 1024;
    /// Nodes registered over one connection (a node has one; a tool none). With
    /// max_connections, this bounds the sessions any set of peers can open.
    std::size_t max_sessions_per_connection = 16;
    /// Distinct types one node declares on one topic (more is a flood). Per
    /// node: nodes that declare made-up types first cannot lock a topic.
    std::size_t max_types_per_topic_per_node = 16;
    std::size_t max_connections = 0;                  ///< TCP connections at once; 0: from the fd limit (raised at start)
    /// A connection that carries no node this long after it opened is closed,
    /// whatever it asked (a tool's `list` needs well under a second).
    std::chrono::milliseconds hello_timeout{10000};
    /// Answers (`list`, errors) a connection has not read: past this many
    /// bytes, more answers to it are dropped and counted (answers_dropped).
    std::size_t max_queued_per_connection = 8u << 20;
    /// The same over all connections: past it, `list` is answered `busy`.
    std::size_t max_queued_total = 64u << 20;
    /// A flood of one kind of log line (per reason, not per text) writes its
    /// first line, then at most one per period, each saying how many were held back.
    std::chrono::milliseconds log_period{10000};
    /// Where nodes of this host keep shared memory. The core removes the
    /// segments and doorbells that crashed processes of its user left there,
    /// every shm_clean_period (a node does the same when it opens its own).
    /// Empty: never.
    std::string shm_directory = "/dev/shm";
    std::chrono::milliseconds shm_clean_period{10000};
    /// Where the core keeps its claims: which session held which entity id,
    /// and each session's secret (a file of its user's, 0600, per key). A
    /// restarted core gives a claimed id to no other session during its
    /// warm-up. Empty: nowhere (a restarted core knows nothing).
    std::string claims_directory = "/dev/shm";

    /// The defaults, then the environment: GECKO_KEY, GECKO_MULTICAST
    /// (GROUP[:PORT]), GECKO_INTERFACE, GECKO_NO_MULTICAST (a boolean:
    /// gecko::parse_flag's values, as for nodes). The same variables and
    /// values as NodeOptions::from_env; `geckocore` applies its flags on top.
    /// @throws gecko::Error (Errc::invalid_argument) naming a variable whose value is malformed.
    static CoreOptions from_env();
};

/// Counters of unusual events, for tests and the "list" reply.
struct CoreCounters {
    std::uint64_t malformed_datagrams = 0;  ///< undecodable or invalid datagrams on the multicast port
    std::uint64_t malformed_messages = 0;   ///< undecodable or invalid ZeroMQ requests
    std::uint64_t queries_answered = 0;
    std::uint64_t other_key_queries = 0;    ///< queries for other keys (ignored, not an error)
    std::uint64_t duplicate_cores = 0;      ///< announcements heard from another core of our key
    std::uint64_t leases_expired = 0;
    std::uint64_t dead_processes = 0;       ///< same-host nodes found dead by kill(pid, 0)
    std::uint64_t type_conflicts = 0;
    std::uint64_t refused = 0;              ///< registrations refused (limits, invalid names)
    std::uint64_t auth_failures = 0;        ///< session messages without the session's secret
    std::uint64_t connections_closed = 0;   ///< idle connections that never said hello, closed
    std::uint64_t stale_shm_removed = 0;    ///< shared-memory files of crashed processes removed
    std::uint64_t answers_dropped = 0;      ///< answers not sent: their connection, or all, had too much unread
    /// Connections whose security handshake failed: a node without the key's
    /// secret, or with another one (docs/SECURITY.md §5). Logged; not yet in
    /// `list`'s counters.
    std::uint64_t handshakes_refused = 0;
    /// Datagrams of the key that are not sealed with its secret (unsigned,
    /// another secret, a bad MAC, stale, replayed: docs/SECURITY.md §6).
    /// Logged per reason; not yet in `list`'s counters.
    std::uint64_t datagrams_refused = 0;
};

class Core {
public:
    /// Binds the ROUTER and the multicast sockets.
    /// @throws gecko::Error(invalid_argument) for bad options, (transport) if a bind fails.
    explicit Core(CoreOptions options);
    /// Stops the background thread, if start() was used.
    ~Core();
    Core(const Core&) = delete;
    Core& operator=(const Core&) = delete;

    /// Serves until stop(). Returns the exit code (0).
    int run();
    /// run() on a background thread (tests).
    void start();
    /// Makes run() return soon. Thread-safe.
    void stop() noexcept;

    /// The bound ROUTER endpoint with its actual port, e.g. "tcp://0.0.0.0:7651".
    const std::string& endpoint() const noexcept;
    /// The fingerprint of the key's secret when this core has one (its links
    /// are then CURVE, docs/SECURITY.md §5); "" when it runs plain.
    std::string secured_fingerprint() const;
    /// The fingerprint of the secret it also accepts during a key's rotation
    /// (docs/SECURITY.md §9); "" outside one.
    std::string accepted_fingerprint() const;
    /// Random id of this run; nodes detect a restart when it changes.
    std::uint64_t instance() const noexcept;
    const CoreOptions& options() const noexcept;
    /// True if the multicast sockets are up (false with --no-multicast or if joining failed).
    bool multicast_active() const noexcept;
    /// True while this core holds the host door (see CoreOptions::door_port).
    bool holds_door() const noexcept;
    CoreCounters counters() const;

    /// Number of entities registered on `topic` (topics and services alike).
    std::size_t registered(const std::string& topic) const;
    /// Waits until `topic` has at least `count` entities. Returns false on timeout.
    bool wait_until_registered(const std::string& topic, std::size_t count, std::chrono::milliseconds timeout) const;
    /// Waits until `topic` has at most `count` entities. Returns false on timeout.
    bool wait_until_at_most(const std::string& topic, std::size_t count, std::chrono::milliseconds timeout) const;

    struct Impl;

private:
    std::unique_ptr<Impl> impl_;
};

}  // namespace gecko::core
