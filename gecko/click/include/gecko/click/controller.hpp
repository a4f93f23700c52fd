// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file controller.hpp
/// The controller side of the Click lockstep protocol over Gecko topics: send
/// a control, get the sensors of exactly one simulation step back.
///
/// **Example**:
/// ```cpp
/// gecko::Node node(gecko::NodeOptions::from_args(argc, argv, "controller"));
/// gecko::click::Controller ctl(node, "sim");       // topics sim/click/request, sim/click/answer
/// const auto& handshake = ctl.handshake();          // what the scene offers
/// auto control = ctl.make_control();                // every object, values zeroed
/// control.objects["robot1"].values = {0.3, -0.2};
/// auto result = ctl.step(control);                  // one simulation step
/// if (result.is_sensor()) use(result.sensor());
/// else if (result.is_reset()) restart();            // the simulation was reset and is paused
/// else fail(result.error().reason);
/// ```
///
/// Every call waits for the answer to its own request (controller id and
/// request id), with ControllerOptions::timeout as the bound. While it waits it
/// re-sends the same request now and then: the simulation answers a re-sent
/// request from its cache without stepping again, so a lost message costs time,
/// never a double step. Not thread-safe: use a Controller from one thread.

#include <gecko/click/lockstep_msgs.hpp>
#include <gecko/node.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace gecko::click {

/// How a Controller waits and where it talks. Every field has a default.
struct ControllerOptions {
    /// Longest wait for the answer to one request, re-sends included.
    std::chrono::milliseconds timeout{5000};
    /// Longest wait, at the first request, for the simulation to subscribe to the request topic.
    std::chrono::milliseconds connect_timeout{5000};
    /// Re-send an unanswered request after this long (sooner, from 5 ms doubling,
    /// until the first answer has come: subscriptions take a moment to settle).
    /// 0: never re-send.
    std::chrono::milliseconds resend_after{250};
    /// This controller's id on the wire; empty: "<node name>-<random hex>".
    std::string controller_id;
    /// The request topic's publisher.
    PublisherOptions request_publisher;
    /// The answer topic's subscriber. Its depth is raised to at least 1024 so
    /// that no answer is overwritten; unless set, its `spin` is
    /// default_lockstep_spin: an answer from a simulation on this host usually
    /// comes within it, and a controller that did not block need not be woken.
    SubscriberOptions answer_subscriber;
};

/// The outcome of a Control or a SensorRequest: a Sensor, a Reset (the
/// simulation was reset and is paused until the next Control) or an Error
/// (the simulation refused the request). The caller must handle all three.
class StepResult {
public:
    enum class Kind { sensor, reset, error };

    explicit StepResult(msgs::click::Sensor sensor) : value_(std::move(sensor)) {}
    explicit StepResult(msgs::click::Reset reset) : value_(std::move(reset)) {}
    explicit StepResult(msgs::click::Error error) : value_(std::move(error)) {}

    Kind kind() const noexcept { return static_cast<Kind>(value_.index()); }
    bool is_sensor() const noexcept { return kind() == Kind::sensor; }
    bool is_reset() const noexcept { return kind() == Kind::reset; }
    bool is_error() const noexcept { return kind() == Kind::error; }
    /// An Error saying the simulation is paused (its control services): the
    /// Control was held, then refused, and not applied. Sending it again
    /// waits for `resume` anew.
    bool is_paused_refusal() const noexcept;
    /// An Error saying the simulation's watchdog had stopped it (no Control
    /// for too long): the Control was not applied; the next one starts it again.
    bool is_watchdog_refusal() const noexcept;

    /// The sensors. @throws gecko::Error (Errc::protocol) if the outcome is a
    /// Reset, or (Errc::remote) if it is an Error, with its reason.
    const msgs::click::Sensor& sensor() const;
    /// The reset answer. @throws gecko::Error (Errc::protocol) otherwise.
    const msgs::click::Reset& reset() const;
    /// The error answer. @throws gecko::Error (Errc::protocol) otherwise.
    const msgs::click::Error& error() const;

private:
    friend class Controller;  // step(control, result) writes into value_ in place
    std::variant<msgs::click::Sensor, msgs::click::Reset, msgs::click::Error> value_;
};

/// Counters, for tests and diagnostics.
struct ControllerStats {
    std::uint64_t requests{0};         ///< new requests sent (re-sends not counted)
    std::uint64_t resends{0};          ///< re-sends of a request still unanswered
    std::uint64_t answers{0};          ///< answers that matched the request waited for
    std::uint64_t ignored_answers{0};  ///< answers for other controllers, or late/duplicated ones
};

/// Drives one simulation (or robot) that runs a SimulationServer, by Click
/// lockstep requests on its paired topics under the node's key.
class Controller {
public:
    /// Creates the request publisher and the answer subscriber of the
    /// simulation `simulation` (its topic prefix, e.g. "sim"). Sends nothing yet.
    Controller(Node& node, std::string_view simulation, ControllerOptions options = {});
    ~Controller();
    Controller(Controller&&) noexcept;
    Controller& operator=(Controller&&) noexcept;
    Controller(const Controller&) = delete;
    Controller& operator=(const Controller&) = delete;

    /// Sends a HandshakeInit and returns the Handshake (kept: see last_handshake()).
    /// A pending simulation-side reset is absorbed (the handshake is asked again).
    /// @throws gecko::Error: Errc::no_peer if no simulation subscribes within
    ///         connect_timeout, or once the simulation is gone while a request
    ///         waits (it exited, or its link dropped: noticed within
    ///         resend_after, not at the timeout), Errc::timeout if no answer
    ///         comes within timeout,
    ///         Errc::remote if the simulation refuses (e.g. another controller
    ///         drives it: the message names it).
    const msgs::click::Handshake& handshake();

    /// Sends a SensorRequest: the sensors now, without stepping (or a Reset or an Error).
    /// @throws gecko::Error (no_peer, timeout) as handshake().
    StepResult sensors();

    /// Sends `control` and waits for the outcome of exactly one simulation step.
    /// The first Control after a handshake or a reset starts the simulation.
    /// @throws gecko::Error: Errc::protocol if handshake() was not called yet;
    ///         Errc::invalid_argument if the control does not match the handshake
    ///         (unknown object, wrong number of values, wrong type, ...); nothing
    ///         is sent then. Errc::no_peer, Errc::timeout as handshake().
    StepResult step(const msgs::click::Control& control);

    /// The same step, its outcome written into `result`: a loop that keeps
    /// one StepResult gets each step's Sensor in the memory of the previous
    /// one, and allocates nothing per step once the shapes have settled.
    /// `result` is untouched if this throws.
    void step(const msgs::click::Control& control, StepResult& result);

    /// Sends a Reset: the simulation returns to its initial state and pauses
    /// until the next Control. @throws gecko::Error (Errc::remote if refused;
    /// no_peer, timeout as handshake()).
    void reset();

    /// Sends an Error: ends the run (the simulation stops its actuators and
    /// frees itself for another controller). Never throws for lack of an
    /// answer. @return true if the simulation acknowledged within timeout.
    bool error(const std::string& reason);

    /// A Control with every object of the handshake that has controls, its
    /// `values` set to zeros in controls_in_order order, no events.
    /// @throws gecko::Error (Errc::protocol) before handshake().
    msgs::click::Control make_control() const;

    bool has_handshake() const noexcept;  ///< handshake() succeeded at least once
    /// The last Handshake received. @throws gecko::Error (Errc::protocol) before handshake().
    const msgs::click::Handshake& last_handshake() const;

    const std::string& id() const noexcept;                ///< the controller id on the wire
    const LockstepTopics& topics() const noexcept;         ///< the two topic names
    ControllerStats stats() const noexcept;

private:
    struct Impl;
    Request& prepare_step(const msgs::click::Control& control);  // checks it; the reused step request
    std::unique_ptr<Impl> impl_;
};

}  // namespace gecko::click
