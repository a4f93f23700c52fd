// SPDX-License-Identifier: Apache-2.0
// click_gateway/src/translate.hpp: Click protobuf bytes <-> gecko::msgs::click.
#include "gecko/click_gateway/translate.hpp"

#include <gecko/click/lockstep_msgs.hpp>

#include "click.pb.h"

#include <google/protobuf/util/message_differencer.h>

#include <catch2/catch.hpp>

#include <fstream>
#include <iterator>
#include <random>
#include <string>

namespace mc = gecko::msgs::click;
namespace pb = click::protobuf;
using gecko::click::DecodeError;
using gecko::click::EncodeError;

namespace {

std::string read_vector(const std::string& name) {
    const std::string path = std::string(GECKO_CLICK_VECTORS_DIR) + "/" + name;
    std::ifstream in(path, std::ios::binary);
    INFO("test vector " << path);
    REQUIRE(in.good());
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

template <class T>
T decode_as(const std::string& bytes) {
    gecko::click::Decoded d = gecko::click::decode(bytes);
    if (const auto* e = std::get_if<DecodeError>(&d)) FAIL("decode failed: " << e->reason);
    INFO("decoded as " << gecko::click::kind_name(d));
    REQUIRE(std::holds_alternative<T>(d));
    return std::get<T>(d);
}

std::string decode_error(const std::string& bytes) {
    gecko::click::Decoded d = gecko::click::decode(bytes);
    INFO("decoded as " << gecko::click::kind_name(d));
    REQUIRE(std::holds_alternative<DecodeError>(d));
    return std::get<DecodeError>(d).reason;
}

template <class T>
std::string encode_ok(const T& msg) {
    gecko::click::Encoded e = gecko::click::encode(msg);
    if (const auto* err = std::get_if<EncodeError>(&e)) FAIL("encode failed: " << err->reason);
    return std::get<std::string>(e);
}

template <class T>
std::string encode_error(const T& msg) {
    gecko::click::Encoded e = gecko::click::encode(msg);
    REQUIRE(std::holds_alternative<EncodeError>(e));
    return std::get<EncodeError>(e).reason;
}

template <class Pb>
Pb parse(const std::string& bytes) {
    Pb m;
    REQUIRE(m.ParseFromString(bytes));
    return m;
}

// Field-by-field comparison (maps as maps): serialized bytes of messages with maps
// are not comparable, their entry order varies.
void require_same(const google::protobuf::Message& expected, const google::protobuf::Message& actual) {
    google::protobuf::util::MessageDifferencer differ;
    std::string report;
    differ.ReportDifferencesToString(&report);
    INFO("expected:\n" << expected.DebugString() << "actual:\n" << actual.DebugString() << "differences:\n" << report);
    REQUIRE(differ.Compare(expected, actual));
}

// Decodes Click bytes to Gecko, encodes back, and requires the same protobuf message.
template <class Pb, class T>
T round_trip(const Pb& original) {
    const std::string bytes = original.SerializeAsString();
    const T gecko_msg = decode_as<T>(bytes);
    const std::string back = encode_ok(gecko_msg);
    require_same(original, parse<Pb>(back));
    CHECK(decode_as<T>(back) == gecko_msg);
    return gecko_msg;
}

using Vec = std::vector<double>;

// Whatever decode accepts, encode can send back unchanged.
void require_reencodes(const gecko::click::Decoded& d) {
    if (std::holds_alternative<DecodeError>(d)) return;
    std::visit(
        [](const auto& m) {
            using T = std::decay_t<decltype(m)>;
            if constexpr (!std::is_same_v<T, DecodeError>) {
                const gecko::click::Encoded e = gecko::click::encode(m);
                if (const auto* err = std::get_if<EncodeError>(&e)) FAIL("accepted but cannot re-encode: " << err->reason);
                const gecko::click::Decoded again = gecko::click::decode(std::get<std::string>(e));
                REQUIRE(std::holds_alternative<T>(again));
                CHECK(std::get<T>(again) == m);
            }
        },
        d);
}

}  // namespace

// ---------------------------------------------------------------------------------------
// The two real Click messages
// ---------------------------------------------------------------------------------------

TEST_CASE("the real HandshakeMessage decodes into a Handshake with every listed field", "[click][translate][vectors]") {
    const std::string bytes = read_vector("handshakemessage.bin");
    REQUIRE(bytes.size() == 94);
    const mc::Handshake h = decode_as<mc::Handshake>(bytes);

    CHECK(h.version == mc::click_current_version);
    CHECK(h.control_type == mc::ValueType::multiple);
    CHECK_FALSE(h.time_step.has_value());  // no simulation settings
    CHECK(h.answers == 0);                 // not on Click's wire
    REQUIRE(h.objects.size() == 1);
    REQUIRE(h.objects.count("robot") == 1);
    const mc::HandshakeObject& robot = h.objects.at("robot");
    CHECK(robot.controls_in_order == std::vector<std::string>{"joint1", "joint2"});
    CHECK(robot.control_types_in_order == std::vector<mc::ValueType>{mc::ValueType::angle, mc::ValueType::torque_1d});
    CHECK(robot.joint_sensors_in_order == std::vector<std::string>{"joint1", "joint2"});
    CHECK(robot.joint_sensors == std::vector<mc::ValueType>{mc::ValueType::angle, mc::ValueType::angular_velocity_1d,
                                                             mc::ValueType::torque_1d});
    CHECK(robot.control_events == std::map<std::string, mc::ValueType>{{"gripper", mc::ValueType::activated}});
    CHECK(robot.sensors == std::map<std::string, std::vector<mc::ValueType>>{
                               {"external_1", {mc::ValueType::force_3d, mc::ValueType::angular_acceleration_3d}}});
    CHECK(robot.object_sensors == std::vector<mc::ValueType>{mc::ValueType::position});
}

TEST_CASE("the real HandshakeMessage translates back to the same protobuf message", "[click][translate][vectors]") {
    const std::string bytes = read_vector("handshakemessage.bin");
    const pb::HandshakeMessage original = parse<pb::HandshakeMessage>(bytes);
    const std::string back = encode_ok(decode_as<mc::Handshake>(bytes));
    const pb::HandshakeMessage again = parse<pb::HandshakeMessage>(back);
    require_same(original, again);

    // And the fields, one by one, as Click's own client reads them.
    CHECK(again.messagetype() == pb::HandshakeMessageType);
    CHECK(again.version() == pb::CURRENT_VERSION);
    CHECK(again.controltype() == pb::Multiple);
    CHECK_FALSE(again.has_simsettings());
    REQUIRE(again.objects().count("robot") == 1);
    const pb::HandshakeMessage::Object& robot = again.objects().at("robot");
    REQUIRE(robot.controlsinorder_size() == 2);
    CHECK(robot.controlsinorder(0) == "joint1");
    CHECK(robot.controlsinorder(1) == "joint2");
    REQUIRE(robot.controltypesinorder_size() == 2);
    CHECK(robot.controltypesinorder(0) == pb::Angle);
    CHECK(robot.controltypesinorder(1) == pb::Torque1D);
    REQUIRE(robot.jointsensorsinorder_size() == 2);
    CHECK(robot.jointsensorsinorder(1) == "joint2");
    REQUIRE(robot.jointsensors_size() == 3);
    CHECK(robot.jointsensors(0) == pb::Angle);
    CHECK(robot.jointsensors(1) == pb::AngularVelocity1D);
    CHECK(robot.jointsensors(2) == pb::Torque1D);
    REQUIRE(robot.controlevents().count("gripper") == 1);
    CHECK(robot.controlevents().at("gripper") == pb::Activated);
    REQUIRE(robot.sensors().count("external_1") == 1);
    const auto& types = robot.sensors().at("external_1").types();
    REQUIRE(types.size() == 2);
    CHECK(types.Get(0) == pb::Force3D);
    CHECK(types.Get(1) == pb::AngularAcceleration3D);
    REQUIRE(robot.objectsensors_size() == 1);
    CHECK(robot.objectsensors(0) == pb::Position);
}

TEST_CASE("the real SensorMessage decodes into a Sensor with every listed field", "[click][translate][vectors]") {
    const std::string bytes = read_vector("sensormessage.bin");
    REQUIRE(bytes.size() == 215);
    const mc::Sensor s = decode_as<mc::Sensor>(bytes);

    CHECK_FALSE(s.simulated_time.has_value());  // no simulation variables
    REQUIRE(s.objects.size() == 2);
    REQUIRE(s.objects.count("robot1") == 1);
    const mc::SensorObject& robot = s.objects.at("robot1");
    CHECK(robot.angle_sensors == Vec{1.0, 1.1});
    CHECK(robot.angular_velocity_sensors == Vec{2.0, 2.1});
    CHECK(robot.torque_sensors == Vec{3.0, 3.1});
    CHECK(robot.force_sensors.empty());
    CHECK(robot.object_sensors.empty());
    REQUIRE(robot.sensors.count("external_1") == 1);
    const std::vector<mc::SensorValue>& external = robot.sensors.at("external_1");
    REQUIRE(external.size() == 2);
    CHECK(external[0].type == mc::ValueType::force_3d);
    CHECK(external[0].value == Vec{4.0, 4.1, 4.2});
    CHECK(external[1].type == mc::ValueType::angular_acceleration_3d);
    CHECK(external[1].value == Vec{5.0, 5.1, 5.2});

    REQUIRE(s.objects.count("box") == 1);
    const mc::SensorObject& box = s.objects.at("box");
    CHECK(box.angle_sensors.empty());
    CHECK(box.sensors.empty());
    REQUIRE(box.object_sensors.size() == 2);
    CHECK(box.object_sensors[0] == mc::SensorValue{mc::ValueType::position, {1, 2, 3}});
    CHECK(box.object_sensors[1] == mc::SensorValue{mc::ValueType::rpy, {4, 5, 6}});
}

TEST_CASE("the real SensorMessage translates back to the same protobuf message", "[click][translate][vectors]") {
    const std::string bytes = read_vector("sensormessage.bin");
    const pb::SensorMessage original = parse<pb::SensorMessage>(bytes);
    const pb::SensorMessage again = parse<pb::SensorMessage>(encode_ok(decode_as<mc::Sensor>(bytes)));
    require_same(original, again);

    CHECK(again.messagetype() == pb::SensorMessageType);
    CHECK_FALSE(again.has_simvars());
    const pb::SensorMessage::Object& robot = again.objects().at("robot1");
    REQUIRE(robot.anglesensors_size() == 2);
    CHECK(robot.anglesensors(1) == 1.1);
    CHECK(robot.angularvelocitysensors(1) == 2.1);
    CHECK(robot.torquesensors(1) == 3.1);
    const pb::SensorMessage::Sensors& external = robot.sensors().at("external_1");
    REQUIRE(external.sensor_size() == 2);
    REQUIRE(external.sensor(0).has_force3d());
    CHECK(external.sensor(0).force3d().arr(2) == 4.2);
    REQUIRE(external.sensor(1).has_angularacceleration3d());
    CHECK(external.sensor(1).angularacceleration3d().arr(0) == 5.0);
    const pb::SensorMessage::Object& box = again.objects().at("box");
    REQUIRE(box.objectsensors_size() == 2);
    REQUIRE(box.objectsensors(0).has_position());
    CHECK(box.objectsensors(0).position().arr(1) == 2.0);
    REQUIRE(box.objectsensors(1).has_rpy());
    CHECK(box.objectsensors(1).rpy().arr(2) == 6.0);
}

// ---------------------------------------------------------------------------------------
// Every message, built with Click's generated classes, through translation and back
// ---------------------------------------------------------------------------------------

TEST_CASE("a HandshakeInit carries the client's version", "[click][translate]") {
    pb::HandshakeInitMessage m;
    m.set_messagetype(pb::HandshakeInitMessageType);
    m.set_version(pb::CURRENT_VERSION);
    const mc::HandshakeInit init = round_trip<pb::HandshakeInitMessage, mc::HandshakeInit>(m);
    CHECK(init.version == 1);
}

TEST_CASE("a Handshake with every value type and a time step round-trips", "[click][translate]") {
    pb::HandshakeMessage m;
    m.set_messagetype(pb::HandshakeMessageType);
    m.set_version(pb::CURRENT_VERSION);
    m.set_controltype(pb::Torque1D);
    m.mutable_simsettings()->set_timestep(0.005);
    pb::HandshakeMessage::Object& arm = (*m.mutable_objects())["arm"];
    for (const char* joint : {"j1", "j2", "j3"}) {
        arm.add_controlsinorder(joint);
        arm.add_controltypesinorder(pb::Torque1D);
        arm.add_jointsensorsinorder(joint);
    }
    arm.add_jointsensors(pb::Angle);
    arm.add_jointsensors(pb::Force3D);
    (*arm.mutable_controlevents())["suction"] = pb::Activated;
    pb::HandshakeMessage::Sensors& all = (*arm.mutable_sensors())["everything"];
    for (int t : {0, 1, 2, 3, 4, 5, 6, 12, 7, 8, 9, 10, 11}) all.add_types(static_cast<pb::ValueType>(t));
    arm.add_objectsensors(pb::Position);
    arm.add_objectsensors(pb::RPY);
    (*m.mutable_objects())["empty"];

    const mc::Handshake h = round_trip<pb::HandshakeMessage, mc::Handshake>(m);
    CHECK(h.time_step == 0.005);
    CHECK(h.control_type == mc::ValueType::torque_1d);
    CHECK(h.objects.at("arm").sensors.at("everything").size() == 13);
    CHECK(h.objects.at("empty") == mc::HandshakeObject{});
}

TEST_CASE("a Control with values or one deprecated array round-trips", "[click][translate]") {
    pb::ControlMessage m;
    m.set_messagetype(pb::ControlMessageType);
    pb::ControlMessage::Object& r1 = (*m.mutable_objects())["robot1"];
    r1.add_values(0.5);
    r1.add_values(-1.5);
    (*r1.mutable_controlevents())["gripper"] = true;
    pb::ControlMessage::Object& r2 = (*m.mutable_objects())["robot2"];  // the stock C++ demo client
    r2.add_angles(0.1);
    r2.add_angles(0.2);
    (*r2.mutable_controlevents())["gripper"] = false;
    (*m.mutable_objects())["robot3"].add_angularvelocities(3.0);
    (*m.mutable_objects())["robot4"].add_torques(4.0);

    const mc::Control c = round_trip<pb::ControlMessage, mc::Control>(m);
    CHECK(c.objects.at("robot1").values == Vec{0.5, -1.5});
    CHECK(c.objects.at("robot1").control_events.at("gripper") == true);
    CHECK(c.objects.at("robot2").angles == Vec{0.1, 0.2});
    CHECK(c.objects.at("robot2").control_events.at("gripper") == false);
    CHECK(c.objects.at("robot3").angular_velocities == Vec{3.0});
    CHECK(c.objects.at("robot4").torques == Vec{4.0});
}

TEST_CASE("a Sensor with every sensor value type and the simulated time round-trips", "[click][translate]") {
    pb::SensorMessage m;
    m.set_messagetype(pb::SensorMessageType);
    m.mutable_simvars()->set_simulatedtime(12.25);
    pb::SensorMessage::Object& o = (*m.mutable_objects())["robot"];
    o.add_anglesensors(0.1);
    o.add_angularvelocitysensors(0.2);
    o.add_torquesensors(0.3);
    pb::SensorMessage::Vec3* f = o.add_forcesensors();
    for (double x : {1.0, 2.0, 3.0}) f->add_arr(x);
    auto vec3 = [](pb::SensorMessage::Vec3* v, double base) {
        for (int i = 0; i < 3; ++i) v->add_arr(base + i);
    };
    pb::SensorMessage::Sensors& all = (*o.mutable_sensors())["all"];
    all.add_sensor()->set_angle(1.0);
    all.add_sensor()->set_angularvelocity1d(2.0);
    all.add_sensor()->set_torque1d(3.0);
    all.add_sensor()->set_force1d(4.0);
    all.add_sensor()->set_activated(true);
    all.add_sensor()->set_activated(false);
    vec3(all.add_sensor()->mutable_position(), 10);
    vec3(all.add_sensor()->mutable_rpy(), 20);
    vec3(all.add_sensor()->mutable_acceleration3d(), 30);
    vec3(all.add_sensor()->mutable_force3d(), 40);
    vec3(all.add_sensor()->mutable_torque3d(), 50);
    vec3(all.add_sensor()->mutable_angularacceleration3d(), 60);
    vec3(all.add_sensor()->mutable_velocity3d(), 70);
    vec3(all.add_sensor()->mutable_angularvelocity3d(), 80);
    vec3(o.add_objectsensors()->mutable_position(), 90);

    const mc::Sensor s = round_trip<pb::SensorMessage, mc::Sensor>(m);
    CHECK(s.simulated_time == 12.25);
    const mc::SensorObject& robot = s.objects.at("robot");
    CHECK(robot.force_sensors == std::vector<std::array<double, 3>>{{1.0, 2.0, 3.0}});
    const std::vector<mc::SensorValue>& values = robot.sensors.at("all");
    REQUIRE(values.size() == 14);
    CHECK(values[4] == mc::SensorValue{mc::ValueType::activated, {1.0}});
    CHECK(values[5] == mc::SensorValue{mc::ValueType::activated, {0.0}});
    CHECK(values[13] == mc::SensorValue{mc::ValueType::angular_velocity_3d, {80, 81, 82}});
    CHECK(robot.object_sensors == std::vector<mc::SensorValue>{{mc::ValueType::position, {90, 91, 92}}});
}

TEST_CASE("SensorRequest, Reset and Error round-trip", "[click][translate]") {
    pb::SensorRequestMessage request;
    request.set_messagetype(pb::SensorRequestMessageType);
    round_trip<pb::SensorRequestMessage, mc::SensorRequest>(request);

    pb::ResetMessage reset;
    reset.set_messagetype(pb::ResetMessageType);
    const mc::Reset r = round_trip<pb::ResetMessage, mc::Reset>(reset);
    CHECK(r.direction == mc::Direction::request);

    pb::ErrorMessage error;
    error.set_messagetype(pb::ErrorMessageType);
    error.set_errormessage("robot exploded");
    const mc::Error e = round_trip<pb::ErrorMessage, mc::Error>(error);
    CHECK(e.reason == "robot exploded");
    CHECK(e.direction == mc::Direction::request);

    gecko::click::Decoded as_client = gecko::click::decode(error.SerializeAsString(), mc::Direction::answer);
    CHECK(std::get<mc::Error>(as_client).direction == mc::Direction::answer);
}

TEST_CASE("every encoded message says its type, except HandshakeInit whose type is 0", "[click][translate]") {
    const auto type_of = [](const std::string& bytes) { return parse<pb::Message>(bytes).messagetype(); };
    CHECK(type_of(encode_ok(mc::Handshake{})) == pb::HandshakeMessageType);
    CHECK(type_of(encode_ok(mc::SensorRequest{})) == pb::SensorRequestMessageType);
    CHECK(type_of(encode_ok(mc::Sensor{})) == pb::SensorMessageType);
    CHECK(type_of(encode_ok(mc::Reset{})) == pb::ResetMessageType);
    CHECK(type_of(encode_ok(mc::Error{})) == pb::ErrorMessageType);
    mc::Control control;
    control.objects["robot"].values = {1.0};
    const std::string control_bytes = encode_ok(control);
    CHECK(parse<pb::ResetMessage>(control_bytes).messagetype() == pb::ControlMessageType);
    // Empty messages are still non-empty on the wire: a client never reads them as HandshakeInit.
    CHECK_FALSE(encode_ok(mc::Reset{}).empty());
    CHECK_FALSE(encode_ok(mc::Sensor{}).empty());
    CHECK(decode_as<mc::Reset>(encode_ok(mc::Reset{})) == mc::Reset{});
}

TEST_CASE("error_reply is a Click ErrorMessage with the reason, made valid UTF-8", "[click][translate]") {
    const pb::ErrorMessage m = parse<pb::ErrorMessage>(gecko::click::error_reply("bad \xff input"));
    CHECK(m.messagetype() == pb::ErrorMessageType);
    CHECK(m.errormessage() == "bad ? input");
    CHECK(parse<pb::ErrorMessage>(gecko::click::error_reply("h\xc3\xa4nd")).errormessage() == "h\xc3\xa4nd");
}

// ---------------------------------------------------------------------------------------
// What a server must survive
// ---------------------------------------------------------------------------------------

TEST_CASE("an empty frame is a HandshakeInit, and so is one with only a version", "[click][translate][malformed]") {
    CHECK(decode_as<mc::HandshakeInit>("").version == 0);  // version not sent: UNDEFINED
    CHECK(decode_as<mc::HandshakeInit>(std::string("\x10\x01", 2)).version == 1);
    CHECK(encode_ok(mc::HandshakeInit{}) == std::string("\x10\x01", 2));
}

TEST_CASE("a control setting both values and angles is an error naming both", "[click][translate][malformed]") {
    pb::ControlMessage m;
    m.set_messagetype(pb::ControlMessageType);
    pb::ControlMessage::Object& o = (*m.mutable_objects())["robot1"];
    o.add_values(1.0);
    o.add_angles(2.0);
    const std::string reason = decode_error(m.SerializeAsString());
    CHECK_THAT(reason, Catch::Contains("robot1") && Catch::Contains("values") && Catch::Contains("angles"));

    mc::Control c;
    c.objects["robot1"].torques = {1.0};
    c.objects["robot1"].angular_velocities = {1.0};
    CHECK_THAT(encode_error(c), Catch::Contains("angularVelocities") && Catch::Contains("torques"));
    CHECK(gecko::click::check_control(c).has_value());
}

TEST_CASE("truncated messages give errors or shorter messages, never crashes", "[click][translate][malformed]") {
    for (const char* name : {"handshakemessage.bin", "sensormessage.bin"}) {
        const std::string bytes = read_vector(name);
        std::size_t errors = 0;
        for (std::size_t n = 0; n < bytes.size(); ++n) {
            const gecko::click::Decoded d = gecko::click::decode(bytes.substr(0, n));
            if (std::holds_alternative<DecodeError>(d)) {
                ++errors;
                CHECK_FALSE(std::get<DecodeError>(d).reason.empty());
            }
        }
        INFO(name);
        // Losing the last byte always cuts a length-delimited field short.
        CHECK(std::holds_alternative<DecodeError>(gecko::click::decode(bytes.substr(0, bytes.size() - 1))));
        CHECK(errors > bytes.size() / 2);
    }
}

TEST_CASE("random bytes give errors or valid messages, never crashes", "[click][translate][malformed]") {
    std::mt19937 rng(20240601);  // fixed seed: the same inputs every run
    std::uniform_int_distribution<int> byte(0, 255);
    std::uniform_int_distribution<int> length(1, 96);
    std::size_t errors = 0;
    const int runs = 3000;
    for (int i = 0; i < runs; ++i) {
        std::string bytes(static_cast<std::size_t>(length(rng)), '\0');
        for (char& c : bytes) c = static_cast<char>(byte(rng));
        const gecko::click::Decoded d = gecko::click::decode(bytes);
        if (const auto* e = std::get_if<DecodeError>(&d)) {
            ++errors;
            CHECK_FALSE(e->reason.empty());
        }
        require_reencodes(d);
    }
    CHECK(errors > runs * 9 / 10);
    CHECK_THAT(decode_error("hello, world"), !Catch::Contains("HandshakeInit"));
}

TEST_CASE("flipped bytes in the real messages give errors or messages that re-encode", "[click][translate][malformed]") {
    for (const char* name : {"handshakemessage.bin", "sensormessage.bin"}) {
        INFO(name);
        const std::string original = read_vector(name);
        for (std::size_t i = 0; i < original.size(); ++i) {
            for (unsigned char mask : {0x01, 0x02, 0x10, 0x80, 0xff}) {
                std::string bytes = original;
                bytes[i] = static_cast<char>(static_cast<unsigned char>(bytes[i]) ^ mask);
                CAPTURE(i, static_cast<int>(mask));
                require_reencodes(gecko::click::decode(bytes));
            }
        }
    }
}

TEST_CASE("an unknown message type is an error naming the number", "[click][translate][malformed]") {
    CHECK_THAT(decode_error(std::string("\x08\x09", 2)), Catch::Contains("unknown Click message type 9"));
    CHECK_THAT(decode_error(std::string("\x08\x7f", 2)), Catch::Contains("127"));
}

TEST_CASE("fields outside the Click schema are errors", "[click][translate][malformed]") {
    // messageType sent as a string (wrong wire type).
    CHECK_THAT(decode_error(std::string("\x0a\x01\x03", 3)), Catch::Contains("messageType") || Catch::Contains("wire type"));
    // A ControlMessage object with an unknown field 9 (varint 1).
    pb::ControlMessage m;
    m.set_messagetype(pb::ControlMessageType);
    pb::ControlMessage::Object& o = (*m.mutable_objects())["robot1"];
    o.add_values(1.0);
    o.GetReflection()->MutableUnknownFields(&o)->AddVarint(9, 1);
    CHECK_THAT(decode_error(m.SerializeAsString()), Catch::Contains("field 9") && Catch::Contains("robot1"));
    // A Reset with a field 2 (ResetMessage has only messageType).
    CHECK_THAT(decode_error(std::string("\x08\x04\x10\x01", 4)), Catch::Contains("field 2"));
}

TEST_CASE("values that do not fit their type are errors", "[click][translate][malformed]") {
    SECTION("a vector of two numbers") {
        pb::SensorMessage m;
        m.set_messagetype(pb::SensorMessageType);
        pb::SensorMessage::Vec3* v = (*m.mutable_objects())["box"].add_objectsensors()->mutable_position();
        v->add_arr(1.0);
        v->add_arr(2.0);
        CHECK_THAT(decode_error(m.SerializeAsString()), Catch::Contains("box") && Catch::Contains("expected 3"));
    }
    SECTION("a sensor value with no value") {
        pb::SensorMessage m;
        m.set_messagetype(pb::SensorMessageType);
        (*m.mutable_objects())["box"].add_objectsensors();
        CHECK_THAT(decode_error(m.SerializeAsString()), Catch::Contains("no value"));
    }
    SECTION("a value type Click does not define") {
        pb::HandshakeMessage m;
        m.set_messagetype(pb::HandshakeMessageType);
        (*m.mutable_objects())["robot"].add_jointsensors(static_cast<pb::ValueType>(13));
        CHECK_THAT(decode_error(m.SerializeAsString()), Catch::Contains("unknown Click value type 13"));
    }
    SECTION("Multiple for one joint") {
        pb::HandshakeMessage m;
        m.set_messagetype(pb::HandshakeMessageType);
        pb::HandshakeMessage::Object& o = (*m.mutable_objects())["robot"];
        o.add_controlsinorder("j1");
        o.add_controltypesinorder(pb::Multiple);
        CHECK_THAT(decode_error(m.SerializeAsString()), Catch::Contains("Multiple"));
    }
    SECTION("a name that is not UTF-8") {
        pb::ControlMessage m;
        m.set_messagetype(pb::ControlMessageType);
        (*m.mutable_objects())["ok"].add_values(1.0);
        std::string bytes = m.SerializeAsString();
        const std::size_t at = bytes.find("ok");
        REQUIRE(at != std::string::npos);
        bytes[at] = '\xff';
        CHECK_FALSE(decode_error(bytes).empty());
    }
}

TEST_CASE("Gecko messages that Click cannot carry are encode errors", "[click][translate]") {
    mc::Sensor s;
    s.objects["box"].object_sensors = {{mc::ValueType::position, {1.0, 2.0}}};
    CHECK_THAT(encode_error(s), Catch::Contains("box") && Catch::Contains("Position") && Catch::Contains("expected 3"));
    s.objects["box"].object_sensors = {{mc::ValueType::multiple, {}}};
    CHECK_THAT(encode_error(s), Catch::Contains("Multiple"));

    mc::Handshake h;
    h.objects["robot"].controls_in_order = {"j1", "j2"};
    h.objects["robot"].control_types_in_order = {mc::ValueType::angle};
    CHECK_THAT(encode_error(h), Catch::Contains("2 controls") && Catch::Contains("1 control types"));
    h.objects["robot"].control_types_in_order = {mc::ValueType::angle, mc::ValueType::multiple};
    CHECK_THAT(encode_error(h), Catch::Contains("Multiple"));

    mc::Control c;
    c.objects["bad\xff name"].values = {1.0};
    CHECK_THAT(encode_error(c), Catch::Contains("UTF-8"));

    mc::Error e;
    e.reason = "bad \xfe";
    CHECK(parse<pb::ErrorMessage>(encode_ok(e)).errormessage() == "bad ?");
}

// ---------------------------------------------------------------------------------------
// Checking a Control against the Handshake
// ---------------------------------------------------------------------------------------

TEST_CASE("a control is checked against the handshake, with reasons", "[click][translate]") {
    mc::Handshake h;
    mc::HandshakeObject& robot = h.objects["robot1"];
    robot.controls_in_order = {"joint1", "joint2"};
    robot.control_types_in_order = {mc::ValueType::angle, mc::ValueType::torque_1d};
    robot.control_events["gripper"] = mc::ValueType::activated;
    mc::HandshakeObject& arm = h.objects["arm"];
    arm.controls_in_order = {"a1", "a2"};
    arm.control_types_in_order = {mc::ValueType::angle, mc::ValueType::angle};
    h.objects["box"];

    mc::Control c;
    c.objects["robot1"].values = {0.1, 2.0};
    c.objects["robot1"].control_events["gripper"] = true;
    c.objects["arm"].angles = {0.1, 0.2};  // deprecated, but all joints take angles
    CHECK_FALSE(gecko::click::check_control(h, c).has_value());

    SECTION("unknown object") {
        c.objects["robot2"].values = {1.0};
        const auto reason = gecko::click::check_control(h, c);
        REQUIRE(reason);
        CHECK_THAT(*reason, Catch::Contains("unknown object 'robot2'") && Catch::Contains("robot1"));
    }
    SECTION("wrong number of values") {
        c.objects["robot1"].values = {0.1, 0.2, 0.3};
        const auto reason = gecko::click::check_control(h, c);
        REQUIRE(reason);
        CHECK_THAT(*reason, Catch::Contains("gives 3 values") && Catch::Contains("2 controls (joint1, joint2)"));
    }
    SECTION("an object may send control events only (its joints keep their controls)") {
        c.objects["robot1"].values.clear();
        CHECK_FALSE(gecko::click::check_control(h, c).has_value());
    }
    SECTION("values for an object without controls") {
        c.objects["box"].values = {1.0};
        REQUIRE(gecko::click::check_control(h, c));
    }
    SECTION("deprecated angles for a torque-controlled joint") {
        c.objects["robot1"].values.clear();
        c.objects["robot1"].angles = {0.1, 0.2};
        const auto reason = gecko::click::check_control(h, c);
        REQUIRE(reason);
        CHECK_THAT(*reason, Catch::Contains("'joint2'") && Catch::Contains("Torque1D") && Catch::Contains("send 'values'"));
    }
    SECTION("unknown control event") {
        c.objects["arm"].control_events["gripper"] = true;
        const auto reason = gecko::click::check_control(h, c);
        REQUIRE(reason);
        CHECK_THAT(*reason, Catch::Contains("'arm'") && Catch::Contains("'gripper'"));
    }
    SECTION("values and angles together") {
        c.objects["robot1"].angles = {0.1, 0.2};
        REQUIRE(gecko::click::check_control(h, c));
    }
}

// ---------------------------------------------------------------------------------------
// A Click client talking to a typed server, in process
// ---------------------------------------------------------------------------------------

namespace {

// A tiny simulation: robot1 (angle + torque joints, a gripper) and a box.
struct FakeSimulation {
    mc::Handshake handshake;
    std::vector<std::uint64_t> seen_ids;
    int steps = 0;

    FakeSimulation() {
        mc::HandshakeObject& robot = handshake.objects["robot1"];
        robot.controls_in_order = {"joint1", "joint2"};
        robot.control_types_in_order = {mc::ValueType::angle, mc::ValueType::angle};
        robot.joint_sensors_in_order = robot.controls_in_order;
        robot.joint_sensors = {mc::ValueType::angle};
        robot.control_events["gripper"] = mc::ValueType::activated;
        handshake.objects["box"].object_sensors = {mc::ValueType::position};
        handshake.control_type = mc::scene_control_type(handshake.objects);
        handshake.time_step = 0.01;
    }

    mc::Sensor sensors() const {
        mc::Sensor s;
        s.objects["robot1"].angle_sensors = {0.1 * steps, 0.2 * steps};
        s.objects["box"].object_sensors = {{mc::ValueType::position, {0.0, 0.0, 1.0 * steps}}};
        s.simulated_time = 0.01 * steps;
        return s;
    }

    gecko::click::ServerAnswer serve(const gecko::click::ClientRequest& request) {
        return std::visit(
            [this](const auto& r) -> gecko::click::ServerAnswer {
                using T = std::decay_t<decltype(r)>;
                seen_ids.push_back(r.request_id);
                if constexpr (std::is_same_v<T, mc::HandshakeInit>) {
                    return handshake;
                } else if constexpr (std::is_same_v<T, mc::SensorRequest>) {
                    return sensors();
                } else if constexpr (std::is_same_v<T, mc::Control>) {
                    if (auto reason = gecko::click::check_control(handshake, r)) {
                        mc::Error e;
                        e.reason = *reason;
                        return e;
                    }
                    ++steps;
                    return sensors();
                } else if constexpr (std::is_same_v<T, mc::Reset>) {
                    steps = 0;
                    return mc::Reset{};
                } else {
                    mc::Error e;
                    e.reason = "simulation ended";
                    return e;
                }
            },
            request);
    }
};

}  // namespace

TEST_CASE("a Click client drives a typed server through the translation", "[click][translate][client]") {
    FakeSimulation sim;
    const auto handler = gecko::click::make_click_handler([&](const gecko::click::ClientRequest& r) { return sim.serve(r); });

    // Handshake, as Click's clients send it.
    pb::HandshakeInitMessage init;
    init.set_messagetype(pb::HandshakeInitMessageType);
    init.set_version(pb::CURRENT_VERSION);
    const std::string handshake_bytes = handler(init.SerializeAsString());
    REQUIRE(parse<pb::Message>(handshake_bytes).messagetype() == pb::HandshakeMessageType);
    const pb::HandshakeMessage handshake = parse<pb::HandshakeMessage>(handshake_bytes);
    CHECK(handshake.controltype() == pb::Angle);
    CHECK(handshake.simsettings().timestep() == 0.01);
    REQUIRE(handshake.objects().at("robot1").controlsinorder_size() == 2);

    // The stock C++ demo client: deprecated angles plus a gripper event.
    pb::ControlMessage control;
    control.set_messagetype(pb::ControlMessageType);
    pb::ControlMessage::Object& robot = (*control.mutable_objects())["robot1"];
    robot.add_angles(0.5);
    robot.add_angles(0.6);
    (*robot.mutable_controlevents())["gripper"] = true;
    const std::string sensor_bytes = handler(control.SerializeAsString());
    REQUIRE(parse<pb::Message>(sensor_bytes).messagetype() == pb::SensorMessageType);
    const pb::SensorMessage sensor = parse<pb::SensorMessage>(sensor_bytes);
    CHECK(sensor.simvars().simulatedtime() == Approx(0.01));
    REQUIRE(sensor.objects().at("robot1").anglesensors_size() == 2);
    CHECK(sensor.objects().at("box").objectsensors(0).position().arr(2) == 1.0);

    // A SensorRequest does not step.
    pb::SensorRequestMessage request;
    request.set_messagetype(pb::SensorRequestMessageType);
    CHECK(parse<pb::SensorMessage>(handler(request.SerializeAsString())).simvars().simulatedtime() == Approx(0.01));

    // A control for an unknown robot: an ErrorMessage that says so.
    pb::ControlMessage wrong;
    wrong.set_messagetype(pb::ControlMessageType);
    (*wrong.mutable_objects())["robot2"].add_angles(0.5);
    const pb::ErrorMessage error = parse<pb::ErrorMessage>(handler(wrong.SerializeAsString()));
    CHECK(error.messagetype() == pb::ErrorMessageType);
    CHECK_THAT(error.errormessage(), Catch::Contains("robot2"));

    // Reset answers Reset, explicitly typed on the wire.
    pb::ResetMessage reset;
    reset.set_messagetype(pb::ResetMessageType);
    const std::string reset_bytes = handler(reset.SerializeAsString());
    CHECK(parse<pb::Message>(reset_bytes).messagetype() == pb::ResetMessageType);
    CHECK(sim.steps == 0);

    // Garbage and server-only messages get an ErrorMessage, and the handler keeps serving.
    CHECK_THAT(parse<pb::ErrorMessage>(handler("\xff\xff\xff")).errormessage(), Catch::Contains("malformed"));
    CHECK_THAT(parse<pb::ErrorMessage>(handler(sensor_bytes)).errormessage(), Catch::Contains("only a server"));
    CHECK(parse<pb::Message>(handler(request.SerializeAsString())).messagetype() == pb::SensorMessageType);

    // The client ends the run; the server still answers.
    pb::ErrorMessage bye;
    bye.set_messagetype(pb::ErrorMessageType);
    bye.set_errormessage("done");
    CHECK(parse<pb::Message>(handler(bye.SerializeAsString())).messagetype() == pb::ErrorMessageType);

    // Every request the server saw got its own id, in order.
    CHECK(sim.seen_ids == std::vector<std::uint64_t>{1, 2, 3, 4, 5, 6, 7});
}

TEST_CASE("a typed server that throws or cannot be encoded still yields one ErrorMessage", "[click][translate][client]") {
    const auto throwing = gecko::click::make_click_handler(
        [](const gecko::click::ClientRequest&) -> gecko::click::ServerAnswer { throw std::runtime_error("physics diverged"); });
    CHECK_THAT(parse<pb::ErrorMessage>(throwing("")).errormessage(), Catch::Contains("physics diverged"));

    const auto unencodable = gecko::click::make_click_handler([](const gecko::click::ClientRequest&) -> gecko::click::ServerAnswer {
        mc::Sensor s;
        s.objects["box"].object_sensors = {{mc::ValueType::rpy, {1.0}}};
        return s;
    });
    CHECK_THAT(parse<pb::ErrorMessage>(unencodable("")).errormessage(), Catch::Contains("RPY"));
}
