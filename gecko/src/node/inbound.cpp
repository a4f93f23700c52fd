// SPDX-License-Identifier: Apache-2.0
#include "node/inbound.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>

#include "cpu_relax.hpp"
#include "gecko/signals.hpp"
#include "gecko/time.hpp"
#include "node/notices.hpp"
#include "node/reactor.hpp"
#include "shutdown_fd.hpp"

namespace gecko::detail {
namespace {

// The reactor leaves the ports to application threads that drained them this recently.
constexpr std::int64_t app_quiet_ns = 10'000'000;
// At most this many frames per drain before the holder looks at its own wait again.
constexpr int drain_budget = 512;

std::int64_t steady_ns_of(std::chrono::steady_clock::time_point t) noexcept {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

std::int64_t steady_now_ns() noexcept { return steady_ns_of(std::chrono::steady_clock::now()); }

void signal(int fd) noexcept {
    const std::uint64_t one = 1;
    [[maybe_unused]] auto n = ::write(fd, &one, sizeof one);
}

void consume(int fd) noexcept {
    std::uint64_t v;
    [[maybe_unused]] auto n = ::read(fd, &v, sizeof v);
}

std::vector<wire::Channel> channels_of(const Sink& sink) {
    std::vector<wire::Channel> out{sink.config().channel};
    if (sink.config().directed != 0) out.push_back(sink.config().directed);
    return out;
}

}  // namespace

Inbound::Inbound(std::vector<std::unique_ptr<InPort>> ports, std::vector<std::vector<std::string>> schemes,
                 Notices& notices, Reactor& reactor, std::chrono::microseconds spin)
    : ports_(std::move(ports)), schemes_(std::move(schemes)), notices_(notices), reactor_(reactor), spin_(spin) {
    fired_.assign(ports_.size(), false);
    pollfds_.resize(ports_.size() + 2);
    for (std::size_t i = 0; i < ports_.size(); ++i) {
        memory_ports_.push_back(ports_[i]->frames_waiting().has_value());
        if (!memory_ports_.back()) polled_ports_.push_back(i);
    }
    port_links_.assign(ports_.size(), 0);
    wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
}

Inbound::~Inbound() { ::close(wake_fd_); }

// ---- operations on the ports ---------------------------------------------------------------

void Inbound::run(Op op) {
    std::unique_lock<std::mutex> io(io_, std::try_to_lock);
    if (io.owns_lock()) {
        apply_pending();
        op();
        hand_over(io);
        return;
    }
    {
        std::lock_guard<std::mutex> lock(pending_mutex_);
        pending_.push_back(std::move(op));
        has_pending_ = true;
    }
    signal(wake_fd_);  // a leader blocked in a port's wait applies it
    reactor_.wake();   // or the reactor, if the holder was the reactor itself
}

void Inbound::apply_pending() {
    if (!has_pending_.load(std::memory_order_acquire)) return;
    std::vector<Op> ops;
    {
        std::lock_guard<std::mutex> lock(pending_mutex_);
        ops.swap(pending_);
        has_pending_ = false;
    }
    for (auto& op : ops) op();
}

InPort* Inbound::port_for(const std::string& locator) {
    const std::size_t i = port_index(locator);
    return i < ports_.size() ? ports_[i].get() : nullptr;
}

std::size_t Inbound::port_index(const std::string& locator) const {
    const auto scheme = scheme_of(locator);
    for (std::size_t i = 0; i < ports_.size(); ++i)
        for (const auto& s : schemes_[i])
            if (s == scheme) return i;
    return ports_.size();
}

void Inbound::add_sink(Sink& sink, const std::string& announcement) {
    {
        std::unique_lock<std::shared_mutex> lock(routes_mutex_);
        if (sink.config().wildcard) {
            wildcard_routes_.push_back(&sink);
        } else {
            for (auto c : channels_of(sink)) routes_[c].push_back(&sink);
        }
    }
    Interest data{sink.config().channel, sink.config().wildcard, announcement};
    Interest directed{sink.config().directed, false, {}};
    const bool has_directed = sink.config().directed != 0;
    run([this, data, directed, has_directed] {
        for (auto& port : ports_) {
            // The directed channel first: a publisher answers the announcement
            // (a latched replay, a held reply) on it, and a frame that reaches
            // the port before its subscription is filtered out by the sender.
            if (has_directed) port->subscribe(directed);
            port->subscribe(data);
        }
    });
}

void Inbound::remove_sink(Sink& sink, const std::string& announcement) {
    {
        // Exclusive: waits for a frame being routed to finish; none reaches the sink afterwards.
        std::unique_lock<std::shared_mutex> lock(routes_mutex_);
        auto drop = [&](std::vector<Sink*>& v) { v.erase(std::remove(v.begin(), v.end(), &sink), v.end()); };
        drop(wildcard_routes_);
        for (auto c : channels_of(sink)) {
            const auto it = routes_.find(c);
            if (it == routes_.end()) continue;
            drop(it->second);
            if (it->second.empty()) routes_.erase(it);
        }
    }
    Interest data{sink.config().channel, sink.config().wildcard, announcement};
    Interest directed{sink.config().directed, false, {}};
    const bool has_directed = sink.config().directed != 0;
    run([this, data, directed, has_directed] {
        for (auto& port : ports_) {
            port->unsubscribe(data);
            if (has_directed) port->unsubscribe(directed);
        }
    });
}

void Inbound::connect(const std::string& locator) { connect(std::vector<std::string>{locator}); }

void Inbound::connect(const std::vector<std::string>& candidates, const std::string& peer_fingerprint) {
    if (candidates.empty()) return;
    run([this, candidates, peer_fingerprint] {
        if (connections_.count(candidates.front())) return;
        if (peer_fingerprint.empty()) peer_secrets_.erase(candidates.front());
        else peer_secrets_[candidates.front()] = peer_fingerprint;
        // Already being retried (discovery pushes a peer set again with every
        // change and heartbeat): one retry per link, not one per push.
        for (auto& r : retries_)
            if (r.candidates.front() == candidates.front()) {
                r.candidates = candidates;
                return;
            }
        std::string refused;
        bool later = false;
        if (!try_link(candidates, refused, later)) {
            // A port that opens nothing yet (a shared-memory segment its node
            // has not created) is tried again, as ZeroMQ retries a connect.
            // Said at once unless every candidate may still open (below).
            const auto now = Clock::now();
            retries_.push_back(Retry{candidates, now + retry_first, retry_first, now, !later});
            has_retries_ = true;
            if (!later) warn_unusable(refused);
        }
    });
}

const std::string& Inbound::peer_secret(const std::string& link) const {
    static const std::string none;
    const auto it = peer_secrets_.find(link);
    return it == peer_secrets_.end() ? none : it->second;
}

bool Inbound::try_link(const std::vector<std::string>& candidates, std::string& refused, bool& later, std::size_t from) {
    const std::string& link = candidates.front();
    refused.clear();  // why the better candidates could not serve
    later = true;     // every candidate may still open
    for (std::size_t k = from; k < candidates.size(); ++k) {
        const std::string& locator = candidates[k];
        InPort* port = port_for(locator);
        std::string why = "no transport of this node serves '" + std::string(scheme_of(locator)) + "://'";
        if (port && port->connect_with_secret(locator, peer_secret(link), why)) {
            {
                std::lock_guard<std::mutex> lock(connections_mutex_);
                connections_.emplace(link, locator);
            }
            candidates_[link] = candidates;
            ++port_links_[port_index(locator)];
            // Said once per node and scheme: with many peers on one host it would repeat.
            if (!refused.empty() && fallbacks_said_.insert(std::string(scheme_of(link))).second) {
                notices_.add(LogLevel::info, "fallback from " + std::string(scheme_of(link)),
                             "cannot use " + refused + "; using " + locator +
                                 " instead (said once: later links that fall back the same way are not logged)");
            }
            return true;
        }
        refused += (refused.empty() ? "" : "; nor ") + locator + " (" + why + ")";
        later = later && port && port->may_open_later(locator);
    }
    return false;
}

// The locators came from another node: say so, never throw (it is not ours to fix).
void Inbound::warn_unusable(const std::string& refused) {
    notices_.add(LogLevel::warn, "unusable locator",
                 "cannot connect to another node at " + refused + "; trying again every second meanwhile");
}

void Inbound::retry_links(Clock::time_point now) {
    for (auto it = retries_.begin(); it != retries_.end();) {
        if (connections_.count(it->candidates.front())) {
            it = retries_.erase(it);
            continue;
        }
        if (now < it->at) {
            ++it;
            continue;
        }
        std::string refused;
        bool later = false;
        if (try_link(it->candidates, refused, later)) {
            if (it->warned)
                notices_.add(LogLevel::info, "linked", "linked to " + connections_.at(it->candidates.front()) + " after retrying");
            it = retries_.erase(it);
            continue;
        }
        // Nodes started together often name a segment before its node has made
        // it: only a link still failing after warn_after is worth a warning.
        if (!it->warned && now - it->since >= warn_after) {
            it->warned = true;
            warn_unusable(refused);
        }
        it->interval = std::min(it->interval * 2, retry_max);
        it->at = now + it->interval;
        ++it;
    }
    has_retries_ = !retries_.empty();
}

void Inbound::disconnect(const std::string& locator) {
    run([this, locator] {
        retries_.erase(std::remove_if(retries_.begin(), retries_.end(),
                                      [&](const Retry& r) { return r.candidates.front() == locator; }),
                       retries_.end());
        has_retries_ = !retries_.empty();
        candidates_.erase(locator);
        peer_secrets_.erase(locator);
        const auto it = connections_.find(locator);
        if (it == connections_.end()) return;
        const std::size_t i = port_index(it->second);
        if (i < ports_.size()) {
            ports_[i]->disconnect(it->second);
            --port_links_[i];
        }
        std::lock_guard<std::mutex> lock(connections_mutex_);
        connections_.erase(it);
    });
}

// ---- links a port dropped by itself -------------------------------------------------------------

bool Inbound::relink_due() const {
    if (has_upgrades_.load()) return true;
    for (const auto& port : ports_)
        if (port->has_dropped()) return true;
    return false;
}

void Inbound::relink_dropped(Clock::time_point now) {
    for (std::size_t i = 0; i < ports_.size(); ++i)
        for (const auto& dropped : ports_[i]->take_dropped()) {
            const auto it = std::find_if(connections_.begin(), connections_.end(),
                                         [&](const auto& c) { return c.second == dropped; });
            if (it == connections_.end()) continue;
            const std::string link = it->first;
            --port_links_[i];
            {
                std::lock_guard<std::mutex> lock(connections_mutex_);
                connections_.erase(it);
            }
            std::vector<std::string> all = candidates_[link];
            if (all.empty()) all = {link};
            const auto at = std::find(all.begin(), all.end(), dropped);
            const std::size_t next = at == all.end() ? all.size() : static_cast<std::size_t>(at - all.begin()) + 1;
            std::string refused;
            bool later = false;
            if (next < all.size() && try_link(all, refused, later, next)) {
                notices_.add(LogLevel::info, "relinked", "link " + dropped + " dropped; using " + connections_.at(link) +
                                                             " now, and trying the better locators again later");
                upgrades_.push_back(Upgrade{link, now + upgrade_first, upgrade_first});
            } else {
                retries_.push_back(Retry{all, now + retry_first, retry_first, now, false});
                has_retries_ = true;
            }
        }
    for (auto u = upgrades_.begin(); u != upgrades_.end();) {
        const auto c = connections_.find(u->link);
        const auto known = candidates_.find(u->link);
        if (c == connections_.end() || known == candidates_.end() || c->second == known->second.front()) {
            u = upgrades_.erase(u);  // gone, being retried from its best, or on its best already
            continue;
        }
        if (now < u->at) {
            ++u;
            continue;
        }
        const std::vector<std::string> all = known->second;
        const std::string current = c->second;
        bool better = false;
        for (auto k = all.begin(); k != all.end() && *k != current && !better; ++k) {
            InPort* port = port_for(*k);
            std::string why;
            if (!port || !port->connect_with_secret(*k, peer_secret(u->link), why)) continue;
            better = true;
            const std::size_t was = port_index(current);
            if (was < ports_.size()) {
                ports_[was]->disconnect(current);
                --port_links_[was];
            }
            ++port_links_[port_index(*k)];
            std::lock_guard<std::mutex> lock(connections_mutex_);
            c->second = *k;
        }
        if (better) {
            notices_.add(LogLevel::info, "relinked", "link " + u->link + " is back on " + connections_.at(u->link));
            u = upgrades_.erase(u);
            continue;
        }
        u->interval = std::min(u->interval * 2, upgrade_max);
        u->at = now + u->interval;
        ++u;
    }
    has_upgrades_ = !upgrades_.empty();
}

std::map<std::string, std::string> Inbound::links_in_use() const {
    std::lock_guard<std::mutex> lock(connections_mutex_);
    return connections_;
}

// ---- draining ------------------------------------------------------------------------------------

bool Inbound::drain(bool fired) {
    bool any = false;
    std::int64_t now = 0;  // one clock read per drain: frames taken together share a receive time
    for (std::size_t i = 0; i < ports_.size(); ++i) {
        InPort* port = ports_[i].get();
        // A port that found nothing last time and has not fired since is
        // skipped: a take() that fails costs ZeroMQ a system call. (The
        // reactor's epoll, or wait_ports' poll, saw the fd fire: `fired`,
        // `fired_`; the port cannot know.)
        const bool port_fired = fired || fired_[i];
        fired_[i] = false;
        if (!port_fired && !port->ready_now()) continue;
        Frame frame;
        for (int budget = drain_budget; budget > 0 && port->take(frame); --budget) {
            if (now == 0) {
                now = now_ns();
                draining_.store(true, std::memory_order_relaxed);  // published by the sink's count (release)
            }
            route(frame, now);
            any = true;
        }
    }
    if (now != 0) draining_.store(false, std::memory_order_release);
    return any;
}

void Inbound::route(Frame& frame, std::int64_t receive_ns) {
    if (frame.size() < 8) {
        unrouted_.fetch_add(1, std::memory_order_relaxed);
        return;
    }
    const wire::Channel channel = wire::load_channel(frame.data());
    bool routed = false;
    std::shared_lock<std::shared_mutex> lock(routes_mutex_);
    // The last sink offered the frame may keep it (a move, not a share):
    // with one subscriber per topic, the common case, no second owner.
    const bool wildcards = !wildcard_routes_.empty();
    if (const auto it = routes_.find(channel); it != routes_.end()) {
        const std::size_t n = it->second.size();
        for (std::size_t i = 0; i < n; ++i) {
            Sink* sink = it->second[i];
            const bool taken = sink->offer(frame, receive_ns, !wildcards && i + 1 == n);
            if (taken && sink->config().callback) background_events_.fetch_add(1);
            routed = taken || routed;
        }
        routed = routed || n > 0;
    }
    if (wildcards) {
        for (Sink* sink : wildcard_routes_) {
            if (wire::key_part(sink->config().channel) != wire::key_part(channel)) continue;
            if (sink->offer(frame, receive_ns, sink == wildcard_routes_.back()) && sink->config().callback)
                background_events_.fetch_add(1);
            routed = true;
        }
    }
    if (!routed) unrouted_.fetch_add(1, std::memory_order_relaxed);
}

// Every holder of io_ releases it through here, whether or not it delivered:
// a thread that found io_ taken waits as a follower until told, and only a
// leader watches its deadline and the shutdown fd (a Ctrl-C once waited for
// the reactor's next tick).
void Inbound::hand_over(std::unique_lock<std::mutex>& io) {
    io.unlock();
    delivered();
}

void Inbound::delivered() {
    generation_.fetch_add(1);  // sequentially consistent, like the follower's side: see inbound.hpp
    // A background spinner waiting apart is woken only for what concerns it.
    if (background_waiters_.load() != 0) {
        const auto events = background_events_.load();
        if (background_told_.exchange(events) != events) notify_background();
    }
    if (followers_.load() == 0) return;
    // A follower between its check of the generation and its sleep holds the
    // mutex: taking it here means the notify cannot fall in between.
    { std::lock_guard<std::mutex> lock(followers_mutex_); }
    followers_cv_.notify_all();
}

void Inbound::notify_background() {
    { std::lock_guard<std::mutex> lock(followers_mutex_); }  // as delivered(): no notify between check and sleep
    background_cv_.notify_all();
}

bool Inbound::foreground_active() const noexcept {
    return foreground_waiting_.load() > 0 || steady_now_ns() - last_foreground_drain_ns_.load() < app_quiet_ns;
}

// ---- waiting --------------------------------------------------------------------------------------

bool Inbound::wait(const std::function<bool()>& ready, Clock::time_point deadline,
                   std::optional<std::chrono::microseconds> spin, bool background) {
    // The first turn does not read the clock: the caller has just set the
    // deadline, and a leader looks at it itself (a clock read is ~20 ns, and
    // a lockstep step passes here twice).
    bool deferred = false;
    for (bool first = true;; first = false) {
        // Taken before looking: a delivery or hand-over from now on, even one
        // that ends before this thread registers as a follower, wakes it.
        const auto seen = generation_.load();
        const auto seen_events = background_events_.load();
        // Not in the middle of another thread's drain: the holder bumps the
        // generation once it is over, and this thread looks again then. Only
        // once: under a stream that keeps a leader draining, a reader that
        // waited for every drain to end could wait until its deadline.
        if (ready()) {
            if (deferred || !draining()) return true;
            deferred = true;
        }
        if (closed_.load() || !gecko::ok()) return false;
        // Deferred to a drain that is still going on: what is there is there.
        if (!first && Clock::now() >= deadline) return ready();
        if (background && foreground_active()) {
            // Apart: a foreground thread drains what comes, callbacks' frames too.
            // Looked at again every 10 ms, to lead once it has stopped.
            std::unique_lock<std::mutex> lock(followers_mutex_);
            background_waiters_.fetch_add(1);
            background_cv_.wait_until(lock, std::min(deadline, Clock::now() + std::chrono::nanoseconds(app_quiet_ns)), [&] {
                return background_events_.load() != seen_events || closed_.load();
            });
            background_waiters_.fetch_sub(1);
            continue;
        }
        // Announced before trying: see drain_now().
        app_leaders_.fetch_add(1);
        std::unique_lock<std::mutex> io(io_, std::try_to_lock);
        if (io.owns_lock()) {
            if (background) background_leading_.store(true);
            lead(ready, deadline, spin.value_or(spin_), background);
            if (background) background_leading_.store(false);
            app_leaders_.fetch_sub(1);
            hand_over(io);
            continue;
        }
        app_leaders_.fetch_sub(1);
        std::unique_lock<std::mutex> lock(followers_mutex_);
        ++followers_;
        if (!background) {
            // A background spinner that leads gives the ports up to us (it
            // looks at foreground_waiting_ on every turn, and is woken here).
            foreground_waiting_.fetch_add(1);
            if (background_leading_.load()) signal(wake_fd_);
        }
        followers_cv_.wait_until(lock, deadline, [&] { return generation_.load() != seen || closed_.load(); });
        if (!background) foreground_waiting_.fetch_sub(1);
        --followers_;
    }
}

void Inbound::lead(const std::function<bool()>& ready, Clock::time_point deadline, std::chrono::microseconds spin,
                   bool background) {
    for (;;) {
        apply_pending();
        if (drain(false)) delivered();
        const auto now = Clock::now();
        last_app_drain_ns_ = steady_ns_of(now);
        if (!background) last_foreground_drain_ns_ = steady_ns_of(now);
        if (ready() || closed_.load() || !gecko::ok()) return;
        if (background && foreground_waiting_.load() > 0) {
            // Its thread leads from now on: counted as active from here, so
            // that this spinner, back in wait(), stays apart instead of racing
            // the woken follower for the ports.
            last_foreground_drain_ns_ = steady_ns_of(now);
            return;
        }
        if (now >= deadline) return;
        wait_ports(deadline - now, spin);
    }
}

void Inbound::wait_ports(std::chrono::nanoseconds timeout, std::chrono::microseconds spin) {
    // Only one port holds links (a node whose peers all share its host, over
    // shared memory): its own wait, which spins where the transport can and
    // costs one system call less than a poll over every port.
    std::size_t linked = 0, only = 0;
    bool memory_linked = false;
    for (std::size_t i = 0; i < ports_.size(); ++i)
        if (port_links_[i] != 0) ++linked, only = i, memory_linked = memory_linked || memory_ports_[i];
    // A caller's own spin (SubscriberOptions::spin) only where frames show in
    // memory (shared-memory links): busy-polling ZeroMQ's fds would not spare
    // the wake-up of its I/O thread.
    if (!memory_linked) spin = spin_;
    bool woken = false;
    if (ports_.size() == 1 || linked == 1) {
        // A port spins by itself for the node's spin; a caller's own is done here.
        if (spin != spin_ && spin.count() > 0 && spin_ports(timeout, spin)) return;
        woken = (ports_[only]->wait(timeout, {wake_fd_, shutdown_fd()}) & 2u) != 0;
    } else {
        if (spin.count() > 0 && spin_ports(timeout, spin)) return;
        for (auto& p : ports_)
            if (!p->prepare_wait()) return;
        // Every port was just drained (take() until false), so each event fd
        // fires again on the next arrival.
        std::vector<pollfd>& fds = pollfds_;  // sized once: no allocation per wait
        for (std::size_t i = 0; i < ports_.size(); ++i) fds[i] = pollfd{ports_[i]->event_fd(), POLLIN, 0};
        fds[ports_.size()] = pollfd{wake_fd_, POLLIN, 0};
        fds[ports_.size() + 1] = pollfd{shutdown_fd(), POLLIN, 0};
        // At most 100 ms: ports that watch something outside their fd (a
        // dropped ZeroMQ link) look at it in prepare_wait().
        const auto ms = static_cast<int>(std::min<std::int64_t>((timeout.count() + 999999) / 1000000, 100));
        if (::poll(fds.data(), fds.size(), ms) > 0) {
            for (std::size_t i = 0; i < ports_.size(); ++i)
                if (fds[i].revents & (POLLIN | POLLERR | POLLHUP)) fired_[i] = true;
            woken = (fds[ports_.size()].revents & POLLIN) != 0;
        }
    }
    if (woken) consume(wake_fd_);
}

// A node with links on several ports (shared memory to its peers, plus the
// inproc link to itself on ZeroMQ's port) spins too: ports that can say from
// memory whether frames wait are asked on every turn, the others (and the
// node's wake-up and shutdown fds) get a poll() without timeout every 512th.
bool Inbound::spin_ports(std::chrono::nanoseconds timeout, std::chrono::microseconds spin) {
    // Timed from the first look at the clock, 32 turns in (~1 µs): a frame
    // that comes sooner costs no clock read at all.
    std::optional<Clock::time_point> until;
    std::vector<pollfd>& fds = pollfds_;
    const std::size_t polled = polled_ports_.size();
    for (std::size_t k = 0; k < polled; ++k) fds[k] = pollfd{ports_[polled_ports_[k]]->event_fd(), POLLIN, 0};
    fds[polled] = pollfd{wake_fd_, POLLIN, 0};
    fds[polled + 1] = pollfd{shutdown_fd(), POLLIN, 0};
    for (std::size_t i = 0; i < ports_.size(); ++i)
        if (memory_ports_[i]) ports_[i]->begin_spin();
    for (unsigned n = 0;; ++n) {
        bool any = false;
        for (std::size_t i = 0; i < ports_.size(); ++i) {
            if (memory_ports_[i] && ports_[i]->frames_waiting().value_or(false)) {
                fired_[i] = true;
                any = true;
            }
        }
        if (any) return true;
        // A poll() is a system call, ~1 µs here: while it runs, a frame that
        // arrives in memory waits for it. So it comes every 512th turn (every
        // ~25 µs), the clock every 32nd.
        if ((n & 511u) == 511u && ::poll(fds.data(), polled + 2, 0) > 0) {
            for (std::size_t k = 0; k < polled; ++k)
                if (fds[k].revents & (POLLIN | POLLERR | POLLHUP)) fired_[polled_ports_[k]] = true;
            if (fds[polled].revents & POLLIN) consume(wake_fd_);
            return true;
        }
        if ((n & 31u) == 31u) {
            const auto now = Clock::now();
            if (!until) until = now + std::min<std::chrono::nanoseconds>(spin, timeout);
            else if (now >= *until) return false;
        }
        cpu_relax();
    }
}

void Inbound::drain_now(std::chrono::nanoseconds fresh_for) {
    if (fresh_for.count() > 0 && steady_now_ns() - last_app_drain_ns_.load(std::memory_order_relaxed) < fresh_for.count())
        return;
    std::unique_lock<std::mutex> io(io_, std::defer_lock);
    for (;;) {
        const auto seen = generation_.load();  // before trying: a hand-over from now on wakes this thread
        if (io.try_lock()) break;
        // An application leader (or one about to try) drains whatever arrives.
        if (app_leaders_.load() > 0 || closed_.load()) return;
        // Any other holder (the reactor, in or just after a drain, a queued
        // operation, another reader's drain) may leave frames in the links:
        // let it finish, then look ourselves. Waited for as a follower, woken
        // by its hand_over(), never on io_ itself: an application thread may
        // take the ports next and keep them for its whole wait.
        std::unique_lock<std::mutex> lock(followers_mutex_);
        ++followers_;
        followers_cv_.wait(lock, [&] { return generation_.load() != seen || closed_.load(); });
        --followers_;
    }
    apply_pending();
    drain(true);
    last_app_drain_ns_ = steady_now_ns();
    hand_over(io);
}

void Inbound::wake_all() {
    signal(wake_fd_);  // a leader blocked in a port's wait
    background_events_.fetch_add(1);
    delivered();       // the followers, and a background spinner waiting apart
}

void Inbound::close() {
    closed_ = true;
    wake_all();
}

// ---- the reactor ---------------------------------------------------------------------------------

Inbound::Clock::time_point Inbound::reactor_tick(Clock::time_point now) {
    if (closed_.load()) return now + std::chrono::hours(1);
    // Through run(): an application thread waiting on the ports holds them
    // (a simulation's spin loop, always), and applies it when woken.
    if (has_retries_.load() && now.time_since_epoch().count() >= next_retry_ns_.load()) {
        next_retry_ns_ = (now + retry_first).time_since_epoch().count();
        run([this] { retry_links(Clock::now()); });
    }
    if (now.time_since_epoch().count() >= next_relink_ns_.load() && relink_due()) {
        next_relink_ns_ = (now + relink_every).time_since_epoch().count();
        run([this] { relink_dropped(Clock::now()); });
    }
    const bool app_active = app_leaders_.load() > 0 || steady_now_ns() - last_app_drain_ns_.load() < app_quiet_ns;
    if (app_active) {
        // An application thread is reading: stay out of its way (and do not
        // wake up for every frame it takes), but look again soon.
        set_reactor_watch(false);
        if (has_pending_.load()) {
            std::unique_lock<std::mutex> io(io_, std::try_to_lock);
            if (io.owns_lock()) {
                apply_pending();
                hand_over(io);
            }
        }
        return now + std::chrono::milliseconds(10);
    }
    bool again = false;
    {
        std::unique_lock<std::mutex> io(io_, std::try_to_lock);
        if (io.owns_lock()) {
            apply_pending();
            drain(true);
            // The epoll below hears the next arrival only if each port was asked to say it.
            for (auto& port : ports_)
                if (!port->prepare_wait()) again = true;
            hand_over(io);
        }
    }
    set_reactor_watch(true);
    return now + (again ? std::chrono::milliseconds(1) : std::chrono::milliseconds(100));
}

void Inbound::set_reactor_watch(bool watch) {
    if (watch == reactor_watching_) return;
    reactor_watching_ = watch;
    for (auto& port : ports_) {
        if (watch) {
            // Edge-triggered, as ZeroMQ's ZMQ_FD wants: the tick drains until empty.
            reactor_.watch(port->event_fd(), [this] { reactor_tick(Clock::now()); }, true);
        } else {
            reactor_.unwatch(port->event_fd());
        }
    }
}

}  // namespace gecko::detail
