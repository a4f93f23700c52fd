// SPDX-License-Identifier: Apache-2.0
// gecko play's options as docs/RECORDING.md §3 states them: --loop, --start
// and --end (also on a file without a summary), --wait-timeout, and on a
// terminal the progress line and space to pause and resume.
#include <catch2/catch.hpp>

#include <gecko/bag/gecko_format.hpp>
#include <gecko/bag/writer.hpp>
#include <gecko/msgs/sensors.hpp>
#include <gecko/node.hpp>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "bag_files.hpp"
#include "cli_rig.hpp"

using namespace gecko;
using namespace std::chrono_literals;
using gecko::bag_test::imu_sample;
using gecko::bag_test::Scratch;
using gecko::test::Process;
using gecko::tools_test::Key;

namespace {

constexpr std::uint64_t t0 = 1'000'000'000'000;

// `n` Imu messages `gap_ms` apart (imu_sample(i) at t0 + i * gap). `cut`: without its summary,
// as a recorder killed with -9 leaves a file.
void paced_file(const std::string& path, int n, int gap_ms, bool cut = false) {
    std::uint64_t whole = 0;
    {
        bag::Writer w(path);
        const auto ch = bag::add_channel<msgs::Imu>(w, "imu");
        for (int i = 0; i < n; ++i)
            bag::write(w, ch, imu_sample(i), static_cast<std::uint32_t>(i + 1),
                       t0 + static_cast<std::uint64_t>(i) * static_cast<std::uint64_t>(gap_ms) * 1'000'000ull);
        w.flush();
        whole = w.stats().file_bytes;
    }
    if (cut) std::filesystem::resize_file(path, whole);
}

SubscriberOptions deep() {
    SubscriberOptions o;
    o.depth = 1000;
    return o;
}

// Indexes (imu_sample's i) of what `sub` receives: `count` of them, each within 10 s.
std::vector<int> receive_indexes(Subscriber<msgs::Imu>& sub, int count, std::vector<std::chrono::steady_clock::time_point>* when = nullptr) {
    std::vector<int> got;
    while (static_cast<int>(got.size()) < count) {
        auto m = sub.receive(10s);
        if (!m) break;
        got.push_back(static_cast<int>(m->stamp_ns - 1000));
        if (when) when->push_back(std::chrono::steady_clock::now());
    }
    return got;
}

}  // namespace

TEST_CASE("gecko play --start and --end play a window of the recording, with or without a summary", "[bag][play]") {
    Key k;
    Scratch dir;
    const bool cut = GENERATE(false, true);
    const auto file = dir.path(cut ? "cut.mcap" : "whole.mcap");
    paced_file(file, 21, 50, cut);
    REQUIRE(bag::Reader(file).has_summary() == !cut);
    Node node(k.node_options("listener"));
    auto sub = node.subscriber<msgs::Imu>("imu", deep());
    // 0.3 s to 0.6 s after the first message, both ends inclusive: messages 6 to 12.
    const auto play = k.gecko({"play", file, "--start", "0.3", "--end", "0.6", "--wait-subscribers", "1"}, 30s);
    INFO(play.out << play.err);
    REQUIRE(play.exit_code == 0);
    CHECK(receive_indexes(sub, 7) == std::vector<int>{6, 7, 8, 9, 10, 11, 12});
    CHECK_FALSE(sub.receive(1s));  // and nothing after the window (play has exited: all it sent has come)
    CHECK(gecko::tools_test::contains(play.err, "has no summary (cut short?)") == cut);
    CHECK(gecko::tools_test::contains(play.err, "published 7 messages"));

    // gecko bag echo takes the same window (and a glob for the topic).
    const auto echo = k.gecko({"bag", "echo", file, "i*", "--json", "--start", "0.3", "--end", "0.6"});
    REQUIRE(echo.exit_code == 0);
    std::vector<int> echoed;
    std::istringstream lines(echo.out);
    for (std::string line; std::getline(lines, line);) echoed.push_back(nlohmann::json::parse(line)["stamp_ns"].get<int>() - 1000);
    CHECK(echoed == std::vector<int>{6, 7, 8, 9, 10, 11, 12});
}

TEST_CASE("gecko play --loop starts again at the end until Ctrl-C", "[bag][play]") {
    Key k;
    Scratch dir;
    const auto file = dir.path("loop.mcap");
    paced_file(file, 5, 20);
    Node node(k.node_options("listener"));
    auto sub = node.subscriber<msgs::Imu>("imu", deep());
    Process play = k.start_gecko({"play", file, "--loop", "--wait-subscribers", "1"});
    const auto got = receive_indexes(sub, 12);
    CHECK(got == std::vector<int>{0, 1, 2, 3, 4, 0, 1, 2, 3, 4, 0, 1});
    play.kill(SIGINT);
    CHECK(play.wait(20s) == 0);
}

TEST_CASE("gecko play --wait-subscribers gives up after --wait-timeout and plays anyway", "[bag][play]") {
    Key k;
    Scratch dir;
    const auto file = dir.path("alone.mcap");
    paced_file(file, 3, 10);
    const auto start = std::chrono::steady_clock::now();
    const auto play = k.gecko({"play", file, "--wait-subscribers", "1", "--wait-timeout", "1s"}, 30s);
    INFO(play.out << play.err);
    CHECK(play.exit_code == 0);
    CHECK(std::chrono::steady_clock::now() - start >= 1s);
    CHECK(gecko::tools_test::contains(play.err, "'imu' has 0 subscribers, not 1, after the wait; playing anyway"));
    CHECK(gecko::tools_test::contains(play.err, "published 3 messages"));
}

TEST_CASE("gecko play on a terminal: a progress line, and space pauses and resumes", "[bag][play]") {
    Key k;
    Scratch dir;
    const auto file = dir.path("paced.mcap");
    const int n = 40;
    paced_file(file, n, 50);  // 2 s
    Node node(k.node_options("listener"));
    auto sub = node.subscriber<msgs::Imu>("imu", deep());
    bag_test::OnTerminal play(GECKO_CLI_PATH, {"play", file, "--wait-subscribers", "1"}, bag_test::key_env(k));
    std::vector<std::chrono::steady_clock::time_point> when;
    auto got = receive_indexes(sub, 10, &when);
    REQUIRE(got.size() == 10u);
    CHECK(play.wait_for("playing: ", 10s));
    INFO(play.text());
    CHECK(gecko::tools_test::contains(play.text(), "(space pauses)"));
    play.type(" ");
    REQUIRE(play.wait_for("paused (space resumes)", 10s));
    std::this_thread::sleep_for(1s);  // the pause itself: what the test measures, not a synchronisation
    play.type(" ");
    const auto rest = receive_indexes(sub, n - 10, &when);
    got.insert(got.end(), rest.begin(), rest.end());
    REQUIRE(got.size() == static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) CHECK(got[static_cast<std::size_t>(i)] == i);
    std::chrono::steady_clock::duration longest{};
    for (std::size_t i = 1; i < when.size(); ++i) longest = std::max(longest, when[i] - when[i - 1]);
    CHECK(longest >= 1s);  // the pause; unpaused, 50 ms
    CHECK(play.wait(20s) == 0);
}
