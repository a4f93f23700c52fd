// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file reader.hpp
/// Reads an MCAP file: its summary (schemas, channels, chunk indexes,
/// statistics) when the file ends with a valid one, and its messages, one
/// chunk in memory at a time.
///
/// Tolerant by design. A file cut short (a recorder killed with -9), a
/// chunk whose CRC is wrong, records of unknown kinds (skipped, as the
/// specification asks): the reader reads what is valid, and says in
/// problems() where and why the rest is not ("offset 81920: Chunk record:
/// claims 1048603 bytes, the file has 5210 left"). It never allocates more
/// than the file holds, nor more than ReaderOptions::max_chunk_size for one
/// chunk. Only a file that is not MCAP at all (bad magic, no header) throws.
///
/// **Example**:
///
///     gecko::bag::Reader bag("run.mcap");
///     gecko::bag::MessageFilter only_imu;
///     only_imu.topics = {"imu"};
///     bag.read_messages(only_imu, [](const gecko::bag::Channel& ch, const gecko::bag::MessageView& m) {
///         use(ch.topic, m.log_time, m.data, m.size);   // msgpack for a Gecko recording
///         return true;                                  // false stops
///     });
///     for (const auto& p : bag.problems()) std::cerr << p.to_string() << "\n";

#include <gecko/bag/records.hpp>

#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace gecko::bag {

namespace detail {
class ReaderImpl;
}

struct ReaderOptions {
    /// A chunk that inflates to more than this is not read (a problem is reported).
    std::uint64_t max_chunk_size = 1ull << 30;
    /// Check chunk CRCs (a chunk that fails is skipped, and said).
    bool verify_crcs = true;
    /// Use the summary's chunk indexes when the file has them; false: scan the
    /// data section from the start (what recover and doctor do).
    bool use_index = true;
};

/// Where and why part of a file could not be read.
struct Problem {
    std::uint64_t offset = 0;  ///< file offset of the record (or of the chunk holding it)
    std::string record;        ///< its kind: "Chunk", "Message", "Footer", "file"...
    std::string message;       ///< what is wrong
    bool fatal = false;        ///< reading stopped there (nothing after it was read)
    /// "offset 1234: Chunk record: <message>".
    std::string to_string() const;
};

/// Which messages read_messages() hands out.
struct MessageFilter {
    /// Topic names or globs (`*` any run, `?` one character); empty: every topic.
    std::vector<std::string> topics;
    Timestamp start = 0;                                      ///< earliest log time, inclusive
    Timestamp end = std::numeric_limits<Timestamp>::max();    ///< latest log time, inclusive
    /// Channel ids; empty: those the topics take.
    std::vector<std::uint16_t> channels;
};

class Reader {
public:
    /// Opens `path`, reads its header and, if the file ends with one, its summary.
    /// @throws gecko::Error (Errc::invalid_argument) if it cannot be opened;
    ///         (Errc::decode) if it does not start with the MCAP magic and a Header.
    explicit Reader(const std::string& path, ReaderOptions options = {});
    ~Reader();
    Reader(Reader&&) noexcept;
    Reader& operator=(Reader&&) noexcept;

    const std::string& path() const;
    std::uint64_t file_size() const;
    const Header& header() const;
    /// True when the file ends with a footer and a summary whose CRC holds:
    /// schemas(), channels(), statistics() and chunk_indexes() then come from
    /// it at once. False (a cut file, or one without a summary): they fill as
    /// read_messages() or scan() go through the data section.
    bool has_summary() const;
    const std::map<std::uint16_t, Schema>& schemas() const;
    const std::map<std::uint16_t, Channel>& channels() const;
    const std::optional<Statistics>& statistics() const;
    const std::vector<ChunkIndex>& chunk_indexes() const;
    const std::vector<MetadataIndex>& metadata_indexes() const;
    const std::vector<AttachmentIndex>& attachment_indexes() const;

    /// Hands every message `filter` takes to `visit`, with its channel, in
    /// file order; `visit` returns false to stop. Returns how many it handed
    /// out. What could not be read is added to problems().
    std::uint64_t read_messages(const MessageFilter& filter,
                                const std::function<bool(const Channel&, const MessageView&)>& visit);

    /// Every Metadata record, in file order (through the summary's index when
    /// there is one, else by scanning).
    std::vector<Metadata> metadata();

    /// Hands every Attachment record to `visit`, in file order (through the
    /// summary's index when there is one, else by scanning); `visit` returns
    /// false to stop. Returns how many it handed out. One whose CRC does not
    /// match is added to problems() instead.
    std::uint64_t read_attachments(const std::function<bool(const Attachment&)>& visit);

    /// What a scan of the data section found: read_messages with no filter
    /// that keeps nothing, plus the records' counts (for files without a summary).
    struct ScanResult {
        std::uint64_t messages = 0;
        std::uint64_t chunks = 0;
        std::uint64_t valid_end = 0;        ///< offset after the last record read whole
        bool data_end = false;              ///< the Data End record was reached
        std::map<std::uint16_t, std::uint64_t> channel_message_counts;
        Timestamp message_start_time = 0, message_end_time = 0;
        std::map<std::string, std::uint64_t> compressed_bytes;    ///< chunk records' bytes by compression
        std::map<std::string, std::uint64_t> uncompressed_bytes;  ///< what they inflate to
    };
    ScanResult scan();

    /// Everything that could not be read so far (at most 1000 are kept), in the order met.
    const std::vector<Problem>& problems() const;

private:
    std::unique_ptr<detail::ReaderImpl> impl_;
};

}  // namespace gecko::bag
