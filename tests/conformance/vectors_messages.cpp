// SPDX-License-Identifier: Apache-2.0
// Golden vectors of gecko.msgs payloads and of the decoding rules (docs/PROTOCOL.md section 3),
// and the schemas of every message type.

#include "vectors_parts.hpp"

#include <gecko/buffer.hpp>
#include <gecko/msgs/all.hpp>
#include <gecko/msgs/click.hpp>
#include <gecko/msgs/sim.hpp>
#include <gecko/wire/announcement.hpp>
#include <gecko/wire/codec.hpp>
#include <gecko/wire/control.hpp>
#include <gecko/wire/frame.hpp>
#include <gecko/wire/hash.hpp>
#include <gecko/wire/schema_of.hpp>

#include <gecko/click/lockstep_msgs.hpp>

#include <cctype>
#include <cstdio>
#include <map>
#include <optional>
#include <stdexcept>
#include <tuple>
#include <type_traits>
#include <utility>

#include "add_types.hpp"

namespace gecko::conformance {
namespace {

// ---- gecko.msgs payloads -----------------------------------------------------------------------------

template <class T>
Vector message_vector(std::string name, std::string what, const T& message) {
    Vector v;
    v.file = "msgs/" + name + ".hex";
    v.name = "msgs." + std::move(name);
    v.what = std::move(what);
    v.bytes = encoded(message);
    v.fields["layer"] = "message payload (docs/PROTOCOL.md section 3)";
    v.fields["type_name"] = T::type_name;
    v.fields["type_hash"] = wire::type_hash(T::type_name);
    v.fields["type_hash_hex"] = hex_number(wire::type_hash(T::type_name));
    v.fields["map"] = msgpack_to_json(v.bytes.data(), v.bytes.size());
    return v;
}


// ---- decoding rules -----------------------------------------------------------------------------------
// Payloads a reader must accept or refuse (docs/PROTOCOL.md section 3), with
// what the C++ decoder makes of them: the decoded message re-encoded, or the
// error it gives. Built by hand, byte for byte.

using Packer = msgpack::packer<msgpack::sbuffer>;

template <class F>
Bytes raw(F&& build) {
    msgpack::sbuffer b;
    Packer pk(b);
    build(pk, b);
    return Bytes(reinterpret_cast<const std::uint8_t*>(b.data()), reinterpret_cast<const std::uint8_t*>(b.data()) + b.size());
}

void put_float32(msgpack::sbuffer& b, float v) {
    char buf[5];
    b.write(buf, wire::detail::store_float(buf, v));
}

void put_float64(msgpack::sbuffer& b, double v) {
    char buf[9];
    b.write(buf, wire::detail::store_float(buf, v));
}

template <class T>
Vector rule(std::string name, std::string what, bool accepted, Bytes bytes) {
    Vector v;
    v.file = "rules/" + name + ".hex";
    v.name = "rule." + std::move(name);
    v.what = std::move(what);
    v.bytes = std::move(bytes);
    v.fields["layer"] = "message payload decoding rule (docs/PROTOCOL.md section 3)";
    v.fields["type_name"] = T::type_name;
    try {
        const T decoded = wire::decode<T>(v.bytes.data(), v.bytes.size());
        const Bytes again = encoded(decoded);
        v.fields["accept"] = true;
        v.fields["value"] = msgpack_to_json(again.data(), again.size());
    } catch (const wire::DecodeError& e) {
        v.fields["accept"] = false;
        v.fields["error"] = e.what();
    }
    if (v.fields["accept"].get<bool>() != accepted)
        throw std::runtime_error(v.name + ": the decoder " + (accepted ? "refuses" : "accepts") + " it");
    return v;
}

// ---- schemas ------------------------------------------------------------------------------------------

// A type's entry: its schema as gecko::wire::schema_of<M>() makes it (the one
// a typed publisher declares), with its hash and default value.
template <class M>
Json schema_of() {
    Json j;
    j["type_name"] = M::type_name;
    j["type_hash"] = wire::type_hash(M::type_name);
    j["type_hash_hex"] = hex_number(wire::type_hash(M::type_name));
    j["fields"] = Json::parse(wire::schema_of<M>().to_json()).at("types").at(0).at("fields");
    const Bytes defaults = encoded(M{});
    j["default"] = msgpack_to_json(defaults.data(), defaults.size());
    return j;
}

template <class... M>
Json schemas_of() {
    Json out = Json::array();
    (out.push_back(schema_of<M>()), ...);
    return out;
}

}  // namespace

std::vector<Vector> message_vectors() {
    std::vector<Vector> out;
    msgs::Imu imu;
    imu.stamp_ns = send_time_ns;
    imu.frame_id = "imu_link";
    imu.accel = {0.125, -0.5, 9.8125};
    imu.gyro = {0.0, 0.25, -0.0};
    imu.mag = {2.5e-05, 0.0, -4.25e-05};
    imu.orientation = {1.0, 0.0, 0.0, 0.0};
    out.push_back(message_vector("imu", "gecko.msgs.Imu: every double is float64, even 0.0, 1.0 and -0.0", imu));

    msgs::JointState js;
    js.stamp_ns = 42;
    js.frame_id = "base";
    js.names = {"hip", "knee"};
    js.position = {0.5, -1.0};
    js.velocity = {};
    js.effort = {300.0, 0.001};
    out.push_back(message_vector("joint_state", "gecko.msgs.JointState: parallel arrays; an empty one is an empty array", js));

    msgs::Image image;
    image.stamp_ns = 99;
    image.frame_id = "camera";
    image.width = 2;
    image.height = 2;
    image.encoding = "mono8";
    image.step = 2;
    image.data = {0x00, 0x7f, 0x80, 0xff};
    out.push_back(message_vector("image_small", "gecko.msgs.Image 2x2 mono8: the pixels are one msgpack bin", image));
    return out;
}

std::vector<Vector> rule_vectors() {
    using msgs::Int64;
    using msgs::Vector3;
    std::vector<Vector> out;
    auto key = [](Packer& pk, const char* k) { pk.pack(std::string_view(k)); };
    out.push_back(rule<Vector3>("unknown_fields", "unknown keys are skipped, whatever they hold; absent fields get the defaults", true,
                                raw([&](Packer& pk, msgpack::sbuffer& b) {
                                    pk.pack_map(3);
                                    key(pk, "x");
                                    put_float64(b, 1.5);
                                    key(pk, "future");
                                    pk.pack_array(2);
                                    pk.pack(1);
                                    pk.pack_map(1);
                                    key(pk, "k");
                                    pk.pack_ext(1, 7);
                                    pk.pack_ext_body("\x2a", 1);
                                    key(pk, "y");
                                    put_float64(b, -2.0);
                                })));
    out.push_back(rule<Vector3>("int_for_float", "a float field takes a msgpack int", true, raw([&](Packer& pk, msgpack::sbuffer&) {
                                    pk.pack_map(3);
                                    key(pk, "x");
                                    pk.pack(1);
                                    key(pk, "y");
                                    pk.pack(-2);
                                    key(pk, "z");
                                    pk.pack(300);
                                })));
    out.push_back(rule<Vector3>("float32_for_float64", "a float64 field takes a float32", true,
                                raw([&](Packer& pk, msgpack::sbuffer& b) {
                                    pk.pack_map(1);
                                    key(pk, "x");
                                    put_float32(b, 0.25f);
                                })));
    out.push_back(rule<Int64>("float_for_int", "an integer field refuses a float, even 2.0", false,
                              raw([&](Packer& pk, msgpack::sbuffer& b) {
                                  pk.pack_map(1);
                                  key(pk, "data");
                                  put_float64(b, 2.0);
                              })));
    out.push_back(rule<msgs::Image>("int_out_of_range", "an integer field refuses a value its type cannot hold (-1 in a uint32)",
                                    false, raw([&](Packer& pk, msgpack::sbuffer&) {
                                        pk.pack_map(1);
                                        key(pk, "width");
                                        pk.pack(-1);
                                    })));
    out.push_back(rule<Int64>("duplicate_key", "a key given twice is an error", false, raw([&](Packer& pk, msgpack::sbuffer&) {
                                  pk.pack_map(2);
                                  key(pk, "data");
                                  pk.pack(1);
                                  key(pk, "data");
                                  pk.pack(2);
                              })));
    out.push_back(rule<Int64>("non_str_key", "a key that is not a str is an error, even an unknown one", false,
                              raw([&](Packer& pk, msgpack::sbuffer&) {
                                  pk.pack_map(1);
                                  pk.pack(1);
                                  pk.pack(5);
                              })));
    out.push_back(rule<msgs::String>("bin_for_str", "a str field refuses a bin", false, raw([&](Packer& pk, msgpack::sbuffer&) {
                                         pk.pack_map(1);
                                         key(pk, "data");
                                         pk.pack_bin(2);
                                         pk.pack_bin_body("hi", 2);
                                     })));
    out.push_back(rule<msgs::Bytes>("str_for_bin", "a bin field refuses a str", false, raw([&](Packer& pk, msgpack::sbuffer&) {
                                        pk.pack_map(1);
                                        key(pk, "data");
                                        pk.pack(std::string_view("hi"));
                                    })));
    out.push_back(rule<msgs::String>("nil_for_str", "nil is refused where the field is not optional", false,
                                     raw([&](Packer& pk, msgpack::sbuffer&) {
                                         pk.pack_map(1);
                                         key(pk, "data");
                                         pk.pack_nil();
                                     })));
    out.push_back(rule<msgs::click::Sensor>("nil_for_optional", "nil is the empty value of an optional field", true,
                                            raw([&](Packer& pk, msgpack::sbuffer&) {
                                                pk.pack_map(1);
                                                key(pk, "simulated_time");
                                                pk.pack_nil();
                                            })));
    out.push_back(rule<msgs::click::Reset>("enum_by_name", "an enum is one of its names", true,
                                           raw([&](Packer& pk, msgpack::sbuffer&) {
                                               pk.pack_map(1);
                                               key(pk, "direction");
                                               pk.pack(std::string_view("answer"));
                                           })));
    out.push_back(rule<msgs::click::Reset>("enum_by_number", "an enum also takes the number of a listed enumerator", true,
                                           raw([&](Packer& pk, msgpack::sbuffer&) {
                                               pk.pack_map(1);
                                               key(pk, "direction");
                                               pk.pack(1);
                                           })));
    out.push_back(rule<msgs::click::Reset>("enum_unknown_number", "a number that is no enumerator's is an error", false,
                                           raw([&](Packer& pk, msgpack::sbuffer&) {
                                               pk.pack_map(1);
                                               key(pk, "direction");
                                               pk.pack(2);
                                           })));
    out.push_back(rule<msgs::click::Reset>("enum_unknown_name", "names are case-sensitive: \"Answer\" is not \"answer\"", false,
                                           raw([&](Packer& pk, msgpack::sbuffer&) {
                                               pk.pack_map(1);
                                               key(pk, "direction");
                                               pk.pack(std::string_view("Answer"));
                                           })));
    out.push_back(rule<msgs::click::Sensor>("fixed_array_size", "a fixed-size array (3 forces) refuses 2 elements", false,
                                            raw([&](Packer& pk, msgpack::sbuffer& b) {
                                                pk.pack_map(1);
                                                key(pk, "objects");
                                                pk.pack_map(1);
                                                key(pk, "robot");
                                                pk.pack_map(1);
                                                key(pk, "force_sensors");
                                                pk.pack_array(1);
                                                pk.pack_array(2);
                                                put_float64(b, 1.0);
                                                put_float64(b, 2.0);
                                            })));
    for (const int levels : {63, 64}) {
        const bool ok = levels == 63;
        out.push_back(rule<Int64>(ok ? "depth_64" : "depth_65",
                                  ok ? "64 levels of nesting (the message's map and 63 arrays in an unknown field) are read"
                                     : "65 levels of nesting are refused, also in an unknown field",
                                  ok, raw([&](Packer& pk, msgpack::sbuffer&) {
                                      pk.pack_map(1);
                                      key(pk, "deep");
                                      for (int i = 0; i < levels; ++i) pk.pack_array(1);
                                      pk.pack_nil();
                                  })));
    }
    out.push_back(rule<Int64>("trailing_bytes", "one message, nothing after it", false, raw([&](Packer& pk, msgpack::sbuffer&) {
                                  pk.pack_map(1);
                                  key(pk, "data");
                                  pk.pack(1);
                                  pk.pack_nil();
                              })));
    out.push_back(rule<Int64>("not_a_map", "a message is a map", false, raw([&](Packer& pk, msgpack::sbuffer&) {
                                  pk.pack_array(1);
                                  pk.pack(1);
                              })));
    out.push_back(rule<msgs::String>("length_beyond_input", "a str32 that claims 4 GiB in a 12-byte input is refused before any allocation",
                                     false, raw([&](Packer& pk, msgpack::sbuffer& b) {
                                         pk.pack_map(1);
                                         key(pk, "data");
                                         const char header[5] = {static_cast<char>(0xdb), static_cast<char>(0xff),
                                                                 static_cast<char>(0xff), static_cast<char>(0xff),
                                                                 static_cast<char>(0xff)};
                                         b.write(header, 5);
                                         b.write("abc", 3);
                                     })));
    return out;
}


Json schemas() {
    Json j;
    j["what"] = "the fields of every message type gecko.msgs defines, and of the example 'add' service, as they travel "
                "(docs/PROTOCOL.md section 3): a msgpack map from field name to value, in this order";
    j["conventions"] = Json{
        {"int8..int64, uint8..uint64", "a msgpack int that fits the C++ type; written in msgpack's smallest form"},
        {"float64, float32", "written as msgpack float64 (0xcb) or float32 (0xca), always; read from any msgpack int or float"},
        {"str", "msgpack str (UTF-8)"},
        {"bin", "msgpack bin"},
        {"bool", "msgpack true / false"},
        {"{array: T}", "msgpack array of T; with size: exactly that many elements"},
        {"{optional: T}", "T, or nil when absent"},
        {"{map: T}", "msgpack map with str keys, values T (written in key order)"},
        {"{message: NAME}", "the nested message NAME, as a map (see its own entry)"},
        {"{struct: [fields]}", "a nested map with these fields (no type name of its own)"},
        {"{enum: NAME, names: [...], values: [...]}", "msgpack str, one of the names; readers also accept the number of a listed enumerator (values, in the order of names)"},
        {"default", "a default-constructed message: what a reader assumes for an absent field"}};
    j["types"] = schemas_of<msgs::String, msgs::Float64, msgs::Int64, msgs::Bytes, msgs::Empty, msgs::Point2, msgs::Vector3,
                            msgs::Quaternion, msgs::Pose, msgs::Twist, msgs::Wrench, msgs::Imu, msgs::Lidar, msgs::JointState,
                            msgs::Image, msgs::Odometry, msgs::click::HandshakeInit, msgs::click::SensorRequest,
                            msgs::click::Control, msgs::click::Handshake, msgs::click::Sensor, msgs::click::Reset,
                            msgs::click::Error, click::Request, click::Answer, msgs::sim::Status,
                            msgs::sim::ControlRequest, msgs::sim::ControlReply, AddRequest, AddReply>();
    return j;
}

}  // namespace gecko::conformance
