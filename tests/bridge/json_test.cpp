// SPDX-License-Identifier: Apache-2.0
// A topic's json channel (bridge/src/json_schema.hpp, transcode.hpp): JSON
// Schema from declared fields, inferred when none were, and the JSON of a
// message, bytes as base64, images in Foxglove's RawImage shape.
#include <catch2/catch.hpp>

#include "json_schema.hpp"
#include "transcode.hpp"

#include <gecko/codec.hpp>
#include <gecko/msgs/sensors.hpp>
#include <gecko/wire/schema_of.hpp>

#include <gecko/wire/reader.hpp>

#include <nlohmann/json.hpp>

#include <cmath>
#include <limits>

#include "support/msgpack_writer.hpp"

using namespace gecko::bridge;
using Json = nlohmann::json;

namespace {
template <class T>
std::vector<std::uint8_t> packed(const T& message) {
    gecko::Buffer b;
    gecko::codec::encode(b, message);
    return std::vector<std::uint8_t>(b.data(), b.data() + b.size());
}
std::string json_of(const std::vector<std::uint8_t>& bytes, JsonShape shape = JsonShape::plain) {
    std::string out;
    append_message_json(out, bytes.data(), bytes.size(), shape);
    return out;
}
}  // namespace

TEST_CASE("an Imu's JSON Schema: an object of its declared fields, nested types inlined", "[bridge][json]") {
    const auto schema = gecko::wire::schema_of<gecko::msgs::Imu>();
    const auto j = Json::parse(json_schema_of(schema, "gecko.msgs.Imu"));
    CHECK(j["type"] == "object");
    CHECK(j["title"] == "gecko.msgs.Imu");
    CHECK(j["properties"]["stamp_ns"]["type"] == "integer");
    CHECK(j["properties"]["frame_id"]["type"] == "string");
    CHECK(j["properties"]["accel"]["properties"]["x"]["type"] == "number");
    CHECK(j["properties"]["orientation"]["properties"]["w"]["type"] == "number");
    CHECK(Json::parse(json_schema_of(schema, "no.such.Type"))["type"] == "object");
}

TEST_CASE("an Image is advertised as foxglove.RawImage: bytes as base64, with a timestamp", "[bridge][json]") {
    const auto schema = gecko::wire::schema_of<gecko::msgs::Image>();
    const auto shape = shape_of(*schema.find("gecko.msgs.Image"));
    CHECK(shape == JsonShape::raw_image);
    CHECK(schema_name_of("gecko.msgs.Image", shape) == "foxglove.RawImage");
    const auto j = Json::parse(json_schema_of(schema, "gecko.msgs.Image", shape));
    CHECK(j["properties"]["data"]["contentEncoding"] == "base64");
    CHECK(j["properties"]["timestamp"]["properties"]["nsec"]["type"] == "integer");

    gecko::msgs::Image image;
    image.stamp_ns = 1'500'000'123;
    image.width = 2;
    image.height = 1;
    image.encoding = "rgb8";
    image.step = 6;
    image.data = {1, 2, 3, 4, 5, 6};
    const auto m = Json::parse(json_of(packed(image), shape));
    CHECK(m["data"] == "AQIDBAUG");
    CHECK(m["timestamp"]["sec"] == 1);
    CHECK(m["timestamp"]["nsec"] == 500000123);
    CHECK(m["width"] == 2);
}

TEST_CASE("a message's JSON: integers exact, NaN as null, floats read back", "[bridge][json]") {
    gecko::msgs::Imu imu;
    imu.stamp_ns = 9007199254740993;  // not a double
    imu.accel.x = std::nan("");
    imu.accel.z = 9.81;
    const auto text = json_of(packed(imu));
    CHECK(text.find("9007199254740993") != std::string::npos);
    const auto j = Json::parse(text);
    CHECK(j["accel"]["x"].is_null());
    CHECK(j["accel"]["z"] == 9.81);
}

TEST_CASE("a message's JSON: every msgpack type, and what only the checked reading writes", "[bridge][json]") {
    gecko::test::MsgpackWriter w;
    w.map(9);
    w.string("nil"); w.nil();
    w.string("yes"); w.boolean(true);
    w.string("neg"); w.integer(-5);
    w.string("max"); w.unsigned_integer(std::numeric_limits<std::uint64_t>::max());
    w.string("f32"); w.float32(0.1f);
    w.string("inf"); w.float64(HUGE_VAL);
    w.string("bin"); w.binary(reinterpret_cast<const std::uint8_t*>("\x01\x02\x03"), 3);
    w.string("list"); w.array(2); w.string("a\"b"); w.map(0);
    w.string("deep"); w.map(1); w.string("x"); w.array(1); w.float64(2.5);
    CHECK(json_of(w.bytes()) == R"({"nil":null,"yes":true,"neg":-5,"max":18446744073709551615,"f32":0.1,"inf":null,)"
                                R"("bin":"AQID","list":["a\"b",{}],"deep":{"x":[2.5]}})");

    gecko::test::MsgpackWriter keyed;  // a key that is not a str
    keyed.map(1); keyed.integer(7); keyed.string("seven");
    CHECK(json_of(keyed.bytes()) == R"({"7":"seven"})");

    gecko::test::MsgpackWriter twice;  // refused, as a typed subscriber refuses it
    twice.map(2); twice.string("a"); twice.integer(1); twice.string("a"); twice.integer(2);
    std::string out = "kept";
    const auto bytes = twice.bytes();
    CHECK_THROWS_AS(append_message_json(out, bytes.data(), bytes.size(), JsonShape::plain),
                    gecko::wire::DecodeError);
    CHECK(out == "kept");

    gecko::test::MsgpackWriter many;  // more fields than are compared pairwise, one of them twice
    many.map(40);
    for (int i = 0; i < 40; ++i) {
        many.string("f" + std::to_string(i == 39 ? 3 : i));
        many.integer(i);
    }
    CHECK_THROWS_AS(json_of(many.bytes()), gecko::wire::DecodeError);

    gecko::test::MsgpackWriter cut;  // cut short
    cut.map(2); cut.string("a"); cut.integer(1);
    CHECK_THROWS_AS(json_of(cut.bytes()), gecko::wire::DecodeError);

    gecko::test::MsgpackWriter empty;  // an image shape's timestamp goes in an empty map too
    empty.map(0);
    CHECK(json_of(empty.bytes(), JsonShape::raw_image) == R"({"timestamp":{"sec":0,"nsec":0}})");
}

// Two versions of a type a publisher never declared: the second has a field more.
struct InferredA {
    static constexpr const char* type_name = "t.A";
    double x = 1;
    GECKO_MSG_FIELDS(x)
};
struct InferredB {
    static constexpr const char* type_name = "t.B";
    double x = 1;
    std::vector<std::uint8_t> blob{1, 2};
    GECKO_MSG_FIELDS(x, blob)
};

TEST_CASE("a schema inferred from messages grows as fields appear", "[bridge][json]") {
    SchemaInference inference;
    CHECK(Json::parse(inference.json()) == Json{{"type", "object"}});
    const auto a = packed(InferredA{});
    const auto b = packed(InferredB{});
    CHECK(inference.observe(gecko::wire::Value::parse(a.data(), a.size())));
    CHECK_FALSE(inference.observe(gecko::wire::Value::parse(a.data(), a.size())));
    CHECK(inference.observe(gecko::wire::Value::parse(b.data(), b.size())));
    const auto j = Json::parse(inference.json());
    CHECK(j["properties"]["x"]["type"] == "number");
    CHECK(j["properties"]["blob"]["contentEncoding"] == "base64");
}
