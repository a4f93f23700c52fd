// SPDX-License-Identifier: Apache-2.0
// gecko/wire/json_schema.hpp: the JSON Schema of a type, and the JSON that
// append_json writes for a browser conforming to it.
#include <catch2/catch.hpp>

#include <gecko/msgs/all.hpp>
#include <gecko/msgs/click.hpp>
#include <gecko/wire/codec.hpp>
#include <gecko/wire/json.hpp>
#include <gecko/wire/json_schema.hpp>
#include <gecko/wire/schema_of.hpp>

#include <nlohmann/json.hpp>

#include <string>

using Json = nlohmann::json;
namespace msgs = gecko::msgs;
namespace wire = gecko::wire;

namespace {

template <class M>
Json schema_json() {
    return Json::parse(wire::json_schema_of(wire::schema_of<M>(), M::type_name));
}

template <class M>
Json browser_json(const M& message) {
    gecko::Buffer b;
    wire::encode(b, message);
    std::string out;
    wire::JsonOptions options;
    options.bin_as_base64_string = true;
    wire::append_json(out, wire::Value::parse(b.data(), b.size()), options);
    return Json::parse(out);
}

// Empty when `value` has the types `schema` gives it, recursively; else where it does not.
std::string mismatch(const Json& schema, const Json& value, const std::string& path = "") {
    if (schema.contains("anyOf")) {
        for (const auto& s : schema["anyOf"])
            if (mismatch(s, value, path).empty()) return "";
        return path + ": none of anyOf";
    }
    if (schema.contains("enum")) {
        bool listed = false;
        for (const auto& e : schema["enum"]) listed = listed || e == value;
        if (!listed) return path + ": not one of enum";
    }
    if (!schema.contains("type")) return "";
    auto is = [&](const std::string& t) {
        if (t == "object") return value.is_object();
        if (t == "array") return value.is_array();
        if (t == "string") return value.is_string();
        if (t == "integer") return value.is_number_integer();
        if (t == "number") return value.is_number();
        if (t == "boolean") return value.is_boolean();
        if (t == "null") return value.is_null();
        return false;
    };
    bool ok = false;
    if (schema["type"].is_array())
        for (const auto& t : schema["type"]) ok = ok || is(t.get<std::string>());
    else
        ok = is(schema["type"].get<std::string>());
    if (!ok) return path + ": is " + value.type_name() + ", the schema says " + schema["type"].dump();
    if (value.is_object() && schema.contains("properties"))
        for (const auto& [name, s] : schema["properties"].items())
            if (value.contains(name))
                if (auto why = mismatch(s, value[name], path + "." + name); !why.empty()) return why;
    if (value.is_array() && schema.contains("items"))
        for (std::size_t i = 0; i < value.size(); ++i)
            if (auto why = mismatch(schema["items"], value[i], path + "[" + std::to_string(i) + "]"); !why.empty()) return why;
    return "";
}

}  // namespace

TEST_CASE("a type's JSON Schema: objects with titles, integer ranges, numbers, bytes as base64", "[wire][json][schema]") {
    const Json imu = schema_json<msgs::Imu>();
    CHECK(imu["type"] == "object");
    CHECK(imu["title"] == "gecko.msgs.Imu");
    CHECK(imu["properties"]["stamp_ns"]["type"] == "integer");
    CHECK(imu["properties"]["frame_id"]["type"] == "string");
    CHECK(imu["properties"]["accel"]["title"] == "gecko.msgs.Vector3");
    CHECK(imu["properties"]["accel"]["properties"]["x"]["type"] == "number");

    const Json image = schema_json<msgs::Image>();
    CHECK(image["properties"]["width"]["minimum"] == 0);
    CHECK(image["properties"]["width"]["maximum"] == 4294967295.0);
    CHECK(image["properties"]["data"].dump().find("base64") != std::string::npos);

    const Json js = schema_json<msgs::JointState>();
    CHECK(js["properties"]["names"]["type"] == "array");
    CHECK(js["properties"]["names"]["items"]["type"] == "string");

    // A type the schema does not hold: any object, named.
    CHECK(Json::parse(wire::json_schema_of(wire::Schema{}, "my.Unknown")) == Json{{"type", "object"}, {"title", "my.Unknown"}});
}

TEST_CASE("the JSON a message gives for a browser conforms to its type's JSON Schema", "[wire][json][schema]") {
    msgs::Image image;
    image.width = 2;
    image.height = 1;
    image.encoding = "mono8";
    image.step = 2;
    image.data = {0x00, 0xff};
    const Json image_json = browser_json(image);
    CHECK(image_json["data"] == "AP8=");  // a bare base64 string, not {"$bin": ...}
    CHECK(mismatch(schema_json<msgs::Image>(), image_json) == "");

    msgs::Imu imu;
    imu.accel = {0.5, -1.0, 9.81};
    CHECK(mismatch(schema_json<msgs::Imu>(), browser_json(imu)) == "");

    msgs::JointState js;
    js.names = {"hip", "knee"};
    js.position = {0.1, 0.2};
    CHECK(mismatch(schema_json<msgs::JointState>(), browser_json(js)) == "");

    msgs::click::Handshake hs;
    hs.control_type = msgs::click::ValueType::torque_1d;
    const Json hs_json = browser_json(hs);
    CHECK(hs_json["control_type"] == "Torque1D");  // enums travel by name
    CHECK(mismatch(schema_json<msgs::click::Handshake>(), hs_json) == "");
}
