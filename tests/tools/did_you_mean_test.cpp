// SPDX-License-Identifier: Apache-2.0
// A mistyped topic, service or command gets a "did you mean"; echo, hz and bw
// still wait for the topic they were given, info and call exit 1.
#include <catch2/catch.hpp>

#include <signal.h>

#include <string>

#include "key_fixture.hpp"

using namespace gecko::tools_test;

TEST_CASE("gecko echo imuu and hz /imu suggest imu and still wait for their topic", "[tools][process][suggest]") {
    Key k;
    k.start_pub_imu();
    k.wait_for_list(imu_listed);

    auto echo = k.start_gecko({"echo", "imuu", "--count", "1", "--json"});
    const auto said = echo.err().wait_for("did you mean", 10s);
    REQUIRE(said);
    CHECK(*said == "gecko echo: no topic 'imuu' under key '" + k.key() + "'; did you mean 'imu'? waiting for it (Ctrl-C to stop)");
    // It waits for 'imuu' itself: a publisher of it appears, and echo prints and exits.
    k.start_gecko_background({"pub", "imuu", "--type", "gecko.msgs.Float64", "--rate", "20", R"({"data": 2.5})"});
    const auto got = finish(std::move(echo), 15s);
    INFO(got.out << got.err);
    CHECK(got.exit_code == 0);
    CHECK(got.out == "{\"data\":2.5}\n");

    auto hz = k.start_gecko({"hz", "/imu"});
    const auto hz_said = hz.err().wait_for("did you mean", 10s);
    REQUIRE(hz_said);
    CHECK(contains(*hz_said, "no topic '/imu' under key '" + k.key() + "'; did you mean 'imu'?"));
    CHECK(hz.running());
    hz.kill(SIGTERM);
    CHECK(finish(std::move(hz), 20s).exit_code == 0);
}

TEST_CASE("gecko info and gecko call suggest the name and exit 1, an unknown command exits 2", "[tools][process][suggest]") {
    Key k;
    k.start_pub_imu();
    k.start_background(ADD_SERVER_PATH);
    k.wait_for_list([](const std::string& out) { return imu_listed(out) && contains(out, "adder@"); });

    const auto info = k.gecko({"info", "imuu"});
    CHECK(info.exit_code == 1);
    CHECK(contains(info.err, "no topic or service 'imuu' under key '" + k.key() + "'; did you mean 'imu'?"));
    const auto slash = k.gecko({"info", "/imu"});
    CHECK(contains(slash.err, "did you mean 'imu'?"));
    const auto call = k.gecko({"call", "ad"});
    CHECK(call.exit_code == 1);
    CHECK(contains(call.err, "no service 'ad' under key '" + k.key() + "'; did you mean 'add'?"));
    const auto nothing_close = k.gecko({"info", "camera"});
    CHECK(nothing_close.exit_code == 1);
    CHECK(!contains(nothing_close.err, "did you mean"));
    CHECK(contains(nothing_close.err, "known: imu"));

    const auto command = k.gecko({"lsit"});
    CHECK(command.exit_code == 2);
    CHECK(contains(command.err, "unknown command 'lsit'; did you mean 'list'?"));
}
