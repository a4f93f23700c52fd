// SPDX-License-Identifier: Apache-2.0
#include "gecko/wire/frame.hpp"

#include <zlib.h>

#include <algorithm>
#include <cstring>

#include "gecko/wire/endian.hpp"

namespace gecko::wire {
namespace {

// Inflation grows its output by at most this much per step.
constexpr std::size_t inflate_step = 1u << 20;

}  // namespace

const char* to_string(FrameError error) noexcept {
    switch (error) {
        case FrameError::none: return "no error";
        case FrameError::truncated: return "truncated frame";
        case FrameError::bad_magic: return "not a Gecko frame (bad magic)";
        case FrameError::unsupported_version: return "unsupported frame version";
        case FrameError::unknown_flags: return "unknown frame flags";
        case FrameError::size_mismatch: return "payload size does not match the header";
        case FrameError::oversized: return "message larger than the configured maximum";
        case FrameError::decompress_failed: return "corrupt compressed payload";
    }
    return "unknown frame error";
}

void write_frame_header(std::uint8_t* out, const FrameHeader& h) noexcept {
    store_channel(out, h.channel);
    out[8] = 'G';
    out[9] = 'K';
    out[10] = h.version;
    out[11] = h.flags;
    store_le32(out + 12, h.payload_size);
    store_le64(out + 16, h.sequence);
    store_le64(out + 24, h.sender_id);
    store_le64(out + 32, static_cast<std::uint64_t>(h.send_time_ns));
    store_le64(out + 40, h.type_hash);
}

FrameError parse_frame(const std::uint8_t* data, std::size_t size, std::size_t max_payload, FrameView& out) noexcept {
    if (size < 11) return FrameError::truncated;
    if (data[8] != 'G' || data[9] != 'K') return FrameError::bad_magic;
    if (data[10] != frame_version) return FrameError::unsupported_version;
    if (size < frame_header_size) return FrameError::truncated;
    FrameHeader& h = out.header;
    h.channel = load_channel(data);
    h.version = data[10];
    h.flags = data[11];
    if (h.flags & ~frame_flags::known) return FrameError::unknown_flags;
    h.payload_size = load_le32(data + 12);
    h.sequence = load_le64(data + 16);
    h.sender_id = load_le64(data + 24);
    h.send_time_ns = static_cast<std::int64_t>(load_le64(data + 32));
    h.type_hash = load_le64(data + 40);
    out.body = data + frame_header_size;
    out.body_size = size - frame_header_size;
    if (h.payload_size > max_payload || out.body_size > max_payload) return FrameError::oversized;
    if (!h.compressed() && out.body_size != h.payload_size) {
        return out.body_size < h.payload_size ? FrameError::truncated : FrameError::size_mismatch;
    }
    return FrameError::none;
}

bool peek_sender(const std::uint8_t* data, std::size_t size, std::uint64_t& sender_id, std::uint64_t& sequence) noexcept {
    if (size < frame_header_size || data[8] != 'G' || data[9] != 'K' || data[10] != frame_version) return false;
    sequence = load_le64(data + 16);
    sender_id = load_le64(data + 24);
    return true;
}

FrameError inflate_body(const FrameView& frame, std::vector<std::uint8_t>& out) {
    const std::size_t expected = frame.header.payload_size;
    out.clear();
    z_stream z{};
    if (inflateInit(&z) != Z_OK) return FrameError::decompress_failed;
    z.next_in = const_cast<Bytef*>(frame.body);
    z.avail_in = static_cast<uInt>(frame.body_size);
    int rc = Z_OK;
    while (rc == Z_OK) {
        // Grow by a step, never beyond the declared size (+1 byte to see overruns).
        const std::size_t have = out.size();
        const std::size_t room = std::min(inflate_step, expected + 1 - have);
        if (room == 0) break;
        out.resize(have + room);
        z.next_out = out.data() + have;
        z.avail_out = static_cast<uInt>(room);
        rc = inflate(&z, Z_NO_FLUSH);
        out.resize(have + room - z.avail_out);
        if (rc == Z_BUF_ERROR && z.avail_in == 0) break;  // the input ended before the stream did
    }
    inflateEnd(&z);
    if (rc != Z_STREAM_END || out.size() != expected || z.avail_in != 0) return FrameError::decompress_failed;
    return FrameError::none;
}

FrameError inflate_body(const FrameView& frame, std::uint8_t* out, std::size_t capacity, std::size_t& size) {
    size = 0;
    const std::size_t expected = frame.header.payload_size;
    if (capacity < expected + 1) return FrameError::decompress_failed;
    z_stream z{};
    if (inflateInit(&z) != Z_OK) return FrameError::decompress_failed;
    z.next_in = const_cast<Bytef*>(frame.body);
    z.avail_in = static_cast<uInt>(frame.body_size);
    int rc = Z_OK;
    while (rc == Z_OK) {
        // zlib counts in uInt: steps of at most 1 GiB, never beyond the declared size + 1.
        const std::size_t room = std::min<std::size_t>(std::size_t{1} << 30, expected + 1 - size);
        if (room == 0) break;
        z.next_out = out + size;
        z.avail_out = static_cast<uInt>(room);
        rc = inflate(&z, Z_NO_FLUSH);
        size += room - z.avail_out;
        if (rc == Z_BUF_ERROR && z.avail_in == 0) break;  // the input ended before the stream did
    }
    inflateEnd(&z);
    if (rc != Z_STREAM_END || size != expected || z.avail_in != 0) return FrameError::decompress_failed;
    return FrameError::none;
}

bool deflate_append(const std::uint8_t* data, std::size_t size, int level, Buffer& out) {
    const std::size_t start = out.size();
    uLongf bound = compressBound(static_cast<uLong>(size));
    out.resize(start + bound);  // uninitialised: zlib writes it
    const int rc = compress2(out.data() + start, &bound, data, static_cast<uLong>(size), level);
    if (rc != Z_OK) {
        out.resize(start);
        return false;
    }
    out.resize(start + bound);
    return true;
}

}  // namespace gecko::wire
