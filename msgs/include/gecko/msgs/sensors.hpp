// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file sensors.hpp
/// Sensor readings. There is no Header struct: every timestamped type starts
/// with the same two fields,
///
/// - `stamp_ns`: when the reading was taken, in ns since the Unix epoch
///   (or since the simulation started, for simulated sensors); 0 = unknown;
/// - `frame_id`: the coordinate frame the reading is expressed in.
///
/// SI units throughout (m, rad, s, N, T).

#include <gecko/msgs/codec.hpp>
#include <gecko/msgs/geometry.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace gecko::msgs {

/// An inertial measurement unit reading.
struct Imu {
    static constexpr const char* type_name = "gecko.msgs.Imu";
    std::int64_t stamp_ns = 0;  ///< ns
    std::string frame_id;
    Vector3 accel;           ///< linear acceleration, m/s² (includes gravity: ~9.81 up at rest)
    Vector3 gyro;            ///< angular velocity, rad/s
    Vector3 mag;             ///< magnetic field, tesla (T; Earth's field is ~25-65 µT); zero if absent
    Quaternion orientation;  ///< fused orientation estimate; identity if the IMU gives none

    bool operator==(const Imu& o) const {
        return stamp_ns == o.stamp_ns && frame_id == o.frame_id && accel == o.accel && gyro == o.gyro &&
               mag == o.mag && orientation == o.orientation;
    }
    bool operator!=(const Imu& o) const { return !(*this == o); }
    GECKO_MSG_FIELDS(stamp_ns, frame_id, accel, gyro, mag, orientation)
};

/// One sweep of a planar lidar (laser scanner), as readings at given angles.
///
/// Stored as two parallel arrays rather than an array of {angle, range}
/// structs: on the wire that is 10 bytes per reading (two msgpack float32)
/// instead of 23 for a map per point with its keys, and it decodes straight
/// into two vectors without a per-point map lookup. `angles.size() == ranges.size()`.
struct Lidar {
    static constexpr const char* type_name = "gecko.msgs.Lidar";
    std::int64_t stamp_ns = 0;  ///< ns, when the sweep started
    std::string frame_id;
    std::vector<float> angles;  ///< rad, counter-clockwise about +z of frame_id, 0 = +x
    std::vector<float> ranges;  ///< m; by convention +infinity where there was no return

    bool operator==(const Lidar& o) const {
        return stamp_ns == o.stamp_ns && frame_id == o.frame_id && angles == o.angles && ranges == o.ranges;
    }
    bool operator!=(const Lidar& o) const { return !(*this == o); }
    GECKO_MSG_FIELDS(stamp_ns, frame_id, angles, ranges)
};

/// State of a set of joints, as parallel arrays indexed like `names`.
/// `velocity` and `effort` may be empty when the robot does not measure them.
struct JointState {
    static constexpr const char* type_name = "gecko.msgs.JointState";
    std::int64_t stamp_ns = 0;  ///< ns
    std::string frame_id;
    std::vector<std::string> names;
    std::vector<double> position;  ///< rad (revolute) or m (prismatic)
    std::vector<double> velocity;  ///< rad/s or m/s
    std::vector<double> effort;    ///< N·m or N

    bool operator==(const JointState& o) const {
        return stamp_ns == o.stamp_ns && frame_id == o.frame_id && names == o.names && position == o.position &&
               velocity == o.velocity && effort == o.effort;
    }
    bool operator!=(const JointState& o) const { return !(*this == o); }
    GECKO_MSG_FIELDS(stamp_ns, frame_id, names, position, velocity, effort)
};

/// An uncompressed camera frame. `data` travels as msgpack bin.
struct Image {
    static constexpr const char* type_name = "gecko.msgs.Image";
    std::int64_t stamp_ns = 0;  ///< ns, exposure time
    std::string frame_id;
    std::uint32_t width = 0;         ///< pixels
    std::uint32_t height = 0;        ///< pixels (rows)
    std::string encoding;            ///< pixel layout: "rgb8", "bgr8", "rgba8", "mono8", "mono16", ...
    std::uint32_t step = 0;          ///< bytes per row (>= width * bytes per pixel)
    std::vector<std::uint8_t> data;  ///< height * step bytes, row-major, top row first

    bool operator==(const Image& o) const {
        return stamp_ns == o.stamp_ns && frame_id == o.frame_id && width == o.width && height == o.height &&
               encoding == o.encoding && step == o.step && data == o.data;
    }
    bool operator!=(const Image& o) const { return !(*this == o); }
    GECKO_MSG_FIELDS(stamp_ns, frame_id, width, height, encoding, step, data)
};

/// Estimated pose and velocity of a body (wheel odometry, state estimator, simulator ground truth).
struct Odometry {
    static constexpr const char* type_name = "gecko.msgs.Odometry";
    std::int64_t stamp_ns = 0;  ///< ns
    std::string frame_id;        ///< the fixed frame `pose` is expressed in (e.g. "odom")
    std::string child_frame_id;  ///< the body's frame (e.g. "base_link"); `twist` is expressed in it
    Pose pose;                   ///< of child_frame_id in frame_id; m and unit quaternion
    Twist twist;                 ///< m/s and rad/s, in child_frame_id

    bool operator==(const Odometry& o) const {
        return stamp_ns == o.stamp_ns && frame_id == o.frame_id && child_frame_id == o.child_frame_id &&
               pose == o.pose && twist == o.twist;
    }
    bool operator!=(const Odometry& o) const { return !(*this == o); }
    GECKO_MSG_FIELDS(stamp_ns, frame_id, child_frame_id, pose, twist)
};

}  // namespace gecko::msgs
