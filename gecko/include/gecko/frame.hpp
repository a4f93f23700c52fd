#pragma once
/// @file frame.hpp
/// The wire frame: a small fixed header, the message's type name, then the
/// msgpack payload (zlib-compressed when the `compressed` flag is set).
/// docs/PROTOCOL.md gives the byte layout; this header is the reference
/// implementation used by publishers, subscribers, services and tools.
///
///     offset size field
///     0      2    magic "GK" (0x47 0x4B)
///     2      1    version (1)
///     3      1    flags (bit 0 compressed, bit 1 reply, bit 2 error)
///     4      8    sequence number (u64, little-endian)
///     12     8    sender id (u64, little-endian)
///     20     8    send time, ns since the Unix epoch (i64, little-endian)
///     28     4    payload size before compression (u32, little-endian)
///     32     1    type name length L (1..255)
///     33     L    type name (ASCII, e.g. "gecko.msgs.Imu")
///     33+L   ...  payload

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace gecko {

inline constexpr std::uint8_t frame_version = 1;
inline constexpr std::size_t frame_fixed_size = 33;

/// Flag bits in the header's flags byte.
namespace frame_flags {
inline constexpr std::uint8_t compressed = 0x01;  ///< payload is a zlib stream
inline constexpr std::uint8_t reply = 0x02;       ///< a service reply; sequence = the request's
inline constexpr std::uint8_t error = 0x04;       ///< a service error; payload = msgpack string reason
inline constexpr std::uint8_t known = compressed | reply | error;
}  // namespace frame_flags

/// Why a frame was rejected.
enum class FrameError {
    none,
    truncated,            ///< shorter than its header says
    bad_magic,            ///< does not start with "GK": not a Gecko frame
    unsupported_version,  ///< a version this build does not speak
    unknown_flags,        ///< flag bits this build does not know
    bad_type_name,        ///< empty or non-printable type name
    size_mismatch,        ///< payload size disagrees with the header
    oversized,            ///< payload above the receiver's maximum
    decompress_failed,    ///< the zlib stream is corrupt
};

/// Returns a sentence fragment for logs ("truncated frame", ...).
const char* to_string(FrameError error) noexcept;

/// The decoded header; `type_name` points into the frame.
struct FrameHeader {
    std::uint8_t version = frame_version;
    std::uint8_t flags = 0;
    std::uint64_t sequence = 0;
    std::uint64_t sender_id = 0;
    std::int64_t send_time_ns = 0;
    std::uint32_t payload_size = 0;
    std::string_view type_name;

    bool compressed() const noexcept { return flags & frame_flags::compressed; }
};

/// A parsed frame: header plus the body as it is on the wire (possibly compressed).
struct FrameView {
    FrameHeader header;
    const std::uint8_t* body = nullptr;
    std::size_t body_size = 0;
};

/// Size of the header for a type name.
constexpr std::size_t frame_header_size(std::string_view type_name) noexcept {
    return frame_fixed_size + type_name.size();
}

/// Writes the header (including the type name) at `out`, which must hold
/// frame_header_size(header.type_name) bytes.
void write_frame_header(std::uint8_t* out, const FrameHeader& header) noexcept;

/// Parses and validates a frame. `max_payload` bounds the payload size
/// (before and after decompression). Never reads past `size`.
FrameError parse_frame(const std::uint8_t* data, std::size_t size, std::size_t max_payload, FrameView& out) noexcept;

/// Inflates a compressed body into `out` (resized to the header's payload size).
FrameError inflate_body(const FrameView& frame, std::vector<std::uint8_t>& out);

/// Compresses `size` bytes with zlib at `level` (1 fast .. 9 small), appending to `out`.
/// Returns false if zlib fails.
bool deflate_append(const std::uint8_t* data, std::size_t size, int level, std::vector<std::uint8_t>& out);

}  // namespace gecko
