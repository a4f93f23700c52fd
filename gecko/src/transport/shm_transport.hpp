// SPDX-License-Identifier: Apache-2.0
#pragma once
// The same-host shared-memory transport (shm://<segment>). A node's OutPort
// owns one segment in /dev/shm (gecko/shm/segment.hpp): a pool of chunks in a few
// size classes and one slot per subscribing InPort, each with a bounded ring
// of chunk indices and the subscriber's interests. send() copies a frame once
// into a chunk and queues its index in the ring of every subscriber whose
// interests match; a subscriber takes it as a Frame that points into the
// mapping (zero copy) until the Frame is destroyed. A full ring loses its
// oldest entry (counted); an exhausted pool takes back the oldest queued
// frames (counted): the publisher never blocks and never grows memory.
// Wake-ups are FIFO doorbells (shm_doorbell.hpp), rung only for a subscriber
// that said it sleeps. Each side checks that the other is alive; a killed
// subscriber's chunks come back, a dead, closed, corrupt or truncated
// publisher's link is dropped with a notice (PortOptions::notice).
//
// The units, one job each:
//   gecko/shm/segment.*  the layout, its planning and validation, liveness, names
//   shm_view.hpp         addresses in a mapped segment, the mapping, notices
//   shm_interests.*      a slot's interests (the seqlock both sides use)
//   shm_pool.*           the publisher's chunks: classes, memory budget, loans
//   shm_slots.*          the publisher's subscriber slots and its half of the rings
//   shm_out_port.cpp     the publisher's port: the segment, send, loans, events
//   shm_in_port.cpp      the subscriber's port: links, taking frames, waiting
//   shm_doorbell.*       the FIFOs that wake a sleeper
//
// Concurrency, in one place:
// - A ring is single-producer (the publisher writes entries and `tail`) with
//   two consumers of its head: the subscriber takes the oldest entry, and the
//   publisher takes it back when the ring is full or the pool is exhausted.
//   Both claim position h with a CAS of `head` from h to h+1 (head only grows,
//   so there is no ABA); whoever wins owns the entry's reference. An entry is
//   read before the CAS and used only if the CAS succeeds: if the publisher
//   had reused that ring cell, head would already be past h.
// - A chunk's `owners` mask is set once by the publisher before the chunk is
//   queued; every holder clears its bit once (fetch_and, release). The
//   publisher allocates only chunks whose mask it reads as 0 (acquire), so a
//   subscriber's reads of a chunk happen before the publisher rewrites it.
//   This replaces a free list: only the publisher allocates (a round-robin
//   scan that finds the oldest chunk first), and there is no list a killed
//   process could leave half-linked, so neither a tagged lock-free list nor a
//   robust mutex is needed.
// - A chunk's `size` is read once by the subscriber, checked against its
//   chunk, and that value is the one used: the segment is shared with a
//   process that may change it at any time.
// - Wake-up (Dekker): the subscriber stores armed=1 then reads the rings; the
//   publisher stores tail then reads armed, all sequentially consistent: one
//   of them sees the other, so a frame is never left unannounced to a sleeper.
// - Interests are a seqlock (version odd while written), copied word by word
//   with relaxed atomic loads and used only if the version did not change.
// - Each port is used by one thread at a time (the node serialises it); a
//   subscriber's Frames are released on any thread (atomics in the Link).

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "gecko/shm/segment.hpp"
#include "transport/transport.hpp"

namespace gecko::detail {

std::unique_ptr<Transport> make_shm_transport(shm::Config config = {});

/// What an shm OutPort tells about itself (tests, diagnostics).
struct ShmOutInfo {
    std::string name;              ///< the segment's file name in the directory
    std::size_t chunks = 0;        ///< chunks in the pool
    std::size_t chunks_free = 0;   ///< chunks nobody holds
    std::size_t subscribers = 0;   ///< slots in use
    std::uint64_t dropped = 0;     ///< frames subscribers lost (ring full, pool exhausted, too large)
    std::uint64_t reclaimed = 0;   ///< slots taken back from dead subscribers
    std::uint64_t corrupt = 0;     ///< slots freed because what their subscriber wrote made no sense
    std::uint64_t strays = 0;      ///< chunks given back whose owners named no live slot
    std::size_t memory = 0;        ///< bytes of the segment with memory behind them now
    std::size_t memory_limit = 0;  ///< PortOptions::memory (0: none)
    std::uint64_t over_memory = 0; ///< frames dropped because they would have gone past it
    bool closed = false;           ///< the segment was truncated by someone else: the port sends nothing
    std::vector<std::string> notices;  ///< the last few notices
};
/// False if `port` is not an shm OutPort.
bool shm_out_info(OutPort& port, ShmOutInfo& out);

/// What an shm InPort tells about itself.
struct ShmInInfo {
    std::size_t links = 0;              ///< publishers connected
    std::uint64_t links_dropped = 0;    ///< links dropped: publisher closed or dead, segment corrupt or truncated
    std::uint64_t corrupt = 0;          ///< of those, for a corrupt or truncated segment
    std::uint64_t copied = 0;           ///< frames copied out because too many chunks were held
    std::uint64_t oversized = 0;        ///< frames above max_message_size, dropped
    std::uint64_t unsealed = 0;         ///< segments not mapped: not sealed with the key's secret (a secured key)
    std::vector<std::pair<const std::uint8_t*, std::size_t>> mappings;  ///< each link's mapping
    std::vector<std::string> notices;   ///< the last few notices
};
/// False if `port` is not an shm InPort.
bool shm_in_info(InPort& port, ShmInInfo& out);

}  // namespace gecko::detail
