// SPDX-License-Identifier: Apache-2.0
// The tool on the key's channel directory: `gecko echo` of a glob (a key-wide
// subscription), and the key's own types, whose schemas their publishers and
// servers declared, shown and checked as the gecko.msgs types are.
#include <catch2/catch.hpp>

#include <set>
#include <string>

#include <gecko/node.hpp>

#include <nlohmann/json.hpp>

#include "key_fixture.hpp"

using namespace gecko::tools_test;

namespace test_types {
// A custom message a node of the key publishes: its fields reach the directory.
struct Speed {
    static constexpr const char* type_name = "test.Speed";
    double linear = 0, angular = 0;
    GECKO_MSG_FIELDS(linear, angular)
};
}  // namespace test_types

TEST_CASE("gecko echo of a glob prints every topic it matches, each message under its topic's name",
          "[tools][process][echo][key_wide]") {
    Key k;
    k.start_pub_imu();
    k.start_gecko_background({"pub", "numbers", "--type", "test.Numbers", "--rate", "50", R"({"i": 1})"});
    k.wait_for_list([](const std::string& out) { return imu_listed(out) && has_topic_line(out, "numbers", "test.Numbers"); });

    const auto all = k.gecko({"echo", "*", "--json", "--with-info", "--count", "100"});
    INFO(all.err);
    CHECK(all.exit_code == 0);
    REQUIRE(all.lines.size() == 100);
    std::set<std::string> topics;
    for (const auto& line : all.lines) {
        const auto j = nlohmann::json::parse(line);
        topics.insert(j.at("topic").get<std::string>());
        if (j.at("topic") == "numbers") {
            CHECK(j.at("type") == "test.Numbers");
            CHECK(j.at("message").at("i") == 1);
            CHECK(contains(j.at("publisher").get<std::string>(), "gecko_pub@"));
        } else {
            CHECK(j.at("type") == "gecko.msgs.Imu");
        }
    }
    CHECK(topics == std::set<std::string>{"imu", "numbers"});

    const auto some = k.gecko({"echo", "num*", "--count", "5"});
    INFO(some.err);
    CHECK(some.exit_code == 0);
    CHECK(count_of(some.out, "--- numbers #") == 5);
    CHECK(!contains(some.out, "--- imu"));
}

TEST_CASE("the key's own types are shown and checked as the gecko.msgs types are: a misspelt field is refused at once",
          "[tools][process][directory]") {
    Key k;
    gecko::Node robot(k.node_options("robot"));
    auto speed = robot.publisher<test_types::Speed>("speed");
    k.start_background(ADD_SERVER_PATH);
    k.wait_for_list([](const std::string& out) { return has_topic_line(out, "speed", "test.Speed") && contains(out, "adder@"); });

    const auto type = k.gecko({"type", "test.Speed"});
    INFO(type.out << type.err);
    CHECK(type.exit_code == 0);
    CHECK(contains(type.out, "test.Speed (as its publishers declared it)\n"));
    CHECK(contains(type.out, "  linear   float64\n  angular  float64\n"));

    const auto service = k.gecko({"type", "add"});
    INFO(service.out << service.err);
    CHECK(service.exit_code == 0);
    CHECK(contains(service.out, "examples.AddRequest (the request of service 'add')\n  a  float64\n  b  float64\n"));
    CHECK(contains(service.out, "examples.AddReply (the reply of service 'add')\n  sum  float64\n"));

    const auto pub = k.gecko({"pub", "speed", R"({"linaer": 0.2})"});
    CHECK(pub.exit_code == 2);
    CHECK(contains(pub.err, "test.Speed has no field 'linaer'; its fields are: linear, angular"));

    const auto call = k.gecko({"call", "add", R"({"aa": 1})"});
    CHECK(call.exit_code == 2);
    CHECK(contains(call.err, "examples.AddRequest has no field 'aa'; its fields are: a, b"));

    const auto field = k.gecko({"echo", "speed", "--field", "linaer", "--count", "1"});
    CHECK(field.exit_code == 2);  // at once: the topic's type says which fields exist
    CHECK(contains(field.err, "linaer"));
    CHECK(contains(field.err, "linear, angular"));

    const auto info = k.gecko({"info", "speed"});
    CHECK(contains(info.out, "fields:\n  linear   float64\n  angular  float64\n"));
}
