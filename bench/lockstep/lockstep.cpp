// SPDX-License-Identifier: Apache-2.0
#include "lockstep.hpp"

#include "gecko/click_gateway/translate.hpp"
#include <gecko/codec.hpp>

#include <sys/resource.h>

namespace lockstep {

namespace {

// Two 9-joint arms with a gripper and a wrist force/torque sensor, and a box.
constexpr int kRobots = 2;
constexpr int kJoints = 9;

std::string robot_name(int r) { return "robot" + std::to_string(r + 1); }

}  // namespace

Scene make_scene() {
    Scene s;
    for (int r = 0; r < kRobots; ++r) {
        auto& h = s.handshake.objects[robot_name(r)];
        for (int j = 0; j < kJoints; ++j) {
            h.controls_in_order.push_back("joint" + std::to_string(j + 1));
            h.control_types_in_order.push_back(mc::ValueType::angle);
        }
        h.joint_sensors_in_order = h.controls_in_order;
        h.joint_sensors = {mc::ValueType::angle, mc::ValueType::angular_velocity_1d, mc::ValueType::torque_1d};
        h.control_events["gripper"] = mc::ValueType::activated;
        h.sensors["wrist"] = {mc::ValueType::force_3d, mc::ValueType::torque_3d};
        h.object_sensors = {mc::ValueType::position, mc::ValueType::rpy};

        auto& o = s.sensor.objects[robot_name(r)];
        for (int j = 0; j < kJoints; ++j) {
            o.angle_sensors.push_back(0.1 * j + 0.01 * r);
            o.angular_velocity_sensors.push_back(-0.2 * j);
            o.torque_sensors.push_back(1.5 * j + 0.25);
        }
        o.sensors["wrist"] = {{mc::ValueType::force_3d, {1.0, -2.0, 9.81}}, {mc::ValueType::torque_3d, {0.1, 0.2, -0.3}}};
        o.object_sensors = {{mc::ValueType::position, {0.5, 1.0 * r, 0.75}}, {mc::ValueType::rpy, {0.0, 0.1, 1.57}}};

        auto& c = s.control.objects[robot_name(r)];
        c.values.assign(kJoints, 0.0);
        for (int j = 0; j < kJoints; ++j) c.values[j] = 0.05 * j;
        c.control_events["gripper"] = r == 0;
    }
    s.handshake.objects["box"].object_sensors = {mc::ValueType::position, mc::ValueType::rpy, mc::ValueType::velocity_3d,
                                                 mc::ValueType::angular_velocity_3d};
    s.handshake.control_type = mc::scene_control_type(s.handshake.objects);
    s.handshake.time_step = 0.001;
    s.sensor.objects["box"].object_sensors = {{mc::ValueType::position, {2.0, 0.0, 0.1}},
                                              {mc::ValueType::rpy, {0.0, 0.0, 0.3}},
                                              {mc::ValueType::velocity_3d, {0.01, -0.02, 0.0}},
                                              {mc::ValueType::angular_velocity_3d, {0.0, 0.0, 0.05}}};
    s.sensor.simulated_time = 1234.567;

    // The Click client's Control, by hand as a Click client builds it.
    s.click_control.set_messagetype(pb::ControlMessageType);
    for (const auto& [name, object] : s.control.objects) {
        auto& o = (*s.click_control.mutable_objects())[name];
        for (double v : object.values) o.add_values(v);
        for (const auto& [event, on] : object.control_events) (*o.mutable_controlevents())[event] = on;
    }
    s.click_control_bytes = s.click_control.SerializeAsString();
    auto encoded = gecko::click::encode(s.sensor);
    if (auto* e = std::get_if<gecko::click::EncodeError>(&encoded)) throw Stall("the bench Sensor is not Click: " + e->reason);
    s.click_sensor_bytes = std::get<std::string>(encoded);

    gecko::click::Request request;
    request.controller_id = "bench-controller-0123abcd";
    request.request_id = 123456;
    request.kind = gecko::click::RequestKind::control;
    request.control = s.control;
    request.control->request_id = request.request_id;
    gecko::Buffer b;
    gecko::codec::encode(b, request);
    s.gecko_request_bytes = b.size();
    gecko::click::Answer answer;
    answer.controller_id = request.controller_id;
    answer.answers = request.request_id;
    answer.kind = gecko::click::AnswerKind::sensor;
    answer.simulation = "sim";
    answer.sensor = s.sensor;
    answer.sensor->answers = request.request_id;
    gecko::Buffer a;
    gecko::codec::encode(a, answer);
    s.gecko_answer_bytes = a.size();
    return s;
}

/// A node that binds exactly `listen` and links to `peer` (discovery off);
/// without them, one reachable in this process only (inproc).
gecko::Node bench_node(const std::string& name, const std::string& listen, const std::string& peer,
                       std::chrono::microseconds spin) {
    gecko::NodeOptions o;
    o.key = "lockstep-bench";
    o.name = name;
    o.discovery = false;
    o.transports = {"inproc"};
    o.spin = spin;
    if (!listen.empty()) o.listen = {listen};
    if (!peer.empty()) o.peers = {peer};
    return gecko::Node(o);
}

void wait_done(Child& self) {
    const auto deadline = Clock::now() + milliseconds(110000);
    for (PipeMsg m; Clock::now() < deadline;) {
        if (self.receive(m, milliseconds(1000)) && m.kind == kDone) return;
    }
    throw Stall("the parent never ended the run");
}

double process_cpu_us() {
    rusage r{};
    ::getrusage(RUSAGE_SELF, &r);
    auto us = [](const timeval& t) { return static_cast<double>(t.tv_sec) * 1e6 + static_cast<double>(t.tv_usec); };
    return us(r.ru_utime) + us(r.ru_stime);
}

zmq::socket_t req_socket(zmq::context_t& context, const std::string& endpoint) {
    zmq::socket_t s(context, zmq::socket_type::req);
    s.set(zmq::sockopt::linger, 0);
    s.set(zmq::sockopt::rcvtimeo, static_cast<int>(kSetupTimeout.count()));
    s.set(zmq::sockopt::sndtimeo, static_cast<int>(kStepTimeout.count()));
    s.connect(endpoint);
    return s;
}

}  // namespace lockstep
