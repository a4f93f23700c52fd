// SPDX-License-Identifier: Apache-2.0
// gecko type NAME (and the fields gecko info shows): a gecko.msgs type's
// fields from the tool itself, another type's inferred from a live topic.
#include <catch2/catch.hpp>

#include <string>

#include "key_fixture.hpp"

using namespace gecko::tools_test;

TEST_CASE("gecko type prints a gecko.msgs type's fields, nested types expanded, without a core", "[tools][process][type]") {
    Key k;
    const auto imu = k.gecko({"type", "gecko.msgs.Imu"});
    INFO(imu.out << imu.err);
    CHECK(imu.exit_code == 0);
    REQUIRE(imu.lines.size() == 20);
    CHECK(imu.lines[0] == "gecko.msgs.Imu");
    CHECK(imu.lines[1] == "  stamp_ns     int64");
    CHECK(imu.lines[3] == "  accel        gecko.msgs.Vector3");
    CHECK(imu.lines[4] == "    x          float64");
    CHECK(imu.lines[15] == "  orientation  gecko.msgs.Quaternion");
    CHECK(imu.lines[16] == "    w          float64");

    const auto list = k.gecko({"type", "--list"});
    CHECK(list.exit_code == 0);
    CHECK(contains(list.out, "gecko.msgs.JointState\n"));
    CHECK(contains(list.out, "gecko.msgs.click.Sensor\n"));

    const auto typo = k.gecko({"type", "gecko.msgs.imu"});
    CHECK(typo.exit_code == 1);  // the key's core was asked: nobody sends it
    CHECK(contains(typo.err, "did you mean 'gecko.msgs.Imu'?"));
    CHECK(k.gecko({"type"}).exit_code == 2);
}

TEST_CASE("gecko type infers an unknown type's fields from a message of a live topic", "[tools][process][type]") {
    Key k;
    k.start_pub_imu();
    k.start_gecko_background({"pub", "numbers", "--type", "test.Numbers", "--rate", "20",
                              R"({"i": -3, "f": 0.5, "list": [1, 2.5], "nested": {"s": "x", "raw": {"$bin": "AQI="}}})"});
    k.wait_for_list([](const std::string& out) { return imu_listed(out) && has_topic_line(out, "numbers", "test.Numbers"); });

    const auto inferred = k.gecko({"type", "test.Numbers"});
    INFO(inferred.out << inferred.err);
    CHECK(inferred.exit_code == 0);
    CHECK(contains(inferred.out, "test.Numbers (inferred from one message on topic 'numbers'"));
    CHECK(contains(inferred.out, "\n  i       int\n"));
    CHECK(contains(inferred.out, "\n  f       float64\n"));
    CHECK(contains(inferred.out, "\n  list    float64[]\n"));
    CHECK(contains(inferred.out, "\n  nested  map\n    s     string\n    raw   bytes\n"));

    // A topic name shows its type.
    const auto by_topic = k.gecko({"type", "imu"});
    CHECK(by_topic.exit_code == 0);
    CHECK(contains(by_topic.out, "gecko.msgs.Imu (the type of topic 'imu')\n  stamp_ns"));

    const auto nobody = k.gecko({"type", "test.Nobody"});
    CHECK(nobody.exit_code == 1);
    CHECK(contains(nobody.err, "no publisher under key '" + k.key() + "' sends it"));

    // gecko info shows the topic type's fields, or how to learn them.
    const auto info = k.gecko({"info", "imu"});
    INFO(info.out);
    CHECK(info.exit_code == 0);
    CHECK(contains(info.out, "type: gecko.msgs.Imu\nfields:\n  stamp_ns     int64\n"));
    CHECK(contains(info.out, "\n  orientation  gecko.msgs.Quaternion\n"));
    const auto info_numbers = k.gecko({"info", "numbers"});
    CHECK(contains(info_numbers.out, "fields: test.Numbers is not a gecko.msgs type and its publisher declared no schema; `gecko type test.Numbers` infers them"));
}
