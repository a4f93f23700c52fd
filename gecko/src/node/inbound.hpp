// SPDX-License-Identifier: Apache-2.0
#pragma once
// The receiving half of a node session: its in-ports (one per transport),
// the table that routes each arriving frame to the sinks of its channel, and
// who reads the ports.
//
// Leader and followers. Only one thread at a time uses the in-ports (holds
// io_): the *leader*. An application thread that waits for a message
// (receive(), spin(), a service call) becomes the leader if it can, so a
// message goes from the transport to the thread that wants it with no hand-off
// between threads (a hand-off costs 5-50 us on a loaded 2-vCPU machine: see
// docs/design/node-session.md). It drains every frame that is there into the
// sinks it belongs to, waking the other waiting threads (the *followers*) whose
// sink got one, and gives the ports back when its own wait ends. While no
// application thread has drained the ports for 10 ms (its callback is slow, or
// nobody is receiving), the node's reactor drains them, so keep-last-N queues
// stay fresh: what a slow reader gets is at most depth × the publish period
// plus ~10 ms old, never seconds of transport backlog.
//
// A background spinner (Node::spin_in_background) is an application thread
// that waits for callbacks only. While a foreground thread (receive(), a
// service call, the user's own spin()) has read the ports in the last 10 ms
// or waits to, the spinner neither leads nor follows: it would put a hand-off
// between every frame and the thread that waits for it (a simulation whose
// control services a spinner serves once paid two wake-ups per step). It
// sleeps apart, woken only when a frame for a callback was delivered, and a
// spinner that leads gives the ports up as soon as a foreground thread waits.

#include <poll.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "node/sink.hpp"
#include "transport/transport.hpp"

namespace gecko::detail {

class Notices;
class Reactor;

class Inbound {
public:
    using Clock = std::chrono::steady_clock;

    /// Takes the node's in-ports; `schemes[i]` are the locator schemes `ports[i]` connects to.
    /// `spin`: how long a thread waiting on several ports busy-polls them
    /// before it blocks (NodeOptions::spin; a single port spins by itself).
    Inbound(std::vector<std::unique_ptr<InPort>> ports, std::vector<std::vector<std::string>> schemes,
            Notices& notices, Reactor& reactor, std::chrono::microseconds spin = {});
    ~Inbound();
    Inbound(const Inbound&) = delete;
    Inbound& operator=(const Inbound&) = delete;

    // ---- routing (any thread) ----------------------------------------------------
    /// Routes `sink`'s channels to it and subscribes them (with `announcement`) on every port.
    void add_sink(Sink& sink, const std::string& announcement);
    /// Stops routing to `sink` (no offer() reaches it once this returns) and unsubscribes.
    void remove_sink(Sink& sink, const std::string& announcement);

    // ---- links to other nodes (any thread) -----------------------------------------
    /// Connects to another node's out-port (once per locator; counted).
    void connect(const std::string& locator);
    /// Connects to another node through the first of `candidates` (its
    /// usable locators, best first) that opens; says once why a better one
    /// could not. The link is known by `candidates.front()` to disconnect().
    /// `peer_fingerprint`: the secret the peer's listening sockets use, when
    /// it named one (a rotation: InPort::connect_with_secret).
    void connect(const std::vector<std::string>& candidates, const std::string& peer_fingerprint = {});
    void disconnect(const std::string& locator);
    /// The locator each link uses, by the link's name (its best locator): it
    /// differs when the link fell back (any thread).
    std::map<std::string, std::string> links_in_use() const;

    // ---- waiting (application threads) ------------------------------------------------
    /// Waits until `ready()` or `deadline`, or the node closes or shutdown is
    /// requested (ok() turns false). `ready` must be cheap and thread-safe.
    /// `spin`: busy-poll the ports this long before blocking (unset: the node's).
    /// Returns false at the deadline only if ready() was false at its last
    /// look (what came with the deadline is not a timeout), and on close or shutdown.
    /// `background`: the node's background spinner (see above).
    bool wait(const std::function<bool()>& ready, Clock::time_point deadline,
              std::optional<std::chrono::microseconds> spin = std::nullopt, bool background = false);
    /// Moves what the links hold into the sinks now: a reader looks at the
    /// newest, not at what an idle moment left in its queue. If the reactor
    /// (or a queued operation, or another reader's drain) holds the ports,
    /// waits for it to let go (a bounded drain); if an application thread
    /// leads a wait, or is about to, returns at once (it drains everything
    /// that arrives), even when it takes the ports from a holder this one was
    /// waiting for. Nothing
    /// either if an application thread drained less than `fresh_for` ago: a
    /// reader going through a backlog then pops what is queued instead of
    /// moving frames it will never read (they stay with the transport, whose
    /// queue drops the oldest, counted).
    void drain_now(std::chrono::nanoseconds fresh_for = std::chrono::nanoseconds(0));
    /// Wakes every waiting thread to re-check (shutdown, close).
    void wake_all();
    /// Wakes every waiter; from now on wait() returns at once.
    void close();

    // ---- the reactor ---------------------------------------------------------------------
    /// Drains the ports if no application thread does; returns when to call again.
    Clock::time_point reactor_tick(Clock::time_point now);

    /// A holder of the ports is moving frames into the sinks right now: a
    /// reader that pops now may take the first of a burst whose rest is not
    /// queued yet (a latest-only reader would get a stale value). wait() does
    /// not return while it is so; a reader's pop loop checks it too.
    bool draining() const noexcept { return draining_.load(std::memory_order_acquire); }

    /// Frames that arrived for no sink (a channel just unsubscribed, or none of ours).
    std::uint64_t unrouted() const noexcept { return unrouted_.load(); }

private:
    using Op = std::function<void()>;
    void run(Op op);                         // on the io holder: now, or queued for it
    void apply_pending();                    // io_ held
    bool drain(bool fired);                  // io_ held; true if a frame reached a sink; fired: an fd said so
    void route(Frame& frame, std::int64_t receive_ns);
    void lead(const std::function<bool()>& ready, Clock::time_point deadline, std::chrono::microseconds spin,
              bool background);
    bool foreground_active() const noexcept;  // a foreground thread reads the ports, or waits to
    void notify_background();                // wakes a background spinner waiting apart
    void wait_ports(std::chrono::nanoseconds timeout, std::chrono::microseconds spin);
    /// Busy-polls every port for up to `spin` (bounded by `timeout`): true if
    /// something came (ports marked in fired_, or the node woken).
    bool spin_ports(std::chrono::nanoseconds timeout, std::chrono::microseconds spin);
    void delivered();                        // wakes followers after a drain that delivered
    void hand_over(std::unique_lock<std::mutex>& io);  // releases io_ and wakes followers (one may lead)
    void set_reactor_watch(bool watch);      // reactor thread only
    InPort* port_for(const std::string& locator);
    std::size_t port_index(const std::string& locator) const;  // ports_.size() if none
    // From candidates[from] on; the link is named by candidates.front().
    bool try_link(const std::vector<std::string>& candidates, std::string& refused, bool& later,
                  std::size_t from = 0);  // io_ held
    const std::string& peer_secret(const std::string& link) const;  // "" when its peer named none
    void warn_unusable(const std::string& refused);
    void retry_links(Clock::time_point now);                                   // io_ held

    std::vector<std::unique_ptr<InPort>> ports_;
    std::vector<bool> fired_;  // io holder only: ports whose fd wait_ports saw fire (drain them)
    std::vector<pollfd> pollfds_;  // io holder only: wait_ports' poll set (ports, wake, shutdown)
    // spin_ports(): the ports that cannot tell from memory whether frames
    // wait (their fds are polled instead); the others are asked directly.
    std::vector<std::size_t> polled_ports_;
    std::vector<bool> memory_ports_;
    std::vector<std::size_t> port_links_;  // io holder only: per port, the links it holds for us
    std::vector<std::vector<std::string>> schemes_;
    Notices& notices_;
    Reactor& reactor_;
    const std::chrono::microseconds spin_;
    int wake_fd_ = -1;  // wakes a leader blocked in a port's wait

    std::mutex io_;  // held by the leader: the only thread that touches the ports
    std::mutex pending_mutex_;
    std::vector<Op> pending_;
    std::atomic<bool> has_pending_{false};

    std::shared_mutex routes_mutex_;  // shared while routing a frame; exclusive to change the table
    std::unordered_map<wire::Channel, std::vector<Sink*>> routes_;
    std::vector<Sink*> wildcard_routes_;

    // A follower registers (followers_) and then reads generation_; a holder
    // bumps generation_ and then reads followers_: one of the two sees the
    // other, so a holder with no follower takes no lock to say it delivered.
    std::mutex followers_mutex_;  // only for the condition variable's wait and notify
    std::condition_variable followers_cv_;
    std::atomic<std::uint64_t> generation_{0};  // bumped when something a follower waits for may have happened
    std::atomic<int> followers_{0};

    // Set before a drain queues its first frame (so a reader that sees the
    // frame in a sink sees this too), cleared when the drain ends.
    std::atomic<bool> draining_{false};
    std::atomic<bool> closed_{false};
    // Application threads in wait() that hold the ports or are about to try
    // for them: counted before they try, so that a drain_now() that finds the
    // ports taken knows whether it may wait for their holder.
    std::atomic<int> app_leaders_{0};
    std::atomic<std::int64_t> last_app_drain_ns_{0};  // steady clock
    // The background spinner's side (see above). Counters are read and
    // bumped sequentially consistent: a spinner that registers and then reads
    // background_events_, and a drain that bumps it and then reads
    // background_waiters_, cannot both miss the other.
    std::atomic<std::int64_t> last_foreground_drain_ns_{0};  // steady clock
    std::atomic<int> foreground_waiting_{0};  // foreground threads waiting as followers
    std::atomic<bool> background_leading_{false};
    std::atomic<int> background_waiters_{0};
    // Frames delivered to callback sinks, and wake_all() calls: what a background spinner waiting apart wakes for.
    std::atomic<std::uint64_t> background_events_{0};
    std::atomic<std::uint64_t> background_told_{0};  // background_events_ as of the last notify
    std::condition_variable background_cv_;    // with followers_mutex_
    bool reactor_watching_ = false;                   // reactor thread only
    std::atomic<std::uint64_t> unrouted_{0};
    // Links to other nodes: the link's name (its best locator) -> the locator in use. Changed by the
    // io holder only, under connections_mutex_ (so that links_in_use() may read it from any thread).
    mutable std::mutex connections_mutex_;
    std::map<std::string, std::string> connections_;
    std::set<std::string> fallbacks_said_;                       // io holder only: schemes a link fell back from
    struct Retry {
        std::vector<std::string> candidates;
        Clock::time_point at;
        std::chrono::milliseconds interval;
        Clock::time_point since;  // the first failure
        bool warned;              // the failure has been logged (at once, unless it may open later)
    };
    static constexpr std::chrono::milliseconds retry_first{100}, retry_max{1000}, warn_after{1000};
    std::vector<Retry> retries_;            // io holder only: links none of whose locators opened yet
    std::atomic<bool> has_retries_{false};
    std::atomic<Clock::rep> next_retry_ns_{0};  // when the reactor next hands retry_links() to the io holder

    // Links a port dropped by itself (shm: a publisher gone, a segment corrupt
    // or cut short) go to the next of their locators at once; a link on a
    // locator worse than its best tries the better ones again, every 1 s
    // doubling to 30 s.
    void relink_dropped(Clock::time_point now);
    bool relink_due() const;
    struct Upgrade {
        std::string link;
        Clock::time_point at;
        std::chrono::milliseconds interval;
    };
    static constexpr std::chrono::milliseconds relink_every{100}, upgrade_first{1000}, upgrade_max{30000};
    std::map<std::string, std::vector<std::string>> candidates_;  // io holder only: each link's locators, best first
    std::map<std::string, std::string> peer_secrets_;             // io holder only: each link's peer's fingerprint, if named
    std::vector<Upgrade> upgrades_;                               // io holder only
    std::atomic<bool> has_upgrades_{false};
    std::atomic<Clock::rep> next_relink_ns_{0};
};

}  // namespace gecko::detail
