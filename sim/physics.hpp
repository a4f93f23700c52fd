// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file physics.hpp
/// The demo simulator's physics: planar serial arms with servos and a gripper,
/// and free boxes that fall onto the ground. Deterministic and pure: no clock,
/// no randomness, no thread, no I/O. The same scene and the same controls give
/// bit-identical states on the same build.
///
/// ## Model
///
/// - **Arms.** A robot is a serial chain of N revolute joints whose axes are
///   parallel to the world y axis, so the arm moves in the vertical plane
///   y = base.y. Joint j drives link j, a uniform rod of `length` and `mass`
///   (inertia m·l²/12 about its centre); the angles are relative, and the first
///   is measured from the +x axis, positive upwards (towards +z). So with all
///   angles 0 the arm points along +x, and gravity pulls every angle towards
///   -π/2. The full rigid-body dynamics M(q)q̈ + h(q,q̇) = τ are solved each
///   substep (inverse dynamics by summing moments over the distal bodies; M by
///   columns), plus each joint's `rotor_inertia` (reflected actuator inertia)
///   and viscous `damping`.
/// - **Actuators.** Each joint has one control type. `angle`: a PID servo
///   (`kp`, `ki`, `kd`) tracks the target angle; `angular_velocity`: a PI servo
///   (`kv`, `kvi`) tracks the target velocity; `torque`: the value is applied.
///   Every actuator torque is clamped to ±`max_torque`, and a saturated servo
///   stops integrating (anti-windup). Optional joint limits are hard stops.
///   Controls hold until changed; after construction or reset() the angle
///   servos hold the initial angles and the other controls are 0.
/// - **Gripper.** While a robot's gripper is activated and holds nothing, it
///   grasps the first box (in scene order) whose surface lies within
///   `grasp_distance` of the arm's tip and that no other gripper holds. The box
///   is then rigidly attached to the last link (its mass and inertia load the
///   arm) until the gripper is deactivated, which releases it with the velocity
///   of the point it was attached to.
/// - **Boxes.** A free box is a rigid body (mass, size, inertia of a solid
///   box) under gravity. Its 8 corners touch the ground plane z = 0 through
///   stiff spring-dampers with regularised Coulomb friction, so a dropped box
///   settles and rests (sinking a fraction of a millimetre). Arms touch
///   nothing; boxes do not touch each other or the arms.
/// - **Integration.** Semi-implicit (symplectic) Euler at time_step/substeps,
///   with the joints' velocity gains (damping, servo kd/kv) taken implicitly so
///   that stiff servos stay stable. Box orientation is a unit quaternion
///   advanced by the exact rotation of each substep.
///
/// Units: SI (m, kg, s, rad, N·m). RPY is roll, pitch, yaw with
/// R = Rz(yaw)·Ry(pitch)·Rx(roll).
///
/// ## Scene files
///
/// parse_scene() reads a line-based text format; `#` starts a comment, blank
/// lines are ignored, words are separated by spaces. Top-level settings, then
/// blocks: `robot NAME` and `box NAME` open a block that lasts until the next.
///
/// ```
/// time_step 0.01        # s per step()               (default 0.01)
/// substeps 10           # integration steps per step  (default 10)
/// gravity 9.81          # m/s², pulls along -z        (default 9.81)
///
/// robot robot1
/// base 0 0 0.5          # m, position of the first joint
/// gripper on            # on | off                    (default on)
/// grasp_distance 0.02   # m                           (default 0.02)
/// # joint NAME TYPE then optional KEY VALUE pairs; TYPE is angle,
/// # angular_velocity or torque. Keys: length mass rotor_inertia damping
/// # max_torque kp ki kd kv kvi initial, and `limits MIN MAX` (two values).
/// joint joint1 angle length 0.5 mass 2 initial 0.3
/// joint joint2 torque length 0.4 mass 1 max_torque 20 limits -2.5 2.5
///
/// box box
/// size 0.1 0.1 0.1      # m, edges along the box's x y z (default 0.1 0.1 0.1)
/// mass 0.5              # kg                          (default 0.5)
/// position 0.6 0 0.3    # m, centre                   (default 0.6 0 0.05)
/// rpy 0 0 0.3           # rad                         (default 0 0 0)
/// friction 0.8          # Coulomb coefficient         (default 0.8)
/// ```
///
/// A missing optional key keeps the default of the matching config struct.

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gecko::sim {

using Vec3 = std::array<double, 3>;
using Quaternion = std::array<double, 4>;  ///< w, x, y, z; unit norm

/// How a joint's control value is read. Names follow Click's control types.
enum class ControlType : std::uint8_t {
    angle = 0,             ///< target angle, rad (PID servo)
    angular_velocity = 1,  ///< target angular velocity, rad/s (PI servo)
    torque = 2,            ///< torque, N·m (applied, clamped)
};

const char* to_string(ControlType type) noexcept;  ///< "angle", "angular_velocity", "torque"
/// Parses the names of to_string(ControlType). Returns nullopt for anything else.
std::optional<ControlType> control_type_from_string(std::string_view name) noexcept;

/// One revolute joint and the link it drives.
struct JointConfig {
    std::string name{"joint"};                ///< unique within its robot
    ControlType control{ControlType::angle};  ///< how its control value is read
    double length{0.5};                       ///< m, from this joint to the next one (or the tip); > 0
    double mass{1.0};                         ///< kg, uniform rod; > 0
    double rotor_inertia{0.01};               ///< kg·m², actuator inertia reflected on the joint; >= 0
    double damping{0.1};                      ///< N·m·s/rad, viscous friction; >= 0
    double max_torque{40.0};                  ///< N·m, actuator limit whatever the control type; > 0
    double kp{200.0};                         ///< N·m/rad, angle servo
    double ki{400.0};                         ///< N·m/(rad·s), angle servo integral (removes the gravity sag)
    double kd{20.0};                          ///< N·m·s/rad, angle servo
    double kv{10.0};                          ///< N·m·s/rad, velocity servo
    double kvi{50.0};                         ///< N·m/rad, velocity servo integral
    double initial_angle{0.0};                ///< rad, at construction and reset()
    bool limited{false};                      ///< enforce [min_angle, max_angle] as hard stops
    double min_angle{-3.141592653589793};     ///< rad, when limited
    double max_angle{3.141592653589793};      ///< rad, when limited
};

/// One planar arm.
struct RobotConfig {
    std::string name{"robot"};       ///< unique in the scene (robots and boxes)
    Vec3 base{0.0, 0.0, 0.5};        ///< m, position of the first joint; the arm moves in the plane y = base[1]
    std::vector<JointConfig> joints; ///< from the base to the tip; at least one
    bool gripper{true};              ///< has a gripper (the `activated` control event)
    double grasp_distance{0.02};     ///< m, the tip grasps a box whose surface is at most this far
};

/// One free box.
struct BoxConfig {
    std::string name{"box"};         ///< unique in the scene (robots and boxes)
    Vec3 size{0.1, 0.1, 0.1};        ///< m, edge lengths along the box's own x, y, z; > 0
    double mass{0.5};                ///< kg; > 0
    Vec3 position{0.6, 0.0, 0.05};   ///< m, initial centre
    Vec3 rpy{0.0, 0.0, 0.0};         ///< rad, initial orientation
    double friction{0.8};            ///< Coulomb coefficient against the ground; >= 0
};

/// A whole scene. Every field has a default; robots and boxes start empty.
struct SceneConfig {
    double time_step{0.01};          ///< s of simulated time per Simulation::step(); > 0
    unsigned substeps{10};           ///< integration steps per step(); >= 1
    double gravity{9.81};            ///< m/s², along -z; >= 0
    std::vector<RobotConfig> robots; ///< at least one
    std::vector<BoxConfig> boxes;    ///< may be empty

    /// The demo scene: `robot1` and `robot2` (two angle joints and a gripper
    /// each, the objects the stock Click demo client drives) and a `box` that
    /// drops onto the ground within robot1's reach.
    static SceneConfig demo();

    /// @throws gecko::Error (Errc::invalid_argument) naming the first bad field.
    void validate() const;
};

/// Parses a scene file's text (format atop this header) and validates it.
/// @param source named in error messages, e.g. the file's path.
/// @throws gecko::Error (Errc::invalid_argument) "SOURCE:LINE: what is wrong".
SceneConfig parse_scene(std::string_view text, std::string_view source = "scene");

/// Writes a scene in the format parse_scene() reads, every field explicit and
/// every number exact (parse_scene(format_scene(s)) gives s back).
std::string format_scene(const SceneConfig& scene);

/// Control of one robot: a value per joint, read by the joint's ControlType.
struct RobotControl {
    std::vector<double> values;       ///< rad, rad/s or N·m, in joint order
    bool gripper_activated{false};    ///< the gripper's `activated` event
};

/// Sensors of one robot.
struct RobotState {
    std::vector<double> angles;              ///< rad
    std::vector<double> angular_velocities;  ///< rad/s
    std::vector<double> torques;             ///< N·m, actuator torques of the last substep
    Vec3 tip_position{};                     ///< m, end of the last link
    bool gripper_activated{false};           ///< as last commanded
    std::optional<std::size_t> held_box;     ///< index of the box in the gripper
};

/// Sensors of one box.
struct BoxState {
    Vec3 position{};                  ///< m, centre
    Vec3 rpy{};                       ///< rad
    Quaternion orientation{1, 0, 0, 0};
    Vec3 linear_velocity{};           ///< m/s
    Vec3 angular_velocity{};          ///< rad/s, world frame
    std::optional<std::size_t> held_by;  ///< index of the robot holding it
};

namespace detail {

/// Positions and velocities along a planar chain, relative to its base, in the
/// arm's (x, z) plane. Index j is joint j; index N is the tip.
struct Kinematics {
    std::vector<double> theta, omega;  // absolute angle and angular velocity of link j
    std::vector<double> px, pz;        // position of joint j (j = N: tip)
    std::vector<double> vx, vz;        // velocity of joint j (j = N: tip)
};

/// A rigid body fixed to link `link`, its centre at `along`·u + `across`·n from
/// joint `link` (u along the link, n = u turned +90° in the plane).
struct Body {
    std::size_t link;
    double along, across, mass, inertia;
};

/// The memory one arm's substep works in, kept from step to step: a lockstep
/// step runs substeps × robots of them, and allocating it each time cost more
/// than the physics.
struct Scratch {
    Kinematics kinematics;
    std::vector<Body> bodies;
    std::vector<double> c, s, px, pz;          // per link, from the joint angles alone
    std::vector<double> omega, alpha, ax, az;  // per link, per inverse-dynamics call
    std::vector<double> bias, column, zero, unit, mass, rhs;
};

}  // namespace detail

/// A running scene. Copyable (a copy is an independent simulation).
class Simulation {
public:
    /// @throws gecko::Error (Errc::invalid_argument) if scene.validate() does.
    explicit Simulation(SceneConfig scene);

    /// Advances by scene().time_step (scene().substeps integration steps).
    void step();

    /// Returns to the initial state exactly: states, controls, time.
    void reset();

    /// Sets a robot's controls; they hold until the next call.
    /// @throws gecko::Error (Errc::invalid_argument) if `robot` is out of
    ///         range, the number of values is not the joint count, a value is
    ///         not finite, or the gripper is activated on a robot without one.
    void set_control(std::size_t robot, const RobotControl& control);

    /// Sets only the gripper event. Same throws as set_control().
    void set_gripper(std::size_t robot, bool activated);

    double time() const noexcept;                           ///< s, simulated: steps() × time_step
    std::uint64_t steps() const noexcept { return steps_; } ///< step() calls since construction or reset()
    const SceneConfig& scene() const noexcept { return scene_; }
    std::size_t robot_count() const noexcept { return robots_.size(); }
    std::size_t box_count() const noexcept { return boxes_.size(); }

    const RobotState& robot(std::size_t index) const;       ///< @throws gecko::Error if out of range
    const RobotControl& control(std::size_t index) const;   ///< @throws gecko::Error if out of range
    const BoxState& box(std::size_t index) const;           ///< @throws gecko::Error if out of range
    std::optional<std::size_t> robot_index(std::string_view name) const noexcept;
    std::optional<std::size_t> box_index(std::string_view name) const noexcept;

private:
    struct Grip {                      // a held box, in the last link's frame
        double along{0.0};             // offset from the last joint along the link
        double across{0.0};            // offset perpendicular to it, in the arm's plane
        double off_plane{0.0};         // offset along y
        Quaternion relative{1, 0, 0, 0};
        double inertia{0.0};           // box inertia about the joint axis through its centre
    };
    struct Robot {
        RobotState state;
        RobotControl control;
        std::vector<double> integral;  // servo integrators (angle: ∫e dt, velocity: ∫e dt)
        std::optional<Grip> grip;
    };

    void substep(double dt);
    void update_grippers();
    void step_arm(std::size_t r, double dt);
    void step_box(BoxState& box, const BoxConfig& config, double dt) const;
    void place_held_box(std::size_t r);
    void update_tip(std::size_t r);

    SceneConfig scene_;
    detail::Scratch scratch_;  // no state: only memory reused within one call
    std::vector<Robot> robots_;
    std::vector<BoxState> boxes_;
    std::vector<Robot> initial_robots_;
    std::vector<BoxState> initial_boxes_;
    std::uint64_t steps_{0};
};

}  // namespace gecko::sim
