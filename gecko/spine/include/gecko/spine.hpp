// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file spine.hpp
/// The spine's state machine: the logic that lets agents (controllers) come and
/// go safely while one process owns the actuators (a simulator or a robot
/// driver). Pure logic: no clock, no socket, no thread, no log.
///
/// The model is Upkie's spine (upkie/vulp `vulp/spine/StateMachine.cpp`). The
/// owner runs a fixed-rate loop and tells the machine where it is in each cycle;
/// the machine answers with a Step saying what to do in that cycle:
///
/// ```cpp
/// gecko::spine::StateMachine sm;                        // starts in `stop`
/// while (sm.state() != gecko::spine::State::over) {
///     if (auto refused = sm.request(next_agent_request())) reply(*refused);  // busy, shutting down
///     auto step = sm.process_event(gecko::ok() ? Event::cycle_begin : Event::interrupt);
///     if (step.answer) reply(*step.answer);                // an invalid request, or stop accepted
///     if (step.apply_config) reset_actuators(config);      // may be slow
///     if (step.send_stop_commands) write_stop_commands();
///     else if (step.apply_action) write_commands(action);
///     cycle_actuators();
///     if (step.write_observation) write_observation();
///     auto end = sm.process_event(Event::cycle_end);
///     if (end.answer) reply(*end.answer);                  // observation/action/start done
///     rate.sleep();
/// }
/// ```
///
/// ## Transition table
///
/// `r` is the agent's pending request (posted with StateMachine::request()),
/// `N` is StateMachineOptions::stop_cycles, `k` the count of stop cycles done
/// since the state was (re-)entered. "ok" / "error" is the Answer handed back
/// in Step::answer; a request is answered exactly once.
///
/// ```
/// state    | cycle_begin                                  | cycle_end                     | interrupt
/// ---------+----------------------------------------------+-------------------------------+-------------------------
/// stop     | r=none: stay                                 | k += 1 (saturates at N)       | shutdown
///          | r=start, k >= N: -> reset                    |                               | (pending r: error)
///          | r=start, k <  N: stay, start stays pending   |                               |
///          | r=stop: -> stop (k = 0), ok                  |                               |
///          | r=observation|action: stay, error            |                               |
/// reset    | stay, Step::warning (owner skipped an end)   | -> idle, start ok             | shutdown (start: error)
/// idle     | r=none: stay (the watchdog may -> stop)      | stay                          | shutdown
///          | r=observation: -> observe                    |                               | (pending r: error)
///          | r=action: -> act                             |                               |
///          | r=stop: -> stop (k = 0), ok                  |                               |
///          | r=start: stay, error (stop first)            |                               |
/// observe  | stay, Step::warning                          | -> idle, observation ok       | shutdown (observation: error)
/// act      | stay, Step::warning                          | -> idle, action ok            | shutdown (action: error)
/// shutdown | stay                                         | k += 1; -> over when k == N   | stay (k is not restarted)
/// over     | stay                                         | stay                          | stay (terminal)
/// ```
///
/// Requests refused on the spot by StateMachine::request(), whatever the
/// state: a second request while one is pending or in progress ("busy"), any
/// request in shutdown or over, and `none`.
///
/// The owner sends stop commands in every cycle whose cycle_begin (or
/// interrupt) leaves the machine in stop or shutdown (Step::send_stop_commands),
/// so at least N cycles of stop commands go out before reset or over. In idle
/// the actuators keep their last commands, which is what the watchdog is for.
///
/// ## Where Gecko departs from Upkie, and why
///
/// - Upkie's agent writes its request into shared memory and polls it until the
///   spine clears it (served) or sets `Request::kError`. Here the owner passes
///   the request in and gets an Answer with a reason; there is no `error`
///   request value.
/// - Upkie ignores `start` in idle with a warning (and leaves a TODO to tell the
///   agent) and ignores requests in shutdown and over, so the agent waits for
///   nothing. Gecko answers each of these with an error.
/// - Upkie re-enters shutdown on an interrupt in over; Gecko keeps over terminal.
/// - The watchdog is Gecko's: Upkie has none in the state machine.
///
/// Not thread-safe: call it from the owner's loop thread only.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace gecko::spine {

/// States of the spine. Values are stable (they go on the wire and in logs).
enum class State : std::uint8_t {
    stop = 0,      ///< send stop commands; wait for `start`
    reset = 1,     ///< apply the agent's configuration (not time-critical, may be slow)
    idle = 2,      ///< do nothing; wait for a request
    observe = 3,   ///< write an observation for the agent
    act = 4,       ///< apply the agent's action
    shutdown = 5,  ///< send stop commands, then end
    over = 6,      ///< terminal: the owner leaves its loop
};

/// Events the owner feeds in, in this order each cycle: cycle_begin (or
/// interrupt instead of it), then cycle_end.
enum class Event : std::uint8_t {
    cycle_begin = 0,  ///< a control cycle starts: read the agent's request
    cycle_end = 1,    ///< the cycle's actuation is done: finish the request
    interrupt = 2,    ///< SIGINT/SIGTERM or a fatal actuation error: shut down
};

/// What an agent asks of the spine. Values are stable.
enum class Request : std::uint8_t {
    none = 0,         ///< no request (never posted; the machine's idle slot)
    observation = 1,  ///< give me the latest observation
    action = 2,       ///< apply this action (its payload stays with the owner)
    start = 3,        ///< leave stop: reset with my configuration, then idle
    stop = 4,         ///< send stop commands and wait for the next start
};

/// What the watchdog does when it trips.
enum class WatchdogPolicy : std::uint8_t {
    stop = 0,    ///< go to stop (send stop commands) and say so in Step::watchdog_tripped
    report = 1,  ///< stay in idle; only set Step::watchdog_tripped (once per silence)
};

const char* to_string(State state) noexcept;             ///< "stop", "reset", ..., "over"
const char* to_string(Event event) noexcept;             ///< "cycle_begin", "cycle_end", "interrupt"
const char* to_string(Request request) noexcept;         ///< "none", "observation", "action", "start", "stop"
const char* to_string(WatchdogPolicy policy) noexcept;   ///< "stop", "report"

/// Parses the names returned by to_string(Request). Returns nullopt for
/// anything else (an agent's unknown request must get an error, not a guess).
std::optional<Request> request_from_string(std::string_view name) noexcept;

/// How the state machine behaves. Every field has a safe default.
struct StateMachineOptions {
    /// Cycles of stop commands sent in stop (before a start is honoured) and
    /// in shutdown (before over). Upkie uses 5. Must be at least 1.
    unsigned stop_cycles{5};

    /// Watchdog by cycle count: after the agent's first action since start, if
    /// this many complete cycles pass without a new action, the watchdog trips
    /// at the next cycle_begin in idle. 0 = off.
    unsigned watchdog_cycles{0};

    /// Watchdog by duration: trips at a cycle_begin in idle once this much time
    /// has passed since the last action began. Needs the times passed to
    /// process_event(event, now); the overload without a time checks only
    /// watchdog_cycles. 0 = off.
    std::chrono::nanoseconds watchdog_timeout{0};

    WatchdogPolicy watchdog_policy{WatchdogPolicy::stop};  ///< what a tripped watchdog does
};

/// The machine's answer to one agent request.
struct Answer {
    Request request{Request::none};  ///< the request this answers
    bool ok{false};                  ///< true: done (or, for stop, accepted); false: refused
    std::string error;               ///< why it was refused, naming the state; empty when ok
};

/// What the owner does after one event. Flags describe the cycle that the
/// event begins (they are all false after cycle_end).
struct Step {
    State state{State::stop};          ///< state after the event
    bool send_stop_commands{false};    ///< write stop commands to every actuator this cycle (stop, shutdown)
    bool apply_config{false};          ///< entered reset: apply the agent's configuration now
    bool apply_action{false};          ///< entered act: write the pending action's commands this cycle
    bool write_observation{false};     ///< in observe: write the observation before cycle_end
    bool watchdog_tripped{false};      ///< the watchdog fired at this event (see StateMachineOptions)
    std::optional<Answer> answer;      ///< a request was answered at this event: reply to the agent now
    std::string warning;               ///< the owner fed events out of order (state unchanged); empty otherwise
};

/// Upkie's spine state machine with agent requests passed in as arguments and
/// answers handed back in Step. Starts in stop, with no pending request.
class StateMachine {
public:
    /// @throws gecko::Error (Errc::invalid_argument) if options.stop_cycles is 0
    ///         or options.watchdog_timeout is negative.
    explicit StateMachine(StateMachineOptions options = {});

    /// Posts the agent's request; it is read at the next cycle_begin.
    /// @return an Answer (ok = false) if the request is refused on the spot:
    ///         another request is pending or in progress, the spine is in
    ///         shutdown or over, or `request` is none. Otherwise nullopt, and
    ///         the answer comes later in Step::answer.
    [[nodiscard]] std::optional<Answer> request(Request request);

    /// Processes one event; see the transition table atop this header.
    Step process_event(Event event) noexcept;

    /// Same, with the owner's monotonic time for the duration watchdog.
    Step process_event(Event event, std::chrono::steady_clock::time_point now) noexcept;

    State state() const noexcept { return state_; }                      ///< current state
    Request pending_request() const noexcept { return pending_; }        ///< posted or in progress; none if free
    unsigned stop_cycles_done() const noexcept { return stop_cycles_; }  ///< in stop/shutdown since entry (saturates at N in stop)
    unsigned cycles_since_action() const noexcept { return cycles_since_action_; }  ///< complete cycles without an action, once armed
    bool watchdog_armed() const noexcept { return armed_; }              ///< an action happened since the last start
    const std::string& last_error() const noexcept { return last_error_; }  ///< the last refusal's reason; empty if none yet
    const std::string& stop_cause() const noexcept { return stop_cause_; }  ///< why the spine is in stop (agent, watchdog); empty at startup
    const StateMachineOptions& options() const noexcept { return options_; }

    /// Whether the next cycle_end moves to over (Upkie's is_over_after_this_cycle):
    /// the owner can skip starting another actuation cycle.
    bool is_over_after_this_cycle() const noexcept {
        return state_ == State::shutdown && stop_cycles_ + 1 >= options_.stop_cycles;
    }

private:
    Step process(Event event, std::optional<std::chrono::steady_clock::time_point> now) noexcept;
    void cycle_begin(Step& step, std::optional<std::chrono::steady_clock::time_point> now);
    void cycle_end(Step& step);
    void interrupt(Step& step);
    bool watchdog_expired(std::optional<std::chrono::steady_clock::time_point> now) const noexcept;
    void enter(State next) noexcept;
    void answer_ok(Step& step);
    void answer_error(Step& step, std::string reason);

    StateMachineOptions options_;
    State state_{State::stop};
    Request pending_{Request::none};
    unsigned stop_cycles_{0};
    unsigned cycles_since_action_{0};
    bool armed_{false};
    bool watchdog_reported_{false};
    std::optional<std::chrono::steady_clock::time_point> last_action_time_;
    std::string last_error_;
    std::string stop_cause_;
};

}  // namespace gecko::spine
