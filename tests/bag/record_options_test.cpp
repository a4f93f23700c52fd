// SPDX-License-Identifier: Apache-2.0
// gecko record's options and promises as docs/RECORDING.md §2 states them:
// split files, Ctrl-C completing the file (with what is queued), the
// progress line on a terminal, and that no message is lost silently: not
// those a new publisher sends before the recorder has linked to it, not
// those the recorder's own queue cannot hold.
#include <catch2/catch.hpp>

#include <gecko/bag/gecko_format.hpp>
#include <gecko/bag/reader.hpp>
#include <gecko/msgs/sensors.hpp>
#include <gecko/msgs/std.hpp>
#include <gecko/node.hpp>

#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>

#include "bag_files.hpp"
#include "cli_rig.hpp"

using namespace gecko;
using namespace std::chrono_literals;
using gecko::bag_test::drops_of;
using gecko::bag_test::number;
using gecko::bag_test::Scratch;
using gecko::bag_test::start_recorder;
using gecko::test::Process;
using gecko::tools_test::Key;

namespace {

// The n-th file of a split recording of DIR/split.mcap.
std::string split_name(const Scratch& dir, int n) {
    char name[32];
    std::snprintf(name, sizeof name, "split_%03d.mcap", n);
    return dir.path(name);
}

// Messages a (growing) file holds now; 0 while it does not read.
std::uint64_t messages_now(const std::string& path, const std::function<void(const bag::MessageView&)>& each = {}) {
    try {
        bag::Reader r(path);
        return r.read_messages({}, [&](const bag::Channel& ch, const bag::MessageView& m) {
            if (each && ch.message_encoding == "msgpack") each(m);
            return true;
        });
    } catch (const Error&) {
        return 0;
    }
}

// Polls the file the recorder writes (it closes a chunk every second) until `done`, at most `bound`.
bool until_file(const std::function<bool()>& done, std::chrono::seconds bound = 30s) {
    const auto deadline = std::chrono::steady_clock::now() + bound;
    while (std::chrono::steady_clock::now() < deadline) {
        if (done()) return true;
        std::this_thread::sleep_for(100ms);  // polling a growing file, bounded by the deadline
    }
    return done();
}

}  // namespace

TEST_CASE("gecko record --split-duration writes a sequence of complete files, each with its split index", "[bag][record]") {
    Key k;
    Scratch dir;
    const auto file = dir.path("split.mcap");
    k.start_pub_imu();  // 100 Hz until the end of the test
    Process rec = start_recorder(k, {"record", "imu", "-o", file, "--split-duration", "1s", "--duration", "3500ms"});
    REQUIRE(rec.wait(30s) == 0);
    rec.out().drain(5s);
    INFO(rec.output());
    std::uint64_t total = 0;
    int files = 0;
    for (; std::filesystem::exists(split_name(dir, files)); ++files) {
        bag::Reader r(split_name(dir, files));
        INFO(r.path());
        REQUIRE(r.has_summary());
        CHECK(r.problems().empty());
        total += r.statistics()->message_count;
        std::string index;
        for (const auto& m : r.metadata())
            if (m.name == bag::keys::file_record) index = m.metadata.at("split_index");
        CHECK(index == std::to_string(files));
        if (files > 0 && std::filesystem::exists(split_name(dir, files + 1)))
            CHECK(r.statistics()->message_count > 50);  // a second of 100 Hz (the first file starts with the links, the last ends early)
    }
    CHECK(files >= 3);
    CHECK(files <= 5);
    CHECK(total > 200);  // 100 Hz for 3.5 s, less the start
    CHECK_FALSE(std::filesystem::exists(file));
    CHECK(gecko::tools_test::contains(rec.output(), std::to_string(files) + " files"));
}

TEST_CASE("gecko record --split-size starts a new file when one reaches the size", "[bag][record]") {
    Key k;
    Scratch dir;
    const auto file = dir.path("split.mcap");
    const int n = 40;
    const std::size_t size = 100 * 1024;  // 40 x 100 KiB: 4 MB uncompressed, split at 1 MiB
    Process rec = start_recorder(k, {"record", "-o", file, "--split-size", "1M", "--compression", "none", "--chunk-size",
                                     "64k", "--count", std::to_string(n)});
    {
        Node node(k.node_options("camera"));
        auto pub = node.publisher<msgs::Bytes>("blob");
        REQUIRE(pub.wait_for_subscribers(1, 20s));
        msgs::Bytes b;
        b.data.assign(size, 0);
        for (int i = 0; i < n; ++i) {
            b.data[0] = static_cast<std::uint8_t>(i);
            pub.publish(b);
            std::this_thread::sleep_for(2ms);  // pacing, not synchronisation: the recorder's queue is not the test
        }
        REQUIRE(rec.wait(30s) == 0);
    }
    int files = 0;
    std::uint64_t total = 0;
    for (; std::filesystem::exists(split_name(dir, files)); ++files) {
        bag::Reader r(split_name(dir, files));
        INFO(r.path() << ": " << r.file_size() << " bytes");
        REQUIRE(r.has_summary());
        total += r.statistics()->message_count;
        for (const auto& ci : r.chunk_indexes()) CHECK(ci.compression == "");  // --compression none
        if (std::filesystem::exists(split_name(dir, files + 1))) {
            CHECK(r.file_size() >= (1u << 20));                       // full
            CHECK(r.file_size() < (1u << 20) + 2 * size + (64u << 10));  // not much past it: one message and a chunk's records
        }
    }
    CHECK(files >= 3);
    CHECK(total == static_cast<std::uint64_t>(n));
}

TEST_CASE("on a terminal the recorder shows a progress line, and Ctrl-C completes the file with what it had queued", "[bag][record]") {
    Key k;
    Scratch dir;
    const auto file = dir.path("run.mcap");
    bag_test::OnTerminal rec(GECKO_CLI_PATH, {"record", "-o", file, "--compression", "lz4", "--sync"}, bag_test::key_env(k));
    REQUIRE(rec.wait_for("gecko record: recording", 20s));
    k.start_pub_imu();
    const bool shown = rec.wait_for(" messages, ", 20s) && rec.wait_for("1 topics, ", 20s);  // the progress line, once imu is recorded
    INFO(rec.text());
    REQUIRE(shown);
    CHECK(gecko::tools_test::contains(rec.text(), "msg/s"));
    rec.signal(SIGINT);
    REQUIRE(rec.wait(20s) == 0);
    CHECK(rec.wait_for("messages on 1 topics in", 5s));  // the closing summary (pub_imu's first messages, sent before
                                                        // the recorder linked to it, may show as dropped: §2)
    bag::Reader r(file);
    CHECK(r.has_summary());
    CHECK(r.statistics()->message_count > 0);
    CHECK(drops_of(file).at("final") == "true");
    for (const auto& ci : r.chunk_indexes()) CHECK(ci.compression == "lz4");
    CHECK(k.gecko({"bag", "doctor", file}).exit_code == 0);
}

TEST_CASE("a publisher that appears after the recorder and sends at once: what it sent before the recorder linked is counted, never silent",
          "[bag][record]") {
    Key k;
    Scratch dir;
    const auto file = dir.path("late.mcap");
    Process rec = start_recorder(k, {"record", "-o", file});
    const int n = 500;
    {
        Node node(k.node_options("late"));
        auto pub = node.publisher<msgs::Imu>("late/imu");
        for (int i = 0; i < n; ++i) {  // no wait_for_subscribers: from its first moment, at 1 kHz
            pub.publish(bag_test::imu_sample(i));
            std::this_thread::sleep_for(1ms);  // a 1 kHz sensor's pacing, not synchronisation
        }
        // The last message is in the file: everything the recorder will get, it got.
        REQUIRE(until_file([&] {
            bool last = false;
            messages_now(file, [&](const bag::MessageView& m) { last = last || bag::decode<msgs::Imu>(m).stamp_ns == 1000 + n - 1; });
            return last;
        }));
    }
    rec.kill(SIGINT);
    REQUIRE(rec.wait(20s) == 0);
    rec.out().drain(5s);
    INFO(rec.output());
    std::vector<std::int64_t> stamps;
    messages_now(file, [&](const bag::MessageView& m) { stamps.push_back(bag::decode<msgs::Imu>(m).stamp_ns - 1000); });
    const auto drops = drops_of(file);
    const std::uint64_t before = number(drops, "before_link");
    std::printf("late publisher at 1 kHz: %llu of %d messages sent before the recorder linked to it (about %llu ms)\n",
                static_cast<unsigned long long>(before), n, static_cast<unsigned long long>(before));
    REQUIRE_FALSE(stamps.empty());
    CHECK(stamps.front() == static_cast<std::int64_t>(before));  // the first ones went, and exactly those were counted
    CHECK(stamps.size() + before == static_cast<std::size_t>(n));
    CHECK(number(drops, "total") == before);
    CHECK(number(drops, "topic.late/imu") == before);
    CHECK(before < static_cast<std::uint64_t>(n) / 2);  // the window is the link's set-up, not the stream
    const auto info = k.gecko({"bag", "info", file, "--json"});
    CHECK(gecko::tools_test::contains(info.out, "\"dropped\":" + std::to_string(before)));
}

TEST_CASE("recorded + dropped = sent: a recorder whose queue overflows counts every message it could not keep",
          "[bag][record]") {
    Key k;
    Scratch dir;
    const auto file = dir.path("flood.mcap");
    Process rec = start_recorder(k, {"record", "-o", file, "--queue", "16"});
    const int n = 20000;
    Node node(k.node_options("flood"));
    auto pub = node.publisher<msgs::Imu>("flood");
    REQUIRE(pub.wait_for_subscribers(1, 20s));
    for (int i = 0; i < n; ++i) pub.publish(bag_test::imu_sample(i));  // flat out
    // The publisher stays: once quiet it tells its last sequence (PROTOCOL.md §6), so a lost tail is counted too.
    std::uint64_t recorded = 0, dropped = 0;
    const bool balanced = until_file([&] {
        recorded = messages_now(file);
        dropped = recorded ? number(drops_of(file), "total") : 0;
        return recorded + dropped == static_cast<std::uint64_t>(n);
    });
    rec.kill(SIGINT);
    REQUIRE(rec.wait(20s) == 0);
    rec.out().drain(5s);
    INFO(rec.output() << "recorded " << recorded << ", dropped " << dropped << " while the file grew");
    CHECK(balanced);
    const auto drops = drops_of(file);
    bag::Reader r(file);
    CHECK(r.statistics()->message_count + number(drops, "total") == static_cast<std::uint64_t>(n));
    CHECK(number(drops, "total") > 0);
    CHECK(number(drops, "total") == number(drops, "drops") + number(drops, "overwritten") + number(drops, "before_link"));
    CHECK(number(drops, "topic.flood") <= number(drops, "total"));  // gaps per topic; the queue's overwrites are the recorder's own
    CHECK(gecko::tools_test::contains(rec.output(), "messages dropped (counted in the file's gecko.drops metadata)"));
}

// A recorder far behind (a backlog in its queue) while a new publisher loses
// its first messages on a full shared-memory link and closes: by the time the
// recorder's loop reaches that publisher's first message, the subscription
// has heard its `start` and its `end`. What it sent before the link, the
// first messages the link lost, and what the recorder kept add up to what
// was sent, each counted once.
TEST_CASE("each message counted once: a new publisher loses its first messages and closes while the recorder is behind",
          "[bag][record]") {
    Key k;
    Scratch dir;
    const auto file = dir.path("behind.mcap");
    Process rec = start_recorder(k, {"record", "-o", file, "--queue", "2000000"});
    Node node(k.node_options("behind"));
    auto backlog = node.publisher<msgs::Int64>("backlog");
    constexpr std::uint64_t backlog_n = 400000, burst_n = 5000;  // the burst: 5 times what a link holds
    std::uint64_t burst_dropped = 0;
    {
        // A node of its own: the recorder's queue may hold every chunk of the
        // backlog's shared-memory pool (frames are queued in place), and the
        // burst must lose its first messages to its full link, not all of
        // them to a pool it shares with the backlog.
        Node burst_node(k.node_options("burst"));
        auto burst = burst_node.publisher<msgs::Int64>("burst");
        REQUIRE(burst.wait_for_subscribers(1, 20s));
        REQUIRE(backlog.wait_for_subscribers(1, 20s));
        for (std::uint64_t i = 0; i < backlog_n; ++i) backlog.publish(msgs::Int64{static_cast<std::int64_t>(i)});
        rec.kill(SIGSTOP);  // the recorder's backlog stays while the burst fills its link and the publisher closes
        for (std::uint64_t i = 0; i < burst_n; ++i) burst.publish(msgs::Int64{static_cast<std::int64_t>(i)});
        burst_dropped = burst.stats().dropped;
    }
    rec.kill(SIGCONT);
    REQUIRE(burst_dropped > 0);  // the first messages among them
    const std::uint64_t sent = backlog_n + burst_n;
    std::uint64_t recorded = 0, dropped = 0;
    // A backlog of 400,000 takes a sanitised recorder on a loaded machine well past 30 s.
    const bool balanced = until_file(
        [&] {
            recorded = messages_now(file);
            dropped = recorded ? number(drops_of(file), "total") : 0;
            return recorded + dropped >= sent;
        },
        90s);
    const std::uint64_t recorded_while_running = recorded, dropped_while_running = dropped;
    rec.kill(SIGINT);
    REQUIRE(rec.wait(30s) == 0);
    rec.out().drain(5s);
    const auto drops = drops_of(file);
    std::map<std::string, std::uint64_t> per_topic;
    {
        bag::Reader r(file);
        r.read_messages({}, [&](const bag::Channel& ch, const bag::MessageView&) {
            ++per_topic[ch.topic];
            return true;
        });
    }
    recorded = per_topic["burst"] + per_topic["backlog"];
    INFO(rec.output() << "while it ran: recorded " << recorded_while_running << ", dropped " << dropped_while_running << " of "
                      << sent << "; at the end: recorded " << recorded << ", drops " << drops.at("drops") << ", before_link "
                      << drops.at("before_link") << ", overwritten " << drops.at("overwritten") << ", burst lost on its link "
                      << burst_dropped);
    CHECK(balanced);
    CHECK(drops.at("final") == "true");
    CHECK(recorded + number(drops, "total") == sent);
    // No queue overwrites (it holds everything): every loss is a topic's, once.
    CHECK(number(drops, "overwritten") == 0);
    CHECK(per_topic["burst"] + number(drops, "topic.burst") == burst_n);
    CHECK(per_topic["backlog"] + number(drops, "topic.backlog") == backlog_n);
}
