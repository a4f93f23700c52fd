#include "gecko/frame.hpp"

#include <zlib.h>

#include <cstring>

namespace gecko {
namespace {

void put_u32(std::uint8_t* p, std::uint32_t v) noexcept {
    for (int i = 0; i < 4; ++i) p[i] = static_cast<std::uint8_t>(v >> (8 * i));
}
void put_u64(std::uint8_t* p, std::uint64_t v) noexcept {
    for (int i = 0; i < 8; ++i) p[i] = static_cast<std::uint8_t>(v >> (8 * i));
}
std::uint32_t get_u32(const std::uint8_t* p) noexcept {
    std::uint32_t v = 0;
    for (int i = 3; i >= 0; --i) v = (v << 8) | p[i];
    return v;
}
std::uint64_t get_u64(const std::uint8_t* p) noexcept {
    std::uint64_t v = 0;
    for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
    return v;
}

}  // namespace

const char* to_string(FrameError error) noexcept {
    switch (error) {
        case FrameError::none: return "no error";
        case FrameError::truncated: return "truncated frame";
        case FrameError::bad_magic: return "not a Gecko frame (bad magic)";
        case FrameError::unsupported_version: return "unsupported frame version";
        case FrameError::unknown_flags: return "unknown frame flags";
        case FrameError::bad_type_name: return "invalid type name in frame";
        case FrameError::size_mismatch: return "payload size does not match the header";
        case FrameError::oversized: return "message larger than the configured maximum";
        case FrameError::decompress_failed: return "corrupt compressed payload";
    }
    return "unknown frame error";
}

void write_frame_header(std::uint8_t* out, const FrameHeader& h) noexcept {
    out[0] = 'G';
    out[1] = 'K';
    out[2] = h.version;
    out[3] = h.flags;
    put_u64(out + 4, h.sequence);
    put_u64(out + 12, h.sender_id);
    put_u64(out + 20, static_cast<std::uint64_t>(h.send_time_ns));
    put_u32(out + 28, h.payload_size);
    out[32] = static_cast<std::uint8_t>(h.type_name.size());
    std::memcpy(out + 33, h.type_name.data(), h.type_name.size());
}

FrameError parse_frame(const std::uint8_t* data, std::size_t size, std::size_t max_payload, FrameView& out) noexcept {
    if (size < 3) return FrameError::truncated;
    if (data[0] != 'G' || data[1] != 'K') return FrameError::bad_magic;
    if (data[2] != frame_version) return FrameError::unsupported_version;
    if (size < frame_fixed_size) return FrameError::truncated;
    FrameHeader& h = out.header;
    h.version = data[2];
    h.flags = data[3];
    if (h.flags & ~frame_flags::known) return FrameError::unknown_flags;
    h.sequence = get_u64(data + 4);
    h.sender_id = get_u64(data + 12);
    h.send_time_ns = static_cast<std::int64_t>(get_u64(data + 20));
    h.payload_size = get_u32(data + 28);
    const std::size_t name_size = data[32];
    if (size < frame_fixed_size + name_size) return FrameError::truncated;
    if (name_size == 0) return FrameError::bad_type_name;
    for (std::size_t i = 0; i < name_size; ++i) {
        const std::uint8_t c = data[frame_fixed_size + i];
        if (c < 0x21 || c > 0x7e) return FrameError::bad_type_name;
    }
    h.type_name = std::string_view(reinterpret_cast<const char*>(data + frame_fixed_size), name_size);
    out.body = data + frame_fixed_size + name_size;
    out.body_size = size - frame_fixed_size - name_size;
    if (h.payload_size > max_payload || out.body_size > max_payload) return FrameError::oversized;
    if (!h.compressed() && out.body_size != h.payload_size) {
        return out.body_size < h.payload_size ? FrameError::truncated : FrameError::size_mismatch;
    }
    return FrameError::none;
}

FrameError inflate_body(const FrameView& frame, std::vector<std::uint8_t>& out) {
    out.resize(frame.header.payload_size);
    uLongf produced = static_cast<uLongf>(out.size());
    const int rc = uncompress(out.data(), &produced, frame.body, static_cast<uLong>(frame.body_size));
    if (rc != Z_OK || produced != frame.header.payload_size) return FrameError::decompress_failed;
    return FrameError::none;
}

bool deflate_append(const std::uint8_t* data, std::size_t size, int level, std::vector<std::uint8_t>& out) {
    const std::size_t start = out.size();
    uLongf bound = compressBound(static_cast<uLong>(size));
    out.resize(start + bound);
    const int rc = compress2(out.data() + start, &bound, data, static_cast<uLong>(size), level);
    if (rc != Z_OK) {
        out.resize(start);
        return false;
    }
    out.resize(start + bound);
    return true;
}

}  // namespace gecko
