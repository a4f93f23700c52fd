// SPDX-License-Identifier: Apache-2.0
// gecko/msgs/click.hpp: the Gecko Click message types and their msgpack encoding.
#include <gecko/msgs/click.hpp>
#include <gecko/msgs/traits.hpp>

#include "click.pb.h"

#include <catch2/catch.hpp>

#include <sstream>
#include <string>

namespace mc = gecko::msgs::click;

namespace {

template <class T>
std::string pack(const T& msg) {
    msgpack::sbuffer buffer;
    msgpack::pack(buffer, msg);
    return std::string(buffer.data(), buffer.size());
}

template <class T>
T unpack(const std::string& bytes) {
    msgpack::object_handle oh = msgpack::unpack(bytes.data(), bytes.size());
    return oh.get().as<T>();
}

template <class T>
std::string as_json(const T& msg) {
    const std::string bytes = pack(msg);
    msgpack::object_handle oh = msgpack::unpack(bytes.data(), bytes.size());
    std::ostringstream out;
    out << oh.get();
    return out.str();
}

mc::Handshake rich_handshake() {
    mc::Handshake h;
    h.answers = 7;
    h.control_type = mc::ValueType::multiple;
    mc::HandshakeObject& robot = h.objects["robot"];
    robot.controls_in_order = {"joint1", "joint2"};
    robot.control_types_in_order = {mc::ValueType::angle, mc::ValueType::torque_1d};
    robot.joint_sensors_in_order = {"joint1", "joint2"};
    robot.joint_sensors = {mc::ValueType::angle, mc::ValueType::angular_velocity_1d, mc::ValueType::torque_1d};
    robot.control_events["gripper"] = mc::ValueType::activated;
    robot.sensors["external_1"] = {mc::ValueType::force_3d, mc::ValueType::angular_acceleration_3d};
    robot.object_sensors = {mc::ValueType::position};
    h.objects["box"].object_sensors = {mc::ValueType::position, mc::ValueType::rpy};
    h.time_step = 0.01;
    return h;
}

mc::Sensor rich_sensor() {
    mc::Sensor s;
    s.answers = 9;
    mc::SensorObject& robot = s.objects["robot1"];
    robot.angle_sensors = {1.0, 1.1};
    robot.angular_velocity_sensors = {2.0, 2.1};
    robot.torque_sensors = {3.0, 3.1};
    robot.force_sensors = {{1.0, 2.0, 3.0}};
    robot.sensors["external_1"] = {{mc::ValueType::force_3d, {4.0, 4.1, 4.2}}, {mc::ValueType::activated, {1.0}}};
    s.objects["box"].object_sensors = {{mc::ValueType::position, {1, 2, 3}}, {mc::ValueType::rpy, {4, 5, 6}}};
    s.simulated_time = 1.5;
    return s;
}

}  // namespace

TEST_CASE("every Click message type is a Gecko message with a stable name", "[click][msgs]") {
    STATIC_REQUIRE(gecko::msgs::is_message_v<mc::HandshakeInit>);
    STATIC_REQUIRE(gecko::msgs::is_message_v<mc::Handshake>);
    STATIC_REQUIRE(gecko::msgs::is_message_v<mc::SensorRequest>);
    STATIC_REQUIRE(gecko::msgs::is_message_v<mc::Control>);
    STATIC_REQUIRE(gecko::msgs::is_message_v<mc::Sensor>);
    STATIC_REQUIRE(gecko::msgs::is_message_v<mc::Reset>);
    STATIC_REQUIRE(gecko::msgs::is_message_v<mc::Error>);
    CHECK(std::string(gecko::msgs::type_name_of<mc::Control>()) == "gecko.msgs.click.Control");
    CHECK(std::string(gecko::msgs::type_name_of<mc::Handshake>()) == "gecko.msgs.click.Handshake");
    CHECK(std::string(gecko::msgs::type_name_of<mc::Error>()) == "gecko.msgs.click.Error");
}

TEST_CASE("the fourteen value types have Click's names and numbers", "[click][msgs]") {
    const google::protobuf::EnumDescriptor* schema = click::protobuf::ValueType_descriptor();
    REQUIRE(schema->value_count() == static_cast<int>(mc::all_value_types.size()));
    for (int i = 0; i < schema->value_count(); ++i) {
        const google::protobuf::EnumValueDescriptor* v = schema->value(i);
        CAPTURE(v->name());
        const std::optional<mc::ValueType> by_name = mc::value_type_from_string(v->name());
        REQUIRE(by_name);
        CHECK(static_cast<int>(*by_name) == v->number());
        CHECK(mc::value_type_from_number(v->number()) == by_name);
        CHECK(std::string(mc::to_string(*by_name)) == v->name());
    }
    CHECK_FALSE(mc::value_type_from_string("angle"));  // Click's spelling only
    CHECK_FALSE(mc::value_type_from_number(13));
}

TEST_CASE("value types know their unit and size", "[click][msgs]") {
    CHECK(std::string(mc::unit_of(mc::ValueType::angle)) == "rad");
    CHECK(std::string(mc::unit_of(mc::ValueType::angular_velocity_1d)) == "rad/s");
    CHECK(std::string(mc::unit_of(mc::ValueType::torque_1d)) == "N m");
    CHECK(std::string(mc::unit_of(mc::ValueType::position)) == "m");
    CHECK(std::string(mc::unit_of(mc::ValueType::rpy)) == "rad");
    CHECK(std::string(mc::unit_of(mc::ValueType::force_1d)) == "N");
    CHECK(std::string(mc::unit_of(mc::ValueType::force_3d)) == "N");
    CHECK(std::string(mc::unit_of(mc::ValueType::torque_3d)) == "N m");
    CHECK(std::string(mc::unit_of(mc::ValueType::velocity_3d)) == "m/s");
    CHECK(std::string(mc::unit_of(mc::ValueType::angular_velocity_3d)) == "rad/s");
    CHECK(std::string(mc::unit_of(mc::ValueType::acceleration_3d)) == "m/s^2");
    CHECK(std::string(mc::unit_of(mc::ValueType::angular_acceleration_3d)) == "rad/s^2");
    CHECK(std::string(mc::unit_of(mc::ValueType::activated)) == "bool");
    CHECK(mc::size_of(mc::ValueType::angle) == 1);
    CHECK(mc::size_of(mc::ValueType::activated) == 1);
    CHECK(mc::size_of(mc::ValueType::force_1d) == 1);
    CHECK(mc::size_of(mc::ValueType::force_3d) == 3);
    CHECK(mc::size_of(mc::ValueType::rpy) == 3);
    CHECK(mc::size_of(mc::ValueType::multiple) == 0);
}

TEST_CASE("every Click message type survives a msgpack round trip", "[click][msgs][codec]") {
    mc::HandshakeInit init;
    init.request_id = 1;
    CHECK(unpack<mc::HandshakeInit>(pack(init)) == init);

    const mc::Handshake handshake = rich_handshake();
    CHECK(unpack<mc::Handshake>(pack(handshake)) == handshake);

    mc::SensorRequest request;
    request.request_id = 3;
    CHECK(unpack<mc::SensorRequest>(pack(request)) == request);

    mc::Control control;
    control.request_id = 4;
    control.objects["robot1"].values = {0.5, -0.25};
    control.objects["robot1"].control_events["gripper"] = true;
    control.objects["robot2"].angles = {1.0};
    CHECK(unpack<mc::Control>(pack(control)) == control);

    const mc::Sensor sensor = rich_sensor();
    CHECK(unpack<mc::Sensor>(pack(sensor)) == sensor);

    mc::Reset reset;
    reset.direction = mc::Direction::answer;
    reset.answers = 5;
    CHECK(unpack<mc::Reset>(pack(reset)) == reset);

    mc::Error error;
    error.answers = 6;
    error.reason = "object 'robot9' is unknown";
    CHECK(unpack<mc::Error>(pack(error)) == error);
}

TEST_CASE("equality looks at every field", "[click][msgs]") {
    mc::Sensor a = rich_sensor();
    mc::Sensor b = a;
    CHECK(a == b);
    b.objects["robot1"].sensors["external_1"][0].value[2] = 4.3;
    CHECK(a != b);
    b = a;
    b.simulated_time.reset();
    CHECK(a != b);
    mc::Handshake h = rich_handshake();
    mc::Handshake g = h;
    g.objects["robot"].control_events["gripper"] = mc::ValueType::force_1d;
    CHECK(h != g);
}

TEST_CASE("enums are written as Click's names, so JSON reads well", "[click][msgs][codec]") {
    const std::string json = as_json(rich_handshake());
    CHECK_THAT(json, Catch::Contains(R"("control_type":"Multiple")"));
    CHECK_THAT(json, Catch::Contains(R"("control_types_in_order":["Angle","Torque1D"])"));
    CHECK_THAT(json, Catch::Contains(R"("external_1":["Force3D","AngularAcceleration3D"])"));
    CHECK_THAT(json, Catch::Contains(R"("time_step":0.01)"));
    mc::Reset reset;
    reset.direction = mc::Direction::answer;
    CHECK_THAT(as_json(reset), Catch::Contains(R"("direction":"answer")"));
    mc::Sensor sensor;
    CHECK_THAT(as_json(sensor), Catch::Contains(R"("simulated_time":null)"));
}

TEST_CASE("a value type may also be read from Click's number, and unknown names are refused", "[click][msgs][codec]") {
    msgpack::sbuffer buffer;
    msgpack::packer<msgpack::sbuffer> p(buffer);
    p.pack_map(2);
    p.pack(std::string("type"));
    p.pack(7);  // Force3D
    p.pack(std::string("value"));
    p.pack(std::vector<double>{1, 2, 3});
    const mc::SensorValue v = unpack<mc::SensorValue>(std::string(buffer.data(), buffer.size()));
    CHECK(v.type == mc::ValueType::force_3d);

    msgpack::sbuffer bad;
    msgpack::packer<msgpack::sbuffer> q(bad);
    q.pack_map(1);
    q.pack(std::string("type"));
    q.pack(std::string("Force4D"));
    CHECK_THROWS_AS(unpack<mc::SensorValue>(std::string(bad.data(), bad.size())), msgpack::type_error);
}

TEST_CASE("fields missing from a msgpack map keep their defaults", "[click][msgs][codec]") {
    msgpack::sbuffer buffer;
    msgpack::packer<msgpack::sbuffer> p(buffer);
    p.pack_map(1);
    p.pack(std::string("reason"));
    p.pack(std::string("boom"));
    const mc::Error e = unpack<mc::Error>(std::string(buffer.data(), buffer.size()));
    CHECK(e.reason == "boom");
    CHECK(e.direction == mc::Direction::answer);
    CHECK(e.answers == 0);
}

TEST_CASE("the scene-wide control type is Multiple only when joints differ", "[click][msgs]") {
    std::map<std::string, mc::HandshakeObject> objects;
    CHECK(mc::scene_control_type(objects) == mc::ValueType::angle);
    objects["a"].control_types_in_order = {mc::ValueType::torque_1d, mc::ValueType::torque_1d};
    objects["b"].control_types_in_order = {mc::ValueType::torque_1d};
    CHECK(mc::scene_control_type(objects) == mc::ValueType::torque_1d);
    objects["b"].control_types_in_order.push_back(mc::ValueType::angle);
    CHECK(mc::scene_control_type(objects) == mc::ValueType::multiple);
}
