// SPDX-License-Identifier: Apache-2.0
// The controller side of the Click lockstep protocol: one request at a time,
// each answer matched by (controller id, request id), re-sends while waiting.

#include "gecko/click/controller.hpp"

#include <gecko/wire/assign.hpp>

#include <algorithm>
#include <iomanip>
#include <random>
#include <sstream>

namespace gecko::click {

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr std::size_t min_queue_depth = 1024;
constexpr milliseconds first_resend{5};

std::string random_suffix() {
    std::random_device rd;
    std::ostringstream s;
    s << std::hex << std::setw(8) << std::setfill('0') << rd();
    return s.str();
}

std::string describe(const msgs::click::Error& e) { return e.reason.empty() ? "(no reason given)" : e.reason; }

}  // namespace

// ---------------------------------------------------------------------------
// StepResult
// ---------------------------------------------------------------------------

const msgs::click::Sensor& StepResult::sensor() const {
    if (const auto* s = std::get_if<msgs::click::Sensor>(&value_)) return *s;
    if (const auto* e = std::get_if<msgs::click::Error>(&value_)) {
        throw gecko::Error(Errc::remote, "expected a Sensor, the simulation answered with an Error: " + describe(*e));
    }
    throw gecko::Error(Errc::protocol,
                       "expected a Sensor, the simulation answered with a Reset (it was reset and is paused "
                       "until the next Control)");
}

const msgs::click::Reset& StepResult::reset() const {
    if (const auto* r = std::get_if<msgs::click::Reset>(&value_)) return *r;
    throw gecko::Error(Errc::protocol, std::string("expected a Reset, the simulation answered with ") +
                                           (is_sensor() ? "a Sensor" : "an Error"));
}

bool StepResult::is_paused_refusal() const noexcept {
    const auto* e = std::get_if<msgs::click::Error>(&value_);
    return e && e->reason.compare(0, paused_refusal_prefix.size(), paused_refusal_prefix) == 0;
}

bool StepResult::is_watchdog_refusal() const noexcept {
    const auto* e = std::get_if<msgs::click::Error>(&value_);
    return e && e->reason.find(watchdog_refusal_marker) != std::string::npos;
}

const msgs::click::Error& StepResult::error() const {
    if (const auto* e = std::get_if<msgs::click::Error>(&value_)) return *e;
    throw gecko::Error(Errc::protocol, std::string("expected an Error, the simulation answered with ") +
                                           (is_sensor() ? "a Sensor" : "a Reset"));
}

// ---------------------------------------------------------------------------
// Controller
// ---------------------------------------------------------------------------

struct Controller::Impl {
    Impl(Node& node, std::string_view simulation, ControllerOptions opts)
        : options(std::move(opts)), name(simulation), topics(lockstep_topics(simulation)), key(node.key()),
          logger(node.logger()) {
        id = options.controller_id.empty() ? node.name() + "-" + random_suffix() : options.controller_id;
        requests = node.publisher<Request>(topics.request, options.request_publisher);
        SubscriberOptions sub = options.answer_subscriber;
        if (!sub.spin) sub.spin = default_lockstep_spin;
        sub.depth = std::max(sub.depth, min_queue_depth);
        answers = node.subscriber<Answer>(topics.answer, sub);
    }

    // Sends `request` (id assigned here) and waits for its answer, decoded
    // into `answer` (reused: decoding keeps its memory from call to call).
    Answer& exchange(Request& request, const char* what) {
        if (!peer_seen) {
            if (!requests.wait_for_subscribers(1, options.connect_timeout)) {
                throw gecko::Error(Errc::no_peer, "no simulation '" + name + "' subscribes to '" + topics.request +
                                                      "' under key '" + key + "' after " +
                                                      std::to_string(options.connect_timeout.count()) +
                                                      " ms: is it running with the same --key?");
            }
            peer_seen = true;
        }
        request.controller_id = id;
        request.request_id = ++last_request_id;
        request.answer_subscriber = answers.raw().id();  // while it is connected, we are alive
        requests.publish(request);
        ++counters.requests;

        const auto start = Clock::now();
        const auto deadline = start + options.timeout;
        // Until an answer has proven the answer path, re-send soon and often:
        // the simulation's publisher may not have our subscription yet.
        milliseconds interval = answer_path_ok ? options.resend_after : std::min(first_resend, options.resend_after);
        auto resend_at = start + interval;
        for (;;) {
            auto now = Clock::now();
            auto until = deadline;
            if (options.resend_after.count() > 0) until = std::min(until, resend_at);
            const auto wait = std::max(Clock::duration::zero(), until - now);
            if (answers.receive(answer, wait)) {
                if (answer.controller_id == id && answer.answers == request.request_id) {
                    ++counters.answers;
                    answer_path_ok = true;
                    return answer;
                }
                ++counters.ignored_answers;  // another controller's, or a late/duplicated answer
                continue;
            }
            now = Clock::now();
            if (now >= deadline) {
                throw gecko::Error(Errc::timeout, std::string("no answer to ") + what + " #" +
                                                      std::to_string(request.request_id) + " from simulation '" +
                                                      name + "' within " + std::to_string(options.timeout.count()) +
                                                      " ms (topic '" + topics.answer + "', key '" + key + "')");
            }
            if (options.resend_after.count() > 0 && now >= resend_at) {
                // The simulation exited (or its link dropped): nothing subscribes
                // to its requests any more. Say so now, not at the deadline.
                if (requests.subscriber_count() == 0) {
                    throw gecko::Error(Errc::no_peer, std::string("simulation '") + name + "' is gone: nothing "
                                                          "subscribes to '" + topics.request + "' any more (it "
                                                          "exited, or its link dropped) while " + what + " #" +
                                                          std::to_string(request.request_id) + " waited for its answer");
                }
                requests.publish(request);  // same id: answered from the cache if it was already served
                ++counters.resends;
                interval = std::min(interval * 2, options.resend_after);
                resend_at = now + interval;
            }
        }
    }

    void require_handshake(const char* call) const {
        if (!handshake) {
            throw gecko::Error(Errc::protocol, std::string(call) +
                                                   " before handshake(): the controller checks controls against "
                                                   "the handshake, call handshake() first");
        }
    }

    static StepResult to_result(Answer& a, const char* what) {
        switch (a.kind) {
            case AnswerKind::sensor:
                if (a.sensor) return StepResult(std::move(*a.sensor));
                break;
            case AnswerKind::reset:
                return StepResult(a.reset ? std::move(*a.reset) : msgs::click::Reset{});
            case AnswerKind::error:
                return StepResult(a.error ? std::move(*a.error) : msgs::click::Error{});
            default: break;
        }
        throw gecko::Error(Errc::protocol, std::string("the simulation answered ") + what + " with " +
                                               to_string(a.kind) + (a.kind == AnswerKind::sensor ? " without a body" : ""));
    }

    ControllerOptions options;
    std::string name;
    LockstepTopics topics;
    std::string key;
    Logger logger;
    std::string id;
    Publisher<Request> requests;
    Subscriber<Answer> answers;
    Request step_request;  // step()'s, reused
    Answer answer;         // exchange()'s, reused
    std::uint64_t last_request_id{0};
    bool peer_seen{false};
    bool answer_path_ok{false};
    std::optional<msgs::click::Handshake> handshake;
    ControllerStats counters;
};

Controller::Controller(Node& node, std::string_view simulation, ControllerOptions options)
    : impl_(std::make_unique<Impl>(node, simulation, std::move(options))) {}
Controller::~Controller() = default;
Controller::Controller(Controller&&) noexcept = default;
Controller& Controller::operator=(Controller&&) noexcept = default;

const msgs::click::Handshake& Controller::handshake() {
    // A pending simulation-side reset answers the first request with Reset;
    // that reset is then consumed, so asking once more is enough.
    for (int attempt = 0; attempt < 2; ++attempt) {
        Request r;
        r.kind = RequestKind::handshake_init;
        r.handshake_init.emplace();
        r.handshake_init->request_id = impl_->last_request_id + 1;
        Answer& a = impl_->exchange(r, "HandshakeInit");
        switch (a.kind) {
            case AnswerKind::handshake:
                if (!a.handshake) break;
                impl_->handshake = std::move(*a.handshake);
                return *impl_->handshake;
            case AnswerKind::reset: continue;
            case AnswerKind::error:
                throw gecko::Error(Errc::remote, "simulation '" + impl_->name + "' refused the handshake: " +
                                                     describe(a.error.value_or(msgs::click::Error{})));
            default: break;
        }
        throw gecko::Error(Errc::protocol, std::string("simulation '") + impl_->name +
                                               "' answered a HandshakeInit with " + to_string(a.kind));
    }
    throw gecko::Error(Errc::protocol, "simulation '" + impl_->name + "' answered two HandshakeInits with Reset");
}

StepResult Controller::sensors() {
    Request r;
    r.kind = RequestKind::sensor_request;
    r.sensor_request.emplace();
    r.sensor_request->request_id = impl_->last_request_id + 1;
    return Impl::to_result(impl_->exchange(r, "SensorRequest"), "a SensorRequest");
}

Request& Controller::prepare_step(const msgs::click::Control& control) {
    impl_->require_handshake("step()");
    if (auto wrong = check_control(*impl_->handshake, control)) {
        throw gecko::Error(Errc::invalid_argument, "control refused before sending: " + *wrong);
    }
    // The same Request every step: assigning the control reuses its maps' and vectors' memory.
    Request& r = impl_->step_request;
    r.kind = RequestKind::control;
    if (r.control) {
        wire::assign(*r.control, control);
    } else {
        r.control = control;
    }
    r.control->request_id = impl_->last_request_id + 1;
    return r;
}

StepResult Controller::step(const msgs::click::Control& control) {
    return Impl::to_result(impl_->exchange(prepare_step(control), "Control"), "a Control");
}

void Controller::step(const msgs::click::Control& control, StepResult& result) {
    Answer& a = impl_->exchange(prepare_step(control), "Control");
    if (a.kind == AnswerKind::sensor && a.sensor) {
        // Swapped, not moved: the answer keeps the previous Sensor's memory for the next decode.
        if (auto* held = std::get_if<msgs::click::Sensor>(&result.value_)) {
            std::swap(*held, *a.sensor);
        } else {
            result.value_ = std::move(*a.sensor);
        }
        return;
    }
    result = Impl::to_result(a, "a Control");
}

void Controller::reset() {
    Request r;
    r.kind = RequestKind::reset;
    r.reset.emplace();
    r.reset->direction = msgs::click::Direction::request;
    r.reset->request_id = impl_->last_request_id + 1;
    Answer& a = impl_->exchange(r, "Reset");
    if (a.kind == AnswerKind::reset) return;
    if (a.kind == AnswerKind::error) {
        throw gecko::Error(Errc::remote, "simulation '" + impl_->name + "' refused the reset: " +
                                             describe(a.error.value_or(msgs::click::Error{})));
    }
    throw gecko::Error(Errc::protocol,
                       std::string("simulation '") + impl_->name + "' answered a Reset with " + to_string(a.kind));
}

bool Controller::error(const std::string& reason) {
    Request r;
    r.kind = RequestKind::error;
    r.error.emplace();
    r.error->direction = msgs::click::Direction::request;
    r.error->request_id = impl_->last_request_id + 1;
    r.error->reason = reason;
    try {
        Answer& a = impl_->exchange(r, "Error");
        return a.kind == AnswerKind::ended;
    } catch (const gecko::Error& e) {
        impl_->logger.warn(std::string("Error request not acknowledged: ") + e.what());
        return false;
    }
}

msgs::click::Control Controller::make_control() const {
    impl_->require_handshake("make_control()");
    msgs::click::Control c;
    for (const auto& [name, object] : impl_->handshake->objects) {
        if (object.controls_in_order.empty()) continue;
        c.objects[name].values.assign(object.controls_in_order.size(), 0.0);
    }
    return c;
}

bool Controller::has_handshake() const noexcept { return impl_->handshake.has_value(); }

const msgs::click::Handshake& Controller::last_handshake() const {
    impl_->require_handshake("last_handshake()");
    return *impl_->handshake;
}

const std::string& Controller::id() const noexcept { return impl_->id; }
const LockstepTopics& Controller::topics() const noexcept { return impl_->topics; }
ControllerStats Controller::stats() const noexcept { return impl_->counters; }

}  // namespace gecko::click
