// SPDX-License-Identifier: Apache-2.0
#pragma once
// The core's table: the sessions of one key's nodes, their entities, the
// topics and services they name, and the messages that keep every node's view
// of it current (docs/DISCOVERY.md §2-§4). It owns no socket: what it sends
// and logs goes through TableOutput, so it runs and is tested without one.
//
// Work per message is bounded: registrations are indexed by topic (log n per
// entity), a change is pushed to the watchers it concerns as a delta, and
// every peer is held to limits (entities per node, nodes per host, types per
// topic, name lengths) that are refused with a reason and counted, never
// silently.
//
//   sessions.cpp  hello, the session messages (hb, add, remove, stats, ...), leaving
//   registry.cpp  entities and topics: add, remove, type checks, peer sets, graph events
//   directory.cpp the channel directory (§4.1): entries, name collisions, key-wide subscribers

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "claims.hpp"
#include "gecko/log.hpp"
#include "gecko/wire/discovery.hpp"
#include "geckocore/core.hpp"

namespace gecko::core {

using Clock = std::chrono::steady_clock;
using discovery::EntityKind;
using discovery::Peer;
using discovery::Registration;
using discovery::TopicStats;

/// Who the core is, as its answers say it.
struct CoreIdentity {
    std::string key;
    std::uint64_t instance = 0;
    std::string endpoint;  ///< its ROUTER, as bound
    std::string host;
    std::int32_t pid = 0;
    std::string pidns;
};

/// What the table sends, counts and logs: the core's I/O, or a test's recorder.
class TableOutput {
public:
    virtual ~TableOutput() = default;
    /// Sends `message` on the connection `route` (`req_envelope`: it is a REQ socket's):
    /// a push of the table (peers, graph, directory) or a heartbeat's answer.
    virtual void send(const std::string& route, bool req_envelope, const discovery::Writer& message) = 0;
    /// An answer a request asked for (welcome, unknown, error): dropped and
    /// counted instead when the connection has not read what it was sent.
    virtual void answer(const std::string& route, bool req_envelope, const discovery::Writer& message) = 0;
    virtual void count(std::uint64_t CoreCounters::*field, std::uint64_t n = 1) = 0;
    /// A log line of `reason`, unless a flood of lines of that reason is being held back.
    virtual void say(LogLevel level, const std::string& reason, const std::string& text) = 0;
    /// The entities of these topic or service names changed.
    virtual void names_changed(const std::set<std::string>& names) = 0;
};

/// Where a message came from: its connection (the ROUTER's routing id), how
/// to answer it, and the connection's peer address (tcp: the remote IP, as
/// ZeroMQ's "Peer-Address" says it; "" over ipc). Quotas bind to the address:
/// a peer chooses what its messages say, not where its connection comes from.
struct Origin {
    std::string route;
    bool req_envelope = false;
    std::string address;
};

struct TopicKey {
    bool service;
    std::string name;
    bool operator<(const TopicKey& o) const { return std::tie(service, name) < std::tie(o.service, o.name); }
};

struct Session {
    std::uint64_t id = 0;
    std::uint64_t secret = 0;
    std::string node, host, host_id, pidns;
    std::string fingerprint;  // of the secret its node uses ("" if it named none): passed on in peer maps
    std::int32_t pid = 0;
    std::vector<std::string> locators;
    std::string route;    // ROUTER identity of its latest message
    std::string address;  // the peer address of that connection: what its quotas count against
    bool req_envelope = false;
    Clock::time_point last_seen{};
    bool local = false;  // same host and pid namespace as the core: kill(pid, 0) applies
    bool watch_graph = false;
    bool watch_directory = false;
    std::set<std::uint64_t> entities;
    std::uint64_t digest = 0;  // xor of discovery::entity_digest_term(id) over entities
    // The links it receives other nodes through: their session, and the transport ("shm", "ipc", ...).
    std::vector<std::pair<std::uint64_t, std::string>> links;
};

struct Entity {
    Registration reg;
    std::uint64_t session = 0;
    std::uint64_t order = 0;
    std::optional<TopicStats> stats;
    Clock::time_point stats_at{};
};

using ByOrder = std::map<std::uint64_t, std::uint64_t>;  // order -> entity id (registration order)

// One topic (or service) and its entities, indexed so that what one
// registration touches is found in log n, never by a scan of the topic.
struct Topic {
    struct TypeUse {
        ByOrder producers, consumers;                      // the entities that declare this type
        std::map<std::uint64_t, std::size_t> by_session;  // how many of them each session has
    };
    ByOrder by_order;                      // every entity
    ByOrder of_kind[4];                    // by EntityKind
    std::map<std::string, TypeUse> types;  // declared type -> its entities (wildcards not counted)
    std::set<std::string> produced;        // the types that have a producer
    std::map<std::uint64_t, std::size_t> types_of_session;  // distinct types each session declares here
    std::size_t producers = 0;
    std::string published;  // its directory entry as last pushed (encoded): a change pushes a delta
    void insert(const Entity& e);
    void erase(const Entity& e);
};

/// A consumer that declares no type ("" or "*": a tool, a bridge) takes any.
inline bool is_wildcard_type(const std::string& t) { return t.empty() || t == "*"; }
inline bool is_service(EntityKind k) { return k == EntityKind::server || k == EntityKind::client; }
/// Which kind an entity of `kind` is told about (subscribers: publishers, clients: servers, servers: clients).
std::optional<EntityKind> watched_kind(EntityKind kind);

// Links a node may report (a node links to each peer it hears from: this bounds what one session costs).
inline constexpr std::size_t max_links_per_session = 1024;

class Table {
public:
    Table(const CoreOptions& options, const CoreIdentity& identity, TableOutput& out)
        : opt_(options), me_(identity), out_(out) {}

    // ---- messages (sessions.cpp) ----------------------------------------------------------
    /// `hello` from session `sid`.
    void hello(const Origin& from, const wire::Value& root, std::uint64_t sid, Clock::time_point now);
    /// A session message other than hello (`t`: hb, add, remove, stats, watch_graph, bye, ...).
    void handle(const Origin& from, const std::string& t, const wire::Value& root, std::uint64_t sid,
                Clock::time_point now);
    /// An `error` message for entity `id` (0: none) on a connection, naming `session` when not 0.
    void reply_error(const std::string& route, bool req_envelope, std::uint64_t id, const std::string& code,
                     const std::string& message, std::uint64_t session = 0);

    // ---- time (sessions.cpp) ----------------------------------------------------------------
    /// Removes the sessions whose lease expired, and (`check_pids`) local ones whose process is gone.
    void expire(Clock::time_point now, bool check_pids);
    /// The warm-up after start is over: every watcher gets its complete peer set,
    /// and the claims of the previous run lapse.
    void end_warm_up();

    // ---- across a restart (sessions.cpp) ---------------------------------------------------
    /// What the previous run held: until the warm-up is over, a claimed session
    /// id needs its secret, and a claimed entity id is its session's only.
    void keep_claims(Claims claims) { claims_ = std::move(claims); }
    /// What this run holds (and, during the warm-up, what is still claimed).
    Claims claims() const;
    /// Grows whenever claims() would say something else.
    std::uint64_t changes() const noexcept { return changes_; }
    bool warm() const noexcept { return warm_; }

    // ---- reading (the list answer) -----------------------------------------------------------
    const std::map<std::uint64_t, Session>& sessions() const noexcept { return sessions_; }
    /// Whether the connection `route` carries a session.
    bool carries(const std::string& route) const { return sessions_per_route_.count(route) > 0; }
    const std::map<std::uint64_t, Entity>& entities() const noexcept { return entities_; }
    const std::map<TopicKey, Topic>& topics() const noexcept { return topics_; }
    /// The entity as its watchers see it: its registration and where its node is.
    Peer peer_of(const Entity& e) const;
    /// Entities registered under a topic or service name (both namespaces).
    std::size_t size_of(const std::string& name) const;
    /// The directory's entry of a topic or service (directory.cpp).
    discovery::ChannelEntry entry_of(const TopicKey& key, const Topic& topic) const;
    /// The key-wide subscribers (entities of no topic).
    const std::set<std::uint64_t>& key_wide() const noexcept { return key_wide_; }

private:
    // sessions.cpp
    void send_to(const Session& s, const discovery::Writer& w) { out_.send(s.route, s.req_envelope, w); }
    void error_to(const Session& s, std::uint64_t id, const std::string& code, const std::string& message);
    void notify_error(std::uint64_t entity, const std::string& code, const std::string& message);
    void stats(Session& s, const wire::Value& root, Clock::time_point now);
    void remove_session(std::uint64_t id, const std::string& why);
    /// Moves a session to the connection of `from` (an empty route: none, as it goes).
    void set_route(Session& s, const Origin& from);
    std::string describe(const Entity& e) const;
    // registry.cpp
    void add(Session& s, Registration reg);
    void check_types(const Session& s, const Topic& topic, const TopicKey& key, const Entity& e);
    void remove_entity(std::uint64_t id);
    std::vector<std::uint64_t> peers_of(const Entity& watcher) const;
    std::vector<std::uint64_t> watchers_of(const Entity& e) const;
    void push_full(std::uint64_t watcher);
    void push_delta(std::uint64_t watcher, const std::vector<std::uint64_t>& added, const std::vector<std::uint64_t>& gone);
    void graph_event(bool appeared, const TopicKey& key, const std::string& type);
    void graph_event_to(const Session& s, bool appeared, const TopicKey& key, const std::string& type);
    // directory.cpp
    /// Why `reg` may not be added as it is ("" if it may): a name whose
    /// channel id another topic has, a key-wide filter or a schema that is
    /// not valid.
    std::string check_registration(const Registration& reg) const;
    /// The entry of `key` changed (or is gone): watchers get a delta if what they saw differs.
    void directory_changed(const TopicKey& key);
    void push_directory(const Session& s);
    /// Key-wide subscribers: whether `watcher` (one) is told of publisher `e`.
    bool key_wide_watches(const Entity& watcher, const Entity& e) const;
    void add_key_wide(Session& s, Registration reg);

    const CoreOptions& opt_;
    const CoreIdentity& me_;
    TableOutput& out_;
    std::map<std::uint64_t, Session> sessions_;
    std::map<std::string, std::size_t> sessions_per_address_;  // by the peer address of their latest connection
    std::map<std::string, std::size_t> sessions_per_route_;    // by ROUTER identity of their latest message
    std::map<std::uint64_t, Entity> entities_;
    std::map<TopicKey, Topic> topics_;
    std::map<std::uint32_t, std::string> channel_names_;  // fnv1a32(topic name) -> the topic that has it
    std::set<std::uint64_t> key_wide_;                     // key-wide subscribers (entities not in topics_)
    std::size_t directory_watchers_ = 0;                   // sessions that watch the directory
    std::uint64_t next_order_ = 0;
    bool warm_ = true;  // within one lease of start: the table may be incomplete
    Claims claims_;     // the previous run's, during the warm-up
    std::uint64_t changes_ = 0;
};

}  // namespace gecko::core
