// SPDX-License-Identifier: Apache-2.0
// gecko play: publishes the messages of MCAP files (Gecko's recordings, or
// any file's msgpack channels) with their recorded timing, under the same
// key or another, each topic typed as recorded: a subscriber of the
// original type receives them as from the original publisher. With
// --lockstep, re-drives a simulation with a recorded Click run instead
// (lockstep_replay.cpp).
#include <gecko/bag/gecko_format.hpp>
#include <gecko/bag/reader.hpp>
#include <gecko/error.hpp>
#include <gecko/node.hpp>
#include <gecko/signals.hpp>
#include <gecko/wire/names.hpp>

#include <poll.h>
#include <termios.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <thread>

#include <gecko/bag/cli.hpp>
#include "common.hpp"
#include "lockstep_replay.hpp"

namespace gecko::bag::cli {

namespace {

using Clock = std::chrono::steady_clock;

// Space on a terminal pauses and resumes: stdin in non-canonical mode while playing.
class Keys {
public:
    Keys() {
        if (::isatty(STDIN_FILENO) != 1 || ::tcgetattr(STDIN_FILENO, &saved_) != 0) return;
        termios raw = saved_;
        raw.c_lflag &= static_cast<tcflag_t>(~(ICANON | ECHO));
        raw.c_cc[VMIN] = 0;
        raw.c_cc[VTIME] = 0;
        active_ = ::tcsetattr(STDIN_FILENO, TCSANOW, &raw) == 0;
    }
    ~Keys() {
        if (active_) ::tcsetattr(STDIN_FILENO, TCSANOW, &saved_);
    }
    Keys(const Keys&) = delete;
    Keys& operator=(const Keys&) = delete;
    /// A space typed since the last call.
    bool space() {
        if (!active_) return false;
        pollfd p{STDIN_FILENO, POLLIN, 0};
        bool any = false;
        while (::poll(&p, 1, 0) > 0 && (p.revents & POLLIN)) {
            char c = 0;
            if (::read(STDIN_FILENO, &c, 1) != 1) break;
            any = any || c == ' ';
        }
        return any;
    }
    bool active() const noexcept { return active_; }

private:
    termios saved_{};
    bool active_ = false;
};

struct Settings {
    std::vector<std::string> files;
    std::vector<std::string> topics;
    double rate = 1.0;
    bool loop = false;
    double start = 0, end = -1;  // seconds from the recording's start
    std::chrono::nanoseconds delay{std::chrono::milliseconds(500)};
    long long wait_subscribers = 0;
    std::chrono::nanoseconds wait_timeout{std::chrono::seconds(10)};
    bool quiet = false;
};

// Sleeps until `t`: the last 200 µs by polling the clock, so that timing holds to well under 100 µs.
void sleep_until_precise(Clock::time_point t) {
    const auto coarse = t - std::chrono::microseconds(200);
    if (Clock::now() < coarse) std::this_thread::sleep_until(coarse);
    while (Clock::now() < t) {
    }
}

class Player {
public:
    Player(Node& node, Settings s) : node_(node), s_(std::move(s)) {}

    int run() {
        std::vector<std::unique_ptr<Reader>> readers;
        Timestamp first = ~Timestamp{0}, last = 0;
        for (const auto& f : s_.files) {
            readers.push_back(std::make_unique<Reader>(f));
            auto& r = *readers.back();
            if (!r.has_summary() && !s_.quiet)
                std::fprintf(stderr, "gecko play: %s has no summary (cut short?): playing what reads whole\n", f.c_str());
            if (r.statistics() && r.statistics()->message_count) {
                first = std::min(first, r.statistics()->message_start_time);
                last = std::max(last, r.statistics()->message_end_time);
            } else if (!r.has_summary()) {
                const auto scan = r.scan();  // also names its channels, from the data section
                if (scan.messages) {
                    first = std::min(first, scan.message_start_time);
                    last = std::max(last, scan.message_end_time);
                }
            }
        }
        prepare_publishers(readers);
        if (publishers_.empty()) {
            std::fprintf(stderr, "gecko play: no msgpack topic to play%s\n", s_.topics.empty() ? "" : " among those asked for");
            return exit_failure;
        }
        wait_for_subscribers();
        MessageFilter filter;
        filter.topics = s_.topics;
        bool first_pass = true;
        int status = exit_ok;
        do {
            Timestamp t0 = 0;
            bool started = false;
            Clock::time_point w0;
            if (first != ~Timestamp{0}) {  // --start and --end count from the recording's first message
                if (s_.start > 0) filter.start = first + static_cast<Timestamp>(s_.start * 1e9);
                if (s_.end >= 0) filter.end = first + static_cast<Timestamp>(s_.end * 1e9);
            }
            for (auto& reader : readers) {
                reader->read_messages(filter, [&](const Channel& ch, const MessageView& m) {
                    auto p = by_channel_.find({reader.get(), ch.id});
                    if (p == by_channel_.end()) return true;
                    if (!started) {
                        started = true;
                        t0 = m.log_time;
                        w0 = Clock::now();
                    }
                    if (s_.rate > 0 && m.log_time > t0) {
                        const auto offset = std::chrono::nanoseconds(
                            static_cast<std::int64_t>(static_cast<double>(m.log_time - t0) / s_.rate));
                        for (;;) {
                            if (!ok()) return false;
                            if (keys_.space()) pause(w0);
                            const auto target = w0 + offset;
                            const auto now = Clock::now();
                            if (now >= target) break;
                            if (target - now > std::chrono::milliseconds(50)) {
                                std::this_thread::sleep_for(std::chrono::milliseconds(20));
                                continue;
                            }
                            sleep_until_precise(target);
                            break;
                        }
                    } else if (!ok()) {
                        return false;
                    }
                    p->second->publish(m.data, m.size);
                    ++published_;
                    progress(m.log_time, first, last);
                    return true;
                });
                for (const auto& problem : reader->problems())
                    if (first_pass && !s_.quiet) std::fprintf(stderr, "gecko play: %s: %s\n", reader->path().c_str(), problem.to_string().c_str());
            }
            first_pass = false;
        } while (s_.loop && ok());
        progress_.finish();
        if (!s_.quiet)
            std::fprintf(stderr, "gecko play: published %llu messages on %zu topics under key '%s'\n",
                         static_cast<unsigned long long>(published_), publishers_.size(), node_.key().c_str());
        return status;
    }

private:
    void prepare_publishers(const std::vector<std::unique_ptr<Reader>>& readers) {
        for (const auto& reader : readers) {
            for (const auto& [id, ch] : reader->channels()) {
                if (ch.message_encoding != msgpack_encoding || ch.metadata.count(keys::twin_of)) continue;
                if (!s_.topics.empty() && std::none_of(s_.topics.begin(), s_.topics.end(), [&topic = ch.topic](const std::string& p) {
                        return p == topic || wire::glob_match(p, topic);
                    }))
                    continue;
                if (!wire::check_topic_name(ch.topic).empty()) {
                    if (!s_.quiet) std::fprintf(stderr, "gecko play: '%s' is not a Gecko topic name: skipped\n", ch.topic.c_str());
                    continue;
                }
                auto it = publishers_.find(ch.topic);
                if (it == publishers_.end()) {
                    const std::string type = type_name_of(ch);
                    if (auto schema = schema_of(ch)) node_.declare_schema(*schema);
                    auto pub = std::make_unique<RawPublisher>(node_.raw_publisher(ch.topic, type.empty() ? "*" : type));
                    it = publishers_.emplace(ch.topic, std::move(pub)).first;
                }
                by_channel_[{reader.get(), id}] = it->second.get();
            }
        }
    }

    void wait_for_subscribers() {
        if (s_.wait_subscribers > 0) {
            const auto deadline = Clock::now() + s_.wait_timeout;
            for (const auto& [topic, pub] : publishers_) {
                const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
                if (!pub->wait_for_subscribers(static_cast<std::size_t>(s_.wait_subscribers), std::max(left, std::chrono::milliseconds(0))) &&
                    !s_.quiet)
                    std::fprintf(stderr, "gecko play: '%s' has %zu subscribers, not %lld, after the wait; playing anyway\n",
                                 topic.c_str(), pub->subscriber_count(), s_.wait_subscribers);
            }
        } else if (s_.delay.count() > 0) {
            // Subscribers already running link to the new publishers within this.
            const auto until = Clock::now() + s_.delay;
            while (ok() && Clock::now() < until) std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
    }

    void pause(Clock::time_point& w0) {
        const auto paused_at = Clock::now();
        progress_.show("paused (space resumes)", true);
        while (ok() && !keys_.space()) std::this_thread::sleep_for(std::chrono::milliseconds(20));
        w0 += Clock::now() - paused_at;  // the timeline resumes where it stopped
    }

    void progress(Timestamp t, Timestamp first, Timestamp last) {
        if (s_.quiet || !progress_.due()) return;
        char line[200];
        const double at = first && t >= first ? static_cast<double>(t - first) / 1e9 : 0;
        const double total = last > first ? static_cast<double>(last - first) / 1e9 : 0;
        std::snprintf(line, sizeof line, "playing: %.3f / %.3f s, %llu messages%s", at, total,
                      static_cast<unsigned long long>(published_), keys_.active() ? " (space pauses)" : "");
        progress_.show(line);
    }

    Node& node_;
    Settings s_;
    std::map<std::string, std::unique_ptr<RawPublisher>> publishers_;
    std::map<std::pair<const Reader*, std::uint16_t>, RawPublisher*> by_channel_;
    std::uint64_t published_ = 0;
    Keys keys_;
    ProgressLine progress_;
};

}  // namespace

int play(const std::vector<std::string>& args) {
    Settings s;
    LockstepSettings lockstep;
    bool lockstep_mode = false;
    OptionParser parser("gecko play",
                        "publishes the messages of MCAP files with their recorded timing: gecko play FILE... [options].\n"
                        "Each topic is published with its recorded type, under --key (the same key or another).\n"
                        "Space pauses and resumes on a terminal. --lockstep re-drives a simulation with a recorded\n"
                        "Click run and reports the first step whose answer differs. docs/RECORDING.md");
    NodeOptions node = NodeOptions::from_env();
    if (node.name.empty()) node.name = "gecko_play";
    node_options(parser, node);
    parser.number("--rate", s.rate, 0, 1000, "X", "playback speed: 2 twice as fast, 0 as fast as possible (default 1)");
    parser.flag("--loop", s.loop, "start again at the end, until Ctrl-C");
    parser.custom("--topics", "TOPIC", "play only this topic or glob (repeatable)", [&](const std::string& v) {
        s.topics.push_back(v);
        return wire::check_pattern(v);
    });
    parser.number("--start", s.start, 0, 1e9, "SECONDS", "skip the first SECONDS of the recording");
    parser.number("--end", s.end, 0, 1e9, "SECONDS", "stop SECONDS after the recording's start");
    parser.custom("--delay", "DURATION", "wait this long after creating the publishers (default 500ms)",
                  [&](const std::string& v) { return parse_duration(v, s.delay); });
    parser.integer("--wait-subscribers", s.wait_subscribers, 0, 1000, "N",
                   "instead of --delay, wait until each topic has N subscribers (at most --wait-timeout)");
    parser.custom("--wait-timeout", "DURATION", "bound of --wait-subscribers (default 10s)",
                  [&](const std::string& v) { return parse_duration(v, s.wait_timeout); });
    parser.flag("--quiet", s.quiet, "no progress line and no summary");
    parser.flag("--lockstep", lockstep_mode, "re-drive a simulation with the recorded Click requests, compare its answers");
    parser.text("--sim", lockstep.simulation, "PREFIX", "--lockstep: the simulation's topic prefix (default sim)");
    parser.number("--tolerance", lockstep.tolerance, 0, 1e9, "X",
                  "--lockstep: numbers differing by at most X are equal (default 0: exactly)");
    parser.positionals(s.files, "FILE...");
    if (auto done = parse(parser, args)) return *done;
    if (s.files.empty()) {
        std::fprintf(stderr, "gecko play: give the file(s) to play\nTry 'gecko play --help'.\n");
        return exit_usage;
    }
    if (node.key.empty()) {
        std::fprintf(stderr, "gecko play: no key: give --key KEY or set GECKO_KEY\n");
        return exit_usage;
    }
    if (s.end >= 0 && s.end <= s.start) {
        std::fprintf(stderr, "gecko play: --end must come after --start\n");
        return exit_usage;
    }
    install_signal_handlers();
    Node n(node);
    if (lockstep_mode) {
        lockstep.files = s.files;
        lockstep.quiet = s.quiet;
        return replay_lockstep(n, lockstep);
    }
    Player player(n, std::move(s));
    return player.run();
}

}  // namespace gecko::bag::cli
