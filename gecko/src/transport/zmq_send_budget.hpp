// SPDX-License-Identifier: Apache-2.0
#pragma once
// A byte budget for what a ZeroMQ socket queues for each peer. ZeroMQ counts
// a peer's queue in messages (ZMQ_SNDHWM), not bytes: a stopped subscriber of
// 1 MiB frames would hold 1,000 of them. ZeroMQ says nothing about one
// peer's queue, so the budget works through the one limit it has: before
// each frame the high-water mark is set so that it times the largest frame
// ZeroMQ may still hold stays within the budget.
//
// Why that bounds every peer's queue: frames of at most budget / send_queue
// bytes need no accounting (send_queue of them fit). Every larger frame is
// handed to ZeroMQ with a release function, and the budget keeps the sizes
// of those ZeroMQ has not released yet. A frame enters a peer's queue only
// while that queue holds fewer frames than the mark of the moment, and the
// mark was then at most budget / (the largest frame held, this one included):
// every frame in the queue was held then, so the queue's bytes were within
// the budget, and have only shrunk since. Lowering the mark is therefore
// safe for the budget; it is raised only once the larger frames are
// released (with some hysteresis, as each change is one ZeroMQ command per
// peer).
//
// A lower mark is not always safe for the peer. ZeroMQ's writer counts a
// queue as the frames it wrote less the frames its reader last said it
// read, and the reader says so only at every multiple of
// acknowledged_every(the mark it was told): a queue its reader has emptied
// may still count up to that many less one. Told a mark that count reaches,
// the queue is full for the writer, and the first frame it refuses stops it
// for good (libzmq 4.3 waits for word from a reader that has nothing left
// to read): that peer would hear nothing from this node again. A reader
// owes only for frames it read, so once a peer came (heard()), the mark
// never goes below lowest_mark_after(any mark a frame was sent under since:
// sent()), which leaves one step of the reader's acknowledgement at most;
// it does not rise while accounted frames keep coming, and once it rose
// (back to the cap, after raise_after without them) it does not come down
// again (frames sent before may be read under the new mark). The price: a
// node that sent its peers small frames under the full mark before its
// first large one keeps nearly that mark; its peers' queues are then
// bounded in frames, as without the budget, not in bytes. A node that
// sends only large frames, or large ones first, is bounded in bytes.
//
// The mark also counts frames ZeroMQ has handed to the connection but not
// yet written whole (one per peer): a peer costs at most the budget plus the
// frame being written.

#include <chrono>
#include <climits>
#include <cstddef>
#include <memory>

#include <zmq.hpp>

#include "gecko/buffer.hpp"

namespace gecko::detail {

class ZmqSendBudget {
public:
    /// `bytes` per peer (0: no byte bound, the mark stays `frames`);
    /// `frames`: ZMQ_SNDHWM without the budget (0: no bound in frames).
    ZmqSendBudget(std::size_t bytes, int frames);

    using Clock = std::chrono::steady_clock;
    /// How long no accounted frame must be sent before a mark a peer was
    /// told may rise.
    static constexpr std::chrono::seconds raise_after{10};

    /// The high-water mark the socket must have when it sends a frame of
    /// `size` bytes at `now`.
    int mark_for(std::size_t size, Clock::time_point now);
    int mark_for(std::size_t size) { return mark_for(size, Clock::now()); }
    /// The socket's ZMQ_SNDHWM was set to `value` (every queue hears it).
    void told(int value);
    /// A frame was sent under the mark last told: a peer's reader may owe
    /// for it.
    void sent();
    /// A peer subscribed: from now on a queue may owe acknowledgements (a
    /// pipe ZeroMQ attached during the last send may have had its frame).
    /// Returns the mark the socket must have now (never lower than before).
    int heard();
    /// Whether a peer has come (heard() was called).
    bool peers() const noexcept { return peers_; }

    /// How many frames the reader of a queue told `mark` reads before it
    /// tells the writer so (libzmq's low-water mark, pipe.cpp compute_lwm).
    static int acknowledged_every(int mark) noexcept { return mark > 2048 ? mark - 1024 : (mark + 1) / 2; }
    /// The lowest mark a queue told `mark` can be given later and still never
    /// be full while its reader has emptied it; 0: no lower one.
    static int lowest_mark_after(int mark) noexcept;
    /// The mark without the budget: what ZeroMQ gives connections it makes
    /// before they are told otherwise.
    int initial_mark() const noexcept { return unbounded_frames_ ? 0 : cap_; }

    /// `frame` as a ZeroMQ message (the frame's memory is taken when it is
    /// large). A frame the budget must account for is released through it.
    zmq::message_t message(Buffer& frame);

    /// Frames handed to ZeroMQ and not released yet that the budget accounts for.
    std::size_t held() const;

private:
    struct Ledger;
    struct Ticket;
    static void release(void* data, void* hint) noexcept;

    bool accounted(std::size_t size) const noexcept { return bytes_ != 0 && size > untracked_; }
    int sockopt() const noexcept { return mark_ == INT_MAX && unbounded_frames_ ? 0 : mark_; }

    std::size_t bytes_;
    int cap_;                 // the mark without the budget (ZMQ_SNDHWM 0, unbounded, is INT_MAX here)
    bool unbounded_frames_;   // ZMQ_SNDHWM was 0
    std::size_t untracked_;   // frames up to this size need no accounting: cap_ of them fit
    int mark_;
    bool peers_ = false;  // a peer subscribed: its queue may owe acknowledgements
    int floor_ = 1;       // the lowest mark that cannot stop a peer's queue
    int told_;            // ZMQ_SNDHWM as last set (0: no bound)
    Clock::time_point accounted_at_{};  // when the last accounted frame was sent
    bool accounted_ever_ = false;
    std::shared_ptr<Ledger> ledger_;
};

}  // namespace gecko::detail
