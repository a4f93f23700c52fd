# SPDX-License-Identifier: Apache-2.0
"""The Click lockstep messages (C++ msgs/include/gecko/msgs/click.hpp) and the
two envelopes that carry them over a pair of topics (C++
gecko/click/include/gecko/click/lockstep_msgs.hpp): controllers publish
Request on PREFIX/click/request, the simulation publishes Answer on
PREFIX/click/answer."""

from ..message import (define, enum_type, BOOL, I32, U64, STR, F64, List, Array, Map, Optional)

_M = __name__

ValueType = enum_type("ValueType", [
    ("angle", 0, "Angle"), ("angular_velocity_1d", 1, "AngularVelocity1D"), ("torque_1d", 2, "Torque1D"),
    ("position", 3, "Position"), ("rpy", 4, "RPY"), ("activated", 5, "Activated"),
    ("acceleration_3d", 6, "Acceleration3D"), ("force_3d", 7, "Force3D"), ("torque_3d", 8, "Torque3D"),
    ("angular_acceleration_3d", 9, "AngularAcceleration3D"), ("velocity_3d", 10, "Velocity3D"),
    ("angular_velocity_3d", 11, "AngularVelocity3D"), ("force_1d", 12, "Force1D"), ("multiple", 15, "Multiple")])
ValueType.__module__ = _M

Direction = enum_type("Direction", [("request", 0), ("answer", 1)])
Direction.__module__ = _M

CLICK_CURRENT_VERSION = 1


def size_of(t):
    """How many numbers one value of ValueType `t` holds (1 or 3; 0 for multiple)."""
    t = ValueType(t)
    if t in (ValueType.angle, ValueType.angular_velocity_1d, ValueType.torque_1d, ValueType.activated,
             ValueType.force_1d):
        return 1
    return 0 if t == ValueType.multiple else 3


HandshakeInit = define("gecko.msgs.click.HandshakeInit", [("request_id", U64), ("version", I32, CLICK_CURRENT_VERSION)], module=_M)
SensorRequest = define("gecko.msgs.click.SensorRequest", [("request_id", U64)], module=_M)
ControlObject = define(None, [
    ("values", List(F64)), ("angles", List(F64)), ("angular_velocities", List(F64)), ("torques", List(F64)),
    ("control_events", Map(BOOL))], class_name="ControlObject", module=_M)
Control = define("gecko.msgs.click.Control", [("request_id", U64), ("objects", Map(ControlObject))], module=_M)
HandshakeObject = define(None, [
    ("controls_in_order", List(STR)), ("control_types_in_order", List(ValueType)),
    ("joint_sensors_in_order", List(STR)), ("joint_sensors", List(ValueType)),
    ("control_events", Map(ValueType)), ("sensors", Map(List(ValueType))), ("object_sensors", List(ValueType))],
    class_name="HandshakeObject", module=_M)
Handshake = define("gecko.msgs.click.Handshake", [
    ("answers", U64), ("version", I32, CLICK_CURRENT_VERSION), ("control_type", ValueType, ValueType.angle),
    ("objects", Map(HandshakeObject)), ("time_step", Optional(F64))], module=_M)
SensorValue = define(None, [("type", ValueType, ValueType.angle), ("value", List(F64))], class_name="SensorValue", module=_M)
SensorObject = define(None, [
    ("angle_sensors", List(F64)), ("angular_velocity_sensors", List(F64)), ("torque_sensors", List(F64)),
    ("force_sensors", List(Array(F64, 3))), ("object_sensors", List(SensorValue)),
    ("sensors", Map(List(SensorValue)))], class_name="SensorObject", module=_M)
Sensor = define("gecko.msgs.click.Sensor", [
    ("answers", U64), ("objects", Map(SensorObject)), ("simulated_time", Optional(F64))], module=_M)
Reset = define("gecko.msgs.click.Reset", [
    ("direction", Direction, Direction.request), ("request_id", U64), ("answers", U64)], module=_M)
Error = define("gecko.msgs.click.Error", [
    ("direction", Direction, Direction.answer), ("request_id", U64), ("answers", U64), ("code", I32),
    ("reason", STR)], module=_M)

RequestKind = enum_type("RequestKind", [
    ("handshake_init", 0, "HandshakeInit"), ("sensor_request", 1, "SensorRequest"), ("control", 2, "Control"),
    ("reset", 3, "Reset"), ("error", 4, "Error")])
RequestKind.__module__ = _M
AnswerKind = enum_type("AnswerKind", [
    ("handshake", 0, "Handshake"), ("sensor", 1, "Sensor"), ("reset", 2, "Reset"), ("error", 3, "Error"),
    ("ended", 4, "Ended")])
AnswerKind.__module__ = _M

Request = define("gecko.msgs.click.Request", [
    ("controller_id", STR), ("request_id", U64), ("kind", RequestKind, RequestKind.sensor_request),
    ("handshake_init", Optional(HandshakeInit)), ("sensor_request", Optional(SensorRequest)),
    ("control", Optional(Control)), ("reset", Optional(Reset)), ("error", Optional(Error)),
    ("answer_subscriber", Optional(U64))], module=_M)
Answer = define("gecko.msgs.click.Answer", [
    ("controller_id", STR), ("answers", U64), ("kind", AnswerKind, AnswerKind.error), ("simulation", STR),
    ("handshake", Optional(Handshake)), ("sensor", Optional(Sensor)), ("reset", Optional(Reset)),
    ("error", Optional(Error))], module=_M)


def lockstep_topics(prefix):
    """(request topic, answer topic) of the simulation named `prefix` ("sim")."""
    p = prefix.rstrip("/")
    return p + "/click/request", p + "/click/answer"
