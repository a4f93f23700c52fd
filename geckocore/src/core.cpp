// SPDX-License-Identifier: Apache-2.0
// geckocore's I/O: its sockets (the ROUTER nodes talk to, the multicast
// group, the host door), the connections it reaps, and the loop that drives
// the table (table.hpp) and answers `list` (list_answer.hpp).
// docs/DISCOVERY.md is the specification.

#include "geckocore/core.hpp"

#include "connections.hpp"
#include "door.hpp"
#include "gecko/error.hpp"
#include "gecko/log.hpp"
#include "gecko/net/datagram_seal.hpp"
#include "gecko/net/net.hpp"
#include "gecko/net/zap_handler.hpp"
#include "gecko/net/zmq_socket.hpp"
#include "gecko/security/key_security.hpp"
#include "gecko/shm/segment.hpp"
#include "gecko/wire/discovery.hpp"
#include "gecko/wire/names.hpp"
#include "list_answer.hpp"
#include "router_io.hpp"
#include "table.hpp"
#include "text.hpp"

#include <zmq.hpp>

#include <arpa/inet.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <thread>

namespace gecko::core {

using std::chrono::milliseconds;

namespace {

std::string pid_namespace() {
    char buf[128] = {};
    const auto n = ::readlink("/proc/self/ns/pid", buf, sizeof buf - 1);
    return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string();
}

}  // namespace

struct Core::Impl final : TableOutput {
    explicit Impl(CoreOptions o) : opt(std::move(o)), log("geckocore"), limiter(opt.log_period) {
        me.key = opt.key;
        me.instance = instance;
        me.host = host;
        me.pid = pid;
        me.pidns = pidns;
    }

    struct Duplicate {
        std::string host, endpoint;
        std::int32_t pid = 0;
        Clock::time_point last_heard{};
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
    CoreIdentity me;
    Table table{opt, me, *this};
    std::shared_ptr<zmq::context_t> context = net::process_context();
    security::KeySecurity security;          // the key's secret, if this machine has one (docs/SECURITY.md §5)
    std::optional<net::ZapAdmission> zap;    // with a secret: the ROUTER admits the key's clients; outlives it
    std::optional<net::DatagramGuard> guard; // with a secret: checks the seal of datagrams (docs/SECURITY.md §6)
    std::map<int, std::string> peers;        // accepted connection fd -> peer address, to name a refused one
    bool handshake_failed = false;           // the next connection to go is the one whose handshake failed
    std::optional<zmq::socket_t> router;
    std::optional<zmq::socket_t> monitor;  // the ROUTER's connection events
    std::optional<HostDoor> door;
    std::atomic<bool> holds_door{false};
    net::Fd listener, sender;
    sockaddr_in group{};
    std::atomic<bool> stopping{false};
    std::thread thread;

    std::string claims_file;  // "" : none
    std::uint64_t claims_written = 0;  // table.changes() when last written
    std::map<std::uint64_t, Duplicate> duplicates;  // by instance
    Connections connections;

    mutable std::mutex mutex;  // guards counters and topic_sizes for other threads
    mutable std::condition_variable changed;
    CoreCounters counters;
    std::map<std::string, std::size_t> topic_sizes;

    void setup();
    int run();
    // multicast
    void announce();
    void on_datagrams();
    bool authentic(const char* data, std::size_t size, const discovery::Message& m, const sockaddr_in& from);
    // connections
    void on_monitor(Clock::time_point now);
    void reap_connections(Clock::time_point now);
    // requests
    void on_router();
    void handle(const RouterRequest& request, const discovery::Message& m);

    // TableOutput
    void send(const std::string& route, bool req_envelope, const discovery::Writer& w) override {
        connections.handed(route, w.size());
        core::answer(*router, route, req_envelope, w.data(), w.size());
    }
    // A peer that does not read what it asked for is not sent more: what the
    // core holds for one connection stays below max_queued_per_connection.
    void answer(const std::string& route, bool req_envelope, const discovery::Writer& w) override {
        if (const auto unread = connections.unread(route); unread > opt.max_queued_per_connection) {
            count(&CoreCounters::answers_dropped);
            say(LogLevel::warn, "unread answers",
                "dropped an answer to a connection that has not read " + std::to_string(unread) +
                    " bytes it was sent (" + std::to_string(counters.answers_dropped) + " so far)");
            return;
        }
        send(route, req_envelope, w);
    }
    void count(std::uint64_t CoreCounters::*field, std::uint64_t n = 1) override {
        std::lock_guard<std::mutex> lock(mutex);
        counters.*field += n;
    }
    void say(LogLevel level, const std::string& reason, const std::string& text) override {
        std::string note;
        if (limiter.admit(reason, Clock::now(), &note)) log.log_at(level, text + note);
    }
    // Updates what wait_until_registered() sees for these names only: work
    // per change stays independent of the table's size.
    void names_changed(const std::set<std::string>& names) override {
        {
            std::lock_guard<std::mutex> lock(mutex);
            for (const auto& name : names) {
                const std::size_t n = table.size_of(name);
                if (n == 0)
                    topic_sizes.erase(name);
                else
                    topic_sizes[name] = n;
            }
        }
        changed.notify_all();
    }
};

// ---- setup ---------------------------------------------------------------------

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
    // With the key's secret every node link is CURVE, and only holders of the
    // secret get in (an unusable secret file stops the core here).
    security = security::KeySecurity::find(opt.key);
    if (security.secured()) {
        zap.emplace(context, *security.curve(), "geckocore");
        guard.emplace(security.datagram_key());
        so.curve = security.curve();
        so.curve_role = net::CurveRole::server;
    }
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
    me.endpoint = endpoint;
    // Connection events, to close connections that never say hello.
    const std::string monitor_endpoint = "inproc://geckocore-monitor-" + std::to_string(instance);
    if (zmq_socket_monitor(router->handle(), monitor_endpoint.c_str(),
                           ZMQ_EVENT_ACCEPTED | ZMQ_EVENT_DISCONNECTED | ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL |
                               ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL | ZMQ_EVENT_HANDSHAKE_FAILED_AUTH) == 0) {
        monitor = net::make_socket(*context, zmq::socket_type::pair);
        monitor->connect(monitor_endpoint);
    }

    if (!opt.claims_directory.empty()) {
        // Files of cores of this user gone for ten minutes are of no use to anyone.
        remove_old_claims(opt.claims_directory, std::chrono::minutes(10));
        claims_file = claims_path(opt.claims_directory, opt.key);
        std::string why;
        if (auto c = read_claims(claims_file, why)) {
            log.info("the previous run held " + std::to_string(c->secrets.size()) + " sessions and " +
                     std::to_string(c->entities.size()) + " entities: their ids stay theirs during the warm-up");
            table.keep_claims(std::move(*c));
            claims_written = table.changes() + 1;  // written again at once: ours now
        } else if (!why.empty()) {
            log.warn("not reading the claims in " + claims_file + ": " + why);
        }
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
// "IP:PORT" of an accepted connection's peer ("" if it is gone already).
std::string peer_of(int fd) {
    sockaddr_in a{};
    socklen_t n = sizeof a;
    if (::getpeername(fd, reinterpret_cast<sockaddr*>(&a), &n) != 0 || a.sin_family != AF_INET) return "";
    return net::to_string(a);
}

// The core's `core` answer or `announce`: sealed when it holds the key's secret.
discovery::Writer core_datagram(const Core::Impl& c, const char* type) {
    const bool secured = c.security.secured();
    discovery::Writer w(type, secured ? 6 + net::sealed_fields : 5);
    w.kv("key", c.opt.key);
    w.kv("instance", c.instance);
    w.kv("endpoint", c.endpoint);
    w.kv("host", c.host);
    w.kv("pid", c.pid);
    if (secured) {
        w.kv("secured", true);  // a node without the secret then says why it cannot join
        net::seal(w, *c.security.datagram_key());
    }
    return w;
}
}  // namespace

void Core::Impl::announce() {
    if (!sender) return;
    const auto w = core_datagram(*this, "announce");
    const auto err = net::send_to(sender.get(), group, w.data(), w.size());
    if (!err.empty()) say(LogLevel::warn, "announce", "cannot announce on the multicast group: " + err);
}

// With the key's secret, a datagram the core acts on must be sealed with it
// (docs/SECURITY.md §6): a refusal is counted and logged per reason.
bool Core::Impl::authentic(const char* data, std::size_t size, const discovery::Message& m, const sockaddr_in& from) {
    if (!guard) return true;
    const auto v = guard->check(data, size, m, net::wall_clock_ms());
    if (v.authentic()) return true;
    count(&CoreCounters::datagrams_refused);
    const bool query = m.type() == "query";
    say(LogLevel::warn, m.type() + " " + net::to_string(v.check),
        "a '" + m.type() + "' datagram from " + net::to_string(from) +
            (query ? " (node " + shown(discovery::get_str(m.root(), "node").value_or("?")) + ")" : std::string()) +
            " is not authentic: " + guard->explain(v) +
            (query ? "; answered all the same (the answer says no more than the announcement does)"
                   : "; ignored") +
            " (" + std::to_string(counters.datagrams_refused) + " refused so far; docs/SECURITY.md §6)");
    return false;
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
            (void)authentic(buf, static_cast<std::size_t>(n), *m, from);
            const auto w = core_datagram(*this, "core");
            const auto err = net::send_to(sender.get(), from, w.data(), w.size());
            if (!err.empty()) log.debug("cannot answer " + net::to_string(from) + ": " + err);
            count(&CoreCounters::queries_answered);
        } else if (t == "announce") {
            const auto other = discovery::get_u64(m->root(), "instance").value_or(0);
            if (*key != opt.key || other == instance) continue;
            if (!authentic(buf, static_cast<std::size_t>(n), *m, from)) continue;  // no "another core" for a forgery
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
            connections.accepted(fd, now);
            if (peers.size() < 4096) peers[fd] = peer_of(fd);
        } else if (what == ZMQ_EVENT_DISCONNECTED) {
            connections.gone(fd);
            auto peer = peers.find(fd);
            if (handshake_failed) {
                // ZeroMQ names no peer in a handshake event; the connection it
                // then closes is the one that failed.
                handshake_failed = false;
                count(&CoreCounters::handshakes_refused);
                const std::string who = peer != peers.end() && !peer->second.empty() ? peer->second : "an unknown address";
                say(LogLevel::warn, "handshake",
                    "refused a connection from " + who + ": its " + (security.secured() ? "CURVE " : "") +
                        "handshake failed (" +
                        (security.secured() ? "it has no secret for key '" + opt.key + "', or another one"
                                            : "it expects a secured core, but this core has no secret for key '" + opt.key + "'") +
                        ") (" + std::to_string(counters.handshakes_refused) + " so far)");
            }
            if (peer != peers.end()) peers.erase(peer);
        } else if (what == ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL || what == ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL ||
                   what == ZMQ_EVENT_HANDSHAKE_FAILED_AUTH) {
            handshake_failed = true;
        }
    }
    reap_connections(now);
}

// Connections that carry no session hello_timeout after they opened are
// closed, whatever they asked (a tool's `list` takes well under a second),
// and the oldest such ones at once when there are too many: connections
// cannot exhaust the core's file descriptors, nor keep unread answers.
void Core::Impl::reap_connections(Clock::time_point now) {
    for (const int fd : connections.to_close(now, opt.hello_timeout, opt.max_connections)) {
        ::shutdown(fd, SHUT_RDWR);  // ZeroMQ sees the end and cleans up
        count(&CoreCounters::connections_closed);
        say(LogLevel::warn, "idle connection",
            "closed a connection that carried no node " + std::to_string(opt.hello_timeout.count()) +
                " ms after it opened (" + std::to_string(counters.connections_closed) + " so far)");
    }
}

// ---- requests --------------------------------------------------------------------

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
            table.reply_error(request.route, request.req_envelope, 0, "malformed", why);
            continue;
        }
        // Where to answer, and whether the connection carries a node (else it is reaped in time).
        const int fd = zmq_msg_get(request.body->handle(), ZMQ_SRCFD);
        const auto now = Clock::now();
        if (fd >= 0) connections.spoke(fd, request.route, table.carries(request.route), now);
        try {
            handle(request, *m);
        } catch (const std::exception& e) {  // whatever a handler throws: counted like a malformed message
            count(&CoreCounters::malformed_messages);
            table.reply_error(request.route, request.req_envelope, 0, "malformed", e.what());
        }
        if (fd >= 0) connections.spoke(fd, request.route, table.carries(request.route), now);
    }
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
            table.reply_error(route, env, 0, "wrong_key",
                              "geckocore at " + endpoint + " on " + host + " serves key '" + opt.key + "', not '" +
                                  shown(*key) + "'");
            return;
        }
        CoreFigures figures;
        {
            std::lock_guard<std::mutex> lock(mutex);
            figures.counters = counters;
        }
        figures.duplicate_instances = duplicates.size();
        figures.uptime = std::chrono::duration_cast<milliseconds>(now - started);
        // Answers nobody reads stay in the core until their connection goes:
        // all connections together may hold max_queued_total of them.
        if (const auto unread = connections.unread_total(); unread > opt.max_queued_total) {
            count(&CoreCounters::answers_dropped);
            table.reply_error(route, env, 0, "busy",
                              "geckocore holds " + std::to_string(unread) +
                                  " bytes of answers its peers have not read; ask again later");
            return;
        }
        answer(route, env, list_answer(table, me, figures, root, now));
        return;
    }
    const auto sid = discovery::get_u64(root, "s");
    if (!sid || *sid == 0) {  // a session id is non-zero (0 names no session in the core's answers)
        count(&CoreCounters::malformed_messages);
        table.reply_error(route, env, 0, "malformed",
                          !sid ? "'" + t + "' without a session id 's'" : "'" + t + "' with session id 0 (session ids are non-zero)");
        return;
    }
    const Origin from{route, env, request.peer_address};
    if (t == "hello")
        table.hello(from, root, *sid, now);
    else
        table.handle(from, t, root, *sid, now);
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
    Clock::time_point next_claims_write = now;
    Clock::time_point claims_refresh = now + std::chrono::minutes(1);
    const Clock::time_point warm_until = started + opt.lease;

    while (!stopping) {
        now = Clock::now();
        if (sender && now >= next_announce) {
            announce();
            ++quick_sent;
            next_announce = quick_sent < std::size(quick) ? started + quick[quick_sent] : now + opt.announce_period;
        }
        if (table.warm() && now >= warm_until) {
            // Every node had a lease to re-register: from now on peer sets are complete.
            table.end_warm_up();
            log.info("warm-up over: table complete with " + std::to_string(table.sessions().size()) + " nodes and " +
                     std::to_string(table.entities().size()) + " entities");
        }
        const bool check_pids = now >= next_pid_check;
        if (now >= next_lease_check || check_pids) {
            table.expire(now, check_pids);
            next_lease_check = now + std::min(milliseconds(100), opt.lease / 4);
            if (check_pids) next_pid_check = now + opt.pid_check_period;
        }
        if (now >= next_reap) {
            reap_connections(now);
            limiter.flush(now, [&](const std::string& reason, std::uint64_t held) {
                log.info(std::to_string(held) + " more '" + reason + "' lines held back (the counters in `gecko list` have them)");
            });
            next_reap = now + milliseconds(1000);
        }
        // The claims after a change, and once a minute anyway: a file not
        // written for ten minutes is taken for one of a core long gone.
        if (!claims_file.empty() && now >= next_claims_write &&
            (table.changes() != claims_written || now >= claims_refresh)) {
            if (const auto why = write_claims(claims_file, table.claims()); !why.empty())
                say(LogLevel::warn, "claims", "cannot keep the claims for the next run: " + why);
            claims_written = table.changes();
            next_claims_write = now + milliseconds(200);
            claims_refresh = now + std::chrono::minutes(1);
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
        if (!claims_file.empty())
            wake = std::min(wake, table.changes() != claims_written ? next_claims_write : claims_refresh);
        if (table.warm()) wake = std::min(wake, warm_until);

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

std::string Core::secured_fingerprint() const { return impl_->security.fingerprint(); }
std::string Core::accepted_fingerprint() const { return impl_->security.accepted_fingerprint(); }
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
