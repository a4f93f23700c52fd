// SPDX-License-Identifier: Apache-2.0
#include "discovery/discovery_client.hpp"

#include "discovery/finder.hpp"
#include "discovery/net.hpp"
#include "discovery/protocol.hpp"
#include "gecko/error.hpp"
#include "gecko/log.hpp"

#include <zmq.hpp>

#include <arpa/inet.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

namespace gecko::detail {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// ---- options -------------------------------------------------------------------

bool parse_multicast(const std::string& text, std::string& group, std::uint16_t& port) {
    const auto colon = text.rfind(':');
    std::string g = text.substr(0, colon);
    std::uint16_t p = wire::default_multicast_port;
    if (colon != std::string::npos) {
        const std::string ps = text.substr(colon + 1);
        if (ps.empty() || ps.size() > 5 || ps.find_first_not_of("0123456789") != std::string::npos) return false;
        const unsigned long v = std::stoul(ps);
        if (v == 0 || v > 65535) return false;
        p = static_cast<std::uint16_t>(v);
    }
    const auto a = net::parse_ipv4(g);
    if (!a || !IN_MULTICAST(ntohl(a->s_addr))) return false;
    group = g;
    port = p;
    return true;
}

std::string normalize_core_address(const std::string& text) {
    if (text.empty()) return "";
    std::string host;
    std::uint16_t port = 0;
    if (text.rfind("tcp://", 0) == 0) return net::split_tcp_endpoint(text, host, port) && port != 0 ? text : "";
    if (text.find("://") != std::string::npos) return "";
    const auto colon = text.rfind(':');
    if (colon == std::string::npos) return "tcp://" + text + ":" + std::to_string(wire::default_core_port);
    const std::string candidate = "tcp://" + text;
    return net::split_tcp_endpoint(candidate, host, port) && port != 0 ? candidate : "";
}

DiscoveryOptions DiscoveryOptions::from_env() {
    DiscoveryOptions o;
    auto env = [](const char* name) -> std::string {
        const char* v = std::getenv(name);
        return v ? v : "";
    };
    if (auto v = env("GECKO_KEY"); !v.empty()) o.key = v;
    if (auto v = env("GECKO_CORE"); !v.empty()) {
        if (normalize_core_address(v).empty())
            throw Error(Errc::invalid_argument, "GECKO_CORE='" + v + "' is not host, host:port or tcp://host:port");
        o.core = v;
    }
    if (auto v = env("GECKO_MULTICAST"); !v.empty()) {
        if (!parse_multicast(v, o.multicast_group, o.multicast_port))
            throw Error(Errc::invalid_argument, "GECKO_MULTICAST='" + v + "' is not GROUP[:PORT] with GROUP in 224.0.0.0/4");
    }
    if (auto v = env("GECKO_INTERFACE"); !v.empty()) o.interface = v;
    if (auto v = env("GECKO_NO_MULTICAST"); !v.empty() && v != "0") o.multicast = false;
    return o;
}

// ---- the client -----------------------------------------------------------------

namespace {

std::string read_pid_namespace() {
    char buf[128] = {};
    const auto n = ::readlink("/proc/self/ns/pid", buf, sizeof buf - 1);
    return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string();
}

bool same_peers(const std::vector<Peer>& a, const std::vector<Peer>& b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i) {
        const auto& x = a[i];
        const auto& y = b[i];
        if (x.reg.id != y.reg.id || x.reg.endpoints != y.reg.endpoints || x.reg.type_name != y.reg.type_name ||
            x.node != y.node || x.host != y.host || x.host_id != y.host_id || x.pid != y.pid)
            return false;
    }
    return true;
}

}  // namespace

struct DiscoveryClient::Impl {
    explicit Impl(DiscoveryOptions o) : opt(std::move(o)), log(opt.node.empty() ? "gecko.discovery" : opt.node) {}

    DiscoveryOptions opt;
    Logger log;
    const std::string host = net::hostname();
    const std::string host_id = net::host_id();
    const std::int32_t pid = static_cast<std::int32_t>(::getpid());
    const std::string pid_ns = read_pid_namespace();
    const std::uint64_t session = net::random_id();
    std::thread thread;
    std::atomic<bool> stopping{false};
    net::Fd wake_read, wake_write;

    // Commands from the API, run on the discovery thread in order.
    std::mutex command_mutex;
    std::vector<std::function<void()>> commands;

    // State readable from other threads.
    mutable std::mutex state_mutex;
    std::condition_variable state_cv;
    std::atomic<bool> acked{false};
    std::atomic<std::uint64_t> instance{0};
    std::string core_endpoint;   // the one the DEALER is connected to
    std::string attempts;        // CoreFinder::describe(), refreshed by the thread

    // Thread-only state.
    struct Watch {
        std::function<void(const std::vector<Peer>&)> callback;
        std::vector<Peer> peers;  // sorted by id
        bool known = false;       // a core told us at least once
        bool delivered = false;   // the callback saw `peers`
    };
    std::map<std::uint64_t, Registration> registrations;
    std::map<std::uint64_t, Watch> watches;
    std::function<void(std::uint64_t, const std::string&)> error_callback;
    std::vector<TopicStats> stats;
    bool stats_pending = false;

    std::optional<CoreFinder> finder;
    zmq::context_t context{1};
    std::optional<zmq::socket_t> dealer;
    Clock::time_point search_started{};
    Clock::time_point last_rx{};
    Clock::time_point next_hello{};
    Clock::time_point next_heartbeat{};
    Clock::time_point next_stats{};
    Clock::time_point next_probe{};
    Clock::time_point connected_at{};
    milliseconds heartbeat_period{1000};
    milliseconds core_lease{3000};
    bool warned = false;
    std::set<std::uint64_t> other_cores_warned;  // instances of other cores for our key, warned about once
    bool hello_unsent = false;  // the last hello was not queued (ZMQ_IMMEDIATE: no connection yet)
    bool wrong_key = false;  // the explicit core serves another key: keep saying so
    bool via_door = false;   // core_endpoint came from the host door's redirect: go back there when it is lost
    bool door_warned = false;
    bool ever_acked = false;
    std::uint64_t malformed = 0;

    void post(std::function<void()> f) {
        {
            std::lock_guard<std::mutex> lock(command_mutex);
            commands.push_back(std::move(f));
        }
        const char c = 1;
        [[maybe_unused]] auto n = ::write(wake_write.get(), &c, 1);
    }

    void run();
    void connect_to(const std::string& endpoint, Clock::time_point now);
    bool send(const wire::Writer& w);
    bool send_hello();
    void send_add(const Registration& r);
    void send_stats();
    void on_message(const zmq::message_t& msg, Clock::time_point now);
    void on_peers(const msgpack::object& root);
    void on_redirect(const msgpack::object& root, Clock::time_point now);
    void deliver(std::uint64_t id, Watch& w);
    void lose_core(Clock::time_point now, const std::string& why);
    void register_again(Clock::time_point now);
    void refresh_attempts();
    std::string describe_attempts_copy() const {
        std::lock_guard<std::mutex> lock(state_mutex);
        return attempts;
    }
    std::string local_endpoint_for(const std::string& bound) const;
};

void DiscoveryClient::Impl::refresh_attempts() {
    std::string text = finder->describe();
    std::lock_guard<std::mutex> lock(state_mutex);
    attempts = std::move(text);
}

bool DiscoveryClient::Impl::send(const wire::Writer& w) {
    if (!dealer) return false;
    try {
        return dealer->send(zmq::const_buffer(w.data(), w.size()), zmq::send_flags::dontwait).has_value();
    } catch (const zmq::error_t& e) {
        log.debug(std::string("discovery send failed: ") + e.what());
        return false;
    }
}

bool DiscoveryClient::Impl::send_hello() {
    wire::Writer w("hello", 9);
    w.kv("s", session);
    w.kv("key", opt.key);
    w.kv("node", opt.node);
    w.kv("host", host);
    w.kv("hostid", host_id);
    w.kv("pid", pid);
    w.kv("pidns", pid_ns);
    w.kv("lease_ms", static_cast<std::int64_t>(opt.lease.count()));
    w.key("ids");
    w.packer().pack_array(static_cast<std::uint32_t>(registrations.size()));
    for (const auto& [id, r] : registrations) w.packer().pack(id);
    return send(w);
}

void DiscoveryClient::Impl::send_add(const Registration& r) {
    Registration sent = r;
    for (auto& e : sent.endpoints) e = local_endpoint_for(e);
    wire::Writer w("add", 6);
    w.kv("s", session);
    wire::pack_registration_fields(w.packer(), sent);
    send(w);
}

void DiscoveryClient::Impl::send_stats() {
    wire::Writer w("stats", 2);
    w.kv("s", session);
    w.key("stats");
    w.packer().pack_array(static_cast<std::uint32_t>(stats.size()));
    for (const auto& s : stats) wire::pack_stats(w.packer(), s);
    send(w);
    stats_pending = false;
}

void DiscoveryClient::Impl::connect_to(const std::string& endpoint, Clock::time_point now) {
    if (dealer && endpoint == core_endpoint) return;
    via_door = false;
    try {
        zmq::socket_t s(context, zmq::socket_type::dealer);
        s.set(zmq::sockopt::linger, 0);
        s.set(zmq::sockopt::immediate, 1);  // never queue for a core that is not there
        s.set(zmq::sockopt::maxmsgsize, wire::max_zmq_message);
        s.set(zmq::sockopt::reconnect_ivl, 100);
        s.set(zmq::sockopt::reconnect_ivl_max, 0);  // no back-off: a restarted core is found within 100 ms
        s.connect(endpoint);
        dealer = std::move(s);
    } catch (const zmq::error_t& e) {
        finder->note_unicast(std::string("cannot connect: ") + e.what());
        log.warn("discovery: cannot connect to " + endpoint + ": " + e.what());
        return;
    }
    {
        std::lock_guard<std::mutex> lock(state_mutex);
        core_endpoint = endpoint;
    }
    acked = false;
    connected_at = now;
    next_hello = now;
    next_probe = now + milliseconds(500);
    log.debug("discovery: connecting to geckocore at " + endpoint);
}

// The core answers but must hear our registrations again (it restarted, or
// expired our lease): at once, and with a fresh search clock, so that the
// "no geckocore yet" warning only comes if this takes find_timeout.
void DiscoveryClient::Impl::register_again(Clock::time_point now) {
    acked = false;
    search_started = now;
    warned = false;
    next_hello = now;
}

void DiscoveryClient::Impl::lose_core(Clock::time_point now, const std::string& why) {
    if (acked) log.warn("discovery: lost geckocore at " + core_endpoint + " (" + why + "); keeping the known peers and searching again");
    // A core found through the host door may come back on another port: ask the door again.
    if (via_door) connect_to(finder->explicit_endpoint(), now);
    acked = false;
    instance = 0;
    search_started = now;
    warned = false;
    next_hello = now;
    finder->restart();
}

void DiscoveryClient::Impl::deliver(std::uint64_t id, Watch& w) {
    (void)id;
    if (!w.callback || !w.known) return;
    w.delivered = true;
    try {
        w.callback(w.peers);
    } catch (const std::exception& e) {
        log.error(std::string("discovery: peer callback threw: ") + e.what());
    }
}

void DiscoveryClient::Impl::on_peers(const msgpack::object& root) {
    const auto id = wire::get_u64(root, "id");
    const auto* list = wire::find(root, "peers");
    if (!id || !list || list->type != msgpack::type::ARRAY) {
        ++malformed;
        return;
    }
    if (registrations.find(*id) == registrations.end()) return;  // removed meanwhile
    std::vector<Peer> fresh;
    for (std::uint32_t i = 0; i < list->via.array.size; ++i) {
        if (auto p = wire::read_peer(list->via.array.ptr[i])) fresh.push_back(std::move(*p));
    }
    auto& w = watches[*id];
    std::map<std::uint64_t, Peer> merged;
    // During a core's warm-up (`partial`), its table may still lack peers whose
    // nodes have not re-registered yet: add what it reports, remove only what it
    // says is gone, never infer a departure from an absence.
    if (wire::get_bool(root, "partial", false)) {
        for (auto& p : w.peers) merged.emplace(p.reg.id, p);
        if (auto gone = wire::find(root, "gone"); gone && gone->type == msgpack::type::ARRAY) {
            for (std::uint32_t i = 0; i < gone->via.array.size; ++i)
                if (gone->via.array.ptr[i].type == msgpack::type::POSITIVE_INTEGER) merged.erase(gone->via.array.ptr[i].via.u64);
        }
    }
    for (auto& p : fresh) merged[p.reg.id] = std::move(p);
    std::vector<Peer> next;
    next.reserve(merged.size());
    for (auto& [pid_, p] : merged) next.push_back(std::move(p));
    const bool changed = !w.known || !same_peers(w.peers, next);
    w.peers = std::move(next);
    w.known = true;
    if (changed || !w.delivered) deliver(*id, w);
}

void DiscoveryClient::Impl::on_message(const zmq::message_t& msg, Clock::time_point now) {
    std::string why;
    auto m = wire::Message::parse(static_cast<const char*>(msg.data()), msg.size(), &why);
    if (!m) {
        ++malformed;
        log.debug("discovery: ignored malformed message from the core: " + why);
        return;
    }
    last_rx = now;
    const auto& root = m->root();
    const auto& t = m->type();
    const auto inst = wire::get_u64(root, "instance").value_or(0);
    if (t == "welcome") {
        const bool restarted = ever_acked && inst != instance;
        instance = inst;
        core_lease = milliseconds(wire::get_i64(root, "lease_ms").value_or(opt.lease.count()));
        heartbeat_period = std::max(milliseconds(50), std::min(opt.lease, core_lease) / 3);
        for (const auto& [id, r] : registrations) send_add(r);
        if (!stats.empty()) send_stats();
        next_heartbeat = now + heartbeat_period;
        next_stats = now + milliseconds(3000);
        finder->note_unicast(core_endpoint == finder->explicit_endpoint() ? "answered" : "");
        if (restarted)
            log.info("discovery: geckocore restarted (instance " + std::to_string(inst) + "); re-registered " +
                     std::to_string(registrations.size()) + " entities");
        else if (warned)
            log.info("discovery: found geckocore for key '" + opt.key + "' at " + core_endpoint);
        else if (!ever_acked)
            log.debug("discovery: registered with geckocore at " + core_endpoint);
        ever_acked = true;
        {
            std::lock_guard<std::mutex> lock(state_mutex);
            acked = true;
        }
        state_cv.notify_all();
        refresh_attempts();
    } else if (t == "unknown") {
        // The core does not know us: it restarted, or expired our lease.
        if (acked) log.info("discovery: geckocore does not know this node (restart?); registering again");
        register_again(now);
    } else if (t == "hb") {
        if (acked && inst != 0 && inst != instance) register_again(now);
    } else if (t == "peers") {
        on_peers(root);
    } else if (t == "redirect") {
        on_redirect(root, now);
    } else if (t == "error") {
        const auto id = wire::get_u64(root, "id").value_or(0);
        const auto code = wire::get_str(root, "code").value_or("error");
        const auto text = wire::get_str(root, "message").value_or("(no message)");
        if (code == "no_core") {  // the host door knows no core of our key (yet): keep asking it
            if (!door_warned) log.warn("discovery: " + text + "; waiting for it to start");
            door_warned = true;
            finder->note_unicast("the host door there: " + text);
            refresh_attempts();
            return;
        }
        if (code == "wrong_key") {
            if (!wrong_key) log.error("discovery: " + text);
            wrong_key = true;
            finder->note_unicast("the core there serves another key: " + text);
            refresh_attempts();
            return;
        }
        // An error about one of our entities goes to its owner, who logs it once;
        // only the rest is logged here.
        if (!error_callback || id == 0) log.warn("discovery: geckocore reports " + code + ": " + text);
        if (error_callback && id != 0) {
            try {
                error_callback(id, text);
            } catch (const std::exception& e) {
                log.error(std::string("discovery: error callback threw: ") + e.what());
            }
        }
    }
}

// The host door (the well-known port of GECKO_CORE=host) names the core of our
// key on that host: connect there, and come back to the door if it is lost.
void DiscoveryClient::Impl::on_redirect(const msgpack::object& root, Clock::time_point now) {
    const auto door = finder->explicit_endpoint();
    if (door.empty() || core_endpoint != door) return;  // only the door we asked redirects us
    const auto target = wire::redirect_target(root, door);
    if (!target) {
        ++malformed;
        return;
    }
    if (target->loopback_only) {
        finder->note_unicast("the core of key '" + opt.key + "' on that host listens on loopback only (" + target->endpoint + ")");
        refresh_attempts();
        return;
    }
    finder->note_unicast("the host door sent us to " + target->endpoint);
    log.debug("discovery: the host door at " + door + " sends us to " + target->endpoint);
    connect_to(target->endpoint, now);
    via_door = true;
    door_warned = false;
    refresh_attempts();
}

std::string DiscoveryClient::Impl::local_endpoint_for(const std::string& bound) const {
    std::string h;
    std::uint16_t port = 0;
    if (!net::split_tcp_endpoint(bound, h, port) || !net::is_wildcard_host(h)) return bound;
    std::string core;
    {
        std::lock_guard<std::mutex> lock(state_mutex);
        core = core_endpoint;
    }
    std::optional<in_addr> local;
    std::string ch;
    std::uint16_t cp = 0;
    if (net::split_tcp_endpoint(core, ch, cp)) {
        if (auto a = net::resolve_ipv4(ch); a && !net::is_loopback(*a)) local = net::local_address_towards(*a);
    }
    if (!local && !opt.interface.empty()) {
        if (auto a = net::interface_address(opt.interface); a && a->s_addr != htonl(INADDR_ANY)) local = a;
    }
    if (!local) {
        if (auto g = net::parse_ipv4(opt.multicast_group)) local = net::local_address_towards(*g);
    }
    if (!local) {
        if (auto a = net::resolve_ipv4(host); a && !net::is_loopback(*a)) local = a;
    }
    const std::string addr = local ? net::to_string(*local) : std::string("127.0.0.1");
    return "tcp://" + addr + ":" + std::to_string(port);
}

void DiscoveryClient::Impl::run() {
    auto now = Clock::now();
    search_started = now;
    finder.emplace(opt);
    if (!opt.multicast && !finder->explicit_endpoint().empty()) connect_to(finder->explicit_endpoint(), now);
    refresh_attempts();

    while (!stopping) {
        now = Clock::now();
        std::vector<std::function<void()>> todo;
        {
            std::lock_guard<std::mutex> lock(command_mutex);
            todo.swap(commands);
        }
        for (auto& f : todo) f();

        Clock::time_point wake = now + milliseconds(200);
        if (!acked) {
            if (finder->multicast_enabled()) wake = std::min(wake, finder->tick(now));
            const bool fallback_due = !finder->multicast_enabled() || now - search_started >= opt.find_timeout;
            if (!dealer && fallback_due && !finder->explicit_endpoint().empty()) connect_to(finder->explicit_endpoint(), now);
            // With a fallback address that is only tried after the multicast
            // search, give it find_timeout of its own before warning.
            const bool fallback_later = finder->multicast_enabled() && !finder->explicit_endpoint().empty();
            if (!warned && now - search_started >= (fallback_later ? 2 * opt.find_timeout : opt.find_timeout)) {
                warned = true;
                refresh_attempts();
                log.warn("discovery: no geckocore for key '" + opt.key + "' yet (" + describe_attempts_copy() + "); still trying");
            }
            if (dealer && now >= next_hello) {
                hello_unsent = !send_hello();
                next_hello = now + (now - connected_at < milliseconds(1000) ? milliseconds(50) : milliseconds(250));
            }
            wake = std::min(wake, next_hello);
            // A core the door sent us to that does not answer (it just exited, the
            // door's entry is stale): ask the door again.
            if (dealer && via_door && now - connected_at >= opt.find_timeout) connect_to(finder->explicit_endpoint(), now);
            if (dealer && !wrong_key && core_endpoint == finder->explicit_endpoint() && now >= next_probe) {
                std::string h;
                std::uint16_t p = 0;
                if (net::split_tcp_endpoint(core_endpoint, h, p)) {
                    const auto r = net::tcp_probe(h, p, milliseconds(100));
                    finder->note_unicast(r.empty() ? "TCP connects but no geckocore answers" : r);
                    refresh_attempts();
                }
                next_probe = now + std::max(opt.find_timeout, milliseconds(500));
            }
        } else {
            if (now - last_rx > std::max(opt.lease, core_lease)) {
                lose_core(now, "no answer for " + std::to_string(std::max(opt.lease, core_lease).count()) + " ms");
                continue;
            }
            if (now >= next_heartbeat) {
                wire::Writer w("hb", 1);
                w.kv("s", session);
                send(w);
                next_heartbeat = now + heartbeat_period;
            }
            if (now >= next_stats) {
                if (stats_pending) send_stats();
                next_stats = now + milliseconds(3000);
            }
            wake = std::min({wake, next_heartbeat, next_stats});
        }

        zmq::pollitem_t items[4] = {};
        int n = 0;
        items[n++] = {nullptr, wake_read.get(), ZMQ_POLLIN, 0};
        const int dealer_at = dealer ? n : -1;
        // Until a hello is queued, also wait for the connection (POLLOUT) so the hello goes out at once.
        if (dealer) items[n++] = {dealer->handle(), 0, static_cast<short>(ZMQ_POLLIN | (!acked && hello_unsent ? ZMQ_POLLOUT : 0)), 0};
        const int query_at = finder->query_fd() >= 0 ? n : -1;
        if (query_at >= 0) items[n++] = {nullptr, finder->query_fd(), ZMQ_POLLIN, 0};
        const int listen_at = finder->listen_fd() >= 0 ? n : -1;
        if (listen_at >= 0) items[n++] = {nullptr, finder->listen_fd(), ZMQ_POLLIN, 0};
        const auto timeout = std::chrono::duration_cast<milliseconds>(wake - Clock::now());
        try {
            zmq::poll(items, static_cast<std::size_t>(n), std::max(milliseconds(0), timeout));
        } catch (const zmq::error_t& e) {
            if (e.num() != EINTR) log.warn(std::string("discovery: poll failed: ") + e.what());
            continue;
        }
        now = Clock::now();
        if (items[0].revents & ZMQ_POLLIN) {
            char buf[64];
            while (::read(wake_read.get(), buf, sizeof buf) > 0) {
            }
        }
        if (dealer_at >= 0 && (items[dealer_at].revents & ZMQ_POLLOUT) && hello_unsent) next_hello = now;
        if (dealer_at >= 0 && (items[dealer_at].revents & ZMQ_POLLIN)) {
            for (int budget = 256; budget > 0 && dealer; --budget) {
                zmq::message_t msg;
                if (!dealer->recv(msg, zmq::recv_flags::dontwait)) break;
                while (msg.more()) {  // a DEALER peer sends one frame; skip anything else
                    zmq::message_t rest;
                    if (!dealer->recv(rest, zmq::recv_flags::dontwait)) break;
                    ++malformed;
                    msg = std::move(rest);
                }
                on_message(msg, now);
            }
        }
        for (int at : {query_at, listen_at}) {
            if (at < 0 || !(items[at].revents & ZMQ_POLLIN)) continue;
            for (const auto& answer : finder->read(static_cast<int>(items[at].fd))) {
                if (answer.endpoint != core_endpoint) {
                    if (!acked) {
                        connect_to(answer.endpoint, now);
                    } else if (answer.instance != instance && other_cores_warned.insert(answer.instance).second) {
                        log.warn("discovery: a second geckocore for key '" + opt.key + "' answers at " +
                                 answer.endpoint + "; this node uses the one at " + core_endpoint +
                                 ". Nodes may be split between them and not see each other: stop one "
                                 "(gecko doctor --key " + opt.key + " lists both)");
                    }
                } else if (acked && answer.instance != instance) {
                    register_again(now);  // same address, new core
                }
            }
            refresh_attempts();
        }
    }

    // Withdraw everything, bounded: the core drops our session on "bye".
    if (dealer && acked) {
        wire::Writer w("bye", 1);
        w.kv("s", session);
        dealer->set(zmq::sockopt::linger, 200);
        send(w);
    }
    dealer.reset();
}

// ---- public API ------------------------------------------------------------------

DiscoveryClient::DiscoveryClient(DiscoveryOptions options) {
    if (!options.core.empty() && normalize_core_address(options.core).empty())
        throw Error(Errc::invalid_argument, "core address '" + options.core + "' is not host, host:port or tcp://host:port");
    if (options.lease.count() <= 0) throw Error(Errc::invalid_argument, "discovery lease must be positive");
    impl_ = std::make_unique<Impl>(std::move(options));
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) throw Error(Errc::transport, "discovery: pipe2 failed");
    impl_->wake_read = net::Fd(fds[0]);
    impl_->wake_write = net::Fd(fds[1]);
    impl_->thread = std::thread([impl = impl_.get()] {
        try {
            impl->run();
        } catch (const std::exception& e) {
            impl->log.error(std::string("discovery thread stopped: ") + e.what());
        }
    });
}

DiscoveryClient::~DiscoveryClient() {
    impl_->stopping = true;
    impl_->post([] {});
    if (impl_->thread.joinable()) impl_->thread.join();
}

void DiscoveryClient::add(const Registration& r) {
    impl_->post([impl = impl_.get(), r] {
        impl->registrations[r.id] = r;
        if (impl->acked) impl->send_add(r);
    });
}

void DiscoveryClient::remove(std::uint64_t id) {
    impl_->post([impl = impl_.get(), id] {
        impl->registrations.erase(id);
        impl->watches.erase(id);
        if (impl->acked) {
            wire::Writer w("remove", 2);
            w.kv("s", impl->session);
            w.kv("id", id);
            impl->send(w);
        }
    });
}

void DiscoveryClient::watch(std::uint64_t id, std::function<void(const std::vector<Peer>&)> on_peers) {
    impl_->post([impl = impl_.get(), id, cb = std::move(on_peers)]() mutable {
        auto& w = impl->watches[id];
        w.callback = std::move(cb);
        w.delivered = false;
        impl->deliver(id, w);  // at once if a core already told us
    });
}

void DiscoveryClient::on_error(std::function<void(std::uint64_t, const std::string&)> cb) {
    impl_->post([impl = impl_.get(), cb = std::move(cb)]() mutable { impl->error_callback = std::move(cb); });
}

void DiscoveryClient::report(std::vector<TopicStats> stats) {
    impl_->post([impl = impl_.get(), stats = std::move(stats)]() mutable {
        impl->stats = std::move(stats);
        impl->stats_pending = true;
    });
}

bool DiscoveryClient::wait_for_core(std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(impl_->state_mutex);
    return impl_->state_cv.wait_for(lock, timeout, [&] { return impl_->acked.load(); });
}

bool DiscoveryClient::connected() const noexcept { return impl_->acked; }

std::string DiscoveryClient::describe_attempts() const { return impl_->describe_attempts_copy(); }

std::string DiscoveryClient::local_endpoint_for(const std::string& bound) const { return impl_->local_endpoint_for(bound); }

std::uint64_t DiscoveryClient::session() const noexcept { return impl_->session; }

std::uint64_t DiscoveryClient::core_instance() const noexcept { return impl_->instance; }

}  // namespace gecko::detail
