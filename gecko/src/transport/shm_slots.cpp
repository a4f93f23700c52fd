// SPDX-License-Identifier: Apache-2.0
// The publisher's table of subscriber slots: see shm_slots.hpp.
#include "transport/shm_slots.hpp"

#include <unistd.h>

#include <algorithm>

#include "transport/shm_doorbell.hpp"
#include "transport/shm_interests.hpp"

namespace gecko::detail::shm {

bool Slots::Peer::wants(wire::Channel c) const {
    if (everything) return true;
    if (std::binary_search(exact.begin(), exact.end(), c)) return true;
    for (auto k : keys)
        if (k == wire::key_part(c)) return true;
    return false;
}

Slots::Slots(const View& view, const Config& config, Notices& notices, std::string name)
    : view_(view), config_(config), notices_(notices), name_(std::move(name)), my_ns_(own_pid_namespace()) {}

Slots::~Slots() {
    for (auto& p : peers_)
        if (p.bell >= 0) ::close(p.bell);
}

std::vector<PortEvent> Slots::take_events() {
    std::vector<PortEvent> events;
    events.swap(events_);
    return events;
}

std::size_t Slots::occupied() const {
    std::size_t n = 0;
    for (std::size_t i = 0; i < view_.geo.slot_count; ++i)
        if (state_of(view_.slot(i).state.load(std::memory_order_acquire)) != slot_free) ++n;
    return n;
}

void Slots::wake_all() {
    for (auto& p : peers_) ring(p.bell);
}

// ---- who is there -------------------------------------------------------------------------

void Slots::report(bool joined, const Interest& i) {
    if (i.announcement.empty()) return;
    auto who = wire::parse_announcement(i.announcement);
    if (!who) return;
    events_.push_back(PortEvent{joined, std::move(*who)});
}

void Slots::set_interests(Peer& p, std::vector<Interest> interests, bool everything) {
    // Joins and leaves, as a multiset difference of the announcements.
    std::vector<bool> kept(p.interests.size(), false);
    for (const auto& n : interests) {
        bool found = false;
        for (std::size_t k = 0; k < p.interests.size() && !found; ++k)
            if (!kept[k] && same_interest(p.interests[k], n)) found = kept[k] = true;
        if (!found) report(true, n);
    }
    for (std::size_t k = 0; k < p.interests.size(); ++k)
        if (!kept[k]) report(false, p.interests[k]);
    p.interests = std::move(interests);
    p.exact.clear();
    p.keys.clear();
    for (const auto& i : p.interests) {
        if (i.wildcard) p.keys.push_back(wire::key_part(i.channel));
        else p.exact.push_back(i.channel);
    }
    std::sort(p.exact.begin(), p.exact.end());
    p.everything = everything;
}

void Slots::update_interests(std::size_t i) {
    std::vector<Interest> interests;
    bool overflow = false;
    u64 version = 0;
    switch (read_interests(view_, i, interests, overflow, version)) {
        case Read::ok:
            peers_[i].version = version;
            set_interests(peers_[i], std::move(interests), overflow);
            break;
        case Read::busy:
            seen_changes_ = ~u64{0};  // look again next time
            break;
        case Read::corrupt:
            ++corrupt_;
            reclaim(i, "its subscriber wrote unreadable interests");
            break;
    }
}

void Slots::join(std::size_t i, u64 word) {
    SlotHead& s = view_.slot(i);
    Peer& p = peers_[i];
    if (p.bell >= 0) ::close(p.bell);
    p = Peer{};
    p.word = word;
    p.tail = s.tail.load(std::memory_order_relaxed);
    const u64 head = s.head.load(std::memory_order_acquire);
    if (head > p.tail || p.tail - head > view_.geo.ring_capacity) {
        ++corrupt_;
        reclaim(i, "its ring indices are out of range");
        return;
    }
    p.head_seen = head;
    p.active = true;
    p.bell = open_bell(bell_path(i));
    update_interests(i);
}

std::string Slots::bell_path(std::size_t i) const {
    SlotHead& s = view_.slot(i);
    return subscriber_bell(config_.directory, s.pid_ns.load(std::memory_order_relaxed),
                           pid_of(s.state.load(std::memory_order_relaxed)), s.start_time.load(std::memory_order_relaxed),
                           s.bell.load(std::memory_order_relaxed));
}

void Slots::leave_all(Peer& p) {
    if (p.active)
        for (const auto& i : p.interests) report(false, i);
    p.active = false;
    p.interests.clear();
    p.exact.clear();
    p.keys.clear();
    p.everything = false;
}

// Leaves, and forgets the slot's subscriber.
void Slots::forget(Peer& p) {
    leave_all(p);
    if (p.bell >= 0) ::close(p.bell);
    p = Peer{};
}

// Takes back every queued entry (the subscriber left: not counted as drops).
void Slots::steal_all(std::size_t i) {
    SlotHead& s = view_.slot(i);
    std::atomic<u64>* ring = view_.ring(i);
    const u64 cap = view_.geo.ring_capacity;
    const u64 tail = peers_[i].tail;
    u64 h = s.head.load(std::memory_order_acquire);
    for (u64 guard = 0; h < tail && tail - h <= cap && guard <= cap; ++guard)
        if (s.head.compare_exchange_strong(h, h + 1, std::memory_order_acq_rel, std::memory_order_acquire))
            view_.release(ring[h % cap].load(std::memory_order_relaxed), i);
}

// Frees slot i whatever its subscriber did: every chunk it held comes back.
void Slots::reclaim(std::size_t i, const char* why, bool dead) {
    SlotHead& s = view_.slot(i);
    Peer& p = peers_[i];
    const u64 word = s.state.load(std::memory_order_acquire);
    leave_all(p);
    if (dead) ::unlink(bell_path(i).c_str());  // its doorbell: nobody else will remove it
    const u64 b = bit(i);
    for (u64 c = 0; c < view_.geo.chunk_total; ++c) {
        auto& owners = view_.desc(c).owners;
        if (owners.load(std::memory_order_relaxed) & b) owners.fetch_and(~b, std::memory_order_acq_rel);
    }
    s.head.store(0, std::memory_order_relaxed);
    s.tail.store(0, std::memory_order_relaxed);
    s.armed.store(0, std::memory_order_relaxed);
    s.dropped.store(0, std::memory_order_relaxed);
    s.interest_used.store(0, std::memory_order_relaxed);
    s.interest_version.store(0, std::memory_order_relaxed);
    s.flags.store(0, std::memory_order_relaxed);
    s.start_time.store(0, std::memory_order_relaxed);
    s.pid_ns.store(0, std::memory_order_relaxed);
    s.bell.store(0, std::memory_order_relaxed);
    s.heartbeat_ns.store(0, std::memory_order_relaxed);
    s.state.store(make_state(0, generation_of(word), slot_free), std::memory_order_release);
    if (p.bell >= 0) ::close(p.bell);
    p = Peer{};
    if (why) {
        ++reclaimed_;
        notices_.add(LogLevel::info, "shm subscriber reclaimed",
                     "shared memory " + name_ + ": freed subscriber slot " + std::to_string(i) + " (pid " +
                         std::to_string(pid_of(word)) + "): " + why);
    }
    rebuild_active();
}

void Slots::reclaim_marked() {
    const u64 slots = std::exchange(corrupt_slots_, 0);
    for (std::size_t i = 0; i < view_.geo.slot_count; ++i)
        if (slots & bit(i)) {
            ++corrupt_;
            reclaim(i, "its ring indices are out of range");
        }
}

u64 Slots::clear_strays() {
    // Live: a slot whose subscriber may hold chunks (active, leaving) or
    // whose chunks the publisher clears itself when it frees it (departed).
    // Only the publisher sets owners, for slots it saw active; a slot leaves
    // those states only by the publisher's reclaim (which clears its bits)
    // or by its subscriber writing garbage.
    u64 live = 0;
    for (std::size_t i = 0; i < view_.geo.slot_count; ++i) {
        const auto state = state_of(view_.slot(i).state.load(std::memory_order_acquire));
        if (state == slot_active || state == slot_leaving || state == slot_departed) live |= bit(i);
    }
    u64 cleared = 0;
    for (u64 c = 0; c < view_.geo.chunk_total; ++c) {
        auto& owners = view_.desc(c).owners;
        if ((owners.load(std::memory_order_relaxed) & ~live) == 0) continue;
        owners.fetch_and(live, std::memory_order_acq_rel);
        ++cleared;
    }
    if (cleared) {
        strays_ += cleared;
        notices_.add(LogLevel::warn, "shm stray owners",
                     "shared memory " + name_ + ": " + std::to_string(cleared) +
                         " chunks were marked held by subscriber slots nobody uses (someone wrote into the "
                         "segment): given back");
    }
    return cleared;
}

bool Slots::alive(std::size_t i, u64 now) {
    SlotHead& s = view_.slot(i);
    const u64 ns = s.pid_ns.load(std::memory_order_relaxed);
    if (ns == 0 || ns == my_ns_)
        return process_alive(pid_of(s.state.load(std::memory_order_relaxed)), s.start_time.load(std::memory_order_relaxed));
    // Another pid namespace: its pid means nothing here; its lease does.
    const u64 beat = s.heartbeat_ns.load(std::memory_order_relaxed);
    return now <= beat || now - beat < static_cast<u64>(config_.lease.count()) * ms_ns;
}

// At most every 10 ms per slot (a full ring is looked at on every send).
bool Slots::alive_now(std::size_t i) {
    const u64 now = monotonic_ns();
    Peer& p = peers_[i];
    if (now < p.next_alive_check) return true;
    p.next_alive_check = now + 10 * ms_ns;
    return alive(i, now);
}

bool Slots::ring_full(std::size_t i) const {
    return peers_[i].tail - view_.slot(i).head.load(std::memory_order_relaxed) >= view_.geo.ring_capacity;
}

void Slots::refresh(bool liveness) {
    seen_changes_ = view_.header().changes.load(std::memory_order_acquire);
    const u64 now = liveness ? monotonic_ns() : 0;
    for (std::size_t i = 0; i < view_.geo.slot_count; ++i) {
        SlotHead& s = view_.slot(i);
        Peer& p = peers_[i];
        const u64 word = s.state.load(std::memory_order_acquire);
        switch (state_of(word)) {
            case slot_free:
                if (p.word != 0) forget(p);
                break;
            case slot_claiming:
                if (liveness && !alive(i, now)) reclaim(i, "its subscriber died while connecting", true);
                break;
            case slot_active:
                if (p.word != word) {
                    leave_all(p);
                    join(i, word);
                } else if (s.interest_version.load(std::memory_order_acquire) != p.version) {
                    update_interests(i);
                }
                if (liveness && peers_[i].word != 0) {
                    if (!alive(i, now)) reclaim(i, "its subscriber died", true);
                    else if (peers_[i].bell < 0) peers_[i].bell = open_bell(bell_path(i));
                }
                break;
            case slot_leaving:
                if (p.active) {
                    leave_all(p);
                    steal_all(i);
                }
                p.word = word;
                if (liveness && !alive(i, now)) reclaim(i, "its subscriber died", true);
                break;
            case slot_departed:
                if (p.active) leave_all(p);
                reclaim(i, nullptr);
                break;
            default:
                ++corrupt_;
                reclaim(i, "its state word is garbage");
                break;
        }
    }
    rebuild_active();
}

void Slots::rebuild_active() {
    active_.clear();
    for (std::size_t i = 0; i < view_.geo.slot_count; ++i)
        if (peers_[i].active) active_.push_back(i);
}

u64 Slots::targets(wire::Channel channel) {
    u64 targets = 0;
    for (std::size_t i : active_)
        if (peers_[i].wants(channel)) targets |= bit(i);
    if (targets == 0) return 0;
    u64 dead = 0;
    for (std::size_t i : active_)
        if ((targets & bit(i)) && ring_full(i) && !alive_now(i)) dead |= bit(i);
    if (dead != 0) {
        for (std::size_t i = 0; i < view_.geo.slot_count; ++i)
            if (dead & bit(i)) reclaim(i, "its subscriber died", true);
        targets &= ~dead;
    }
    return targets;
}

// ---- the publisher's half of the rings -----------------------------------------------------

void Slots::lost(u64 targets, SendResult& result) {
    for (std::size_t i = 0; i < view_.geo.slot_count; ++i)
        if (targets & bit(i)) view_.slot(i).dropped.fetch_add(1, std::memory_order_relaxed);
    const auto n = static_cast<std::size_t>(__builtin_popcountll(targets));
    result.dropped += n;
    dropped_ += n;
}

Pool::TakenBack Slots::take_back(std::size_t k, const Pool& pool, SendResult& result) {
    const Geometry& g = view_.geo;
    const u64 cap = g.ring_capacity;
    std::size_t best = g.slot_count;
    u64 best_seq = ~u64{0}, best_head = 0;
    for (std::size_t i : active_) {
        const u64 h = view_.slot(i).head.load(std::memory_order_acquire);
        if (h >= peers_[i].tail || peers_[i].tail - h > cap) continue;
        const u64 e = view_.ring(i)[h % cap].load(std::memory_order_relaxed);
        if (e >= g.chunk_total || g.class_of(e) != k || pool.age(e) >= best_seq) continue;
        best = i;
        best_seq = pool.age(e);
        best_head = h;
    }
    if (best == g.slot_count) return {};
    SlotHead& s = view_.slot(best);
    u64 h = best_head;
    // A few at once: the head is the subscriber's line, and a publisher ahead
    // of it would otherwise take it on every frame (2: +14 % at 64 B; 32: worse).
    constexpr u64 take_back_at_once = 2;
    const u64 n = std::min<u64>(take_back_at_once, peers_[best].tail - best_head);
    Pool::TakenBack taken{true, no_chunk};
    if (!s.head.compare_exchange_strong(h, h + n, std::memory_order_acq_rel, std::memory_order_acquire)) return taken;
    for (u64 j = 0; j < n; ++j) {
        const u64 e = view_.ring(best)[(best_head + j) % cap].load(std::memory_order_relaxed);
        if (e >= g.chunk_total) continue;
        view_.release(e, best);
        if (taken.first == no_chunk) taken.first = e;
    }
    s.dropped.fetch_add(n, std::memory_order_relaxed);
    result.dropped += n;
    dropped_ += n;
    return taken;
}

void Slots::push(std::size_t i, u64 c, SendResult& result) {
    SlotHead& s = view_.slot(i);
    Peer& p = peers_[i];
    std::atomic<u64>* ring = view_.ring(i);
    const u64 cap = view_.geo.ring_capacity;
    const u64 t = p.tail;
    u64 h = t - p.head_seen < cap ? p.head_seen : s.head.load(std::memory_order_acquire);
    for (u64 guard = 0;; ++guard) {
        if (h > t || t - h > cap || guard > cap) {
            corrupt_slots_ |= bit(i);
            view_.release(c, i);
            return;
        }
        if (t - h < cap) break;
        // Full: the oldest eighth of the ring goes at once (one move of the
        // head the subscriber also moves, not one per frame sent while it
        // stays behind). Only the publisher writes entries: reading them
        // around the CAS is safe.
        const u64 n = std::max<u64>(1, cap / 8);
        if (s.head.compare_exchange_weak(h, h + n, std::memory_order_acq_rel, std::memory_order_acquire)) {
            for (u64 k = 0; k < n; ++k) view_.release(ring[(h + k) % cap].load(std::memory_order_relaxed), i);
            s.dropped.fetch_add(n, std::memory_order_relaxed);
            result.dropped += n;
            dropped_ += n;
            h += n;
        }
    }
    ring[t % cap].store(c, std::memory_order_relaxed);
    s.tail.store(t + 1, std::memory_order_seq_cst);
    p.tail = t + 1;
    p.head_seen = h;
}

void Slots::wake(std::size_t i) {
    auto& armed = view_.slot(i).armed;
    if (armed.load(std::memory_order_seq_cst) != 0 && armed.exchange(0, std::memory_order_seq_cst) != 0)
        ring(peers_[i].bell);
}

}  // namespace gecko::detail::shm
