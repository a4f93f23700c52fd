// SPDX-License-Identifier: Apache-2.0
#include <gecko/bag/writer.hpp>

#include <gecko/error.hpp>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <exception>
#include <limits>
#include <mutex>
#include <thread>

#include "compression.hpp"
#include "file.hpp"
#include "record_io.hpp"

namespace gecko::bag {
namespace detail {

class WriterImpl {
    // A full chunk's records and message index entries, on their way to the file.
    struct PendingChunk {
        Bytes records;
        std::vector<std::pair<std::uint16_t, std::vector<std::pair<Timestamp, std::uint64_t>>>> index;
        std::uint64_t messages = 0;
        Timestamp start = 0, end = 0;
    };

public:
    WriterImpl(const std::string& path, WriterOptions options) : options_(std::move(options)), file_(path) {
        Bytes b(magic, magic + sizeof magic);
        write(b, Header{options_.profile, options_.library});
        emit(b);
        file_bytes_ = file_.position();
        if (options_.background) {
            if (options_.background_chunks == 0) options_.background_chunks = 1;
            worker_ = std::thread([this] { run_worker(); });
        }
    }

    ~WriterImpl() { stop_worker(); }

    std::uint16_t add_schema(Schema s) {
        for (const auto& [id, known] : schemas_)
            if (known.name == s.name && known.encoding == s.encoding && known.data == s.data) return id;
        if (schemas_.size() >= 65535) throw Error(Errc::invalid_argument, "a file holds at most 65535 schemas");
        std::uint16_t id = 1;
        while (schemas_.count(id)) ++id;
        s.id = id;
        put_schema(std::move(s));
        return id;
    }

    void put_schema(Schema s) {
        if (s.id == 0) throw Error(Errc::invalid_argument, "schema id 0 is reserved (no schema)");
        if (auto it = schemas_.find(s.id); it != schemas_.end()) {
            if (it->second == s) return;
            throw Error(Errc::invalid_argument, "schema id " + std::to_string(s.id) + " is taken by '" + it->second.name + "'");
        }
        write(chunk_, s);  // in the chunk of the messages that follow: a cut file keeps it before them
        schemas_.emplace(s.id, std::move(s));
    }

    std::uint16_t add_channel(Channel c) {
        for (const auto& [id, known] : channels_)
            if (known.topic == c.topic && known.message_encoding == c.message_encoding && known.schema_id == c.schema_id &&
                known.metadata == c.metadata)
                return id;
        if (channels_.size() >= 65536) throw Error(Errc::invalid_argument, "a file holds at most 65536 channels");
        std::uint32_t id = next_channel_;
        while (channels_.count(static_cast<std::uint16_t>(id))) id = (id + 1) & 0xffff;
        c.id = static_cast<std::uint16_t>(id);
        next_channel_ = (id + 1) & 0xffff;
        put_channel(std::move(c));
        return static_cast<std::uint16_t>(id);
    }

    void put_channel(Channel c) {
        if (c.schema_id != 0 && !schemas_.count(c.schema_id))
            throw Error(Errc::invalid_argument, "channel '" + c.topic + "' names schema " + std::to_string(c.schema_id) +
                                                    ", which was not added");
        if (auto it = channels_.find(c.id); it != channels_.end()) {
            if (it->second == c) return;
            throw Error(Errc::invalid_argument, "channel id " + std::to_string(c.id) + " is taken by '" + it->second.topic + "'");
        }
        write(chunk_, c);
        channels_.emplace(c.id, std::move(c));
    }

    void message(std::uint16_t channel, std::uint32_t sequence, Timestamp log_time, Timestamp publish_time,
                 const std::uint8_t* data, std::size_t size) {
        if (closed_) throw Error(Errc::closed, "'" + file_.path() + "' is closed");
        if (failed_.load(std::memory_order_relaxed)) rethrow_failure();
        if (channel != last_channel_ || !last_index_) {
            if (!channels_.count(channel))
                throw Error(Errc::invalid_argument, "no channel " + std::to_string(channel) + " in '" + file_.path() + "'");
            // std::map entries stay put: a stream of one channel looks them up once.
            last_channel_ = channel;
            last_index_ = &index_[channel];
            last_count_ = &stats_.channel_message_counts[channel];
        }
        last_index_->emplace_back(log_time, chunk_.size());
        write_message(chunk_, channel, sequence, log_time, publish_time, data, size);
        if (chunk_messages_++ == 0) {
            chunk_start_ = chunk_end_ = log_time;
        } else {
            chunk_start_ = std::min(chunk_start_, log_time);
            chunk_end_ = std::max(chunk_end_, log_time);
        }
        if (stats_.message_count++ == 0) {
            stats_.message_start_time = stats_.message_end_time = log_time;
        } else {
            stats_.message_start_time = std::min(stats_.message_start_time, log_time);
            stats_.message_end_time = std::max(stats_.message_end_time, log_time);
        }
        ++*last_count_;
        if (chunk_.size() >= options_.chunk_size) hand_over();
    }

    void metadata(const Metadata& m) {
        if (closed_) throw Error(Errc::closed, "'" + file_.path() + "' is closed");
        drain();  // after the chunks handed over before it
        Bytes b;
        write(b, m);
        metadata_index_.push_back(MetadataIndex{file_.position(), b.size(), m.name});
        emit(b);
        file_bytes_ = file_.position();
    }

    void attachment(const Attachment& a) {
        if (closed_) throw Error(Errc::closed, "'" + file_.path() + "' is closed");
        drain();
        Bytes b;
        write(b, a, options_.crc);
        attachment_index_.push_back(
            AttachmentIndex{file_.position(), b.size(), a.log_time, a.create_time, a.data.size(), a.name, a.media_type});
        emit(b);
        file_bytes_ = file_.position();
    }

    /// Writes the current chunk and waits until everything handed over is in the file.
    void flush() {
        if (closed_) return;
        hand_over();
        drain();
    }

    /// The current chunk, with its message indexes, to the file: on the
    /// worker (waiting while `background_chunks` wait already) or here.
    void hand_over() {
        if (chunk_.empty()) return;
        PendingChunk c;
        c.records.swap(chunk_);
        c.messages = chunk_messages_;
        c.start = chunk_start_;
        c.end = chunk_end_;
        for (auto& [channel, entries] : index_) {
            if (entries.empty()) continue;
            c.index.emplace_back(channel, std::move(entries));
            entries.clear();
        }
        chunk_messages_ = 0;
        if (!worker_.joinable()) {
            write_chunk(c);
            std::lock_guard<std::mutex> lock(mutex_);
            recycle(std::move(c.records));
        } else {
            std::unique_lock<std::mutex> lock(mutex_);
            room_.wait(lock, [&] { return queue_.size() < options_.background_chunks || failed_; });
            if (failed_) {
                lock.unlock();
                rethrow_failure();
            }
            queued_bytes_ += c.records.size();
            queue_.push_back(std::move(c));
            work_.notify_one();
        }
        std::lock_guard<std::mutex> lock(mutex_);
        if (!spare_.empty()) {
            chunk_.swap(spare_.back());
            spare_.pop_back();
        }
    }

    /// Waits until the worker has written every chunk handed to it; rethrows its failure.
    void drain() {
        if (worker_.joinable()) {
            std::unique_lock<std::mutex> lock(mutex_);
            room_.wait(lock, [&] { return (queue_.empty() && !busy_) || failed_; });
        }
        if (failed_) rethrow_failure();
    }

    void write_chunk(PendingChunk& c) {
        ChunkInfo info;
        info.message_start_time = c.messages ? c.start : 0;
        info.message_end_time = c.messages ? c.end : 0;
        info.uncompressed_size = c.records.size();
        info.uncompressed_crc = options_.crc ? crc32(0, c.records.data(), c.records.size()) : 0;
        info.compression = to_string(options_.compression);
        const std::uint8_t* records = c.records.data();
        std::size_t records_size = c.records.size();
        if (options_.compression != Compression::none) {
            compress(options_.compression, options_.compression_level, c.records.data(), c.records.size(), compressed_);
            records = compressed_.data();
            records_size = compressed_.size();
        }
        // The chunk's fields, then its records, then its message indexes.
        head_.clear();
        {
            Out o(head_);
            o.u8(static_cast<std::uint8_t>(Opcode::chunk));
            const std::uint64_t content = 8 + 8 + 8 + 4 + 4 + info.compression.size() + 8 + records_size;
            o.u64(content);
            o.u64(info.message_start_time);
            o.u64(info.message_end_time);
            o.u64(info.uncompressed_size);
            o.u32(info.uncompressed_crc);
            o.str(info.compression);
            o.u64(records_size);
        }
        ChunkIndex ci;
        ci.message_start_time = info.message_start_time;
        ci.message_end_time = info.message_end_time;
        ci.chunk_start_offset = file_.position();
        ci.chunk_length = head_.size() + records_size;
        ci.compression = info.compression;
        ci.compressed_size = records_size;
        ci.uncompressed_size = info.uncompressed_size;
        tail_.clear();
        const std::uint64_t indexes_at = ci.chunk_start_offset + ci.chunk_length;
        for (auto& [channel, entries] : c.index) {
            ci.message_index_offsets[channel] = indexes_at + tail_.size();
            write(tail_, MessageIndex{channel, std::move(entries)});
        }
        ci.message_index_length = tail_.size();
        emit(head_);
        emit(records, records_size);
        emit(tail_);
        if (options_.sync) {
            file_.sync();
            ++syncs_;
        }
        chunk_indexes_.push_back(std::move(ci));
        ++chunks_;
        uncompressed_bytes_ += c.records.size();
        file_bytes_ = file_.position();
    }

    // A chunk buffer back for reuse (kept unless one huge message grew it).
    // Called with mutex_ held when the worker runs.
    void recycle(Bytes&& b) {
        if (b.capacity() > 4 * options_.chunk_size + (16u << 20) || spare_.size() >= 2) return;
        b.clear();
        spare_.push_back(std::move(b));
    }

    void run_worker() {
        std::unique_lock<std::mutex> lock(mutex_);
        for (;;) {
            work_.wait(lock, [&] { return !queue_.empty() || stopping_; });
            if (queue_.empty()) return;
            PendingChunk c = std::move(queue_.front());
            queue_.pop_front();
            busy_ = true;
            lock.unlock();
            std::exception_ptr error;
            if (!failed_) {
                try {
                    write_chunk(c);
                } catch (...) {
                    error = std::current_exception();
                }
            }
            lock.lock();
            busy_ = false;
            queued_bytes_ -= c.records.size();
            if (error) {
                failure_ = error;
                failed_ = true;
            }
            recycle(std::move(c.records));
            room_.notify_all();
        }
    }

    void stop_worker() {
        if (!worker_.joinable()) return;
        {
            std::lock_guard<std::mutex> lock(mutex_);
            stopping_ = true;
        }
        work_.notify_one();
        worker_.join();
    }

    [[noreturn]] void rethrow_failure() {
        std::exception_ptr e;
        {
            std::lock_guard<std::mutex> lock(mutex_);
            e = failure_;
        }
        std::rethrow_exception(e);
    }

    void close() {
        if (closed_) return;
        try {
            flush();
        } catch (...) {
            closed_ = true;
            stop_worker();
            throw;
        }
        stop_worker();
        Bytes end;
        write_data_end(end, options_.crc ? data_crc_ : 0);
        emit(end);
        closed_ = true;

        Bytes s;
        std::vector<SummaryOffset> groups;
        const std::uint64_t summary_start = file_.position();
        auto group = [&](Opcode op, auto&& records) {
            const std::size_t before = s.size();
            records();
            if (s.size() > before)
                groups.push_back(SummaryOffset{static_cast<std::uint8_t>(op), summary_start + before, s.size() - before});
        };
        group(Opcode::schema, [&] { for (const auto& [id, r] : schemas_) write(s, r); });
        group(Opcode::channel, [&] { for (const auto& [id, r] : channels_) write(s, r); });
        group(Opcode::chunk_index, [&] { for (const auto& r : chunk_indexes_) write(s, r); });
        group(Opcode::attachment_index, [&] { for (const auto& r : attachment_index_) write(s, r); });
        group(Opcode::metadata_index, [&] { for (const auto& r : metadata_index_) write(s, r); });
        stats_.schema_count = static_cast<std::uint16_t>(schemas_.size());
        stats_.channel_count = static_cast<std::uint32_t>(channels_.size());
        stats_.chunk_count = static_cast<std::uint32_t>(chunks_);
        stats_.attachment_count = static_cast<std::uint32_t>(attachment_index_.size());
        stats_.metadata_count = static_cast<std::uint32_t>(metadata_index_.size());
        group(Opcode::statistics, [&] { write(s, stats_); });
        const std::uint64_t offsets_start = summary_start + s.size();
        for (const auto& g : groups) write(s, g);
        Footer footer{summary_start, offsets_start, 0};
        Bytes f;
        write(f, footer);
        if (options_.crc) {
            // Summary through the footer's summary_offset_start field.
            std::uint32_t crc = crc32(0, s.data(), s.size());
            footer.summary_crc = crc32(crc, f.data(), f.size() - 4);
            f.clear();
            write(f, footer);
        }
        s.insert(s.end(), f.begin(), f.end());
        s.insert(s.end(), magic, magic + sizeof magic);
        file_.write(s);
        if (options_.sync) {
            file_.sync();
            ++syncs_;
        }
        file_.close();
    }

    WriterStats stats() const {
        WriterStats w;
        w.messages = stats_.message_count;
        w.chunks = chunks_;
        w.file_bytes = file_bytes_;
        w.uncompressed_bytes = uncompressed_bytes_;
        w.pending_bytes = chunk_.size() + queued_bytes_;
        w.syncs = syncs_;
        w.message_start_time = stats_.message_start_time;
        w.message_end_time = stats_.message_end_time;
        return w;
    }

    const std::string& path() const { return file_.path(); }
    const std::map<std::uint16_t, Channel>& channels() const { return channels_; }
    bool closed() const { return closed_; }

private:
    void emit(const Bytes& b) { emit(b.data(), b.size()); }
    void emit(const std::uint8_t* data, std::size_t size) {
        if (options_.crc) data_crc_ = crc32(data_crc_, data, size);
        file_.write(data, size);
    }

    WriterOptions options_;
    OutFile file_;
    std::uint32_t data_crc_ = 0;
    // Written by whichever thread writes chunks, read by stats() on the caller's.
    std::atomic<std::uint64_t> syncs_{0}, chunks_{0}, uncompressed_bytes_{0}, file_bytes_{0}, queued_bytes_{0};
    bool closed_ = false;
    std::map<std::uint16_t, Schema> schemas_;
    std::map<std::uint16_t, Channel> channels_;
    std::uint32_t next_channel_ = 0;
    Bytes chunk_, compressed_, head_, tail_;
    std::map<std::uint16_t, std::vector<std::pair<Timestamp, std::uint64_t>>> index_;
    std::uint16_t last_channel_ = 0;  // the channel of the last message, and its entries below
    std::vector<std::pair<Timestamp, std::uint64_t>>* last_index_ = nullptr;
    std::uint64_t* last_count_ = nullptr;
    std::uint64_t chunk_messages_ = 0;
    Timestamp chunk_start_ = 0, chunk_end_ = 0;
    std::vector<ChunkIndex> chunk_indexes_;
    std::vector<MetadataIndex> metadata_index_;
    std::vector<AttachmentIndex> attachment_index_;
    Statistics stats_;
    std::vector<Bytes> spare_;  // chunk buffers to reuse (under mutex_: the worker gives them back)

    // The background worker (WriterOptions::background) and what it shares.
    std::thread worker_;
    std::mutex mutex_;
    std::condition_variable work_, room_;
    std::deque<PendingChunk> queue_;
    bool busy_ = false, stopping_ = false;
    std::atomic<bool> failed_{false};
    std::exception_ptr failure_;
};

}  // namespace detail

Writer::Writer(const std::string& path, WriterOptions options)
    : impl_(std::make_unique<detail::WriterImpl>(path, std::move(options))) {}

Writer::~Writer() {
    if (!impl_) return;
    try {
        impl_->close();
    } catch (...) {
        // A destructor cannot report: close() does.
    }
}

Writer::Writer(Writer&&) noexcept = default;
Writer& Writer::operator=(Writer&& o) noexcept {
    if (this != &o) {
        if (impl_) {
            try {
                impl_->close();
            } catch (...) {
            }
        }
        impl_ = std::move(o.impl_);
    }
    return *this;
}

namespace {
detail::WriterImpl& live(const std::unique_ptr<detail::WriterImpl>& impl) {
    if (!impl) throw Error(Errc::closed, "this Writer was moved from");
    return *impl;
}
}  // namespace

std::uint16_t Writer::add_schema(const std::string& name, const std::string& encoding, const std::vector<std::uint8_t>& data) {
    return live(impl_).add_schema(Schema{0, name, encoding, data});
}
void Writer::add_schema(const Schema& schema) { live(impl_).put_schema(schema); }
std::uint16_t Writer::add_channel(const std::string& topic, const std::string& message_encoding, std::uint16_t schema_id,
                                  const StringMap& metadata) {
    return live(impl_).add_channel(Channel{0, schema_id, topic, message_encoding, metadata});
}
void Writer::add_channel(const Channel& channel) { live(impl_).put_channel(channel); }
void Writer::write(std::uint16_t channel_id, std::uint32_t sequence, Timestamp log_time, Timestamp publish_time,
                   const std::uint8_t* data, std::size_t size) {
    live(impl_).message(channel_id, sequence, log_time, publish_time, data, size);
}
void Writer::add_metadata(const Metadata& metadata) { live(impl_).metadata(metadata); }
void Writer::add_attachment(const Attachment& attachment) { live(impl_).attachment(attachment); }
void Writer::flush() { live(impl_).flush(); }
void Writer::close() { live(impl_).close(); }
WriterStats Writer::stats() const { return live(impl_).stats(); }
const std::string& Writer::path() const { return live(impl_).path(); }
const std::map<std::uint16_t, Channel>& Writer::channels() const { return live(impl_).channels(); }

}  // namespace gecko::bag
