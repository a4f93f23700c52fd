// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file geometry.hpp
/// Geometric primitives: points, vectors, rotations, poses, velocities, forces.
/// SI units throughout (m, rad, N). Each is also a message in its own right,
/// so a topic may carry, say, a bare Pose.

#include <gecko/msgs/codec.hpp>

namespace gecko::msgs {

/// A point or vector in the plane, in m unless the topic says otherwise.
struct Point2 {
    static constexpr const char* type_name = "gecko.msgs.Point2";
    double x = 0.0;
    double y = 0.0;

    bool operator==(const Point2& o) const { return x == o.x && y == o.y; }
    bool operator!=(const Point2& o) const { return !(*this == o); }
    GECKO_MSG_FIELDS(x, y)
};

/// A 3-D vector; its unit is that of the field holding it.
struct Vector3 {
    static constexpr const char* type_name = "gecko.msgs.Vector3";
    double x = 0.0;
    double y = 0.0;
    double z = 0.0;

    bool operator==(const Vector3& o) const { return x == o.x && y == o.y && z == o.z; }
    bool operator!=(const Vector3& o) const { return !(*this == o); }
    GECKO_MSG_FIELDS(x, y, z)
};

/// A rotation as a unit quaternion, scalar first: `Quaternion{w, x, y, z}`.
/// The default is the identity rotation (w = 1). Not normalised on decode.
struct Quaternion {
    static constexpr const char* type_name = "gecko.msgs.Quaternion";
    double w = 1.0;
    double x = 0.0;
    double y = 0.0;
    double z = 0.0;

    bool operator==(const Quaternion& o) const { return w == o.w && x == o.x && y == o.y && z == o.z; }
    bool operator!=(const Quaternion& o) const { return !(*this == o); }
    GECKO_MSG_FIELDS(w, x, y, z)
};

/// Position and orientation of a frame.
struct Pose {
    static constexpr const char* type_name = "gecko.msgs.Pose";
    Vector3 position;        ///< m
    Quaternion orientation;  ///< identity by default

    bool operator==(const Pose& o) const { return position == o.position && orientation == o.orientation; }
    bool operator!=(const Pose& o) const { return !(*this == o); }
    GECKO_MSG_FIELDS(position, orientation)
};

/// Velocity of a rigid body (or a velocity command).
struct Twist {
    static constexpr const char* type_name = "gecko.msgs.Twist";
    Vector3 linear;   ///< m/s
    Vector3 angular;  ///< rad/s, about each axis

    bool operator==(const Twist& o) const { return linear == o.linear && angular == o.angular; }
    bool operator!=(const Twist& o) const { return !(*this == o); }
    GECKO_MSG_FIELDS(linear, angular)
};

/// Force and torque acting on a body (e.g. a force/torque sensor reading).
struct Wrench {
    static constexpr const char* type_name = "gecko.msgs.Wrench";
    Vector3 force;   ///< N
    Vector3 torque;  ///< N·m

    bool operator==(const Wrench& o) const { return force == o.force && torque == o.torque; }
    bool operator!=(const Wrench& o) const { return !(*this == o); }
    GECKO_MSG_FIELDS(force, torque)
};

}  // namespace gecko::msgs
