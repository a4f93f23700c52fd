// SPDX-License-Identifier: Apache-2.0
#pragma once
// Addresses in one mapped segment (View), the mapping that owns it
// (Mapping), and the notices a port keeps: what every unit of the shm
// transport shares. No policy and no state of its own. A View computes
// addresses from a geometry that shm::plan() made or shm::validate() checked,
// never from numbers read out of the segment itself; which side may touch
// what, and with which ordering, is said in shm_transport.hpp.

#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "gecko/log.hpp"
#include "gecko/shm/segment.hpp"
#include "transport/shm_guard.hpp"

namespace gecko::detail::shm {

inline constexpr u64 no_chunk = ~u64{0};
inline constexpr u64 ms_ns = 1'000'000;

/// A random number for names others must not guess (segments, doorbells).
inline u64 random_u64() {
    thread_local std::mt19937_64 rng{(static_cast<u64>(std::random_device{}()) << 32) ^ std::random_device{}() ^
                                     monotonic_ns()};
    return rng();
}

/// The owners bit of slot `slot` (bit i is slot i: slots_offset + i × slot_size).
inline u64 bit(std::size_t slot) noexcept { return u64{1} << slot; }

struct View {
    std::uint8_t* base = nullptr;
    Geometry geo;

    Header& header() const noexcept { return *reinterpret_cast<Header*>(base); }
    std::uint8_t* slot_base(std::size_t i) const noexcept { return base + geo.slots_offset + i * geo.slot_size; }
    SlotHead& slot(std::size_t i) const noexcept { return *reinterpret_cast<SlotHead*>(slot_base(i)); }
    std::atomic<u64>* ring(std::size_t i) const noexcept {
        return reinterpret_cast<std::atomic<u64>*>(slot_base(i) + Geometry::ring_offset());
    }
    std::atomic<u64>* interests(std::size_t i) const noexcept {
        return reinterpret_cast<std::atomic<u64>*>(slot_base(i) + geo.interest_offset());
    }
    ChunkDesc& desc(u64 c) const noexcept { return reinterpret_cast<ChunkDesc*>(base + geo.desc_offset)[c]; }
    std::uint8_t* payload(u64 c) const noexcept { return base + geo.payload_offset(c); }
    /// Slot i gives up its reference to chunk c (an index read from a ring: checked here).
    void release(u64 c, std::size_t i) const noexcept {
        if (c < geo.chunk_total) desc(c).owners.fetch_and(~bit(i), std::memory_order_acq_rel);
    }
};

/// A segment's file and mapping, closed and unmapped when the last owner
/// goes. map() guards the mapping against truncation (shm_guard.hpp).
struct Mapping {
    int fd = -1;
    void* base = MAP_FAILED;
    std::size_t size = 0;
    Mapping() = default;
    Mapping(const Mapping&) = delete;
    Mapping& operator=(const Mapping&) = delete;
    ~Mapping() { reset(); }
    /// Unmaps and closes.
    void reset() noexcept {
        if (base != MAP_FAILED) {
            unguard(base);
            ::munmap(base, size);
        }
        if (fd >= 0) ::close(fd);
        base = MAP_FAILED;
        size = 0;
        fd = -1;
    }
    /// Maps `length` bytes of fd read-write, shared, guarded; false (errno
    /// set, nothing mapped) if it cannot.
    bool map(std::size_t length) {
        void* p = ::mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (p == MAP_FAILED) return false;
        if (!guard(p, length)) {
            ::munmap(p, length);
            errno = EMFILE;
            return false;
        }
        base = p;
        size = length;
        return true;
    }
};

/// The last few notices of a port, and the node's sink for them.
class Notices {
public:
    using Sink = std::function<void(LogLevel, const std::string&, const std::string&)>;
    explicit Notices(Sink sink) : sink_(std::move(sink)) {}
    void add(LogLevel level, const std::string& reason, const std::string& message) {
        if (lines_.size() >= kept) lines_.erase(lines_.begin());
        lines_.push_back(message);
        if (sink_) sink_(level, reason, message);
    }
    const std::vector<std::string>& lines() const noexcept { return lines_; }

private:
    static constexpr std::size_t kept = 16;
    Sink sink_;
    std::vector<std::string> lines_;
};

}  // namespace gecko::detail::shm
