// SPDX-License-Identifier: Apache-2.0
#pragma once
// The shared-memory segment of one shm OutPort: its layout, how it is planned
// from the options, how a reader validates it, and the process checks both
// sides make (is the other end alive?). One file in /dev/shm per OutPort,
// "gecko-<session>", created by the publisher (O_EXCL, 0600), mapped
// read-write by each subscriber; fixed in size at creation.
//
//   offset 0          Header (one page): magic, layout version, every size
//                     and offset below, the owner's pid / start time / pid
//                     namespace, its heartbeat, `closed`, a change counter
//   slots_offset      slot_count × slot_size: one per subscriber
//                       SlotHead (state word, identity, interest seqlock,
//                       tail, head, armed), then the ring (ring_capacity ×
//                       u64 chunk index), then the interest words
//   desc_offset       chunk_total × ChunkDesc (64 bytes: owners mask, size)
//   classes[i].offset chunk pool of size class i (page aligned), chunks of
//                     classes[i].chunk_size bytes, global indices
//                     [first, first + count)
//
// Every multi-byte field is a native (little-endian) 64-bit atomic. A reader
// copies the header once, checks every size and offset against the file's
// size (validate()), and from then on computes addresses from its own copy:
// nothing read from shared memory is trusted without a bound check.
//
// Ownership of a chunk: ChunkDesc::owners is a bit mask of the subscriber
// slots that hold a reference (queued in their ring, or taken as a Frame).
// The publisher sets it once, before queueing; each holder clears its own bit
// with one atomic fetch_and when done. A chunk is free when its mask is 0.
// Because a release is one idempotent atomic operation, a subscriber killed
// at any instant leaves nothing half-done: the publisher clears the dead
// slot's bit in every descriptor and every chunk it held is back. (A
// reference count plus a held-list cannot do that: there is always a moment
// between "took the reference" and "recorded it" where a kill leaks a chunk.)
// Only the publisher allocates (round-robin scan for a zero mask, see
// gecko/src/transport/shm_pool.cpp), so there is no shared free list to corrupt or repair.

#include <sys/types.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace gecko::detail::shm {

using u64 = std::uint64_t;
static_assert(std::atomic<u64>::is_always_lock_free, "the shm transport needs lock-free 64-bit atomics");
static_assert(std::atomic<std::uint32_t>::is_always_lock_free, "the shm transport needs lock-free 32-bit atomics");

inline constexpr u64 magic = 0x4d48534f4b434547ull;  // "GECKOSHM" in memory order (little-endian)
inline constexpr std::uint32_t layout_version = 1;
inline constexpr std::size_t max_classes = 8;
inline constexpr std::size_t max_slots = 64;         // owners is a 64-bit mask
inline constexpr std::size_t page = 4096;
inline constexpr std::size_t header_bytes = page;

// Slot states (low 8 bits of SlotHead::state; the word is pid << 32 | generation << 8 | state).
enum SlotState : std::uint32_t {
    slot_free = 0,      ///< nobody; a subscriber claims it with a CAS to claiming
    slot_claiming = 1,  ///< a subscriber is writing its identity and interests
    slot_active = 2,    ///< the publisher queues frames; the subscriber takes them
    slot_leaving = 3,   ///< the subscriber disconnected; it may still hold taken chunks
    slot_departed = 4,  ///< the subscriber released everything: the publisher frees the slot
};
inline constexpr std::uint32_t state_of(u64 word) noexcept { return static_cast<std::uint32_t>(word & 0xff); }
inline constexpr std::uint32_t pid_of(u64 word) noexcept { return static_cast<std::uint32_t>(word >> 32); }
inline constexpr std::uint32_t generation_of(u64 word) noexcept { return static_cast<std::uint32_t>(word >> 8) & 0xffffffu; }
inline constexpr u64 make_state(std::uint32_t pid, std::uint32_t generation, std::uint32_t state) noexcept {
    return (static_cast<u64>(pid) << 32) | (static_cast<u64>(generation & 0xffffffu) << 8) | state;
}

inline constexpr u64 interest_wildcard = 1;  ///< interest record flag: every channel of the key
inline constexpr u64 slot_overflow = 1;      ///< SlotHead::flags: interests did not fit, send everything

struct ClassInfo {
    u64 chunk_size = 0;
    u64 count = 0;
    u64 first = 0;   ///< global index of its first chunk
    u64 offset = 0;  ///< byte offset of its first chunk in the segment
};

/// The first page of the segment. Written by the publisher before `magic`.
struct Header {
    std::atomic<u64> magic;
    u64 version;
    u64 header_size;
    u64 total_size;
    u64 owner_pid;
    u64 owner_start;   ///< /proc/PID/stat start time (clock ticks since boot); 0 unknown
    u64 owner_pidns;   ///< inode of /proc/self/ns/pid
    u64 owner_uid;
    u64 session;
    u64 slot_count;
    u64 slot_size;
    u64 slots_offset;
    u64 ring_capacity;
    u64 interest_words;
    u64 chunk_total;
    u64 desc_offset;
    u64 class_count;
    ClassInfo classes[max_classes];
    /// BLAKE2b-256 of the sealed bytes under the key's subkey 4 (seal_header);
    /// all zero in a key without a secret. In what was padding: readers that
    /// do not check it read the same layout.
    std::uint8_t seal[32];
    alignas(64) std::atomic<u64> heartbeat_ns;  ///< CLOCK_MONOTONIC of the publisher's last housekeeping
    std::atomic<u64> closed;                    ///< 1: the publisher closed the port (clean exit)
    std::atomic<u64> changes;                   ///< bumped by subscribers after any change to their slot
};
static_assert(sizeof(Header) <= header_bytes);
/// The seal covers the header's words from `version` through the classes
/// (bytes 8 to 392, as the publisher wrote them), then the segment's name.
inline constexpr std::size_t sealed_from = 8, sealed_to = 392;
static_assert(offsetof(Header, version) == sealed_from && offsetof(Header, seal) == sealed_to);
static_assert(offsetof(Header, heartbeat_ns) == 448, "the seal sits in what was padding before the heartbeat");

/// The fixed part of one subscriber slot; the ring and the interests follow it.
struct SlotHead {
    // Written by the subscriber (identity, interests); the publisher reads.
    std::atomic<u64> state;
    std::atomic<u64> start_time;
    std::atomic<u64> pid_ns;
    std::atomic<u64> bell;              ///< nonce naming the subscriber's doorbell FIFO
    std::atomic<u64> heartbeat_ns;      ///< the subscriber's lease (used across pid namespaces)
    std::atomic<u64> interest_version;  ///< seqlock: odd while the interests are rewritten
    std::atomic<u64> interest_used;     ///< interest words in use
    std::atomic<u64> flags;
    // Written by the publisher.
    alignas(64) std::atomic<u64> tail;
    std::atomic<u64> dropped;  ///< frames this subscriber lost (ring full, pool exhausted)
    // Written by the subscriber (and by the publisher when it reclaims the oldest entry).
    alignas(64) std::atomic<u64> head;
    // Set by the subscriber before it sleeps; exchanged to 0 by the publisher, which then rings.
    alignas(64) std::atomic<u64> armed;
};

struct alignas(64) ChunkDesc {
    std::atomic<u64> owners;  ///< bit s: slot s holds a reference
    std::atomic<u64> size;    ///< bytes of the frame in the chunk
};
static_assert(sizeof(ChunkDesc) == 64);

/// Addresses within a segment, computed from a plan or from a validated header.
struct Geometry {
    u64 total = 0;
    u64 slot_count = 0;
    u64 slot_size = 0;
    u64 slots_offset = 0;
    u64 ring_capacity = 0;
    u64 interest_words = 0;
    u64 chunk_total = 0;
    u64 desc_offset = 0;
    u64 class_count = 0;
    ClassInfo classes[max_classes] = {};

    static constexpr u64 ring_offset() noexcept { return (sizeof(SlotHead) + 63) / 64 * 64; }
    u64 interest_offset() const noexcept { return ring_offset() + ring_capacity * 8; }
    /// The size class of a chunk index (< chunk_total).
    std::size_t class_of(u64 chunk) const noexcept {
        for (std::size_t k = 0; k + 1 < class_count; ++k)
            if (chunk < classes[k + 1].first) return k;
        return class_count - 1;
    }
    u64 payload_offset(u64 chunk) const noexcept {
        const auto& c = classes[class_of(chunk)];
        return c.offset + (chunk - c.first) * c.chunk_size;
    }
    u64 largest() const noexcept { return class_count ? classes[class_count - 1].chunk_size : 0; }
    /// The smallest class whose chunks hold `size` bytes; class_count if none does.
    std::size_t class_for(u64 size) const noexcept {
        std::size_t k = 0;
        while (k < class_count && classes[k].chunk_size < size) ++k;
        return k;
    }
};

/// One size class as configured.
struct ClassConfig {
    std::size_t chunk_size = 0;
    std::size_t count = 0;
};

/// How segments are laid out and watched; the defaults suit a node.
struct Config {
    std::size_t slots = 32;
    std::size_t ring = 0;  ///< entries per subscriber ring; 0: PortOptions::send_queue (clamped 16..4096)
    /// Chunk classes: each has room for a frame header past a round payload
    /// size (1 KiB, 16 KiB, 256 KiB, 4 MiB payloads fit the class of their size).
    std::vector<ClassConfig> classes{{1152, 256}, {20 << 10, 64}, {260 << 10, 16}, {(4 << 20) + (4 << 10), 8}};
    /// Chunks for frames above the largest class, each max_message_size + a frame header.
    std::size_t huge_count = 2;
    std::size_t interest_bytes = 16 << 10;  ///< per slot
    /// Chunks from this size on get their memory back (a hole punched) once
    /// unused for release_after.
    std::size_t lazy_from = 1 << 20;
    std::chrono::milliseconds release_after{2000};
    /// A subscriber holds at most max(1, count / held_divisor) chunks of a class
    /// as Frames. Beyond that, a frame is copied and its chunk released; in a
    /// class of chunks of wait_from bytes or more, where a copy costs more
    /// than waiting, the frame first stays in the ring (where the publisher
    /// may take it back, counted) until a held one is released, for at most
    /// held_wait.
    std::size_t held_divisor = 4;
    std::size_t wait_from = 64 << 10;
    std::chrono::milliseconds held_wait{10};
    /// How often each side checks that the other is alive (and the publisher
    /// punches idle large chunks).
    std::chrono::milliseconds check_interval{100};
    /// How often a reader re-checks the segment's size (truncation); 0: at the
    /// start of every batch of take()s.
    std::chrono::microseconds size_check_interval{1000};
    /// A peer in another pid namespace is dead when its heartbeat is this old.
    std::chrono::milliseconds lease{3000};
    std::string directory = "/dev/shm";  ///< where segments and doorbells are
};

/// The header's fields as plain numbers, read once out of a segment.
struct HeaderCopy {
    u64 magic = 0, version = 0, header_size = 0, total_size = 0;
    u64 owner_pid = 0, owner_start = 0, owner_pidns = 0, owner_uid = 0, session = 0;
    u64 slot_count = 0, slot_size = 0, slots_offset = 0, ring_capacity = 0, interest_words = 0;
    u64 chunk_total = 0, desc_offset = 0, class_count = 0;
    ClassInfo classes[max_classes] = {};
    u64 heartbeat_ns = 0, closed = 0;
    std::uint8_t sealed_bytes[sealed_to - sealed_from] = {};  ///< what the seal covers, as read
    std::uint8_t seal[32] = {};
};

/// The 32-byte key that seals a key's segment headers (subkey 4 of its secret).
using SealKey = std::array<std::uint8_t, 32>;

/// Lays out a segment; false (with why) if the configuration cannot be.
bool plan(const Config& config, std::size_t ring, std::size_t max_frame, Geometry& out, std::string& why);
/// Reads the header of the segment open as `fd` with pread (no mapping: a
/// truncated file cannot fault); false if it is shorter than a header.
bool read_header(int fd, HeaderCopy& out);
/// Checks a header read out of a segment of `file_size` bytes; fills `out`.
bool validate(const HeaderCopy& header, u64 file_size, Geometry& out, std::string& why);
/// Writes a planned geometry into the (zeroed) header of a new segment named
/// `name`, sealed under `seal_key` when there is one, magic last.
void write_header(Header& h, const Geometry& g, u64 session, const std::string& name = {},
                  const SealKey* seal_key = nullptr);
/// How a header's seal compares with what `seal_key` makes of it.
enum class SealCheck { sealed, unsealed, other_secret };
SealCheck check_seal(const HeaderCopy& header, const std::string& name, const SealKey& seal_key);

// ---- processes --------------------------------------------------------------------------------

/// This process's start time from /proc/self/stat (0 if unknown).
u64 own_start_time();
/// The inode of this process's pid namespace (0 if unknown).
u64 own_pid_namespace();
/// Whether process `pid` (started at `start`, 0: unknown) still runs; a zombie does not.
bool process_alive(std::uint32_t pid, u64 start);
/// CLOCK_MONOTONIC in nanoseconds (the same clock in every process of a boot).
u64 monotonic_ns();

// ---- names ------------------------------------------------------------------------------------

/// Whether `name` may name a segment (it comes from a peer's locator).
bool valid_name(const std::string& name);
/// The doorbell FIFO of a publisher's segment.
std::string publisher_bell(const std::string& directory, const std::string& segment);
/// The doorbell FIFO of a subscriber port.
std::string subscriber_bell(const std::string& directory, u64 pid_ns, std::uint32_t pid, u64 start, u64 nonce);

/// Removes segments and doorbells in `directory` left by dead processes of
/// this user; returns how many files it removed.
std::size_t remove_stale(const std::string& directory, std::chrono::milliseconds lease);

}  // namespace gecko::detail::shm
