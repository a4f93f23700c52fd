// SPDX-License-Identifier: Apache-2.0
// geckocore: the table of one key's nodes and entities, kept as soft state,
// and the messages that keep every node's view of it current
// (docs/DISCOVERY.md is the specification).
//
// Work per message is bounded: registrations are indexed by topic (log n per
// entity), a change is pushed to the watchers it concerns as a delta, large
// answers are split, and every peer is held to limits (entities per node,
// nodes per host, types per topic, name lengths, connections) that are
// refused with a reason and counted, never silently.

#include "geckocore/core.hpp"

#include "gecko/net/net.hpp"
#include "gecko/wire/discovery.hpp"
#include "door.hpp"
#include "router_io.hpp"
#include "gecko/error.hpp"
#include "gecko/log.hpp"
#include "gecko/net/zmq_socket.hpp"
#include "gecko/wire/names.hpp"
#include "gecko/shm/segment.hpp"

#include <zmq.hpp>

#include <arpa/inet.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <cerrno>
#include <condition_variable>
#include <map>
#include <mutex>
#include <set>
#include <thread>

namespace gecko::core {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using discovery::EntityKind;
using discovery::Peer;
using discovery::Registration;
using discovery::TopicStats;

namespace {

std::string pid_namespace() {
    char buf[128] = {};
    const auto n = ::readlink("/proc/self/ns/pid", buf, sizeof buf - 1);
    return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string();
}

struct TopicKey {
    bool service;
    std::string name;
    bool operator<(const TopicKey& o) const { return std::tie(service, name) < std::tie(o.service, o.name); }
};

bool is_service(EntityKind k) { return k == EntityKind::server || k == EntityKind::client; }

// A consumer that declares no type ("" or "*": a tool, a bridge) takes any.
bool is_wildcard_type(const std::string& t) { return t.empty() || t == "*"; }
bool types_match(const std::string& a, const std::string& b) { return a == b || is_wildcard_type(a) || is_wildcard_type(b); }

// Which kind an entity of `kind` is told about: subscribers hear of
// publishers; clients of servers; servers of clients (their nodes must link
// to each other both ways for requests and replies).
std::optional<EntityKind> watched_kind(EntityKind kind) {
    switch (kind) {
        case EntityKind::subscriber: return EntityKind::publisher;
        case EntityKind::client: return EntityKind::server;
        case EntityKind::server: return EntityKind::client;
        case EntityKind::publisher: return std::nullopt;
    }
    return std::nullopt;
}

// Which kind watches an entity of `kind` (the inverse of watched_kind).
std::optional<EntityKind> watcher_kind(EntityKind kind) {
    switch (kind) {
        case EntityKind::publisher: return EntityKind::subscriber;
        case EntityKind::server: return EntityKind::client;
        case EntityKind::client: return EntityKind::server;
        case EntityKind::subscriber: return std::nullopt;
    }
    return std::nullopt;
}

// Peer lists are sent in chunks of at most this many peers per message.
constexpr std::size_t peers_per_push = 256;
// A list answer stops adding topics past this size and says where to go on
// (`next`); the nodes, and the entities of one topic, take at most
// list_part_bytes of it, the rest is omitted and counted. An answer thus
// stays below 4 MiB (discovery::max_zmq_message, the tools' limit) whatever
// the table holds.
constexpr std::size_t list_page_bytes = 2u << 20;
constexpr std::size_t list_part_bytes = 1u << 20;
// Links a node may report (a node links to each peer it hears from: this bounds what one session costs).
constexpr std::size_t max_links_per_session = 1024;


// A C1 control (U+0080-U+009F, CSI among them) encoded as UTF-8.
bool is_c1(std::string_view s, std::size_t i, std::size_t n) {
    return n == 2 && static_cast<unsigned char>(s[i]) == 0xC2 && static_cast<unsigned char>(s[i + 1]) < 0xA0;
}

// What check_node_name() lets through that a terminal would still obey:
// node and host names may be UTF-8, but not C1 controls or broken UTF-8.
std::string check_node_text(std::string_view name) {
    if (auto why = wire::check_node_name(name); !why.empty()) return why;
    for (std::size_t i = 0; i < name.size();) {
        if (static_cast<unsigned char>(name[i]) < 0x80) {
            ++i;
            continue;
        }
        const std::size_t n = wire::utf8_sequence(name, i);
        if (n == 0) return "the name is not UTF-8 (byte " + std::to_string(i) + ")";
        if (is_c1(name, i, n)) return "the name has a control character (C1, byte " + std::to_string(i) + ")";
        i += n;
    }
    return {};
}

// A name from the network, for a log line or an answer: control characters
// escaped, and at most 64 bytes of it (a 900 kB name is not echoed back).
std::string shown(std::string_view text) {
    constexpr std::size_t max = 64;
    if (text.size() <= max) return wire::printable(text);
    return wire::printable(text.substr(0, max)) + "... (" + std::to_string(text.size()) + " bytes)";
}

// The socket file of an ipc:// locator if nobody listens on it any more (its
// node was killed and could not unlink it): removed. Only gecko's own socket
// files (gecko-*.sock) are touched, and only when connecting is refused.
bool remove_stale_ipc(const std::string& locator) {
    constexpr std::string_view scheme = "ipc://";
    if (locator.compare(0, scheme.size(), scheme) != 0) return false;
    const std::string path = locator.substr(scheme.size());
    const auto slash = path.rfind('/');
    const std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
    sockaddr_un a{};
    if (name.rfind("gecko-", 0) != 0 || name.size() < 11 || name.compare(name.size() - 5, 5, ".sock") != 0 ||
        path.size() >= sizeof a.sun_path)
        return false;
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0 || !S_ISSOCK(st.st_mode)) return false;
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return false;
    a.sun_family = AF_UNIX;
    std::memcpy(a.sun_path, path.c_str(), path.size() + 1);
    const bool refused = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 && errno == ECONNREFUSED;
    ::close(fd);
    return refused && ::unlink(path.c_str()) == 0;
}

}  // namespace

struct Core::Impl {
    explicit Impl(CoreOptions o) : opt(std::move(o)), log("geckocore"), limiter(opt.log_period) {}

    struct Session {
        std::uint64_t id = 0;
        std::uint64_t secret = 0;
        std::string node, host, host_id, pidns;
        std::int32_t pid = 0;
        std::vector<std::string> locators;
        std::string route;  // ROUTER identity of its latest message
        bool req_envelope = false;
        Clock::time_point last_seen{};
        bool local = false;  // same host and pid namespace: kill(pid, 0) applies
        bool watch_graph = false;
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
    struct TypeUse {
        ByOrder producers, consumers;  // the entities that declare this type
    };
    // One topic (or service) and its entities, indexed so that what one
    // registration touches is found in log n, never by a scan of the topic.
    struct Topic {
        ByOrder by_order;                      // every entity
        ByOrder of_kind[4];                    // by EntityKind
        std::map<std::string, TypeUse> types;  // declared type -> its entities (wildcards not counted)
        std::size_t producers = 0;
        void insert(const Entity& e);
        void erase(const Entity& e);
    };
    struct Duplicate {
        std::string host, endpoint;
        std::int32_t pid = 0;
        Clock::time_point last_heard{};
    };
    struct Connection {
        Clock::time_point accepted{};
        bool spoke = false;  // sent a valid message
    };

    CoreOptions opt;
    Logger log;
    LogLimiter limiter;
    const std::string host = net::hostname();
    const std::int32_t pid = static_cast<std::int32_t>(::getpid());
    const std::string pidns = pid_namespace();
    const std::uint64_t instance = net::random_id();
    const Clock::time_point started = Clock::now();
    std::string endpoint;
    std::shared_ptr<zmq::context_t> context = net::process_context();
    std::optional<zmq::socket_t> router;
    std::optional<zmq::socket_t> monitor;  // the ROUTER's connection events
    std::optional<HostDoor> door;
    std::atomic<bool> holds_door{false};
    net::Fd listener, sender;
    sockaddr_in group{};
    std::atomic<bool> stopping{false};
    std::thread thread;

    std::map<std::uint64_t, Session> sessions;
    std::map<std::string, std::size_t> sessions_per_host;
    std::map<std::string, std::size_t> sessions_per_route;  // by ROUTER identity of their latest message
    std::map<std::uint64_t, Entity> entities;
    std::map<TopicKey, Topic> topics;
    std::map<std::uint64_t, Duplicate> duplicates;  // by instance
    std::map<int, Connection> connections;          // by fd
    std::uint64_t next_order = 0;
    bool warm = true;  // within one lease of start: the table may be incomplete

    mutable std::mutex mutex;  // guards counters and topic_sizes for other threads
    mutable std::condition_variable changed;
    CoreCounters counters;
    std::map<std::string, std::size_t> topic_sizes;

    void setup();
    int run();
    // multicast
    void announce();
    void on_datagrams();
    // connections
    void on_monitor(Clock::time_point now);
    void reap_connections(Clock::time_point now);
    // requests
    void on_router();
    void handle(const RouterRequest& request, const discovery::Message& m);
    void hello(const RouterRequest& request, const wire::Value& root, std::uint64_t sid, Clock::time_point now);
    void reply(const std::string& route, bool req_envelope, const discovery::Writer& w);
    // `session`: the session the answer is for (named in "s" so that nodes sharing a connection can tell), 0: none.
    void reply_error(const std::string& route, bool req_envelope, std::uint64_t id, const std::string& code,
                     const std::string& message, std::uint64_t session = 0);
    void send_to_session(const Session& s, const discovery::Writer& w);
    // An `error` about entity `id` (0: the session itself) to session `s`.
    void error_to(const Session& s, std::uint64_t id, const std::string& code, const std::string& message);
    void notify_error(std::uint64_t entity, const std::string& code, const std::string& message);
    // table
    void add(Session& s, Registration reg);
    void remove_entity(std::uint64_t id);
    void remove_session(std::uint64_t id, const std::string& why);
    std::vector<std::uint64_t> peers_of(const Entity& watcher) const;
    void push_full(std::uint64_t watcher);
    void push_delta(std::uint64_t watcher, const std::vector<std::uint64_t>& added, const std::vector<std::uint64_t>& gone);
    std::vector<std::uint64_t> watchers_of(const Entity& e) const;
    Peer peer_of(const Entity& e) const;
    void graph_event(bool appeared, const TopicKey& key, const std::string& type);
    void graph_event_to(const Session& s, bool appeared, const TopicKey& key, const std::string& type);
    void answer_list(const std::string& route, bool req_envelope, const wire::Value& request);
    void table_changed(const std::set<std::string>& names);
    void count(std::uint64_t CoreCounters::*field, std::uint64_t n = 1) {
        std::lock_guard<std::mutex> lock(mutex);
        counters.*field += n;
    }
    // Logs a line of `reason` unless a flood of them is being held back.
    void say(LogLevel level, const std::string& reason, const std::string& text) {
        std::string note;
        if (limiter.admit(reason, Clock::now(), &note)) log.log_at(level, text + note);
    }
    // Moves a session to the connection `route` ("": none, as it goes).
    void set_route(Session& s, const std::string& route) {
        if (s.route == route) return;
        if (!s.route.empty())
            if (auto r = sessions_per_route.find(s.route); r != sessions_per_route.end() && --r->second == 0)
                sessions_per_route.erase(r);
        s.route = route;
        if (!route.empty()) ++sessions_per_route[route];
    }
    std::string describe(const Entity& e) const {
        const auto s = sessions.find(e.session);
        return std::string(discovery::to_string(e.reg.kind)) + " on node '" + (s != sessions.end() ? s->second.node : "?") + "'";
    }
};

// ---- setup ---------------------------------------------------------------------

void Core::Impl::setup() {
    if (opt.key.empty()) throw Error(Errc::invalid_argument, "geckocore needs a key (--key or GECKO_KEY)");
    if (const auto why = wire::check_key(opt.key); !why.empty())
        throw Error(Errc::invalid_argument, "invalid key '" + wire::printable(opt.key) + "': " + why);
    if (opt.lease.count() <= 0) throw Error(Errc::invalid_argument, "the lease must be positive");
    // Every node holds a connection: raise the soft fd limit to the hard one,
    // and keep connections below it (ZeroMQ spins when accept() hits EMFILE).
    rlimit fds{};
    if (::getrlimit(RLIMIT_NOFILE, &fds) == 0 && fds.rlim_cur < fds.rlim_max) {
        fds.rlim_cur = fds.rlim_max;
        ::setrlimit(RLIMIT_NOFILE, &fds);
        ::getrlimit(RLIMIT_NOFILE, &fds);
    }
    if (opt.max_connections == 0)
        opt.max_connections = fds.rlim_cur > 128 ? static_cast<std::size_t>(fds.rlim_cur) - 96 : 32;

    net::SocketOptions so;
    so.max_message_size = discovery::max_zmq_message;
    so.router_handover = true;
    so.send_queue = 10000;
    router = net::make_socket(*context, zmq::socket_type::router, so);
    try {
        router->bind(opt.listen);
    } catch (const zmq::error_t& e) {
        throw Error(Errc::transport, "cannot listen on " + opt.listen + ": " + e.what() +
                                         (e.num() == EADDRINUSE ? " (the port is taken: leave --listen at its default, "
                                                                  "tcp://0.0.0.0:*, or pick another port)"
                                                                : ""));
    }
    endpoint = router->get(zmq::sockopt::last_endpoint);
    // Connection events, to close connections that never say hello.
    const std::string monitor_endpoint = "inproc://geckocore-monitor-" + std::to_string(instance);
    if (zmq_socket_monitor(router->handle(), monitor_endpoint.c_str(), ZMQ_EVENT_ACCEPTED | ZMQ_EVENT_DISCONNECTED) == 0) {
        monitor = net::make_socket(*context, zmq::socket_type::pair);
        monitor->connect(monitor_endpoint);
    }

    HostDoor::Options door_options;
    door_options.port = opt.door_port;
    door_options.self = DoorEntry{opt.key, instance, endpoint, host, pid, pidns, {}, 0};
    door.emplace(*context, std::move(door_options), log);
    door->tick(Clock::now());  // take the door now if it is free, so the start-up line can say so
    holds_door = door->holding();

    if (!opt.multicast) return;
    const auto g = net::parse_ipv4(opt.multicast_group);
    if (!g || !IN_MULTICAST(ntohl(g->s_addr)))
        throw Error(Errc::invalid_argument, "'" + opt.multicast_group + "' is not an IPv4 multicast group");
    const auto iface = net::interface_address(opt.interface);
    if (!iface) throw Error(Errc::invalid_argument, "unknown interface '" + opt.interface + "'");
    group.sin_family = AF_INET;
    group.sin_port = htons(opt.multicast_port);
    group.sin_addr = *g;
    std::string error;
    listener = net::open_multicast_listener(*g, opt.multicast_port, *iface, error);
    if (listener) sender = net::open_multicast_sender(*iface, opt.ttl, error);
    if (!listener || !sender) {
        log.warn("multicast unavailable (" + error + "): nodes must be given this core's address (GECKO_CORE=host:port)");
        listener = net::Fd();
        sender = net::Fd();
    }
}

// ---- multicast -------------------------------------------------------------------

namespace {
void write_core_fields(discovery::Writer& w, const Core::Impl& c) {
    w.kv("key", c.opt.key);
    w.kv("instance", c.instance);
    w.kv("endpoint", c.endpoint);
    w.kv("host", c.host);
    w.kv("pid", c.pid);
}
}  // namespace

void Core::Impl::announce() {
    if (!sender) return;
    discovery::Writer w("announce", 5);
    write_core_fields(w, *this);
    const auto err = net::send_to(sender.get(), group, w.data(), w.size());
    if (!err.empty()) say(LogLevel::warn, "announce", "cannot announce on the multicast group: " + err);
}

void Core::Impl::on_datagrams() {
    char buf[discovery::max_datagram];
    for (int budget = 256; budget > 0; --budget) {
        sockaddr_in from{};
        socklen_t len = sizeof from;
        const auto n = ::recvfrom(listener.get(), buf, sizeof buf, MSG_TRUNC, reinterpret_cast<sockaddr*>(&from), &len);
        if (n < 0) return;
        std::string why;
        std::optional<discovery::Message> m;
        if (static_cast<std::size_t>(n) > sizeof buf)
            why = "oversized (" + std::to_string(n) + " bytes)";
        else
            m = discovery::Message::parse(buf, static_cast<std::size_t>(n), &why);
        std::optional<std::string> key;
        if (m) {
            key = discovery::get_str(m->root(), "key");
            if (!key) why = "no 'key'";
        }
        if (!m || !key) {
            count(&CoreCounters::malformed_datagrams);
            say(LogLevel::warn, "malformed datagram",
                "ignored a malformed datagram from " + net::to_string(from) + ": " + shown(why) + " (" +
                    std::to_string(counters.malformed_datagrams) + " so far)");
            continue;
        }
        const auto& t = m->type();
        if (t == "query") {
            if (*key != opt.key) {
                count(&CoreCounters::other_key_queries);
                continue;
            }
            discovery::Writer w("core", 5);
            write_core_fields(w, *this);
            const auto err = net::send_to(sender.get(), from, w.data(), w.size());
            if (!err.empty()) log.debug("cannot answer " + net::to_string(from) + ": " + err);
            count(&CoreCounters::queries_answered);
        } else if (t == "announce") {
            const auto other = discovery::get_u64(m->root(), "instance").value_or(0);
            if (*key != opt.key || other == instance) continue;
            if (duplicates.size() >= 64 && !duplicates.count(other)) continue;  // bounded: a flood of fake cores
            auto& d = duplicates[other];
            d.host = discovery::get_str(m->root(), "host").value_or("?");
            d.endpoint = discovery::get_str(m->root(), "endpoint").value_or("?");
            d.pid = static_cast<std::int32_t>(discovery::get_i64(m->root(), "pid").value_or(0));
            d.last_heard = Clock::now();
            count(&CoreCounters::duplicate_cores);
            say(LogLevel::error, "another core",
                "another geckocore serves key '" + opt.key + "' on this network: host " + shown(d.host) +
                    " pid " + std::to_string(d.pid) + " at " + shown(d.endpoint) + " (from " +
                    net::to_string(from.sin_addr) + "); nodes may split between the two cores: stop one of them");
        }
        // "core" (a reply to a node) never reaches the group; other types: ignored.
    }
}

// ---- connections ------------------------------------------------------------------------

// The ROUTER's monitor says when a connection is accepted and when it goes.
void Core::Impl::on_monitor(Clock::time_point now) {
    if (!monitor) return;
    for (int budget = 1024; budget > 0; --budget) {
        zmq::message_t event, address;
        if (!monitor->recv(event, zmq::recv_flags::dontwait)) break;
        if (event.more()) (void)monitor->recv(address, zmq::recv_flags::dontwait);
        if (event.size() < 6) continue;
        std::uint16_t what;
        std::uint32_t value;
        std::memcpy(&what, event.data(), 2);
        std::memcpy(&value, static_cast<const char*>(event.data()) + 2, 4);
        const int fd = static_cast<int>(value);
        if (what == ZMQ_EVENT_ACCEPTED) {
            connections[fd] = Connection{now, false};
        } else if (what == ZMQ_EVENT_DISCONNECTED) {
            connections.erase(fd);
        }
    }
    reap_connections(now);
}

// Connections that have not said anything valid within hello_timeout are
// closed, and the oldest such ones at once when there are too many: idle
// connections cannot exhaust the core's file descriptors.
void Core::Impl::reap_connections(Clock::time_point now) {
    std::vector<std::pair<Clock::time_point, int>> silent;
    for (const auto& [fd, c] : connections)
        if (!c.spoke) silent.emplace_back(c.accepted, fd);
    std::sort(silent.begin(), silent.end());
    std::size_t excess = connections.size() > opt.max_connections ? connections.size() - opt.max_connections : 0;
    for (const auto& [accepted, fd] : silent) {
        if (excess == 0 && now - accepted < opt.hello_timeout) break;
        ::shutdown(fd, SHUT_RDWR);  // ZeroMQ sees the end and cleans up
        connections.erase(fd);
        count(&CoreCounters::connections_closed);
        if (excess > 0) --excess;
        say(LogLevel::warn, "idle connection",
            "closed a connection that did not say hello within " + std::to_string(opt.hello_timeout.count()) + " ms (" +
                std::to_string(counters.connections_closed) + " so far)");
    }
}

// ---- requests --------------------------------------------------------------------

void Core::Impl::reply(const std::string& route, bool req_envelope, const discovery::Writer& w) {
    answer(*router, route, req_envelope, w.data(), w.size());
}

void Core::Impl::reply_error(const std::string& route, bool req_envelope, std::uint64_t id, const std::string& code,
                             const std::string& message, std::uint64_t session) {
    discovery::Writer w("error", session != 0 ? 5 : 4);
    if (session != 0) w.kv("s", session);
    w.kv("instance", instance);
    w.kv("id", id);
    w.kv("code", code);
    w.kv("message", message);
    reply(route, req_envelope, w);
}

void Core::Impl::send_to_session(const Session& s, const discovery::Writer& w) { reply(s.route, s.req_envelope, w); }

void Core::Impl::error_to(const Session& s, std::uint64_t id, const std::string& code, const std::string& message) {
    reply_error(s.route, s.req_envelope, id, code, message, s.id);
}

void Core::Impl::notify_error(std::uint64_t entity, const std::string& code, const std::string& message) {
    const auto e = entities.find(entity);
    if (e == entities.end()) return;
    const auto s = sessions.find(e->second.session);
    if (s == sessions.end()) return;
    error_to(s->second, entity, code, message);
}

void Core::Impl::on_router() {
    RouterRequest request;
    for (int budget = 1024; budget > 0 && next_request(*router, request); --budget) {
        std::string why = "expected one frame after the routing id";
        std::optional<discovery::Message> m;
        if (request.body)
            m = discovery::Message::parse(static_cast<const char*>(request.body->data()), request.body->size(), &why);
        if (!m) {
            count(&CoreCounters::malformed_messages);
            say(LogLevel::warn, "malformed message",
                "ignored a malformed request: " + wire::printable(why) + " (" + std::to_string(counters.malformed_messages) +
                    " so far)");
            reply_error(request.route, request.req_envelope, 0, "malformed", why);
            continue;
        }
        // The connection spoke: it is not an idle one to reap.
        const int fd = zmq_msg_get(request.body->handle(), ZMQ_SRCFD);
        if (fd >= 0)
            if (auto c = connections.find(fd); c != connections.end()) c->second.spoke = true;
        try {
            handle(request, *m);
        } catch (const std::exception& e) {  // whatever a handler throws: counted like a malformed message
            count(&CoreCounters::malformed_messages);
            reply_error(request.route, request.req_envelope, 0, "malformed", e.what());
        }
    }
}

void Core::Impl::hello(const RouterRequest& request, const wire::Value& root, std::uint64_t sid, Clock::time_point now) {
    const auto& route = request.route;
    const bool env = request.req_envelope;
    auto key = discovery::get_str(root, "key");
    if (!key || *key != opt.key) {
        reply_error(route, env, 0, "wrong_key",
                    "geckocore at " + endpoint + " on " + host + " serves key '" + opt.key + "', not '" +
                        shown(key.value_or("")) + "'",
                    sid);
        return;
    }
    const auto secret = discovery::get_u64(root, "secret");
    const auto node = discovery::get_str(root, "node").value_or("");
    const auto node_host = discovery::get_str(root, "host").value_or("");
    auto locators = discovery::get_str_array(root, "locators");
    // hostid and pidns travel in every peer map of this node's entities:
    // unbounded, two registrations would make a push exceed a node's limit.
    auto host_id = discovery::get_str(root, "hostid").value_or("");
    auto pid_ns = discovery::get_str(root, "pidns").value_or("");
    std::string why = !secret || *secret == 0 ? "hello needs a secret" : "";
    if (why.empty()) why = check_node_text(node);
    if (why.empty() && !(why = check_node_text(node_host)).empty()) why = "host: " + why;
    if (why.empty() && !host_id.empty() && !(why = check_node_text(host_id)).empty()) why = "hostid: " + why;
    if (why.empty() && !pid_ns.empty() && !(why = check_node_text(pid_ns)).empty()) why = "pidns: " + why;
    if (why.empty() && !locators) why = "'locators' is not an array of strings";
    if (why.empty() && locators->size() > wire::max_locators)
        why = std::to_string(locators->size()) + " locators (at most " + std::to_string(wire::max_locators) + ")";
    if (why.empty())
        for (const auto& l : *locators)
            if (auto w = wire::check_locator(l); !w.empty()) {
                why = "locator '" + shown(l) + "': " + w;
                break;
            }
    if (!why.empty()) {
        count(&CoreCounters::refused);
        say(LogLevel::warn, "refused hello", "refused a node's hello: " + wire::printable(why));
        reply_error(route, env, 0, "refused", "geckocore refused this node: " + why, sid);
        return;
    }
    const auto known = sessions.find(sid);
    if (known != sessions.end() && known->second.secret != *secret) {
        // Someone else's session id: it is not theirs to speak for.
        count(&CoreCounters::auth_failures);
        say(LogLevel::warn, "auth", "refused a hello for node '" + shown(known->second.node) +
                                        "' without its secret (another program reusing its session id)");
        reply_error(route, env, 0, "auth", "session " + std::to_string(sid) + " belongs to another node", sid);
        return;
    }
    if (known == sessions.end() && sessions_per_host[node_host] >= opt.max_sessions_per_host) {
        count(&CoreCounters::refused);
        say(LogLevel::warn, "sessions per host",
            "refused node '" + shown(node) + "': host " + shown(node_host) + " already has " +
                std::to_string(opt.max_sessions_per_host) + " nodes");
        reply_error(route, env, 0, "refused",
                    "host " + node_host + " already has " + std::to_string(opt.max_sessions_per_host) +
                        " nodes registered (geckocore --max-sessions-per-host)",
                    sid);
        return;
    }
    if (known == sessions.end()) {
        const auto r = sessions_per_route.find(route);
        if (r != sessions_per_route.end() && r->second >= opt.max_sessions_per_connection) {
            count(&CoreCounters::refused);
            say(LogLevel::warn, "sessions per connection",
                "refused node '" + shown(node) + "': its connection already carries " +
                    std::to_string(opt.max_sessions_per_connection) + " nodes");
            reply_error(route, env, 0, "refused",
                        "this connection already carries " + std::to_string(opt.max_sessions_per_connection) +
                            " nodes (geckocore --max-sessions-per-connection)",
                        sid);
            return;
        }
        ++sessions_per_host[node_host];
    }
    auto& s = sessions[sid];
    const bool fresh = s.id == 0;
    s.id = sid;
    s.secret = *secret;
    s.node = node;
    if (!fresh && s.host != node_host) {
        --sessions_per_host[s.host];
        ++sessions_per_host[node_host];
    }
    s.host = node_host;
    s.host_id = std::move(host_id);
    s.pid = static_cast<std::int32_t>(discovery::get_i64(root, "pid").value_or(0));
    s.pidns = std::move(pid_ns);
    s.locators = std::move(*locators);
    s.local = s.host == host && !s.pidns.empty() && s.pidns == pidns && s.pid > 0;
    set_route(s, route);
    s.req_envelope = env;
    s.last_seen = now;
    if (!fresh) {
        // The node lists everything it has: drop what it withdrew while we could not hear it.
        std::set<std::uint64_t> keep;
        if (const auto ids = discovery::find(root, "ids"))
            for (const wire::Value& item : ids->items())
                if (const auto id = item.as_uint()) keep.insert(*id);
        const auto mine = s.entities;
        for (auto id : mine)
            if (!keep.count(id)) remove_entity(id);
    } else {
        say(LogLevel::info, "joined", "node '" + shown(s.node) + "' joined (host " + shown(s.host) +
                                          ", pid " + std::to_string(s.pid) + ")");
    }
    discovery::Writer w("welcome", 7);
    w.kv("s", sid);
    w.kv("instance", instance);
    w.kv("lease_ms", static_cast<std::int64_t>(opt.lease.count()));
    w.kv("host", host);
    w.kv("pid", pid);
    w.kv("key", opt.key);
    w.kv("warm", warm);
    reply(route, env, w);
}

void Core::Impl::handle(const RouterRequest& request, const discovery::Message& m) {
    const auto& root = m.root();
    const auto& t = m.type();
    const auto& route = request.route;
    const bool env = request.req_envelope;
    const auto now = Clock::now();
    if (t == "list") {
        // A tool that names a key must not be shown another key's table
        // (an explicit --core pointing at the wrong core).
        if (const auto key = discovery::get_str(root, "key"); key && *key != opt.key) {
            reply_error(route, env, 0, "wrong_key",
                        "geckocore at " + endpoint + " on " + host + " serves key '" + opt.key + "', not '" +
                            shown(*key) + "'");
            return;
        }
        answer_list(route, env, root);
        return;
    }
    const auto sid = discovery::get_u64(root, "s");
    if (!sid) {
        count(&CoreCounters::malformed_messages);
        reply_error(route, env, 0, "malformed", "'" + t + "' without a session id 's'");
        return;
    }
    if (t == "hello") {
        hello(request, root, *sid, now);
        return;
    }
    const auto it = sessions.find(*sid);
    if (it == sessions.end()) {
        if (t == "bye") return;
        discovery::Writer w("unknown", 2);
        w.kv("s", *sid);
        w.kv("instance", instance);
        reply(route, env, w);
        return;
    }
    Session& s = it->second;
    if (discovery::get_u64(root, "secret").value_or(0) != s.secret) {
        count(&CoreCounters::auth_failures);
        say(LogLevel::warn, "auth", "refused '" + t + "' for node '" + shown(s.node) +
                                        "' without its secret (another program reusing its session id)");
        reply_error(route, env, 0, "auth", "session " + std::to_string(*sid) + " belongs to another node", *sid);
        return;
    }
    // A new routing id means the node's TCP link was re-established: pushes sent
    // meanwhile may be lost, so its watchers get their current peer sets again.
    const bool reconnected = s.route != route;
    set_route(s, route);
    s.req_envelope = env;
    s.last_seen = now;
    if (reconnected) {
        for (auto id : s.entities)
            if (watched_kind(entities.at(id).reg.kind)) push_full(id);
    }
    if (t == "hb") {
        discovery::Writer w("hb", 4);
        w.kv("s", s.id);
        w.kv("instance", instance);
        w.kv("n", static_cast<std::uint64_t>(s.entities.size()));
        w.kv("digest", s.digest);
        reply(route, env, w);
    } else if (t == "add") {
        auto reg = discovery::read_registration(root);
        if (!reg) {
            count(&CoreCounters::malformed_messages);
            reply_error(route, env, discovery::get_u64(root, "id").value_or(0), "malformed", "'add' needs id, kind, topic, type",
                        s.id);
            return;
        }
        add(s, std::move(*reg));
    } else if (t == "remove") {
        const auto id = discovery::get_u64(root, "id");
        const auto e = id ? entities.find(*id) : entities.end();
        if (e != entities.end() && e->second.session == s.id) remove_entity(*id);
    } else if (t == "stats") {
        const auto list = discovery::find(root, "stats");
        if (!list || list->type() != wire::Type::array) {
            count(&CoreCounters::malformed_messages);
            return;
        }
        for (const wire::Value& item : list->items()) {
            const auto st = discovery::read_stats(item);
            if (!st) continue;
            const auto e = entities.find(st->id);
            if (e == entities.end() || e->second.session != s.id) continue;
            e->second.stats = st;
            e->second.stats_at = now;
        }
        // Optional (nodes before it send none): replaces the session's links when present.
        if (const auto links = discovery::find(root, "links"); links && links->type() == wire::Type::array) {
            s.links.clear();
            for (const wire::Value& item : links->items()) {
                if (s.links.size() >= max_links_per_session) break;
                const auto peer = discovery::get_u64(item, "s");
                const auto via = discovery::get_str(item, "via");
                if (!peer || !via || via->empty() || via->size() > 16) continue;
                s.links.emplace_back(*peer, *via);
            }
        }
    } else if (t == "watch_graph") {
        s.watch_graph = true;
        for (const auto& [key, topic] : topics) {
            const auto first = entities.find(topic.by_order.begin()->second);
            graph_event_to(s, true, key, first == entities.end() ? "" : first->second.reg.type_name);
        }
    } else if (t == "bye") {
        remove_session(s.id, "said goodbye");
    } else {
        count(&CoreCounters::malformed_messages);
        reply_error(route, env, 0, "unknown_type", "unknown message type '" + shown(t) + "'", s.id);
    }
}

// ---- the table ---------------------------------------------------------------------

void Core::Impl::Topic::insert(const Entity& e) {
    by_order[e.order] = e.reg.id;
    of_kind[static_cast<std::size_t>(e.reg.kind)][e.order] = e.reg.id;
    const bool produces = discovery::is_producer(e.reg.kind);
    if (!is_wildcard_type(e.reg.type_name)) {
        auto& use = types[e.reg.type_name];
        (produces ? use.producers : use.consumers)[e.order] = e.reg.id;
    }
    if (produces) ++producers;
}

void Core::Impl::Topic::erase(const Entity& e) {
    by_order.erase(e.order);
    of_kind[static_cast<std::size_t>(e.reg.kind)].erase(e.order);
    const bool produces = discovery::is_producer(e.reg.kind);
    if (!is_wildcard_type(e.reg.type_name))
        if (auto ty = types.find(e.reg.type_name); ty != types.end()) {
            (produces ? ty->second.producers : ty->second.consumers).erase(e.order);
            if (ty->second.producers.empty() && ty->second.consumers.empty()) types.erase(ty);
        }
    if (produces) --producers;
}

Peer Core::Impl::peer_of(const Entity& e) const {
    Peer p;
    p.reg = e.reg;
    if (const auto s = sessions.find(e.session); s != sessions.end()) {
        p.node = s->second.node;
        p.session = s->second.id;
        p.host = s->second.host;
        p.host_id = s->second.host_id;
        p.pid = s->second.pid;
        p.pid_ns = s->second.pidns;
        p.locators = s->second.locators;
    }
    return p;
}

std::vector<std::uint64_t> Core::Impl::peers_of(const Entity& watcher) const {
    std::vector<std::uint64_t> out;
    const auto want = watched_kind(watcher.reg.kind);
    if (!want) return out;
    const auto t = topics.find(TopicKey{is_service(watcher.reg.kind), watcher.reg.topic});
    if (t == topics.end()) return out;
    for (const auto& [order, id] : t->second.of_kind[static_cast<std::size_t>(*want)])
        if (types_match(entities.at(id).reg.type_name, watcher.reg.type_name)) out.push_back(id);
    return out;
}

// The entities that are told about `e` (its watchers), of matching type.
std::vector<std::uint64_t> Core::Impl::watchers_of(const Entity& e) const {
    std::vector<std::uint64_t> out;
    const auto kind = watcher_kind(e.reg.kind);
    if (!kind) return out;
    const auto t = topics.find(TopicKey{is_service(e.reg.kind), e.reg.topic});
    if (t == topics.end()) return out;
    for (const auto& [order, id] : t->second.of_kind[static_cast<std::size_t>(*kind)])
        if (id != e.reg.id && types_match(entities.at(id).reg.type_name, e.reg.type_name)) out.push_back(id);
    return out;
}

// A watcher's whole peer set, in chunks: the first replaces what the node had
// (except during warm-up, where nothing is ever removed by absence), the rest add.
void Core::Impl::push_full(std::uint64_t watcher) {
    const auto w = entities.find(watcher);
    if (w == entities.end()) return;
    const auto s = sessions.find(w->second.session);
    if (s == sessions.end()) return;
    const auto ids = peers_of(w->second);
    std::size_t at = 0;
    do {
        const std::size_t n = std::min(peers_per_push, ids.size() - at);
        discovery::Writer msg("peers", 5);
        msg.kv("s", s->second.id);
        msg.kv("instance", instance);
        msg.kv("id", watcher);
        msg.kv("partial", warm || at > 0);
        msg.key("peers");
        msg.packer().pack_array(static_cast<std::uint32_t>(n));
        for (std::size_t i = at; i < at + n; ++i) discovery::pack_peer(msg.packer(), peer_of(entities.at(ids[i])));
        send_to_session(s->second, msg);
        at += n;
    } while (at < ids.size());
}

// What changed for a watcher: peers added, peers gone. The node merges it.
void Core::Impl::push_delta(std::uint64_t watcher, const std::vector<std::uint64_t>& added,
                            const std::vector<std::uint64_t>& gone) {
    const auto w = entities.find(watcher);
    if (w == entities.end()) return;
    const auto s = sessions.find(w->second.session);
    if (s == sessions.end()) return;
    std::size_t at = 0;
    do {
        const std::size_t n = std::min(peers_per_push, added.size() - at);
        discovery::Writer msg("peers", 6);
        msg.kv("s", s->second.id);
        msg.kv("instance", instance);
        msg.kv("id", watcher);
        msg.kv("partial", true);
        msg.key("peers");
        msg.packer().pack_array(static_cast<std::uint32_t>(n));
        for (std::size_t i = at; i < at + n; ++i) discovery::pack_peer(msg.packer(), peer_of(entities.at(added[i])));
        msg.kv("gone", at == 0 ? gone : std::vector<std::uint64_t>{});
        send_to_session(s->second, msg);
        at += n;
    } while (at < added.size());
}

void Core::Impl::graph_event_to(const Session& s, bool appeared, const TopicKey& key, const std::string& type) {
    discovery::Writer w("graph", 6);
    w.kv("s", s.id);
    w.kv("instance", instance);
    w.kv("event", appeared ? "appeared" : "gone");
    w.kv("name", key.name);
    w.kv("service", key.service);
    w.kv("type", type);
    send_to_session(s, w);
}

void Core::Impl::graph_event(bool appeared, const TopicKey& key, const std::string& type) {
    for (const auto& [id, s] : sessions)
        if (s.watch_graph) graph_event_to(s, appeared, key, type);
}

void Core::Impl::add(Session& s, Registration reg) {
    const auto id = reg.id;
    auto refuse = [&](const std::string& reason) {
        count(&CoreCounters::refused);
        say(LogLevel::warn, "refused registration",
            "refused a registration of node '" + wire::printable(s.node) + "': " + wire::printable(reason));
        error_to(s, id, "refused", "geckocore refused it: " + reason);
    };
    std::string why = wire::check_topic_name(reg.topic);
    if (why.empty() && !is_wildcard_type(reg.type_name)) why = wire::check_type_name(reg.type_name);
    if (!why.empty()) return refuse("'" + shown(reg.topic) + "': " + why);
    if (const auto old = entities.find(id); old != entities.end()) {
        if (old->second.session != s.id) {
            error_to(s, id, "duplicate",
                     "entity id " + std::to_string(id) + " is already registered by " + describe(old->second) + "; ignored");
            return;
        }
        const auto& o = old->second.reg;
        if (o.kind == reg.kind && o.topic == reg.topic && o.type_name == reg.type_name && o.latched == reg.latched) {
            if (watched_kind(reg.kind)) push_full(id);  // a re-registration still gets its peer set
            return;
        }
        remove_entity(id);
    }
    if (s.entities.size() >= opt.max_entities_per_session)
        return refuse("node '" + s.node + "' already has " + std::to_string(opt.max_entities_per_session) +
                      " entities (geckocore --max-entities-per-node)");
    const TopicKey key{is_service(reg.kind), reg.topic};
    auto& topic = topics[key];
    const bool new_topic = topic.by_order.empty();
    if (!is_wildcard_type(reg.type_name) && !topic.types.count(reg.type_name) && topic.types.size() >= opt.max_types_per_topic) {
        if (new_topic) topics.erase(key);
        return refuse("'" + reg.topic + "' already carries " + std::to_string(opt.max_types_per_topic) + " types");
    }
    Entity e;
    e.reg = std::move(reg);
    e.session = s.id;
    e.order = next_order++;
    // Type check against the types already on the topic. A conflict concerns
    // the parties between which data would flow (a producer and a consumer):
    // both hear of it, once. A second producer of another type hears of the
    // first (it splits the topic); consumers of another type than each other,
    // with no producer between them, are only shown by `list`.
    // Work per type: the first entity it concerns (for the newcomer's one
    // message) and those on the other side of the flow (told each): the topic's
    // other entities are never scanned.
    if (!is_wildcard_type(e.reg.type_name)) {
        const bool newcomer_produces = discovery::is_producer(e.reg.kind);
        const std::string what = key.service ? "service" : "topic";
        const std::string mine = "the " + std::string(discovery::to_string(e.reg.kind)) + " of " + what + " '" +
                                 e.reg.topic + "' on node '" + s.node + "' declares " + e.reg.type_name;
        for (const auto& [type, use] : topic.types) {
            if (type == e.reg.type_name) continue;
            // The first of that type (registration order) that data would flow to or from.
            std::optional<std::uint64_t> first;
            if (!use.producers.empty()) first = use.producers.begin()->first;
            if (newcomer_produces && !use.consumers.empty() && (!first || use.consumers.begin()->first < *first))
                first = use.consumers.begin()->first;
            if (!first) continue;
            const auto& other = entities.at(topic.by_order.at(*first));
            count(&CoreCounters::type_conflicts);
            const std::string text = "type conflict: " + mine + ", but the " + describe(other) + " declares " +
                                     other.reg.type_name + "; no data flows between them";
            error_to(s, e.reg.id, "type_conflict", text);
            say(LogLevel::warn, "type conflict", wire::printable(text));
            for (const auto& [order, other_id] : newcomer_produces ? use.consumers : use.producers)
                notify_error(other_id, "type_conflict",
                             "type conflict: " + mine + ", but this " + describe(entities.at(other_id)) + " declares " +
                                 type + "; no data flows between them");
        }
    }
    topic.insert(e);
    s.entities.insert(e.reg.id);
    s.digest ^= discovery::entity_digest_term(e.reg.id);
    const auto [it, inserted] = entities.emplace(e.reg.id, std::move(e));
    (void)inserted;
    const Entity& added = it->second;
    if (watched_kind(added.reg.kind)) push_full(added.reg.id);
    for (auto w : watchers_of(added)) push_delta(w, {added.reg.id}, {});
    if (new_topic) graph_event(true, key, added.reg.type_name);
    table_changed({key.name});
}

void Core::Impl::remove_entity(std::uint64_t id) {
    const auto it = entities.find(id);
    if (it == entities.end()) return;
    const auto watchers = watchers_of(it->second);
    Entity e = std::move(it->second);
    entities.erase(it);
    if (auto s = sessions.find(e.session); s != sessions.end()) {
        s->second.entities.erase(id);
        s->second.digest ^= discovery::entity_digest_term(id);
    }
    const TopicKey key{is_service(e.reg.kind), e.reg.topic};
    if (auto t = topics.find(key); t != topics.end()) {
        t->second.erase(e);
        if (t->second.by_order.empty()) {
            topics.erase(t);
            graph_event(false, key, e.reg.type_name);
        }
    }
    for (auto w : watchers) push_delta(w, {}, {id});
    table_changed({key.name});
}

void Core::Impl::remove_session(std::uint64_t id, const std::string& why) {
    const auto it = sessions.find(id);
    if (it == sessions.end()) return;
    say(LogLevel::info, "left", "node '" + shown(it->second.node) + "' (host " + shown(it->second.host) +
                                    ", pid " + std::to_string(it->second.pid) + ") left: " + why);
    // One push per remaining watcher for everything the node had, not one per entity.
    std::map<std::uint64_t, std::vector<std::uint64_t>> gone_for;
    const auto mine = it->second.entities;
    for (auto e : mine) {
        const auto en = entities.find(e);
        if (en == entities.end()) continue;
        for (auto w : watchers_of(en->second))
            if (!mine.count(w)) gone_for[w].push_back(e);
    }
    const auto saved = std::move(gone_for);
    std::set<std::string> names;
    for (auto e : mine) {
        // Remove without pushing: the batched pushes below say it all.
        const auto en = entities.find(e);
        if (en == entities.end()) continue;
        const TopicKey key{is_service(en->second.reg.kind), en->second.reg.topic};
        names.insert(key.name);
        if (auto t = topics.find(key); t != topics.end()) {
            t->second.erase(en->second);
            if (t->second.by_order.empty()) {
                const std::string type = en->second.reg.type_name;
                topics.erase(t);
                graph_event(false, key, type);
            }
        }
        entities.erase(en);
    }
    if (auto h = sessions_per_host.find(it->second.host); h != sessions_per_host.end() && --h->second == 0)
        sessions_per_host.erase(h);
    set_route(it->second, {});
    // A node of this host that died (kill -9) leaves its ipc socket file behind.
    if (it->second.local)
        for (const auto& l : it->second.locators)
            if (remove_stale_ipc(l)) log.debug("removed the stale socket file of " + l);
    sessions.erase(it);
    for (const auto& [w, gone] : saved) push_delta(w, {}, gone);
    table_changed(names);
}

// Updates what wait_until_registered() sees for the topics (and services) of
// these names only: work per change stays independent of the table's size.
void Core::Impl::table_changed(const std::set<std::string>& names) {
    {
        std::lock_guard<std::mutex> lock(mutex);
        for (const auto& name : names) {
            std::size_t n = 0;
            for (bool service : {false, true})
                if (const auto t = topics.find(TopicKey{service, name}); t != topics.end()) n += t->second.by_order.size();
            if (n == 0)
                topic_sizes.erase(name);
            else
                topic_sizes[name] = n;
        }
    }
    changed.notify_all();
}

// The answer to `list`: the whole table, or one page of topics of it
// (`offset`, `limit`, or a single `topic`), never more than list_page_bytes of
// topics per answer; `next` says where the next page starts (0: none).
void Core::Impl::answer_list(const std::string& route, bool req_envelope, const wire::Value& request) {
    const auto now = Clock::now();
    const auto only = discovery::get_str(request, "topic");
    const std::size_t offset = static_cast<std::size_t>(discovery::get_u64(request, "offset").value_or(0));
    const std::size_t limit = static_cast<std::size_t>(discovery::get_u64(request, "limit").value_or(SIZE_MAX));
    // The parts are packed first, each bounded, then put together (the
    // answer's field count depends on whether something was left out).

    std::size_t nodes_omitted = 0, entities_omitted = 0;
    msgpack::sbuffer nodes;
    msgpack::packer<msgpack::sbuffer> np(nodes);
    std::uint32_t nodes_packed = 0;
    if (offset == 0) {
        for (const auto& [id, s] : sessions) {
            if (nodes.size() > list_part_bytes) {
                ++nodes_omitted;
                continue;
            }
            ++nodes_packed;
            np.pack_map(9);
            np.pack(std::string_view("s"));
            np.pack(id);
            np.pack(std::string_view("node"));
            np.pack(s.node);
            np.pack(std::string_view("host"));
            np.pack(s.host);
            np.pack(std::string_view("pid"));
            np.pack(s.pid);
            np.pack(std::string_view("silent_ms"));
            np.pack(static_cast<std::int64_t>(std::chrono::duration_cast<milliseconds>(now - s.last_seen).count()));
            np.pack(std::string_view("entities"));
            np.pack(static_cast<std::uint64_t>(s.entities.size()));
            np.pack(std::string_view("locators"));
            np.pack(s.locators);
            np.pack(std::string_view("session"));
            np.pack(id);
            np.pack(std::string_view("links"));
            np.pack_array(static_cast<std::uint32_t>(s.links.size()));
            for (const auto& [peer, via] : s.links) {
                const auto other = sessions.find(peer);
                np.pack_map(3);
                np.pack(std::string_view("s"));
                np.pack(peer);
                np.pack(std::string_view("node"));
                np.pack(other == sessions.end() ? std::string() : other->second.node);
                np.pack(std::string_view("via"));
                np.pack(via);
            }
        }
    }

    auto pack_entity = [&](msgpack::packer<msgpack::sbuffer>& p, const Entity& e) {
        const Peer peer = peer_of(e);
        p.pack_map(discovery::registration_fields + 7);
        discovery::pack_registration_fields(p, peer.reg);
        p.pack(std::string_view("locators"));
        p.pack(peer.locators);
        p.pack(std::string_view("node"));
        p.pack(peer.node);
        p.pack(std::string_view("session"));
        p.pack(peer.session);
        p.pack(std::string_view("host"));
        p.pack(peer.host);
        p.pack(std::string_view("pid"));
        p.pack(peer.pid);
        p.pack(std::string_view("stats"));
        if (e.stats)
            discovery::pack_stats(p, *e.stats);
        else
            p.pack_nil();
        p.pack(std::string_view("stats_age_ms"));
        if (e.stats)
            p.pack(static_cast<std::int64_t>(std::chrono::duration_cast<milliseconds>(now - e.stats_at).count()));
        else
            p.pack_nil();
    };
    // Conflicts of the topics in this page, packed as they come (they count in the page's size).
    msgpack::sbuffer conflicts;
    msgpack::packer<msgpack::sbuffer> cp(conflicts);
    std::uint32_t conflicts_packed = 0;
    auto pack_conflict = [&](const TopicKey& k, const std::vector<std::string>& types) {
        cp.pack_map(4);
        cp.pack(std::string_view("topic"));
        cp.pack(k.name);
        cp.pack(std::string_view("service"));
        cp.pack(k.service);
        cp.pack(std::string_view("types"));
        cp.pack(types);
        std::string text = std::string(k.service ? "service '" : "topic '") + k.name + "' is declared with " +
                           std::to_string(types.size()) + " types:";
        for (const auto& t : types) text += " " + t;
        cp.pack(std::string_view("message"));
        cp.pack(text);
        ++conflicts_packed;
    };
    // One side of a topic, up to the part's budget (`used` so far); the rest counted in `omitted`.
    auto pack_side = [&](msgpack::sbuffer& out, const std::vector<const Entity*>& list, std::size_t& used,
                         std::size_t& omitted) {
        msgpack::packer<msgpack::sbuffer> p(out);
        std::uint32_t packed = 0;
        msgpack::sbuffer items;
        msgpack::packer<msgpack::sbuffer> ip(items);
        for (auto* e : list) {
            if (used + items.size() > list_part_bytes) {
                ++omitted;
                continue;
            }
            pack_entity(ip, *e);
            ++packed;
        }
        used += items.size();
        p.pack_array(packed);
        out.write(items.data(), items.size());
    };
    std::size_t index = 0, next = 0;
    msgpack::sbuffer bodies[2];  // topics, services
    std::uint32_t counts[2] = {0, 0};
    for (bool service : {false, true}) {
        msgpack::sbuffer& body = bodies[service];
        msgpack::packer<msgpack::sbuffer> bp(body);
        std::uint32_t& n = counts[service];
        for (const auto& [k, t] : topics) {
            if (k.service != service) continue;
            if (only && k.name != *only) continue;
            const std::size_t i = index++;
            if (i < offset || n >= limit) continue;
            if (next != 0 || nodes.size() + bodies[0].size() + bodies[1].size() + conflicts.size() > list_page_bytes) {
                if (next == 0) next = i;
                continue;
            }
            std::vector<const Entity*> producers, consumers;
            std::vector<std::string> types;
            for (const auto& [order, id] : t.by_order) {
                const auto& e = entities.at(id);
                (discovery::is_producer(e.reg.kind) ? producers : consumers).push_back(&e);
            }
            for (const auto& [type, use] : t.types) types.push_back(type);
            const std::string type = !producers.empty() ? producers.front()->reg.type_name : consumers.front()->reg.type_name;
            if (types.size() > 1) pack_conflict(k, types);
            msgpack::sbuffer sides;
            std::size_t used = 0, omitted = 0;
            {
                msgpack::packer<msgpack::sbuffer> sp(sides);
                sp.pack(std::string_view(service ? "servers" : "publishers"));
                pack_side(sides, producers, used, omitted);
                sp.pack(std::string_view(service ? "clients" : "subscribers"));
                pack_side(sides, consumers, used, omitted);
            }
            bp.pack_map(omitted > 0 ? 6 : 5);
            bp.pack(std::string_view("name"));
            bp.pack(k.name);
            bp.pack(std::string_view("type"));
            bp.pack(type);
            bp.pack(std::string_view("types"));
            bp.pack(types);
            body.write(sides.data(), sides.size());
            if (omitted > 0) {
                bp.pack(std::string_view("omitted"));  // entities of this topic not in the answer
                bp.pack(static_cast<std::uint64_t>(omitted));
                entities_omitted += omitted;
            }
            ++n;
        }
    }

    const bool cut = nodes_omitted > 0 || entities_omitted > 0;
    discovery::Writer w("list", cut ? 13 : 12);
    auto& pk = w.packer();
    w.kv("key", opt.key);
    w.kv("instance", instance);
    w.kv("host", host);
    w.kv("pid", pid);
    w.kv("endpoint", endpoint);
    w.kv("uptime_ms", static_cast<std::int64_t>(std::chrono::duration_cast<milliseconds>(now - started).count()));
    w.key("nodes");
    pk.pack_array(nodes_packed);
    w.append_raw(nodes.data(), nodes.size());
    w.key("topics");
    pk.pack_array(counts[0]);
    w.append_raw(bodies[0].data(), bodies[0].size());
    w.key("services");
    pk.pack_array(counts[1]);
    w.append_raw(bodies[1].data(), bodies[1].size());
    w.kv("next", static_cast<std::uint64_t>(next));
    w.key("conflicts");
    pk.pack_array(conflicts_packed);
    w.append_raw(conflicts.data(), conflicts.size());
    if (cut) {
        // What this answer leaves out to stay bounded (never, in an ordinary table).
        w.key("omitted");
        pk.pack_map(2);
        pk.pack(std::string_view("nodes"));
        pk.pack(static_cast<std::uint64_t>(nodes_omitted));
        pk.pack(std::string_view("entities"));
        pk.pack(static_cast<std::uint64_t>(entities_omitted));
    }
    w.key("counters");
    CoreCounters c;
    {
        std::lock_guard<std::mutex> lock(mutex);
        c = counters;
    }
    const std::pair<const char*, std::uint64_t> fields[] = {
        {"malformed_datagrams", c.malformed_datagrams}, {"malformed_messages", c.malformed_messages},
        {"queries_answered", c.queries_answered},       {"other_key_queries", c.other_key_queries},
        {"duplicate_cores", c.duplicate_cores},         {"leases_expired", c.leases_expired},
        {"dead_processes", c.dead_processes},           {"type_conflicts", c.type_conflicts},
        {"duplicate_instances", duplicates.size()},     {"refused", c.refused},
        {"auth_failures", c.auth_failures},             {"connections_closed", c.connections_closed},
        {"stale_shm_removed", c.stale_shm_removed}};
    pk.pack_map(static_cast<std::uint32_t>(std::size(fields)));
    for (const auto& [name, value] : fields) {
        pk.pack(std::string_view(name));
        pk.pack(value);
    }    reply(route, req_envelope, w);
}

// ---- the loop ------------------------------------------------------------------------

int Core::Impl::run() {
    auto now = Clock::now();
    const milliseconds quick[] = {milliseconds(0), milliseconds(250), milliseconds(1000)};
    std::size_t quick_sent = 0;
    Clock::time_point next_announce = started;
    Clock::time_point next_lease_check = now;
    Clock::time_point next_pid_check = now;
    Clock::time_point next_reap = now;
    Clock::time_point next_shm_clean = now;
    const Clock::time_point warm_until = started + opt.lease;

    while (!stopping) {
        now = Clock::now();
        if (sender && now >= next_announce) {
            announce();
            ++quick_sent;
            next_announce = quick_sent < std::size(quick) ? started + quick[quick_sent] : now + opt.announce_period;
        }
        if (warm && now >= warm_until) {
            // Every node had a lease to re-register: from now on peer sets are complete.
            warm = false;
            log.info("warm-up over: table complete with " + std::to_string(sessions.size()) + " nodes and " +
                     std::to_string(entities.size()) + " entities");
            for (const auto& [id, e] : entities)
                if (watched_kind(e.reg.kind)) push_full(id);
        }
        if (now >= next_lease_check) {
            std::vector<std::uint64_t> expired;
            for (const auto& [id, s] : sessions)
                if (now - s.last_seen > opt.lease) expired.push_back(id);
            for (auto id : expired) {
                count(&CoreCounters::leases_expired);
                remove_session(id, "lease expired (no heartbeat for " + std::to_string(opt.lease.count()) + " ms)");
            }
            next_lease_check = now + std::min(milliseconds(100), opt.lease / 4);
        }
        if (now >= next_pid_check) {
            std::vector<std::uint64_t> dead;
            for (const auto& [id, s] : sessions)
                if (s.local && ::kill(s.pid, 0) != 0 && errno == ESRCH) dead.push_back(id);
            for (auto id : dead) {
                count(&CoreCounters::dead_processes);
                remove_session(id, "process is gone");
            }
            next_pid_check = now + opt.pid_check_period;
        }
        if (now >= next_reap) {
            reap_connections(now);
            limiter.flush(now, [&](const std::string& reason, std::uint64_t held) {
                log.info(std::to_string(held) + " more '" + reason + "' lines held back (the counters in `gecko list` have them)");
            });
            next_reap = now + milliseconds(1000);
        }
        if (!opt.shm_directory.empty() && now >= next_shm_clean) {
            // Shared memory outlives a process killed with -9: its segment and
            // doorbells stay until the next node or this core removes them.
            if (const std::size_t n = detail::shm::remove_stale(opt.shm_directory, opt.lease)) {
                count(&CoreCounters::stale_shm_removed, n);
                log.info("removed " + std::to_string(n) + " shared-memory file(s) that crashed processes left in " +
                         opt.shm_directory);
            }
            next_shm_clean = now + opt.shm_clean_period;
        }
        auto wake = std::min({next_lease_check, next_pid_check, next_reap, next_shm_clean, now + milliseconds(100),
                              door->tick(now)});
        holds_door = door->holding();
        if (sender) wake = std::min(wake, next_announce);
        if (warm) wake = std::min(wake, warm_until);

        zmq::pollitem_t items[5] = {};
        std::size_t n = 0;
        items[n++] = {router->handle(), 0, ZMQ_POLLIN, 0};
        const std::size_t listener_at = listener ? n : 0;
        if (listener) items[n++] = {nullptr, listener.get(), ZMQ_POLLIN, 0};
        const std::size_t door_at = door->door_socket() ? n : 0;
        if (door_at) items[n++] = {door->door_socket(), 0, ZMQ_POLLIN, 0};
        const std::size_t link_at = door->link_socket() ? n : 0;
        if (link_at) items[n++] = {door->link_socket(), 0, ZMQ_POLLIN, 0};
        const std::size_t monitor_at = monitor ? n : 0;
        if (monitor) items[n++] = {monitor->handle(), 0, ZMQ_POLLIN, 0};
        try {
            zmq::poll(items, n, std::max(milliseconds(0), std::chrono::duration_cast<milliseconds>(wake - Clock::now())));
        } catch (const zmq::error_t& e) {
            if (e.num() == EINTR) continue;
            log.error(std::string("poll failed: ") + e.what());
            return 1;
        }
        if (monitor_at && (items[monitor_at].revents & ZMQ_POLLIN)) on_monitor(Clock::now());
        if (items[0].revents & ZMQ_POLLIN) on_router();
        if (listener_at && (items[listener_at].revents & ZMQ_POLLIN)) on_datagrams();
        if (door_at && (items[door_at].revents & ZMQ_POLLIN)) door->on_door(Clock::now());
        if (link_at && (items[link_at].revents & ZMQ_POLLIN)) door->on_link();
    }
    if (monitor) {
        zmq_socket_monitor(router->handle(), nullptr, 0);
        monitor.reset();
    }
    return 0;
}

// ---- public API ------------------------------------------------------------------------

Core::Core(CoreOptions options) : impl_(std::make_unique<Impl>(std::move(options))) { impl_->setup(); }

Core::~Core() {
    stop();
    if (impl_->thread.joinable()) impl_->thread.join();
}

int Core::run() { return impl_->run(); }

void Core::start() {
    impl_->thread = std::thread([impl = impl_.get()] {
        try {
            impl->run();
        } catch (const std::exception& e) {
            impl->log.error(std::string("core stopped: ") + e.what());
        }
    });
}

void Core::stop() noexcept { impl_->stopping = true; }

const std::string& Core::endpoint() const noexcept { return impl_->endpoint; }
std::uint64_t Core::instance() const noexcept { return impl_->instance; }
const CoreOptions& Core::options() const noexcept { return impl_->opt; }
bool Core::multicast_active() const noexcept { return static_cast<bool>(impl_->listener); }
bool Core::holds_door() const noexcept { return impl_->holds_door; }

CoreCounters Core::counters() const {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    return impl_->counters;
}

std::size_t Core::registered(const std::string& topic) const {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    const auto it = impl_->topic_sizes.find(topic);
    return it == impl_->topic_sizes.end() ? 0 : it->second;
}

bool Core::wait_until_registered(const std::string& topic, std::size_t count, std::chrono::milliseconds timeout) const {
    std::unique_lock<std::mutex> lock(impl_->mutex);
    return impl_->changed.wait_for(lock, timeout, [&] {
        const auto it = impl_->topic_sizes.find(topic);
        return it != impl_->topic_sizes.end() && it->second >= count;
    });
}

bool Core::wait_until_at_most(const std::string& topic, std::size_t count, std::chrono::milliseconds timeout) const {
    std::unique_lock<std::mutex> lock(impl_->mutex);
    return impl_->changed.wait_for(lock, timeout, [&] {
        const auto it = impl_->topic_sizes.find(topic);
        return it == impl_->topic_sizes.end() || it->second <= count;
    });
}

}  // namespace gecko::core
