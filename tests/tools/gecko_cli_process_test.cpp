// SPDX-License-Identifier: Apache-2.0
// The `gecko` tool as users run it: a real geckocore (unicast only, on a port
// of its own), pub_imu publishing "imu" at 100 Hz, and `gecko` subcommands as
// child processes. Every wait has a deadline; nothing sleeps to synchronise.
#include <catch2/catch.hpp>

#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "key_fixture.hpp"

using namespace gecko::tools_test;

TEST_CASE("the rig's geckocore listens on an ephemeral port that its 'listening on' line names", "[tools][process]") {
    Key k;
    CHECK(k.port() != 7651);
    CHECK(contains(k.core_line(), "listening on tcp://127.0.0.1:" + std::to_string(k.port()) + ","));
    if (core_has_door_option()) CHECK(contains(k.core_line(), "no door"));  // port 7651 is not the tests' to take
    Key other;  // a second key at once: another port, no clash
    CHECK(other.port() != k.port());
    CHECK(k.gecko({"list"}).exit_code == 0);
    CHECK(other.gecko({"list"}).exit_code == 0);
}

TEST_CASE("gecko list shows a publisher's topic, type and node", "[tools][process]") {
    Key k;
    const pid_t imu = k.start_pub_imu();
    const auto list = k.wait_for_list([](const std::string& out) { return has_topic_line(out, "imu", "gecko.msgs.Imu"); });
    CHECK(has_topic_line(list, "imu", "imu_driver@"));
    CHECK(has_topic_line(list, "imu", ":" + std::to_string(imu)));
    CHECK(contains(list, "TOPIC"));
    CHECK(contains(list, "key '" + k.key() + "'"));

    // --json: the core's whole answer, as JSON.
    const auto json = k.gecko({"list", "--json"});
    REQUIRE(json.exit_code == 0);
    const auto parsed = nlohmann::json::parse(json.out);
    CHECK(parsed.at("key") == k.key());
    CHECK(parsed.at("topics").at(0).at("name") == "imu");
}

TEST_CASE("gecko list flags a type conflict and names both types", "[tools][process][types]") {
    Key k;
    k.start_pub_imu();
    // A publisher that insists on another type for the same topic (gecko echo --type refuses to).
    k.start_gecko_background({"pub", "imu", "--type", "gecko.msgs.String", "--force", "--rate", "10", R"({"data": "x"})"});
    const auto list = k.wait_for_list([](const std::string& out) { return contains(out, "type conflicts"); });
    CHECK(has_topic_line(list, "imu", "(!)"));
    const auto conflicts = list.substr(list.find("type conflicts"));
    CHECK(contains(conflicts, "gecko.msgs.Imu"));
    CHECK(contains(conflicts, "gecko.msgs.String"));
}

TEST_CASE("gecko echo prints messages as JSON lines or as text", "[tools][process]") {
    Key k;
    k.start_pub_imu();
    k.wait_for_list([](const std::string& out) { return has_topic_line(out, "imu", "gecko.msgs.Imu"); });

    const auto json = k.gecko({"echo", "imu", "--count", "3", "--json"});
    INFO(json.out << json.err);
    REQUIRE(json.exit_code == 0);
    REQUIRE(json.lines.size() == 3);
    for (const auto& line : json.lines) {
        const auto m = nlohmann::json::parse(line);
        REQUIRE(m.contains("accel"));
        CHECK(m.at("accel").at("z").get<double>() == Approx(9.81));
        CHECK(m.at("frame_id") == "imu_link");
        CHECK(m.at("stamp_ns").is_number_integer());
    }

    const auto text = k.gecko({"echo", "imu", "--count", "1"});
    INFO(text.out << text.err);
    REQUIRE(text.exit_code == 0);
    REQUIRE(!text.lines.empty());
    CHECK(text.lines.front().rfind("--- imu #", 0) == 0);
    CHECK(contains(text.lines.front(), "imu_driver@"));
    CHECK(contains(text.lines.front(), "latency"));
    CHECK(contains(text.out, "\naccel:\n  x: "));
    CHECK(contains(text.out, "frame_id: imu_link"));

    const auto info = k.gecko({"echo", "imu", "--count", "1", "--json", "--with-info"});
    REQUIRE(info.exit_code == 0);
    const auto wrapped = nlohmann::json::parse(info.lines.at(0));
    CHECK(wrapped.at("type") == "gecko.msgs.Imu");
    CHECK(wrapped.at("seq").get<std::uint64_t>() > 0);
    CHECK(wrapped.at("message").contains("gyro"));
}

TEST_CASE("gecko pub --count 1 reaches a gecko echo that listens already", "[tools][process]") {
    Key k;
    auto echo = k.start_gecko({"echo", "chatter", "--type", "gecko.msgs.String", "--count", "1", "--json"});
    // The subscriber is registered with the core before anything is published.
    k.wait_for_list([](const std::string& out) { return has_topic_line(out, "chatter", "gecko_echo@"); });

    const auto pub = k.gecko({"pub", "chatter", "--type", "gecko.msgs.String", u8R"({"data": "hello ✓"})"});
    INFO(pub.out << pub.err);
    CHECK(pub.exit_code == 0);
    CHECK(contains(pub.out, "published 1 message"));
    CHECK(contains(pub.out, "to 1 subscriber"));

    const auto got = finish(std::move(echo), 10s);
    INFO(got.out << got.err);
    REQUIRE(got.exit_code == 0);
    REQUIRE(got.lines.size() == 1);
    CHECK(nlohmann::json::parse(got.lines[0]) == nlohmann::json::parse(u8R"({"data": "hello ✓"})"));
}

TEST_CASE("gecko echo waits for a topic that does not exist yet", "[tools][process]") {
    Key k;
    // No --type: echo learns the type from the core once a publisher appears.
    auto echo = k.start_gecko({"echo", "numbers", "--count", "2", "--json"});
    REQUIRE(echo.err().wait_for("waiting", 10s));
    k.start_gecko_background({"pub", "numbers", "--type", "test.Numbers", R"({"i": -3, "f": 0.5, "list": [1, 2.5, "x"]})",
                              "--rate", "20"});
    const auto got = finish(std::move(echo), 15s);
    INFO(got.out << got.err);
    REQUIRE(got.exit_code == 0);
    REQUIRE(got.lines.size() == 2);
    CHECK(got.lines[0] == R"({"i":-3,"f":0.5,"list":[1,2.5,"x"]})");
}

TEST_CASE("gecko hz and gecko bw measure pub_imu's ~100 Hz", "[tools][process]") {
    Key k;
    k.start_pub_imu();
    k.wait_for_list([](const std::string& out) { return has_topic_line(out, "imu", "gecko.msgs.Imu"); });

    const auto hz = k.gecko({"hz", "imu", "--duration", "3"});
    INFO(hz.out << hz.err);
    REQUIRE(hz.exit_code == 0);
    REQUIRE(!hz.lines.empty());
    const std::string& final_line = hz.lines.back();
    std::smatch m;
    REQUIRE(std::regex_search(final_line, m, std::regex(R"(^final: imu: ([0-9.]+) Hz  period mean)")));
    const double rate = std::stod(m[1]);
    CHECK(rate > 50);
    CHECK(rate < 150);
    CHECK(contains(final_line, "std dev"));

    const auto count = k.gecko({"hz", "imu", "--count", "50"});
    REQUIRE(count.exit_code == 0);
    CHECK(contains(count.lines.back(), "of 50 messages"));

    const auto bw = k.gecko({"bw", "imu", "--count", "50"});
    INFO(bw.out << bw.err);
    REQUIRE(bw.exit_code == 0);
    REQUIRE(std::regex_search(bw.lines.back(), m, std::regex(R"(^final: imu: ([0-9.]+) KiB/s  mean ([0-9]+) B)")));
    CHECK(std::stod(m[1]) > 5);  // ~250 B x 100 Hz = ~24 KiB/s
    CHECK(std::stoi(m[2]) > 100);
}

TEST_CASE("gecko nodes, info and top --once describe the key", "[tools][process]") {
    Key k;
    const pid_t imu = k.start_pub_imu();
    k.wait_for_list([](const std::string& out) { return has_topic_line(out, "imu", "gecko.msgs.Imu"); });
    const std::string pid = std::to_string(imu);

    const auto nodes = k.gecko({"nodes"});
    INFO(nodes.out << nodes.err);
    REQUIRE(nodes.exit_code == 0);
    CHECK(contains(nodes.out, "NODE"));
    bool found = false;
    for (const auto& line : nodes.lines)
        found = found || (line.rfind("imu_driver ", 0) == 0 && contains(line, " " + pid + " ") && contains(line, "ago"));
    CHECK(found);

    const auto info = k.gecko({"info", "imu"});
    INFO(info.out << info.err);
    REQUIRE(info.exit_code == 0);
    CHECK(contains(info.out, "topic 'imu'"));
    CHECK(contains(info.out, "type: gecko.msgs.Imu"));
    CHECK(contains(info.out, "publishers (1):"));
    CHECK(contains(info.out, "imu_driver@"));
    CHECK(contains(info.out, pid));
    CHECK(contains(info.out, "locators"));

    const auto missing = k.gecko({"info", "nope"});
    CHECK(missing.exit_code == 1);
    CHECK(contains(missing.err, "no topic or service 'nope'"));

    const auto top = k.gecko({"top", "--once"});
    INFO(top.out << top.err);
    REQUIRE(top.exit_code == 0);
    CHECK(contains(top.out, "gecko top"));
    CHECK(has_topic_line(top.out, "imu", "gecko.msgs.Imu"));
    CHECK(!contains(top.out, "\033["));  // no screen control codes when not a terminal
}

TEST_CASE("gecko exits 2 on a usage error", "[tools][process]") {
    Key k;
    const std::vector<std::vector<std::string>> bad = {
        {},                                         // no command
        {"frobnicate"},                             // unknown command
        {"list", "--bogus"},                        // unknown option
        {"echo"},                                   // missing TOPIC
        {"echo", "imu", "--count", "zero"},         // malformed value
        {"hz", "imu", "--duration", "soon"},        // malformed duration
        {"pub", "chatter", "--type", "gecko.msgs.String", "{not json"},
        {"list", "--core", "not an address:99999"},
    };
    for (const auto& args : bad) {
        const auto r = k.gecko(args);
        INFO("gecko " << [&] { std::string s; for (const auto& a : args) s += a + " "; return s; }() << "\n" << r.err);
        CHECK(r.exit_code == 2);
        CHECK(!r.err.empty());
    }
    auto o = k.options();
    o.unset_env.push_back("GECKO_KEY");
    o.env.erase("GECKO_KEY");
    const auto no_key = finish(Process::spawn(GECKO_CLI_PATH, {"list"}, o), 10s);
    CHECK(no_key.exit_code == 2);
    CHECK(contains(no_key.err, "GECKO_KEY"));

    const auto help = k.gecko({"echo", "--help"});
    CHECK(help.exit_code == 0);
    CHECK(contains(help.out, "usage: gecko echo"));
}

TEST_CASE("gecko nodes, info and list --json show the transport of each link", "[tools][process]") {
    Key k;
    k.start_pub_imu();
    k.start_gecko_background({"echo", "imu", "--count", "1000000"});
    // Nodes report their links with their figures, every ~3 s.
    const auto deadline = std::chrono::steady_clock::now() + 20s;
    Run nodes;
    bool reported = false;
    while (!reported && std::chrono::steady_clock::now() < deadline) {
        nodes = k.gecko({"nodes"});
        for (const auto& line : nodes.lines)
            reported = reported || (line.rfind("gecko_echo", 0) == 0 && contains(line, "imu_driver over shm"));
        if (!reported) std::this_thread::sleep_for(200ms);  // poll period of a bounded wait for the next report
    }
    INFO(nodes.out << nodes.err);
    REQUIRE(reported);  // same host, another process: shared memory
    CHECK(contains(nodes.out, "RECEIVES FROM"));

    const auto info = k.gecko({"info", "imu"});
    INFO(info.out << info.err);
    CHECK(contains(info.out, "from imu_driver over shm"));
    CHECK(contains(info.out, "to gecko_echo over shm"));

    const auto json = k.gecko({"list", "--json"});
    REQUIRE(json.exit_code == 0);
    bool listed = false;
    const auto parsed = nlohmann::json::parse(json.out);
    for (const auto& n : parsed.at("nodes"))
        for (const auto& l : n.at("links"))
            listed = listed || (l.at("node") == "imu_driver" && l.at("transport") == "shm");
    CHECK(listed);
}

TEST_CASE("gecko exits 1 and says what it tried when no core answers", "[tools][process]") {
    Key k;  // for the environment; the tool is pointed elsewhere
    const std::string nowhere = "127.0.0.1:" + std::to_string(free_port());
    for (const char* command : {"list", "nodes", "info", "echo", "top"}) {
        std::vector<std::string> args{command};
        if (std::string(command) == "info" || std::string(command) == "echo") args.push_back("imu");
        for (const char* a : {"--core", nowhere.c_str(), "--no-multicast", "--timeout", "1s"}) args.push_back(a);
        const auto r = k.gecko(args);
        INFO("gecko " << command << "\n" << r.err);
        CHECK(r.exit_code == 1);
        CHECK(contains(r.err, "no answer from a geckocore for key '" + k.key() + "'"));
        CHECK(contains(r.err, "tcp://" + nowhere));
        CHECK(contains(r.err, "geckocore --key " + k.key()));
    }
}

TEST_CASE("gecko doctor checks interfaces, route and the core both ways", "[tools][process]") {
    Key k;
    const auto ok = k.gecko({"doctor", "--timeout", "1s"});
    INFO(ok.out << ok.err);
    CHECK(ok.exit_code == 0);  // reachable by unicast (the core has no multicast)
    for (const char* needle : {"network interfaces", "route to the multicast group", "by multicast", "by unicast",
                               "reachable by unicast only", "What to do:"})
        CHECK(contains(ok.out, needle));

    const std::string nowhere = "127.0.0.1:" + std::to_string(free_port());
    const auto bad = k.gecko({"doctor", "--core", nowhere, "--timeout", "1s"});
    INFO(bad.out << bad.err);
    CHECK(bad.exit_code == 1);
    CHECK(contains(bad.out, "no core of key '" + k.key() + "' answered"));
    CHECK(contains(bad.out, "geckocore --key " + k.key()));
    CHECK(contains(bad.out, "GECKO_CORE="));
}

// ---- gecko pub checks fields and types; gecko echo --type refuses another type; examples' --help ----

TEST_CASE("gecko pub rejects a field a gecko.msgs type does not have", "[tools][process][pub]") {
    Key k;
    const auto top = k.gecko({"pub", "imu", "--type", "gecko.msgs.Imu", R"({"foo": 1})", "--wait", "0"});
    INFO(top.out << top.err);
    CHECK(top.exit_code == 2);
    CHECK(contains(top.err, "no field 'foo'"));
    CHECK(contains(top.err, "stamp_ns, frame_id, accel, gyro, mag, orientation"));

    const auto nested = k.gecko({"pub", "imu", "--type", "gecko.msgs.Imu", R"({"accel": {"q": 1}})", "--wait", "0"});
    INFO(nested.err);
    CHECK(nested.exit_code == 2);
    CHECK(contains(nested.err, "'accel.q'"));
    CHECK(contains(nested.err, "x, y, z"));

    const auto wrong = k.gecko({"pub", "imu", "--type", "gecko.msgs.Imu", R"({"stamp_ns": "now"})", "--wait", "0"});
    CHECK(wrong.exit_code == 2);
    CHECK(contains(wrong.err, "stamp_ns"));

    const auto good = k.gecko({"pub", "imu", "--type", "gecko.msgs.Imu", R"({"stamp_ns": 1, "accel": {"z": 9.81}})",
                               "--wait", "0"});
    INFO(good.err);
    CHECK(good.exit_code == 0);
    // A type gecko does not know is sent as written.
    CHECK(k.gecko({"pub", "other", "--type", "test.Anything", R"({"foo": 1})", "--wait", "0"}).exit_code == 0);
}

TEST_CASE("gecko pub and gecko echo refuse a --type the topic does not have", "[tools][process][pub][types]") {
    Key k;
    k.start_pub_imu();
    k.wait_for_list([](const std::string& out) { return has_topic_line(out, "imu", "gecko.msgs.Imu"); });

    const auto pub = k.gecko({"pub", "imu", "--type", "gecko.msgs.String", R"({"data": "x"})", "--wait", "0"});
    INFO(pub.out << pub.err);
    CHECK(pub.exit_code == 1);
    CHECK(contains(pub.err, "gecko.msgs.Imu"));
    CHECK(contains(pub.err, "gecko.msgs.String"));
    CHECK(contains(pub.err, "--force"));
    CHECK(contains(k.gecko({"pub", "--help"}).out, "--force"));

    const auto echo = k.gecko({"echo", "imu", "--type", "gecko.msgs.String"}, 10s);
    INFO(echo.err);
    CHECK(echo.exit_code == 1);
    CHECK(contains(echo.err, "gecko.msgs.Imu"));
    CHECK(contains(echo.err, "gecko.msgs.String"));

    const auto same = k.gecko({"echo", "imu", "--type", "gecko.msgs.Imu", "--count", "1", "--json"}, 10s);
    CHECK(same.exit_code == 0);
    CHECK(same.lines.size() == 1);
}

TEST_CASE("pub_imu --help prints the node options and exits 0, with or without a key", "[tools][process][examples]") {
    Key k;
    auto o = k.options();
    o.unset_env.push_back("GECKO_KEY");
    o.env.erase("GECKO_KEY");
    for (const auto& args : std::vector<std::vector<std::string>>{{"--help"}, {"-h"}, {"--key", k.key(), "--help"}}) {
        const auto r = finish(Process::spawn(PUB_IMU_PATH, args, o), 10s);
        INFO(r.out << r.err);
        CHECK(r.exit_code == 0);
        CHECK(contains(r.out, "publishes a simulated IMU reading"));
        CHECK(contains(r.out, "--key KEY"));
        CHECK(contains(r.out, "--core HOST[:PORT]"));
    }
}

TEST_CASE("gecko list shows the rate a publisher reports (node stats -> core -> list)", "[tools][process]") {
    Key k;
    k.start_pub_imu();  // 100 Hz; nodes report every ~3 s
    const std::regex rate(R"(^imu .* ([0-9.]+) Hz )");
    double hz = 0;
    const auto list = k.wait_for_list([&](const std::string& out) {
        std::istringstream in(out);
        std::smatch m;
        for (std::string line; std::getline(in, line);)
            if (std::regex_search(line, m, rate)) hz = std::stod(m[1]);
        return hz > 0;
    }, 15s);
    INFO(list);
    CHECK(hz > 20);  // a 100 Hz publisher: a number, not "-" or 0
    CHECK(hz < 200);
}
