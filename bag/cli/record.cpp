// SPDX-License-Identifier: Apache-2.0
// gecko record: every message of the topics a filter takes, under a key,
// into MCAP files (docs/RECORDING.md). A key-wide subscription
// (Node::subscribe_all) is the recorder's only tie to the key: it is a
// subscriber like any other, with its own bounded queue, so publishers pay
// nothing for it; what it cannot keep up with is counted, shown, and
// written into the file (`gecko.drops` Metadata records).
#include <gecko/bag/gecko_format.hpp>
#include <gecko/bag/writer.hpp>
#include <gecko/error.hpp>
#include <gecko/node.hpp>
#include <gecko/signals.hpp>
#include <gecko/wire/names.hpp>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>

#include <gecko/bag/cli.hpp>
#include "common.hpp"
#include "json_twin.hpp"

namespace gecko::bag::cli {

namespace {

using Clock = std::chrono::steady_clock;

struct Settings {
    std::vector<std::string> topics;
    std::vector<std::string> types;
    std::string output;
    WriterOptions writer;
    std::uint64_t split_size = 0;
    std::chrono::nanoseconds split_duration{0};
    std::chrono::nanoseconds duration{0};
    long long count = 0;
    long long queue = 10000;
    bool json = false;
    bool quiet = false;
    std::string command_line;
};

std::string host_name() {
    char buf[256] = {};
    if (::gethostname(buf, sizeof buf - 1) != 0) return "";
    return buf;
}

// The n-th file of a split recording: run.mcap -> run_000.mcap, run_001.mcap, ...
std::string split_name(const std::string& output, int n) {
    std::string stem = output, ext;
    if (const auto dot = output.rfind('.'); dot != std::string::npos && output.find('/', dot) == std::string::npos) {
        stem = output.substr(0, dot);
        ext = output.substr(dot);
    }
    char num[16];
    std::snprintf(num, sizeof num, "_%03d", n);
    return stem + num + ext;
}

// What the recorder counts per topic.
struct TopicCount {
    std::uint64_t messages = 0;
    std::uint64_t bytes = 0;
    std::uint64_t drops = 0;
};

class Recorder {
public:
    Recorder(Node& node, Settings settings) : node_(node), s_(std::move(settings)) {}

    int run() {
        SubscriberOptions options;
        options.depth = static_cast<std::size_t>(s_.queue);
        TopicFilter filter;
        if (!s_.topics.empty()) filter.topics = s_.topics;
        if (!s_.types.empty()) filter.types = s_.types;
        auto subscriber = node_.subscribe_all(filter, options);
        note_present_publishers();
        open_file();
        if (!s_.quiet)
            std::fprintf(stderr, "gecko record: recording %s under key '%s' into %s (Ctrl-C to stop)\n",
                         describe_filter().c_str(), node_.key().c_str(), writer_->path().c_str());
        const auto start = Clock::now();
        auto last_flush = start;
        auto last_resolve = start;
        std::string json;
        const auto keep = [&](const RawView& view) {
            const MessageInfo& info = view.info;
            if (info.topic.empty()) return;  // no directory names it: cannot be filed under a topic
            Route& route = route_for(info);
            maybe_split();
            if (route.file != file_index_) {
                route.channel = channel_for(info);
                route.file = file_index_;
            }
            const std::uint16_t ch = route.channel;
            // Frames of different publishers are stamped on arrival by different links, so they can
            // reach this loop a little out of order; MCAP readers expect log times that never go back.
            const auto log_time = std::max(static_cast<Timestamp>(info.receive_time_ns), last_log_time_);
            last_log_time_ = log_time;
            const auto publish_time = info.send_time_ns > 0 ? static_cast<Timestamp>(info.send_time_ns) : log_time;
            const auto seq = static_cast<std::uint32_t>(info.sequence);
            writer_->write(ch, seq, log_time, publish_time, view.payload, view.size);
            if (s_.json) {
                try {
                    transcode_to_json(view.payload, view.size, json);
                    writer_->write(twins_.at(ch), seq, log_time, publish_time,
                                   reinterpret_cast<const std::uint8_t*>(json.data()), json.size());
                } catch (const Error&) {
                    ++untranscodable_;  // not msgpack: the msgpack channel keeps it as it came
                }
            }
            auto& t = *route.counts;
            ++t.messages;
            t.bytes += view.size;
            ++total_.messages;
            total_.bytes += view.size;
        };
        bool counted_out = false;
        while (ok()) {
            if (s_.duration.count() > 0 && Clock::now() - start >= s_.duration) break;
            if (s_.count > 0 && total_.messages >= static_cast<std::uint64_t>(s_.count)) {
                counted_out = true;
                break;
            }
            subscriber.receive(std::chrono::milliseconds(100), keep);
            const auto now = Clock::now();
            if (!new_publishers_.empty() && now - last_resolve >= std::chrono::milliseconds(200)) {
                resolve_new_publishers(subscriber.stats(), false);  // a copy of every publisher's counts: not per message
                last_resolve = now;
            }
            if (now - last_flush >= std::chrono::seconds(1)) {
                // A chunk at least every second: a recorder killed with -9 loses at most about that much.
                note_drops(subscriber.stats(), false);
                writer_->flush();
                last_flush = now;
            }
            progress(subscriber, start);
        }
        if (!counted_out) {
            // Ctrl-C or --duration: what the queue already holds is written too (bounded, should a flood go on).
            const auto until = Clock::now() + std::chrono::seconds(2);
            while (Clock::now() < until && subscriber.receive(std::chrono::nanoseconds(0), keep)) {
            }
        }
        const auto final_stats = subscriber.stats();
        resolve_new_publishers(final_stats, true);
        note_drops(final_stats, true);
        writer_->close();
        progress_.finish();
        if (!s_.quiet) summary(start);
        return exit_ok;
    }

private:
    // The publishers the key's directory lists as the recorder starts: their messages sent before it linked
    // to them were sent before the recording began. Without a directory in 5 s every publisher counts as present.
    void note_present_publishers() {
        try {
            for (const auto& entry : node_.directory(std::chrono::seconds(5)))
                for (const auto& p : entry->publishers) present_at_start_.insert(p.id);
            directory_at_start_ = true;
        } catch (const Error&) {
            directory_at_start_ = false;
        }
    }

    // A publisher that appeared after the recorder started sends before the recorder's link to it is up
    // (a publisher learns of subscribers only as they announce themselves), and a subscriber takes the
    // first frame that reaches it as its start. Those messages are counted as lost, never silently:
    // resolve_new_publishers() reads how many from the subscription's per-publisher counts.
    void note_first_of(const MessageInfo& info) {
        if (!seen_publishers_.insert(info.publisher_id).second) return;
        if (directory_at_start_ && !present_at_start_.count(info.publisher_id)) new_publishers_[info.publisher_id] = info.sequence;
    }

    // How many messages each new publisher sent before the recorder's link to it: its last sequence less
    // what the subscription received and counted as lost, once the publisher has told the subscription
    // where its stream began (its `start`, PROTOCOL.md §6: as it sees the link, again when it next goes
    // quiet, and before it closes). Until then the count waits: the subscription adds the messages between
    // that start and the first it received to its drops once told, and a count taken before would count
    // them twice. At the end a publisher that never told (an older or another implementation) is resolved
    // from its counts as they are.
    void resolve_new_publishers(const SubscriberStats& st, bool last) {
        for (auto it = new_publishers_.begin(); it != new_publishers_.end();) {
            const auto [id, first_seen] = *it;
            const auto p = st.publishers.find(id);
            std::uint64_t before = 0;
            if (p != st.publishers.end() && (p->second.start_known || last)) {
                const PeerStats& peer = p->second;
                before = peer.last_sequence >= peer.received + peer.drops ? peer.last_sequence - peer.received - peer.drops : 0;
            } else if (!last) {
                ++it;
                continue;
            } else {
                before = first_seen > 0 ? first_seen - 1 : 0;  // forgotten (past the departed ones kept): an upper bound
            }
            it = new_publishers_.erase(it);
            if (before >= (1ull << 32)) continue;  // no publisher sends that many: a forgery or a restart
            before_link_[id] = before;
            before_link_total_ += before;
        }
    }

    std::string describe_filter() const {
        std::string what;
        for (const auto& t : s_.topics) what += (what.empty() ? "" : ", ") + t;
        if (what.empty()) what = "every topic";
        for (const auto& t : s_.types) what += std::string(" of type ") + t;
        return what;
    }

    void open_file() {
        file_started_ = Clock::now();
        const std::string path = s_.split_size || s_.split_duration.count() ? split_name(s_.output, file_index_) : s_.output;
        writer_ = std::make_unique<Writer>(path, s_.writer);
        channels_.clear();
        twins_.clear();
        files_.push_back(path);
        StringMap m;
        m["key"] = node_.key();
        m["recorder"] = std::string("gecko record ") + GECKO_BAG_VERSION;
        m["host"] = host_name();
        m["started_ns"] = std::to_string(now_unix_ns());
        m["command"] = s_.command_line;
        m["topics"] = describe_filter();
        m["split_index"] = std::to_string(file_index_);
        m["time"] = "log_time: when the recorder received the message (never earlier than the message before it); publish_time: the publisher's send time; "
                    "both ns since the Unix epoch. sequence: the publisher's sequence number (low 32 bits)";
        m["msgpack_ext_types"] = "none: Gecko messages use no msgpack extension types";
        writer_->add_metadata({keys::file_record, m});
        ++file_index_;
    }

    static std::uint64_t now_unix_ns() {
        return static_cast<std::uint64_t>(
            std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch()).count());
    }

    void maybe_split() {
        const bool by_size = s_.split_size && writer_->stats().file_bytes + writer_->stats().pending_bytes >= s_.split_size;
        const bool by_time = s_.split_duration.count() && Clock::now() - file_started_ >= s_.split_duration;
        if (!by_size && !by_time) return;
        writer_->close();
        open_file();
    }

    // Where the messages of one publisher go: looked up by its id, not by strings, as the messages
    // come millions a second. `file` is the file_index_ the channel belongs to (-1: none yet).
    struct Route {
        std::string topic;
        TopicCount* counts = nullptr;
        std::uint16_t channel = 0;
        int file = -1;
    };

    Route& route_for(const MessageInfo& info) {
        if (last_route_ && last_publisher_ == info.publisher_id && last_route_->topic == info.topic) return *last_route_;
        auto it = routes_.find(info.publisher_id);
        if (it == routes_.end() || it->second.topic != info.topic) {
            note_first_of(info);
            Route r;
            r.topic = info.topic;
            r.counts = &topics_[info.topic];
            it = routes_.insert_or_assign(info.publisher_id, std::move(r)).first;
        }
        last_publisher_ = info.publisher_id;
        last_route_ = &it->second;
        return it->second;
    }

    // One MCAP channel per topic and publisher, described by the directory's entry.
    std::uint16_t channel_for(const MessageInfo& info) {
        const auto key = std::make_pair(info.topic, info.publisher_id);
        if (auto it = channels_.find(key); it != channels_.end()) return it->second;
        const ChannelInfo* entry = info.channel;
        const wire::Schema* schema = entry && entry->schema ? entry->schema.get() : nullptr;
        StringMap m = channel_metadata(info.type_name, schema);
        m[keys::publisher_id] = hex64(info.publisher_id);
        if (entry)
            for (const auto& p : entry->publishers)
                if (p.id == info.publisher_id) {
                    m[keys::node] = p.node;
                    m[keys::host] = p.host;
                    m[keys::latched] = p.latched ? "true" : "false";
                }
        const std::uint16_t id = writer_->add_channel(info.topic, msgpack_encoding, 0, m);
        channels_[key] = id;
        publisher_topics_[info.publisher_id] = info.topic;
        if (s_.json) {
            const std::string js = json_schema(schema, info.type_name);
            const auto sid = writer_->add_schema(info.type_name.empty() ? info.topic : info.type_name, "jsonschema",
                                                 std::vector<std::uint8_t>(js.begin(), js.end()));
            StringMap tm;
            tm[keys::twin_of] = info.topic;
            tm[keys::type_name] = info.type_name;
            tm[keys::publisher_id] = m[keys::publisher_id];
            twins_[id] = writer_->add_channel(twin_topic(info.topic), "json", sid, tm);
        }
        return id;
    }

    // Writes a `gecko.drops` record when the counts changed (or at the end).
    void note_drops(const SubscriberStats& st, bool last) {
        for (const auto& [id, peer] : st.publishers) {
            auto t = publisher_topics_.find(id);
            const std::string topic = t == publisher_topics_.end() ? "(unnamed)" : t->second;
            peer_drops_[id] = {topic, peer.drops};
        }
        for (const auto& [id, n] : before_link_) {
            auto t = publisher_topics_.find(id);
            peer_drops_[id].first = t == publisher_topics_.end() ? "(unnamed)" : t->second;
        }
        std::map<std::string, std::uint64_t> per_topic;
        for (const auto& [id, td] : peer_drops_)
            per_topic[td.first] += td.second + (before_link_.count(id) ? before_link_.at(id) : 0);
        const std::uint64_t lost = st.drops + st.overwritten + st.unlisted + st.oversized + st.malformed + before_link_total_;
        if (lost == reported_lost_ && !last) return;
        reported_lost_ = lost;
        StringMap m;
        m["total"] = std::to_string(lost);
        m["drops"] = std::to_string(st.drops);  // sequence gaps: lost on the way
        m["before_link"] = std::to_string(before_link_total_);  // sent by a new publisher before the recorder linked to it
        m["overwritten"] = std::to_string(st.overwritten);  // the recorder's queue was full
        m["unlisted"] = std::to_string(st.unlisted);
        m["oversized"] = std::to_string(st.oversized);
        m["malformed"] = std::to_string(st.malformed);
        m["final"] = last ? "true" : "false";
        for (const auto& [topic, n] : per_topic)
            if (n) m["topic." + topic] = std::to_string(n);
        for (auto& [topic, c] : topics_) c.drops = per_topic.count(topic) ? per_topic[topic] : 0;
        total_.drops = lost;
        writer_->add_metadata({keys::drops_record, m});
    }

    void progress(const RawSubscriber& subscriber, Clock::time_point start) {
        if (!progress_.due() || s_.quiet) return;  // stats() copies every publisher's counts
        const double secs = std::chrono::duration<double>(Clock::now() - start).count();
        const auto st = subscriber.stats();
        const std::uint64_t lost = st.drops + st.overwritten + st.unlisted + st.oversized + st.malformed + before_link_total_;
        const auto w = writer_->stats();
        char line[256];
        std::snprintf(line, sizeof line, "recording %s: %llu messages, %.0f msg/s, %s, %zu topics, %llu dropped",
                      writer_->path().c_str(), static_cast<unsigned long long>(total_.messages),
                      secs > 0 ? static_cast<double>(total_.messages) / secs : 0.0,
                      format_bytes(static_cast<double>(w.file_bytes + w.pending_bytes)).c_str(), topics_.size(),
                      static_cast<unsigned long long>(lost));
        progress_.show(line);
    }

    void summary(Clock::time_point start) {
        const double secs = std::chrono::duration<double>(Clock::now() - start).count();
        std::fprintf(stderr, "gecko record: %llu messages on %zu topics in %s into %s%s\n",
                     static_cast<unsigned long long>(total_.messages), topics_.size(), format_seconds(secs).c_str(),
                     files_.size() == 1 ? files_[0].c_str() : (std::to_string(files_.size()) + " files").c_str(),
                     untranscodable_ ? (", " + std::to_string(untranscodable_) + " not msgpack (no json twin)").c_str() : "");
        if (total_.drops == 0) {
            std::fprintf(stderr, "gecko record: no message dropped\n");
        } else {
            std::fprintf(stderr, "gecko record: %llu messages dropped (counted in the file's gecko.drops metadata)\n",
                         static_cast<unsigned long long>(total_.drops));
            for (const auto& [topic, c] : topics_)
                if (c.drops) std::fprintf(stderr, "  %s: %llu dropped\n", topic.c_str(), static_cast<unsigned long long>(c.drops));
        }
        if (files_.size() > 1)
            for (const auto& f : files_) std::fprintf(stderr, "  %s\n", f.c_str());
    }

    Node& node_;
    Settings s_;
    std::unique_ptr<Writer> writer_;
    Clock::time_point file_started_{};
    int file_index_ = 0;
    std::vector<std::string> files_;
    std::map<std::pair<std::string, std::uint64_t>, std::uint16_t> channels_;
    std::map<std::uint16_t, std::uint16_t> twins_;
    std::unordered_map<std::uint64_t, Route> routes_;  // by publisher id
    std::uint64_t last_publisher_ = 0;
    Route* last_route_ = nullptr;
    std::map<std::uint64_t, std::string> publisher_topics_;
    std::map<std::uint64_t, std::pair<std::string, std::uint64_t>> peer_drops_;
    std::map<std::string, TopicCount> topics_;
    std::set<std::uint64_t> present_at_start_;
    bool directory_at_start_ = false;
    std::set<std::uint64_t> seen_publishers_;
    std::map<std::uint64_t, std::uint64_t> new_publishers_;  // first seen, not yet resolved: id -> its first sequence taken
    std::map<std::uint64_t, std::uint64_t> before_link_;
    std::uint64_t before_link_total_ = 0;
    TopicCount total_;
    std::uint64_t reported_lost_ = ~std::uint64_t{0};
    std::uint64_t untranscodable_ = 0;
    Timestamp last_log_time_ = 0;
    ProgressLine progress_;
};

}  // namespace

int record(const std::vector<std::string>& args) {
    Settings s;
    std::string compression = "zstd";
    for (const auto& a : args) s.command_line += (s.command_line.empty() ? "gecko record " : " ") + a;
    OptionParser parser("gecko record",
                        "records the topics of a key into an MCAP file: gecko record [TOPIC or GLOB ...] -o FILE.\n"
                        "Every topic matching (all without any), including topics and publishers that appear later.\n"
                        "Ctrl-C stops and completes the file; a recorder killed with -9 leaves a file readable up to\n"
                        "its last second (`gecko bag recover` completes it). docs/RECORDING.md");
    NodeOptions node = NodeOptions::from_env();
    if (node.name.empty()) node.name = "gecko_record";
    node_options(parser, node);
    parser.text("--output", s.output, "FILE", "the file to write (with a split: FILE_000.mcap, FILE_001.mcap, ...)")
        .alias("-o");
    parser.custom("--type", "TYPE", "record only topics of this type (a glob; repeatable)", [&](const std::string& v) {
        s.types.push_back(v);
        return wire::check_pattern(v);
    });
    parser.text("--compression", compression, "ALGO", "chunk compression: zstd (default), lz4 or none",
                [](const std::string& v) {
                    return v == "zstd" || v == "lz4" || v == "none" ? std::string() : "expected zstd, lz4 or none";
                });
    parser.custom("--chunk-size", "SIZE", "uncompressed bytes per chunk (default 1M)", [&](const std::string& v) {
        std::uint64_t n = 0;
        auto why = parse_size(v, n);
        if (why.empty() && (n < 1024 || n > (1ull << 30))) why = "between 1k and 1G";
        s.writer.chunk_size = static_cast<std::size_t>(n);
        return why;
    });
    parser.custom("--split-size", "SIZE", "start a new file when one reaches SIZE (e.g. 1G)", [&](const std::string& v) {
        auto why = parse_size(v, s.split_size);
        if (why.empty() && s.split_size < (1u << 20)) why = "at least 1M";
        return why;
    });
    parser.custom("--split-duration", "DURATION", "start a new file every DURATION (e.g. 10m)",
                  [&](const std::string& v) { return parse_duration(v, s.split_duration); });
    parser.custom("--duration", "DURATION", "stop after DURATION (default: at Ctrl-C)",
                  [&](const std::string& v) { return parse_duration(v, s.duration); });
    parser.integer("--count", s.count, 1, 1LL << 50, "N", "stop after N messages");
    parser.integer("--queue", s.queue, 16, 1LL << 24, "N",
                   "messages the recorder's subscription queues before it drops (counted) (default 10000)");
    parser.flag("--json", s.json, "also write a json + jsonschema twin of each topic, as /json/TOPIC (for Foxglove's panels)");
    parser.flag("--sync", s.writer.sync, "fdatasync each chunk (survives a power loss; slower)");
    bool inline_writer = false;
    parser.flag("--inline-writer", inline_writer,
                "compress and write chunks on the receiving thread (default: a thread of their own; for comparison)");
    parser.flag("--quiet", s.quiet, "no progress line and no summary");
    parser.positionals(s.topics, "[TOPIC or GLOB ...]");
    if (auto done = parse(parser, args)) return *done;
    s.writer.background = !inline_writer;
    if (s.output.empty()) {
        std::fprintf(stderr, "gecko record: give the file to write with -o FILE\nTry 'gecko record --help'.\n");
        return exit_usage;
    }
    for (const auto& t : s.topics)
        if (const auto why = wire::check_pattern(t); !why.empty()) {
            std::fprintf(stderr, "gecko record: '%s': %s\n", t.c_str(), why.c_str());
            return exit_usage;
        }
    if (node.key.empty()) {
        std::fprintf(stderr, "gecko record: no key: give --key KEY or set GECKO_KEY\n");
        return exit_usage;
    }
    if (!node.discovery) {
        std::fprintf(stderr, "gecko record: needs discovery: the key's directory names each message's topic\n");
        return exit_usage;
    }
    s.writer.compression = compression == "lz4" ? Compression::lz4 : compression == "none" ? Compression::none : Compression::zstd;
    s.writer.library = std::string("gecko-bag ") + GECKO_BAG_VERSION + " (gecko record)";
    install_signal_handlers();
    Node n(node);
    Recorder recorder(n, std::move(s));
    return recorder.run();
}

}  // namespace gecko::bag::cli
