// SPDX-License-Identifier: Apache-2.0
// gecko echo as a tool: it subscribes to any type (announced as `*`), prints
// one field with --field, and says once about frames that break their type
// or lack the field, counting the rest.
#include <catch2/catch.hpp>

#include <regex>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "key_fixture.hpp"

using namespace gecko::tools_test;

TEST_CASE("gecko echo --field prints one field: a nested one, an item, a map", "[tools][process][echo]") {
    Key k;
    k.start_pub_imu();
    k.wait_for_list(imu_listed);

    const auto z = k.gecko({"echo", "imu", "--field", "accel.z", "--count", "2", "--json"});
    INFO(z.out << z.err);
    CHECK(z.exit_code == 0);
    REQUIRE(z.lines.size() == 2);
    CHECK(z.lines[0] == "9.81");

    const auto text = k.gecko({"echo", "imu", "--field", "accel.z", "--count", "1"});
    CHECK(text.exit_code == 0);
    REQUIRE(text.lines.size() == 2);
    CHECK(text.lines[0].rfind("--- imu #", 0) == 0);
    CHECK(text.lines[1] == "accel.z: 9.81");

    const auto map = k.gecko({"echo", "imu", "--field", "orientation", "--count", "1", "--json"});
    REQUIRE(map.lines.size() == 1);
    CHECK(nlohmann::json::parse(map.lines[0]) == nlohmann::json::parse(R"({"w": 1.0, "x": 0.0, "y": 0.0, "z": 0.0})"));

    // A path gecko.msgs.Imu can never have: a usage error before subscribing, naming the fields.
    const auto wrong = k.gecko({"echo", "imu", "--field", "accel.q"});
    CHECK(wrong.exit_code == 2);
    CHECK(contains(wrong.err, "'accel' (gecko.msgs.Vector3) has no field 'q'; its fields are: x, y, z"));
}

TEST_CASE("gecko echo --field on an unknown type: an item by index, and a missing field said once", "[tools][process][echo]") {
    Key k;
    // Two publishers of one topic: one sends the field, the other does not.
    k.start_gecko_background({"pub", "numbers", "--type", "test.Numbers", "--rate", "50", R"({"list": [1.5, 2.5, 3.5]})"});
    k.start_gecko_background({"pub", "numbers", "--type", "test.Numbers", "--rate", "50", R"({"other": 1})"});
    k.wait_for_list([](const std::string& out) {
        return has_topic_line(out, "numbers", "test.Numbers") && count_of(out, "gecko_pub@") >= 2;
    });

    const auto got = k.gecko({"echo", "numbers", "--field", "list.1", "--count", "20", "--json"});
    INFO(got.out << got.err);
    CHECK(got.exit_code == 1);  // some messages could not be shown
    REQUIRE(got.lines.size() == 20);
    for (const auto& line : got.lines) CHECK(line == "2.5");
    CHECK(count_of(got.err, "has no field 'list.1'") == 1);  // said once...
    CHECK(contains(got.err, "the message has no field 'list'; its fields are: other"));
    std::smatch m;  // ...and counted
    REQUIRE(std::regex_search(got.err, m, std::regex(R"(([0-9]+) messages? of 'numbers' not shown: they had no field 'list.1')")));
    CHECK(std::stoi(m[1]) >= 2);
}

TEST_CASE("gecko echo reads every type on a topic, and says once about frames that break their type", "[tools][process][echo]") {
    Key k;
    // Two publishers of one topic: well-formed Float64, and Float64 frames whose field is a string.
    // (--force on each: started together, any of them may find the others' types on the topic first.)
    k.start_gecko_background({"pub", "mixed", "--type", "gecko.msgs.Float64", "--force", "--rate", "50", R"({"data": 1.5})"});
    k.start_gecko_background({"pub", "mixed", "--type", "gecko.msgs.Float64", "--force", "--rate", "50", R"({"data": "text"})"});
    // A third of another type, and one that is not a map at all.
    k.start_gecko_background({"pub", "mixed", "--type", "gecko.msgs.String", "--force", "--rate", "50", R"({"data": "s"})"});
    k.start_gecko_background({"pub", "mixed", "--type", "test.Raw", "--force", "--rate", "50", "[1, 2, 3]"});
    k.wait_for_list([](const std::string& out) { return count_of(out, "gecko_pub@") >= 4; });

    const auto got = k.gecko({"echo", "mixed", "--count", "40", "--json", "--with-info"});
    INFO(got.err);
    CHECK(got.exit_code == 1);  // some frames were not shown
    std::set<std::string> types;
    for (const auto& line : got.lines) {
        const auto j = nlohmann::json::parse(line);
        types.insert(j.at("type").get<std::string>());
        CHECK(j.at("message").is_object());
        if (j.at("type") == "gecko.msgs.Float64") CHECK(j.at("message").at("data") == 1.5);
    }
    CHECK(got.lines.size() == 40);
    CHECK(types == std::set<std::string>{"gecko.msgs.Float64", "gecko.msgs.String"});  // typeless: both
    CHECK(count_of(got.err, "breaks its type") == 1);
    CHECK(contains(got.err, "messages of 'mixed' not shown: they broke their type's schema"));
    const bool said = contains(got.err, "gecko.msgs.Float64: field 'data'") ||
                      contains(got.err, "not a msgpack map (a message) but a msgpack array");
    CHECK(said);
}
