// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file lockstep_msgs.hpp
/// The two envelope types that carry the Click lockstep protocol over a pair of
/// Gecko topics, and the rules both ends share.
///
/// A Gecko topic carries one type, but Click has five requests and four
/// answers. So a controller publishes `Request` envelopes on the request topic
/// and the simulation publishes `Answer` envelopes on the answer topic; each
/// envelope holds exactly one Click message (gecko/msgs/click.hpp) in the
/// optional field named by its `kind`.
///
/// **Pairing.** Every request names its controller (`controller_id`, unique per
/// Controller object) and carries a `request_id` that grows by one per new
/// request. Every answer repeats both (`controller_id`, `answers`). So:
/// - a controller ignores answers meant for other controllers, and answers to
///   requests it no longer waits for (late or duplicated answers);
/// - the simulation remembers, per controller, the last request id and its
///   answer: a duplicate (same id) gets the cached answer again without
///   stepping; an older id (a late message) is never acted on: it is
///   counted and answered with an Error its controller ignores (it waits for
///   a newer id), which tells a controller restarted with the same id why.
/// A controller may therefore re-send a request it got no answer for, and the
/// simulation still steps exactly once per Control.
///
/// **Wire form** (msgpack maps, as every Gecko message; `kind` as a string):
/// ```
/// Request {controller_id: "ctl-9f2c", request_id: 7, kind: "Control",
///          handshake_init: nil, sensor_request: nil,
///          control: {request_id: 7, objects: {robot1: {values: [0.1, 0.2], ...}}},
///          reset: nil, error: nil}
/// Answer  {controller_id: "ctl-9f2c", answers: 7, kind: "Sensor", simulation: "sim",
///          handshake: nil, sensor: {answers: 7, objects: {...}, simulated_time: 0.07},
///          reset: nil, error: nil}
/// ```
///
/// Topic names: lockstep_topics(prefix) gives `PREFIX/click/request` and
/// `PREFIX/click/answer` (gecko-sim uses the prefix `sim`).

#include <gecko/message.hpp>
#include <gecko/msgs/click.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gecko::click {

/// Which Click message a Request carries.
enum class RequestKind : std::uint8_t {
    handshake_init = 0,  ///< "HandshakeInit": answered by a Handshake
    sensor_request = 1,  ///< "SensorRequest": answered by a Sensor, without stepping
    control = 2,         ///< "Control": steps once; answered by a Sensor (or a Reset or an Error)
    reset = 3,           ///< "Reset": reset and pause; answered by a Reset
    error = 4,           ///< "Error": the controller ends the run; acknowledged by `Ended`
};

// On the wire a RequestKind is its name (a msgpack str).
GECKO_MSG_ENUM_NAMED(RequestKind, (handshake_init, "HandshakeInit"), (sensor_request, "SensorRequest"),
                     (control, "Control"), (reset, "Reset"), (error, "Error"))

/// Which Click message an Answer carries.
enum class AnswerKind : std::uint8_t {
    handshake = 0,  ///< "Handshake"
    sensor = 1,     ///< "Sensor"
    reset = 2,      ///< "Reset": the simulation was reset (by the controller or its own side) and is paused
    error = 3,      ///< "Error": the request was refused; `error->reason` says why
    ended = 4,      ///< "Ended": acknowledges an Error request (not a Click message: Click has no answer there)
};

// On the wire an AnswerKind is its name (a msgpack str).
GECKO_MSG_ENUM_NAMED(AnswerKind, (handshake, "Handshake"), (sensor, "Sensor"), (reset, "Reset"), (error, "Error"),
                     (ended, "Ended"))

constexpr const char* to_string(RequestKind k) noexcept {
    const std::string_view name = wire::enum_name(k);
    return name.empty() ? "?" : name.data();
}

constexpr const char* to_string(AnswerKind k) noexcept {
    const std::string_view name = wire::enum_name(k);
    return name.empty() ? "?" : name.data();
}

/// Parses the names of to_string(RequestKind); nullopt for anything else.
constexpr std::optional<RequestKind> request_kind_from_string(std::string_view s) noexcept {
    return wire::enum_from_name<RequestKind>(s);
}

/// Parses the names of to_string(AnswerKind); nullopt for anything else.
constexpr std::optional<AnswerKind> answer_kind_from_string(std::string_view s) noexcept {
    return wire::enum_from_name<AnswerKind>(s);
}

/// A controller's request, on the request topic. Exactly the field named by
/// `kind` is set; the others are nil.
struct Request {
    static constexpr const char* type_name = "gecko.msgs.click.Request";

    std::string controller_id;       ///< who asks; unique per controller
    std::uint64_t request_id{0};     ///< grows by one per new request of this controller; a re-send repeats it
    RequestKind kind{RequestKind::sensor_request};
    std::optional<msgs::click::HandshakeInit> handshake_init;
    std::optional<msgs::click::SensorRequest> sensor_request;
    std::optional<msgs::click::Control> control;
    std::optional<msgs::click::Reset> reset;
    std::optional<msgs::click::Error> error;
    /// The entity id of the controller's answer subscriber. While the
    /// simulation's answer publisher has it connected, the controller lives;
    /// once it is gone (the process ended, however), another controller may
    /// drive at once. Optional: a controller that does not say waits for
    /// SimulationServerOptions::takeover_after.
    std::optional<std::uint64_t> answer_subscriber;

    GECKO_MSG_FIELDS(controller_id, request_id, kind, handshake_init, sensor_request, control, reset, error,
                     answer_subscriber)
};

/// The simulation's answer, on the answer topic. Exactly the field named by
/// `kind` is set (none for `ended`).
struct Answer {
    static constexpr const char* type_name = "gecko.msgs.click.Answer";

    std::string controller_id;       ///< the controller whose request this answers
    std::uint64_t answers{0};        ///< the request_id it answers
    AnswerKind kind{AnswerKind::error};
    std::string simulation;          ///< the answering simulation's name (its topic prefix), for logs
    std::optional<msgs::click::Handshake> handshake;
    std::optional<msgs::click::Sensor> sensor;
    std::optional<msgs::click::Reset> reset;
    std::optional<msgs::click::Error> error;

    GECKO_MSG_FIELDS(controller_id, answers, kind, simulation, handshake, sensor, reset, error)
};

/// The two topics of one simulation.
struct LockstepTopics {
    std::string request;  ///< PREFIX/click/request: controllers publish Request
    std::string answer;   ///< PREFIX/click/answer: the simulation publishes Answer
};

/// How long each end of a lockstep exchange busy-polls shared memory for the
/// other's next message before it blocks, unless its options say otherwise
/// (SubscriberOptions::spin). Each side usually answers within it when both
/// run on one host, and a process that did not block needs no wake-up, which
/// on a VM costs each side ~10 µs (docs/BENCHMARKS.md). At most this much CPU
/// per step goes to it.
inline constexpr std::chrono::microseconds default_lockstep_spin{50};

/// How the reason of an Error answer starts when the simulation refused a
/// Control because it was paused by its control services (simulation.hpp):
/// nothing was applied; the same Control sent again waits for `resume`.
inline constexpr std::string_view paused_refusal_prefix = "paused: ";

/// What the reason of an Error answer holds when the simulation's watchdog
/// had stopped it (no Control for too long): the Control was not applied;
/// the next one starts the simulation again.
inline constexpr std::string_view watchdog_refusal_marker = "watchdog: no Control from controller '";

/// Topic names for the simulation named (prefixed) `prefix`, e.g. "sim".
inline LockstepTopics lockstep_topics(std::string_view prefix) {
    std::string p(prefix);
    while (!p.empty() && p.back() == '/') p.pop_back();
    return {p + "/click/request", p + "/click/answer"};
}

/// Checks `control` against what `handshake` announced: every object is
/// known, at most one of values / angles / angular_velocities / torques is
/// set per object, the number of values is the number of controls, a
/// deprecated array is used only if every control of the object has its type,
/// every value is finite, every control event is announced.
/// @return nullopt if the control is valid, else a sentence saying what is wrong.
std::optional<std::string> check_control(const msgs::click::Handshake& handshake, const msgs::click::Control& control);

/// The values of one object of a valid control, in `controls_in_order` order,
/// whichever of values / angles / angular_velocities / torques carried them
/// (empty if none did).
const std::vector<double>& control_values(const msgs::click::ControlObject& object) noexcept;

}  // namespace gecko::click
