# SPDX-License-Identifier: Apache-2.0
"""Geometric primitives (C++ msgs/include/gecko/msgs/geometry.hpp). SI units (m, rad, N)."""

from ..message import define, F64

_M = __name__

Point2 = define("gecko.msgs.Point2", [("x", F64), ("y", F64)], module=_M)
Vector3 = define("gecko.msgs.Vector3", [("x", F64), ("y", F64), ("z", F64)], module=_M)
Quaternion = define("gecko.msgs.Quaternion", [("w", F64, 1.0), ("x", F64), ("y", F64), ("z", F64)], module=_M,
                    doc="A unit quaternion, scalar first; the default is the identity (w = 1).")
Pose = define("gecko.msgs.Pose", [("position", Vector3), ("orientation", Quaternion)], module=_M)
Twist = define("gecko.msgs.Twist", [("linear", Vector3), ("angular", Vector3)], module=_M)
Wrench = define("gecko.msgs.Wrench", [("force", Vector3), ("torque", Vector3)], module=_M)
