// SPDX-License-Identifier: Apache-2.0
// The publisher's chunk pool: see shm_pool.hpp.
#include "transport/shm_pool.hpp"

#include <algorithm>

namespace gecko::detail::shm {

Pool::Pool(const View& view, Backing& backing, const Options& options, u64 resident)
    : view_(view), backing_(backing), options_(options), resident_(resident) {
    const Geometry& g = view_.geo;
    backed_.assign(g.chunk_total, 0);
    used_pass_.assign(g.chunk_total, 0);
    loaned_.assign(g.chunk_total, 0);
    seq_.assign(g.chunk_total, 0);
    cursor_.assign(g.class_count, 0);
    class_backed_.assign(g.class_count, 0);
}

bool Pool::is_free(u64 c) const { return !loaned_[c] && view_.desc(c).owners.load(std::memory_order_acquire) == 0; }

bool Pool::may_lend(std::size_t k) const {
    return k < view_.geo.class_count && loans_[k] < std::max<u64>(1, view_.geo.classes[k].count / 2);
}

void Pool::lend(u64 c) {
    loaned_[c] = 1;
    ++loans_[view_.geo.class_of(c)];
}

void Pool::unlend(u64 c) {
    loaned_[c] = 0;
    --loans_[view_.geo.class_of(c)];
}

void Pool::pass() {
    ++pass_;
    for (u64 c = 0; c < view_.geo.chunk_total; ++c) {
        if (!backed_[c] || view_.geo.classes[view_.geo.class_of(c)].chunk_size < options_.lazy_from) continue;
        if (pass_ - used_pass_[c] < options_.idle_passes || !is_free(c)) continue;
        give_back(c);
    }
}

// Punches chunk c's pages out of the segment: their memory goes back to the system.
void Pool::give_back(u64 c) {
    backing_.release(view_.geo.payload_offset(c), backed_[c]);
    resident_ -= backed_[c];
    backed_[c] = 0;
}

// Makes sure the pages of chunk c that a `size`-byte frame uses exist before
// the publisher writes them: a full /dev/shm is a dropped frame, never a
// SIGBUS. A huge chunk is backed only as far as used.
bool Pool::back(u64 c, std::size_t size) {
    const std::size_t k = view_.geo.class_of(c);
    const auto& cl = view_.geo.classes[k];
    if (cl.chunk_size < page) {
        if (class_backed_[k]) return true;
        if (!backing_.reserve(cl.offset, cl.chunk_size * cl.count)) return false;
        class_backed_[k] = 1;
        resident_ += cl.chunk_size * cl.count;
        return true;
    }
    const u64 need = backing(c, size);
    if (backed_[c] >= need) return true;
    if (!backing_.reserve(view_.geo.payload_offset(c) + backed_[c], need - backed_[c])) return false;
    resident_ += need - backed_[c];
    backed_[c] = need;
    return true;
}

// The bytes of chunk c a `size`-byte frame needs memory behind (whole pages).
u64 Pool::backing(u64 c, std::size_t size) const {
    const auto& cl = view_.geo.classes[view_.geo.class_of(c)];
    if (cl.chunk_size < page) return class_backed_[view_.geo.class_of(c)] ? 0 : cl.chunk_size * cl.count;
    return std::min<u64>(cl.chunk_size, (size + page - 1) / page * page);
}

// Whether chunk c can take a `size`-byte frame within the memory limit.
bool Pool::within_memory(u64 c, std::size_t size) const {
    if (options_.memory_limit == 0) return true;
    const u64 need = backing(c, size);  // backed_ of a small class's chunk is 0: its whole class, or 0 once there
    return resident_ + (need > backed_[c] ? need - backed_[c] : 0) <= options_.memory_limit;
}

// Chunk c for a `size`-byte frame if that stays within the memory limit;
// else a free chunk of its class whose pages are there already; else c once
// idle chunks (free, not lent) have given their pages back, least recently
// used first. no_chunk if none of that makes room.
u64 Pool::within_memory_or_other(u64 c, std::size_t size) {
    if (within_memory(c, size)) return c;
    const auto& cl = view_.geo.classes[view_.geo.class_of(c)];
    for (u64 d = cl.first; d < cl.first + cl.count; ++d)
        if (d != c && backed_[d] >= backing(d, size) && is_free(d)) return d;
    while (!within_memory(c, size)) {
        u64 oldest = no_chunk;
        for (u64 d = 0; d < view_.geo.chunk_total; ++d)
            if (d != c && backed_[d] && is_free(d) && (oldest == no_chunk || used_pass_[d] < used_pass_[oldest])) oldest = d;
        if (oldest == no_chunk) return no_chunk;
        give_back(oldest);
    }
    return c;
}

u64 Pool::take_chunk(u64 c, std::size_t size, NoChunk& why) {
    if (!back(c, size)) {
        why = NoChunk::no_room;
        return no_chunk;
    }
    seq_[c] = ++seq_counter_;
    used_pass_[c] = pass_;
    const std::size_t k = view_.geo.class_of(c);
    recent_[k][recent_at_[k]++ % recent_[k].size()] = c;
    return c;
}

// A free chunk of class k: one of the last few used first (their pages are
// mapped and warm in both processes), else the next in turn.
u64 Pool::find_free(std::size_t k) {
    const auto& cl = view_.geo.classes[k];
    for (std::size_t n = 1; n <= recent_[k].size() && n <= recent_at_[k]; ++n) {
        const u64 c = recent_[k][(recent_at_[k] - n) % recent_[k].size()];
        if (is_free(c)) return c;
    }
    // Large chunks: one whose pages are there already before one whose pages
    // the copy would fault in (first-touch faults cost milliseconds per MiB
    // on some VMs), so a class holds as many warm chunks as its subscribers'
    // lag needs, not all of them.
    if (cl.chunk_size >= options_.lazy_from)
        for (u64 c = cl.first; c < cl.first + cl.count; ++c)
            if (backed_[c] != 0 && is_free(c)) return c;
    // A class whose last look found every chunk queued or held (a subscriber
    // behind): look at the next 16 chunks only (each look further on), and
    // at the whole class again every 32nd time. Scanning all of it on every
    // frame, only to take back the oldest queued one anyway, was most of a
    // publisher's time while its subscriber fell behind.
    const u64 budget = starved_[k] % 32 != 0 ? std::min<u64>(cl.count, 16) : cl.count;
    for (u64 n = 0; n < budget; ++n) {
        const u64 idx = (cursor_[k] + n) % cl.count;
        if (is_free(cl.first + idx)) {
            cursor_[k] = idx + 1;
            starved_[k] = 0;
            return cl.first + idx;
        }
    }
    if (budget < cl.count) cursor_[k] = (cursor_[k] + budget) % cl.count;  // the next look goes further
    ++starved_[k];
    return no_chunk;
}

// The smallest class that fits; when it is exhausted, the oldest queued
// frames of that class are taken back (counted as drops for their
// subscribers); then a larger class.
u64 Pool::allocate(std::size_t size, TakeBack take_back, SendResult& result, NoChunk& why) {
    const Geometry& g = view_.geo;
    why = NoChunk::none;
    const std::size_t k = g.class_for(size);
    if (k == g.class_count) {
        why = NoChunk::too_large;
        return no_chunk;
    }
    if (u64 c = find_free(k); c != no_chunk) {
        c = within_memory_or_other(c, size);
        if (c != no_chunk) return take_chunk(c, size, why);
    }
    for (u64 guard = 0; guard < g.slot_count * g.ring_capacity; ++guard) {
        const TakenBack taken = take_back(k, result);
        if (!taken.any) break;
        const u64 first = taken.first;
        if (first != no_chunk && view_.desc(first).owners.load(std::memory_order_acquire) == 0) {
            if (const u64 c = within_memory_or_other(first, size); c != no_chunk) return take_chunk(c, size, why);
        }
    }
    for (std::size_t larger = k + 1; larger < g.class_count; ++larger)
        if (u64 c = find_free(larger); c != no_chunk && (c = within_memory_or_other(c, size)) != no_chunk)
            return take_chunk(c, size, why);
    if (options_.memory_limit && resident_ + backing(g.classes[k].first, size) > options_.memory_limit) {
        ++over_memory_;
        why = NoChunk::over_memory;
        return no_chunk;
    }
    why = NoChunk::exhausted;
    return no_chunk;
}

}  // namespace gecko::detail::shm
