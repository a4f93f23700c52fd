// SPDX-License-Identifier: Apache-2.0
#pragma once
// The sending half of a node session: its out-ports (one per transport), and
// what their events say: which remote entities subscribe to each channel this
// node sends on. A publisher counts its subscribers from it, waits for them,
// learns that one expects another type, and replays its last value (latched
// publishers) to one that joins late; a service client learns which servers
// are ready to take its requests.
//
// Threads: send() runs on the publishing thread, one lock per out-port held
// only for the send itself. Events are drained by the reactor (their fds are
// in its epoll) or by a thread waiting for subscribers.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "gecko/buffer.hpp"
#include "transport/transport.hpp"

namespace gecko::detail {

class Notices;

/// A local sender on a channel (a publisher, or a client sending requests to
/// one server), as Outbound keeps track of it.
struct Sending {
    wire::Channel channel = 0;
    std::string type;            ///< its type name; remote subscribers of another type are mismatched
    std::string what;            ///< "publisher of 'imu'", for messages
    bool latched = false;        ///< replay the last frame to subscribers that join
    std::atomic<std::size_t> subscribers{0};       ///< remote entities subscribed now
    std::atomic<std::uint64_t> mismatched{0};      ///< subscribers seen expecting another type
    std::vector<std::uint8_t> last;                ///< latched: the last frame sent (under Outbound's latch lock)

    /// Publishers: each subscriber is told where its stream began (control
    /// "start", PROTOCOL.md §6), so that it counts messages lost before the
    /// first it receives instead of taking them for ones sent before it joined.
    bool tells_start = false;
    std::uint64_t sender_id = 0;               ///< the publisher's entity id (its control frames name it)
    std::atomic<std::uint64_t> sequence{0};    ///< the last sequence the publisher stamped
    /// A subscriber's start (under Outbound's table lock): every message after
    /// `after` was sent to it; `repeated`: told again since it joined.
    struct Start {
        std::uint64_t after = 0;
        std::size_t port = 0;
        bool repeated = false;
    };
    std::map<std::uint64_t, Start> starts;     ///< by subscriber entity id
};

class Outbound {
public:
    using Clock = std::chrono::steady_clock;

    Outbound(std::vector<std::unique_ptr<OutPort>> ports, std::string key, Notices& notices);
    ~Outbound();

    /// Where other nodes reach this node (every port's locators).
    std::vector<std::string> locators() const;

    /// Sends a complete frame on every port. Thread-safe.
    SendResult send(Buffer& frame);
    /// Lends memory for a frame of up to `capacity` bytes from the first port
    /// that lends (shared memory); false if none does. Thread-safe.
    bool lend(std::size_t capacity, std::size_t& port, FrameLoan& loan);
    /// Sends a complete frame written in a loan: from where it is on the port
    /// that lent it, as a copy on every other port with a subscriber of its
    /// channel. The loan is used up. Thread-safe.
    SendResult send_loan(std::size_t port, FrameLoan& loan, std::size_t size);
    /// Takes back a loan that will not be sent. Thread-safe.
    void return_loan(std::size_t port, FrameLoan& loan);
    /// Sends a frame directed at one entity (its channel: `channel`) now if
    /// that entity's subscription has arrived, else holds it until it does,
    /// for at most `hold`: a service's reply can race the client's
    /// subscription to the server's node. A frame held longer, or pushed out
    /// of the bounded hold queue, is dropped and counted in `*lost`.
    void send_or_hold(Buffer& frame, wire::Channel channel, std::chrono::milliseconds hold,
                      std::shared_ptr<std::atomic<std::uint64_t>> lost);

    void add(Sending& sender);
    void remove(Sending& sender);
    /// Tells `sender`'s subscribers (tells_start) where their stream began,
    /// again: every one if `every`, else those not told since they joined.
    /// Messages lost before the first one a subscriber received are counted
    /// once it hears this, after them.
    void repeat_starts(Sending& sender, bool every);
    /// Remembers `frame` as `sender`'s last value (latched senders).
    void keep_last(Sending& sender, const std::uint8_t* frame, std::size_t size);

    /// Handles what the ports report (joins, leaves). Thread-safe.
    void drain_events();
    /// True if a port has events to drain (cheap).
    bool events_pending();
    /// Each port's slow housekeeping (OutPort::tidy), once the node is up.
    void tidy();
    /// Waits until `sender` has at least `count` subscribers; false on timeout.
    bool wait_for_subscribers(Sending& sender, std::size_t count, Clock::time_point deadline);
    /// The remote entities subscribed to `channel` now (their announcements).
    std::vector<wire::Announcement> subscribers_of(wire::Channel channel);

    /// The servers of service `name` with type `type` that announced themselves here.
    std::vector<std::uint64_t> announced_servers(const std::string& name, const std::string& type);
    /// Event fds for the reactor's epoll (edge-triggered).
    std::vector<int> event_fds() const;
    /// Closes the ports (the node is closing); sends fail afterwards.
    void close();

private:
    struct Port {
        std::unique_ptr<OutPort> port;
        std::mutex mutex;
    };
    struct Subscribed {
        wire::Announcement who;
        std::size_t port = 0;  // the port it joined on: a latched value goes back there only
    };
    void on_event(std::size_t port, const PortEvent& e);  // table_mutex_ held
    void count_for(Sending& s);                              // table_mutex_ held
    void replay(Sending& s, const Subscribed& to);
    void joined(Sending& s, const Subscribed& who);  // table_mutex_ held: records and tells its start
    void tell_start(Sending& s, std::uint64_t subscriber, const Sending::Start& start);
    void send_to_port(std::size_t port, Buffer& frame);
    bool heard_on(std::size_t port, wire::Channel channel);  // a subscriber of `channel` joined on that port
    void release_held(wire::Channel channel, std::size_t port);  // table_mutex_ held
    void expire_held(Clock::time_point now);                     // table_mutex_ held

    struct Held {
        std::vector<std::uint8_t> frame;
        Clock::time_point until;
        std::shared_ptr<std::atomic<std::uint64_t>> lost;
    };
    static constexpr std::size_t max_held = 256;  // frames waiting for their entity, node-wide

    std::vector<std::unique_ptr<Port>> ports_;
    std::string key_;
    Notices& notices_;
    std::atomic<bool> closed_{false};

    std::mutex table_mutex_;
    std::condition_variable table_cv_;
    std::map<wire::Channel, std::map<std::uint64_t, Subscribed>> subscribed_;  // by channel, by entity id
    std::map<std::uint64_t, Subscribed> wildcards_;                             // key-wide subscribers
    std::multimap<wire::Channel, Sending*> senders_;
    std::set<std::pair<wire::Channel, std::string>> mismatch_said_;
    std::multimap<wire::Channel, Held> held_;  // by the channel they wait for
    std::mutex latch_mutex_;  // guards every Sending::last
};

}  // namespace gecko::detail
