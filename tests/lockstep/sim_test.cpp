// The demo simulator behind the lockstep protocol: what it announces,
// determinism across runs, and the real programs (geckocore, gecko-sim,
// gecko-controller) end to end.

#include <catch2/catch.hpp>

#include "lockstep_rig.hpp"
#include "sim_backend.hpp"
#include "support/ports.hpp"
#include "support/process.hpp"

#include <unistd.h>

#include <csignal>
#include <cmath>

using namespace lockstep_test;
using gecko::test::Process;
using gecko::test::SpawnOptions;

namespace {

// Drives a fresh demo simulation through a fixed sequence of controls (with
// gripper events and a reset midway) and returns every Sensor, encoded.
std::vector<std::vector<std::uint8_t>> run_demo_sequence() {
    gecko::sim::ClickBackend backend(gecko::sim::SceneConfig::demo());
    Rig rig(backend);
    auto ctl = rig.controller();
    ctl.handshake();
    std::vector<std::vector<std::uint8_t>> sensors;
    auto keep = [&](const gecko::msgs::click::Sensor& s) {
        gecko::Buffer b;
        gecko::codec::encode(b, s);
        sensors.emplace_back(b.data(), b.data() + b.size());
    };
    for (int i = 0; i < 150; ++i) {
        if (i == 100) ctl.reset();
        auto control = ctl.make_control();
        const double t = 0.01 * i;
        control.objects["robot1"].values = {0.4 * std::sin(2.0 * t), -0.3 + 0.2 * std::cos(3.0 * t)};
        control.objects["robot1"].control_events["gripper"] = i > 40;
        control.objects["robot2"].values = {-0.2, 0.1 * t};
        keep(ctl.step(control).sensor());
    }
    keep(ctl.sensors().sensor());
    return sensors;
}

}  // namespace

TEST_CASE("the demo simulator announces its robots, joints, gripper and box", "[lockstep][sim]") {
    gecko::sim::ClickBackend backend(gecko::sim::SceneConfig::demo());
    Rig rig(backend);
    auto ctl = rig.controller();
    const auto& h = ctl.handshake();
    REQUIRE(h.objects.count("robot1") == 1);
    REQUIRE(h.objects.count("robot2") == 1);
    REQUIRE(h.objects.count("box") == 1);
    const auto& robot = h.objects.at("robot1");
    CHECK(robot.controls_in_order.size() == 2);
    CHECK(robot.control_types_in_order == std::vector<ValueType>{ValueType::angle, ValueType::angle});
    CHECK(robot.control_events.at("gripper") == ValueType::activated);
    CHECK(h.objects.at("box").object_sensors == std::vector<ValueType>{ValueType::position, ValueType::rpy});
    CHECK(h.control_type == ValueType::angle);
    CHECK(h.time_step == Approx(backend.simulation().scene().time_step));

    // The stock Click demo client sends the deprecated `angles` and `gripper: true`.
    gecko::msgs::click::Control c;
    c.objects["robot1"].angles = {0.2, -0.1};
    c.objects["robot1"].control_events["gripper"] = true;
    auto r = ctl.step(c);
    REQUIRE(r.is_sensor());
    CHECK(r.sensor().simulated_time == Approx(backend.simulation().scene().time_step));
    CHECK(r.sensor().objects.at("robot1").angle_sensors.size() == 2);
    CHECK(r.sensor().objects.at("box").object_sensors.size() == 2);
    CHECK(backend.simulation().steps() == 1);
}

TEST_CASE("the same controls give bit-identical sensors in two runs", "[lockstep][sim][determinism]") {
    const auto first = run_demo_sequence();
    const auto second = run_demo_sequence();
    REQUIRE(first.size() == 151);
    REQUIRE(second.size() == first.size());
    for (std::size_t i = 0; i < first.size(); ++i) {
        INFO("sensor " << i);
        CHECK(first[i] == second[i]);
    }
    CHECK(first[50] != first[49]);  // and it does move
}

TEST_CASE("geckocore, gecko-sim and gecko-controller run 200 lockstep steps", "[lockstep][process]") {
    const std::string key = "lockstep-" + std::to_string(::getpid());
    const auto core = gecko::test::start_core(GECKOCORE_PATH, key);  // unicast, on a port it picked
    const gecko::test::TempDir ipc_dir;
    SpawnOptions env;
    env.env = {{"GECKO_CORE", core.address()}, {"GECKO_NO_MULTICAST", "1"}, {"GECKO_IPC_DIR", ipc_dir.path()}};
    env.unset_env = {"GECKO_KEY", "GECKO_DISCOVERY", "GECKO_MULTICAST", "GECKO_INTERFACE"};
    env.stderr_mode = gecko::test::Stderr::merge;
    auto sim = Process::spawn(GECKO_SIM_PATH, {"--key", key, "--watchdog-ms", "2000"}, env);
    REQUIRE(sim.wait_for_line("ready", 10s));

    auto controller = Process::spawn(GECKO_CONTROLLER_PATH, {"--key", key, "--steps", "200"}, env);
    auto summary = controller.wait_for_line("done:", 30s);
    INFO("controller output:\n" << controller.output());
    REQUIRE(summary);
    CHECK(summary->find("done: 200 steps") != std::string::npos);
    CHECK(summary->find("steps/s") != std::string::npos);
    CHECK(summary->find("1 reset; tracking error (RMS): Angle") != std::string::npos);
    CHECK(controller.wait(10s) == 0);

    // The simulation ended that run and serves the next controller.
    CHECK(sim.wait_for_line("ended the run", 10s));
    REQUIRE(sim.write_line("status"));
    auto status = sim.wait_for_line("status:", 10s);
    REQUIRE(status);
    CHECK(status->find("steps=200") != std::string::npos);
    CHECK(status->find("controller=-") != std::string::npos);
    // Two commands in one write are both served.
    REQUIRE(sim.write_line("status\nstatus"));
    CHECK(sim.wait_for_line("status:", 10s));
    CHECK(sim.wait_for_line("status:", 10s));

    // SIGINT: stop cycles, then a clean exit.
    sim.kill(SIGINT);
    CHECK(sim.wait_for_line("shutting down", 10s));
    CHECK(sim.wait(10s) == 0);
    INFO("sim output:\n" << sim.output());
}
