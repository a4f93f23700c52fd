// SPDX-License-Identifier: Apache-2.0
#pragma once
// A sink is what one receiving entity (subscriber, service server, client
// waiting for replies) holds in its node: the keep-last-N queue of frames
// that arrived for it, the checks every frame passes first, and its counters.
//
// offer() runs on whichever thread is draining the node's in-ports (the
// reactor or an application thread in receive()/spin()); pop() on the reader.
// Both take the sink's own lock, which never covers a call out of Gecko: what
// deserves a log line is handed to the node's notices, which the reactor writes.
// Only the count is also read without it (empty(), size(), an empty pop()):
// a waiting reader looks at it on every turn of its wait.

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "gecko/stats.hpp"
#include "gecko/wire/frame.hpp"
#include "node/channel_names.hpp"
#include "transport/frame.hpp"

namespace gecko::detail {

class Notices;

/// What a sink accepts.
struct SinkConfig {
    wire::Channel channel = 0;          ///< the topic's channel (or, for servers/clients, their directed channel)
    wire::Channel directed = 0;         ///< a second channel routed here (a subscriber's latched values); 0: none
    bool wildcard = false;              ///< every channel of channel's key (tools, recorders)
    /// wildcard: a frame is taken once the directory names its channel
    /// (name_channel()), and held until then; false: taken as it comes, unnamed.
    bool resolving = false;
    std::uint64_t type_hash = 0;        ///< frames of another type hash are refused; 0: any type
    std::string type_name;              ///< for messages ("gecko.msgs.Imu"); empty: any
    std::size_t depth = 16;             ///< keep-last-N
    std::size_t max_message_size = 64u << 20;
    std::size_t max_publishers = 1024;  ///< per-publisher state kept at most (oldest forgotten first, counted)
    std::uint8_t accept_flags = 0;      ///< frames must carry these flags (request, reply); data: 0
    std::string what;                   ///< "subscriber of 'imu'", for messages
    bool callback = false;              ///< drained by spin() rather than receive()
    /// Servers: a rejected frame whose header still names its sender and
    /// sequence is queued too, marked with its error, so the call gets an answer.
    bool answer_rejected = false;
};

/// One frame taken from a sink.
struct Delivery {
    Frame frame;
    wire::FrameView view;
    std::int64_t receive_ns = 0;
    wire::FrameError error = wire::FrameError::none;  ///< answer_rejected: why it was refused (then only sender and sequence are set)
    std::shared_ptr<const ChannelInfo> channel;       ///< resolving wildcard sinks: the directory's entry of its topic
};

class Sink {
public:
    Sink(SinkConfig config, Notices& notices);

    const SinkConfig& config() const noexcept { return config_; }

    /// Checks `frame` and queues it: a share of it, or, if `last` (no other
    /// sink is offered this frame after this one), the frame itself, moved
    /// out (one owner fewer to count). Returns true if it was queued.
    bool offer(Frame& frame, std::int64_t receive_ns, bool last);
    /// Takes the oldest queued frame; false if none.
    bool pop(Delivery& out);
    bool empty() const;
    std::size_t size() const;

    /// Discovery no longer lists publisher `sender` (since `now_ns`). Its
    /// state is kept until forget_departed(): its last frames may still be
    /// queued behind others, and their sequence tells what was lost.
    void unlist_publisher(std::uint64_t sender, std::int64_t now_ns);

    /// Resolving wildcard sinks: the directory lists `info`, whose frames
    /// are taken when `wanted` and left otherwise; or (unname_channel) it no
    /// longer lists the topic of `channel` since `now_ns`: its late frames
    /// are still taken as that topic's until forget_departed() forgets it.
    /// Frames held for it are queued or dropped now. Returns true if
    /// something was queued.
    bool name_channel(std::shared_ptr<const ChannelInfo> info, bool wanted);
    void unname_channel(wire::Channel channel, std::int64_t now_ns);
    /// Forgets the channels unnamed before `before_ns` (frames on them are
    /// held again, as unknown), and the publishers unlisted before it that
    /// have sent nothing since.
    void forget_departed(std::int64_t before_ns);
    /// Frames held since before `before_ns` (now_ns clock) for a channel the
    /// directory has not named: dropped and counted (`unlisted`).
    void expire_held(std::int64_t before_ns);
    /// From now on frames are taken as they come, unnamed (there is no
    /// directory to wait for); the held ones are queued. True if any was.
    bool stop_resolving();

    /// Whether a frame from one of `senders` arrived at or after `since_ns` (now_ns clock).
    bool heard_since(const std::vector<std::uint64_t>& senders, std::int64_t since_ns) const;

    /// Counting what the reader did with a delivery.
    void count_delivered();
    void count_decode_error(const std::string& what);
    void count_callback_error(const std::string& what, std::uint64_t sequence);
    void count_decompress_error();

    SubscriberStats stats() const;

private:
    struct Slot {
        Frame frame;
        std::int64_t receive_ns = 0;
        wire::FrameError error = wire::FrameError::none;
        std::shared_ptr<const ChannelInfo> channel;
    };
    void queue(Frame&& frame, std::int64_t receive_ns, wire::FrameError error,
               std::shared_ptr<const ChannelInfo> channel = nullptr);  // sink lock held
    // What a wildcard sink does with a data frame: take it (naming its topic), leave it, or hold it.
    enum class Route { take, leave, hold };
    Route route(const wire::FrameHeader& h, std::shared_ptr<const ChannelInfo>& channel) const;  // sink lock held
    bool release_held();  // sink lock held: held frames that can go now go; true if any was queued
    struct Publisher {
        std::uint64_t last_sequence = 0;
        std::uint64_t received = 0;
        std::uint64_t drops = 0;
        std::uint64_t last_seen = 0;  // offer counter: for forgetting the least recent
        std::int64_t last_receive_ns = 0;
        std::int64_t unlisted_ns = 0;  // when discovery stopped listing it; 0: listed
        std::uint64_t first_sequence = 0;  // the first received, when taken as the start of our stream
        bool start_known = false;          // it said where our stream began (control "start"), or that can no longer matter
        bool start_said = false;           // start_after: what it said
        std::uint64_t start_after = 0;
    };
    void depart(std::unordered_map<std::uint64_t, Publisher>::iterator it);  // sink lock held: forgets, keeping its counts

    bool accept(const wire::FrameView& view, std::size_t wire_size, std::int64_t receive_ns);  // sink lock held
    void control(const wire::FrameView& view);                                                   // sink lock held
    void start_after(std::uint64_t sender, std::uint64_t after);                                 // sink lock held
    Publisher& publisher(std::uint64_t sender);                                                   // sink lock held
    // Whether `lost` more sequence numbers fit the sink's loss budget (taken if so); else the jump is an epoch.
    bool plausible_loss(std::uint64_t lost);                                                      // sink lock held

    SinkConfig config_;
    Notices& notices_;
    mutable std::mutex mutex_;
    std::vector<Slot> ring_;
    std::size_t head_ = 0;
    std::atomic<std::size_t> count_{0};  // changed under the lock; read without it too
    std::unordered_map<std::uint64_t, Publisher> publishers_;
    // The counts of the latest departed publishers, oldest first (stats() reports them).
    static constexpr std::size_t max_departed = 256;
    std::deque<std::pair<std::uint64_t, PeerStats>> departed_;
    std::uint64_t offers_ = 0;
    SubscriberStats stats_;
    using Clock = std::chrono::steady_clock;
    std::uint64_t gap_credit_;          // sequence numbers it may still count as lost (plausible_loss)
    Clock::time_point gap_credit_at_;   // when the budget was last refilled
    // Resolving wildcard sinks: what the directory said, and the frames that wait for it.
    struct Held {
        Frame frame;
        std::int64_t receive_ns = 0;
    };
    ChannelNames names_;
    std::deque<Held> held_;
};

}  // namespace gecko::detail
