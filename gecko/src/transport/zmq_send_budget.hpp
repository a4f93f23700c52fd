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
// always safe; it is raised only once the larger frames are released (with
// some hysteresis, as each change is one ZeroMQ command per peer).
//
// The mark also counts frames ZeroMQ has handed to the connection but not
// yet written whole (one per peer): a peer costs at most the budget plus the
// frame being written.

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

    /// The high-water mark the socket must have when it sends a frame of
    /// `size` bytes.
    int mark_for(std::size_t size);
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

    std::size_t bytes_;
    int cap_;                 // the mark without the budget (ZMQ_SNDHWM 0, unbounded, is INT_MAX here)
    bool unbounded_frames_;   // ZMQ_SNDHWM was 0
    std::size_t untracked_;   // frames up to this size need no accounting: cap_ of them fit
    int mark_;
    std::shared_ptr<Ledger> ledger_;
};

}  // namespace gecko::detail
