// SPDX-License-Identifier: Apache-2.0
#pragma once
// The publisher's table of subscriber slots: who is there (join, leave,
// reclaim when a subscriber dies or writes garbage), what each wants (its
// interests, turned into join and leave events as from an XPUB), and the
// publisher's half of each ring (queueing a chunk, taking the oldest back,
// ringing the doorbell of a sleeper).
//
// Concurrency (the rules of the whole transport are in shm_transport.hpp):
// - A slot's state word moves free → claiming → active (the subscriber),
//   active → leaving → departed (the subscriber), departed or dead → free
//   (the publisher, after clearing the slot's bit in every descriptor).
// - The publisher keeps its own copy of what it saw (Peer) and re-reads the
//   slot only when the header's change counter moved, or at housekeeping;
//   whatever it reads is checked before use, and a slot whose indices,
//   state or interests make no sense is freed (counted as corrupt).
// - The publisher writes a ring's entries and `tail`; it moves `head` only
//   by a CAS (taking entries back), as the subscriber does.

#include <array>
#include <cstddef>
#include <string>
#include <vector>

#include "transport/shm_pool.hpp"
#include "transport/shm_view.hpp"
#include "transport/transport.hpp"

namespace gecko::detail::shm {

class Slots {
public:
    Slots(const View& view, const Config& config, Notices& notices, std::string name);
    ~Slots();
    Slots(const Slots&) = delete;
    Slots& operator=(const Slots&) = delete;

    /// Whether a subscriber changed something since the last refresh().
    bool changed() const { return view_.header().changes.load(std::memory_order_acquire) != seen_changes_; }
    /// Reads every slot's state; with `liveness`, also checks that its process runs.
    void refresh(bool liveness);
    /// The slots that want a frame on `channel` (a mask of owners bits). A
    /// full ring may belong to a dead subscriber: looked at, and freed, first.
    u64 targets(wire::Channel channel);

    /// Queues chunk c for slot i; a full ring loses its oldest entries (counted).
    void push(std::size_t i, u64 c, SendResult& result);
    /// Rings slot i's doorbell if its subscriber said it sleeps.
    void wake(std::size_t i);
    /// No chunk for a frame: every target loses it, counted.
    void lost(u64 targets, SendResult& result);
    /// One try at taking the oldest queued frames of class k back (Pool::TakeBack).
    Pool::TakenBack take_back(std::size_t k, const Pool& pool, SendResult& result);
    /// Frees the slots push() found corrupt.
    void reclaim_corrupt() {
        if (corrupt_slots_ != 0) reclaim_marked();
    }
    /// Clears the bits of `owners` that name no live slot (free, claiming, or
    /// past the slot count): nobody will ever clear them, and a chunk with
    /// one is never free again. Returns how many chunks it gave back.
    u64 clear_strays();
    /// Wakes every subscriber (the port closes: they see `closed`).
    void wake_all();

    /// Join and leave events since the last call.
    std::vector<PortEvent> take_events();
    bool events_pending() const { return !events_.empty(); }
    std::size_t occupied() const;
    u64 dropped() const noexcept { return dropped_; }
    u64 reclaimed() const noexcept { return reclaimed_; }
    u64 corrupt() const noexcept { return corrupt_; }
    u64 strays() const noexcept { return strays_; }

private:
    // What the publisher knows of one slot (never re-read from shared memory
    // without a check).
    struct Peer {
        u64 word = 0;        // the state word it was seen active with (0: none)
        bool active = false; // frames are queued for it
        u64 version = ~u64{0};
        std::vector<Interest> interests;
        std::vector<wire::Channel> exact;  // sorted
        std::vector<std::uint32_t> keys;   // wildcard key parts
        bool everything = false;           // its interests overflowed the slot
        int bell = -1;
        u64 tail = 0;
        // Its head as last read: while tail - head_seen < capacity there is
        // room, without reading the line the subscriber moves on every take.
        u64 head_seen = 0;
        u64 next_alive_check = 0;

        bool wants(wire::Channel c) const;
    };

    void report(bool joined, const Interest& i);
    void set_interests(Peer& p, std::vector<Interest> interests, bool everything);
    void update_interests(std::size_t i);
    void join(std::size_t i, u64 word);
    std::string bell_path(std::size_t i) const;
    void leave_all(Peer& p);
    void forget(Peer& p);
    void steal_all(std::size_t i);
    void reclaim(std::size_t i, const char* why, bool dead = false);
    bool alive(std::size_t i, u64 now);
    bool alive_now(std::size_t i);
    bool ring_full(std::size_t i) const;
    void rebuild_active();
    void reclaim_marked();

    View view_;
    Config config_;
    Notices& notices_;
    std::string name_;
    std::array<Peer, max_slots> peers_;
    std::vector<std::size_t> active_;
    std::vector<PortEvent> events_;
    u64 seen_changes_ = ~u64{0};
    u64 corrupt_slots_ = 0;
    u64 my_ns_ = 0;
    u64 dropped_ = 0, reclaimed_ = 0, corrupt_ = 0, strays_ = 0;
};

}  // namespace gecko::detail::shm
