// SPDX-License-Identifier: Apache-2.0
// The `gecko` tool's argument parser and table formatting.
#include <catch2/catch.hpp>

#include <cstdio>
#include <string>
#include <vector>

#include "cli.hpp"
#include "commands.hpp"
#include "format.hpp"

using gecko::tools::Connection;
using gecko::tools::Parser;
using gecko::tools::UsageError;

TEST_CASE("the parser reads flags, options, positionals and connection options", "[cli]") {
    Connection connection;
    std::string topic, type;
    long count = 0;
    double rate = 0;
    bool json = false;
    Parser parser("echo", "TOPIC", "test");
    parser.positional("TOPIC", "topic", topic)
        .option("--count", "N", "count", count, 1, 100)
        .option("--rate", "HZ", "rate", rate, 0.5, 1000)
        .option("--type", "NAME", "type", type)
        .flag("--json", "json", json)
        .connection(connection);
    REQUIRE(parser.parse({"imu", "--count=5", "--rate", "2.5", "--json", "--key", "dalek", "--core", "10.0.0.2:7651",
                          "--no-multicast", "--timeout", "500ms", "--type", "gecko.msgs.Imu"}));
    CHECK(topic == "imu");
    CHECK(count == 5);
    CHECK(rate == 2.5);
    CHECK(json);
    CHECK(type == "gecko.msgs.Imu");
    CHECK(connection.node.key == "dalek");
    CHECK(connection.node.core == "10.0.0.2:7651");
    CHECK_FALSE(connection.node.multicast_enabled);
    CHECK(connection.timeout == std::chrono::milliseconds(500));
}

TEST_CASE("the parser refuses what it cannot act on", "[cli]") {
    auto parse = [](std::vector<std::string> args) {
        Connection connection;
        connection.node.key = "k";
        std::string topic;
        long count = 0;
        Parser parser("echo", "TOPIC", "test");
        parser.positional("TOPIC", "topic", topic).option("--count", "N", "count", count, 1, 100).connection(connection);
        return parser.parse(args);
    };
    CHECK_THROWS_AS(parse({"imu", "--bogus"}), UsageError);
    CHECK_THROWS_AS(parse({}), UsageError);                         // missing TOPIC
    CHECK_THROWS_AS(parse({"imu", "extra"}), UsageError);           // one positional too many
    CHECK_THROWS_AS(parse({"imu", "--count"}), UsageError);         // missing value
    CHECK_THROWS_AS(parse({"imu", "--count", "0"}), UsageError);    // out of range
    CHECK_THROWS_AS(parse({"imu", "--count", "5x"}), UsageError);   // not a number
    CHECK_THROWS_AS(parse({"imu", "--timeout", "soon"}), UsageError);
    CHECK_THROWS_AS(parse({"imu", "--no-multicast=1"}), UsageError);  // a flag takes no value
    CHECK(parse({"--", "-imu"}));                                   // after --, everything is positional
    CHECK(parse({"-5"}));                                           // a negative number is not an option

    Connection no_key;
    no_key.node.key.clear();
    std::string topic;
    Parser needs_key("list", "", "test");
    needs_key.positional("TOPIC", "topic", topic).connection(no_key);
    try {
        needs_key.parse({"imu"});
        FAIL("parsed without a key");
    } catch (const UsageError& e) {
        CHECK_THAT(e.what(), Catch::Contains("GECKO_KEY"));
    }
}

TEST_CASE("a command's --help lists every option", "[cli]") {
    Connection connection;
    bool once = false;
    Parser parser("top", "[options]", "Live view.");
    parser.flag("--once", "print one frame", once).connection(connection);
    const std::string help = parser.help();
    for (const char* needle : {"usage: gecko top", "--once", "--key KEY", "--core HOST[:PORT]", "--no-multicast", "Exit codes"})
        CHECK_THAT(help, Catch::Contains(needle));
}

TEST_CASE("durations take a unit or seconds", "[cli]") {
    using gecko::tools::parse_duration;
    CHECK(parse_duration("2", "d") == std::chrono::milliseconds(2000));
    CHECK(parse_duration("1.5s", "d") == std::chrono::milliseconds(1500));
    CHECK(parse_duration("250ms", "d") == std::chrono::milliseconds(250));
    CHECK(parse_duration("1m", "d") == std::chrono::milliseconds(60000));
    CHECK_THROWS_AS(parse_duration("", "d"), UsageError);
    CHECK_THROWS_AS(parse_duration("-1", "d"), UsageError);
    CHECK_THROWS_AS(parse_duration("3h", "d"), UsageError);
}

TEST_CASE("tables align columns, counting UTF-8 characters", "[cli]") {
    gecko::tools::Table t({"TOPIC", "RATE"});
    t.add({"imu", "100 Hz"});
    t.add({"caméra", "30.0 Hz"});
    CHECK(t.render() ==
          "TOPIC   RATE\n"
          "imu     100 Hz\n"
          "caméra  30.0 Hz\n");
    CHECK(gecko::tools::format_hz(99.96) == "100 Hz");
    CHECK(gecko::tools::format_hz(-1) == "-");
    CHECK(gecko::tools::format_bytes(512) == "512 B");
    CHECK(gecko::tools::format_bytes(21094) == "20.6 KiB");
    CHECK(gecko::tools::format_ns(183000) == "183 µs");
    CHECK(gecko::tools::format_ns(-1) == "-");
}

TEST_CASE("gecko list shows the core's counters that mean trouble, and only those", "[cli]") {
    gecko::Graph r;
    CHECK(gecko::tools::render_list(r).find("geckocore counters") == std::string::npos);
    r.counters["duplicate_cores"] = 3;
    r.counters["leases_expired"] = 2;  // normal life: not shown
    const std::string out = gecko::tools::render_list(r);
    CHECK(out.find("3 announcements from another geckocore for this key") != std::string::npos);
    CHECK(out.find("leases") == std::string::npos);
}
