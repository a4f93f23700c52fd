// SPDX-License-Identifier: Apache-2.0
#include "sim_backend.hpp"

namespace gecko::sim {

namespace {

using gecko::msgs::click::ValueType;

ValueType value_type(ControlType t) {
    switch (t) {
        case ControlType::angle: return ValueType::angle;
        case ControlType::angular_velocity: return ValueType::angular_velocity_1d;
        case ControlType::torque: return ValueType::torque_1d;
    }
    return ValueType::angle;
}

// `values` becomes one value of type `type` with [first, last): in place.
template <class It>
void set_values(std::vector<gecko::msgs::click::SensorValue>& values, ValueType type, It first, It last) {
    values.resize(1);
    values[0].type = type;
    values[0].value.assign(first, last);
}

}  // namespace

gecko::msgs::click::Handshake ClickBackend::handshake() {
    gecko::msgs::click::Handshake h;
    for (const RobotConfig& robot : sim_.scene().robots) {
        auto& o = h.objects[robot.name];
        for (const JointConfig& joint : robot.joints) {
            o.controls_in_order.push_back(joint.name);
            o.control_types_in_order.push_back(value_type(joint.control));
            o.joint_sensors_in_order.push_back(joint.name);
        }
        o.joint_sensors = {ValueType::angle, ValueType::angular_velocity_1d, ValueType::torque_1d};
        o.sensors["tip"] = {ValueType::position};
        if (robot.gripper) {
            o.control_events["gripper"] = ValueType::activated;
            o.sensors["gripper"] = {ValueType::activated};
        }
    }
    for (const BoxConfig& box : sim_.scene().boxes) {
        h.objects[box.name].object_sensors = {ValueType::position, ValueType::rpy};
    }
    h.control_type = gecko::msgs::click::scene_control_type(h.objects);
    h.time_step = sim_.scene().time_step;
    return h;
}

void ClickBackend::apply(const gecko::msgs::click::Control& control) {
    // The server checked the control against handshake(): objects and events exist, sizes match.
    for (const auto& [name, object] : control.objects) {
        const auto index = sim_.robot_index(name);
        if (!index) continue;  // a box: nothing to control
        const auto& values = gecko::click::control_values(object);
        const auto gripper = object.control_events.find("gripper");
        if (!values.empty()) {
            RobotControl c = sim_.control(*index);
            c.values = values;
            if (gripper != object.control_events.end()) c.gripper_activated = gripper->second;
            sim_.set_control(*index, c);
        } else if (gripper != object.control_events.end()) {
            sim_.set_gripper(*index, gripper->second);
        }
    }
}

gecko::msgs::click::Sensor ClickBackend::sensors() {
    gecko::msgs::click::Sensor s;
    fill_sensors(s);
    return s;
}

// Assigned into `s` field by field: the server passes the same Sensor every
// step, and the scene's objects never change, so its maps and vectors keep
// their memory.
void ClickBackend::fill_sensors(gecko::msgs::click::Sensor& s) {
    for (std::size_t r = 0; r < sim_.robot_count(); ++r) {
        const RobotConfig& config = sim_.scene().robots[r];
        const RobotState& state = sim_.robot(r);
        auto& o = s.objects[config.name];
        o.angle_sensors = state.angles;
        o.angular_velocity_sensors = state.angular_velocities;
        o.torque_sensors = state.torques;
        set_values(o.sensors["tip"], ValueType::position, state.tip_position.begin(), state.tip_position.end());
        if (config.gripper) {
            const double activated = state.gripper_activated ? 1.0 : 0.0;
            set_values(o.sensors["gripper"], ValueType::activated, &activated, &activated + 1);
        }
    }
    for (std::size_t b = 0; b < sim_.box_count(); ++b) {
        const BoxState& box = sim_.box(b);
        auto& o = s.objects[sim_.scene().boxes[b].name];
        o.object_sensors.resize(2);
        o.object_sensors[0].type = ValueType::position;
        o.object_sensors[0].value.assign(box.position.begin(), box.position.end());
        o.object_sensors[1].type = ValueType::rpy;
        o.object_sensors[1].value.assign(box.rpy.begin(), box.rpy.end());
    }
    s.simulated_time = sim_.time();
}

void ClickBackend::stop_actuators() {
    for (std::size_t r = 0; r < sim_.robot_count(); ++r) {
        const auto& joints = sim_.scene().robots[r].joints;
        RobotControl c = sim_.control(r);
        for (std::size_t j = 0; j < joints.size(); ++j) {
            c.values[j] = joints[j].control == ControlType::angle ? sim_.robot(r).angles[j] : 0.0;
        }
        sim_.set_control(r, c);
    }
}

gecko::msgs::JointState ClickBackend::joint_state() const {
    gecko::msgs::JointState js;
    js.frame_id = "world";
    for (std::size_t r = 0; r < sim_.robot_count(); ++r) {
        const RobotConfig& config = sim_.scene().robots[r];
        const RobotState& state = sim_.robot(r);
        for (std::size_t j = 0; j < config.joints.size(); ++j) {
            js.names.push_back(config.name + "/" + config.joints[j].name);
            js.position.push_back(state.angles[j]);
            js.velocity.push_back(state.angular_velocities[j]);
            js.effort.push_back(state.torques[j]);
        }
    }
    return js;
}

}  // namespace gecko::sim
