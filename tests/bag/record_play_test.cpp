// SPDX-License-Identifier: Apache-2.0
// gecko record, play and bag, as a user runs them: real geckocore and gecko
// processes on loopback (tests/tools/key_fixture.hpp is the rig), files
// checked with gecko::bag::Reader and with @mcap/core (mcap_core_test.cpp's node()).
#include <catch2/catch.hpp>

#include <gecko/bag/gecko_format.hpp>
#include <gecko/bag/reader.hpp>
#include <gecko/bag/writer.hpp>
#include <gecko/msgs/sensors.hpp>
#include <gecko/node.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <map>

#include "bag_files.hpp"
#include "cli_rig.hpp"
#include "node_oracle.hpp"

using namespace gecko;
using namespace std::chrono_literals;
using gecko::bag_test::Scratch;
using gecko::bag_test::by_topic;
using gecko::bag_test::imu_sample;
using gecko::bag_test::joints_sample;
using gecko::bag_test::start_recorder;
using gecko::tools_test::Key;
using gecko::tools_test::Run;
using gecko::test::Process;

namespace {

// Records `n` messages on each of two topics, published by this process after the recorder started.
void record_two_topics(Key& k, const std::string& file, int n, const std::vector<std::string>& extra = {}) {
    std::vector<std::string> args{"record", "-o", file, "--count", std::to_string(2 * n)};
    args.insert(args.end(), extra.begin(), extra.end());
    Process rec = start_recorder(k, args);
    {
        Node node(k.node_options("sensors"));
        auto imu = node.publisher<msgs::Imu>("imu");
        auto joints = node.publisher<msgs::JointState>("arm/joints");
        REQUIRE(imu.wait_for_subscribers(1, 20s));
        REQUIRE(joints.wait_for_subscribers(1, 20s));
        for (int i = 0; i < n; ++i) {
            imu.publish(imu_sample(i));
            joints.publish(joints_sample(i));
            std::this_thread::sleep_for(1ms);  // a 1 kHz stream, as a sensor publishes (pacing, not synchronisation)
        }
        const auto code = rec.wait(30s);
        INFO(rec.output());
        REQUIRE(code == 0);
    }
}

}  // namespace

TEST_CASE("gecko record keeps every message of topics that appear after it, typed, with their publisher and no drop",
          "[bag][record]") {
    Key k;
    Scratch dir;
    const auto file = dir.path("run.mcap");
    record_two_topics(k, file, 200, {"--json"});

    bag::Reader r(file);
    REQUIRE(r.has_summary());
    std::map<std::string, const bag::Channel*> channels;
    for (const auto& [id, ch] : r.channels()) channels[ch.topic] = &ch;
    REQUIRE(channels.count("imu"));
    const auto& imu = *channels["imu"];
    CHECK(imu.message_encoding == "msgpack");
    CHECK(imu.schema_id == 0);
    CHECK(imu.metadata.at(bag::keys::type_name) == "gecko.msgs.Imu");
    CHECK(imu.metadata.at(bag::keys::type_hash) == bag::hex64(wire::type_hash("gecko.msgs.Imu")));
    CHECK(imu.metadata.at(bag::keys::node) == "sensors");
    CHECK_FALSE(imu.metadata.at(bag::keys::host).empty());
    const auto schema = bag::schema_of(imu);
    REQUIRE(schema);
    CHECK(schema->find("gecko.msgs.Imu"));
    REQUIRE(channels.count("/json/imu"));  // the --json twin
    CHECK(channels["/json/imu"]->message_encoding == "json");
    CHECK(r.schemas().at(channels["/json/imu"]->schema_id).encoding == "jsonschema");

    int i = 0;
    std::uint64_t last_seq = 0;
    std::uint64_t last_log_time = 0;
    r.read_messages({}, [&](const bag::Channel& ch, const bag::MessageView& m) {
        CHECK(m.log_time >= last_log_time);  // two publishers' links deliver in any order; the file does not go back
        last_log_time = m.log_time;
        if (ch.topic == "imu") {
            CHECK(bag::decode<msgs::Imu>(m) == imu_sample(i++));
            CHECK(m.sequence == last_seq + 1);
            last_seq = m.sequence;
            CHECK(m.publish_time <= m.log_time + 1'000'000'000ull);
            CHECK(m.publish_time > 0);
        }
        if (ch.topic == "arm/joints") CHECK(bag::decode<msgs::JointState>(m).names.size() == 2);
        return true;
    });
    CHECK(i == 200);
    std::string drops_total;
    for (const auto& m : r.metadata())
        if (m.name == bag::keys::drops_record) drops_total = m.metadata.at("total");
    CHECK(drops_total == "0");

    // gecko bag info, echo and doctor on it.
    const Run info = k.gecko({"bag", "info", file, "--json"});
    REQUIRE(info.exit_code == 0);
    const auto j = nlohmann::json::parse(info.out);
    CHECK(j["topics"]["imu"]["messages"] == 200);
    CHECK(j["topics"]["arm/joints"]["type"] == "gecko.msgs.JointState");
    CHECK(j["key"] == k.key());
    CHECK(j["dropped"] == 0);
    const Run table = k.gecko({"bag", "info", file});
    CHECK(table.exit_code == 0);
    CHECK(gecko::tools_test::contains(table.out, "gecko.msgs.Imu"));
    const Run echo = k.gecko({"bag", "echo", file, "imu", "--json", "--count", "1"});
    REQUIRE(echo.exit_code == 0);
    CHECK(nlohmann::json::parse(echo.out)["frame_id"] == "imu_link");
    const Run text = k.gecko({"bag", "echo", file, "arm/joints", "--count", "2"});
    CHECK(text.exit_code == 0);
    CHECK(gecko::tools_test::count_of(text.out, "--- arm/joints #") == 2);
    const Run doctor = k.gecko({"bag", "doctor", file});
    INFO(doctor.out);
    CHECK(doctor.exit_code == 0);
    CHECK(gecko::tools_test::contains(doctor.out, "0 errors, 0 warnings"));

    // MCAP's own reader sees the same.
    const auto ran = bag_test::node("read_mcap.mjs", bag_test::quoted(file));
    REQUIRE(ran.status == 0);
    const auto mc = nlohmann::json::parse(ran.out);
    CHECK(mc["indexed"]["topics"]["imu"] == 200);
    CHECK(mc["indexed"]["topics"]["arm/joints"] == 200);
    CHECK(mc["stream"]["topics"]["/json/imu"] == 200);
}

TEST_CASE("a recorder killed with -9 leaves a file read up to its last second, and bag recover completes it for both readers",
          "[bag][record]") {
    Key k;
    Scratch dir;
    const auto file = dir.path("killed.mcap");
    Process rec = start_recorder(k, {"record", "-o", file, "--chunk-size", "4k"});
    k.start_pub_imu();  // 100 Hz until the end of the test
    // The recorder closes a chunk every second: wait until two hold messages.
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    std::uint64_t seen = 0;
    while (std::chrono::steady_clock::now() < deadline && seen < 150) {
        std::this_thread::sleep_for(100ms);  // polling the growing file, bounded by the deadline
        try {
            bag::Reader cut(file);
            seen = cut.read_messages({}, [](const bag::Channel&, const bag::MessageView&) { return true; });
        } catch (const Error&) {
        }
    }
    REQUIRE(seen >= 150);
    rec.kill(SIGKILL);
    REQUIRE(rec.wait(20s) == 128 + SIGKILL);

    bag::Reader cut(file);
    CHECK_FALSE(cut.has_summary());
    std::uint64_t n = 0;
    by_topic(file, &n);
    CHECK(n >= seen);
    const Run info = k.gecko({"bag", "info", file});
    CHECK(info.exit_code == 0);
    CHECK(gecko::tools_test::contains(info.out, "summary:      none"));
    CHECK(k.gecko({"bag", "doctor", file}).exit_code == 1);

    const auto fixed = dir.path("fixed.mcap");
    const Run recover = k.gecko({"bag", "recover", file, "-o", fixed});
    INFO(recover.out << recover.err);
    REQUIRE(recover.exit_code == 0);
    CHECK(gecko::tools_test::contains(recover.out, "recovered " + std::to_string(n) + " messages"));
    const Run doctor = k.gecko({"bag", "doctor", fixed});
    INFO(doctor.out);
    CHECK(doctor.exit_code == 0);
    bag::Reader whole(fixed);
    CHECK(whole.has_summary());
    CHECK(whole.statistics()->message_count == n);
    const auto ran = bag_test::node("read_mcap.mjs", bag_test::quoted(fixed));
    REQUIRE(ran.status == 0);
    const auto mc = nlohmann::json::parse(ran.out);
    CHECK(mc["indexed"]["messages"] == n);
    CHECK(mc["stream"]["messages"] == n);
}

TEST_CASE("record, play under another key, record again: the same messages, in the same order, typed as recorded",
          "[bag][play]") {
    Key k1, k2;
    Scratch dir;
    const auto first = dir.path("first.mcap"), second = dir.path("second.mcap");
    const int n = 150;
    record_two_topics(k1, first, n);

    Process rec = start_recorder(k2, {"record", "-o", second, "--count", std::to_string(2 * n)});
    // A typed subscriber of the original type, on the new key.
    Node node(k2.node_options("listener"));
    auto imu = node.subscriber<msgs::Imu>("imu");
    const Run play = k2.gecko({"play", first, "--wait-subscribers", "2", "--quiet"}, 60s);
    INFO(play.out << play.err);
    REQUIRE(play.exit_code == 0);
    REQUIRE(rec.wait(30s) == 0);
    int typed = 0;
    while (auto m = imu.receive(2s)) {
        CHECK(m->frame_id == "imu_link");
        if (++typed == n) break;
    }
    CHECK(typed > 0);  // a typed subscriber received them (its queue keeps the newest 16)

    const auto a = by_topic(first), b = by_topic(second);
    REQUIRE(a.size() == 2);
    CHECK(a == b);  // payloads, order and counts per topic
    bag::Reader r(second);
    for (const auto& [id, ch] : r.channels())
        if (ch.topic == "imu") CHECK(bag::type_name_of(ch) == "gecko.msgs.Imu");

    SECTION("--topics and --rate 0 play a part as fast as possible") {
        const auto third = dir.path("third.mcap");
        Process rec3 = start_recorder(k2, {"record", "-o", third, "--count", std::to_string(n)});
        const Run part = k2.gecko({"play", first, "--topics", "arm/*", "--rate", "0", "--wait-subscribers", "1", "--quiet"}, 60s);
        REQUIRE(part.exit_code == 0);
        REQUIRE(rec3.wait(30s) == 0);
        const auto c = by_topic(third);
        REQUIRE(c.size() == 1);
        CHECK(c.at("arm/joints") == a.at("arm/joints"));
    }
}

TEST_CASE("gecko play keeps the recorded timing, scaled by --rate", "[bag][play]") {
    Key k;
    Scratch dir;
    const auto paced = dir.path("paced.mcap"), again = dir.path("again.mcap");
    const int n = 21;
    const std::uint64_t gap = 50'000'000;  // 50 ms: 1 s in all
    {
        bag::Writer w(paced);
        const auto ch = bag::add_channel<msgs::Imu>(w, "imu");
        for (int i = 0; i < n; ++i)
            bag::write(w, ch, imu_sample(i), static_cast<std::uint32_t>(i + 1), 1'000'000'000'000 + gap * static_cast<std::uint64_t>(i));
    }
    Process rec = start_recorder(k, {"record", "-o", again, "--count", std::to_string(n)});
    const Run play = k.gecko({"play", paced, "--rate", "2", "--wait-subscribers", "1", "--quiet"}, 60s);
    INFO(play.out << play.err);
    REQUIRE(play.exit_code == 0);
    REQUIRE(rec.wait(30s) == 0);
    std::vector<std::uint64_t> times;
    bag::Reader r(again);
    r.read_messages({}, [&](const bag::Channel&, const bag::MessageView& m) {
        times.push_back(m.log_time);
        return true;
    });
    REQUIRE(times.size() == static_cast<std::size_t>(n));
    // Played at twice the speed: 500 ms from first to last as received. Never early (each message
    // waits for its time); late only by scheduling, which does not add up (times count from the first).
    const double span_ms = static_cast<double>(times.back() - times.front()) / 1e6;
    INFO("span " << span_ms << " ms");
    CHECK(span_ms > 450);
    CHECK(span_ms < 800);  // at --rate 1 it would be 1000
    std::vector<std::uint64_t> gaps;
    for (std::size_t i = 1; i < times.size(); ++i) gaps.push_back(times[i] - times[i - 1]);
    std::nth_element(gaps.begin(), gaps.begin() + static_cast<long>(gaps.size() / 2), gaps.end());
    const double median_ms = static_cast<double>(gaps[gaps.size() / 2]) / 1e6;
    INFO("median gap " << median_ms << " ms");
    CHECK(median_ms > 20);
    CHECK(median_ms < 30);
}
