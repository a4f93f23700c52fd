// SPDX-License-Identifier: Apache-2.0
#include "outbox.hpp"

#include <algorithm>

namespace gecko::bridge {

void Outbox::open(std::uint32_t id, std::size_t depth) {
    auto& q = queues_[id];
    q.depth = std::clamp<std::size_t>(depth ? depth : limits_.default_depth, 1, limits_.max_depth);
    q.max_bytes = depth ? 0 : std::max<std::size_t>(limits_.default_bytes, 1);
    q.vtime = vnow_;
}

void Outbox::close(std::uint32_t id) {
    const auto it = queues_.find(id);
    if (it == queues_.end()) return;
    active_.erase({it->second.vtime, id});
    data_bytes_ -= it->second.bytes;
    queues_.erase(it);
}

void Outbox::activate(std::uint32_t id, Queue& q) {
    // An idle subscription starts at the current clock: it goes soon, but
    // does not bank the turns it did not need.
    q.vtime = std::max(q.vtime, vnow_);
    active_.insert({q.vtime, id});
}

void Outbox::drop_oldest(std::uint32_t id, Queue& q) {
    const std::size_t cost = q.items.front().cost();
    q.items.pop_front();
    q.bytes -= cost;
    data_bytes_ -= cost;
    ++q.dropped;
    ++dropped_total_;
    if (q.items.empty()) active_.erase({q.vtime, id});
}

Outbox::Drop Outbox::push(std::uint32_t id, std::uint64_t timestamp_ns, SharedBytes payload) {
    const auto it = queues_.find(id);
    if (it == queues_.end() || !payload) return Drop::none;
    Queue& q = it->second;
    Item item{timestamp_ns, std::move(payload)};
    const std::size_t cost = item.cost();
    if (cost > limits_.data_budget) {
        ++q.dropped;
        ++dropped_total_;
        return Drop::too_large;
    }
    Drop why = Drop::none;
    if (q.items.size() >= q.depth) {
        drop_oldest(id, q);
        why = Drop::queue_full;
    }
    while (q.max_bytes && !q.items.empty() && q.bytes + cost > q.max_bytes) {
        drop_oldest(id, q);
        why = Drop::queue_full;
    }
    // Room within the budget: the oldest message of whichever queue holds the
    // most bytes goes first (the frame being written cannot be taken back).
    while (data_bytes_ + in_flight_ + cost > limits_.data_budget) {
        std::uint32_t biggest = 0;
        Queue* from = nullptr;
        for (const auto& [vt, other] : active_) {
            Queue& candidate = queues_.at(other);
            if (!from || candidate.bytes > from->bytes) {
                from = &candidate;
                biggest = other;
            }
        }
        if (!from) {  // only the frame in flight holds the budget: this one cannot fit now
            ++q.dropped;
            ++dropped_total_;
            return Drop::budget;
        }
        drop_oldest(biggest, *from);
        why = Drop::budget;
    }
    const bool was_empty = q.items.empty();
    q.items.push_back(std::move(item));
    q.bytes += cost;
    data_bytes_ += cost;
    if (was_empty) activate(id, q);
    return why;
}

bool Outbox::push_control(std::string frame, bool binary) {
    if (control_.size() + 1 > limits_.control_messages || control_bytes_ + frame.size() > limits_.control_budget)
        return false;
    control_bytes_ += frame.size();
    control_.emplace_back(std::move(frame), binary);
    return true;
}

std::optional<Outbox::Next> Outbox::next() {
    if (writing_) return std::nullopt;  // one write at a time
    if (!control_.empty()) {
        Next n;
        n.control = true;
        n.frame = std::move(control_.front().first);
        n.binary = control_.front().second;
        control_.pop_front();
        control_bytes_ -= n.frame.size();
        writing_ = true;
        return n;
    }
    if (active_.empty()) return std::nullopt;
    const auto [vtime, id] = *active_.begin();
    active_.erase(active_.begin());
    Queue& q = queues_.at(id);
    Item item = std::move(q.items.front());
    q.items.pop_front();
    const std::size_t cost = item.cost();
    q.bytes -= cost;
    data_bytes_ -= cost;
    in_flight_ = cost;
    writing_ = true;
    vnow_ = vtime;
    q.vtime = vtime + cost;
    if (!q.items.empty()) active_.insert({q.vtime, id});
    Next n;
    n.subscription = id;
    n.timestamp_ns = item.timestamp_ns;
    n.payload = std::move(item.payload);
    return n;
}

void Outbox::sent() {
    in_flight_ = 0;
    writing_ = false;
}

std::uint64_t Outbox::dropped(std::uint32_t id) const {
    const auto it = queues_.find(id);
    return it == queues_.end() ? 0 : it->second.dropped;
}

std::size_t Outbox::queued_messages() const noexcept {
    std::size_t n = control_.size();
    for (const auto& [id, q] : queues_) n += q.items.size();
    return n;
}

}  // namespace gecko::bridge
