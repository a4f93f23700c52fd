// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file click.hpp
/// Gecko's message types for the Click lockstep protocol (Algoryx Click).
///
/// One struct per Click message: HandshakeInit, Handshake, SensorRequest,
/// Control, Sensor, Reset, Error. Each mirrors the Click protobuf message of the
/// same name field by field (Click's `camelCase` names become `snake_case`),
/// plus the two fields Gecko needs to pair requests with answers over topics:
///
/// - every request carries `request_id`, chosen by the requester;
/// - every answer carries `answers`, the `request_id` of the request it answers.
///
/// Reset and Error travel both ways (a client may send them, and the simulation
/// answers a Control with them), so they carry both ids and a `direction`.
/// Click's own protobuf has none of these: the gateway fills them in.
///
/// Encoding: msgpack maps with field names as keys, like every Gecko message.
/// Enums (ValueType, Direction) are encoded as **strings** ("Angle",
/// "AngularVelocity1D", "request", ...; GECKO_MSG_ENUM), so that a tool
/// printing a message as JSON shows `"type": "Force3D"` rather than
/// `"type": 7`. ValueType strings are Click's own enum names; when decoding,
/// Click's integer values are accepted too (GECKO_MSG_ENUM accepts the number
/// of any listed enumerator). Optional values (`time_step`, `simulated_time`)
/// are nil when absent.
///
/// **Example**:
/// ```cpp
/// gecko::msgs::click::Control c;
/// c.request_id = 42;
/// c.objects["robot1"].values = {0.1, -0.2};             // typed by the handshake
/// c.objects["robot1"].control_events["gripper"] = true;
/// ```

#include <gecko/message.hpp>
#include <gecko/msgs/codec.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

namespace gecko::msgs::click {

/// The kind, and so the unit and size, of a Click control or sensor value.
/// The numeric values are Click's (`click.protobuf.ValueType`).
enum class ValueType : std::int32_t {
    angle = 0,                     ///< "Angle": rad, 1 number
    angular_velocity_1d = 1,       ///< "AngularVelocity1D": rad/s, 1 number
    torque_1d = 2,                 ///< "Torque1D": N m, 1 number
    position = 3,                  ///< "Position": m, 3 numbers
    rpy = 4,                       ///< "RPY": rad (roll, pitch, yaw), 3 numbers
    activated = 5,                 ///< "Activated": bool (1 number, 0 or 1 in a Sensor)
    acceleration_3d = 6,           ///< "Acceleration3D": m/s^2, 3 numbers
    force_3d = 7,                  ///< "Force3D": N, 3 numbers
    torque_3d = 8,                 ///< "Torque3D": N m, 3 numbers
    angular_acceleration_3d = 9,   ///< "AngularAcceleration3D": rad/s^2, 3 numbers
    velocity_3d = 10,              ///< "Velocity3D": m/s, 3 numbers
    angular_velocity_3d = 11,      ///< "AngularVelocity3D": rad/s, 3 numbers
    force_1d = 12,                 ///< "Force1D": N, 1 number
    multiple = 15,                 ///< "Multiple": only in Handshake::control_type, when joints differ
};

// On the wire a ValueType is Click's name for it (a msgpack str).
GECKO_MSG_ENUM_NAMED(ValueType, (angle, "Angle"), (angular_velocity_1d, "AngularVelocity1D"), (torque_1d, "Torque1D"),
                     (position, "Position"), (rpy, "RPY"), (activated, "Activated"),
                     (acceleration_3d, "Acceleration3D"), (force_3d, "Force3D"), (torque_3d, "Torque3D"),
                     (angular_acceleration_3d, "AngularAcceleration3D"), (velocity_3d, "Velocity3D"),
                     (angular_velocity_3d, "AngularVelocity3D"), (force_1d, "Force1D"), (multiple, "Multiple"))

/// All fourteen value types, in Click's declaration order.
inline constexpr std::array<ValueType, 14> all_value_types{
    ValueType::angle,           ValueType::angular_velocity_1d,     ValueType::torque_1d,
    ValueType::position,        ValueType::rpy,                     ValueType::activated,
    ValueType::acceleration_3d, ValueType::force_1d,                ValueType::force_3d,
    ValueType::torque_3d,       ValueType::angular_acceleration_3d, ValueType::velocity_3d,
    ValueType::angular_velocity_3d, ValueType::multiple};

/// Click's name for `t` ("Angle", "AngularVelocity1D", ...), as written on the wire.
constexpr const char* to_string(ValueType t) noexcept {
    const std::string_view name = wire::enum_name(t);
    return name.empty() ? "?" : name.data();
}

/// The SI unit of `t` ("rad", "rad/s", "N m", "m", "m/s^2", "N", "bool"; "" for Multiple).
constexpr const char* unit_of(ValueType t) noexcept {
    switch (t) {
        case ValueType::angle:
        case ValueType::rpy: return "rad";
        case ValueType::angular_velocity_1d:
        case ValueType::angular_velocity_3d: return "rad/s";
        case ValueType::torque_1d:
        case ValueType::torque_3d: return "N m";
        case ValueType::position: return "m";
        case ValueType::activated: return "bool";
        case ValueType::acceleration_3d: return "m/s^2";
        case ValueType::force_1d:
        case ValueType::force_3d: return "N";
        case ValueType::angular_acceleration_3d: return "rad/s^2";
        case ValueType::velocity_3d: return "m/s";
        case ValueType::multiple: return "";
    }
    return "";
}

/// How many numbers one value of type `t` holds: 1 or 3 (0 for Multiple).
constexpr std::size_t size_of(ValueType t) noexcept {
    switch (t) {
        case ValueType::angle:
        case ValueType::angular_velocity_1d:
        case ValueType::torque_1d:
        case ValueType::activated:
        case ValueType::force_1d: return 1;
        case ValueType::multiple: return 0;
        default: return 3;
    }
}

/// The value type named `name` (Click's spelling, case-sensitive), or nullopt.
constexpr std::optional<ValueType> value_type_from_string(std::string_view name) noexcept {
    return wire::enum_from_name<ValueType>(name);
}

/// The value type whose Click number is `number`, or nullopt (Click enums are open:
/// a peer may send a number this schema does not know).
constexpr std::optional<ValueType> value_type_from_number(std::int64_t number) noexcept {
    for (ValueType t : all_value_types) {
        if (number == static_cast<std::int64_t>(t)) return t;
    }
    return std::nullopt;
}

/// Whether a Reset or Error is a request (sent by the controller) or an answer
/// (sent by the simulation). Encoded as "request" / "answer".
enum class Direction : std::uint8_t {
    request = 0,
    answer = 1,
};

GECKO_MSG_ENUM(Direction, request, answer)

constexpr const char* to_string(Direction d) noexcept { return d == Direction::answer ? "answer" : "request"; }

/// Click's protocol version (`click.protobuf.Version`): 0 undefined, 1 current.
inline constexpr std::int32_t click_current_version = 1;

// ---------------------------------------------------------------------------
// Requests (controller -> simulation)
// ---------------------------------------------------------------------------

/// Opens a session; answered by a Handshake. Click: HandshakeInitMessage.
struct HandshakeInit {
    static constexpr const char* type_name = "gecko.msgs.click.HandshakeInit";

    std::uint64_t request_id{0};                    ///< chosen by the requester; echoed in `answers`
    std::int32_t version{click_current_version};    ///< the client's Click protocol version

    bool operator==(const HandshakeInit& o) const { return std::tie(request_id, version) == std::tie(o.request_id, o.version); }
    bool operator!=(const HandshakeInit& o) const { return !(*this == o); }
    GECKO_MSG_FIELDS(request_id, version)
};

/// Asks for the current sensor values without stepping the simulation; answered
/// by a Sensor (or a Reset). Click: SensorRequestMessage.
struct SensorRequest {
    static constexpr const char* type_name = "gecko.msgs.click.SensorRequest";

    std::uint64_t request_id{0};  ///< chosen by the requester; echoed in `answers`

    bool operator==(const SensorRequest& o) const { return request_id == o.request_id; }
    bool operator!=(const SensorRequest& o) const { return !(*this == o); }
    GECKO_MSG_FIELDS(request_id)
};

/// One object's (robot's) controls in a Control. At most one of `values`,
/// `angles`, `angular_velocities` and `torques` is non-empty; a Control that sets
/// two of them is invalid (the translation refuses it).
struct ControlObject {
    std::vector<double> values;              ///< one per control, typed by Handshake `control_types_in_order`
    std::vector<double> angles;              ///< deprecated (Click): every joint angle-controlled, rad
    std::vector<double> angular_velocities;  ///< deprecated (Click): every joint velocity-controlled, rad/s
    std::vector<double> torques;             ///< deprecated (Click): every joint torque-controlled, N m
    std::map<std::string, bool> control_events;  ///< e.g. {"gripper": true}; absent = unchanged

    bool operator==(const ControlObject& o) const {
        return std::tie(values, angles, angular_velocities, torques, control_events) ==
               std::tie(o.values, o.angles, o.angular_velocities, o.torques, o.control_events);
    }
    bool operator!=(const ControlObject& o) const { return !(*this == o); }
    GECKO_MSG_FIELDS(values, angles, angular_velocities, torques, control_events)
};

/// Sets the controls and steps the simulation once; answered by a Sensor, a Reset
/// or an Error. Click: ControlMessage.
struct Control {
    static constexpr const char* type_name = "gecko.msgs.click.Control";

    std::uint64_t request_id{0};                    ///< chosen by the requester; echoed in `answers`
    std::map<std::string, ControlObject> objects;   ///< key: object (robot) name

    bool operator==(const Control& o) const { return std::tie(request_id, objects) == std::tie(o.request_id, o.objects); }
    bool operator!=(const Control& o) const { return !(*this == o); }
    GECKO_MSG_FIELDS(request_id, objects)
};

// ---------------------------------------------------------------------------
// Answers (simulation -> controller)
// ---------------------------------------------------------------------------

/// What one object (robot) of the scene offers, in a Handshake.
struct HandshakeObject {
    std::vector<std::string> controls_in_order;        ///< joints, in the order of ControlObject values
    std::vector<ValueType> control_types_in_order;     ///< one per control (never Multiple)
    std::vector<std::string> joint_sensors_in_order;   ///< joints, in the order of SensorObject arrays
    std::vector<ValueType> joint_sensors;              ///< which joint arrays a Sensor carries (Angle, AngularVelocity1D, Torque1D, Force3D)
    std::map<std::string, ValueType> control_events;   ///< e.g. {"gripper": Activated}
    std::map<std::string, std::vector<ValueType>> sensors;  ///< named sensors -> the types of their values, in order
    std::vector<ValueType> object_sensors;             ///< e.g. [Position, RPY]

    bool operator==(const HandshakeObject& o) const {
        return std::tie(controls_in_order, control_types_in_order, joint_sensors_in_order, joint_sensors,
                        control_events, sensors, object_sensors) ==
               std::tie(o.controls_in_order, o.control_types_in_order, o.joint_sensors_in_order, o.joint_sensors,
                        o.control_events, o.sensors, o.object_sensors);
    }
    bool operator!=(const HandshakeObject& o) const { return !(*this == o); }
    GECKO_MSG_FIELDS(controls_in_order, control_types_in_order, joint_sensors_in_order, joint_sensors,
                       control_events, sensors, object_sensors)
};

/// Tells the controller what to expect: objects, their controls and sensors, and
/// the time step. Answers a HandshakeInit. Click: HandshakeMessage.
struct Handshake {
    static constexpr const char* type_name = "gecko.msgs.click.Handshake";

    std::uint64_t answers{0};                          ///< request_id of the HandshakeInit answered
    std::int32_t version{click_current_version};       ///< Click protocol version
    ValueType control_type{ValueType::angle};          ///< deprecated (Click): scene-wide control type, Multiple if joints differ; see scene_control_type()
    std::map<std::string, HandshakeObject> objects;    ///< key: object (robot) name
    std::optional<double> time_step;                   ///< simulation time step, s; absent if not sent

    bool operator==(const Handshake& o) const {
        return std::tie(answers, version, control_type, objects, time_step) ==
               std::tie(o.answers, o.version, o.control_type, o.objects, o.time_step);
    }
    bool operator!=(const Handshake& o) const { return !(*this == o); }
    GECKO_MSG_FIELDS(answers, version, control_type, objects, time_step)
};

/// The deprecated scene-wide control type for `objects`: the control type all
/// joints share, or Multiple when they differ (Angle when there are no controls).
inline ValueType scene_control_type(const std::map<std::string, HandshakeObject>& objects) {
    std::optional<ValueType> common;
    for (const auto& [name, object] : objects) {
        for (ValueType t : object.control_types_in_order) {
            if (!common) common = t;
            else if (*common != t) return ValueType::multiple;
        }
    }
    return common.value_or(ValueType::angle);
}

/// One typed value of a sensor: `value` holds size_of(type) numbers (Activated: 0 or 1).
struct SensorValue {
    ValueType type{ValueType::angle};
    std::vector<double> value;  ///< in the unit of `type` (unit_of)

    bool operator==(const SensorValue& o) const { return std::tie(type, value) == std::tie(o.type, o.value); }
    bool operator!=(const SensorValue& o) const { return !(*this == o); }
    GECKO_MSG_FIELDS(type, value)
};

/// One object's sensor readings in a Sensor; arrays are in Handshake
/// `joint_sensors_in_order` order and present only if the handshake listed them.
struct SensorObject {
    std::vector<double> angle_sensors;                      ///< rad, one per joint
    std::vector<double> angular_velocity_sensors;           ///< rad/s, one per joint
    std::vector<double> torque_sensors;                     ///< N m, one per joint
    std::vector<std::array<double, 3>> force_sensors;       ///< N, one per joint
    std::vector<SensorValue> object_sensors;                ///< in Handshake `object_sensors` order
    std::map<std::string, std::vector<SensorValue>> sensors;  ///< named sensors, values in Handshake order

    bool operator==(const SensorObject& o) const {
        return std::tie(angle_sensors, angular_velocity_sensors, torque_sensors, force_sensors, object_sensors, sensors) ==
               std::tie(o.angle_sensors, o.angular_velocity_sensors, o.torque_sensors, o.force_sensors,
                        o.object_sensors, o.sensors);
    }
    bool operator!=(const SensorObject& o) const { return !(*this == o); }
    GECKO_MSG_FIELDS(angle_sensors, angular_velocity_sensors, torque_sensors, force_sensors, object_sensors, sensors)
};

/// The sensor values after a step (answers a Control) or now (answers a
/// SensorRequest). Click: SensorMessage.
struct Sensor {
    static constexpr const char* type_name = "gecko.msgs.click.Sensor";

    std::uint64_t answers{0};                      ///< request_id of the Control or SensorRequest answered
    std::map<std::string, SensorObject> objects;   ///< key: object name
    std::optional<double> simulated_time;          ///< s; absent if not sent

    bool operator==(const Sensor& o) const {
        return std::tie(answers, objects, simulated_time) == std::tie(o.answers, o.objects, o.simulated_time);
    }
    bool operator!=(const Sensor& o) const { return !(*this == o); }
    GECKO_MSG_FIELDS(answers, objects, simulated_time)
};

// ---------------------------------------------------------------------------
// Both ways
// ---------------------------------------------------------------------------

/// As a request: reset the simulation to its initial state and pause; answered by
/// a Reset. As an answer: the simulation was reset (by the client or from the
/// simulation side) and stays paused until the next Control. Click: ResetMessage.
struct Reset {
    static constexpr const char* type_name = "gecko.msgs.click.Reset";

    Direction direction{Direction::request};
    std::uint64_t request_id{0};  ///< when a request: chosen by the requester
    std::uint64_t answers{0};     ///< when an answer: request_id of the request answered

    bool operator==(const Reset& o) const {
        return std::tie(direction, request_id, answers) == std::tie(o.direction, o.request_id, o.answers);
    }
    bool operator!=(const Reset& o) const { return !(*this == o); }
    GECKO_MSG_FIELDS(direction, request_id, answers)
};

/// As a request: the controller ends the simulation. As an answer: the request
/// could not be served, and `reason` says why. Click: ErrorMessage.
struct Error {
    static constexpr const char* type_name = "gecko.msgs.click.Error";

    Direction direction{Direction::answer};
    std::uint64_t request_id{0};  ///< when a request: chosen by the requester
    std::uint64_t answers{0};     ///< when an answer: request_id of the request answered
    std::int32_t code{0};         ///< Click ErrorType; 0 = VersionNotSupported (the only one, and the default)
    std::string reason;           ///< Click `errormessage`: what is wrong, for people

    bool operator==(const Error& o) const {
        return std::tie(direction, request_id, answers, code, reason) ==
               std::tie(o.direction, o.request_id, o.answers, o.code, o.reason);
    }
    bool operator!=(const Error& o) const { return !(*this == o); }
    GECKO_MSG_FIELDS(direction, request_id, answers, code, reason)
};

}  // namespace gecko::msgs::click
