// SPDX-License-Identifier: Apache-2.0
#pragma once
// Each MCAP record to bytes (opcode, length and content, appended to a
// vector) and from its content (the bytes after the length prefix). Parsing
// throws ParseError naming the field; fields after the known ones are
// ignored, as the specification asks (records may grow at their end).

#include <gecko/bag/records.hpp>

#include "serial.hpp"

namespace gecko::bag::detail {

inline constexpr std::size_t record_prefix = 9;  // opcode u8 + content length u64
inline constexpr std::size_t footer_content = 20;
inline constexpr std::size_t footer_record = record_prefix + footer_content;

void write(Bytes& out, const Header& r);
void write(Bytes& out, const Footer& r);
void write(Bytes& out, const Schema& r);
void write(Bytes& out, const Channel& r);
void write_message(Bytes& out, std::uint16_t channel_id, std::uint32_t sequence, Timestamp log_time,
                   Timestamp publish_time, const std::uint8_t* data, std::size_t size);
/// A chunk whose records are already compressed as `info.compression` says.
void write_chunk(Bytes& out, const ChunkInfo& info, const std::uint8_t* records, std::size_t size);
void write(Bytes& out, const MessageIndex& r);
void write(Bytes& out, const ChunkIndex& r);
void write(Bytes& out, const Attachment& r, bool crc);
void write(Bytes& out, const AttachmentIndex& r);
void write(Bytes& out, const Statistics& r);
void write(Bytes& out, const Metadata& r);
void write(Bytes& out, const MetadataIndex& r);
void write(Bytes& out, const SummaryOffset& r);
void write_data_end(Bytes& out, std::uint32_t data_section_crc);

Header parse_header(In in);
Footer parse_footer(In in);
Schema parse_schema(In in);
Channel parse_channel(In in);
MessageView parse_message(In in);
/// The chunk's fields; `records_offset` is relative to the content's start.
ChunkInfo parse_chunk(In in);
MessageIndex parse_message_index(In in);
ChunkIndex parse_chunk_index(In in);
/// The attachment and whether its CRC (if not 0) matches.
Attachment parse_attachment(In in, bool& crc_ok);
AttachmentIndex parse_attachment_index(In in);
Statistics parse_statistics(In in);
Metadata parse_metadata(In in);
MetadataIndex parse_metadata_index(In in);
SummaryOffset parse_summary_offset(In in);
std::uint32_t parse_data_end(In in);

/// CRC-32/IEEE (zlib's), continuing from `crc` (0 to start).
std::uint32_t crc32(std::uint32_t crc, const std::uint8_t* data, std::size_t size) noexcept;

}  // namespace gecko::bag::detail
