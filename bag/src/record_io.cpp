// SPDX-License-Identifier: Apache-2.0
#include "record_io.hpp"

#include <zlib.h>

#include <limits>

namespace gecko::bag {

std::string to_string(Opcode op) {
    switch (op) {
        case Opcode::header: return "Header";
        case Opcode::footer: return "Footer";
        case Opcode::schema: return "Schema";
        case Opcode::channel: return "Channel";
        case Opcode::message: return "Message";
        case Opcode::chunk: return "Chunk";
        case Opcode::message_index: return "Message Index";
        case Opcode::chunk_index: return "Chunk Index";
        case Opcode::attachment: return "Attachment";
        case Opcode::attachment_index: return "Attachment Index";
        case Opcode::statistics: return "Statistics";
        case Opcode::metadata: return "Metadata";
        case Opcode::metadata_index: return "Metadata Index";
        case Opcode::summary_offset: return "Summary Offset";
        case Opcode::data_end: return "Data End";
    }
    static const char* hex = "0123456789abcdef";
    const auto v = static_cast<unsigned>(op);
    std::string h = {'0', 'x', hex[v >> 4], hex[v & 15]};
    return v >= 0x80 ? "private record " + h : v == 0 ? "invalid record 0x00" : "unknown record " + h;
}

const char* to_string(Compression c) noexcept {
    switch (c) {
        case Compression::lz4: return "lz4";
        case Compression::zstd: return "zstd";
        case Compression::none: break;
    }
    return "";
}

namespace detail {

namespace {

std::uint8_t op(Opcode o) { return static_cast<std::uint8_t>(o); }

void write_map(Out& o, const StringMap& m) {
    const auto at = o.begin_length32();
    for (const auto& [k, v] : m) {
        o.str(k);
        o.str(v);
    }
    o.end_length32(at);
}

void write_map(Out& o, const std::map<std::uint16_t, std::uint64_t>& m) {
    const auto at = o.begin_length32();
    for (const auto& [k, v] : m) {
        o.u16(k);
        o.u64(v);
    }
    o.end_length32(at);
}

StringMap read_string_map(In& in, const char* what) {
    In m = in.sub32(what);
    StringMap out;
    while (!m.done()) {
        std::string k = m.str(what);
        out[std::move(k)] = m.str(what);
    }
    return out;
}

std::map<std::uint16_t, std::uint64_t> read_id_map(In& in, const char* what) {
    In m = in.sub32(what);
    std::map<std::uint16_t, std::uint64_t> out;
    while (!m.done()) {
        const auto k = m.u16(what);
        out[k] = m.u64(what);
    }
    return out;
}

}  // namespace

std::uint32_t crc32(std::uint32_t crc, const std::uint8_t* data, std::size_t size) noexcept {
    // zlib takes uInt lengths: feed very large spans in pieces.
    while (size > 0) {
        const auto n = static_cast<uInt>(std::min<std::size_t>(size, std::numeric_limits<uInt>::max() / 2));
        crc = static_cast<std::uint32_t>(::crc32(crc, data, n));
        data += n;
        size -= n;
    }
    return crc;
}

void write(Bytes& out, const Header& r) {
    Out o(out);
    const auto at = o.begin_record(op(Opcode::header));
    o.str(r.profile);
    o.str(r.library);
    o.end_record(at);
}

void write(Bytes& out, const Footer& r) {
    Out o(out);
    const auto at = o.begin_record(op(Opcode::footer));
    o.u64(r.summary_start);
    o.u64(r.summary_offset_start);
    o.u32(r.summary_crc);
    o.end_record(at);
}

void write(Bytes& out, const Schema& r) {
    Out o(out);
    const auto at = o.begin_record(op(Opcode::schema));
    o.u16(r.id);
    o.str(r.name);
    o.str(r.encoding);
    o.u32(static_cast<std::uint32_t>(r.data.size()));
    o.raw(r.data.data(), r.data.size());
    o.end_record(at);
}

void write(Bytes& out, const Channel& r) {
    Out o(out);
    const auto at = o.begin_record(op(Opcode::channel));
    o.u16(r.id);
    o.u16(r.schema_id);
    o.str(r.topic);
    o.str(r.message_encoding);
    write_map(o, r.metadata);
    o.end_record(at);
}

void write_message(Bytes& out, std::uint16_t channel_id, std::uint32_t sequence, Timestamp log_time,
                   Timestamp publish_time, const std::uint8_t* data, std::size_t size) {
    // Sized once and filled in place: the recorder writes millions of these a second.
    constexpr std::size_t fields = 2 + 4 + 8 + 8;
    const std::size_t at = out.size();
    out.resize(at + record_prefix + fields + size);
    std::uint8_t* p = out.data() + at;
    p[0] = op(Opcode::message);
    store_le(p + 1, fields + size, 8);
    store_le(p + 9, channel_id, 2);
    store_le(p + 11, sequence, 4);
    store_le(p + 15, log_time, 8);
    store_le(p + 23, publish_time, 8);
    if (size) std::memcpy(p + record_prefix + fields, data, size);
}

void write_chunk(Bytes& out, const ChunkInfo& info, const std::uint8_t* records, std::size_t size) {
    Out o(out);
    const auto at = o.begin_record(op(Opcode::chunk));
    o.u64(info.message_start_time);
    o.u64(info.message_end_time);
    o.u64(info.uncompressed_size);
    o.u32(info.uncompressed_crc);
    o.str(info.compression);
    o.u64(size);
    o.raw(records, size);
    o.end_record(at);
}

void write(Bytes& out, const MessageIndex& r) {
    Out o(out);
    const auto at = o.begin_record(op(Opcode::message_index));
    o.u16(r.channel_id);
    o.u32(static_cast<std::uint32_t>(r.records.size() * 16));
    for (const auto& [t, offset] : r.records) {
        o.u64(t);
        o.u64(offset);
    }
    o.end_record(at);
}

void write(Bytes& out, const ChunkIndex& r) {
    Out o(out);
    const auto at = o.begin_record(op(Opcode::chunk_index));
    o.u64(r.message_start_time);
    o.u64(r.message_end_time);
    o.u64(r.chunk_start_offset);
    o.u64(r.chunk_length);
    write_map(o, r.message_index_offsets);
    o.u64(r.message_index_length);
    o.str(r.compression);
    o.u64(r.compressed_size);
    o.u64(r.uncompressed_size);
    o.end_record(at);
}

void write(Bytes& out, const Attachment& r, bool crc) {
    Out o(out);
    const auto at = o.begin_record(op(Opcode::attachment));
    const std::size_t fields = out.size();
    o.u64(r.log_time);
    o.u64(r.create_time);
    o.str(r.name);
    o.str(r.media_type);
    o.u64(r.data.size());
    o.raw(r.data.data(), r.data.size());
    o.u32(crc ? crc32(0, out.data() + fields, out.size() - fields) : 0);
    o.end_record(at);
}

void write(Bytes& out, const AttachmentIndex& r) {
    Out o(out);
    const auto at = o.begin_record(op(Opcode::attachment_index));
    o.u64(r.offset);
    o.u64(r.length);
    o.u64(r.log_time);
    o.u64(r.create_time);
    o.u64(r.data_size);
    o.str(r.name);
    o.str(r.media_type);
    o.end_record(at);
}

void write(Bytes& out, const Statistics& r) {
    Out o(out);
    const auto at = o.begin_record(op(Opcode::statistics));
    o.u64(r.message_count);
    o.u16(r.schema_count);
    o.u32(r.channel_count);
    o.u32(r.attachment_count);
    o.u32(r.metadata_count);
    o.u32(r.chunk_count);
    o.u64(r.message_start_time);
    o.u64(r.message_end_time);
    write_map(o, r.channel_message_counts);
    o.end_record(at);
}

void write(Bytes& out, const Metadata& r) {
    Out o(out);
    const auto at = o.begin_record(op(Opcode::metadata));
    o.str(r.name);
    write_map(o, r.metadata);
    o.end_record(at);
}

void write(Bytes& out, const MetadataIndex& r) {
    Out o(out);
    const auto at = o.begin_record(op(Opcode::metadata_index));
    o.u64(r.offset);
    o.u64(r.length);
    o.str(r.name);
    o.end_record(at);
}

void write(Bytes& out, const SummaryOffset& r) {
    Out o(out);
    const auto at = o.begin_record(op(Opcode::summary_offset));
    o.u8(r.group_opcode);
    o.u64(r.group_start);
    o.u64(r.group_length);
    o.end_record(at);
}

void write_data_end(Bytes& out, std::uint32_t data_section_crc) {
    Out o(out);
    const auto at = o.begin_record(op(Opcode::data_end));
    o.u32(data_section_crc);
    o.end_record(at);
}

Header parse_header(In in) {
    Header r;
    r.profile = in.str("profile");
    r.library = in.str("library");
    return r;
}

Footer parse_footer(In in) {
    Footer r;
    r.summary_start = in.u64("summary_start");
    r.summary_offset_start = in.u64("summary_offset_start");
    r.summary_crc = in.u32("summary_crc");
    return r;
}

Schema parse_schema(In in) {
    Schema r;
    r.id = in.u16("id");
    r.name = in.str("name");
    r.encoding = in.str("encoding");
    const std::uint32_t n = in.u32("data length");
    const auto* p = in.bytes(n, "data");
    r.data.assign(p, p + n);
    return r;
}

Channel parse_channel(In in) {
    Channel r;
    r.id = in.u16("id");
    r.schema_id = in.u16("schema_id");
    r.topic = in.str("topic");
    r.message_encoding = in.str("message_encoding");
    r.metadata = read_string_map(in, "metadata");
    return r;
}

MessageView parse_message(In in) {
    MessageView m;
    m.channel_id = in.u16("channel_id");
    m.sequence = in.u32("sequence");
    m.log_time = in.u64("log_time");
    m.publish_time = in.u64("publish_time");
    m.size = in.left();
    m.data = in.bytes(m.size, "data");
    return m;
}

ChunkInfo parse_chunk(In in) {
    const auto* start = in.at();
    ChunkInfo r;
    r.message_start_time = in.u64("message_start_time");
    r.message_end_time = in.u64("message_end_time");
    r.uncompressed_size = in.u64("uncompressed_size");
    r.uncompressed_crc = in.u32("uncompressed_crc");
    r.compression = in.str("compression");
    r.compressed_size = in.u64("records length");
    r.records_offset = static_cast<std::uint64_t>(in.at() - start);
    in.bytes(r.compressed_size, "records");
    return r;
}

MessageIndex parse_message_index(In in) {
    MessageIndex r;
    r.channel_id = in.u16("channel_id");
    In a = in.sub32("records");
    if (a.left() % 16 != 0) throw ParseError("records: " + std::to_string(a.left()) + " bytes, not a whole number of (time, offset) pairs");
    r.records.reserve(a.left() / 16);
    while (!a.done()) {
        const auto t = a.u64("log_time");
        r.records.emplace_back(t, a.u64("offset"));
    }
    return r;
}

ChunkIndex parse_chunk_index(In in) {
    ChunkIndex r;
    r.message_start_time = in.u64("message_start_time");
    r.message_end_time = in.u64("message_end_time");
    r.chunk_start_offset = in.u64("chunk_start_offset");
    r.chunk_length = in.u64("chunk_length");
    r.message_index_offsets = read_id_map(in, "message_index_offsets");
    r.message_index_length = in.u64("message_index_length");
    r.compression = in.str("compression");
    r.compressed_size = in.u64("compressed_size");
    r.uncompressed_size = in.u64("uncompressed_size");
    return r;
}

Attachment parse_attachment(In in, bool& crc_ok) {
    const auto* start = in.at();
    Attachment r;
    r.log_time = in.u64("log_time");
    r.create_time = in.u64("create_time");
    r.name = in.str("name");
    r.media_type = in.str("media_type");
    const std::uint64_t n = in.u64("data length");
    const auto* p = in.bytes(n, "data");
    r.data.assign(p, p + n);
    const auto covered = static_cast<std::size_t>(in.at() - start);
    const std::uint32_t crc = in.u32("crc");
    crc_ok = crc == 0 || crc == crc32(0, start, covered);
    return r;
}

AttachmentIndex parse_attachment_index(In in) {
    AttachmentIndex r;
    r.offset = in.u64("offset");
    r.length = in.u64("length");
    r.log_time = in.u64("log_time");
    r.create_time = in.u64("create_time");
    r.data_size = in.u64("data_size");
    r.name = in.str("name");
    r.media_type = in.str("media_type");
    return r;
}

Statistics parse_statistics(In in) {
    Statistics r;
    r.message_count = in.u64("message_count");
    r.schema_count = in.u16("schema_count");
    r.channel_count = in.u32("channel_count");
    r.attachment_count = in.u32("attachment_count");
    r.metadata_count = in.u32("metadata_count");
    r.chunk_count = in.u32("chunk_count");
    r.message_start_time = in.u64("message_start_time");
    r.message_end_time = in.u64("message_end_time");
    r.channel_message_counts = read_id_map(in, "channel_message_counts");
    return r;
}

Metadata parse_metadata(In in) {
    Metadata r;
    r.name = in.str("name");
    r.metadata = read_string_map(in, "metadata");
    return r;
}

MetadataIndex parse_metadata_index(In in) {
    MetadataIndex r;
    r.offset = in.u64("offset");
    r.length = in.u64("length");
    r.name = in.str("name");
    return r;
}

SummaryOffset parse_summary_offset(In in) {
    SummaryOffset r;
    r.group_opcode = in.u8("group_opcode");
    r.group_start = in.u64("group_start");
    r.group_length = in.u64("group_length");
    return r;
}

std::uint32_t parse_data_end(In in) { return in.u32("data_section_crc"); }

}  // namespace detail
}  // namespace gecko::bag
