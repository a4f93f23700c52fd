// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file outbox.hpp
/// What one client is waiting to receive, bounded, and the order it goes out
/// in (docs/BRIDGE.md §4, flow control):
///
/// - the control plane (serverInfo, advertise, status, service replies) is
///   one FIFO, sent before any data; bounded in messages and bytes, and a
///   client that lets it overflow is disconnected (Outbox::push_control
///   says so);
/// - each subscription has its own queue, the oldest dropped beyond it: of
///   the `depth` messages it asked for (1: latest-wins), or, if it did not
///   ask, of at most `default_depth` messages and `default_bytes` bytes,
///   whichever is fewer, and at least one message. Bytes, because the depth
///   that suits a client that does not ask (a Foxglove client never does)
///   depends on the messages' size: a burst of small ones fits, while a
///   topic of large images keeps only the latest, never queued seconds late;
/// - all data queued for the client, plus the frame being written, stays
///   within `data_budget` bytes: past it, the oldest message of the
///   subscription holding the most bytes goes first, so a large topic cannot
///   push a small one out;
/// - subscriptions take turns by bytes sent (start-time fair queueing): a
///   subscription that was idle goes next, so a 100 B message waits behind
///   at most the one frame already being written, never behind a queue of
///   images.
///
/// Every drop is counted per subscription. Single-threaded: the client's
/// connection uses it from its own thread.

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace gecko::bridge {

struct OutboxLimits {
    std::size_t data_budget = 16u << 20;      ///< bytes of data queued or being written, for this client
    std::size_t default_depth = 1024;         ///< messages a subscription keeps unless it asks otherwise ...
    std::size_t default_bytes = 1u << 20;     ///< ... and the bytes it keeps, whichever is fewer (at least one message)
    std::size_t max_depth = 1024;             ///< the most a subscription may ask for
    std::size_t control_budget = 8u << 20;    ///< bytes of control messages waiting
    std::size_t control_messages = 8192;      ///< control messages waiting
};

/// A message's bytes, shared by every client that receives them.
using SharedBytes = std::shared_ptr<const std::string>;

class Outbox {
public:
    explicit Outbox(OutboxLimits limits = {}) : limits_(limits) {}

    /// Why a message was dropped (each counted).
    enum class Drop { none, queue_full, budget, too_large };

    /// Starts a queue for subscription `id` keeping at most `depth` messages
    /// (clamped to [1, max_depth]); 0, the subscription did not ask: at most
    /// `default_depth` messages within `default_bytes`, and at least one.
    void open(std::uint32_t id, std::size_t depth = 0);
    /// Ends it; what it still holds is discarded (not counted as dropped).
    void close(std::uint32_t id);
    bool has(std::uint32_t id) const { return queues_.count(id) != 0; }

    /// Queues a message for subscription `id` (ignored if it has none).
    /// Returns why a message (this one or an older one) was dropped to make room, if one was.
    Drop push(std::uint32_t id, std::uint64_t timestamp_ns, SharedBytes payload);
    /// Queues a control message. False when the control plane is full: the
    /// caller disconnects the client.
    bool push_control(std::string frame, bool binary);

    /// What to write next, or nothing. Its bytes count as in flight until sent().
    struct Next {
        bool control = false;
        bool binary = false;
        std::string frame;                 ///< control: the whole message
        std::uint32_t subscription = 0;    ///< data: its subscription ...
        std::uint64_t timestamp_ns = 0;    ///< ... its timestamp ...
        SharedBytes payload;               ///< ... and its bytes (after a MessageData header)
    };
    std::optional<Next> next();
    /// The last next() was written.
    void sent();

    /// Messages dropped for subscription `id` so far (0 for an unknown one).
    std::uint64_t dropped(std::uint32_t id) const;
    std::uint64_t dropped_total() const noexcept { return dropped_total_; }
    std::size_t data_bytes() const noexcept { return data_bytes_ + in_flight_; }
    std::size_t control_bytes() const noexcept { return control_bytes_; }
    std::size_t queued_messages() const noexcept;
    const OutboxLimits& limits() const noexcept { return limits_; }

private:
    static constexpr std::size_t overhead = 64;  // per message: header, bookkeeping
    struct Item {
        std::uint64_t timestamp_ns;
        SharedBytes payload;
        std::size_t cost() const noexcept { return payload->size() + overhead; }
    };
    struct Queue {
        std::deque<Item> items;
        std::size_t bytes = 0;
        std::size_t depth = 16;
        std::size_t max_bytes = 0;  // 0: bounded by depth alone
        std::uint64_t vtime = 0;  // bytes-sent clock of fair queueing
        std::uint64_t dropped = 0;
    };
    void drop_oldest(std::uint32_t id, Queue& q);
    void activate(std::uint32_t id, Queue& q);

    OutboxLimits limits_;
    std::map<std::uint32_t, Queue> queues_;
    std::set<std::pair<std::uint64_t, std::uint32_t>> active_;  // (vtime, id) of non-empty queues
    std::uint64_t vnow_ = 0;
    std::size_t data_bytes_ = 0;
    std::size_t in_flight_ = 0;   // data bytes being written
    bool writing_ = false;
    std::deque<std::pair<std::string, bool>> control_;
    std::size_t control_bytes_ = 0;
    std::uint64_t dropped_total_ = 0;
};

}  // namespace gecko::bridge
