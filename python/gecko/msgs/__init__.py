# SPDX-License-Identifier: Apache-2.0
"""The message types of Gecko's msgs/ (C++ gecko::msgs), as Python dataclasses
with the same field names, defaults and type names. tests/python/test_msgs_schema.py
checks them against the C++ headers, field by field, so the two never drift.

    from gecko.msgs import Imu, Vector3
    m = Imu(stamp_ns=gecko.now_ns(), accel=Vector3(z=9.81))
"""

from .std import String, Float64, Int64, Bytes, Empty
from .geometry import Point2, Vector3, Quaternion, Pose, Twist, Wrench
from .sensors import Imu, Lidar, JointState, Image, Odometry
from . import click, sim

ALL = [String, Float64, Int64, Bytes, Empty, Point2, Vector3, Quaternion, Pose, Twist, Wrench,
       Imu, Lidar, JointState, Image, Odometry,
       click.HandshakeInit, click.SensorRequest, click.Control, click.Handshake, click.Sensor, click.Reset,
       click.Error, click.Request, click.Answer, sim.Status, sim.ControlRequest, sim.ControlReply]

BY_NAME = {cls.__gecko_type__: cls for cls in ALL}


def by_name(type_name):
    """The class of a type name ("gecko.msgs.Imu"), or None."""
    return BY_NAME.get(type_name)
