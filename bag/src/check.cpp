// SPDX-License-Identifier: Apache-2.0
#include <gecko/bag/check.hpp>

#include <gecko/bag/records.hpp>

#include <algorithm>
#include <cstring>
#include <map>
#include <optional>
#include <set>

#include "compression.hpp"
#include "file.hpp"
#include "record_io.hpp"

namespace gecko::bag {

std::string Finding::to_string() const {
    return std::string(severity == Severity::error ? "error" : "warning") + " at offset " + std::to_string(offset) + ": " +
           message;
}

std::size_t CheckReport::errors() const {
    return static_cast<std::size_t>(std::count_if(findings.begin(), findings.end(),
                                                  [](const Finding& f) { return f.severity == Finding::Severity::error; }));
}
std::size_t CheckReport::warnings() const { return findings.size() - errors(); }

namespace {

using namespace detail;

// What the data section says about one chunk, to compare with its index.
struct SeenChunk {
    std::uint64_t offset = 0, length = 0;
    ChunkInfo info;
    std::map<std::uint16_t, std::uint64_t> index_offsets;  // message indexes found after it
    std::uint64_t index_length = 0;
    std::set<std::uint16_t> channels;
};

class Checker {
public:
    Checker(const std::string& path, std::uint64_t max_chunk) : file_(path), max_chunk_(max_chunk) {}

    CheckReport run() {
        const std::uint64_t size = file_.size();
        Bytes b;
        if (!file_.read(0, sizeof magic, b) || std::memcmp(b.data(), magic, sizeof magic) != 0) {
            error(0, "the file does not start with the MCAP magic bytes");
            return std::move(report_);
        }
        std::uint64_t offset = sizeof magic;
        bool header = false, data_end = false;
        std::optional<std::uint64_t> footer_at;
        std::optional<SeenChunk> last_chunk;
        Timestamp last_log_time = 0;
        bool any_message = false;
        while (offset < size) {
            if (size - offset < record_prefix) {
                error(offset, "cut short: " + std::to_string(size - offset) + " bytes where a record starts");
                break;
            }
            file_.read(offset, record_prefix, b);
            const std::uint8_t op = b[0];
            const std::uint64_t length = load_le(b.data() + 1, 8);
            const std::string kind = to_string(static_cast<Opcode>(op));
            if (length > size - offset - record_prefix) {
                error(offset, kind + " record claims " + std::to_string(length) + " bytes, the file has " +
                                  std::to_string(size - offset - record_prefix) + " left");
                break;
            }
            ++report_.records;
            if (!header) {
                if (op != static_cast<std::uint8_t>(Opcode::header)) error(offset, "the first record is a " + kind + ", not a Header");
                header = true;
            }
            Bytes content;
            const auto kept = static_cast<Opcode>(op);
            const bool read = kept != Opcode::attachment || length < (256u << 20);
            if (read) file_.read(offset + record_prefix, length, content);
            if (op != static_cast<std::uint8_t>(Opcode::message_index) && last_chunk) {
                chunks_.push_back(*last_chunk);
                last_chunk.reset();
            }
            try {
                In in(content.data(), content.size());
                switch (kept) {
                    case Opcode::header: {
                        if (offset != sizeof magic) error(offset, "a second Header record");
                        const auto h = parse_header(in);
                        if (h.library.empty()) warning(offset, "Header.library is empty");
                        if (!h.profile.empty() && h.profile != "ros1" && h.profile != "ros2")
                            warning(offset, "Header.profile '" + h.profile + "' is not a well-known profile");
                        break;
                    }
                    case Opcode::footer: footer_at = offset; break;
                    case Opcode::schema:
                        if (data_end) summary_schemas_.push_back({offset, parse_schema(in)});
                        else data_schema(parse_schema(in), offset, false);
                        break;
                    case Opcode::channel:
                        if (data_end) summary_channels_.push_back({offset, parse_channel(in)});
                        else data_channel(parse_channel(in), offset, false);
                        break;
                    case Opcode::message: {
                        if (data_end) error(offset, "a Message record in the summary section");
                        const auto m = parse_message(in);
                        on_message(m, offset, last_log_time, any_message);
                        loose_messages_ = true;
                        break;
                    }
                    case Opcode::chunk: {
                        if (data_end) error(offset, "a Chunk record in the summary section");
                        SeenChunk c;
                        c.offset = offset;
                        c.length = record_prefix + length;
                        c.info = parse_chunk(in);
                        check_chunk(content, c, last_log_time, any_message);
                        last_chunk = c;
                        ++report_.chunks;
                        break;
                    }
                    case Opcode::message_index: {
                        const auto mi = parse_message_index(in);
                        if (!last_chunk) {
                            error(offset, "a Message Index that does not follow a chunk");
                            break;
                        }
                        last_chunk->index_offsets[mi.channel_id] = offset;
                        last_chunk->index_length += record_prefix + length;
                        check_message_index(mi, *last_chunk, offset);
                        break;
                    }
                    case Opcode::chunk_index:
                        if (!data_end) error(offset, "a Chunk Index in the data section");
                        summary_chunk_indexes_.push_back({offset, parse_chunk_index(in)});
                        break;
                    case Opcode::attachment: {
                        if (data_end) error(offset, "an Attachment in the summary section");
                        if (read) {
                            bool crc_ok = true;
                            parse_attachment(in, crc_ok);
                            if (!crc_ok) error(offset, "the attachment's CRC does not match");
                        }
                        ++attachments_;
                        break;
                    }
                    case Opcode::metadata:
                        if (data_end) error(offset, "a Metadata record in the summary section");
                        parse_metadata(in);
                        ++metadata_;
                        break;
                    case Opcode::statistics:
                        if (statistics_) error(offset, "more than one Statistics record");
                        statistics_ = parse_statistics(in);
                        statistics_at_ = offset;
                        break;
                    case Opcode::attachment_index: parse_attachment_index(in); break;
                    case Opcode::metadata_index: parse_metadata_index(in); break;
                    case Opcode::summary_offset: summary_offsets_.push_back({offset, parse_summary_offset(in)}); break;
                    case Opcode::data_end: {
                        if (data_end) error(offset, "a second Data End record");
                        data_end = true;
                        summary_from_ = offset + record_prefix + length;
                        const std::uint32_t crc = parse_data_end(in);
                        if (crc != 0 && crc != file_crc(0, offset)) error(offset, "the data section's CRC does not match");
                        break;
                    }
                    default:
                        if (op == 0) {
                            error(offset, "opcode 0x00 is invalid");
                        } else if (op < 0x80) {
                            error(offset, "unknown record opcode in a file of version 0: " + kind);
                        }
                        break;
                }
            } catch (const ParseError& e) {
                error(offset, kind + " record: " + e.what());
            }
            if (footer_at) {
                offset += record_prefix + length;
                break;
            }
            if (data_end && kept != Opcode::data_end) {  // summary records are grouped by opcode
                if (!summary_ops_.empty() && summary_ops_.back() != op && std::count(summary_ops_.begin(), summary_ops_.end(), op))
                    error(offset, "summary records are not grouped by opcode (" + kind + " again)");
                summary_ops_.push_back(op);
            }
            offset += record_prefix + length;
        }
        if (last_chunk) chunks_.push_back(*last_chunk);
        if (!data_end) error(offset, "no Data End record");
        if (!footer_at) {
            error(offset, "no Footer record");
        } else {
            check_footer(*footer_at, offset);
        }
        check_summary();
        return std::move(report_);
    }

private:
    void error(std::uint64_t at, std::string m) { add(Finding::Severity::error, at, std::move(m)); }
    void warning(std::uint64_t at, std::string m) { add(Finding::Severity::warning, at, std::move(m)); }
    void add(Finding::Severity s, std::uint64_t at, std::string m) {
        if (report_.findings.size() < 1000) report_.findings.push_back(Finding{s, at, std::move(m)});
    }

    std::uint32_t file_crc(std::uint64_t from, std::uint64_t to) {
        std::uint32_t crc = 0;
        Bytes b;
        for (std::uint64_t at = from; at < to;) {
            const std::uint64_t n = std::min<std::uint64_t>(to - at, 8u << 20);
            if (!file_.read(at, n, b)) break;
            crc = crc32(crc, b.data(), b.size());
            at += n;
        }
        return crc;
    }

    void data_schema(const Schema& s, std::uint64_t at, bool in_chunk) {
        if (s.id == 0) return error(at, "a Schema with id 0");
        if (s.encoding.empty() && !s.data.empty()) warning(at, "schema " + std::to_string(s.id) + " has no encoding but data");
        auto [it, added] = schemas_.emplace(s.id, s);
        if (!added) {
            if (!(it->second == s)) error(at, "schema " + std::to_string(s.id) + " differs from an earlier one with that id");
            else if (!in_chunk) warning(at, "schema " + std::to_string(s.id) + " is repeated in the data section");
        }
    }

    void data_channel(const Channel& c, std::uint64_t at, bool in_chunk) {
        if (c.schema_id != 0 && !schemas_.count(c.schema_id))
            error(at, "channel " + std::to_string(c.id) + " ('" + c.topic + "') names schema " + std::to_string(c.schema_id) +
                          ", which no Schema record before it defines");
        auto [it, added] = channels_.emplace(c.id, c);
        if (!added) {
            if (!(it->second == c)) error(at, "channel " + std::to_string(c.id) + " differs from an earlier one with that id");
            else if (!in_chunk) warning(at, "channel " + std::to_string(c.id) + " is repeated in the data section");
        }
    }

    void on_message(const MessageView& m, std::uint64_t at, Timestamp& last, bool& any) {
        ++report_.messages;
        if (!channels_.count(m.channel_id)) error(at, "a message on channel " + std::to_string(m.channel_id) + " before its Channel record");
        if (any && m.log_time < last) {
            if (backwards_++ == 0) warning(at, "message log times go backwards (" + std::to_string(m.log_time) + " after " + std::to_string(last) + ")");
        }
        last = m.log_time;
        any = true;
        ++counts_[m.channel_id];
        if (report_.messages == 1 || m.log_time < start_) start_ = m.log_time;
        if (report_.messages == 1 || m.log_time > end_) end_ = m.log_time;
    }

    void check_chunk(const Bytes& content, SeenChunk& c, Timestamp& last, bool& any) {
        Bytes inflated;
        const std::uint8_t* records = content.data() + c.info.records_offset;
        std::size_t size = static_cast<std::size_t>(c.info.compressed_size);
        if (c.info.uncompressed_size > max_chunk_)
            return error(c.offset, "a chunk that claims " + std::to_string(c.info.uncompressed_size) +
                                       " bytes uncompressed, above the limit of " + std::to_string(max_chunk_) + " (not read)");
        try {
            decompress(c.info.compression, records, size, c.info.uncompressed_size, inflated);
        } catch (const ParseError& e) {
            return error(c.offset, std::string("chunk: ") + e.what());
        }
        if (c.info.uncompressed_crc != 0 && crc32(0, inflated.data(), inflated.size()) != c.info.uncompressed_crc)
            error(c.offset, "the chunk's CRC does not match");
        In in(inflated.data(), inflated.size());
        Timestamp lo = 0, hi = 0;
        std::uint64_t n = 0;
        try {
            while (!in.done()) {
                const auto at = static_cast<std::uint64_t>(in.at() - inflated.data());
                const std::uint8_t op = in.u8("opcode");
                const std::uint64_t length = in.u64("length");
                In r(in.bytes(length, "record"), length);
                switch (static_cast<Opcode>(op)) {
                    case Opcode::schema: data_schema(parse_schema(r), c.offset, true); break;
                    case Opcode::channel: data_channel(parse_channel(r), c.offset, true); break;
                    case Opcode::message: {
                        const auto m = parse_message(r);
                        on_message(m, c.offset, last, any);
                        c.channels.insert(m.channel_id);
                        chunk_messages_[{c.offset, at}] = m.log_time;
                        lo = n == 0 ? m.log_time : std::min(lo, m.log_time);
                        hi = n == 0 ? m.log_time : std::max(hi, m.log_time);
                        ++n;
                        break;
                    }
                    default:
                        if (op < 0x80) error(c.offset, "a " + to_string(static_cast<Opcode>(op)) + " record inside a chunk");
                        break;
                }
            }
        } catch (const ParseError& e) {
            error(c.offset, std::string("inside the chunk: ") + e.what());
        }
        if (c.info.message_start_time != lo || c.info.message_end_time != hi)
            error(c.offset, "the chunk says its messages span " + std::to_string(c.info.message_start_time) + ".." +
                                std::to_string(c.info.message_end_time) + ", they span " + std::to_string(lo) + ".." +
                                std::to_string(hi));
        expected_index_[c.offset] = c.channels;
    }

    void check_message_index(const MessageIndex& mi, const SeenChunk& c, std::uint64_t at) {
        if (!c.channels.count(mi.channel_id))
            error(at, "a Message Index for channel " + std::to_string(mi.channel_id) + ", which has no message in its chunk");
        for (const auto& [t, off] : mi.records) {
            auto it = chunk_messages_.find({c.offset, off});
            if (it == chunk_messages_.end()) {
                error(at, "a Message Index entry points at offset " + std::to_string(off) + " of its chunk, where no message starts");
                break;
            }
            if (it->second != t) {
                error(at, "a Message Index entry's time differs from its message's log time");
                break;
            }
        }
        indexed_[c.offset] += mi.records.size();
    }

    void check_footer(std::uint64_t at, std::uint64_t end) {
        Bytes b;
        if (end + sizeof magic != file_.size()) error(end, "bytes between the Footer and the closing magic");
        if (!file_.read(file_.size() - sizeof magic, sizeof magic, b) || std::memcmp(b.data(), magic, sizeof magic) != 0) {
            error(file_.size(), "no closing magic bytes after the Footer");
            return;
        }
        file_.read(at + record_prefix, footer_content, b);
        const Footer f = parse_footer(In(b.data(), b.size()));
        if (f.summary_start != 0 && f.summary_start != summary_from_)
            error(at, "Footer.summary_start is " + std::to_string(f.summary_start) + ", the summary starts at " + std::to_string(summary_from_));
        if (f.summary_start == 0 && summary_from_ != 0 && summary_from_ != at)
            error(at, "Footer.summary_start is 0 but there are summary records");
        if (f.summary_crc != 0 && f.summary_start != 0) {
            const std::uint32_t crc = file_crc(f.summary_start, at + record_prefix + 16);
            if (crc != f.summary_crc) error(at, "the summary's CRC does not match");
        }
        if (f.summary_offset_start != 0 && (summary_offsets_.empty() || summary_offsets_.front().first != f.summary_offset_start))
            error(at, "Footer.summary_offset_start does not point at the first Summary Offset record");
    }

    void check_summary() {
        for (const auto& [at, s] : summary_schemas_) {
            auto it = schemas_.find(s.id);
            if (it == schemas_.end()) error(at, "summary schema " + std::to_string(s.id) + " is not in the data section");
            else if (!(it->second == s)) error(at, "summary schema " + std::to_string(s.id) + " differs from the data section's");
        }
        std::set<std::uint16_t> summary_channels;
        for (const auto& [at, c] : summary_channels_) {
            summary_channels.insert(c.id);
            auto it = channels_.find(c.id);
            if (it == channels_.end()) error(at, "summary channel " + std::to_string(c.id) + " is not in the data section");
            else if (!(it->second == c)) error(at, "summary channel " + std::to_string(c.id) + " differs from the data section's");
        }
        std::set<std::uint16_t> summary_schemas;
        for (const auto& p : summary_schemas_) summary_schemas.insert(p.second.id);
        std::map<std::uint64_t, const SeenChunk*> by_offset;
        for (const auto& c : chunks_) by_offset[c.offset] = &c;
        for (const auto& [at, ci] : summary_chunk_indexes_) {
            auto it = by_offset.find(ci.chunk_start_offset);
            if (it == by_offset.end()) {
                error(at, "a Chunk Index points at offset " + std::to_string(ci.chunk_start_offset) + ", where no chunk starts");
                continue;
            }
            const SeenChunk& c = *it->second;
            const std::uint64_t index_at = at;  // a structured binding cannot be captured in C++17
            auto differs = [&](const char* field, std::uint64_t a, std::uint64_t b) {
                if (a != b) error(index_at, std::string("Chunk Index.") + field + " is " + std::to_string(a) + ", its chunk's is " + std::to_string(b));
            };
            differs("chunk_length", ci.chunk_length, c.length);
            differs("message_start_time", ci.message_start_time, c.info.message_start_time);
            differs("message_end_time", ci.message_end_time, c.info.message_end_time);
            differs("compressed_size", ci.compressed_size, c.info.compressed_size);
            differs("uncompressed_size", ci.uncompressed_size, c.info.uncompressed_size);
            differs("message_index_length", ci.message_index_length, c.index_length);
            if (ci.compression != c.info.compression) error(at, "Chunk Index.compression differs from its chunk's");
            if (ci.message_index_offsets != c.index_offsets) error(at, "Chunk Index.message_index_offsets differ from the message indexes after its chunk");
            for (const auto id : c.channels) {
                if (!summary_channels.count(id)) error(at, "channel " + std::to_string(id) + " of an indexed chunk is not in the summary");
                auto ch = channels_.find(id);
                if (ch != channels_.end() && ch->second.schema_id != 0 && !summary_schemas.count(ch->second.schema_id))
                    error(at, "schema " + std::to_string(ch->second.schema_id) + " of an indexed chunk is not in the summary");
            }
        }
        if (!summary_chunk_indexes_.empty()) {
            if (summary_chunk_indexes_.size() != chunks_.size())
                error(summary_from_, std::to_string(chunks_.size()) + " chunks, " + std::to_string(summary_chunk_indexes_.size()) + " Chunk Index records");
            if (loose_messages_) warning(summary_from_, "messages outside chunks in an indexed file (readers using the index miss them)");
        }
        for (const auto& c : chunks_) {
            const auto& want = expected_index_[c.offset];
            if (!c.index_offsets.empty()) {
                std::set<std::uint16_t> have;
                for (const auto& p : c.index_offsets) have.insert(p.first);
                if (have != want) error(c.offset, "the message indexes after the chunk do not cover exactly its channels");
            }
        }
        if (statistics_) {
            const auto& s = *statistics_;
            auto differs = [&](const char* field, std::uint64_t a, std::uint64_t b) {
                if (a != b) error(statistics_at_, std::string("Statistics.") + field + " is " + std::to_string(a) + ", the file has " + std::to_string(b));
            };
            differs("message_count", s.message_count, report_.messages);
            differs("chunk_count", s.chunk_count, chunks_.size());
            differs("channel_count", s.channel_count, channels_.size());
            differs("schema_count", s.schema_count, schemas_.size());
            differs("attachment_count", s.attachment_count, attachments_);
            differs("metadata_count", s.metadata_count, metadata_);
            if (report_.messages > 0) {
                differs("message_start_time", s.message_start_time, start_);
                differs("message_end_time", s.message_end_time, end_);
            }
            if (!s.channel_message_counts.empty()) {
                if (s.channel_message_counts != counts_) error(statistics_at_, "Statistics.channel_message_counts differ from the messages' channels");
                for (const auto& [at, c] : summary_channels_)
                    if (at > statistics_at_) error(at, "a summary Channel after the Statistics that counts its messages");
                for (const auto& [id, n] : s.channel_message_counts)
                    if (!summary_channels.count(id)) error(statistics_at_, "Statistics counts channel " + std::to_string(id) + ", which is not in the summary");
            }
        }
        for (const auto& [at, so] : summary_offsets_) {
            Bytes b;
            if (so.group_length == 0 || !file_.read(so.group_start, 1, b) || b[0] != so.group_opcode)
                error(at, "a Summary Offset for " + to_string(static_cast<Opcode>(so.group_opcode)) + " points at another record");
        }
    }

    InFile file_;
    std::uint64_t max_chunk_;
    CheckReport report_;
    std::map<std::uint16_t, Schema> schemas_;
    std::map<std::uint16_t, Channel> channels_;
    std::vector<std::pair<std::uint64_t, Schema>> summary_schemas_;
    std::vector<std::pair<std::uint64_t, Channel>> summary_channels_;
    std::vector<std::pair<std::uint64_t, ChunkIndex>> summary_chunk_indexes_;
    std::vector<std::pair<std::uint64_t, SummaryOffset>> summary_offsets_;
    std::vector<std::uint8_t> summary_ops_;
    std::vector<SeenChunk> chunks_;
    std::map<std::pair<std::uint64_t, std::uint64_t>, Timestamp> chunk_messages_;
    std::map<std::uint64_t, std::set<std::uint16_t>> expected_index_;
    std::map<std::uint64_t, std::uint64_t> indexed_;
    std::map<std::uint16_t, std::uint64_t> counts_;
    std::optional<Statistics> statistics_;
    std::uint64_t statistics_at_ = 0;
    std::uint64_t summary_from_ = 0;
    std::uint64_t attachments_ = 0, metadata_ = 0, backwards_ = 0;
    Timestamp start_ = 0, end_ = 0;
    bool loose_messages_ = false;
};

}  // namespace

CheckReport check(const std::string& path, std::uint64_t max_chunk_size) { return Checker(path, max_chunk_size).run(); }

}  // namespace gecko::bag
