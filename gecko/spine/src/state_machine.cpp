// SPDX-License-Identifier: Apache-2.0
// The spine's state machine; see gecko/spine.hpp for the transition table.

#include <gecko/error.hpp>
#include <gecko/spine.hpp>

#include <limits>
#include <utility>

namespace gecko::spine {

const char* to_string(State state) noexcept {
    switch (state) {
        case State::stop: return "stop";
        case State::reset: return "reset";
        case State::idle: return "idle";
        case State::observe: return "observe";
        case State::act: return "act";
        case State::shutdown: return "shutdown";
        case State::over: return "over";
    }
    return "unknown";
}

const char* to_string(Event event) noexcept {
    switch (event) {
        case Event::cycle_begin: return "cycle_begin";
        case Event::cycle_end: return "cycle_end";
        case Event::interrupt: return "interrupt";
    }
    return "unknown";
}

const char* to_string(Request request) noexcept {
    switch (request) {
        case Request::none: return "none";
        case Request::observation: return "observation";
        case Request::action: return "action";
        case Request::start: return "start";
        case Request::stop: return "stop";
    }
    return "unknown";
}

const char* to_string(WatchdogPolicy policy) noexcept {
    switch (policy) {
        case WatchdogPolicy::stop: return "stop";
        case WatchdogPolicy::report: return "report";
    }
    return "unknown";
}

std::optional<Request> request_from_string(std::string_view name) noexcept {
    for (Request r : {Request::none, Request::observation, Request::action, Request::start, Request::stop}) {
        if (name == to_string(r)) return r;
    }
    return std::nullopt;
}

namespace {

bool is_known(Request r) noexcept {
    switch (r) {
        case Request::none:
        case Request::observation:
        case Request::action:
        case Request::start:
        case Request::stop:
            return true;
    }
    return false;
}

std::string quoted(const char* s) { return std::string("'") + s + "'"; }

}  // namespace

StateMachine::StateMachine(StateMachineOptions options) : options_(options) {
    if (options_.stop_cycles == 0) {
        throw Error(Errc::invalid_argument,
                    "spine: stop_cycles must be at least 1 (actuators would never receive a stop command)");
    }
    if (options_.watchdog_timeout.count() < 0) {
        throw Error(Errc::invalid_argument, "spine: watchdog_timeout must not be negative (0 turns it off)");
    }
    enter(State::stop);
}

std::optional<Answer> StateMachine::request(Request request) {
    auto refuse = [&](std::string reason) {
        last_error_ = reason;
        return std::optional<Answer>(Answer{request, false, std::move(reason)});
    };
    if (!is_known(request)) {
        return refuse("spine: unknown request " + std::to_string(static_cast<unsigned>(request)));
    }
    if (request == Request::none) {
        return refuse("spine: 'none' is not a request an agent can post");
    }
    if (state_ == State::shutdown || state_ == State::over) {
        return refuse("spine: request " + quoted(to_string(request)) + " refused in state " +
                      quoted(to_string(state_)) + ": the spine is shutting down");
    }
    if (pending_ != Request::none) {
        return refuse("spine: request " + quoted(to_string(request)) + " refused: request " +
                      quoted(to_string(pending_)) + " is still pending (one request at a time)");
    }
    pending_ = request;
    return std::nullopt;
}

Step StateMachine::process_event(Event event) noexcept { return process(event, std::nullopt); }

Step StateMachine::process_event(Event event, std::chrono::steady_clock::time_point now) noexcept {
    return process(event, now);
}

Step StateMachine::process(Event event, std::optional<std::chrono::steady_clock::time_point> now) noexcept {
    Step step;
    // Only std::string can throw here (allocation of a reason); should it, the
    // safe reaction is Upkie's: shut down. noexcept makes that a terminate,
    // which on an out-of-memory spine is the honest outcome.
    switch (event) {
        case Event::cycle_begin:
            cycle_begin(step, now);
            break;
        case Event::cycle_end:
            cycle_end(step);
            break;
        case Event::interrupt:
            interrupt(step);
            break;
        default:
            // An event value outside the enum (e.g. cast from the wire): Upkie shuts down.
            step.warning = "spine: unknown event " + std::to_string(static_cast<unsigned>(event)) + ", shutting down";
            interrupt(step);
            break;
    }
    step.state = state_;
    if (event != Event::cycle_end && step.warning.empty()) {
        step.send_stop_commands = (state_ == State::stop || state_ == State::shutdown);
        step.apply_config = (state_ == State::reset);
        step.apply_action = (state_ == State::act);
        step.write_observation = (state_ == State::observe);
    } else if (event != Event::cycle_end) {
        step.send_stop_commands = (state_ == State::shutdown);  // unknown event: still stop the actuators
    }
    return step;
}

bool StateMachine::watchdog_expired(std::optional<std::chrono::steady_clock::time_point> now) const noexcept {
    if (!armed_) return false;
    if (options_.watchdog_cycles > 0 && cycles_since_action_ >= options_.watchdog_cycles) return true;
    if (options_.watchdog_timeout.count() > 0 && now && last_action_time_ &&
        *now - *last_action_time_ >= options_.watchdog_timeout) {
        return true;
    }
    return false;
}

void StateMachine::cycle_begin(Step& step, std::optional<std::chrono::steady_clock::time_point> now) {
    switch (state_) {
        case State::reset:
        case State::observe:
        case State::act:
            // Upkie: "Event::kCycleBeginning should not happen from State::kAct".
            step.warning = std::string("spine: cycle_begin in state ") + quoted(to_string(state_)) +
                           ": every cycle_begin must be followed by cycle_end; event ignored";
            return;
        case State::shutdown:
        case State::over:
            return;
        case State::stop:
        case State::idle:
            break;
    }

    if (state_ == State::idle && pending_ != Request::action && pending_ != Request::stop &&
        watchdog_expired(now)) {
        if (options_.watchdog_policy == WatchdogPolicy::stop) {
            step.watchdog_tripped = true;
            std::string cause = "the watchdog stopped the spine: no action for " +
                                std::to_string(cycles_since_action_) + " cycles";
            if (options_.watchdog_timeout.count() > 0 && now && last_action_time_) {
                cause += " (" + std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(
                                                   *now - *last_action_time_).count()) + " ms)";
            }
            enter(State::stop);
            stop_cause_ = std::move(cause);
        } else if (!watchdog_reported_) {
            step.watchdog_tripped = true;
            watchdog_reported_ = true;
        }
    }

    const Request r = pending_;
    if (state_ == State::stop) {
        switch (r) {
            case Request::none:
                break;
            case Request::start:
                // Honoured once enough stop commands went out; until then it stays pending.
                if (stop_cycles_ >= options_.stop_cycles) enter(State::reset);
                break;
            case Request::stop:
                enter(State::stop);  // idempotent, and the count of stop cycles restarts (as Upkie)
                answer_ok(step);
                break;
            case Request::observation:
            case Request::action: {
                std::string reason = std::string("spine: request ") + quoted(to_string(r)) +
                                     " is invalid in state 'stop': send 'start' first";
                if (!stop_cause_.empty()) reason += " (" + stop_cause_ + ")";
                answer_error(step, std::move(reason));
                break;
            }
        }
        return;
    }

    // state_ == State::idle
    switch (r) {
        case Request::none:
            break;
        case Request::observation:
            enter(State::observe);
            break;
        case Request::action:
            enter(State::act);
            last_action_time_ = now;
            break;
        case Request::start:
            // Upkie only warns here ("Stop the spine then start it again"); we tell the agent.
            answer_error(step, "spine: request 'start' is invalid in state 'idle': the spine is already started; "
                               "send 'stop' then 'start' to reset it");
            break;
        case Request::stop:
            stop_cause_ = "stopped by the agent";
            enter(State::stop);
            answer_ok(step);
            break;
    }
}

void StateMachine::cycle_end(Step& step) {
    switch (state_) {
        case State::stop:
            if (stop_cycles_ < options_.stop_cycles) ++stop_cycles_;
            break;
        case State::reset:
            enter(State::idle);
            answer_ok(step);  // the start request
            break;
        case State::idle:
            if (armed_ && cycles_since_action_ < std::numeric_limits<unsigned>::max()) ++cycles_since_action_;
            break;
        case State::observe:
            if (armed_ && cycles_since_action_ < std::numeric_limits<unsigned>::max()) ++cycles_since_action_;
            enter(State::idle);
            answer_ok(step);
            break;
        case State::act:
            enter(State::idle);
            answer_ok(step);
            break;
        case State::shutdown:
            ++stop_cycles_;
            if (stop_cycles_ >= options_.stop_cycles) enter(State::over);
            break;
        case State::over:
            break;
    }
}

void StateMachine::interrupt(Step& step) {
    if (state_ == State::shutdown || state_ == State::over) return;  // shutdown keeps its count; over is terminal
    if (pending_ != Request::none) {
        answer_error(step, std::string("spine: request ") + quoted(to_string(pending_)) +
                               " interrupted: the spine is shutting down");
    }
    enter(State::shutdown);
}

void StateMachine::enter(State next) noexcept {
    switch (next) {
        case State::stop:
        case State::shutdown:
            stop_cycles_ = 0;
            armed_ = false;
            cycles_since_action_ = 0;
            watchdog_reported_ = false;
            last_action_time_.reset();
            break;
        case State::reset:
            stop_cause_.clear();
            break;
        case State::act:
            armed_ = true;
            cycles_since_action_ = 0;
            watchdog_reported_ = false;
            break;
        case State::idle:
        case State::observe:
        case State::over:
            break;
    }
    state_ = next;
}

void StateMachine::answer_ok(Step& step) {
    step.answer = Answer{pending_, true, {}};
    pending_ = Request::none;
}

void StateMachine::answer_error(Step& step, std::string reason) {
    last_error_ = reason;
    step.answer = Answer{pending_, false, std::move(reason)};
    pending_ = Request::none;
}

}  // namespace gecko::spine
