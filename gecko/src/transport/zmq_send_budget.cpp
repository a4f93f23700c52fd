// SPDX-License-Identifier: Apache-2.0
#include "transport/zmq_send_budget.hpp"

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <new>

namespace gecko::detail {
namespace {
// Frames above this are handed to ZeroMQ without a copy; below it a copy is
// cheaper than the allocation it saves.
constexpr std::size_t zero_copy_threshold = 64 * 1024;
}  // namespace

// The sizes of the accounted frames ZeroMQ still holds. Released on ZeroMQ's
// I/O thread, possibly after the port is gone: each frame keeps it alive.
struct ZmqSendBudget::Ledger {
    mutable std::mutex mutex;
    std::map<std::size_t, std::size_t> held;  // size -> frames of that size
    std::size_t frames = 0;

    void add(std::size_t size) {
        std::lock_guard<std::mutex> lock(mutex);
        ++held[size];
        ++frames;
    }
    void remove(std::size_t size) noexcept {
        std::lock_guard<std::mutex> lock(mutex);
        const auto it = held.find(size);
        if (it == held.end()) return;
        if (--it->second == 0) held.erase(it);
        --frames;
    }
    std::size_t largest() const {
        std::lock_guard<std::mutex> lock(mutex);
        return held.empty() ? 0 : held.rbegin()->first;
    }
};

struct ZmqSendBudget::Ticket {
    std::shared_ptr<Ledger> ledger;
    std::size_t size;
};

ZmqSendBudget::ZmqSendBudget(std::size_t bytes, int frames)
    : bytes_(bytes),
      cap_(frames > 0 ? frames : INT_MAX),
      unbounded_frames_(frames <= 0),
      untracked_(bytes / static_cast<std::size_t>(frames > 0 ? frames : INT_MAX)),
      mark_(cap_),
      told_(frames > 0 ? frames : 0),
      ledger_(std::make_shared<Ledger>()) {}

int ZmqSendBudget::lowest_mark_after(int mark) noexcept {
    if (mark <= 0 || mark > 2048) return 0;
    // Its reader may owe up to acknowledged_every(mark) - 1 frames; told m,
    // it tells the writer within the next acknowledged_every(m) frames it
    // reads, which must fit under m with them: m / 2 >= owed.
    return std::max(1, 2 * (acknowledged_every(mark) - 1));
}

int ZmqSendBudget::mark_for(std::size_t size, Clock::time_point now) {
    if (bytes_ != 0 && (size > untracked_ || mark_ < cap_)) {
        const std::size_t largest = std::max({size, untracked_, ledger_->largest(), std::size_t{1}});
        const std::size_t fit = bytes_ / largest;
        int wanted = fit >= static_cast<std::size_t>(cap_) ? cap_ : std::max(1, static_cast<int>(fit));
        if (peers_ && wanted > mark_) {
            // Up only back to the cap, after a quiet while, and only from a
            // mark whose queues' debts fit under the cap's: told a higher
            // mark, a reader may owe what it owed plus the new mark's worth.
            // Then never down again (told() sets the floor).
            const bool quiet = !accounted_ever_ || now - accounted_at_ >= raise_after;
            const bool fits = static_cast<long long>(mark_) - 1 + acknowledged_every(cap_) - 1 < cap_;
            wanted = quiet && fits ? cap_ : mark_;
        }
        if (size > untracked_) {
            accounted_at_ = now;
            accounted_ever_ = true;
        }
        wanted = std::max(wanted, floor_);
        // Down at once; up only by a quarter at least, or back to the cap
        // (frames of varying size would otherwise move it on every send).
        if (wanted < mark_ || wanted == cap_ || wanted >= mark_ + mark_ / 4LL + 1) mark_ = wanted;
    }
    return sockopt();
}

void ZmqSendBudget::told(int value) {
    const bool raised = value <= 0 || (told_ > 0 && told_ < value);
    told_ = value;
    if (peers_ && raised) floor_ = cap_;
}

void ZmqSendBudget::sent() {
    if (!peers_ || floor_ == cap_) return;
    const int lowest = lowest_mark_after(told_);
    floor_ = lowest == 0 ? cap_ : std::max(floor_, std::min(lowest, cap_));
}

int ZmqSendBudget::heard() {
    if (!peers_) {
        peers_ = true;
        // One frame at most reached a peer before it was heard: it owes one.
        floor_ = std::max(floor_, std::min(2, cap_));
        mark_ = std::max(mark_, floor_);
    }
    return sockopt();
}

zmq::message_t ZmqSendBudget::message(Buffer& frame) {
    const std::size_t size = frame.size();
    if (!accounted(size)) {
        if (size < zero_copy_threshold) return zmq::message_t(frame.data(), size);
        return zmq::message_t(frame.release(), size, [](void* data, void*) { std::free(data); }, nullptr);
    }
    void* data;
    if (size < zero_copy_threshold) {
        data = std::malloc(size);
        if (!data) throw std::bad_alloc();
        std::memcpy(data, frame.data(), size);
    } else {
        data = frame.release();
    }
    auto* ticket = new Ticket{ledger_, size};
    zmq::message_t out;
    try {
        out = zmq::message_t(data, size, &ZmqSendBudget::release, ticket);
    } catch (...) {
        delete ticket;
        std::free(data);
        throw;
    }
    ledger_->add(size);  // before ZeroMQ can release it: it is sent after this returns
    return out;
}

void ZmqSendBudget::release(void* data, void* hint) noexcept {
    std::free(data);
    auto* ticket = static_cast<Ticket*>(hint);
    ticket->ledger->remove(ticket->size);
    delete ticket;
}

std::size_t ZmqSendBudget::held() const {
    std::lock_guard<std::mutex> lock(ledger_->mutex);
    return ledger_->frames;
}

}  // namespace gecko::detail
