// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file frame.hpp
/// The data frame, version 2: what every message, service request and reply
/// is on the wire, whatever the transport (docs/PROTOCOL.md §2 is the
/// specification; tests/conformance/ has golden bytes). All integers are
/// little-endian.
///
///     offset size field
///     0      8    channel: fnv1a32(key) | fnv1a32(topic) << 32 (see hash.hpp); publishers filter on it
///     8      2    magic "GK" (0x47 0x4B)
///     10     1    version (2)
///     11     1    flags (frame_flags)
///     12     4    payload size before compression (u32)
///     16     8    sequence (u64): per publisher from 1; services: the request id
///     24     8    sender id (u64): the publisher, client or server entity
///     32     8    send time, ns since the Unix epoch (i64)
///     40     8    type hash: fnv1a64 of the type name (0 for control frames)
///     48     ...  payload: msgpack, or a zlib stream of it when `compressed`
///
/// The type's name is not in the frame: discovery and subscriber
/// announcements carry it, once per link instead of once per message.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "gecko/buffer.hpp"
#include "gecko/wire/hash.hpp"

namespace gecko::wire {

inline constexpr std::uint8_t frame_version = 2;
inline constexpr std::size_t frame_header_size = 48;

/// Bits of the flags byte.
namespace frame_flags {
inline constexpr std::uint8_t compressed = 0x01;  ///< the payload is a zlib stream (RFC 1950)
inline constexpr std::uint8_t reply = 0x02;       ///< a service reply; sequence = the request's id
inline constexpr std::uint8_t error = 0x04;       ///< with reply: the payload is a msgpack str giving the reason
inline constexpr std::uint8_t request = 0x08;     ///< a service request; sequence = the request id
inline constexpr std::uint8_t control = 0x10;     ///< a control frame (payload: a msgpack map with "t"); type hash 0
inline constexpr std::uint8_t latched = 0x20;     ///< a publisher's last value, replayed to a subscriber that joined late
inline constexpr std::uint8_t known = 0x3F;
}  // namespace frame_flags

/// Why a frame was rejected; each is counted under its own name.
enum class FrameError {
    none,
    truncated,            ///< shorter than its header says
    bad_magic,            ///< bytes 8-9 are not "GK": not a Gecko frame
    unsupported_version,  ///< a version this build does not speak
    unknown_flags,        ///< flag bits this build does not know
    size_mismatch,        ///< an uncompressed body longer than the payload size
    oversized,            ///< payload (declared or on the wire) above the receiver's maximum
    decompress_failed,    ///< the zlib stream is corrupt or does not inflate to exactly the payload size
};

/// A short phrase for logs ("truncated frame", ...).
const char* to_string(FrameError error) noexcept;

/// The fixed header of a frame.
struct FrameHeader {
    Channel channel = 0;
    std::uint8_t version = frame_version;
    std::uint8_t flags = 0;
    std::uint32_t payload_size = 0;
    std::uint64_t sequence = 0;
    std::uint64_t sender_id = 0;
    std::int64_t send_time_ns = 0;
    std::uint64_t type_hash = 0;

    bool compressed() const noexcept { return flags & frame_flags::compressed; }
};

/// A parsed frame: its header, and its body as it is on the wire (possibly compressed).
struct FrameView {
    FrameHeader header;
    const std::uint8_t* body = nullptr;
    std::size_t body_size = 0;
};

/// Writes the 48-byte header at `out`.
void write_frame_header(std::uint8_t* out, const FrameHeader& header) noexcept;

/// Parses and validates a frame, checking in the order of PROTOCOL.md §2.
/// `max_payload` bounds the payload size, declared and on the wire, before
/// anything is inflated. Never reads past `size`.
FrameError parse_frame(const std::uint8_t* data, std::size_t size, std::size_t max_payload, FrameView& out) noexcept;

/// The sender id and sequence of a frame whose header is complete (48 bytes,
/// right magic and version) even if the rest is not: a server answers a broken
/// request with an error for its call. False if the header is not there.
bool peek_sender(const std::uint8_t* data, std::size_t size, std::uint64_t& sender_id, std::uint64_t& sequence) noexcept;

/// Inflates a compressed body into `out`, in bounded steps: `out` grows as the
/// stream produces bytes (never to more than the declared payload size up
/// front), and the stream must end exactly at the declared size.
FrameError inflate_body(const FrameView& frame, std::vector<std::uint8_t>& out);
/// Inflates a compressed body into `out`, which holds `capacity` bytes, at
/// least the declared payload size + 1 (to see overruns); `size` is set to the
/// bytes produced. Only the bytes produced are written: memory mapped but not
/// yet touched stays so when the stream is short or corrupt.
FrameError inflate_body(const FrameView& frame, std::uint8_t* out, std::size_t capacity, std::size_t& size);

/// Compresses `size` bytes with zlib at `level` (1 fast .. 9 small), appending
/// to `out`. False if zlib fails (`out` is then as it was).
bool deflate_append(const std::uint8_t* data, std::size_t size, int level, Buffer& out);

}  // namespace gecko::wire
