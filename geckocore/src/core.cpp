// SPDX-License-Identifier: Apache-2.0
#include "geckocore/core.hpp"

#include "discovery/net.hpp"
#include "discovery/protocol.hpp"
#include "door.hpp"
#include "router_io.hpp"
#include "gecko/error.hpp"
#include "gecko/log.hpp"
#include "gecko/signals.hpp"

#include <zmq.hpp>

#include <arpa/inet.h>
#include <csignal>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <map>
#include <mutex>
#include <set>
#include <thread>

namespace gecko::core {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
namespace wire = gecko::detail::wire;
namespace net = gecko::detail::net;
using gecko::detail::EntityKind;
using gecko::detail::Peer;
using gecko::detail::Registration;
using gecko::detail::TopicStats;

namespace {

std::string pid_namespace() {
    char buf[128] = {};
    const auto n = ::readlink("/proc/self/ns/pid", buf, sizeof buf - 1);
    return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string();
}

/// At most one line per `period` for a repeated event; counts what it skipped.
class LogLimiter {
public:
    explicit LogLimiter(milliseconds period) : period_(period) {}
    bool allow(Clock::time_point now) {
        if (now - last_ < period_ && last_ != Clock::time_point{}) return false;
        last_ = now;
        return true;
    }

private:
    milliseconds period_;
    Clock::time_point last_{};
};

struct TopicKey {
    bool service;
    std::string name;
    bool operator<(const TopicKey& o) const { return std::tie(service, name) < std::tie(o.service, o.name); }
};

bool is_service(EntityKind k) { return k == EntityKind::server || k == EntityKind::client; }

}  // namespace

struct Core::Impl {
    explicit Impl(CoreOptions o) : opt(std::move(o)), log("geckocore") {}

    struct Session {
        std::uint64_t id = 0;
        std::string node, host, host_id, pidns;
        std::int32_t pid = 0;
        std::string route;  // ROUTER identity of its latest message
        bool req_envelope = false;
        Clock::time_point last_seen{};
        bool local = false;  // same host and pid namespace: kill(pid, 0) applies
        std::set<std::uint64_t> entities;
    };
    struct Entity {
        Registration reg;
        std::uint64_t session = 0;
        std::uint64_t order = 0;
        std::optional<TopicStats> stats;
        Clock::time_point stats_at{};
    };
    struct Duplicate {
        std::string host, endpoint;
        std::int32_t pid = 0;
        Clock::time_point last_heard{};
    };

    CoreOptions opt;
    Logger log;
    const std::string host = net::hostname();
    const std::int32_t pid = static_cast<std::int32_t>(::getpid());
    const std::string pidns = pid_namespace();
    const std::uint64_t instance = net::random_id();
    const Clock::time_point started = Clock::now();
    std::string endpoint;
    zmq::context_t context{1};
    std::optional<zmq::socket_t> router;
    std::optional<HostDoor> door;
    std::atomic<bool> holds_door{false};
    net::Fd listener, sender;
    sockaddr_in group{};
    std::atomic<bool> stopping{false};
    std::thread thread;

    std::map<std::uint64_t, Session> sessions;
    std::map<std::uint64_t, Entity> entities;
    std::map<TopicKey, std::vector<std::uint64_t>> topics;  // entity ids in registration order
    std::map<std::uint64_t, Duplicate> duplicates;          // by instance
    std::uint64_t next_order = 0;
    bool warm = true;  // within one lease of start: the table may be incomplete

    mutable std::mutex mutex;  // guards counters and topic_sizes for other threads
    mutable std::condition_variable changed;
    CoreCounters counters;
    std::map<std::string, std::size_t> topic_sizes;

    LogLimiter malformed_udp_log{milliseconds(5000)};
    LogLimiter malformed_zmq_log{milliseconds(5000)};
    LogLimiter duplicate_log{milliseconds(10000)};

    void setup();
    int run();
    // multicast
    void announce();
    void on_datagrams();
    // requests
    void on_router();
    void handle(const std::string& route, bool req_envelope, const wire::Message& m);
    void reply(const std::string& route, bool req_envelope, const wire::Writer& w);
    void reply_error(const std::string& route, bool req_envelope, std::uint64_t id, const std::string& code, const std::string& message);
    void send_to_session(const Session& s, const wire::Writer& w);
    void notify_error(std::uint64_t entity, const std::string& code, const std::string& message);
    // table
    void add(Session& s, Registration reg);
    void remove_entity(std::uint64_t id, bool notify_peers = true);
    void remove_session(std::uint64_t id, const std::string& why);
    std::vector<std::uint64_t> peers_of(const Entity& watcher) const;
    void push_peers(std::uint64_t watcher, const std::vector<std::uint64_t>& gone = {});
    void push_to_watchers_of(const Entity& producer, bool gone);
    Peer peer_of(const Entity& e) const;
    void write_list(wire::Writer& w) const;
    void table_changed();
    void count(std::uint64_t CoreCounters::*field) {
        std::lock_guard<std::mutex> lock(mutex);
        ++(counters.*field);
    }
    std::string describe(const Entity& e) const {
        const auto s = sessions.find(e.session);
        return std::string(wire::to_string(e.reg.kind)) + " on node '" + (s != sessions.end() ? s->second.node : "?") + "'";
    }
};

// ---- setup ---------------------------------------------------------------------

void Core::Impl::setup() {
    if (opt.key.empty()) throw Error(Errc::invalid_argument, "geckocore needs a key (--key or GECKO_KEY)");
    if (opt.lease.count() <= 0) throw Error(Errc::invalid_argument, "the lease must be positive");
    router.emplace(context, zmq::socket_type::router);
    router->set(zmq::sockopt::linger, 0);
    router->set(zmq::sockopt::maxmsgsize, wire::max_zmq_message);
    router->set(zmq::sockopt::router_handover, 1);
    try {
        router->bind(opt.listen);
    } catch (const zmq::error_t& e) {
        throw Error(Errc::transport, "cannot listen on " + opt.listen + ": " + e.what() +
                                         (e.num() == EADDRINUSE ? " (the port is taken: leave --listen at its default, "
                                                                  "tcp://0.0.0.0:*, or pick another port)"
                                                                : ""));
    }
    endpoint = router->get(zmq::sockopt::last_endpoint);
    HostDoor::Options door_options;
    door_options.port = opt.door_port;
    door_options.self = DoorEntry{opt.key, instance, endpoint, host, pid, pidns, {}, 0};
    door.emplace(context, std::move(door_options), log);
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
void write_core_fields(wire::Writer& w, const Core::Impl& c) {
    w.kv("key", c.opt.key);
    w.kv("instance", c.instance);
    w.kv("endpoint", c.endpoint);
    w.kv("host", c.host);
    w.kv("pid", c.pid);
}
}  // namespace

void Core::Impl::announce() {
    if (!sender) return;
    wire::Writer w("announce", 5);
    write_core_fields(w, *this);
    const auto err = net::send_to(sender.get(), group, w.data(), w.size());
    if (!err.empty() && malformed_udp_log.allow(Clock::now())) log.warn("cannot announce on the multicast group: " + err);
}

void Core::Impl::on_datagrams() {
    char buf[wire::max_datagram];
    for (int budget = 256; budget > 0; --budget) {
        sockaddr_in from{};
        socklen_t len = sizeof from;
        const auto n = ::recvfrom(listener.get(), buf, sizeof buf, MSG_TRUNC, reinterpret_cast<sockaddr*>(&from), &len);
        if (n < 0) return;
        std::string why;
        std::optional<wire::Message> m;
        if (static_cast<std::size_t>(n) > sizeof buf)
            why = "oversized (" + std::to_string(n) + " bytes)";
        else
            m = wire::Message::parse(buf, static_cast<std::size_t>(n), &why);
        std::optional<std::string> key;
        if (m) {
            key = wire::get_str(m->root(), "key");
            if (!key) why = "no 'key'";
        }
        if (!m || !key) {
            count(&CoreCounters::malformed_datagrams);
            if (malformed_udp_log.allow(Clock::now()))
                log.warn("ignored a malformed datagram from " + net::to_string(from) + ": " + why + " (" +
                         std::to_string(counters.malformed_datagrams) + " so far)");
            continue;
        }
        const auto& t = m->type();
        if (t == "query") {
            if (*key != opt.key) {
                count(&CoreCounters::other_key_queries);
                continue;
            }
            wire::Writer w("core", 5);
            write_core_fields(w, *this);
            const auto err = net::send_to(sender.get(), from, w.data(), w.size());
            if (!err.empty()) log.debug("cannot answer " + net::to_string(from) + ": " + err);
            count(&CoreCounters::queries_answered);
        } else if (t == "announce") {
            const auto other = wire::get_u64(m->root(), "instance").value_or(0);
            if (*key != opt.key || other == instance) continue;
            auto& d = duplicates[other];
            d.host = wire::get_str(m->root(), "host").value_or("?");
            d.endpoint = wire::get_str(m->root(), "endpoint").value_or("?");
            d.pid = static_cast<std::int32_t>(wire::get_i64(m->root(), "pid").value_or(0));
            d.last_heard = Clock::now();
            count(&CoreCounters::duplicate_cores);
            if (duplicate_log.allow(d.last_heard))
                log.error("another geckocore serves key '" + opt.key + "' on this network: host " + d.host + " pid " +
                          std::to_string(d.pid) + " at " + d.endpoint + " (from " + net::to_string(from.sin_addr) +
                          "); nodes may split between the two cores: stop one of them");
        }
        // "core" (a reply to a node) never reaches the group; other types: ignored.
    }
}

// ---- requests --------------------------------------------------------------------

void Core::Impl::reply(const std::string& route, bool req_envelope, const wire::Writer& w) {
    answer(*router, route, req_envelope, w.data(), w.size());
}

void Core::Impl::reply_error(const std::string& route, bool req_envelope, std::uint64_t id, const std::string& code,
                             const std::string& message) {
    wire::Writer w("error", 4);
    w.kv("instance", instance);
    w.kv("id", id);
    w.kv("code", code);
    w.kv("message", message);
    reply(route, req_envelope, w);
}

void Core::Impl::send_to_session(const Session& s, const wire::Writer& w) { reply(s.route, s.req_envelope, w); }

void Core::Impl::notify_error(std::uint64_t entity, const std::string& code, const std::string& message) {
    const auto e = entities.find(entity);
    if (e == entities.end()) return;
    const auto s = sessions.find(e->second.session);
    if (s == sessions.end()) return;
    wire::Writer w("error", 4);
    w.kv("instance", instance);
    w.kv("id", entity);
    w.kv("code", code);
    w.kv("message", message);
    send_to_session(s->second, w);
}

void Core::Impl::on_router() {
    RouterRequest request;
    for (int budget = 1024; budget > 0 && next_request(*router, request); --budget) {
        std::string why = "expected one frame after the routing id";
        std::optional<wire::Message> m;
        if (request.body)
            m = wire::Message::parse(static_cast<const char*>(request.body->data()), request.body->size(), &why);
        if (!m) {
            count(&CoreCounters::malformed_messages);
            if (malformed_zmq_log.allow(Clock::now()))
                log.warn("ignored a malformed request: " + why + " (" + std::to_string(counters.malformed_messages) + " so far)");
            reply_error(request.route, request.req_envelope, 0, "malformed", why);
            continue;
        }
        try {
            handle(request.route, request.req_envelope, *m);
        } catch (const std::exception& e) {  // e.g. msgpack type errors deep in a field
            count(&CoreCounters::malformed_messages);
            reply_error(request.route, request.req_envelope, 0, "malformed", e.what());
        }
    }
}

void Core::Impl::handle(const std::string& route, bool req_envelope, const wire::Message& m) {
    const auto& root = m.root();
    const auto& t = m.type();
    const auto now = Clock::now();
    if (t == "list") {
        // A tool that names a key must not be shown another key's table
        // (an explicit --core pointing at the wrong core).
        if (const auto key = wire::get_str(root, "key"); key && *key != opt.key) {
            reply_error(route, req_envelope, 0, "wrong_key",
                        "geckocore at " + endpoint + " on " + host + " serves key '" + opt.key + "', not '" + *key + "'");
            return;
        }
        wire::Writer w("list", 11);
        write_list(w);
        reply(route, req_envelope, w);
        return;
    }
    const auto sid = wire::get_u64(root, "s");
    if (!sid) {
        count(&CoreCounters::malformed_messages);
        reply_error(route, req_envelope, 0, "malformed", "'" + t + "' without a session id 's'");
        return;
    }
    if (t == "hello") {
        auto key = wire::get_str(root, "key");
        if (!key || *key != opt.key) {
            reply_error(route, req_envelope, 0, "wrong_key",
                        "geckocore at " + endpoint + " on " + host + " serves key '" + opt.key + "', not '" + key.value_or("") + "'");
            return;
        }
        const bool known = sessions.count(*sid) > 0;
        auto& s = sessions[*sid];
        s.id = *sid;
        s.node = wire::get_str(root, "node").value_or("");
        s.host = wire::get_str(root, "host").value_or("");
        s.host_id = wire::get_str(root, "hostid").value_or("");
        s.pid = static_cast<std::int32_t>(wire::get_i64(root, "pid").value_or(0));
        s.pidns = wire::get_str(root, "pidns").value_or("");
        s.local = s.host == host && !s.pidns.empty() && s.pidns == pidns && s.pid > 0;
        s.route = route;
        s.req_envelope = req_envelope;
        s.last_seen = now;
        if (known) {
            // The node lists everything it has: drop what it withdrew while we could not hear it.
            std::set<std::uint64_t> keep;
            if (const auto* ids = wire::find(root, "ids"); ids && ids->type == msgpack::type::ARRAY)
                for (std::uint32_t i = 0; i < ids->via.array.size; ++i)
                    if (ids->via.array.ptr[i].type == msgpack::type::POSITIVE_INTEGER) keep.insert(ids->via.array.ptr[i].via.u64);
            const auto mine = s.entities;
            for (auto id : mine)
                if (!keep.count(id)) remove_entity(id);
        } else {
            log.info("node '" + s.node + "' joined (host " + s.host + ", pid " + std::to_string(s.pid) + ")");
        }
        wire::Writer w("welcome", 6);
        w.kv("instance", instance);
        w.kv("lease_ms", static_cast<std::int64_t>(opt.lease.count()));
        w.kv("host", host);
        w.kv("pid", pid);
        w.kv("key", opt.key);
        w.kv("warm", warm);
        reply(route, req_envelope, w);
        return;
    }
    const auto it = sessions.find(*sid);
    if (it == sessions.end()) {
        if (t == "bye") return;
        wire::Writer w("unknown", 1);
        w.kv("instance", instance);
        reply(route, req_envelope, w);
        return;
    }
    Session& s = it->second;
    // A new routing id means the node's TCP link was re-established: pushes sent
    // meanwhile may be lost, so its consumers get their current peer sets again.
    const bool reconnected = s.route != route;
    s.route = route;
    s.req_envelope = req_envelope;
    s.last_seen = now;
    if (reconnected) {
        for (auto id : s.entities)
            if (!wire::is_producer(entities.at(id).reg.kind)) push_peers(id);
    }
    if (t == "hb") {
        wire::Writer w("hb", 1);
        w.kv("instance", instance);
        reply(route, req_envelope, w);
    } else if (t == "add") {
        auto reg = wire::read_registration(root);
        if (!reg) {
            count(&CoreCounters::malformed_messages);
            reply_error(route, req_envelope, wire::get_u64(root, "id").value_or(0), "malformed", "'add' needs id, kind, topic, type, endpoints");
            return;
        }
        add(s, std::move(*reg));
    } else if (t == "remove") {
        const auto id = wire::get_u64(root, "id");
        const auto e = id ? entities.find(*id) : entities.end();
        if (e != entities.end() && e->second.session == s.id) remove_entity(*id);
    } else if (t == "stats") {
        const auto* list = wire::find(root, "stats");
        if (!list || list->type != msgpack::type::ARRAY) {
            count(&CoreCounters::malformed_messages);
            return;
        }
        for (std::uint32_t i = 0; i < list->via.array.size; ++i) {
            const auto st = wire::read_stats(list->via.array.ptr[i]);
            if (!st) continue;
            const auto e = entities.find(st->id);
            if (e == entities.end() || e->second.session != s.id) continue;
            e->second.stats = st;
            e->second.stats_at = now;
        }
    } else if (t == "bye") {
        remove_session(s.id, "said goodbye");
    } else {
        count(&CoreCounters::malformed_messages);
        reply_error(route, req_envelope, 0, "unknown_type", "unknown message type '" + t + "'");
    }
}

// ---- the table ---------------------------------------------------------------------

Peer Core::Impl::peer_of(const Entity& e) const {
    Peer p;
    p.reg = e.reg;
    if (const auto s = sessions.find(e.session); s != sessions.end()) {
        p.node = s->second.node;
        p.host = s->second.host;
        p.host_id = s->second.host_id;
        p.pid = s->second.pid;
    }
    return p;
}

namespace {
// A consumer that declares no type ("" or "*": a tool, a bridge) takes any.
bool is_wildcard_type(const std::string& t) { return t.empty() || t == "*"; }
bool types_match(const std::string& a, const std::string& b) {
    return a == b || is_wildcard_type(a) || is_wildcard_type(b);
}
}  // namespace

std::vector<std::uint64_t> Core::Impl::peers_of(const Entity& watcher) const {
    std::vector<std::uint64_t> out;
    const auto t = topics.find(TopicKey{is_service(watcher.reg.kind), watcher.reg.topic});
    if (t == topics.end()) return out;
    const auto want = wire::producer_kind(watcher.reg.kind);
    for (auto id : t->second) {
        const auto& e = entities.at(id);
        if (e.reg.kind == want && types_match(e.reg.type_name, watcher.reg.type_name)) out.push_back(id);
    }
    return out;
}

void Core::Impl::push_peers(std::uint64_t watcher, const std::vector<std::uint64_t>& gone) {
    const auto w = entities.find(watcher);
    if (w == entities.end()) return;
    const auto s = sessions.find(w->second.session);
    if (s == sessions.end()) return;
    const auto ids = peers_of(w->second);
    wire::Writer msg("peers", warm ? 5 : 4);
    msg.kv("instance", instance);
    msg.kv("id", watcher);
    msg.kv("partial", warm);
    msg.key("peers");
    msg.packer().pack_array(static_cast<std::uint32_t>(ids.size()));
    for (auto id : ids) wire::pack_peer(msg.packer(), peer_of(entities.at(id)));
    if (warm) msg.kv("gone", gone);
    send_to_session(s->second, msg);
}

void Core::Impl::push_to_watchers_of(const Entity& producer, bool gone) {
    const auto t = topics.find(TopicKey{is_service(producer.reg.kind), producer.reg.topic});
    if (t == topics.end()) return;
    std::vector<std::uint64_t> gone_ids;
    if (gone) gone_ids.push_back(producer.reg.id);
    for (auto id : t->second) {
        const auto& e = entities.at(id);
        if (!wire::is_producer(e.reg.kind) && types_match(e.reg.type_name, producer.reg.type_name) && id != producer.reg.id)
            push_peers(id, gone_ids);
    }
}

void Core::Impl::add(Session& s, Registration reg) {
    const auto id = reg.id;
    if (const auto old = entities.find(id); old != entities.end()) {
        if (old->second.session != s.id) {
            wire::Writer w("error", 4);
            w.kv("instance", instance);
            w.kv("id", id);
            w.kv("code", "duplicate");
            w.kv("message", "entity id " + std::to_string(id) + " is already registered by " + describe(old->second) + "; ignored");
            send_to_session(s, w);
            return;
        }
        const auto& o = old->second.reg;
        if (o.kind == reg.kind && o.topic == reg.topic && o.type_name == reg.type_name && o.endpoints == reg.endpoints) {
            if (!wire::is_producer(reg.kind)) push_peers(id);  // a re-registration still gets its peer set
            return;
        }
        remove_entity(id);
    }
    const TopicKey key{is_service(reg.kind), reg.topic};
    auto& ids = topics[key];
    Entity e;
    e.reg = std::move(reg);
    e.session = s.id;
    e.order = next_order++;
    // Type check against everything already on the topic. A conflict concerns
    // the parties between which data would flow (a producer and a consumer):
    // both hear of it, once. A second producer of another type hears of the
    // first (it splits the topic); consumers of another type than each other,
    // with no producer between them, are only shown by `list`.
    std::set<std::string> reported;
    const bool newcomer_produces = wire::is_producer(e.reg.kind);
    for (auto other_id : ids) {
        const auto& other = entities.at(other_id);
        if (types_match(other.reg.type_name, e.reg.type_name)) continue;
        const bool other_produces = wire::is_producer(other.reg.kind);
        if (!newcomer_produces && !other_produces) continue;
        const std::string what = key.service ? "service" : "topic";
        const std::string mine = "the " + std::string(wire::to_string(e.reg.kind)) + " of " + what + " '" + e.reg.topic +
                                 "' on node '" + s.node + "' declares " + e.reg.type_name;
        const std::string theirs = describe(other) + " declares " + other.reg.type_name;
        if (reported.insert(other.reg.type_name).second) {
            count(&CoreCounters::type_conflicts);
            const std::string text = "type conflict: " + mine + ", but the " + theirs + "; no data flows between them";
            wire::Writer w("error", 4);
            w.kv("instance", instance);
            w.kv("id", e.reg.id);
            w.kv("code", "type_conflict");
            w.kv("message", text);
            send_to_session(s, w);
            log.warn(text);
        }
        if (newcomer_produces != other_produces)
            notify_error(other_id, "type_conflict", "type conflict: " + mine + ", but this " + theirs + "; no data flows between them");
    }
    ids.push_back(e.reg.id);
    s.entities.insert(e.reg.id);
    const auto [it, inserted] = entities.emplace(e.reg.id, std::move(e));
    (void)inserted;
    if (wire::is_producer(it->second.reg.kind))
        push_to_watchers_of(it->second, false);
    else
        push_peers(it->second.reg.id);
    table_changed();
}

void Core::Impl::remove_entity(std::uint64_t id, bool notify_peers) {
    const auto it = entities.find(id);
    if (it == entities.end()) return;
    Entity e = std::move(it->second);
    entities.erase(it);
    if (auto s = sessions.find(e.session); s != sessions.end()) s->second.entities.erase(id);
    const TopicKey key{is_service(e.reg.kind), e.reg.topic};
    if (auto t = topics.find(key); t != topics.end()) {
        t->second.erase(std::remove(t->second.begin(), t->second.end(), id), t->second.end());
        if (notify_peers && wire::is_producer(e.reg.kind)) push_to_watchers_of(e, true);
        if (t->second.empty()) topics.erase(t);
    }
    table_changed();
}

void Core::Impl::remove_session(std::uint64_t id, const std::string& why) {
    const auto it = sessions.find(id);
    if (it == sessions.end()) return;
    log.info("node '" + it->second.node + "' (host " + it->second.host + ", pid " + std::to_string(it->second.pid) + ") left: " + why);
    const auto mine = it->second.entities;
    for (auto e : mine) remove_entity(e);
    sessions.erase(id);
    table_changed();
}

void Core::Impl::table_changed() {
    std::map<std::string, std::size_t> sizes;
    for (const auto& [k, ids] : topics) sizes[k.name] += ids.size();
    {
        std::lock_guard<std::mutex> lock(mutex);
        topic_sizes = std::move(sizes);
    }
    changed.notify_all();
}

void Core::Impl::write_list(wire::Writer& w) const {
    const auto now = Clock::now();
    auto& pk = w.packer();
    w.kv("key", opt.key);
    w.kv("instance", instance);
    w.kv("host", host);
    w.kv("pid", pid);
    w.kv("endpoint", endpoint);
    w.kv("uptime_ms", static_cast<std::int64_t>(std::chrono::duration_cast<milliseconds>(now - started).count()));

    w.key("nodes");
    pk.pack_array(static_cast<std::uint32_t>(sessions.size()));
    for (const auto& [id, s] : sessions) {
        pk.pack_map(6);
        pk.pack(std::string_view("s"));
        pk.pack(id);
        pk.pack(std::string_view("node"));
        pk.pack(s.node);
        pk.pack(std::string_view("host"));
        pk.pack(s.host);
        pk.pack(std::string_view("pid"));
        pk.pack(s.pid);
        pk.pack(std::string_view("silent_ms"));
        pk.pack(static_cast<std::int64_t>(std::chrono::duration_cast<milliseconds>(now - s.last_seen).count()));
        pk.pack(std::string_view("entities"));
        pk.pack(static_cast<std::uint64_t>(s.entities.size()));
    }

    auto pack_entity = [&](const Entity& e) {
        const Peer p = peer_of(e);
        pk.pack_map(10);
        wire::pack_registration_fields(pk, p.reg);
        pk.pack(std::string_view("node"));
        pk.pack(p.node);
        pk.pack(std::string_view("host"));
        pk.pack(p.host);
        pk.pack(std::string_view("pid"));
        pk.pack(p.pid);
        pk.pack(std::string_view("stats"));
        if (e.stats)
            wire::pack_stats(pk, *e.stats);
        else
            pk.pack_nil();
        pk.pack(std::string_view("stats_age_ms"));
        if (e.stats)
            pk.pack(static_cast<std::int64_t>(std::chrono::duration_cast<milliseconds>(now - e.stats_at).count()));
        else
            pk.pack_nil();
    };
    struct Conflict {
        const TopicKey* key;
        std::vector<std::string> types;
    };
    std::vector<Conflict> conflicts;
    for (bool service : {false, true}) {
        std::uint32_t n = 0;
        for (const auto& [k, ids] : topics) n += k.service == service ? 1 : 0;
        w.key(service ? "services" : "topics");
        pk.pack_array(n);
        for (const auto& [k, ids] : topics) {
            if (k.service != service) continue;
            std::vector<const Entity*> producers, consumers;
            std::vector<std::string> types;
            for (auto id : ids) {
                const auto& e = entities.at(id);
                (wire::is_producer(e.reg.kind) ? producers : consumers).push_back(&e);
                if (!is_wildcard_type(e.reg.type_name) &&
                    std::find(types.begin(), types.end(), e.reg.type_name) == types.end())
                    types.push_back(e.reg.type_name);
            }
            const std::string type = !producers.empty() ? producers.front()->reg.type_name : consumers.front()->reg.type_name;
            if (types.size() > 1) conflicts.push_back({&k, types});
            pk.pack_map(5);
            pk.pack(std::string_view("name"));
            pk.pack(k.name);
            pk.pack(std::string_view("type"));
            pk.pack(type);
            pk.pack(std::string_view("types"));
            pk.pack(types);
            pk.pack(std::string_view(service ? "servers" : "publishers"));
            pk.pack_array(static_cast<std::uint32_t>(producers.size()));
            for (auto* e : producers) pack_entity(*e);
            pk.pack(std::string_view(service ? "clients" : "subscribers"));
            pk.pack_array(static_cast<std::uint32_t>(consumers.size()));
            for (auto* e : consumers) pack_entity(*e);
        }
    }
    w.key("conflicts");
    pk.pack_array(static_cast<std::uint32_t>(conflicts.size()));
    for (const auto& c : conflicts) {
        pk.pack_map(4);
        pk.pack(std::string_view("topic"));
        pk.pack(c.key->name);
        pk.pack(std::string_view("service"));
        pk.pack(c.key->service);
        pk.pack(std::string_view("types"));
        pk.pack(c.types);
        std::string text = std::string(c.key->service ? "service '" : "topic '") + c.key->name + "' is declared with " +
                           std::to_string(c.types.size()) + " types:";
        for (const auto& t : c.types) text += " " + t;
        pk.pack(std::string_view("message"));
        pk.pack(text);
    }
    w.key("counters");
    CoreCounters c;
    {
        std::lock_guard<std::mutex> lock(mutex);
        c = counters;
    }
    pk.pack_map(9);
    pk.pack(std::string_view("malformed_datagrams"));
    pk.pack(c.malformed_datagrams);
    pk.pack(std::string_view("malformed_messages"));
    pk.pack(c.malformed_messages);
    pk.pack(std::string_view("queries_answered"));
    pk.pack(c.queries_answered);
    pk.pack(std::string_view("other_key_queries"));
    pk.pack(c.other_key_queries);
    pk.pack(std::string_view("duplicate_cores"));
    pk.pack(c.duplicate_cores);
    pk.pack(std::string_view("leases_expired"));
    pk.pack(c.leases_expired);
    pk.pack(std::string_view("dead_processes"));
    pk.pack(c.dead_processes);
    pk.pack(std::string_view("type_conflicts"));
    pk.pack(c.type_conflicts);
    pk.pack(std::string_view("duplicate_instances"));
    pk.pack(static_cast<std::uint64_t>(duplicates.size()));
}

// ---- the loop ------------------------------------------------------------------------

int Core::Impl::run() {
    auto now = Clock::now();
    const milliseconds quick[] = {milliseconds(0), milliseconds(250), milliseconds(1000)};
    std::size_t quick_sent = 0;
    Clock::time_point next_announce = started;
    Clock::time_point next_lease_check = now;
    Clock::time_point next_pid_check = now;
    const Clock::time_point warm_until = started + opt.lease;

    while (!stopping && gecko::ok()) {
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
                if (!wire::is_producer(e.reg.kind)) push_peers(id);
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
        auto wake = std::min({next_lease_check, next_pid_check, now + milliseconds(100), door->tick(now)});
        holds_door = door->holding();
        if (sender) wake = std::min(wake, next_announce);
        if (warm) wake = std::min(wake, warm_until);

        zmq::pollitem_t items[4] = {};
        std::size_t n = 0;
        items[n++] = {router->handle(), 0, ZMQ_POLLIN, 0};
        const std::size_t listener_at = listener ? n : 0;
        if (listener) items[n++] = {nullptr, listener.get(), ZMQ_POLLIN, 0};
        const std::size_t door_at = door->door_socket() ? n : 0;
        if (door_at) items[n++] = {door->door_socket(), 0, ZMQ_POLLIN, 0};
        const std::size_t link_at = door->link_socket() ? n : 0;
        if (link_at) items[n++] = {door->link_socket(), 0, ZMQ_POLLIN, 0};
        try {
            zmq::poll(items, n, std::max(milliseconds(0), std::chrono::duration_cast<milliseconds>(wake - Clock::now())));
        } catch (const zmq::error_t& e) {
            if (e.num() == EINTR) continue;
            log.error(std::string("poll failed: ") + e.what());
            return 1;
        }
        if (items[0].revents & ZMQ_POLLIN) on_router();
        if (listener_at && (items[listener_at].revents & ZMQ_POLLIN)) on_datagrams();
        if (door_at && (items[door_at].revents & ZMQ_POLLIN)) door->on_door(Clock::now());
        if (link_at && (items[link_at].revents & ZMQ_POLLIN)) door->on_link();
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
