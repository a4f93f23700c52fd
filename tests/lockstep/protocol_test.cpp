// The Click lockstep protocol over paired topics, in one process: every row of
// DESIGN.md's table, every reset path, exactly-once stepping under duplicated
// and late messages, local refusal of bad controls, one controller at a time,
// the watchdog and the interrupt.

#include <catch2/catch.hpp>

#include "lockstep_rig.hpp"

#include <cmath>
#include <map>

using namespace lockstep_test;
using gecko::click::AnswerKind;
using gecko::click::Request;
using gecko::click::RequestKind;
using gecko::spine::State;

namespace {

Request raw_request(const std::string& controller, std::uint64_t id, RequestKind kind) {
    Request r;
    r.controller_id = controller;
    r.request_id = id;
    r.kind = kind;
    switch (kind) {
        case RequestKind::handshake_init: r.handshake_init.emplace(); break;
        case RequestKind::sensor_request: r.sensor_request.emplace(); break;
        case RequestKind::control: r.control = arm_control(0.5, 1.0); break;
        case RequestKind::reset: r.reset.emplace(); break;
        case RequestKind::error: r.error.emplace(); r.error->direction = gecko::msgs::click::Direction::request; break;
    }
    return r;
}

double angle(const gecko::msgs::click::Sensor& s, std::size_t joint) { return s.objects.at("arm").angle_sensors.at(joint); }

}  // namespace

// ---------------------------------------------------------------------------
// The table
// ---------------------------------------------------------------------------

TEST_CASE("HandshakeInit is answered by the Handshake and steps nothing", "[lockstep][protocol]") {
    CountingBackend backend;
    Rig rig(backend);
    auto ctl = rig.controller();
    const auto& h = ctl.handshake();
    REQUIRE(h.objects.count("arm") == 1);
    CHECK(h.objects.at("arm").controls_in_order == std::vector<std::string>{"joint1", "joint2"});
    CHECK(h.control_type == ValueType::multiple);
    CHECK(h.time_step == Approx(0.01));
    CHECK(h.answers != 0);
    CHECK(backend.steps == 0);
    const auto status = rig.server->status();
    CHECK(status.state == State::idle);
    CHECK(status.controller == ctl.id());
    CHECK_FALSE(status.running);
    CHECK(status.stop_commands >= 5);  // the spine's stop cycles before its start
}

TEST_CASE("SensorRequest is answered by a Sensor and does not step", "[lockstep][protocol]") {
    CountingBackend backend;
    Rig rig(backend);
    auto ctl = rig.controller();
    ctl.handshake();
    for (int i = 0; i < 5; ++i) {
        auto r = ctl.sensors();
        REQUIRE(r.is_sensor());
        CHECK(r.sensor().simulated_time == Approx(0.0));
    }
    CHECK(backend.steps == 0);
    CHECK(backend.applies == 0);
}

TEST_CASE("a SensorRequest before any handshake is answered without starting anything", "[lockstep][protocol]") {
    CountingBackend backend;
    Rig rig(backend);
    auto ctl = rig.controller();
    auto r = ctl.sensors();
    REQUIRE(r.is_sensor());
    CHECK(rig.server->status().state == State::stop);
    CHECK(backend.steps == 0);
}

TEST_CASE("each Control steps exactly once and is answered by that step's sensors", "[lockstep][protocol]") {
    CountingBackend backend;
    Rig rig(backend);
    auto ctl = rig.controller();
    ctl.handshake();
    CHECK_FALSE(rig.server->status().running);  // not started until the first Control
    for (int i = 1; i <= 20; ++i) {
        auto r = ctl.step(arm_control(1.0, 0.5));
        REQUIRE(r.is_sensor());
        CHECK(backend.steps == i);
        CHECK(angle(r.sensor(), 0) == Approx(1.0 * i));
        CHECK(angle(r.sensor(), 1) == Approx(0.5 * i));
        CHECK(r.sensor().answers != 0);
    }
    const auto status = rig.server->status();
    CHECK(status.running);
    CHECK(status.steps == 20);
    CHECK(status.duplicate_requests + 20 + 1 <= status.requests);  // handshake + 20 controls, plus any re-sends
}

TEST_CASE("a Control without a handshake starts the simulation, as Click allows", "[lockstep][protocol]") {
    CountingBackend backend;
    Rig rig(backend);
    auto raw = rig.raw_client();
    auto a = raw.exchange(raw_request("raw", 1, RequestKind::control));
    REQUIRE(a);
    CHECK(a->kind == AnswerKind::sensor);
    CHECK(backend.steps == 1);
    CHECK(rig.server->status().running);
}

TEST_CASE("Reset resets to the initial state and pauses until the next Control", "[lockstep][protocol][reset]") {
    CountingBackend backend;
    Rig rig(backend);
    auto ctl = rig.controller();
    ctl.handshake();
    for (int i = 0; i < 3; ++i) REQUIRE(ctl.step(arm_control(1.0, 1.0)).is_sensor());
    REQUIRE(backend.steps == 3);

    ctl.reset();
    CHECK(backend.resets == 1);
    CHECK_FALSE(rig.server->status().running);

    // Paused: a SensorRequest meanwhile shows the initial state and steps nothing.
    auto s = ctl.sensors();
    REQUIRE(s.is_sensor());
    CHECK(angle(s.sensor(), 0) == 0.0);
    CHECK(s.sensor().simulated_time == Approx(0.0));
    CHECK(backend.steps == 0);

    // The next Control starts it again: one step.
    auto r = ctl.step(arm_control(2.0, 0.0));
    REQUIRE(r.is_sensor());
    CHECK(angle(r.sensor(), 0) == Approx(2.0));
    CHECK(backend.steps == 1);
    CHECK(rig.server->status().running);
}

TEST_CASE("a Reset before the first Control resets and leaves the simulation paused", "[lockstep][protocol][reset]") {
    CountingBackend backend;
    Rig rig(backend);
    auto ctl = rig.controller();
    ctl.handshake();
    ctl.reset();
    CHECK(backend.resets == 1);
    CHECK(backend.steps == 0);
    CHECK(rig.server->status().state == State::idle);
    REQUIRE(ctl.sensors().is_sensor());
    CHECK(backend.steps == 0);
    REQUIRE(ctl.step(arm_control(1.0, 1.0)).is_sensor());
    CHECK(backend.steps == 1);
}

TEST_CASE("a simulation-side reset is answered to the next request, whatever it is, except Error",
          "[lockstep][protocol][reset]") {
    CountingBackend backend;
    Rig rig(backend);
    auto ctl = rig.controller();
    ctl.handshake();
    REQUIRE(ctl.step(arm_control(1.0, 1.0)).is_sensor());

    SECTION("a Control gets Reset and does not step") {
        rig.server->request_reset();
        auto r = ctl.step(arm_control(1.0, 1.0));
        CHECK(r.is_reset());
        CHECK(backend.resets == 1);
        CHECK(backend.steps == 0);
        CHECK_THROWS_AS(r.sensor(), gecko::Error);
        // Then paused: the next Control steps once from the initial state.
        auto next = ctl.step(arm_control(1.0, 1.0));
        REQUIRE(next.is_sensor());
        CHECK(angle(next.sensor(), 0) == Approx(1.0));
        CHECK(backend.steps == 1);
    }
    SECTION("a SensorRequest gets Reset, then Sensors of the initial state") {
        rig.server->request_reset();
        CHECK(ctl.sensors().is_reset());
        auto s = ctl.sensors();
        REQUIRE(s.is_sensor());
        CHECK(angle(s.sensor(), 0) == 0.0);
    }
    SECTION("a HandshakeInit absorbs it: handshake() asks again and gets the Handshake") {
        rig.server->request_reset();
        CHECK_NOTHROW(ctl.handshake());
        CHECK(backend.resets == 1);
        CHECK(rig.server->status().reset_pending == false);
    }
    SECTION("a Reset request gets its Reset") {
        rig.server->request_reset();
        CHECK_NOTHROW(ctl.reset());
    }
    SECTION("an Error is not answered with Reset: it ends the run") {
        rig.server->request_reset();
        REQUIRE(eventually([&] { return rig.server->status().reset_pending; }));
        CHECK(ctl.error("bye"));
        CHECK(backend.ended_runs == 1);
    }
}

TEST_CASE("Error ends the run: stop commands, the slot freed, acknowledged", "[lockstep][protocol]") {
    CountingBackend backend;
    Rig rig(backend);
    auto ctl = rig.controller();
    ctl.handshake();
    REQUIRE(ctl.step(arm_control(1.0, 1.0)).is_sensor());
    const int stops_before = backend.stops;
    CHECK(ctl.error("controller finished"));
    CHECK(backend.ended_runs == 1);
    {
        std::lock_guard<std::mutex> lock(backend.mutex);
        CHECK(backend.end_reason == "controller finished");
    }
    CHECK(backend.stops > stops_before);
    const auto status = rig.server->status();
    CHECK(status.state == State::stop);
    CHECK(status.controller.empty());
    CHECK_FALSE(status.running);
    // The server keeps serving: another controller may drive it now.
    auto next = rig.controller();
    CHECK_NOTHROW(next.handshake());
}

TEST_CASE("an Error with exit_on_error ends the server after its stop cycles", "[lockstep][protocol]") {
    CountingBackend backend;
    gecko::click::SimulationServerOptions options;
    options.exit_on_error = true;
    Rig rig(backend, options);
    auto ctl = rig.controller();
    ctl.handshake();
    CHECK(ctl.error("done"));
    REQUIRE(eventually([&] { return rig.over.load(); }));
    CHECK(rig.server->status().state == State::over);
}

// ---------------------------------------------------------------------------
// Exactly once
// ---------------------------------------------------------------------------

TEST_CASE("a duplicated request is answered again from the cache without stepping", "[lockstep][duplicates]") {
    CountingBackend backend;
    Rig rig(backend);
    auto raw = rig.raw_client();
    REQUIRE(raw.exchange(raw_request("dup", 1, RequestKind::handshake_init)));
    raw.drain();

    const Request control = raw_request("dup", 2, RequestKind::control);
    raw.requests.publish(control);
    raw.requests.publish(control);  // the same envelope twice
    auto first = raw.answer_to("dup", 2);
    auto second = raw.answer_to("dup", 2);
    REQUIRE(first);
    REQUIRE(second);
    CHECK(first->kind == AnswerKind::sensor);
    CHECK(second->kind == AnswerKind::sensor);
    CHECK(*first->sensor == *second->sensor);
    CHECK(backend.steps == 1);
    CHECK(rig.server->status().duplicate_requests >= 1);
}

TEST_CASE("a late request (older than the last) never acts: no step, an error answer saying why",
          "[lockstep][duplicates]") {
    CountingBackend backend;
    Rig rig(backend);
    auto raw = rig.raw_client();
    REQUIRE(raw.exchange(raw_request("late", 1, RequestKind::handshake_init)));
    raw.drain();
    REQUIRE(raw.exchange(raw_request("late", 3, RequestKind::control)));
    raw.drain();
    REQUIRE(backend.steps == 1);

    raw.requests.publish(raw_request("late", 2, RequestKind::control));  // arrives after #3: late
    auto late = raw.answer_to("late", 2);
    REQUIRE(late);
    CHECK(late->kind == AnswerKind::error);
    CHECK_THAT(late->error->reason, Catch::Contains("older than its last one (#3)"));
    CHECK(backend.steps == 1);
    CHECK(rig.server->status().stale_requests == 1);
    auto four = raw.exchange(raw_request("late", 4, RequestKind::sensor_request));
    REQUIRE(four);  // the run goes on
    CHECK(four->kind == AnswerKind::sensor);
    CHECK(backend.steps == 1);
}

TEST_CASE("a controller restarted with the same id after ending its run drives the simulation again",
          "[lockstep][duplicates]") {
    CountingBackend backend;
    Rig rig(backend);
    auto options = rig.controller_options();
    options.controller_id = "fixed-id";
    {
        auto first = rig.controller(options);
        first.handshake();
        REQUIRE(first.step(arm_control(1.0, 0.0)).is_sensor());
        REQUIRE(first.step(arm_control(1.0, 0.0)).is_sensor());
        first.error("done");
    }
    auto again = rig.controller_options();  // a new controller, the same id
    again.controller_id = "fixed-id";
    auto second = rig.controller(again);  // counts from request #1 again
    second.handshake();
    REQUIRE(second.step(arm_control(1.0, 0.0)).is_sensor());
    CHECK(backend.steps == 3);
}

TEST_CASE("a controller that re-sends while a slow step runs still steps exactly once per Control",
          "[lockstep][duplicates]") {
    CountingBackend backend;
    backend.step_duration = 30ms;
    Rig rig(backend);
    auto options = rig.controller_options();
    options.resend_after = 2ms;  // re-send far more often than a step takes
    auto ctl = rig.controller(options);
    ctl.handshake();
    for (int i = 1; i <= 5; ++i) {
        auto r = ctl.step(arm_control(1.0, 0.0));
        REQUIRE(r.is_sensor());
        CHECK(angle(r.sensor(), 0) == Approx(1.0 * i));
    }
    CHECK(backend.steps == 5);
    CHECK(ctl.stats().resends > 0);
    CHECK(rig.server->status().duplicate_requests > 0);
}

TEST_CASE("answers for another controller or an older request are ignored", "[lockstep][duplicates]") {
    CountingBackend backend;
    Rig rig(backend);
    auto ctl = rig.controller("me");
    ctl.handshake();
    // An answer to someone else, and a late answer to an old request of ours, published on the answer topic.
    auto fake = rig.node.publisher<gecko::click::Answer>(ctl.topics().answer);
    REQUIRE(fake.wait_for_subscribers(1, 10s));
    gecko::click::Answer other;
    other.controller_id = "someone-else";
    other.answers = 2;
    other.kind = AnswerKind::reset;
    other.reset.emplace();
    fake.publish(other);
    gecko::click::Answer stale = other;
    stale.controller_id = "me";
    stale.answers = 1;
    fake.publish(stale);

    // The fake answers travel on their own connection, so ZeroMQ may hand the
    // controller a real answer first: ask for sensors (no step) until both
    // fakes have been seen and ignored. None may be taken for our answer.
    for (int i = 0; i < 200 && ctl.stats().ignored_answers < 2; ++i) {
        REQUIRE(ctl.sensors().is_sensor());
    }
    CHECK(ctl.stats().ignored_answers >= 2);
    auto r = ctl.step(arm_control(1.0, 1.0));
    CHECK(r.is_sensor());
    CHECK(backend.steps == 1);
}

// ---------------------------------------------------------------------------
// Refusals
// ---------------------------------------------------------------------------

TEST_CASE("a control that does not match the handshake is refused locally, before anything is sent",
          "[lockstep][refusal]") {
    CountingBackend backend;
    Rig rig(backend);
    auto ctl = rig.controller();

    SECTION("before the handshake") {
        try {
            ctl.step(arm_control(1.0, 1.0));
            FAIL("step() before handshake() must throw");
        } catch (const gecko::Error& e) {
            CHECK(e.code() == gecko::Errc::protocol);
            CHECK(std::string(e.what()).find("handshake()") != std::string::npos);
        }
        return;
    }

    ctl.handshake();
    const auto requests_before = rig.server->status().requests;
    auto refused = [&](const gecko::msgs::click::Control& c, const std::string& expected) {
        try {
            ctl.step(c);
            FAIL("expected a refusal containing: " << expected);
        } catch (const gecko::Error& e) {
            INFO(e.what());
            CHECK(e.code() == gecko::Errc::invalid_argument);
            CHECK(std::string(e.what()).find(expected) != std::string::npos);
        }
    };
    gecko::msgs::click::Control c;

    c = arm_control(1.0, 1.0);
    c.objects["robot3"].values = {1.0};
    refused(c, "unknown object 'robot3'");

    c = arm_control(1.0, 1.0);
    c.objects["arm"].values = {1.0, 2.0, 3.0};
    refused(c, "has 2 controls (joint1, joint2), the control gives 3 values");

    c = {};
    c.objects["arm"].angles = {1.0, 2.0};  // joint2 is torque-controlled
    refused(c, "'joint2' is Torque1D");

    c = arm_control(1.0, 1.0);
    c.objects["arm"].torques = {1.0, 2.0};
    refused(c, "more than one of values");

    c = arm_control(1.0, std::nan(""));
    refused(c, "not finite");

    c = arm_control(1.0, 1.0);
    c.objects["arm"].control_events["laser"] = true;
    refused(c, "no control event 'laser'");

    c = {};
    c.objects["box"].values = {1.0};
    refused(c, "'box' has 0 controls");

    CHECK(rig.server->status().requests == requests_before);  // nothing went out
    CHECK(backend.steps == 0);

    // A control with events only, or for a subset of the objects, is fine.
    c = {};
    c.objects["arm"].control_events["gripper"] = true;
    CHECK(ctl.step(c).is_sensor());
}

TEST_CASE("a bad control that reaches the simulation anyway is answered with an Error and steps nothing",
          "[lockstep][refusal]") {
    CountingBackend backend;
    Rig rig(backend);
    auto raw = rig.raw_client();
    REQUIRE(raw.exchange(raw_request("raw", 1, RequestKind::handshake_init)));
    Request bad = raw_request("raw", 2, RequestKind::control);
    bad.control->objects["arm"].values = {1.0};
    auto a = raw.exchange(bad);
    REQUIRE(a);
    CHECK(a->kind == AnswerKind::error);
    REQUIRE(a->error);
    CHECK(a->error->reason.find("gives 1 value") != std::string::npos);
    CHECK(backend.steps == 0);
}

TEST_CASE("a second controller is refused with an error naming the one in charge", "[lockstep][refusal]") {
    CountingBackend backend;
    Rig rig(backend);
    auto first = rig.controller("first-controller");
    first.handshake();
    REQUIRE(first.step(arm_control(1.0, 1.0)).is_sensor());

    auto second = rig.controller("second-controller");
    try {
        second.handshake();
        FAIL("the second controller's handshake must be refused");
    } catch (const gecko::Error& e) {
        CHECK(e.code() == gecko::Errc::remote);
        CHECK(std::string(e.what()).find("driven by controller 'first-controller'") != std::string::npos);
    }
    auto s = second.sensors();
    REQUIRE(s.is_error());
    CHECK(s.error().reason.find("first-controller") != std::string::npos);
    CHECK(backend.steps == 1);

    // The first one is undisturbed; once it ends its run, the second may drive.
    REQUIRE(first.step(arm_control(1.0, 1.0)).is_sensor());
    CHECK(backend.steps == 2);
    REQUIRE(first.error("handing over"));
    CHECK_NOTHROW(second.handshake());
    CHECK(second.step(arm_control(1.0, 1.0)).is_sensor());
    CHECK(rig.server->status().controller == "second-controller");
}

TEST_CASE("a silent controller is taken over after takeover_after", "[lockstep][refusal]") {
    CountingBackend backend;
    gecko::click::SimulationServerOptions options;
    options.takeover_after = 100ms;
    Rig rig(backend, options);
    auto first = rig.controller("first");
    first.handshake();
    auto second = rig.controller("second");
    CHECK_THROWS_AS(second.handshake(), gecko::Error);
    // Retried until the first has been silent long enough (bounded).
    CHECK(eventually([&] {
        try {
            second.handshake();
            return true;
        } catch (const gecko::Error&) {
            return false;
        }
    }));
    CHECK(rig.server->status().controller == "second");
}

TEST_CASE("a controller whose process ended is replaced at once, not after takeover_after", "[lockstep][refusal]") {
    CountingBackend backend;
    gecko::click::SimulationServerOptions options;
    options.takeover_after = std::chrono::minutes(10);  // never, within this test
    Rig rig(backend, options);
    auto first = std::make_unique<gecko::click::Controller>(rig.controller("first"));
    first->handshake();
    REQUIRE(first->step(arm_control(1.0, 1.0)).is_sensor());
    first.reset();  // gone without ending its run, as a killed process: its answer subscription closes

    auto second = rig.controller("second");
    // Accepted as soon as the simulation has seen the subscription close
    // (bounded; refused until then, never for takeover_after).
    CHECK(eventually([&] {
        try {
            second.handshake();
            return true;
        } catch (const gecko::Error&) {
            return false;
        }
    }));
    CHECK(second.step(arm_control(1.0, 1.0)).is_sensor());
    CHECK(rig.server->status().controller == "second");
}

TEST_CASE("a live controller that says nothing for a while is not replaced", "[lockstep][refusal]") {
    CountingBackend backend;
    gecko::click::SimulationServerOptions options;
    options.takeover_after = std::chrono::minutes(10);
    Rig rig(backend, options);
    auto first = rig.controller("first");
    first.handshake();
    auto second = rig.controller("second");
    for (int i = 0; i < 3; ++i) CHECK_THROWS_AS(second.handshake(), gecko::Error);
    CHECK(rig.server->status().controller == "first");
    CHECK(first.step(arm_control(1.0, 1.0)).is_sensor());
}

TEST_CASE("a simulation that exits ends the controller's wait at once, not at its timeout", "[lockstep][refusal]") {
    CountingBackend backend;
    Rig rig(backend);
    auto o = rig.controller_options("ctl");
    o.timeout = std::chrono::seconds(60);  // ended by this timeout instead, the code says timeout: a failure
    auto ctl = rig.controller(o);
    ctl.handshake();
    REQUIRE(ctl.step(arm_control(1.0, 1.0)).is_sensor());
    rig.stop();
    try {
        ctl.step(arm_control(1.0, 1.0));
        FAIL("a step without a simulation must throw");
    } catch (const gecko::Error& e) {
        CHECK(e.code() == gecko::Errc::no_peer);
        CHECK_THAT(e.what(), Catch::Contains("simulation 'sim' is gone"));
    }
}

TEST_CASE("waiting for a simulation that is not there fails with a clear error", "[lockstep][refusal]") {
    auto node = make_node("alone");
    gecko::click::ControllerOptions o;
    o.connect_timeout = 100ms;
    gecko::click::Controller ctl(node, "ghost", o);
    try {
        ctl.handshake();
        FAIL("handshake() without a simulation must throw");
    } catch (const gecko::Error& e) {
        CHECK(e.code() == gecko::Errc::no_peer);
        CHECK(std::string(e.what()).find("ghost/click/request") != std::string::npos);
    }
}

TEST_CASE("a simulation that does not answer makes the call time out, naming the request", "[lockstep][refusal]") {
    // A subscriber on the request topic that never answers.
    auto node = make_node("mute");
    gecko::click::ControllerOptions o;
    o.timeout = 150ms;
    gecko::click::Controller ctl(node, "mute", o);
    auto mute = node.subscriber<gecko::click::Request>("mute/click/request");
    try {
        ctl.handshake();
        FAIL("handshake() without an answer must throw");
    } catch (const gecko::Error& e) {
        CHECK(e.code() == gecko::Errc::timeout);
        CHECK(std::string(e.what()).find("HandshakeInit") != std::string::npos);
    }
    CHECK(ctl.stats().resends > 0);
}

// ---------------------------------------------------------------------------
// Watchdog and interrupt
// ---------------------------------------------------------------------------

namespace {

// A server whose watchdog trips after `watchdog` without a Control.
struct WatchdogRig {
    explicit WatchdogRig(std::chrono::milliseconds watchdog) : rig(backend, with_watchdog(watchdog)) {}
    static gecko::click::SimulationServerOptions with_watchdog(std::chrono::milliseconds watchdog) {
        gecko::click::SimulationServerOptions options;
        options.watchdog = watchdog;
        return options;
    }
    // `ctl` steps once (the simulation runs), then falls silent until the
    // watchdog has tripped `trips` times in all.
    void step_then_fall_silent(gecko::click::Controller& ctl, std::uint64_t trips) {
        REQUIRE(ctl.step(arm_control(1.0, 0.0)).is_sensor());
        REQUIRE(eventually([&] { return rig.server->status().watchdog_trips == trips; }));
    }
    CountingBackend backend;
    Rig rig;
};

}  // namespace

TEST_CASE("the watchdog stops the actuators when a running simulation gets no Control", "[lockstep][watchdog]") {
    CountingBackend backend;
    gecko::click::SimulationServerOptions options;
    options.watchdog = 100ms;
    Rig rig(backend, options);
    auto ctl = rig.controller();
    ctl.handshake();

    // Not running yet: a long gap before the first Control does not trip it.
    const auto until = std::chrono::steady_clock::now() + 250ms;
    while (std::chrono::steady_clock::now() < until) REQUIRE(ctl.sensors().is_sensor());
    CHECK(rig.server->status().watchdog_trips == 0);

    REQUIRE(ctl.step(arm_control(1.0, 1.0)).is_sensor());
    const int stops_before = backend.stops;
    REQUIRE(eventually([&] { return rig.server->status().watchdog_trips == 1; }));
    const auto status = rig.server->status();
    CHECK(status.state == State::stop);
    CHECK(status.stop_cause.find("watchdog") != std::string::npos);
    CHECK_FALSE(status.running);
    CHECK(backend.stops > stops_before);
    CHECK(backend.steps == 1);

    // Sensors can still be read; the next Control learns of the stop (an
    // Error, nothing applied), the one after starts the simulation again.
    REQUIRE(ctl.sensors().is_sensor());
    auto refused = ctl.step(arm_control(1.0, 1.0));
    REQUIRE(refused.is_error());
    CHECK(backend.steps == 1);
    auto r = ctl.step(arm_control(1.0, 1.0));
    REQUIRE(r.is_sensor());
    CHECK(backend.steps == 2);
    CHECK(rig.server->status().state == State::idle);
}

TEST_CASE("the first Control after a watchdog stop is answered with an Error that says so, and not applied",
          "[lockstep][watchdog]") {
    WatchdogRig w(100ms);
    auto& [backend, rig] = w;
    auto ctl = rig.controller("silent");
    ctl.handshake();
    w.step_then_fall_silent(ctl, 1);
    const int applies = backend.applies;

    // In the spine's words (state, request, watchdog), then what it means for Click.
    auto refused = ctl.step(arm_control(1.0, 0.0));
    REQUIRE(refused.is_error());
    const std::string& reason = refused.error().reason;
    CHECK_THAT(reason, Catch::StartsWith("spine: request 'action' is invalid in state 'stop'"));
    CHECK_THAT(reason, Catch::Contains("(the watchdog stopped the spine: no action for"));
    CHECK_THAT(reason, Catch::Contains("watchdog: no Control from controller 'silent' within 100 ms; the simulation "
                                       "stopped its actuators and did not apply this Control. The next Control "
                                       "starts it again"));
    CHECK(backend.applies == applies);
    CHECK(backend.steps == 1);
    auto status = rig.server->status();
    CHECK(status.state == State::stop);
    CHECK(status.refused_requests == 1);

    // Sensors are still answered meanwhile, and do not count as being told.
    REQUIRE(ctl.sensors().is_sensor());

    // Told once: the next Control starts the spine again and steps once.
    auto r = ctl.step(arm_control(1.0, 0.0));
    REQUIRE(r.is_sensor());
    CHECK(backend.steps == 2);
    CHECK(rig.server->status().state == State::idle);
    CHECK(rig.server->status().refused_requests == 1);
}

TEST_CASE("after a watchdog stop, a handshake or another controller starts without the refusal",
          "[lockstep][watchdog]") {
    WatchdogRig w(100ms);
    auto& [backend, rig] = w;
    {
        auto ctl = rig.controller("first");
        ctl.handshake();
        w.step_then_fall_silent(ctl, 1);
        REQUIRE(ctl.sensors().is_sensor());
        ctl.handshake();  // restarts knowingly: nothing pending any more
        w.step_then_fall_silent(ctl, 2);
        CHECK(backend.steps == 2);
    }
    // The watchdog freed the simulation; a controller that was not in charge is not refused.
    auto other = rig.controller("second");
    other.handshake();
    REQUIRE(other.step(arm_control(1.0, 0.0)).is_sensor());
    CHECK(backend.steps == 3);
    CHECK(rig.server->status().refused_requests == 0);
}

TEST_CASE("a steady controller never trips the watchdog", "[lockstep][watchdog]") {
    CountingBackend backend;
    gecko::click::SimulationServerOptions options;
    options.watchdog = 200ms;
    Rig rig(backend, options);
    auto ctl = rig.controller();
    ctl.handshake();
    for (int i = 0; i < 200; ++i) REQUIRE(ctl.step(arm_control(0.0, 0.0)).is_sensor());
    CHECK(rig.server->status().watchdog_trips == 0);
}

TEST_CASE("an interrupt sends stop commands for stop_cycles cycles before the server ends", "[lockstep][interrupt]") {
    CountingBackend backend;
    gecko::click::SimulationServerOptions options;
    options.stop_cycles = 7;
    Rig rig(backend, options);
    auto ctl = rig.controller();
    ctl.handshake();
    REQUIRE(ctl.step(arm_control(1.0, 1.0)).is_sensor());
    const int stops_before = backend.stops;
    rig.server->shutdown();
    REQUIRE(eventually([&] { return rig.over.load(); }));
    CHECK(backend.stops - stops_before == 7);
    CHECK(rig.server->status().state == State::over);
}

TEST_CASE("stop cycles are spread over stop_cycle_period, as over a real robot's bus cycles",
          "[lockstep][interrupt]") {
    CountingBackend backend;
    gecko::click::SimulationServerOptions options;
    options.stop_cycles = 4;
    options.stop_cycle_period = std::chrono::milliseconds(5);
    Rig rig(backend, options);
    auto ctl = rig.controller();
    ctl.handshake();
    REQUIRE(ctl.step(arm_control(1.0, 1.0)).is_sensor());
    const std::size_t before = backend.stops;
    rig.server->shutdown();
    REQUIRE(eventually([&] { return rig.over.load(); }));
    REQUIRE(backend.stop_times.size() - before == 4);
    for (std::size_t i = before + 1; i < backend.stop_times.size(); ++i)
        CHECK(backend.stop_times[i] - backend.stop_times[i - 1] >= std::chrono::milliseconds(5));
}

// ---------------------------------------------------------------------------
// Envelopes
// ---------------------------------------------------------------------------

TEST_CASE("envelopes travel as maps with the kind as a string", "[lockstep][msgs]") {
    Request r = raw_request("c", 7, RequestKind::control);
    gecko::Buffer buffer;
    gecko::codec::encode(buffer, r);
    msgpack::object_handle oh = msgpack::unpack(reinterpret_cast<const char*>(buffer.data()), buffer.size());
    const auto map = oh.get().as<std::map<std::string, msgpack::object>>();
    CHECK(map.at("kind").as<std::string>() == "Control");
    CHECK(map.at("controller_id").as<std::string>() == "c");
    CHECK(map.at("reset").is_nil());
    Request back;
    gecko::codec::decode(buffer.data(), buffer.size(), back);
    CHECK(back.kind == RequestKind::control);
    CHECK(back.control == r.control);
    CHECK_FALSE(back.reset);

    CHECK(gecko::click::lockstep_topics("sim").request == "sim/click/request");
    CHECK(gecko::click::lockstep_topics("lab/arm/").answer == "lab/arm/click/answer");
}
