// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file sim_backend.hpp
/// The demo simulator as a Click lockstep backend: gecko::sim::Simulation
/// behind the gecko::click::Backend interface that SimulationServer drives.
/// gecko-sim uses it; so do the lockstep tests.
///
/// What the Handshake announces, per robot: its joints as controls (Angle,
/// AngularVelocity1D or Torque1D, from the scene), joint sensors Angle,
/// AngularVelocity1D and Torque1D, the control event `gripper` (Activated)
/// if it has one, and the named sensors `tip` (Position) and `gripper`
/// (Activated). Per box: object sensors Position and RPY.

#include <gecko/click/simulation.hpp>
#include <gecko/msgs/sensors.hpp>

#include "physics.hpp"

namespace gecko::sim {

class ClickBackend : public gecko::click::Backend {
public:
    /// @throws gecko::Error (Errc::invalid_argument) if the scene is invalid.
    explicit ClickBackend(SceneConfig scene) : sim_(std::move(scene)) {}

    gecko::msgs::click::Handshake handshake() override;
    void apply(const gecko::msgs::click::Control& control) override;
    void step() override { sim_.step(); }
    gecko::msgs::click::Sensor sensors() override;
    void fill_sensors(gecko::msgs::click::Sensor& out) override;
    void reset() override { sim_.reset(); }
    std::optional<double> simulated_time() override { return sim_.time(); }
    /// Angle joints hold where they are, velocity joints target 0 rad/s,
    /// torque joints get 0 N m; grippers keep their state (never drop a box).
    void stop_actuators() override;

    const Simulation& simulation() const noexcept { return sim_; }
    /// Every joint of every robot, named "ROBOT/JOINT" (stamp_ns left 0).
    gecko::msgs::JointState joint_state() const;

private:
    Simulation sim_;
};

}  // namespace gecko::sim
