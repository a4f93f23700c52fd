// SPDX-License-Identifier: Apache-2.0
// What gecko type, gecko info and gecko echo --field know of a message's
// fields: the gecko.msgs types' shapes, shapes inferred from msgpack, field
// paths, and the checks of a payload against its type.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "cli.hpp"
#include "field_path.hpp"
#include "known_types.hpp"

#include <gecko/wire/json.hpp>
#include <gecko/wire/value.hpp>

using namespace gecko::tools;
using gecko::wire::json_to_msgpack;

namespace {
std::string find_in(const std::string& json, const std::string& path, std::string& why) {
    const auto bytes = json_to_msgpack(json);
    const auto value = find_field(gecko::wire::Value::parse(bytes.data(), bytes.size()), parse_field_path(path), why);
    return value ? gecko::wire::to_json(*value) : "";
}
}  // namespace

TEST_CASE("the gecko.msgs types are known field by field, nested types expanded", "[shape]") {
    const Shape* imu = known_shape("gecko.msgs.Imu");
    REQUIRE(imu);
    CHECK(imu->field_list() == "stamp_ns, frame_id, accel, gyro, mag, orientation");
    REQUIRE(imu->field("accel"));
    CHECK(imu->field("accel")->type == "gecko.msgs.Vector3");
    CHECK(imu->field("stamp_ns")->type == "int64");
    CHECK(imu->field("frame_id")->type == "string");
    const std::string text = render_fields(*imu);
    CHECK_THAT(text, Catch::StartsWith("  stamp_ns     int64\n  frame_id     string\n  accel        gecko.msgs.Vector3\n"
                                       "    x          float64\n"));
    CHECK_THAT(text, Catch::Contains("  orientation  gecko.msgs.Quaternion\n    w          float64\n"));

    const Shape* joints = known_shape("gecko.msgs.JointState");
    REQUIRE(joints);
    CHECK(joints->field("position")->type == "float64[]");
    CHECK(joints->field("names")->type == "string[]");
    CHECK(known_shape("gecko.msgs.Image")->field("data")->type == "bytes");
    CHECK(known_shape("gecko.msgs.Image")->field("width")->type == "uint32");
    const Shape* sensor = known_shape("gecko.msgs.click.Sensor");
    REQUIRE(sensor);
    CHECK(sensor->field("objects")->type == "map<string, gecko.msgs.click.SensorObject>");
    CHECK(sensor->field("simulated_time")->type == "float64 or nil");
    CHECK_THAT(render_fields(*sensor), Catch::Contains("    force_sensors             float64[3][]\n"));

    CHECK(known_shape("examples.AddRequest") == nullptr);
    const auto names = known_type_names();
    CHECK(std::find(names.begin(), names.end(), "gecko.msgs.click.Control") != names.end());
    CHECK(names.size() == 26);
    CHECK(known_shape("gecko.msgs.sim.Status")->field("state")->type == "string (running, paused, resetting or over)");
}

TEST_CASE("a shape inferred from one message: maps are messages, arrays take their items' type", "[shape]") {
    const auto bytes = json_to_msgpack(R"({"i": -3, "f": 0.5, "s": "x", "list": [1, 2.5], "mixed": [1, "a"],
                                           "empty": [], "nested": {"b": true, "raw": {"$bin": "AQI="}}})");
    const Shape s = infer_shape(gecko::wire::Value::parse(bytes.data(), bytes.size()));
    CHECK(s.kind == Shape::Kind::message);
    CHECK(s.field("i")->type == "int");
    CHECK(s.field("f")->type == "float64");
    CHECK(s.field("s")->type == "string");
    CHECK(s.field("list")->type == "float64[]");  // 1 is 1.0 written compactly
    CHECK(s.field("mixed")->type == "array (mixed items)");
    CHECK(s.field("empty")->type == "array (empty: item type unknown)");
    CHECK(s.field("nested")->type == "map");
    CHECK_THAT(render_fields(s), Catch::Contains("  nested  map\n    b     bool\n    raw   bytes\n"));
}

TEST_CASE("field paths: dotted names and item indices", "[shape]") {
    CHECK(parse_field_path("accel.x") == std::vector<std::string>{"accel", "x"});
    CHECK(parse_field_path("position.0") == std::vector<std::string>{"position", "0"});
    CHECK(parse_field_path("position[2]") == std::vector<std::string>{"position", "2"});
    CHECK_THROWS_AS(parse_field_path(""), UsageError);
    CHECK_THROWS_AS(parse_field_path("accel..x"), UsageError);

    std::string why;
    const std::string msg = R"({"accel": {"x": 1.5, "y": 0}, "position": [0.1, 0.2], "name": "arm"})";
    CHECK(find_in(msg, "accel.x", why) == "1.5");
    CHECK(find_in(msg, "accel", why) == R"({"x":1.5,"y":0})");
    CHECK(find_in(msg, "position.1", why) == "0.2");
    CHECK(find_in(msg, "accel.q", why).empty());
    CHECK(why == "'accel' has no field 'q'; its fields are: x, y");
    CHECK(find_in(msg, "acel.x", why).empty());
    CHECK(why == "the message has no field 'acel'; its fields are: accel, position, name");
    CHECK(find_in(msg, "position.2", why).empty());
    CHECK(why == "'position' has 2 items: there is no item 2");
    CHECK(find_in(msg, "position.x", why).empty());
    CHECK_THAT(why, Catch::Contains("not an index"));
    CHECK(find_in(msg, "name.first", why).empty());
    CHECK_THAT(why, Catch::Contains("'name' is a msgpack str, not a map"));

    // Against a known type, before any message: what can never exist.
    const Shape& imu = *known_shape("gecko.msgs.Imu");
    CHECK(check_path(imu, {"accel", "x"}).empty());
    CHECK(check_path(imu, {"accel", "q"}) == "'accel' (gecko.msgs.Vector3) has no field 'q'; its fields are: x, y, z");
    CHECK(check_path(imu, {"acel"}) == "gecko.msgs.Imu has no field 'acel'; its fields are: stamp_ns, frame_id, accel, gyro, mag, orientation");
    CHECK_THAT(check_path(imu, {"stamp_ns", "x"}), Catch::Contains("is of type int64"));
    const Shape& joints = *known_shape("gecko.msgs.JointState");
    CHECK(check_path(joints, {"position", "0"}).empty());
    CHECK_THAT(check_path(joints, {"position", "first"}), Catch::Contains("not an index"));
    CHECK(check_path(*known_shape("gecko.msgs.click.Control"), {"objects", "robot1", "values", "0"}).empty());
}

TEST_CASE("a frame is checked against its declared type: a map, and decodable for a gecko.msgs type", "[shape]") {
    auto violation = [](const std::string& type, const std::string& json) {
        const auto bytes = json_to_msgpack(json);
        return schema_violation(type, bytes.data(), bytes.size());
    };
    CHECK(violation("gecko.msgs.Float64", R"({"data": 1.5})").empty());
    CHECK(violation("gecko.msgs.Float64", R"({"data": 1, "extra": "ignored"})").empty());  // schema evolution
    // The decoder's own words: "gecko.msgs.Float64: field 'data' has ... str ...".
    CHECK_THAT(violation("gecko.msgs.Float64", R"({"data": "text"})"),
               Catch::StartsWith("gecko.msgs.Float64: field 'data'") && Catch::Contains("str"));
    CHECK(violation("test.Anything", R"({"whatever": [1]})").empty());
    CHECK(violation("test.Anything", "[1, 2]") == "not a msgpack map (a message) but a msgpack array");

    // The check gecko pub and gecko call make of the user's JSON.
    CHECK_NOTHROW(check_known("gecko.msgs.Vector3", json_to_msgpack(R"({"x": 1})")));
    CHECK_THROWS_WITH(check_known("gecko.msgs.Vector3", json_to_msgpack(R"({"q": 1})")),
                      Catch::Contains("no field 'q'") && Catch::Contains("x, y, z"));
    CHECK_NOTHROW(check_known("test.Anything", json_to_msgpack(R"({"q": 1})")));
}
