// SPDX-License-Identifier: Apache-2.0
// Tests of examples/sim/physics.hpp: determinism, reset, servos, limits,
// gravity, the box on the ground, the gripper, and the scene file format.

#include "physics.hpp"

#include <gecko/error.hpp>

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

using gecko::sim::BoxConfig;
using gecko::sim::BoxState;
using gecko::sim::ControlType;
using gecko::sim::JointConfig;
using gecko::sim::RobotConfig;
using gecko::sim::RobotControl;
using gecko::sim::RobotState;
using gecko::sim::SceneConfig;
using gecko::sim::Simulation;

namespace {

constexpr double kPi = 3.141592653589793;

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

bool same_bits(const std::vector<double>& a, const std::vector<double>& b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i) {
        if (!same_bits(a[i], b[i])) return false;
    }
    return true;
}

template <std::size_t N>
bool same_bits(const std::array<double, N>& a, const std::array<double, N>& b) {
    for (std::size_t i = 0; i < N; ++i) {
        if (!same_bits(a[i], b[i])) return false;
    }
    return true;
}

/// Every sensor of every robot and box, bit for bit.
bool same_state(const Simulation& a, const Simulation& b) {
    if (!same_bits(a.time(), b.time()) || a.robot_count() != b.robot_count() || a.box_count() != b.box_count()) {
        return false;
    }
    for (std::size_t r = 0; r < a.robot_count(); ++r) {
        const RobotState& x = a.robot(r);
        const RobotState& y = b.robot(r);
        if (!same_bits(x.angles, y.angles) || !same_bits(x.angular_velocities, y.angular_velocities) ||
            !same_bits(x.torques, y.torques) || !same_bits(x.tip_position, y.tip_position) ||
            x.gripper_activated != y.gripper_activated || x.held_box != y.held_box) {
            return false;
        }
    }
    for (std::size_t i = 0; i < a.box_count(); ++i) {
        const BoxState& x = a.box(i);
        const BoxState& y = b.box(i);
        if (!same_bits(x.position, y.position) || !same_bits(x.rpy, y.rpy) ||
            !same_bits(x.orientation, y.orientation) || !same_bits(x.linear_velocity, y.linear_velocity) ||
            !same_bits(x.angular_velocity, y.angular_velocity) || x.held_by != y.held_by) {
            return false;
        }
    }
    return true;
}

/// A busy, deterministic control sequence: moving targets, torques and the gripper.
void drive(Simulation& sim, int step) {
    for (std::size_t r = 0; r < sim.robot_count(); ++r) {
        RobotControl c;
        const double t = 0.01 * step;
        for (std::size_t j = 0; j < sim.scene().robots[r].joints.size(); ++j) {
            c.values.push_back(0.6 * std::sin(t * (1.0 + static_cast<double>(j)) + static_cast<double>(r)));
        }
        c.gripper_activated = (step / 150) % 2 == 1;
        sim.set_control(r, c);
    }
}

/// One link hanging from a joint, torque-controlled.
SceneConfig pendulum(ControlType control = ControlType::torque) {
    SceneConfig scene;
    scene.time_step = 0.001;
    scene.substeps = 1;
    RobotConfig robot;
    robot.name = "pendulum";
    robot.gripper = false;
    JointConfig j;
    j.name = "hinge";
    j.control = control;
    j.length = 0.5;
    j.mass = 2.0;
    j.rotor_inertia = 0.01;
    j.damping = 0.1;
    robot.joints = {j};
    scene.robots = {robot};
    return scene;
}

}  // namespace

TEST_CASE("two runs of 1000 steps with the same controls are bit-identical", "[physics]") {
    Simulation a(SceneConfig::demo());
    Simulation b(SceneConfig::demo());
    for (int step = 0; step < 1000; ++step) {
        drive(a, step);
        drive(b, step);
        a.step();
        b.step();
        REQUIRE(same_state(a, b));
    }
    CHECK(a.steps() == 1000);
    CHECK(a.time() == Approx(10.0));
    // The run did something: the arms moved and the box fell.
    CHECK(std::abs(a.robot(0).angles[0]) > 0.01);
    CHECK(a.box(0).position[2] < 0.3);
}

TEST_CASE("reset restores the initial state exactly, and a rerun repeats the first run", "[physics]") {
    Simulation sim(SceneConfig::demo());
    const Simulation initial = sim;  // a copy is an independent simulation
    Simulation first = sim;
    for (int step = 0; step < 500; ++step) {
        drive(first, step);
        first.step();
    }
    for (int step = 0; step < 500; ++step) {
        drive(sim, step);
        sim.step();
    }
    sim.reset();
    CHECK(sim.steps() == 0);
    CHECK(sim.time() == 0.0);
    CHECK(same_state(sim, initial));
    CHECK(same_bits(sim.control(0).values, initial.control(0).values));
    CHECK(sim.control(0).gripper_activated == false);
    for (int step = 0; step < 500; ++step) {
        drive(sim, step);
        sim.step();
    }
    CHECK(same_state(sim, first));
}

TEST_CASE("an angle-controlled joint converges to its target despite gravity", "[physics][servo]") {
    Simulation sim(SceneConfig::demo());
    RobotControl c;
    c.values = {0.5, -0.8};
    sim.set_control(0, c);
    for (int i = 0; i < 500; ++i) sim.step();  // 5 s
    const RobotState& s = sim.robot(0);
    CHECK(s.angles[0] == Approx(0.5).margin(1e-3));
    CHECK(s.angles[1] == Approx(-0.8).margin(1e-3));
    CHECK(std::abs(s.angular_velocities[0]) < 1e-3);
    CHECK(std::abs(s.angular_velocities[1]) < 1e-3);
    // Holding the arm still takes a torque: gravity's.
    CHECK(std::abs(s.torques[0]) > 1.0);
}

TEST_CASE("an angular-velocity-controlled joint tracks its target velocity", "[physics][servo]") {
    Simulation sim(pendulum(ControlType::angular_velocity));
    sim.set_control(0, RobotControl{{1.0}, false});
    for (int i = 0; i < 3000; ++i) sim.step();  // 3 s, more than a full turn against gravity
    CHECK(sim.robot(0).angular_velocities[0] == Approx(1.0).margin(0.05));
    CHECK(sim.robot(0).angles[0] > 2.0);
}

TEST_CASE("torque limits hold for every control type", "[physics][limits]") {
    SECTION("a torque command beyond the limit is clamped") {
        Simulation sim(pendulum());
        sim.set_control(0, RobotControl{{1000.0}, false});
        sim.step();
        CHECK(sim.robot(0).torques[0] == 40.0);
        sim.set_control(0, RobotControl{{-1000.0}, false});
        sim.step();
        CHECK(sim.robot(0).torques[0] == -40.0);
    }
    SECTION("servos chasing far targets never exceed the limit") {
        Simulation sim(SceneConfig::demo());
        sim.set_control(0, RobotControl{{3.0, -3.0}, false});
        sim.set_control(1, RobotControl{{-2.0, 2.0}, false});
        bool saturated = false;
        for (int i = 0; i < 300; ++i) {
            sim.step();
            for (std::size_t r = 0; r < 2; ++r) {
                for (std::size_t j = 0; j < 2; ++j) {
                    const double limit = sim.scene().robots[r].joints[j].max_torque;
                    REQUIRE(std::abs(sim.robot(r).torques[j]) <= limit);
                    if (std::abs(sim.robot(r).torques[j]) == limit) saturated = true;
                }
            }
        }
        CHECK(saturated);
    }
}

TEST_CASE("gravity pulls an unpowered joint down", "[physics][gravity]") {
    const SceneConfig scene = pendulum();
    Simulation sim(scene);
    sim.step();
    // First step from rest, horizontal: q̈ = -m·g·l/2 / (m·l²/3 + rotor + dt·damping).
    const JointConfig& j = scene.robots[0].joints[0];
    const double inertia = j.mass * j.length * j.length / 3.0 + j.rotor_inertia + scene.time_step * j.damping;
    const double expected_acceleration = -j.mass * scene.gravity * 0.5 * j.length / inertia;
    CHECK(sim.robot(0).angular_velocities[0] == Approx(expected_acceleration * scene.time_step).epsilon(1e-9));
    CHECK(sim.robot(0).angles[0] < 0.0);
    CHECK(sim.robot(0).torques[0] == 0.0);
    // Damping lets it settle hanging straight down.
    for (int i = 0; i < 60000; ++i) sim.step();
    CHECK(sim.robot(0).angles[0] == Approx(-kPi / 2).margin(1e-3));
    CHECK(sim.robot(0).tip_position[2] == Approx(0.5 - 0.5).margin(1e-3));
}

TEST_CASE("a joint limit is a hard stop", "[physics][limits]") {
    SceneConfig scene = pendulum();
    scene.robots[0].joints[0].limited = true;
    scene.robots[0].joints[0].min_angle = -0.5;
    scene.robots[0].joints[0].max_angle = 0.5;
    Simulation sim(scene);
    for (int i = 0; i < 2000; ++i) sim.step();
    CHECK(sim.robot(0).angles[0] == -0.5);
    CHECK(sim.robot(0).angular_velocities[0] == 0.0);
}

TEST_CASE("the box falls and rests on the ground", "[physics][box]") {
    Simulation sim(SceneConfig::demo());
    const double start = sim.box(0).position[2];
    for (int i = 0; i < 10; ++i) sim.step();
    CHECK(sim.box(0).position[2] < start);
    CHECK(sim.box(0).linear_velocity[2] < 0.0);
    for (int i = 0; i < 300; ++i) sim.step();  // 3 s
    const BoxState& box = sim.box(0);
    CHECK(box.position[2] == Approx(0.05).margin(1e-3));
    CHECK(box.position[0] == Approx(0.6).margin(1e-3));
    CHECK(std::sqrt(box.linear_velocity[0] * box.linear_velocity[0] + box.linear_velocity[1] * box.linear_velocity[1] +
                    box.linear_velocity[2] * box.linear_velocity[2]) < 1e-3);
    CHECK(box.rpy[0] == Approx(0.0).margin(1e-3));
    CHECK(box.rpy[1] == Approx(0.0).margin(1e-3));
    CHECK(box.rpy[2] == Approx(0.3).margin(1e-3));
}

TEST_CASE("a box dropped on its edge tips over and rests on a face", "[physics][box]") {
    SceneConfig scene = pendulum();
    BoxConfig box;
    box.position = {2.0, 0.0, 0.5};
    box.rpy = {0.5, 0.0, 0.0};
    scene.boxes = {box};
    Simulation sim(scene);
    for (int i = 0; i < 5000; ++i) sim.step();
    const BoxState& b = sim.box(0);
    CHECK(b.position[2] == Approx(0.05).margin(1e-3));
    // resting on a face: roll is a multiple of π/2
    const double quarter = std::remainder(b.rpy[0], kPi / 2);
    CHECK(std::abs(quarter) < 1e-3);
    CHECK(std::abs(b.rpy[1]) < 1e-3);
}

TEST_CASE("the gripper picks up a box, carries it, and drops it", "[physics][gripper]") {
    SceneConfig scene;
    RobotConfig robot;
    robot.name = "arm";
    robot.base = {0.0, 0.0, 0.5};
    JointConfig shoulder;
    shoulder.name = "shoulder";
    shoulder.length = 0.5;
    shoulder.mass = 2.0;
    JointConfig elbow;
    elbow.name = "elbow";
    elbow.length = 0.4;
    elbow.mass = 1.0;
    elbow.kp = 100.0;
    elbow.ki = 200.0;
    elbow.kd = 5.0;
    elbow.initial_angle = -kPi / 2;  // tip at (0.5, 0, 0.1): on the box's top face
    robot.joints = {shoulder, elbow};
    scene.robots = {robot};
    BoxConfig box;
    box.position = {0.5, 0.0, 0.05};
    scene.boxes = {box};

    Simulation sim(scene);
    for (int i = 0; i < 200; ++i) sim.step();  // the arm settles on its targets
    REQUIRE(sim.robot(0).tip_position[2] == Approx(0.1).margin(2e-3));
    CHECK_FALSE(sim.box(0).held_by);

    sim.set_control(0, RobotControl{{0.0, -kPi / 2}, true});
    sim.step();
    REQUIRE(sim.box(0).held_by == std::size_t{0});
    REQUIRE(sim.robot(0).held_box == std::size_t{0});

    sim.set_control(0, RobotControl{{0.6, -kPi / 2}, true});  // lift
    for (int i = 0; i < 300; ++i) sim.step();
    CHECK(sim.box(0).position[2] > 0.3);
    CHECK(sim.robot(0).angles[0] == Approx(0.6).margin(2e-3));  // the servo carries the extra load
    const double carried_height = sim.box(0).position[2];

    sim.set_gripper(0, false);  // drop
    sim.step();
    CHECK_FALSE(sim.box(0).held_by);
    CHECK(sim.box(0).position[2] < carried_height);
    for (int i = 0; i < 300; ++i) sim.step();
    CHECK(sim.box(0).position[2] == Approx(0.05).margin(1e-3));
}

TEST_CASE("a gripper too far from every box grasps nothing", "[physics][gripper]") {
    Simulation sim(SceneConfig::demo());
    sim.set_gripper(1, true);  // robot2 is 1 m away from the box
    for (int i = 0; i < 50; ++i) sim.step();
    CHECK_FALSE(sim.robot(1).held_box);
    CHECK(sim.robot(1).gripper_activated);
}

TEST_CASE("bad controls are refused with a reason", "[physics]") {
    Simulation sim(SceneConfig::demo());
    CHECK_THROWS_WITH(sim.set_control(0, RobotControl{{1.0}, false}), Catch::Contains("has 2 joints, control has 1"));
    CHECK_THROWS_WITH(sim.set_control(0, RobotControl{{1.0, std::nan("")}, false}), Catch::Contains("not finite"));
    CHECK_THROWS_AS(sim.set_control(7, RobotControl{{1.0, 2.0}, false}), gecko::Error);
    CHECK_THROWS_AS(sim.box(3), gecko::Error);
    Simulation pend(pendulum());
    CHECK_THROWS_WITH(pend.set_gripper(0, true), Catch::Contains("has no gripper"));
    CHECK(sim.robot_index("robot2") == std::size_t{1});
    CHECK(sim.box_index("box") == std::size_t{0});
    CHECK_FALSE(sim.robot_index("dalek"));
}

TEST_CASE("a scene file is parsed into the config it describes", "[physics][scene]") {
    const char* text = R"(# two joints and a box
time_step 0.005
substeps 5
gravity 9.8

robot arm
  base 1 2 0.75
  gripper off
  joint shoulder angle length 0.6 mass 3 initial 0.25   # trailing comment
  joint wrist torque length 0.2 mass 0.5 max_torque 5 limits -1 1.5

box crate
  size 0.2 0.1 0.05
  mass 1.5
  position 1 2 3
  rpy 0 0.1 0.2
  friction 0.5
)";
    const SceneConfig s = gecko::sim::parse_scene(text, "test.scene");
    CHECK(s.time_step == 0.005);
    CHECK(s.substeps == 5);
    CHECK(s.gravity == 9.8);
    REQUIRE(s.robots.size() == 1);
    const RobotConfig& r = s.robots[0];
    CHECK(r.name == "arm");
    CHECK(r.base == gecko::sim::Vec3{1, 2, 0.75});
    CHECK_FALSE(r.gripper);
    REQUIRE(r.joints.size() == 2);
    CHECK(r.joints[0].name == "shoulder");
    CHECK(r.joints[0].control == ControlType::angle);
    CHECK(r.joints[0].length == 0.6);
    CHECK(r.joints[0].mass == 3.0);
    CHECK(r.joints[0].initial_angle == 0.25);
    CHECK(r.joints[0].kp == JointConfig{}.kp);  // defaults kept
    CHECK(r.joints[1].control == ControlType::torque);
    CHECK(r.joints[1].max_torque == 5.0);
    CHECK(r.joints[1].limited);
    CHECK(r.joints[1].min_angle == -1.0);
    CHECK(r.joints[1].max_angle == 1.5);
    REQUIRE(s.boxes.size() == 1);
    CHECK(s.boxes[0].name == "crate");
    CHECK(s.boxes[0].size == gecko::sim::Vec3{0.2, 0.1, 0.05});
    CHECK(s.boxes[0].mass == 1.5);
    CHECK(s.boxes[0].rpy == gecko::sim::Vec3{0, 0.1, 0.2});
    CHECK(s.boxes[0].friction == 0.5);
}

TEST_CASE("format_scene and parse_scene round-trip exactly", "[physics][scene]") {
    SceneConfig demo = SceneConfig::demo();
    demo.robots[1].joints[1].limited = true;
    demo.robots[1].joints[1].min_angle = -0.1234567890123;
    demo.robots[0].joints[0].control = ControlType::angular_velocity;
    demo.time_step = 1.0 / 3.0;
    const std::string text = gecko::sim::format_scene(demo);
    const SceneConfig back = gecko::sim::parse_scene(text);
    CHECK(gecko::sim::format_scene(back) == text);
    CHECK(back.time_step == demo.time_step);
    CHECK(back.robots[1].joints[1].min_angle == demo.robots[1].joints[1].min_angle);
    // and the simulations agree bit for bit
    Simulation a(demo), b(back);
    for (int i = 0; i < 20; ++i) {
        a.step();
        b.step();
    }
    CHECK(same_state(a, b));
}

TEST_CASE("scene errors name the file, the line and the problem", "[physics][scene]") {
    using gecko::sim::parse_scene;
    CHECK_THROWS_WITH(parse_scene("robot a\nwobble 3\n", "s.txt"), Catch::Contains("s.txt:2: unknown keyword 'wobble'"));
    CHECK_THROWS_WITH(parse_scene("time_step fast\n", "s.txt"), Catch::Contains("s.txt:1: 'fast' is not a number"));
    CHECK_THROWS_WITH(parse_scene("base 0 0 0\n"), Catch::Contains("belongs in a robot block"));
    CHECK_THROWS_WITH(parse_scene("robot a\njoint j spin\n"), Catch::Contains("unknown control type 'spin'"));
    CHECK_THROWS_WITH(parse_scene("robot a\njoint j angle length\n"), Catch::Contains("lacks a value"));
    CHECK_THROWS_WITH(parse_scene("robot a\njoint j angle length -1\n"), Catch::Contains("length must be > 0"));
    CHECK_THROWS_WITH(parse_scene("robot a\n"), Catch::Contains("needs at least one joint"));
    CHECK_THROWS_WITH(parse_scene("robot a\njoint j angle\nbox a\n"), Catch::Contains("used twice"));
    CHECK_THROWS_WITH(parse_scene("box b\n"), Catch::Contains("at least one robot"));
    CHECK_THROWS_WITH(parse_scene("substeps 2.5\n"), Catch::Contains("whole number"));
    CHECK_THROWS_AS(parse_scene("gravity 1e999\n"), gecko::Error);
}

TEST_CASE("control type names round-trip", "[physics]") {
    for (ControlType t : {ControlType::angle, ControlType::angular_velocity, ControlType::torque}) {
        CHECK(gecko::sim::control_type_from_string(gecko::sim::to_string(t)) == t);
    }
    CHECK_FALSE(gecko::sim::control_type_from_string("Angle"));
}
