// SPDX-License-Identifier: Apache-2.0
#pragma once
// The publisher's chunk pool: which chunk a frame goes into. Size classes
// (the smallest that fits), the memory budget (PortOptions::memory: pages
// given to chunks only as frames need them, idle large chunks punched back),
// loans (chunks lent to the application, at most half a class), and the
// policy when a class is exhausted (take the oldest queued frames back, then
// a larger class). It knows nothing of files or slots: the memory behind the
// chunks comes through Backing, and taking frames back out of rings through
// a callback, so it runs on a heap buffer in tests (tests/shm/pool_test.cpp).
//
// Concurrency: only the publisher allocates, on the one thread using its
// port. The pool reads a chunk's `owners` (acquire) and hands out only
// chunks whose mask is 0 and that it has not lent: a subscriber's last read
// of a chunk (before its release, fetch_and) happens before the publisher
// rewrites it. It writes nothing in the segment itself.

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "gecko/detail/function_ref.hpp"
#include "transport/shm_view.hpp"
#include "transport/transport.hpp"

namespace gecko::detail::shm {

/// Where chunks get their memory (a tmpfs file: fallocate and hole punching).
class Backing {
public:
    virtual ~Backing() = default;
    /// Gives [offset, offset + len) of the segment memory now; false if there is none.
    virtual bool reserve(u64 offset, u64 len) = 0;
    /// Takes the memory of [offset, offset + len) back.
    virtual void release(u64 offset, u64 len) = 0;
};

/// Why allocate() found no chunk.
enum class NoChunk {
    none,         ///< it did
    too_large,    ///< larger than the largest chunk
    no_room,      ///< Backing::reserve failed (a full /dev/shm)
    over_memory,  ///< within the budget, every chunk is held
    exhausted,    ///< every chunk that fits is held by subscribers
};

class Pool {
public:
    struct Options {
        u64 memory_limit = 0;  ///< the most bytes with memory behind them (0: no bound)
        u64 lazy_from = 1 << 20;  ///< chunks from this size on are punched when idle
        u64 idle_passes = 1;   ///< housekeeping passes a large chunk stays unused before it is punched
    };
    /// One try at taking the oldest queued frames of class `cls` back from
    /// the rings (drops, counted in `result`): `any` false if no ring holds
    /// one; else `first` is the first chunk taken back (no_chunk if the try
    /// lost a race with the subscriber).
    struct TakenBack {
        bool any = false;
        u64 first = no_chunk;
    };
    using TakeBack = FunctionRef<TakenBack(std::size_t cls, SendResult& result)>;

    /// `resident`: bytes of the segment already backed (header, slots, descriptors).
    Pool(const View& view, Backing& backing, const Options& options, u64 resident);

    /// A free chunk for a `size`-byte frame, its pages there; no_chunk with `why` if none.
    u64 allocate(std::size_t size, TakeBack take_back, SendResult& result, NoChunk& why);
    /// Whether nobody holds chunk c and it is not lent.
    bool is_free(u64 c) const;
    /// When chunk c was last taken (larger: later); the rings' oldest frame is taken back first.
    u64 age(u64 c) const { return seq_[c]; }
    /// Marks chunk c, sent from a loan, as taken now.
    void restamp(u64 c) { seq_[c] = ++seq_counter_; }

    /// Whether class k may lend another chunk (at most half of it at once).
    bool may_lend(std::size_t k) const;
    void lend(u64 c);
    bool lent(u64 c) const { return c < loaned_.size() && loaned_[c] != 0; }
    void unlend(u64 c);

    /// A housekeeping pass: large chunks idle for idle_passes give their pages back.
    void pass();

    u64 resident() const noexcept { return resident_; }
    u64 memory_limit() const noexcept { return options_.memory_limit; }
    u64 over_memory() const noexcept { return over_memory_; }

private:
    bool back(u64 c, std::size_t size);
    u64 backing(u64 c, std::size_t size) const;
    bool within_memory(u64 c, std::size_t size) const;
    u64 within_memory_or_other(u64 c, std::size_t size);
    u64 take_chunk(u64 c, std::size_t size, NoChunk& why);
    u64 find_free(std::size_t k);
    void give_back(u64 c);

    View view_;
    Backing& backing_;
    Options options_;
    u64 resident_;                               // bytes of the segment with memory behind them
    u64 over_memory_ = 0;                        // frames refused for memory_limit
    std::vector<u64> backed_;                    // per chunk: bytes with memory behind them (from its start)
    std::vector<std::uint8_t> class_backed_;     // per class of small chunks: all backed at once
    std::vector<u64> used_pass_;                 // per chunk: the housekeeping pass it was last taken in
    u64 pass_ = 0;
    std::array<std::array<u64, 4>, max_classes> recent_{};  // per class: the last chunks taken
    std::array<std::size_t, max_classes> recent_at_{};
    std::array<std::uint32_t, max_classes> starved_{};  // looks in a row that found a class exhausted
    std::vector<std::uint8_t> loaned_;           // per chunk: lent to the publisher, owners still 0
    std::array<u64, max_classes> loans_{};       // per class: chunks lent now
    std::vector<u64> seq_;                       // per chunk: when it was last taken
    std::vector<u64> cursor_;                    // per class: where the next scan starts
    u64 seq_counter_ = 0;
};

}  // namespace gecko::detail::shm
