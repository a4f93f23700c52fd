# SPDX-License-Identifier: Apache-2.0
"""Sensor readings (C++ msgs/include/gecko/msgs/sensors.hpp): stamp_ns, frame_id first."""

from ..message import define, I64, STR, F32, F64, U32, BYTES, List
from .geometry import Vector3, Quaternion, Pose, Twist

_M = __name__

Imu = define("gecko.msgs.Imu", [
    ("stamp_ns", I64), ("frame_id", STR), ("accel", Vector3), ("gyro", Vector3), ("mag", Vector3),
    ("orientation", Quaternion)], module=_M)

Lidar = define("gecko.msgs.Lidar", [
    ("stamp_ns", I64), ("frame_id", STR), ("angles", List(F32)), ("ranges", List(F32))], module=_M)

JointState = define("gecko.msgs.JointState", [
    ("stamp_ns", I64), ("frame_id", STR), ("names", List(STR)), ("position", List(F64)),
    ("velocity", List(F64)), ("effort", List(F64))], module=_M)

Image = define("gecko.msgs.Image", [
    ("stamp_ns", I64), ("frame_id", STR), ("width", U32), ("height", U32), ("encoding", STR),
    ("step", U32), ("data", BYTES)], module=_M)

Odometry = define("gecko.msgs.Odometry", [
    ("stamp_ns", I64), ("frame_id", STR), ("child_frame_id", STR), ("pose", Pose), ("twist", Twist)], module=_M)
