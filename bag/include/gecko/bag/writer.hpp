// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file writer.hpp
/// Writes an MCAP file: messages in compressed chunks, each followed by its
/// message indexes, then (at close()) the summary: schemas, channels, chunk
/// indexes, metadata and attachment indexes, statistics, the summary offsets
/// and the footer, every CRC filled in. MCAP's own readers (@mcap/core's
/// indexed and stream readers) open the result.
///
/// Crash safety: a chunk goes to the file whole, in one write, when it
/// reaches WriterOptions::chunk_size or on flush() (with
/// WriterOptions::background, as soon as the Writer's thread has compressed it). A process killed with
/// -9 leaves a file readable up to its last complete chunk (Reader scans it;
/// recover() in repair.hpp rewrites it with a summary). Schemas and
/// channels go into the chunk of their first message, so a truncated file
/// never has a message without its channel.
///
/// **Example**: a program logging its own data (as a spine logs each cycle)
///
///     gecko::bag::Writer bag("cycles.mcap");
///     const auto ch = bag.add_channel("spine/cycle", "msgpack");
///     for (...) {
///         const auto bytes = gecko::codec::encode(cycle);   // any msgpack payload
///         bag.write(ch, seq++, gecko::now_ns(), gecko::now_ns(), bytes.data(), bytes.size());
///     }
///     bag.close();  // the summary; the destructor does it too (and swallows errors)

#include <gecko/bag/records.hpp>

#include <cstdint>
#include <memory>
#include <string>

namespace gecko::bag {

namespace detail {
class WriterImpl;
}

/// How a Writer lays out the file. Every field has a default.
struct WriterOptions {
    Compression compression = Compression::zstd;  ///< chunk compression
    int compression_level = 0;                     ///< 0: the algorithm's default (zstd 3, lz4 fast)
    /// Close a chunk once its uncompressed records reach this many bytes.
    std::size_t chunk_size = 1u << 20;
    /// Compute the chunk, data-section, attachment and summary CRCs (readers check them).
    bool crc = true;
    std::string profile;                           ///< Header.profile ("" for Gecko's msgpack files)
    std::string library = "gecko-bag 0.1";         ///< Header.library
    /// fdatasync after each chunk: a chunk written survives a power loss, not
    /// only a crash of the process. Costs a disk flush per chunk.
    bool sync = false;
    /// Compress, checksum and write chunks on a thread of the Writer's own, so
    /// that write() only appends to memory: a recorder keeps receiving while
    /// a chunk is compressed. Files are byte for byte those of a Writer
    /// without it. flush(), add_metadata(), add_attachment() and close() wait
    /// for the chunks handed over before them; a disk error on the thread is
    /// thrown by the next call.
    bool background = false;
    /// With `background`: how many full chunks may wait for the thread before
    /// write() waits for it (memory: this many × chunk_size, plus the one filling).
    std::size_t background_chunks = 2;
};

/// What a Writer has written so far.
struct WriterStats {
    std::uint64_t messages = 0;
    std::uint64_t chunks = 0;          ///< chunks written to the file
    std::uint64_t file_bytes = 0;      ///< bytes in the file now
    std::uint64_t uncompressed_bytes = 0;  ///< records written into chunks, before compression
    std::uint64_t pending_bytes = 0;   ///< records of the chunk not yet written
    std::uint64_t syncs = 0;           ///< fdatasync calls made (WriterOptions::sync)
    Timestamp message_start_time = 0;  ///< earliest log time (0 before the first message)
    Timestamp message_end_time = 0;
};

class Writer {
public:
    /// Creates `path` (truncating it) and writes the magic and the Header.
    /// @throws gecko::Error (Errc::invalid_argument) if it cannot be created.
    explicit Writer(const std::string& path, WriterOptions options = {});
    /// close(), swallowing errors (call close() to see them).
    ~Writer();
    Writer(Writer&&) noexcept;
    Writer& operator=(Writer&&) noexcept;
    Writer(const Writer&) = delete;
    Writer& operator=(const Writer&) = delete;

    /// A schema, given the next free id (an identical one already added: its id).
    std::uint16_t add_schema(const std::string& name, const std::string& encoding, const std::vector<std::uint8_t>& data);
    /// A schema with its own id (copying a file: recover, filters).
    /// @throws gecko::Error (Errc::invalid_argument) for id 0, or an id taken by another schema.
    void add_schema(const Schema& schema);
    /// A channel, given the next free id (an identical one already added: its id).
    /// `schema_id` 0: none. @throws gecko::Error (invalid_argument) for an unknown schema id, or when 65536 channels exist.
    std::uint16_t add_channel(const std::string& topic, const std::string& message_encoding, std::uint16_t schema_id = 0,
                              const StringMap& metadata = {});
    /// A channel with its own id. @throws gecko::Error (invalid_argument) for an id taken by another channel.
    void add_channel(const Channel& channel);

    /// Appends a message to the current chunk (written when full or at flush()).
    /// @throws gecko::Error: invalid_argument for an unknown channel; transport if the disk refuses.
    void write(std::uint16_t channel_id, std::uint32_t sequence, Timestamp log_time, Timestamp publish_time,
               const std::uint8_t* data, std::size_t size);
    void write(const MessageView& m) { write(m.channel_id, m.sequence, m.log_time, m.publish_time, m.data, m.size); }

    /// A Metadata record (outside chunks), indexed in the summary.
    void add_metadata(const Metadata& metadata);
    /// An Attachment record (outside chunks), indexed in the summary.
    void add_attachment(const Attachment& attachment);

    /// Writes the current chunk, if it has anything, and its message indexes.
    void flush();
    /// flush(), then the data end, summary and footer; the file is complete.
    /// Idempotent. @throws gecko::Error (Errc::transport) if the disk refuses.
    void close();

    WriterStats stats() const;
    const std::string& path() const;
    /// The channels added so far, by id.
    const std::map<std::uint16_t, Channel>& channels() const;

private:
    std::unique_ptr<detail::WriterImpl> impl_;
};

}  // namespace gecko::bag
