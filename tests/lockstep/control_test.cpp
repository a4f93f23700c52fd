// The control services of a simulation (gecko/msgs/sim.hpp) against the real
// programs: geckocore, gecko-sim and gecko-controller on loopback, the test
// pausing, resetting and resuming through the services (C++ clients and
// `gecko call`) while the controller keeps stepping.

#include <catch2/catch.hpp>

#include <gecko/gecko.hpp>
#include <gecko/msgs/sim.hpp>

#include "support/ports.hpp"
#include "support/process.hpp"

#include <unistd.h>

#include <chrono>
#include <csignal>
#include <functional>
#include <initializer_list>
#include <string>
#include <thread>

namespace {

using namespace std::chrono_literals;
using gecko::msgs::sim::ControlReply;
using gecko::msgs::sim::ControlRequest;
using gecko::msgs::sim::SimulationState;
using gecko::msgs::sim::Status;
using gecko::test::Process;
using gecko::test::SpawnOptions;
using ControlClient = gecko::Client<ControlRequest, ControlReply>;

constexpr auto call_timeout = 20s;

ControlReply call(ControlClient& client) { return client.call(ControlRequest{"control_test"}, call_timeout); }

// Reads the status topic until `wanted` holds for a status taken at or after
// `since_ns` (bounded). Returns that status, or nothing at the deadline.
std::optional<Status> await_status(gecko::Subscriber<Status>& topic, std::int64_t since_ns,
                                   const std::function<bool(const Status&)>& wanted,
                                   std::chrono::milliseconds timeout = 30s) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    Status s;
    while (std::chrono::steady_clock::now() < deadline) {
        if (!topic.receive(s, 500ms)) continue;
        if (s.stamp_ns >= since_ns && wanted(s)) return s;
    }
    return std::nullopt;
}

}  // namespace

TEST_CASE("pause, reset and resume through the control services while gecko-controller steps",
          "[lockstep][process][control]") {
    const std::string key = "control-" + std::to_string(::getpid());
    const auto core = gecko::test::start_core(GECKOCORE_PATH, key);
    const gecko::test::TempDir ipc_dir;
    SpawnOptions env;
    env.env = {{"GECKO_CORE", core.address()}, {"GECKO_NO_MULTICAST", "1"}, {"GECKO_IPC_DIR", ipc_dir.path()}};
    env.unset_env = {"GECKO_KEY", "GECKO_DISCOVERY", "GECKO_MULTICAST", "GECKO_INTERFACE"};
    env.stderr_mode = gecko::test::Stderr::merge;
    // A held Control is refused after 1 s: the 2.5 s pause below exercises that too.
    auto sim = Process::spawn(GECKO_SIM_PATH, {"--key", key, "--watchdog-ms", "2000", "--paused-hold-ms", "1000"}, env);
    REQUIRE(sim.wait_for_line("ready", 10s));

    gecko::NodeOptions options;
    options.key = key;
    options.name = "control_test";
    options.core = core.address();
    options.multicast_enabled = false;
    options.ipc_directory = ipc_dir.path();
    gecko::Node node(options);
    auto topic = node.subscriber<Status>("sim/status");
    auto status = node.client<ControlRequest, ControlReply>("sim/control/status");
    auto pause = node.client<ControlRequest, ControlReply>("sim/control/pause");
    auto resume = node.client<ControlRequest, ControlReply>("sim/control/resume");
    auto reset = node.client<ControlRequest, ControlReply>("sim/control/reset");
    auto another_reset = node.client<ControlRequest, ControlReply>("sim/control/reset");
    for (auto* c : {&status, &pause, &resume, &reset, &another_reset}) REQUIRE(c->wait_for_server(20s));

    auto controller = Process::spawn(GECKO_CONTROLLER_PATH, {"--key", key, "--steps", "0", "--rate", "200"}, env);
    auto outputs = [&] {
        controller.out().drain(100ms);
        sim.out().drain(100ms);
        return "controller output:\n" + controller.output() + "\nsim output:\n" + sim.output();
    };

    // Stepping, as the status topic shows (with the controller's node).
    const auto stepping = await_status(topic, 0, [](const Status& s) { return s.steps >= 20; });
    REQUIRE(stepping);
    CHECK(stepping->state == SimulationState::running);
    CHECK(stepping->simulation == "sim");
    CHECK(stepping->controller == "gecko-controller");
    CHECK(stepping->controller_id.rfind("gecko-controller-", 0) == 0);
    CHECK(stepping->brain_frequency == 0.0);

    // Paused: once answered, no step is taken, for longer than the hold (the
    // controller's held Control is refused, sent again and held again).
    const ControlReply paused = call(pause);
    REQUIRE(paused.ok);
    CHECK(paused.status.state == SimulationState::paused);
    const std::uint64_t held_at = paused.status.steps;
    const auto watch_until = std::chrono::steady_clock::now() + 2500ms;
    int seen = 0;
    Status s;
    while (std::chrono::steady_clock::now() < watch_until) {
        if (!topic.receive(s, 100ms) || s.stamp_ns < paused.status.stamp_ns) continue;
        ++seen;
        CHECK(s.steps == held_at);
        CHECK(s.state == SimulationState::paused);
    }
    CHECK(seen >= 2);  // 2 Hz
    CHECK(call(status).status.steps == held_at);
    CHECK(controller.running());
    INFO(outputs());

    // Reset: answered in the initial state, paused; the controller hears a Reset.
    const ControlReply was_reset = call(reset);
    REQUIRE(was_reset.ok);
    CHECK(was_reset.status.state == SimulationState::paused);
    CHECK(was_reset.status.simulated_time == 0.0);
    CHECK(was_reset.status.resets == 1);
    REQUIRE(controller.wait_for_line("the simulation was reset", 20s));
    const ControlReply after_reset = call(status);
    CHECK(after_reset.status.steps == was_reset.status.steps);
    CHECK(after_reset.status.simulated_time == 0.0);

    // Two resets at once: each answered after its own, one after the other.
    ControlReply second;
    std::thread other([&] { second = call(another_reset); });
    const ControlReply first = call(reset);
    other.join();
    CHECK(first.ok);
    CHECK(second.ok);
    for (const ControlReply* r : std::initializer_list<const ControlReply*>{&first, &second}) {
        CHECK(r->status.state == SimulationState::paused);
        CHECK(r->status.simulated_time == 0.0);
    }
    CHECK(std::max(first.status.resets, second.status.resets) == 3);
    CHECK(first.status.resets != second.status.resets);

    // Resume: steps advance again, from the initial state.
    const ControlReply resumed = call(resume);
    REQUIRE(resumed.ok);
    CHECK(resumed.status.state == SimulationState::running);
    const auto advancing =
        await_status(topic, resumed.status.stamp_ns, [&](const Status& x) { return x.steps >= resumed.status.steps + 20; });
    INFO(outputs());
    REQUIRE(advancing);
    CHECK(advancing->simulated_time > 0.0);
    CHECK(advancing->simulated_time < 30.0);
    CHECK(advancing->steps_per_s > 0.0);

    // `gecko call`: status, then pause, then start.
    auto gecko_call = [&](const std::string& service) {
        auto p = Process::spawn(GECKO_CLI_PATH, {"call", "--key", key, "sim/control/" + service, "{}"}, env);
        const auto code = p.wait(call_timeout);
        p.out().drain(100ms);
        INFO("gecko call " << service << ":\n" << p.output());
        CHECK(code == 0);
        return p.output();
    };
    CHECK_THAT(gecko_call("status"), Catch::Contains("state: running"));
    CHECK_THAT(gecko_call("pause"), Catch::Contains("state: paused"));
    const auto stopped_at = call(status).status.steps;
    CHECK_THAT(gecko_call("start"), Catch::Contains("state: running"));
    REQUIRE(await_status(topic, 0, [&](const Status& x) { return x.steps > stopped_at; }));

    // The controller ran through it all without an error, and ends cleanly.
    REQUIRE(controller.running());
    controller.kill(SIGINT);
    REQUIRE(controller.wait_for_line("done:", 20s));
    CHECK(controller.wait(20s) == 0);
    while (!controller.out().eof() && controller.out().read_line(10s)) {
    }  // its last lines
    CHECK(controller.output().find("refused") == std::string::npos);
    CHECK_THAT(controller.output(), Catch::Contains("paused refusals"));
    sim.kill(SIGINT);
    CHECK(sim.wait(20s) == 0);
}
