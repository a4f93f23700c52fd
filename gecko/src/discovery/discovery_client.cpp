// SPDX-License-Identifier: Apache-2.0
#include "discovery/discovery_client_impl.hpp"

#include "discovery/core_security.hpp"

namespace gecko::detail {


void DiscoveryClient::Impl::refresh_attempts() {
    std::string text = finder->describe();
    std::lock_guard<std::mutex> lock(state_mutex);
    attempts = std::move(text);
}

bool DiscoveryClient::Impl::send(const discovery::Writer& w) { return channel && channel->send(w.data(), w.size()); }

void DiscoveryClient::Impl::leave_channel() {
    if (!channel) return;
    const int fd = channel->fd();
    if (std::find(watched.begin(), watched.end(), fd) != watched.end()) {
        reactor->unwatch(fd);  // before it may close: a new socket may get the same fd number
        watched.erase(std::remove(watched.begin(), watched.end(), fd), watched.end());
    }
    channel->leave(session);
    channel.reset();
    std::lock_guard<std::mutex> lock(inbox->mutex);
    inbox->messages.clear();  // the old core's words
}

std::vector<std::uint64_t> DiscoveryClient::Impl::ids() const {
    std::vector<std::uint64_t> out;
    out.reserve(registrations.size());
    for (const auto& [id, r] : registrations) out.push_back(id);
    return out;
}

bool DiscoveryClient::Impl::send_hello() {
    // A secured node names its secret, so that during a rotation its peers
    // know which server key to expect of it (docs/SECURITY.md §9).
    discovery::Writer w("hello", secured() ? 13 : 12);
    w.kv("s", session);
    w.kv("secret", secret);
    w.kv("key", opt.key);
    w.kv("node", opt.node);
    w.kv("host", host);
    w.kv("hostid", host_id);
    w.kv("pid", pid);
    w.kv("pidns", pid_ns);
    w.kv("lease_ms", static_cast<std::int64_t>(opt.lease.count()));
    w.kv("ids", ids());
    std::vector<std::string> locators;
    for (const auto& l : opt.locators) locators.push_back(local_endpoint_for(l));
    w.kv("locators", locators);
    w.kv("tool", false);
    if (secured()) w.kv("fp", opt.curve->fingerprint);
    return send(w);
}

void DiscoveryClient::Impl::send_door_question() {
    discovery::Writer w("list", 1);  // the door redirects any question that names a key
    w.kv("key", opt.key);
    hello_unsent = !send(w);
}

void DiscoveryClient::Impl::send_add(const Registration& r) {
    send(discovery::add_message(session, secret, r));
}

void DiscoveryClient::Impl::send_watch_graph() {
    if (!graph_callback) return;
    discovery::Writer w("watch_graph", 2);
    w.kv("s", session);
    w.kv("secret", secret);
    send(w);
}

void DiscoveryClient::Impl::send_watch_directory() {
    if (!directory_callback) return;
    discovery::Writer w("watch_directory", 2);
    w.kv("s", session);
    w.kv("secret", secret);
    send(w);
}

void DiscoveryClient::Impl::send_stats() {
    discovery::Writer w("stats", 4);
    w.kv("s", session);
    w.kv("secret", secret);
    w.key("stats");
    w.packer().pack_array(static_cast<std::uint32_t>(stats.size()));
    for (const auto& s : stats) discovery::pack_stats(w.packer(), s);
    w.key("links");
    w.packer().pack_array(static_cast<std::uint32_t>(links.size()));
    for (const auto& [peer, via] : links) {
        w.packer().pack_map(2);
        w.packer().pack(std::string_view("s"));
        w.packer().pack(peer);
        w.packer().pack(std::string_view("via"));
        w.packer().pack(via);
    }
    send(w);
    stats_pending = false;
}

void DiscoveryClient::Impl::connect_to(const std::string& endpoint, Clock::time_point now,
                                      const std::string& core_fingerprint) {
    if (channel && endpoint == core_endpoint && core_fingerprint == core_secret) return;
    via_door = false;
    // The host door is plain: a secured node asks it over a connection of its own (send_door_question).
    const bool plain_door = door_plain && endpoint == finder->explicit_endpoint();
    try {
        auto joined = CoreChannel::join(endpoint, opt.key, share && !plain_door, session, inbox,
                                        plain_door ? nullptr : opt.curve, core_fingerprint);
        leave_channel();
        channel = std::move(joined);
    } catch (const zmq::error_t& e) {
        finder->note_unicast(std::string("cannot connect: ") + e.what());
        log.warn("discovery: cannot connect to " + endpoint + ": " + e.what());
        return;
    }
    {
        std::lock_guard<std::mutex> lock(state_mutex);
        core_endpoint = endpoint;
    }
    core_secret = core_fingerprint;
    acked = false;
    hellos_sent = 0;
    early_adds = false;
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
    early_adds = false;
    search_started = now;
    warned = false;
    next_hello = now;
}

void DiscoveryClient::Impl::lose_core(Clock::time_point now, const std::string& why) {
    if (acked) log.warn("discovery: lost geckocore at " + core_endpoint + " (" + why + "); keeping the known peers and searching again");
    // A core found through the host door may come back on another port: ask the door again.
    if (via_door) connect_to(finder->explicit_endpoint(), now);
    acked = false;
    early_adds = false;
    instance = 0;
    search_started = now;
    warned = false;
    next_hello = now;
    finder->restart();
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

void DiscoveryClient::Impl::start() {
    const auto now = Clock::now();
    search_started = now;
    finder.emplace(opt);
    if (!opt.multicast && !finder->explicit_endpoint().empty()) connect_to(finder->explicit_endpoint(), now);
    if (finder->multicast_enabled()) finder->tick(now);  // the first query leaves now
    refresh_attempts();
    sync_watches();
}

// The fds the reactor wakes us for: the core link (ZeroMQ's edge-style fd: we
// read until it is empty on every call) and the finder's UDP sockets.
void DiscoveryClient::Impl::sync_watches() {
    std::vector<int> want;
    if (channel) want.push_back(channel->fd());
    if (finder && finder->query_fd() >= 0) want.push_back(finder->query_fd());
    if (finder && finder->listen_fd() >= 0) want.push_back(finder->listen_fd());
    for (int fd : watched)
        if (std::find(want.begin(), want.end(), fd) == want.end()) reactor->unwatch(fd);
    for (std::size_t i = 0; i < want.size(); ++i) {
        if (std::find(watched.begin(), watched.end(), want[i]) != watched.end()) continue;
        // The reactor runs its tick (and so service()) after every handler: nothing to do here.
        reactor->watch(want[i], [] {}, i == 0 && channel != nullptr);
    }
    watched = std::move(want);
}

// What the channel left for us (it routes for every member, whichever reactor reads it).
void DiscoveryClient::Impl::read_inbox(Clock::time_point now) {
    for (int budget = 256; budget > 0 && channel; --budget) {
        zmq::message_t msg;
        {
            std::lock_guard<std::mutex> lock(inbox->mutex);
            if (inbox->messages.empty()) break;
            msg = std::move(inbox->messages.front());
            inbox->messages.pop_front();
        }
        on_message(msg, now);
    }
}

// One turn of the client: what is due is sent, what arrived is read. Returns
// when it wants to run again. Runs on the reactor thread.
Clock::time_point DiscoveryClient::Impl::service(Clock::time_point now) {
    // A core whose security differs is not retried: the node said why, for good.
    if (closed || !finder || !security_error.empty()) return now + std::chrono::hours(1);
    if (channel) channel->route();
    read_inbox(now);
    for (int fd : {finder->query_fd(), finder->listen_fd()}) {
        if (fd < 0) continue;
        for (const auto& answer : finder->read(fd)) {
            if (security_mismatch(answer)) continue;
            if (answer.endpoint != core_endpoint) {
                if (!acked) {
                    connect_to(answer.endpoint, now, answer.fingerprint);
                } else if (answer.instance != instance) {
                    if (other_cores_warned.size() >= 64) other_cores_warned.clear();
                    std::string more;
                    if (other_cores_warned.insert(answer.instance).second &&
                        other_cores_said.admit("second core", LogLimiter::Clock::now(), &more))
                        log.warn("discovery: a second geckocore for key '" + opt.key + "' answers at " +
                                 wire::printable(answer.endpoint) + "; this node uses the one at " + core_endpoint +
                                 ". Nodes may be split between them and not see each other: stop one "
                                 "(gecko doctor --key " + opt.key + " lists both)" + more);
                }
            } else if (acked && answer.instance != instance) {
                register_again(now);  // same address, new core
            }
            refresh_attempts();
        }
    }

    // A secured node hears only sealed datagrams: a refused plain or
    // other-secret core, with no authentic one since, is the sign.
    if (!acked && !channel && secured())
        if (auto why = refused_core_verdict(opt.key, *finder, opt.secret_path, now, opt.find_timeout); !why.empty()) {
            fail_security(why);
            return now + std::chrono::hours(1);
        }
    Clock::time_point wake = now + milliseconds(200);
    if (!acked && channel) check_handshakes();
    if (!acked) {
        if (finder->multicast_enabled()) wake = std::min(wake, finder->tick(now));
        const bool fallback_due = !finder->multicast_enabled() || now - search_started >= opt.find_timeout;
        if (!channel && fallback_due && !finder->explicit_endpoint().empty()) connect_to(finder->explicit_endpoint(), now);
        // With a fallback address that is only tried after the multicast
        // search, give it find_timeout of its own before warning.
        const bool fallback_later = finder->multicast_enabled() && !finder->explicit_endpoint().empty();
        if (!warned && now - search_started >= (fallback_later ? 2 * opt.find_timeout : opt.find_timeout)) {
            warned = true;
            refresh_attempts();
            log.warn("discovery: no geckocore for key '" + opt.key + "' yet (" + describe_attempts_copy() + "); still trying");
        }
        // A core the door sent us to that does not answer (it just exited, the
        // door's entry is stale): ask the door again.
        if (channel && via_door && now - connected_at >= opt.find_timeout) connect_to(finder->explicit_endpoint(), now);
        // A hello that found no connection yet is tried again on every turn
        // of the first 100 ms: the connection's arrival wakes the reactor (it
        // changes the socket's events), so the hello leaves at once.
        const bool connecting = hello_unsent && now - connected_at < milliseconds(100);
        if (channel && (now >= next_hello || connecting) && plain_door_channel()) {
            send_door_question();
            next_hello = now + (hello_unsent ? milliseconds(1) : milliseconds(250));
        } else if (channel && (now >= next_hello || connecting)) {
            hello_unsent = !send_hello();
            // The first hello on a connection takes our registrations right
            // behind it (same connection, so the core reads them in order):
            // a new node's subscribers learn their publishers one round trip
            // sooner. Later hellos do not: a core that refused the first
            // answers their adds with "unknown", and that must not loop.
            if (!hello_unsent && ++hellos_sent == 1) {
                for (const auto& [id, r] : registrations) send_add(r);
                early_adds = true;
            }
            // Not sent: the connection (ZMQ_IMMEDIATE) is not up yet. On
            // loopback it is within a millisecond or two, so look again that
            // soon for the first 100 ms: a node's first hello must not wait
            // 50 ms for nothing (time to first message). Then every 50 ms,
            // then every 250 ms, for a core that is not there.
            const auto since = now - connected_at;
            next_hello = now + (hello_unsent && since < milliseconds(100) ? milliseconds(1)
                                : since < milliseconds(1000)              ? milliseconds(50)
                                                                          : milliseconds(250));
        }
        wake = std::min(wake, next_hello);
        if (channel && !wrong_key && core_endpoint == finder->explicit_endpoint() && now >= next_probe) {
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
            wake = now;
        } else {
            if (now >= next_heartbeat) {
                // The heartbeat says how many entities we have and a digest of
                // their ids; the core answers with its view of us, so a
                // registration lost on its side is noticed and repaired.
                const auto mine = ids();
                discovery::Writer w("hb", 4);
                w.kv("s", session);
                w.kv("secret", secret);
                last_hb = {mine.size(), discovery::entity_digest(mine)};
                w.kv("n", last_hb.first);
                w.kv("digest", last_hb.second);
                send(w);
                next_heartbeat = now + heartbeat_period;
            }
            if (now >= next_stats) {
                if (stats_pending) send_stats();
                next_stats = now + milliseconds(3000);
            }
            wake = std::min({wake, next_heartbeat, next_stats});
        }
    }
    // Sending may have routed messages that arrived meanwhile to our inbox
    // (the channel's fd is edge-style): read them before sleeping.
    read_inbox(now);
    sync_watches();
    return wake;
}

void DiscoveryClient::Impl::say_goodbye() {
    if (closed) return;
    closed = true;
    // Withdraw everything, bounded: the core drops our session on "bye".
    // Also when the core seems lost at this moment (a late heartbeat answer
    // on a loaded machine): it may still hold our session, and a bye it never
    // reads costs nothing but the linger.
    if (channel && ever_acked) {
        discovery::Writer w("bye", 2);
        w.kv("s", session);
        w.kv("secret", secret);
        channel->set_linger(200);
        send(w);
    }
    for (int fd : watched) reactor->unwatch(fd);
    watched.clear();
    leave_channel();
}

// ---- public API ------------------------------------------------------------------

DiscoveryClient::DiscoveryClient(DiscoveryOptions options, Reactor* reactor) {
    if (!options.core.empty() && net::normalize_core_address(options.core).empty())
        throw Error(Errc::invalid_argument, "core address '" + options.core + "' is not host, host:port or tcp://host:port");
    if (options.lease.count() <= 0) throw Error(Errc::invalid_argument, "discovery lease must be positive");
    impl_ = std::make_unique<Impl>(std::move(options));
    Impl* impl = impl_.get();
    if (reactor) {
        impl->reactor = reactor;
        impl->inbox = std::make_shared<CoreChannel::Inbox>(reactor);
    } else {
        impl->own_reactor = std::make_unique<Reactor>();
        impl->reactor = impl->own_reactor.get();
        impl->inbox = std::make_shared<CoreChannel::Inbox>(impl->reactor);
        impl->own_reactor->start([impl](Reactor::Clock::time_point now) {
            return impl->service(now);
        });
    }
    auto start = [impl] {
        try {
            impl->start();
        } catch (const std::exception& e) {
            impl->log.error(std::string("discovery could not start: ") + e.what());
        }
    };
    if (impl->own_reactor) impl->post(start);
    else start();  // the node's reactor is not running yet: nothing else touches impl
}

void DiscoveryClient::set_locators(std::vector<std::string> locators) {
    impl_->post([impl = impl_.get(), l = std::move(locators)]() mutable { impl->opt.locators = std::move(l); });
}

DiscoveryClient::~DiscoveryClient() {
    close();
    if (impl_->own_reactor) impl_->own_reactor->stop();
}

void DiscoveryClient::close() {
    if (impl_->own_reactor || !impl_->reactor->on_reactor_thread()) {
        impl_->post([impl = impl_.get()] { impl->say_goodbye(); });
        impl_->reactor->wake();
    } else {
        impl_->say_goodbye();
    }
}

/// One turn, for a reactor shared with a node: what is due, then when next.
Clock::time_point DiscoveryClient::service(Clock::time_point now) {
    return impl_->service(now);
}

void DiscoveryClient::add(const Registration& r) {
    impl_->post([impl = impl_.get(), r] {
        impl->registrations[r.id] = r;
        if (impl->core_hears()) impl->send_add(r);
    });
}

void DiscoveryClient::remove(std::uint64_t id) {
    impl_->post([impl = impl_.get(), id] {
        impl->registrations.erase(id);
        impl->watches.erase(id);
        if (impl->core_hears()) {
            discovery::Writer w("remove", 3);
            w.kv("s", impl->session);
            w.kv("secret", impl->secret);
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

void DiscoveryClient::on_error(std::function<void(std::uint64_t, const std::string&, const std::string&)> cb) {
    impl_->post([impl = impl_.get(), cb = std::move(cb)]() mutable { impl->error_callback = std::move(cb); });
}

void DiscoveryClient::report(std::vector<TopicStats> stats, std::vector<std::pair<std::uint64_t, std::string>> links) {
    impl_->post([impl = impl_.get(), stats = std::move(stats), links = std::move(links)]() mutable {
        impl->stats = std::move(stats);
        impl->links = std::move(links);
        impl->stats_pending = true;
    });
}

void DiscoveryClient::watch_directory(std::function<void(const DirectoryUpdate&)> on_update,
                                      std::function<void()> on_unsupported) {
    impl_->post([impl = impl_.get(), cb = std::move(on_update), unsupported = std::move(on_unsupported)]() mutable {
        const bool was = static_cast<bool>(impl->directory_callback);
        impl->directory_callback = std::move(cb);
        impl->directory_unsupported = std::move(unsupported);
        if (impl->acked && impl->directory_callback && !was) impl->send_watch_directory();
    });
}

void DiscoveryClient::watch_graph(std::function<void(bool, bool, const std::string&, const std::string&)> on_event) {
    impl_->post([impl = impl_.get(), cb = std::move(on_event)]() mutable {
        const bool was = static_cast<bool>(impl->graph_callback);
        impl->graph_callback = std::move(cb);
        if (impl->acked && impl->graph_callback && !was) impl->send_watch_graph();
    });
}

bool DiscoveryClient::wait_for_core(std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(impl_->state_mutex);
    const bool acked =
        impl_->state_cv.wait_for(lock, timeout, [&] { return impl_->acked.load() || !impl_->security_error.empty(); });
    if (!impl_->security_error.empty()) throw Error(Errc::security, impl_->security_error);
    return acked;
}

std::string DiscoveryClient::security_error() const {
    std::lock_guard<std::mutex> lock(impl_->state_mutex);
    return impl_->security_error;
}

// ---- security ----------------------------------------------------------------------

// The core says in its datagrams whether it has the key's secret: a node that
// differs says why at once, rather than failing handshakes without a word.
bool DiscoveryClient::Impl::security_mismatch(const net::CoreAnswer& answer) {
    const std::string why = core_security_mismatch(opt.key, answer, secured(), opt.secret_path);
    if (why.empty()) return false;
    fail_security(why);
    return true;
}

// A core reached without a datagram (GECKO_CORE) says nothing of its
// security: a handshake it keeps refusing is the sign. Three in a row (one
// every 100 ms), so that a core restarting mid-handshake is not mistaken.
void DiscoveryClient::Impl::check_handshakes() {
    if (!security_error.empty() || channel->handshake_failures() < 3) return;
    const std::string endpoint = core_endpoint;
    if (secured() && plain_door_channel()) {
        // Asked as a host door, it refuses a plain connection too: a secured core, of another secret.
        door_plain = false;
        fail_security(refused_handshake(opt.key, endpoint, true, opt.secret_path, "node", true));
        return;
    }
    // During a rotation the core may use the accepted secret: try its server key before giving up.
    if (secured() && !opt.curve->accepted_fingerprint.empty() && core_secret != opt.curve->accepted_fingerprint) {
        log.info("discovery: geckocore at " + endpoint + " refuses this node's own secret; trying the one it accepts (fingerprint " +
                 opt.curve->accepted_fingerprint + ")");
        const bool door = via_door;
        leave_channel();
        connect_to(endpoint, Clock::now(), opt.curve->accepted_fingerprint);
        via_door = door;
        return;
    }
    // GECKO_CORE may name a host door, which is plain and only names the
    // key's core (docs/SECURITY.md §5): ask it as one, once.
    if (secured() && !door_probed && endpoint == finder->explicit_endpoint()) {
        door_probed = door_plain = true;
        log.debug("discovery: " + endpoint + " refuses this node's CURVE handshake; asking it as a host door");
        leave_channel();
        connect_to(endpoint, Clock::now());
        return;
    }
    fail_security(refused_handshake(opt.key, endpoint, secured(), opt.secret_path, "node"));
}

void DiscoveryClient::Impl::fail_security(const std::string& why) {
    {
        std::lock_guard<std::mutex> lock(state_mutex);
        if (!security_error.empty()) return;
        security_error = why;
    }
    state_cv.notify_all();
    log.error("discovery: " + why);
    leave_channel();  // no more handshakes for the core to refuse
}

bool DiscoveryClient::connected() const noexcept { return impl_->acked; }

std::string DiscoveryClient::describe_attempts() const { return impl_->describe_attempts_copy(); }

std::string DiscoveryClient::local_endpoint_for(const std::string& bound) const { return impl_->local_endpoint_for(bound); }

std::uint64_t DiscoveryClient::session() const noexcept { return impl_->session; }

std::uint64_t DiscoveryClient::core_instance() const noexcept { return impl_->instance; }

std::string DiscoveryClient::core_endpoint() const {
    if (!impl_->acked) return "";
    std::lock_guard<std::mutex> lock(impl_->state_mutex);
    return impl_->core_endpoint;
}

}  // namespace gecko::detail

