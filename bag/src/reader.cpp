// SPDX-License-Identifier: Apache-2.0
#include <gecko/bag/reader.hpp>

#include <gecko/error.hpp>
#include <gecko/wire/names.hpp>

#include <algorithm>
#include <cstring>
#include <unordered_map>

#include "compression.hpp"
#include "file.hpp"
#include "record_io.hpp"

namespace gecko::bag {

std::string Problem::to_string() const {
    return "offset " + std::to_string(offset) + ": " + record + (record == "file" ? ": " : " record: ") + message;
}

namespace detail {

namespace {
constexpr std::size_t max_problems = 1000;
}  // namespace

class ReaderImpl {
public:
    ReaderImpl(const std::string& path, ReaderOptions options) : file_(path), options_(options) {
        Bytes b;
        if (!file_.read(0, sizeof magic, b) || std::memcmp(b.data(), magic, sizeof magic) != 0)
            throw Error(Errc::decode, "'" + path + "' is not an MCAP file (it does not start with the MCAP magic bytes)");
        Head h;
        if (!head(sizeof magic, h) || h.op != static_cast<std::uint8_t>(Opcode::header) ||
            h.length > file_.size() - h.offset - record_prefix)
            throw Error(Errc::decode, "'" + path + "': no Header record after the magic bytes (offset 8)");
        if (!file_.read(h.offset + record_prefix, h.length, b)) throw Error(Errc::decode, "'" + path + "': cannot read its Header");
        try {
            header_ = parse_header(In(b.data(), b.size()));
        } catch (const ParseError& e) {
            throw Error(Errc::decode, "'" + path + "': offset 8: Header record: " + e.what());
        }
        data_start_ = h.offset + record_prefix + h.length;
        load_summary();
    }

    // --- what the public API forwards to ---------------------------------

    const std::string& path() const { return file_.path(); }
    std::uint64_t size() const { return file_.size(); }
    const Header& header() const { return header_; }
    bool has_summary() const { return summary_ok_; }
    const std::map<std::uint16_t, Schema>& schemas() const { return schemas_; }
    const std::map<std::uint16_t, Channel>& channels() const { return channels_; }
    const std::optional<Statistics>& statistics() const { return statistics_; }
    const std::vector<ChunkIndex>& chunk_indexes() const { return chunk_indexes_; }
    const std::vector<MetadataIndex>& metadata_indexes() const { return metadata_indexes_; }
    const std::vector<AttachmentIndex>& attachment_indexes() const { return attachment_indexes_; }
    const std::vector<Problem>& problems() const { return problems_; }

    std::uint64_t read_messages(const MessageFilter& filter,
                                const std::function<bool(const Channel&, const MessageView&)>& visit) {
        Pass pass;
        pass.filter = &filter;
        pass.visit = &visit;
        wanted_.clear();
        if (summary_ok_ && options_.use_index && !chunk_indexes_.empty())
            read_indexed(pass);
        else
            read_data(pass);
        return pass.visited;
    }

    std::vector<Metadata> metadata() {
        std::vector<Metadata> out;
        if (summary_ok_) {
            Bytes b;
            for (const auto& mi : metadata_indexes_) {
                try {
                    if (mi.length < record_prefix || !file_.read(mi.offset, mi.length, b) ||
                        b[0] != static_cast<std::uint8_t>(Opcode::metadata))
                        throw ParseError("the Metadata Index points at no Metadata record");
                    out.push_back(parse_metadata(In(b.data() + record_prefix, b.size() - record_prefix)));
                } catch (const ParseError& e) {
                    problem(mi.offset, "Metadata", e.what(), false);
                }
            }
            return out;
        }
        Pass pass;
        pass.metadata = &out;
        read_data(pass);
        return out;
    }

    std::uint64_t read_attachments(const std::function<bool(const Attachment&)>& visit) {
        Pass pass;
        pass.attachment = &visit;
        if (summary_ok_) {
            Bytes b;
            for (const auto& ai : attachment_indexes_) {
                try {
                    if (ai.length < record_prefix || !file_.read(ai.offset, ai.length, b) ||
                        b[0] != static_cast<std::uint8_t>(Opcode::attachment))
                        throw ParseError("the Attachment Index points at no Attachment record");
                    attachment(In(b.data() + record_prefix, b.size() - record_prefix), ai.offset, pass);
                } catch (const ParseError& e) {
                    problem(ai.offset, "Attachment", e.what(), false);
                }
                if (pass.stopped) break;
            }
            return pass.visited;
        }
        read_data(pass);
        return pass.visited;
    }

    Reader::ScanResult scan() {
        Reader::ScanResult result;
        MessageFilter none;
        Pass pass;
        pass.filter = &none;
        pass.scan = &result;
        wanted_.clear();
        read_data(pass);
        return result;
    }

private:
    struct Head {
        std::uint64_t offset = 0;
        std::uint8_t op = 0;
        std::uint64_t length = 0;
    };

    // One read through (part of) the file, and what it is for.
    struct Pass {
        const MessageFilter* filter = nullptr;
        const std::function<bool(const Channel&, const MessageView&)>* visit = nullptr;
        std::vector<Metadata>* metadata = nullptr;
        const std::function<bool(const Attachment&)>* attachment = nullptr;
        Reader::ScanResult* scan = nullptr;
        std::uint64_t visited = 0;
        bool stopped = false;  // visit returned false
    };

    // An attachment whose CRC does not hold is damaged: said, not handed out.
    void attachment(In in, std::uint64_t offset, Pass& pass) {
        bool crc_ok = true;
        const Attachment a = parse_attachment(in, crc_ok);
        if (!crc_ok) {
            problem(offset, "Attachment", "'" + a.name + "': its CRC does not match (skipped)", false);
            return;
        }
        ++pass.visited;
        if (!(*pass.attachment)(a)) pass.stopped = true;
    }

    void problem(std::uint64_t offset, const std::string& record, const std::string& message, bool fatal) {
        if (problems_.size() < max_problems) problems_.push_back(Problem{offset, record, message, fatal});
    }

    bool head(std::uint64_t offset, Head& h) {
        Bytes b;
        if (!file_.read(offset, record_prefix, b)) return false;
        h.offset = offset;
        h.op = b[0];
        h.length = load_le(b.data() + 1, 8);
        return true;
    }

    void load_summary() {
        const std::uint64_t size = file_.size();
        const std::uint64_t tail = footer_record + sizeof magic;
        Bytes b;
        if (size < data_start_ + tail || !file_.read(size - sizeof magic, sizeof magic, b) ||
            std::memcmp(b.data(), magic, sizeof magic) != 0) {
            problem(size, "file", "no footer and closing magic at the end: the file is cut short (a recording that "
                                  "did not end?); its data section is read up to the last whole record", false);
            return;
        }
        const std::uint64_t footer_at = size - tail;
        Head h;
        if (!head(footer_at, h) || h.op != static_cast<std::uint8_t>(Opcode::footer) || h.length != footer_content ||
            !file_.read(footer_at + record_prefix, footer_content, b)) {
            problem(footer_at, "Footer", "not where the closing magic says it is", false);
            return;
        }
        footer_ = parse_footer(In(b.data(), b.size()));
        if (footer_.summary_start == 0) return;  // a complete file without a summary
        if (footer_.summary_start < data_start_ || footer_.summary_start > footer_at) {
            problem(footer_at, "Footer", "summary_start " + std::to_string(footer_.summary_start) + " is outside the file",
                    false);
            return;
        }
        Bytes s;
        if (!file_.read(footer_.summary_start, footer_at - footer_.summary_start, s)) return;
        if (footer_.summary_crc != 0) {
            Bytes f;
            file_.read(footer_at, record_prefix + 16, f);
            const std::uint32_t crc = crc32(crc32(0, s.data(), s.size()), f.data(), f.size());
            if (crc != footer_.summary_crc) {
                problem(footer_.summary_start, "Footer", "the summary's CRC does not match (corrupt summary); the data "
                                                         "section is read instead", false);
                return;
            }
        }
        std::uint64_t at = 0;
        try {
            In in(s.data(), s.size());
            while (!in.done()) {
                const std::uint8_t op = in.u8("opcode");
                const std::uint64_t length = in.u64("record length");
                In c(in.bytes(length, "record"), length);
                switch (static_cast<Opcode>(op)) {
                    case Opcode::schema: {
                        auto r = parse_schema(c);
                        if (r.id != 0) schemas_[r.id] = std::move(r);
                        break;
                    }
                    case Opcode::channel: {
                        auto r = parse_channel(c);
                        channels_[r.id] = std::move(r);
                        break;
                    }
                    case Opcode::chunk_index: chunk_indexes_.push_back(parse_chunk_index(c)); break;
                    case Opcode::attachment_index: attachment_indexes_.push_back(parse_attachment_index(c)); break;
                    case Opcode::metadata_index: metadata_indexes_.push_back(parse_metadata_index(c)); break;
                    case Opcode::statistics: statistics_ = parse_statistics(c); break;
                    default: break;  // summary offsets, and records this reader does not know
                }
                at = static_cast<std::uint64_t>(in.at() - s.data());
            }
        } catch (const ParseError& e) {
            problem(footer_.summary_start + at, "summary", e.what(), false);
            schemas_.clear();
            channels_.clear();
            chunk_indexes_.clear();
            attachment_indexes_.clear();
            metadata_indexes_.clear();
            statistics_.reset();
            return;
        }
        std::sort(chunk_indexes_.begin(), chunk_indexes_.end(),
                  [](const ChunkIndex& a, const ChunkIndex& b) { return a.chunk_start_offset < b.chunk_start_offset; });
        summary_ok_ = true;
    }

    bool wants(std::uint16_t channel_id, const Channel& channel, const MessageFilter& f) {
        if (auto it = wanted_.find(channel_id); it != wanted_.end()) return it->second;
        bool yes = true;
        if (!f.channels.empty()) yes = std::find(f.channels.begin(), f.channels.end(), channel_id) != f.channels.end();
        if (yes && !f.topics.empty())
            yes = std::any_of(f.topics.begin(), f.topics.end(),
                              [&](const std::string& p) { return p == channel.topic || wire::glob_match(p, channel.topic); });
        wanted_[channel_id] = yes;
        return yes;
    }

    void add_schema(Schema s, std::uint64_t offset) {
        if (s.id == 0) return;  // invalid: ignored, as the specification says
        auto [it, added] = schemas_.emplace(s.id, s);
        if (!added && !(it->second == s))
            problem(offset, "Schema", "schema " + std::to_string(s.id) + " differs from an earlier one with that id", false);
    }

    void add_channel(Channel c, std::uint64_t offset) {
        auto [it, added] = channels_.emplace(c.id, c);
        if (!added && !(it->second == c))
            problem(offset, "Channel", "channel " + std::to_string(c.id) + " differs from an earlier one with that id", false);
    }

    // A message found in the data section or a chunk. False: stop.
    bool message(const MessageView& m, std::uint64_t offset, Pass& pass) {
        auto ch = channels_.find(m.channel_id);
        if (ch == channels_.end()) {
            if (!unknown_channel_reported_.count(m.channel_id)) {
                unknown_channel_reported_.insert({m.channel_id, true});
                problem(offset, "Message", "on channel " + std::to_string(m.channel_id) +
                                               ", which no Channel record before it defines (skipped, and any more of it)",
                        false);
            }
            return true;
        }
        if (pass.scan) {
            auto& s = *pass.scan;
            if (s.messages++ == 0) s.message_start_time = s.message_end_time = m.log_time;
            s.message_start_time = std::min(s.message_start_time, m.log_time);
            s.message_end_time = std::max(s.message_end_time, m.log_time);
            ++s.channel_message_counts[m.channel_id];
        }
        if (!pass.visit) return true;
        const MessageFilter& f = *pass.filter;
        if (m.log_time < f.start || m.log_time > f.end || !wants(m.channel_id, ch->second, f)) return true;
        ++pass.visited;
        if (!(*pass.visit)(ch->second, m)) {
            pass.stopped = true;
            return false;
        }
        return true;
    }

    // The records of one chunk (the Chunk record's content in `content`).
    void chunk(const std::uint8_t* content, std::size_t size, std::uint64_t offset, Pass& pass) {
        ChunkInfo info;
        try {
            info = parse_chunk(In(content, size));
        } catch (const ParseError& e) {
            return problem(offset, "Chunk", e.what(), false);
        }
        if (pass.scan) {
            ++pass.scan->chunks;
            pass.scan->compressed_bytes[info.compression.empty() ? "none" : info.compression] += info.compressed_size;
            pass.scan->uncompressed_bytes[info.compression.empty() ? "none" : info.compression] += info.uncompressed_size;
        }
        // With the summary's channels known, a chunk outside the time range need not be opened.
        if (summary_ok_ && pass.visit && info.message_start_time != 0 &&
            (info.message_end_time < pass.filter->start || info.message_start_time > pass.filter->end))
            return;
        if (info.uncompressed_size > options_.max_chunk_size)
            return problem(offset, "Chunk", "claims " + std::to_string(info.uncompressed_size) +
                                                " bytes uncompressed, above the reader's limit of " +
                                                std::to_string(options_.max_chunk_size) + " (skipped)", false);
        const std::uint8_t* records = content + info.records_offset;
        std::size_t records_size = static_cast<std::size_t>(info.compressed_size);
        if (!info.compression.empty()) {
            try {
                decompress(info.compression, records, records_size, info.uncompressed_size, inflated_);
            } catch (const ParseError& e) {
                return problem(offset, "Chunk", std::string(e.what()) + " (skipped)", false);
            }
            records = inflated_.data();
            records_size = inflated_.size();
        } else if (info.compressed_size != info.uncompressed_size) {
            return problem(offset, "Chunk", "uncompressed records of " + std::to_string(info.compressed_size) +
                                                " bytes, the chunk says " + std::to_string(info.uncompressed_size) +
                                                " (skipped)", false);
        }
        if (options_.verify_crcs && info.uncompressed_crc != 0 && crc32(0, records, records_size) != info.uncompressed_crc)
            return problem(offset, "Chunk", "its records' CRC does not match (corrupt chunk, skipped)", false);
        In in(records, records_size);
        try {
            while (!in.done()) {
                const auto at = static_cast<std::uint64_t>(in.at() - records);
                const std::uint8_t op = in.u8("opcode");
                const std::uint64_t length = in.u64("record length");
                In c(in.bytes(length, "record in the chunk"), length);
                switch (static_cast<Opcode>(op)) {
                    case Opcode::schema: add_schema(parse_schema(c), offset); break;
                    case Opcode::channel: add_channel(parse_channel(c), offset); break;
                    case Opcode::message:
                        if (!message(parse_message(c), offset, pass)) return;
                        break;
                    default:
                        if (op == 0) throw ParseError("opcode 0x00 (invalid) at " + std::to_string(at) + " in the chunk");
                        break;  // private and unknown records are skipped
                }
            }
        } catch (const ParseError& e) {
            problem(offset, "Chunk", std::string("inside the chunk: ") + e.what() + " (the rest of the chunk is skipped)", false);
        }
    }

    // Through the data section from its start, record by record.
    void read_data(Pass& pass) {
        std::uint64_t offset = data_start_;
        const std::uint64_t size = file_.refresh_size();
        Bytes content;
        if (pass.scan) pass.scan->valid_end = offset;
        while (!pass.stopped) {
            Head h;
            if (offset >= size) {
                problem(offset, "file", "ends without a Data End record (cut short)", true);
                break;
            }
            if (!head(offset, h)) {
                problem(offset, "file", "cut short: " + std::to_string(size - offset) + " bytes where a record starts",
                        true);
                break;
            }
            const std::string kind = to_string(static_cast<Opcode>(h.op));
            if (h.length > size - offset - record_prefix) {
                problem(offset, kind, "claims " + std::to_string(h.length) + " bytes, the file has " +
                                          std::to_string(size - offset - record_prefix) + " left (cut short)", true);
                break;
            }
            if (h.op == 0) {
                problem(offset, kind, "opcode 0x00 is invalid: this is not a record (corrupt file)", true);
                break;
            }
            const auto op = static_cast<Opcode>(h.op);
            if (op == Opcode::data_end) {
                if (pass.scan) pass.scan->data_end = true;
                if (pass.scan) pass.scan->valid_end = offset + record_prefix + h.length;
                break;
            }
            if (op == Opcode::footer || op == Opcode::header) {
                problem(offset, kind, "in the data section, before any Data End record", true);
                break;
            }
            const bool read = op == Opcode::schema || op == Opcode::channel ||
                              (op == Opcode::chunk && (pass.visit || pass.scan)) ||
                              (op == Opcode::message && (pass.visit || pass.scan)) ||
                              (op == Opcode::metadata && pass.metadata) || (op == Opcode::attachment && pass.attachment);
            if (read) {
                if (!file_.read(offset + record_prefix, h.length, content)) {
                    problem(offset, kind, "cannot be read", true);
                    break;
                }
                try {
                    In in(content.data(), content.size());
                    switch (op) {
                        case Opcode::schema: add_schema(parse_schema(in), offset); break;
                        case Opcode::channel: add_channel(parse_channel(in), offset); break;
                        case Opcode::message: message(parse_message(in), offset, pass); break;
                        case Opcode::metadata: pass.metadata->push_back(parse_metadata(in)); break;
                        case Opcode::attachment: attachment(in, offset, pass); break;
                        case Opcode::chunk: chunk(content.data(), content.size(), offset, pass); break;
                        default: break;
                    }
                } catch (const ParseError& e) {
                    problem(offset, kind, e.what(), false);
                }
            }
            offset += record_prefix + h.length;
            if (pass.scan) pass.scan->valid_end = offset;
        }
    }

    // Through the chunks the summary indexes.
    void read_indexed(Pass& pass) {
        const MessageFilter& f = *pass.filter;
        std::vector<std::uint16_t> wanted;
        for (const auto& [id, ch] : channels_)
            if (wants(id, ch, f)) wanted.push_back(id);
        Bytes content;
        for (const auto& ci : chunk_indexes_) {
            if (pass.stopped) break;
            if (ci.message_start_time != 0 && (ci.message_end_time < f.start || ci.message_start_time > f.end)) continue;
            if (!ci.message_index_offsets.empty() &&
                std::none_of(wanted.begin(), wanted.end(), [&](std::uint16_t id) { return ci.message_index_offsets.count(id); }))
                continue;
            Head h;
            if (ci.chunk_length < record_prefix || !head(ci.chunk_start_offset, h) ||
                h.op != static_cast<std::uint8_t>(Opcode::chunk) || h.length != ci.chunk_length - record_prefix ||
                !file_.read(ci.chunk_start_offset + record_prefix, h.length, content)) {
                problem(ci.chunk_start_offset, "Chunk Index", "points at no chunk of its length (skipped)", false);
                continue;
            }
            chunk(content.data(), content.size(), ci.chunk_start_offset, pass);
        }
    }

    InFile file_;
    ReaderOptions options_;
    Header header_;
    Footer footer_;
    std::uint64_t data_start_ = 0;
    bool summary_ok_ = false;
    std::map<std::uint16_t, Schema> schemas_;
    std::map<std::uint16_t, Channel> channels_;
    std::optional<Statistics> statistics_;
    std::vector<ChunkIndex> chunk_indexes_;
    std::vector<MetadataIndex> metadata_indexes_;
    std::vector<AttachmentIndex> attachment_indexes_;
    std::vector<Problem> problems_;
    std::unordered_map<std::uint16_t, bool> wanted_;
    std::unordered_map<std::uint16_t, bool> unknown_channel_reported_;
    Bytes inflated_;
};

}  // namespace detail

Reader::Reader(const std::string& path, ReaderOptions options)
    : impl_(std::make_unique<detail::ReaderImpl>(path, options)) {}
Reader::~Reader() = default;
Reader::Reader(Reader&&) noexcept = default;
Reader& Reader::operator=(Reader&&) noexcept = default;

const std::string& Reader::path() const { return impl_->path(); }
std::uint64_t Reader::file_size() const { return impl_->size(); }
const Header& Reader::header() const { return impl_->header(); }
bool Reader::has_summary() const { return impl_->has_summary(); }
const std::map<std::uint16_t, Schema>& Reader::schemas() const { return impl_->schemas(); }
const std::map<std::uint16_t, Channel>& Reader::channels() const { return impl_->channels(); }
const std::optional<Statistics>& Reader::statistics() const { return impl_->statistics(); }
const std::vector<ChunkIndex>& Reader::chunk_indexes() const { return impl_->chunk_indexes(); }
const std::vector<MetadataIndex>& Reader::metadata_indexes() const { return impl_->metadata_indexes(); }
const std::vector<AttachmentIndex>& Reader::attachment_indexes() const { return impl_->attachment_indexes(); }
std::uint64_t Reader::read_messages(const MessageFilter& filter,
                                    const std::function<bool(const Channel&, const MessageView&)>& visit) {
    return impl_->read_messages(filter, visit);
}
std::vector<Metadata> Reader::metadata() { return impl_->metadata(); }
std::uint64_t Reader::read_attachments(const std::function<bool(const Attachment&)>& visit) {
    return impl_->read_attachments(visit);
}
Reader::ScanResult Reader::scan() { return impl_->scan(); }
const std::vector<Problem>& Reader::problems() const { return impl_->problems(); }

}  // namespace gecko::bag
