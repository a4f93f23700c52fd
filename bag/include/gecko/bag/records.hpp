// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file records.hpp
/// The records of an MCAP file (format version 0, the specification in
/// foxglove/mcap website/docs/spec/), as plain structs. A file is
///
///     <magic><Header><data section ... DataEnd>[<summary>][<summary offsets>]<Footer><magic>
///
/// and each record is `<u8 opcode><u64 content length><content>`, integers
/// little-endian, a String a u32 byte length and UTF-8, a Map a u32 byte
/// length and its entries. Writer (writer.hpp) writes them, Reader
/// (reader.hpp) reads them; docs/RECORDING.md says how Gecko fills them.

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace gecko::bag {

/// The 8 bytes a file starts and ends with: 0x89 "MCAP" '0' "\r\n" ('0': major version 0).
inline constexpr std::uint8_t magic[8] = {0x89, 'M', 'C', 'A', 'P', 0x30, '\r', '\n'};

/// A record's kind. 0x01-0x7f are the specification's, 0x80-0xff private
/// (skipped by readers), 0x00 invalid.
enum class Opcode : std::uint8_t {
    header = 0x01,
    footer = 0x02,
    schema = 0x03,
    channel = 0x04,
    message = 0x05,
    chunk = 0x06,
    message_index = 0x07,
    chunk_index = 0x08,
    attachment = 0x09,
    attachment_index = 0x0a,
    statistics = 0x0b,
    metadata = 0x0c,
    metadata_index = 0x0d,
    summary_offset = 0x0e,
    data_end = 0x0f,
};

/// "Header", "Chunk", ...; "private record 0x80" or "unknown record 0x42" for the rest.
std::string to_string(Opcode op);

/// The well-known chunk compressions (the registry's `lz4`, `zstd`, and "" for none).
enum class Compression { none, lz4, zstd };
/// "", "lz4", "zstd".
const char* to_string(Compression c) noexcept;

using Timestamp = std::uint64_t;  ///< ns since an epoch the writer chose (Gecko: the Unix epoch)
using StringMap = std::map<std::string, std::string>;

struct Header {
    std::string profile;  ///< "" for Gecko's files (no well-known profile fits msgpack)
    std::string library;  ///< who wrote the file, e.g. "gecko-bag 0.1.0"
};

struct Footer {
    std::uint64_t summary_start = 0;         ///< file offset of the summary; 0: none
    std::uint64_t summary_offset_start = 0;  ///< file offset of the summary offsets; 0: none
    std::uint32_t summary_crc = 0;           ///< CRC-32 of summary start .. this footer's summary_offset_start; 0: not computed
};

struct Schema {
    std::uint16_t id = 0;             ///< never 0 (0 on a channel means "no schema")
    std::string name;
    std::string encoding;             ///< e.g. "jsonschema"; "" with empty data: none
    std::vector<std::uint8_t> data;
    bool operator==(const Schema& o) const {
        return id == o.id && name == o.name && encoding == o.encoding && data == o.data;
    }
};

struct Channel {
    std::uint16_t id = 0;
    std::uint16_t schema_id = 0;      ///< 0: no schema (self-describing encodings such as msgpack)
    std::string topic;
    std::string message_encoding;     ///< "msgpack", "json", ...
    StringMap metadata;
    bool operator==(const Channel& o) const {
        return id == o.id && schema_id == o.schema_id && topic == o.topic && message_encoding == o.message_encoding &&
               metadata == o.metadata;
    }
};

/// A message as read: `data` points into the reader's buffer, valid during the call that hands it out.
struct MessageView {
    std::uint16_t channel_id = 0;
    std::uint32_t sequence = 0;
    Timestamp log_time = 0;       ///< when it was recorded (Gecko: received)
    Timestamp publish_time = 0;   ///< when it was published (Gecko: the frame's send time)
    const std::uint8_t* data = nullptr;
    std::size_t size = 0;
};

/// A chunk's header fields (its records are read separately).
struct ChunkInfo {
    Timestamp message_start_time = 0;
    Timestamp message_end_time = 0;
    std::uint64_t uncompressed_size = 0;
    std::uint32_t uncompressed_crc = 0;
    std::string compression;
    std::uint64_t compressed_size = 0;     ///< the records' length in the file
    std::uint64_t records_offset = 0;      ///< file offset of the (compressed) records
};

struct MessageIndex {
    std::uint16_t channel_id = 0;
    std::vector<std::pair<Timestamp, std::uint64_t>> records;  ///< log time, offset in the uncompressed chunk
};

struct ChunkIndex {
    Timestamp message_start_time = 0;
    Timestamp message_end_time = 0;
    std::uint64_t chunk_start_offset = 0;
    std::uint64_t chunk_length = 0;                               ///< opcode and length prefix included
    std::map<std::uint16_t, std::uint64_t> message_index_offsets;  ///< channel -> file offset of its Message Index
    std::uint64_t message_index_length = 0;
    std::string compression;
    std::uint64_t compressed_size = 0;
    std::uint64_t uncompressed_size = 0;
};

struct Attachment {
    Timestamp log_time = 0;
    Timestamp create_time = 0;
    std::string name;
    std::string media_type;
    std::vector<std::uint8_t> data;
};

struct AttachmentIndex {
    std::uint64_t offset = 0;
    std::uint64_t length = 0;
    Timestamp log_time = 0;
    Timestamp create_time = 0;
    std::uint64_t data_size = 0;
    std::string name;
    std::string media_type;
};

struct Statistics {
    std::uint64_t message_count = 0;
    std::uint16_t schema_count = 0;
    std::uint32_t channel_count = 0;
    std::uint32_t attachment_count = 0;
    std::uint32_t metadata_count = 0;
    std::uint32_t chunk_count = 0;
    Timestamp message_start_time = 0;
    Timestamp message_end_time = 0;
    std::map<std::uint16_t, std::uint64_t> channel_message_counts;
};

struct Metadata {
    std::string name;
    StringMap metadata;
};

struct MetadataIndex {
    std::uint64_t offset = 0;
    std::uint64_t length = 0;
    std::string name;
};

struct SummaryOffset {
    std::uint8_t group_opcode = 0;
    std::uint64_t group_start = 0;
    std::uint64_t group_length = 0;
};

}  // namespace gecko::bag
