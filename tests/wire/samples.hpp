// Non-default samples of every gecko.msgs type, for round trips and golden bytes.
#pragma once

#include <gecko/click/lockstep_msgs.hpp>
#include <gecko/msgs/all.hpp>
#include <gecko/msgs/click.hpp>

#include <cstdint>
#include <limits>
#include <vector>

namespace samples {

namespace m = gecko::msgs;
namespace mc = gecko::msgs::click;

inline m::Point2 sample(m::Point2*) { return {1.5, -2.25}; }
inline m::Vector3 sample(m::Vector3*) { return {1.0, -0.0, 9.81}; }
inline m::Quaternion sample(m::Quaternion*) { return {0.5, 0.5, -0.5, 0.5}; }
inline m::Pose sample(m::Pose*) { return {{1.0, 2.0, 3.0}, {0.0, 1.0, 0.0, 0.0}}; }
inline m::Twist sample(m::Twist*) { return {{0.5, 0.0, 0.0}, {0.0, 0.0, -0.3}}; }
inline m::Wrench sample(m::Wrench*) { return {{10.0, 0.0, -9.5}, {0.1, 0.2, 0.3}}; }

inline m::Imu sample(m::Imu*) {
    m::Imu s;
    s.stamp_ns = 1700000000123456789;
    s.frame_id = "imu_link";
    s.accel = {0.11, -0.02, 9.81};
    s.gyro = {0.01, 0.02, -0.03};
    s.mag = {2.1e-5, 3.3e-6, -4.2e-5};
    s.orientation = {0.99, 0.01, 0.02, 0.03};
    return s;
}

inline m::Lidar sample(m::Lidar*) {
    m::Lidar s;
    s.stamp_ns = 1;
    s.frame_id = "laser";
    s.angles = {0.0f, 0.5f, 1.0f};
    s.ranges = {1.5f, std::numeric_limits<float>::infinity(), -0.0f};
    return s;
}

inline m::JointState sample(m::JointState*) {
    m::JointState s;
    s.stamp_ns = -5;
    s.frame_id = "base";
    s.names = {"hip", "knee"};
    s.position = {0.5, -1.0};
    s.effort = {300.0, 1e-3};
    return s;
}

inline m::Image sample(m::Image*) {
    m::Image s;
    s.stamp_ns = 99;
    s.frame_id = "cam";
    s.width = 2;
    s.height = 1;
    s.encoding = "mono8";
    s.step = 300;
    s.data = {7, 200};
    return s;
}

inline m::Odometry sample(m::Odometry*) {
    m::Odometry s;
    s.stamp_ns = 5;
    s.frame_id = "odom";
    s.child_frame_id = "base_link";
    s.pose = {{1.0, 2.0, 0.0}, {0.7071, 0.0, 0.0, 0.7071}};
    s.twist = {{0.3, 0.0, 0.0}, {0.0, 0.0, 0.1}};
    return s;
}

inline m::String sample(m::String*) { return {"h\xc3\xa9llo"}; }
inline m::Float64 sample(m::Float64*) { return {-3.5}; }
inline m::Int64 sample(m::Int64*) { return {std::numeric_limits<std::int64_t>::min()}; }
inline m::Bytes sample(m::Bytes*) { return {{0x01, 0x02, 0xff}}; }
inline m::Empty sample(m::Empty*) { return {}; }

inline mc::HandshakeInit sample(mc::HandshakeInit*) {
    mc::HandshakeInit s;
    s.request_id = 1;
    s.version = 2;
    return s;
}

inline mc::SensorRequest sample(mc::SensorRequest*) { return mc::SensorRequest{3}; }

inline mc::Control sample(mc::Control*) {
    mc::Control s;
    s.request_id = 4;
    s.objects["robot1"].values = {0.5};
    s.objects["robot1"].control_events["gripper"] = true;
    return s;
}

inline mc::Handshake sample(mc::Handshake*) {
    mc::Handshake s;
    s.answers = 1;
    s.control_type = mc::ValueType::multiple;
    s.time_step = 0.01;
    s.objects["r"].control_types_in_order = {mc::ValueType::angle, mc::ValueType::torque_1d};
    s.objects["r"].control_events["g"] = mc::ValueType::activated;
    return s;
}

inline mc::Sensor sample(mc::Sensor*) {
    mc::Sensor s;
    s.answers = 2;
    s.simulated_time = 1.0;
    s.objects["o"].force_sensors = {{1.0, 2.5, -3.0}};
    s.objects["o"].object_sensors = {{mc::ValueType::position, {1, 2, 3}}};
    s.objects["o"].sensors["imu"] = {{mc::ValueType::acceleration_3d, {0.0, 0.0, 9.81}}};
    return s;
}

inline mc::Reset sample(mc::Reset*) {
    mc::Reset s;
    s.direction = mc::Direction::answer;
    s.request_id = 5;
    s.answers = 70000;
    return s;
}

inline mc::Error sample(mc::Error*) {
    mc::Error s;
    s.direction = mc::Direction::request;
    s.request_id = 6;
    s.code = 1;
    s.reason = "object 'robot9' is unknown";
    return s;
}

inline gecko::click::Request sample(gecko::click::Request*) {
    gecko::click::Request s;
    s.controller_id = "ctl-9f2c";
    s.request_id = 7;
    s.kind = gecko::click::RequestKind::control;
    s.control = sample(static_cast<mc::Control*>(nullptr));
    return s;
}

inline gecko::click::Answer sample(gecko::click::Answer*) {
    gecko::click::Answer s;
    s.controller_id = "ctl-9f2c";
    s.answers = 7;
    s.kind = gecko::click::AnswerKind::sensor;
    s.simulation = "sim";
    s.sensor = sample(static_cast<mc::Sensor*>(nullptr));
    return s;
}

template <class T>
T sample() {
    return sample(static_cast<T*>(nullptr));
}

}  // namespace samples
