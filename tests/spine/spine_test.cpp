// SPDX-License-Identifier: Apache-2.0
// Tests of gecko/spine.hpp: the transition table, cell by cell, then the stop
// and shutdown cycle counts, interrupts, and the watchdog.

#include <gecko/error.hpp>
#include <gecko/spine.hpp>

#include <catch2/catch.hpp>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

using gecko::spine::Answer;
using gecko::spine::Event;
using gecko::spine::Request;
using gecko::spine::State;
using gecko::spine::StateMachine;
using gecko::spine::StateMachineOptions;
using gecko::spine::Step;
using gecko::spine::WatchdogPolicy;

namespace {

constexpr unsigned kStopCycles = 5;  // Upkie's kNbStopCycles

/// A plain-struct fixture: the machine under test plus the owner's side of a cycle.
struct Owner {
    StateMachine sut;
    std::optional<Answer> refused;  // what request() answered on the spot

    explicit Owner(StateMachineOptions options = {}) : sut(options) {}

    void post(Request r) { refused = sut.request(r); }
    Step begin() { return sut.process_event(Event::cycle_begin); }
    Step end() { return sut.process_event(Event::cycle_end); }

    /// One whole cycle (begin, end) with an optional request posted first.
    void cycle(std::optional<Request> r = std::nullopt) {
        if (r) post(*r);
        begin();
        end();
    }
};

/// States (and sub-states) the table starts from, with how to get there.
enum class From { stop, stop_done, reset, idle, observe, act, shutdown, over };

const char* name(From f) {
    switch (f) {
        case From::stop: return "stop (no stop cycle done yet)";
        case From::stop_done: return "stop (all stop cycles done)";
        case From::reset: return "reset";
        case From::idle: return "idle";
        case From::observe: return "observe";
        case From::act: return "act";
        case From::shutdown: return "shutdown";
        case From::over: return "over";
    }
    return "?";
}

void drive(Owner& o, From from) {
    auto start_to_idle = [&] {
        for (unsigned i = 0; i < kStopCycles; ++i) o.cycle();
        o.cycle(Request::start);  // begin: reset, end: idle
    };
    switch (from) {
        case From::stop:
            break;
        case From::stop_done:
            for (unsigned i = 0; i < kStopCycles; ++i) o.cycle();
            break;
        case From::reset:
            for (unsigned i = 0; i < kStopCycles; ++i) o.cycle();
            o.post(Request::start);
            o.begin();
            break;
        case From::idle:
            start_to_idle();
            break;
        case From::observe:
            start_to_idle();
            o.post(Request::observation);
            o.begin();
            break;
        case From::act:
            start_to_idle();
            o.post(Request::action);
            o.begin();
            break;
        case From::shutdown:
            o.sut.process_event(Event::interrupt);
            break;
        case From::over:
            o.sut.process_event(Event::interrupt);
            o.end();
            for (unsigned i = 1; i < kStopCycles; ++i) o.cycle();
            break;
    }
    o.refused.reset();
}

State state_of(From f) {
    switch (f) {
        case From::stop:
        case From::stop_done: return State::stop;
        case From::reset: return State::reset;
        case From::idle: return State::idle;
        case From::observe: return State::observe;
        case From::act: return State::act;
        case From::shutdown: return State::shutdown;
        case From::over: return State::over;
    }
    return State::over;
}

/// One input to the machine: cycle_begin with a request posted just before
/// (none = nothing posted), cycle_end, or interrupt.
struct Input {
    Event event;
    Request request;
};
const char* name(const Input& in) {
    if (in.event != Event::cycle_begin) return to_string(in.event);
    switch (in.request) {
        case Request::none: return "cycle_begin";
        case Request::observation: return "observation + cycle_begin";
        case Request::action: return "action + cycle_begin";
        case Request::start: return "start + cycle_begin";
        case Request::stop: return "stop + cycle_begin";
    }
    return "?";
}

enum class Reply {
    nothing,  ///< no answer at all from this input
    ok,       ///< Step::answer, ok
    error,    ///< Step::answer, refused with a reason
    refused,  ///< request() refused the post on the spot; the event then has no answer
};

struct Row {
    From from;
    Input input;
    State next;
    Reply reply;
    Request answered = Request::none;  ///< which request the answer is about (ok/error)
    bool warning = false;              ///< the owner fed the event out of order
};

constexpr Input begin_with(Request r) { return {Event::cycle_begin, r}; }
constexpr Input kBegin{Event::cycle_begin, Request::none};
constexpr Input kEnd{Event::cycle_end, Request::none};
constexpr Input kInterrupt{Event::interrupt, Request::none};

// The transition table of gecko/spine.hpp, one row per (state, input).
const std::vector<Row> kTable = {
    // stop, before the stop cycles are done: start waits (stays pending)
    {From::stop, kBegin, State::stop, Reply::nothing},
    {From::stop, begin_with(Request::observation), State::stop, Reply::error, Request::observation},
    {From::stop, begin_with(Request::action), State::stop, Reply::error, Request::action},
    {From::stop, begin_with(Request::start), State::stop, Reply::nothing},
    {From::stop, begin_with(Request::stop), State::stop, Reply::ok, Request::stop},
    {From::stop, kEnd, State::stop, Reply::nothing},
    {From::stop, kInterrupt, State::shutdown, Reply::nothing},
    // stop, after the stop cycles: start goes to reset
    {From::stop_done, kBegin, State::stop, Reply::nothing},
    {From::stop_done, begin_with(Request::observation), State::stop, Reply::error, Request::observation},
    {From::stop_done, begin_with(Request::action), State::stop, Reply::error, Request::action},
    {From::stop_done, begin_with(Request::start), State::reset, Reply::nothing},
    {From::stop_done, begin_with(Request::stop), State::stop, Reply::ok, Request::stop},
    {From::stop_done, kEnd, State::stop, Reply::nothing},
    {From::stop_done, kInterrupt, State::shutdown, Reply::nothing},
    // reset: the start request is in progress, so any new request is busy
    {From::reset, kBegin, State::reset, Reply::nothing, Request::none, true},
    {From::reset, begin_with(Request::observation), State::reset, Reply::refused, Request::none, true},
    {From::reset, begin_with(Request::action), State::reset, Reply::refused, Request::none, true},
    {From::reset, begin_with(Request::start), State::reset, Reply::refused, Request::none, true},
    {From::reset, begin_with(Request::stop), State::reset, Reply::refused, Request::none, true},
    {From::reset, kEnd, State::idle, Reply::ok, Request::start},
    {From::reset, kInterrupt, State::shutdown, Reply::error, Request::start},
    // idle
    {From::idle, kBegin, State::idle, Reply::nothing},
    {From::idle, begin_with(Request::observation), State::observe, Reply::nothing},
    {From::idle, begin_with(Request::action), State::act, Reply::nothing},
    {From::idle, begin_with(Request::start), State::idle, Reply::error, Request::start},
    {From::idle, begin_with(Request::stop), State::stop, Reply::ok, Request::stop},
    {From::idle, kEnd, State::idle, Reply::nothing},
    {From::idle, kInterrupt, State::shutdown, Reply::nothing},
    // observe
    {From::observe, kBegin, State::observe, Reply::nothing, Request::none, true},
    {From::observe, begin_with(Request::observation), State::observe, Reply::refused, Request::none, true},
    {From::observe, begin_with(Request::action), State::observe, Reply::refused, Request::none, true},
    {From::observe, begin_with(Request::start), State::observe, Reply::refused, Request::none, true},
    {From::observe, begin_with(Request::stop), State::observe, Reply::refused, Request::none, true},
    {From::observe, kEnd, State::idle, Reply::ok, Request::observation},
    {From::observe, kInterrupt, State::shutdown, Reply::error, Request::observation},
    // act
    {From::act, kBegin, State::act, Reply::nothing, Request::none, true},
    {From::act, begin_with(Request::observation), State::act, Reply::refused, Request::none, true},
    {From::act, begin_with(Request::action), State::act, Reply::refused, Request::none, true},
    {From::act, begin_with(Request::start), State::act, Reply::refused, Request::none, true},
    {From::act, begin_with(Request::stop), State::act, Reply::refused, Request::none, true},
    {From::act, kEnd, State::idle, Reply::ok, Request::action},
    {From::act, kInterrupt, State::shutdown, Reply::error, Request::action},
    // shutdown: every request is refused on the spot
    {From::shutdown, kBegin, State::shutdown, Reply::nothing},
    {From::shutdown, begin_with(Request::observation), State::shutdown, Reply::refused},
    {From::shutdown, begin_with(Request::action), State::shutdown, Reply::refused},
    {From::shutdown, begin_with(Request::start), State::shutdown, Reply::refused},
    {From::shutdown, begin_with(Request::stop), State::shutdown, Reply::refused},
    {From::shutdown, kEnd, State::shutdown, Reply::nothing},
    {From::shutdown, kInterrupt, State::shutdown, Reply::nothing},
    // over: terminal
    {From::over, kBegin, State::over, Reply::nothing},
    {From::over, begin_with(Request::observation), State::over, Reply::refused},
    {From::over, begin_with(Request::action), State::over, Reply::refused},
    {From::over, begin_with(Request::start), State::over, Reply::refused},
    {From::over, begin_with(Request::stop), State::over, Reply::refused},
    {From::over, kEnd, State::over, Reply::nothing},
    {From::over, kInterrupt, State::over, Reply::nothing},
};

}  // namespace

TEST_CASE("the table covers every state with every event and request", "[spine]") {
    const std::vector<From> froms = {From::stop, From::stop_done, From::reset,    From::idle,
                                     From::observe, From::act,    From::shutdown, From::over};
    const std::vector<Input> inputs = {kBegin,
                                       begin_with(Request::observation),
                                       begin_with(Request::action),
                                       begin_with(Request::start),
                                       begin_with(Request::stop),
                                       kEnd,
                                       kInterrupt};
    for (From f : froms) {
        for (const Input& in : inputs) {
            int n = 0;
            for (const Row& row : kTable) {
                if (row.from == f && row.input.event == in.event && row.input.request == in.request) ++n;
            }
            INFO(name(f) << " x " << name(in));
            CHECK(n == 1);
        }
    }
    CHECK(kTable.size() == froms.size() * inputs.size());
}

TEST_CASE("every state and input pair leads to the table's state and answer", "[spine]") {
    for (const Row& row : kTable) {
        INFO("from " << name(row.from) << ", input " << name(row.input));
        Owner o;
        drive(o, row.from);
        REQUIRE(o.sut.state() == state_of(row.from));

        if (row.input.event == Event::cycle_begin && row.input.request != Request::none) o.post(row.input.request);
        const Step step = o.sut.process_event(row.input.event);

        CHECK(to_string(step.state) == std::string(to_string(row.next)));
        CHECK(o.sut.state() == row.next);
        CHECK(step.warning.empty() == !row.warning);
        switch (row.reply) {
            case Reply::nothing:
                CHECK_FALSE(o.refused);
                CHECK_FALSE(step.answer);
                break;
            case Reply::refused:
                REQUIRE(o.refused);
                CHECK_FALSE(o.refused->ok);
                CHECK(o.refused->request == row.input.request);
                CHECK_FALSE(o.refused->error.empty());
                CHECK(o.sut.last_error() == o.refused->error);
                CHECK_FALSE(step.answer);
                break;
            case Reply::ok:
                CHECK_FALSE(o.refused);
                REQUIRE(step.answer);
                CHECK(step.answer->ok);
                CHECK(step.answer->request == row.answered);
                CHECK(step.answer->error.empty());
                break;
            case Reply::error:
                CHECK_FALSE(o.refused);
                REQUIRE(step.answer);
                CHECK_FALSE(step.answer->ok);
                CHECK(step.answer->request == row.answered);
                CHECK_FALSE(step.answer->error.empty());
                CHECK(o.sut.last_error() == step.answer->error);
                break;
        }
        // The slot is free again after any answer.
        if (step.answer) CHECK(o.sut.pending_request() == Request::none);
    }
}

TEST_CASE("an error answer names the request and the state", "[spine]") {
    Owner o;
    o.post(Request::action);
    const Step step = o.begin();
    REQUIRE(step.answer);
    CHECK_THAT(step.answer->error, Catch::Contains("'action'") && Catch::Contains("'stop'"));

    o.post(Request::start);
    o.post(Request::observation);  // second request while start is pending
    REQUIRE(o.refused);
    CHECK_THAT(o.refused->error, Catch::Contains("'start' is still pending"));
}

TEST_CASE("the machine starts in stop with no pending request", "[spine]") {
    Owner o;
    CHECK(o.sut.state() == State::stop);
    CHECK(o.sut.pending_request() == Request::none);
    CHECK(o.sut.stop_cycles_done() == 0);
    const Step step = o.begin();
    CHECK(step.send_stop_commands);
}

TEST_CASE("start is honoured only after the configured number of stop cycles", "[spine][stop]") {
    for (unsigned n : {1u, 2u, 5u, 10u}) {
        INFO("stop_cycles = " << n);
        StateMachineOptions options;
        options.stop_cycles = n;
        Owner o(options);
        o.post(Request::start);  // posted at once, like Upkie's Startup test
        for (unsigned cycle = 0; cycle < n; ++cycle) {
            const Step b = o.begin();
            CHECK(b.state == State::stop);
            CHECK(b.send_stop_commands);
            CHECK_FALSE(b.answer);
            CHECK(o.sut.pending_request() == Request::start);
            o.end();
            CHECK(o.sut.stop_cycles_done() == cycle + 1);
        }
        const Step b = o.begin();
        CHECK(b.state == State::reset);
        CHECK(b.apply_config);
        CHECK_FALSE(b.send_stop_commands);
        const Step e = o.end();
        CHECK(e.state == State::idle);
        REQUIRE(e.answer);
        CHECK(e.answer->ok);
        CHECK(e.answer->request == Request::start);
    }
}

TEST_CASE("stop cycles saturate and a start long after stop is immediate", "[spine][stop]") {
    Owner o;
    for (int i = 0; i < 100; ++i) o.cycle();
    CHECK(o.sut.stop_cycles_done() == kStopCycles);
    o.post(Request::start);
    CHECK(o.begin().state == State::reset);
}

TEST_CASE("a stop request from stop restarts the count of stop cycles", "[spine][stop]") {
    Owner o;
    for (unsigned i = 0; i < kStopCycles; ++i) o.cycle();
    o.cycle(Request::stop);
    CHECK(o.sut.stop_cycles_done() == 1);  // restarted at begin, counted at end
    o.post(Request::start);
    for (unsigned i = 1; i < kStopCycles; ++i) {
        CHECK(o.begin().state == State::stop);
        o.end();
    }
    CHECK(o.begin().state == State::reset);
}

TEST_CASE("a stop from idle sends stop commands for the configured cycles before a restart", "[spine][stop]") {
    Owner o;
    drive(o, From::idle);
    o.post(Request::stop);
    const Step b = o.begin();
    CHECK(b.state == State::stop);
    CHECK(b.send_stop_commands);
    REQUIRE(b.answer);
    CHECK(b.answer->ok);
    CHECK(o.sut.stop_cause() == "stopped by the agent");
    o.end();
    o.post(Request::start);
    unsigned stops = 1;
    while (o.begin().send_stop_commands) {
        ++stops;
        o.end();
    }
    CHECK(stops == kStopCycles);
    CHECK(o.sut.state() == State::reset);
}

TEST_CASE("the flags of a step follow the state the cycle runs in", "[spine]") {
    Owner o;
    drive(o, From::idle);
    o.post(Request::observation);
    Step b = o.begin();
    CHECK(b.write_observation);
    CHECK_FALSE(b.apply_action);
    CHECK_FALSE(b.send_stop_commands);
    Step e = o.end();
    CHECK_FALSE(e.write_observation);
    o.post(Request::action);
    b = o.begin();
    CHECK(b.apply_action);
    CHECK_FALSE(b.write_observation);
    e = o.end();
    CHECK_FALSE(e.apply_action);
    b = o.begin();  // idle, nothing asked
    CHECK_FALSE(b.apply_action);
    CHECK_FALSE(b.write_observation);
    CHECK_FALSE(b.send_stop_commands);
    CHECK_FALSE(b.apply_config);
}

TEST_CASE("an agent session: start, observe and act in turns, stop, start again", "[spine]") {
    Owner o;
    o.post(Request::start);
    int cycles = 0;
    while (o.sut.state() != State::idle) {
        o.begin();
        o.end();
        REQUIRE(++cycles < 100);
    }
    CHECK(cycles == static_cast<int>(kStopCycles) + 1);
    for (int i = 0; i < 10; ++i) {
        const Request r = (i % 2 == 0) ? Request::observation : Request::action;
        o.post(r);
        REQUIRE_FALSE(o.refused);
        o.begin();
        const Step e = o.end();
        REQUIRE(e.answer);
        CHECK(e.answer->ok);
        CHECK(e.answer->request == r);
    }
    o.post(Request::stop);
    CHECK(o.begin().answer->ok);
    o.end();
    o.post(Request::start);
    while (o.sut.state() != State::idle) {
        o.begin();
        o.end();
    }
    CHECK(o.sut.state() == State::idle);
}

TEST_CASE("an interrupt from every state leads to shutdown then over after the stop cycles", "[spine][interrupt]") {
    for (From f : {From::stop, From::stop_done, From::reset, From::idle, From::observe, From::act, From::shutdown}) {
        INFO("from " << name(f));
        Owner o;
        drive(o, f);
        // As in Upkie's Spine::begin_cycle, the interrupt replaces cycle_begin.
        Step step = o.sut.process_event(Event::interrupt);
        CHECK(step.state == State::shutdown);
        CHECK(step.send_stop_commands);
        unsigned stop_cycles = 1;
        bool over_flag_seen = false;
        for (;;) {
            if (o.sut.is_over_after_this_cycle()) over_flag_seen = true;
            step = o.end();
            if (step.state == State::over) break;
            CHECK(step.state == State::shutdown);
            step = o.begin();
            CHECK(step.send_stop_commands);
            ++stop_cycles;
            REQUIRE(stop_cycles < 100);
        }
        CHECK(over_flag_seen);
        CHECK(stop_cycles == kStopCycles);
        CHECK(o.sut.state() == State::over);
        // over is terminal: nothing brings it back
        for (Event e : {Event::cycle_begin, Event::cycle_end, Event::interrupt}) {
            step = o.sut.process_event(e);
            CHECK(step.state == State::over);
            CHECK_FALSE(step.send_stop_commands);
        }
    }
    // and from over itself it stays over
    Owner o;
    drive(o, From::over);
    CHECK(o.sut.process_event(Event::interrupt).state == State::over);
}

TEST_CASE("an interrupt in shutdown does not restart the shutdown count", "[spine][interrupt]") {
    Owner o;
    o.sut.process_event(Event::interrupt);
    o.end();
    o.begin();
    o.end();
    CHECK(o.sut.stop_cycles_done() == 2);
    o.sut.process_event(Event::interrupt);
    CHECK(o.sut.stop_cycles_done() == 2);
}

TEST_CASE("an interrupt answers a pending request with an error", "[spine][interrupt]") {
    Owner o;
    o.post(Request::start);
    const Step step = o.sut.process_event(Event::interrupt);
    REQUIRE(step.answer);
    CHECK_FALSE(step.answer->ok);
    CHECK(step.answer->request == Request::start);
    CHECK_THAT(step.answer->error, Catch::Contains("shutting down"));
    CHECK(o.sut.pending_request() == Request::none);
}

TEST_CASE("none and unknown requests are refused on the spot", "[spine]") {
    Owner o;
    auto a = o.sut.request(Request::none);
    REQUIRE(a);
    CHECK_FALSE(a->ok);
    a = o.sut.request(static_cast<Request>(42));
    REQUIRE(a);
    CHECK_THAT(a->error, Catch::Contains("unknown request 42"));
    CHECK(o.sut.pending_request() == Request::none);
}

TEST_CASE("an unknown event shuts the spine down with a warning", "[spine]") {
    Owner o;
    drive(o, From::idle);
    const Step step = o.sut.process_event(static_cast<Event>(9));
    CHECK(step.state == State::shutdown);
    CHECK(step.send_stop_commands);
    CHECK_THAT(step.warning, Catch::Contains("unknown event 9"));
}

TEST_CASE("invalid options are refused with a reason", "[spine]") {
    StateMachineOptions options;
    options.stop_cycles = 0;
    CHECK_THROWS_AS(StateMachine(options), gecko::Error);
    options.stop_cycles = 1;
    options.watchdog_timeout = std::chrono::milliseconds(-1);
    CHECK_THROWS_WITH(StateMachine(options), Catch::Contains("watchdog_timeout"));
}

TEST_CASE("names round-trip and unknown names are rejected", "[spine]") {
    for (Request r : {Request::none, Request::observation, Request::action, Request::start, Request::stop}) {
        CHECK(gecko::spine::request_from_string(to_string(r)) == r);
    }
    CHECK_FALSE(gecko::spine::request_from_string("error"));
    CHECK_FALSE(gecko::spine::request_from_string("Action"));
    CHECK(std::string(to_string(State::shutdown)) == "shutdown");
    CHECK(std::string(to_string(Event::cycle_begin)) == "cycle_begin");
    CHECK(std::string(to_string(WatchdogPolicy::report)) == "report");
    CHECK(std::string(to_string(static_cast<State>(77))) == "unknown");
}

// ---------------------------------------------------------------- watchdog

TEST_CASE("the cycle watchdog stops the spine after that many cycles without an action", "[spine][watchdog]") {
    StateMachineOptions options;
    options.watchdog_cycles = 3;
    Owner o(options);
    drive(o, From::idle);

    // Not armed before the first action: idling forever is fine.
    for (int i = 0; i < 20; ++i) {
        CHECK_FALSE(o.begin().watchdog_tripped);
        o.end();
    }
    CHECK_FALSE(o.sut.watchdog_armed());

    // Acting at least every 4th cycle keeps it quiet.
    for (int round = 0; round < 5; ++round) {
        o.cycle(Request::action);
        CHECK(o.sut.watchdog_armed());
        CHECK(o.sut.cycles_since_action() == 0);
        o.cycle(Request::observation);
        o.cycle();
        o.cycle();
        CHECK(o.sut.cycles_since_action() == 3);
        CHECK(o.sut.state() == State::idle);
    }

    // Then silence on the 4th cycle after the last action: it begins in stop.
    const Step b = o.begin();
    CHECK(b.watchdog_tripped);
    CHECK(b.state == State::stop);
    CHECK(b.send_stop_commands);
    CHECK_FALSE(b.answer);
    CHECK_THAT(o.sut.stop_cause(), Catch::Contains("no action for 3 cycles"));
    CHECK_FALSE(o.sut.watchdog_armed());
    o.end();

    // The agent's next action is refused, and the reason says why.
    o.post(Request::action);
    const Step late = o.begin();
    REQUIRE(late.answer);
    CHECK_FALSE(late.answer->ok);
    CHECK_THAT(late.answer->error, Catch::Contains("'stop'") && Catch::Contains("watchdog"));
}

TEST_CASE("an observation request does not feed the watchdog", "[spine][watchdog]") {
    StateMachineOptions options;
    options.watchdog_cycles = 1;
    Owner o(options);
    drive(o, From::idle);
    o.cycle(Request::action);
    o.cycle(Request::observation);  // counts as a cycle without an action
    o.post(Request::observation);
    const Step b = o.begin();
    CHECK(b.watchdog_tripped);
    CHECK(b.state == State::stop);
    REQUIRE(b.answer);  // the observation is answered in stop: refused
    CHECK_FALSE(b.answer->ok);
    CHECK(b.answer->request == Request::observation);
}

TEST_CASE("an action arriving on the watchdog's last cycle is applied", "[spine][watchdog]") {
    StateMachineOptions options;
    options.watchdog_cycles = 2;
    Owner o(options);
    drive(o, From::idle);
    o.cycle(Request::action);
    o.cycle();
    o.cycle();
    CHECK(o.sut.cycles_since_action() == 2);  // expired, but an action is pending
    o.post(Request::action);
    const Step b = o.begin();
    CHECK_FALSE(b.watchdog_tripped);
    CHECK(b.state == State::act);
}

TEST_CASE("the duration watchdog uses the owner's clock", "[spine][watchdog]") {
    using namespace std::chrono_literals;
    StateMachineOptions options;
    options.watchdog_timeout = 50ms;
    StateMachine sm(options);
    std::chrono::steady_clock::time_point t{};  // a fake clock: no sleeping
    auto cycle = [&](std::optional<Request> r = std::nullopt) {
        if (r) REQUIRE_FALSE(sm.request(*r));
        Step b = sm.process_event(Event::cycle_begin, t);
        sm.process_event(Event::cycle_end, t);
        t += 10ms;
        return b;
    };
    for (unsigned i = 0; i < kStopCycles; ++i) cycle();
    cycle(Request::start);
    REQUIRE(sm.state() == State::idle);
    cycle(Request::action);  // at t0
    for (int i = 0; i < 4; ++i) CHECK_FALSE(cycle().watchdog_tripped);  // t0 + 10..40 ms
    const Step b = cycle();  // t0 + 50 ms
    CHECK(b.watchdog_tripped);
    CHECK(b.state == State::stop);
    CHECK_THAT(sm.stop_cause(), Catch::Contains("50 ms"));
}

TEST_CASE("the report policy flags a silent agent once and stays in idle", "[spine][watchdog]") {
    StateMachineOptions options;
    options.watchdog_cycles = 2;
    options.watchdog_policy = WatchdogPolicy::report;
    Owner o(options);
    drive(o, From::idle);
    o.cycle(Request::action);
    int trips = 0;
    for (int i = 0; i < 10; ++i) {
        const Step b = o.begin();
        if (b.watchdog_tripped) ++trips;
        CHECK(b.state == State::idle);
        o.end();
    }
    CHECK(trips == 1);
    o.cycle(Request::action);  // re-arms the report
    for (int i = 0; i < 10; ++i) {
        if (o.begin().watchdog_tripped) ++trips;
        o.end();
    }
    CHECK(trips == 2);
}
