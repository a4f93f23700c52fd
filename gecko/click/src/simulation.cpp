// SPDX-License-Identifier: Apache-2.0
// The simulation side of the Click lockstep protocol: requests in, answers
// out, every actuation going through the spine's state machine.
//
// How Click maps onto the spine (gecko/spine.hpp):
//   HandshakeInit -> (stop if idle) start            -> idle
//   SensorRequest -> observation (in stop: read the sensors directly, nothing moves)
//   Control       -> (start if in stop) action       -> Backend::apply + one Backend::step
//                    (the first Control of the controller the watchdog stopped is refused instead,
//                     in the spine's words: it learns of the stop; its next Control starts it)
//   Reset         -> (stop if idle) start + reset    -> Backend::reset in the spine's reset state
//   Error         -> stop (stop commands), the controller slot is freed
// One spine cycle runs per step of that path; in stop every cycle sends stop
// commands, so a start waits for `stop_cycles` of them, as on a real robot.

#include "gecko/click/simulation.hpp"

#include "gecko/signals.hpp"
#include "gecko/time.hpp"
#include "simulation_control.hpp"

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>
#include <utility>

namespace gecko::click {

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
constexpr std::size_t min_queue_depth = 1024;
constexpr std::size_t max_cached_controllers = 256;

long long ms_since(Clock::time_point then, Clock::time_point now) {
    return std::chrono::duration_cast<milliseconds>(now - then).count();
}

}  // namespace

struct SimulationServer::Impl final : detail::ControlTarget {
    Impl(Node& node, std::string_view server_name, Backend& b, SimulationServerOptions opts)
        : options(std::move(opts)), name(server_name), topics(lockstep_topics(server_name)), logger(node.logger()),
          backend(b), sm(spine_options(options)), paused(options.start_paused) {
        SubscriberOptions sub = options.request_subscriber;
        if (!sub.spin) sub.spin = default_lockstep_spin;
        sub.depth = std::max(sub.depth, min_queue_depth);
        requests = node.subscriber<Request>(topics.request, sub);
        answers = node.publisher<Answer>(topics.answer, options.answer_publisher);
        description = backend.handshake();
        if (options.control_services) control = std::make_unique<detail::SimulationControl>(node, name, options);
        sync_status();
    }

    ~Impl() override {
        if (control) control->close("simulation '" + name + "' is gone");
    }

    static spine::StateMachineOptions spine_options(const SimulationServerOptions& o) {
        spine::StateMachineOptions s;
        s.stop_cycles = o.stop_cycles;
        s.watchdog_timeout = o.watchdog;
        s.watchdog_policy = spine::WatchdogPolicy::stop;
        return s;
    }

    // ---- the spine ---------------------------------------------------------

    // Does what one spine Step asks of the backend. A backend exception is
    // kept in cycle_error (the cycle still ends: the spine must see cycle_end).
    void act(const spine::Step& step) {
        if (!step.warning.empty()) logger.warn(step.warning);
        if (step.watchdog_tripped) {
            ++live.watchdog_trips;
            running = false;
            logger.warn("watchdog: no Control from controller '" + owner + "' within " +
                        std::to_string(options.watchdog.count()) + " ms; actuators stopped (spine state '" +
                        spine::to_string(sm.state()) + "': " + sm.stop_cause() +
                        "). Its next Control is answered with an Error saying so; the one after starts the simulation "
                        "again.");
            watchdog_notice = owner;  // its next Control is refused, so that it learns of the stop
            owner.clear();  // a controller that went silent no longer holds the simulation
        }
        try {
            if (step.send_stop_commands) {
                if (options.stop_cycle_period.count() > 0 && last_stop_commands) {
                    std::this_thread::sleep_until(*last_stop_commands + options.stop_cycle_period);
                }
                backend.stop_actuators();
                last_stop_commands = Clock::now();
                ++live.stop_commands;
            }
            if (step.apply_config && reset_on_start) {
                reset_on_start = false;
                backend.reset();
                ++live.resets;
                steps_since_reset = 0;
            }
            if (step.apply_action && has_pending_control) {
                has_pending_control = false;
                backend.apply(pending_control);
                backend.step();
                ++live.steps;
                ++steps_since_reset;
            }
            if (step.write_observation) {
                if (!observation) observation.emplace();
                backend.fill_sensors(*observation);
            }
        } catch (const SimulationReset& e) {
            simulation_reset = e.what();
        } catch (const std::exception& e) {
            cycle_error = e.what();
            logger.error(std::string("backend: ") + e.what());
        }
    }

    // The backend reset itself (SimulationReset): the spine restarts from
    // stop, paused until the next Control, and `r` is answered with a Reset.
    Answer simulation_reset_answer(const Request& r, std::string why) {  // by value: often *simulation_reset itself
        simulation_reset.reset();
        logger.info("the simulation reset itself" + (why.empty() ? std::string() : " (" + why + ")") +
                    "; controller '" + r.controller_id + "' is answered with a Reset");
        ++live.simulation_resets;
        steps_since_reset = 0;
        running = false;
        if (auto wrong = restart(false)) return error_answer(r, *wrong);
        return reset_answer(r);
    }

    // One spine cycle: cycle_begin, the work it asks for, cycle_end. Returns
    // the answer to the pending request if this cycle produced it.
    std::optional<spine::Answer> cycle() {
        const auto now = Clock::now();
        spine::Step begin = sm.process_event(spine::Event::cycle_begin, now);
        std::optional<spine::Answer> answer = std::move(begin.answer);
        act(begin);
        spine::Step end = sm.process_event(spine::Event::cycle_end, now);
        if (end.answer) answer = std::move(end.answer);
        return answer;
    }

    // Posts `r` and runs cycles until it is answered (a bounded number of them).
    spine::Answer run_request(spine::Request r) {
        if (auto refused = sm.request(r)) return *refused;
        const unsigned bound = options.stop_cycles + 8;
        for (unsigned i = 0; i < bound; ++i) {
            if (auto a = cycle()) {
                if (a->request == r) return *a;
            }
        }
        return spine::Answer{r, false, std::string("spine: request '") + spine::to_string(r) + "' not answered within " +
                                           std::to_string(bound) + " cycles (state '" + spine::to_string(sm.state()) + "')"};
    }

    // stop (if started), then start; with `reset`, Backend::reset() runs in the spine's reset state.
    std::optional<std::string> restart(bool reset) {
        if (sm.state() == spine::State::idle) {
            auto a = run_request(spine::Request::stop);
            if (!a.ok) return a.error;
        }
        reset_on_start = reset;
        auto a = run_request(spine::Request::start);
        reset_on_start = false;
        running = false;
        if (!a.ok) return a.error;
        return std::nullopt;
    }

    void interrupt() {
        interrupted = true;
        if (held) answer_held(error_answer(*held, "simulation '" + name + "' is shutting down; this Control was not applied"));
        logger.info("shutting down: " + std::to_string(options.stop_cycles) + " cycles of stop commands");
        spine::Step s = sm.process_event(spine::Event::interrupt, Clock::now());
        act(s);
        s = sm.process_event(spine::Event::cycle_end, Clock::now());
        for (unsigned i = 0; sm.state() != spine::State::over && i < options.stop_cycles + 8; ++i) cycle();
        running = false;
    }

    // ---- answers -----------------------------------------------------------

    // Built in the memory of the answer before last (remember() hands it
    // back): its strings are assigned, not allocated, step after step.
    Answer make_answer(const Request& r, AnswerKind kind) {
        Answer a = std::move(spare_answer);
        a.handshake.reset();
        a.sensor.reset();
        a.reset.reset();
        a.error.reset();
        a.controller_id = r.controller_id;
        a.answers = r.request_id;
        a.kind = kind;
        a.simulation = name;
        return a;
    }

    // A refusal: counted.
    Answer error_answer(const Request& r, std::string reason) {
        ++live.refused_requests;
        return error_reply(r, std::move(reason));
    }

    Answer error_reply(const Request& r, std::string reason) {
        Answer a = make_answer(r, AnswerKind::error);
        a.error.emplace();
        a.error->direction = msgs::click::Direction::answer;
        a.error->answers = r.request_id;
        a.error->reason = std::move(reason);
        return a;
    }

    Answer reset_answer(const Request& r) {
        Answer a = make_answer(r, AnswerKind::reset);
        a.reset.emplace();
        a.reset->direction = msgs::click::Direction::answer;
        a.reset->answers = r.request_id;
        return a;
    }

    Answer sensor_answer(const Request& r, msgs::click::Sensor sensor) {
        Answer a = make_answer(r, AnswerKind::sensor);
        sensor.answers = r.request_id;
        a.sensor = std::move(sensor);
        return a;
    }

    // The backend's sensors, written into the Sensor the answer before last
    // carried (remember() hands it back): same shape, so no allocation.
    Answer backend_sensor_answer(const Request& r) {
        backend.fill_sensors(spare_sensor);
        return sensor_answer(r, std::move(spare_sensor));
    }

    void send(const Answer& a) {
        sync_status();  // before the answer: whoever reads it then sees the new status
        answers.publish(a);
    }

    // ---- requests ----------------------------------------------------------

    void handle(Request& r) {
        ++live.requests;
        const auto now = Clock::now();

        // Duplicates and late messages never act twice.
        auto cached = cache.find(r.controller_id);
        if (cached != cache.end() && cached->second.run_ended && r.request_id == 1 && cached->second.last_id > 1) {
            // The controller ended its run (Error) and a controller with the same
            // id starts a new one: a restarted process that chose its own id.
            cache.erase(cached);
            cached = cache.end();
        }
        if (cached != cache.end()) {
            if (r.request_id == cached->second.last_id) {
                ++live.duplicate_requests;
                cached->second.seen = now;
                send(cached->second.answer);
                return;
            }
            if (r.request_id < cached->second.last_id) {
                // Never acted on. The answer says why: its own controller has
                // moved on and ignores it, but a controller restarted with the
                // same id (counting from #1 again) learns what is wrong.
                ++live.stale_requests;
                const std::string why = "request #" + std::to_string(r.request_id) + " of controller '" +
                                        r.controller_id + "' is older than its last one (#" +
                                        std::to_string(cached->second.last_id) + ")";
                logger.debug("dropped late " + why);
                send(error_reply(r, why + ": a late message, or a controller restarted with the same id without "
                                          "ending its run (leave ControllerOptions::controller_id empty for a "
                                          "unique one)"));
                return;
            }
        }

        // A re-send of the Control held while paused is that same request.
        if (held && r.controller_id == held->controller_id) {
            if (r.request_id == held->request_id) {
                ++live.duplicate_requests;
                return;
            }
            logger.info("controller '" + r.controller_id + "' moved on from its held Control #" +
                        std::to_string(held->request_id) + ": dropped, never applied");
            held.reset();
        }

        // Answer first, then keep the answer for re-sends: the copy stays off
        // the controller's critical path (nothing else runs in between).
        std::optional<Answer> answer = serve(r, now);
        if (!answer) return;  // held until resumed
        send(*answer);
        remember(r, std::move(*answer), now);
    }

    std::optional<Answer> serve(Request& r, Clock::time_point now) {
        if (r.controller_id.empty()) return error_answer(r, "request without a controller_id");

        // One controller at a time.
        if (!owner.empty() && owner != r.controller_id && owner_gone()) {
            logger.info("controller '" + owner + "' is gone (its answer subscription closed): controller '" +
                        r.controller_id + "' may drive simulation '" + name + "'");
            owner.clear();
        }
        if (!owner.empty() && owner != r.controller_id) {
            const auto silent = ms_since(owner_seen, now);
            if (options.takeover_after.count() > 0 && silent >= options.takeover_after.count()) {
                logger.warn("controller '" + r.controller_id + "' takes over simulation '" + name +
                            "' from controller '" + owner + "', silent for " + std::to_string(silent) + " ms");
                owner.clear();
            } else {
                return error_answer(r, "simulation '" + name + "' is driven by controller '" + owner +
                                           "' (its last request was " + std::to_string(silent) +
                                           " ms ago); it must end its run (Error) before another controller can "
                                           "drive this simulation");
            }
        }
        if (owner.empty()) {
            owner = r.controller_id;
            logger.info("controller '" + owner + "' drives simulation '" + name + "'");
            if (watchdog_notice != owner) watchdog_notice.clear();  // another one drives: nobody to tell
        }
        owner_seen = now;
        owner_subscriber = r.answer_subscriber.value_or(0);

        // A simulation-side reset is reported to the next request, whatever it is, except Error.
        if (reset_pending && r.kind != RequestKind::error) {
            reset_pending = false;
            return reset_answer(r);
        }

        cycle_error.clear();
        simulation_reset.reset();
        switch (r.kind) {
            case RequestKind::handshake_init: {
                if (!r.handshake_init) return error_answer(r, "HandshakeInit request without its message");
                watchdog_notice.clear();  // a new session: the controller restarts knowingly
                if (auto wrong = restart(false)) return error_answer(r, *wrong);
                try {
                    description = backend.handshake();
                } catch (const std::exception& e) {
                    return error_answer(r, std::string("the simulation could not describe itself: ") + e.what());
                }
                Answer a = make_answer(r, AnswerKind::handshake);
                a.handshake = description;
                a.handshake->answers = r.request_id;
                return a;
            }
            case RequestKind::sensor_request: {
                if (!r.sensor_request) return error_answer(r, "SensorRequest request without its message");
                if (sm.state() == spine::State::idle) {
                    observation.reset();
                    auto a = run_request(spine::Request::observation);
                    if (simulation_reset) return simulation_reset_answer(r, *simulation_reset);
                    if (a.ok && observation) return sensor_answer(r, std::move(*observation));
                    if (!cycle_error.empty()) return error_answer(r, cycle_error);
                }
                // Not started (or stopped by the watchdog): reading moves nothing, so answer anyway.
                try {
                    return backend_sensor_answer(r);
                } catch (const SimulationReset& e) {
                    return simulation_reset_answer(r, e.what());
                } catch (const std::exception& e) {
                    return error_answer(r, e.what());
                }
            }
            case RequestKind::control: {
                if (!r.control) return error_answer(r, "Control request without its message");
                if (auto wrong = check_control(description, *r.control)) return error_answer(r, *wrong);
                if (paused) {
                    hold(r, now);
                    return std::nullopt;
                }
                if (sm.state() == spine::State::stop && !watchdog_notice.empty()) {
                    watchdog_notice.clear();
                    return watchdog_refusal(r);
                }
                if (sm.state() == spine::State::stop) {
                    // The first Control (also without a handshake, as Click allows, or the one after
                    // the watchdog's refusal).
                    if (auto wrong = restart(false)) return error_answer(r, *wrong);
                }
                // Swapped, not copied: the request decodes the next Control into
                // this one's memory (the same shape, step to step).
                std::swap(pending_control, *r.control);
                has_pending_control = true;
                auto a = run_request(spine::Request::action);
                has_pending_control = false;
                if (simulation_reset) return simulation_reset_answer(r, *simulation_reset);
                if (!cycle_error.empty()) return error_answer(r, cycle_error);
                if (!a.ok) return error_answer(r, a.error);
                running = true;
                try {
                    return backend_sensor_answer(r);
                } catch (const SimulationReset& e) {
                    return simulation_reset_answer(r, e.what());
                } catch (const std::exception& e) {
                    return error_answer(r, e.what());
                }
            }
            case RequestKind::reset: {
                watchdog_notice.clear();
                if (auto wrong = restart(true)) return error_answer(r, *wrong);
                if (!cycle_error.empty()) return error_answer(r, cycle_error);
                return reset_answer(r);
            }
            case RequestKind::error: {
                const std::string reason = r.error ? r.error->reason : std::string();
                logger.info("controller '" + r.controller_id + "' ended the run: " +
                            (reason.empty() ? std::string("(no reason)") : reason));
                if (sm.state() == spine::State::idle) run_request(spine::Request::stop);
                running = false;
                owner.clear();
                watchdog_notice.clear();
                try {
                    backend.ended(reason);
                } catch (const std::exception& e) {
                    logger.error(std::string("backend: ") + e.what());
                }
                if (options.exit_on_error) shutdown_requested = true;
                return make_answer(r, AnswerKind::ended);
            }
        }
        return error_answer(r, "unknown request kind");
    }

    // The answer to the first Control of the controller in charge when the
    // watchdog stopped the spine: an Error, nothing applied. Its reason is the
    // spine's own refusal of an action in stop, which names the state and the
    // watchdog (so a spine agent raises WatchdogStop, a Click controller gets
    // a StepResult that is_error()), followed by what it means for Click.
    Answer watchdog_refusal(const Request& r) {
        auto a = run_request(spine::Request::action);  // refused in stop: nothing is applied
        std::string reason = a.ok ? std::string("spine: request 'action' is invalid in state 'stop' (the watchdog "
                                                "stopped the spine)")
                                  : a.error;
        reason += ". " + std::string(watchdog_refusal_marker) + r.controller_id + "' within " +
                  std::to_string(options.watchdog.count()) +
                  " ms; the simulation stopped its actuators and did not apply this Control. The next Control starts "
                  "it again";
        logger.info("told controller '" + r.controller_id + "' that the watchdog stopped the simulation");
        return error_answer(r, std::move(reason));
    }

    void remember(const Request& r, Answer&& a, Clock::time_point now) {
        auto& entry = cache[r.controller_id];
        entry.last_id = r.request_id;
        entry.run_ended = r.kind == RequestKind::error;
        if (entry.answer.sensor) spare_sensor = std::move(*entry.answer.sensor);  // reused next step
        spare_answer = std::move(entry.answer);                                    // so is the rest
        entry.answer = std::move(a);
        entry.seen = now;
        if (cache.size() > max_cached_controllers) {
            auto oldest = std::min_element(cache.begin(), cache.end(), [](const auto& x, const auto& y) {
                return x.second.seen < y.second.seen;
            });
            if (oldest->first != owner) cache.erase(oldest);
        }
    }

    // True if the owner said which subscriber receives its answers and that
    // subscriber is no longer connected: its process ended, cleanly or not.
    bool owner_gone() const {
        if (owner_subscriber == 0) return false;
        for (const auto& s : answers.subscribers())
            if (s.id == owner_subscriber) return false;
        return true;
    }

    void sync_status() {
        live.state = sm.state();
        live.stop_cause = sm.stop_cause();
        live.controller = owner;
        live.running = running;
        live.reset_pending = reset_pending;
        live.paused = paused;
        live.control_held = held.has_value();
        if (control) live.control_operations = control->operations();
        std::lock_guard<std::mutex> lock(status_mutex);
        snapshot = live;
    }

    bool spin_once(milliseconds timeout) {
        if (sm.state() == spine::State::over) return false;
        if (!interrupted && (shutdown_requested || !gecko::ok())) {
            interrupt();
            sync_status();
            return !finished();
        }
        simulation_side_reset();
        if (requests.receive(request, std::min(timeout, options.idle_cycle))) {
            simulation_side_reset();  // one asked for while we waited comes before this request
            handle(request);
        } else {
            cycle();  // stop commands in stop, the watchdog in idle
        }
        if (held) check_held();
        if (control) {
            if (control->pending()) control->serve(*this);
            control->publish_status(*this);
        }
        sync_status();
        return !finished();
    }

    // True once the spine is over; the first time, the status says so and
    // the control services refuse from then on.
    bool finished() {
        if (sm.state() != spine::State::over) return false;
        if (control && !control_closed) {
            control_closed = true;
            control->publish_status(*this, true);
            control->close("simulation '" + name + "' is over");
        }
        return true;
    }

    // ---- paused: held Controls, and the control services' operations -------

    // Keeps the Control `r` (the controller in charge's, already checked)
    // unanswered until resume, reset or paused_control_hold.
    void hold(Request& r, Clock::time_point now) {
        held.emplace();
        std::swap(*held, r);  // `r` is the reused request: it gets the memory back
        held_since = now;
        ++live.held_controls;
        logger.debug("simulation '" + name + "' is paused: Control #" + std::to_string(held->request_id) +
                     " of controller '" + held->controller_id + "' is held until it resumes");
    }

    // Answers the held Control with `a` (its re-sends then get `a` from the cache).
    void answer_held(Answer a) {
        const Request r = std::move(*held);
        held.reset();
        send(a);
        remember(r, std::move(a), Clock::now());
    }

    void check_held() {
        if (owner_gone() || (!owner.empty() && owner != held->controller_id)) {
            held.reset();  // its controller is gone: nobody waits for the answer
            return;
        }
        const auto limit = options.paused_control_hold;
        if (limit.count() == 0 || Clock::now() - held_since < limit) return;
        ++live.paused_refusals;
        answer_held(error_answer(
            *held, std::string(paused_refusal_prefix) + "simulation '" + name + "' is paused (service '" + name +
                       "/control/pause'); this Control was held " + std::to_string(limit.count()) +
                       " ms and not applied. Send it again to wait for '" + name + "/control/resume'"));
    }

    std::optional<std::string> carry_out(detail::ControlOperation operation, const std::string& requester) override {
        const std::string who = requester.empty() ? std::string() : " (asked by '" + requester + "')";
        switch (operation) {
            case detail::ControlOperation::status: return std::nullopt;
            case detail::ControlOperation::pause:
                if (!paused) logger.info("simulation '" + name + "' paused" + who);
                paused = true;
                // Nothing is expected to step: stop commands, and no watchdog to trip meanwhile.
                if (sm.state() == spine::State::idle) {
                    auto a = run_request(spine::Request::stop);
                    running = false;
                    if (!a.ok) return a.error;
                }
                return std::nullopt;
            case detail::ControlOperation::resume:
                if (paused) logger.info("simulation '" + name + "' resumed" + who);
                paused = false;
                if (held) {  // the Control that waited: one step, answered with its Sensor
                    const auto now = Clock::now();
                    Request r = std::move(*held);
                    held.reset();
                    if (auto answer = serve(r, now)) {
                        send(*answer);
                        remember(r, std::move(*answer), now);
                    }
                }
                return std::nullopt;
            case detail::ControlOperation::reset: {
                logger.info("simulation '" + name + "' reset" + who);
                resetting = true;
                control->publish_status(*this, true);
                watchdog_notice.clear();
                cycle_error.clear();
                auto wrong = restart(true);
                resetting = false;
                paused = true;
                if (!wrong && !cycle_error.empty()) wrong = cycle_error;
                // The controller learns of it as of a simulation-side reset: a Reset answer.
                if (held) {
                    answer_held(reset_answer(*held));
                } else if (!owner.empty()) {
                    reset_pending = true;
                }
                return wrong;
            }
        }
        return std::string("unknown operation");
    }

    msgs::sim::Status status_now() override {
        msgs::sim::Status s;
        s.stamp_ns = now_ns();
        s.simulation = name;
        s.state = sm.state() == spine::State::over || interrupted ? msgs::sim::SimulationState::over
                  : resetting                                     ? msgs::sim::SimulationState::resetting
                  : paused                                        ? msgs::sim::SimulationState::paused
                                                                  : msgs::sim::SimulationState::running;
        s.steps = live.steps;
        s.resets = live.resets + live.simulation_resets;
        std::optional<double> t;
        try {
            t = backend.simulated_time();
        } catch (const std::exception& e) {
            logger.error(std::string("backend: ") + e.what());
        }
        s.simulated_time = t ? *t : static_cast<double>(steps_since_reset) * description.time_step.value_or(0.0);
        s.controller_id = owner;
        if (!owner.empty()) {
            s.controller = owner;  // its node's name when its answer subscriber is known
            for (const auto& sub : answers.subscribers())
                if (owner_subscriber != 0 && sub.id == owner_subscriber) s.controller = sub.node;
        }
        return s;
    }

    void simulation_side_reset() {
        if (!reset_requested.exchange(false)) return;
        logger.info("simulation-side reset of '" + name + "'");
        if (auto wrong = restart(true)) logger.error("simulation-side reset failed: " + *wrong);
        reset_pending = true;
        sync_status();
    }

    struct Cached {
        std::uint64_t last_id{0};
        bool run_ended = false;  // the last request was an Error
        Answer answer;
        Clock::time_point seen;
    };

    SimulationServerOptions options;
    std::string name;
    LockstepTopics topics;
    Logger logger;
    Backend& backend;
    spine::StateMachine sm;
    Subscriber<Request> requests;
    Publisher<Answer> answers;
    msgs::click::Handshake description;

    std::map<std::string, Cached> cache;
    std::string owner;
    std::string watchdog_notice;  // the controller the watchdog stopped, until its next Control learns of it
    Clock::time_point owner_seen;
    std::uint64_t owner_subscriber = 0;  // the owner's answer subscriber (0: not said)
    std::optional<Clock::time_point> last_stop_commands;  // paces stop cycles (stop_cycle_period)
    bool running{false};
    bool reset_pending{false};
    bool reset_on_start{false};
    bool interrupted{false};
    msgs::click::Control pending_control;  // valid while has_pending_control
    bool has_pending_control = false;
    Request request;                       // reused: decoding keeps its storage
    std::optional<msgs::click::Sensor> observation;
    msgs::click::Sensor spare_sensor;      // a Sensor's memory, recycled from the cache (backend_sensor_answer)
    Answer spare_answer;                   // an Answer's memory, recycled from the cache (make_answer)
    std::string cycle_error;

    std::unique_ptr<detail::SimulationControl> control;  // the control services, if offered
    bool paused{false};                                  // by the control services: Controls are held
    bool resetting{false};                               // a reset of the control services is under way
    bool control_closed{false};                          // the status said `over`
    std::optional<Request> held;                         // the Control held while paused
    Clock::time_point held_since;
    std::uint64_t steps_since_reset = 0;
    std::optional<std::string> simulation_reset;  // the backend reset itself during this request's cycles

    std::atomic<bool> reset_requested{false};
    std::atomic<bool> shutdown_requested{false};
    SimulationStatus live;
    mutable std::mutex status_mutex;
    SimulationStatus snapshot;
};

SimulationServer::SimulationServer(Node& node, std::string_view name, Backend& backend, SimulationServerOptions options)
    : impl_(std::make_unique<Impl>(node, name, backend, std::move(options))) {}
SimulationServer::~SimulationServer() = default;
SimulationServer::SimulationServer(SimulationServer&&) noexcept = default;
SimulationServer& SimulationServer::operator=(SimulationServer&&) noexcept = default;

bool SimulationServer::spin_once(std::chrono::milliseconds timeout) { return impl_->spin_once(timeout); }

void SimulationServer::run() {
    while (impl_->spin_once(impl_->options.idle_cycle)) {
    }
}

void SimulationServer::request_reset() { impl_->reset_requested = true; }
void SimulationServer::shutdown() { impl_->shutdown_requested = true; }

void SimulationServer::report_brain_frequency(double hz) {
    if (impl_->control) impl_->control->report_brain_frequency(hz);
}

SimulationStatus SimulationServer::status() const {
    std::lock_guard<std::mutex> lock(impl_->status_mutex);
    return impl_->snapshot;
}

const LockstepTopics& SimulationServer::topics() const noexcept { return impl_->topics; }

}  // namespace gecko::click
