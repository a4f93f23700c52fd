// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file simulation.hpp
/// The simulation side of the Click lockstep protocol over Gecko topics: the
/// process that owns the (simulated or real) actuators answers controllers'
/// requests, driven by the spine's state machine (gecko/spine.hpp).
///
/// The owner implements Backend; SimulationServer does the rest: topics,
/// pairing, duplicates, one controller at a time, the watchdog, stop cycles.
///
/// **Example**:
/// ```cpp
/// struct MyArm : gecko::click::Backend { ... };     // handshake(), apply(), step(), ...
/// gecko::install_signal_handlers();
/// gecko::Node node(gecko::NodeOptions::from_args(argc, argv, "gecko-sim"));
/// MyArm arm;
/// gecko::click::SimulationServerOptions options;
/// options.watchdog = std::chrono::milliseconds(500);
/// gecko::click::SimulationServer server(node, "sim", arm, options);
/// server.run();                                      // until SIGINT; stop cycles before it returns
/// ```
///
/// ## Protocol (DESIGN.md, "The Click lockstep protocol on Gecko")
///
/// request        | answer    | what the server does
/// ---------------|-----------|----------------------------------------------------------------
/// HandshakeInit  | Handshake | (re)starts the session: spine stop -> start -> idle; nothing steps
/// SensorRequest  | Sensor    | spine observation; Backend::sensors(); nothing steps
/// Control        | Sensor    | checks it, spine action: Backend::apply() then exactly one Backend::step()
/// Reset          | Reset     | spine stop -> start with Backend::reset() -> idle: paused until the next Control
/// Error          | (Ended)   | spine stop; the run ends; the controller slot is free again
///
/// - A Control the handshake does not allow is answered with an Error, nothing steps.
/// - request_reset() (the simulation side, e.g. a user pressed reset) resets at
///   once, and the next request of the controller, whatever it is except Error,
///   is answered with a Reset.
/// - One controller at a time: a request from another controller gets an Error
///   naming the one in charge, until that one sends Error, its watchdog trips,
///   its answer subscription closes (its process ended, even killed: the
///   next controller is accepted at once), or it has been silent for
///   SimulationServerOptions::takeover_after.
/// - Duplicates: the last request id and answer are kept per controller; the
///   same id again gets the same answer without stepping, an older id is
///   never acted on and gets an Error saying so (counted in
///   status().stale_requests). After a controller ended its run (Error), a
///   request #1 with its id starts a new run.
/// - Watchdog: once the simulation runs (a Control since the last handshake or
///   reset), if no Control comes within `watchdog`, the spine goes to stop,
///   Backend::stop_actuators() is called each cycle, a warning is logged and
///   status() says so. The controller that was in charge learns of it from its
///   next Control: that one is answered with an Error and not applied (nothing
///   steps); the Control after it starts the simulation again. The Error's
///   reason is the spine's own refusal of an action in stop, then what it
///   means here:
///   `spine: request 'action' is invalid in state 'stop': send 'start' first
///   (the watchdog stopped the spine: no action for N cycles (M ms)). watchdog:
///   no Control from controller 'ID' within W ms; the simulation stopped its
///   actuators and did not apply this Control. The next Control starts it again`.
///   Every spine refusal travels this way (an Error answer whose reason starts
///   with `spine: request '<request>'` and names the state): a Click controller
///   gets a StepResult that is_error() with that reason, Python's
///   gecko.spine.Agent raises SpineError, or WatchdogStop when the reason names
///   the watchdog. SensorRequests are answered meanwhile (reading moves
///   nothing); a HandshakeInit, a Reset or an Error of that controller, or
///   another controller taking over, drops the pending refusal.
/// - Interrupt (gecko::ok() false, or shutdown()): the spine's shutdown sends
///   stop commands for `stop_cycles` cycles, then run() returns.
///
/// ## Control services and status topic (SimulationServerOptions::control_services)
///
/// The server offers, under its name SIM, the services `SIM/control/start`,
/// `resume`, `stop`, `pause`, `reset` and `status` (gecko/msgs/sim.hpp:
/// ControlRequest -> ControlReply) and publishes a msgs::sim::Status on
/// `SIM/status` every `status_period` and after each operation. Each service
/// is answered once its operation has taken effect on the thread that runs
/// spin_once(): after `pause` (or `stop`) no step is taken; after `resume`
/// (or `start`) Controls step again; after `reset` the backend is back in its
/// initial state (simulated time 0) and paused. Operations are carried out
/// one at a time, in arrival order: a second reset waits for the first.
/// The node's background spinner answers them (the server calls
/// Node::spin_in_background(): other callbacks of that node run on it too).
///
/// Paused, in lockstep. Click specifies no pause of the server; a Click
/// simulation steps only when a Control comes, and a paused one leaves the
/// Control waiting. So here:
/// - a Control that comes while paused is **held**: not applied, not
///   answered; its re-sends are recognised as the same request. `resume`
///   applies it (one step) and answers it with its Sensor;
/// - a `reset` while a Control is held answers it with a Reset, as a
///   simulation-side reset does (request_reset()); with none held, the
///   controller's next request is answered with a Reset. Either way the
///   controller restarts from the initial state, then its next Control is
///   held until `resume`;
/// - a Control held longer than `paused_control_hold` is answered with an
///   Error whose reason starts with `paused:` (nothing applied;
///   StepResult::is_paused_refusal()), so that a controller never waits past
///   its own timeout without a word. Sending the Control again waits anew;
/// - SensorRequests, HandshakeInits, Resets and Errors are answered as
///   ever. No watchdog trips while paused: `pause` puts the spine in stop
///   (stop commands each cycle); after a reset or a handshake it waits in
///   idle, where only a stepped Control arms the watchdog.
///
/// docs/SIMULATION_CONTROL.md has the status fields and how to try it.

#include <gecko/click/lockstep_msgs.hpp>
#include <gecko/node.hpp>
#include <gecko/spine.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace gecko::click {

/// Thrown by a Backend's step(), sensors() or fill_sensors() when the
/// simulation reset itself meanwhile (a Click server behind a gateway
/// answered with a ResetMessage): the server answers the request with a
/// Reset, as Click does, and restarts its own state (paused until the next
/// Control) without calling Backend::reset() again. Any other exception
/// from the backend becomes an Error answer carrying its what().
class SimulationReset : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

/// What the owner of the actuators implements. SimulationServer calls it from
/// the thread that runs spin_once() / run(), never concurrently.
class Backend {
public:
    virtual ~Backend() = default;

    /// What the scene offers. The server fills in `answers`. Called at each
    /// HandshakeInit, and once at construction to check controls.
    virtual msgs::click::Handshake handshake() = 0;

    /// Takes the controls of a Control already checked against handshake().
    /// Objects absent from the control keep their previous controls.
    virtual void apply(const msgs::click::Control& control) = 0;

    /// Advances the simulation by one time step (a real robot: one control period).
    virtual void step() = 0;

    /// The sensors now. The server fills in `answers`.
    virtual msgs::click::Sensor sensors() = 0;

    /// The sensors now, written into `out`: the server hands back the same
    /// objects step after step, so assigning into them (rather than building
    /// a new Sensor) keeps their maps' and vectors' memory and allocates
    /// nothing per step. Override it instead of relying on the default,
    /// which calls sensors().
    virtual void fill_sensors(msgs::click::Sensor& out) { out = sensors(); }

    /// Returns to the initial state (time, positions, controls).
    virtual void reset() = 0;

    /// Makes every actuator safe: hold or zero, never a stale command. Called
    /// once per cycle while the spine is in stop or shutdown.
    virtual void stop_actuators() = 0;

    /// The controller ended the run with an Error request (`reason` is its text).
    virtual void ended(const std::string& reason) { (void)reason; }

    /// Simulated seconds since the last reset, for the status. Unset (the
    /// default): the server counts steps since the reset times the
    /// handshake's time_step.
    virtual std::optional<double> simulated_time() { return std::nullopt; }
};

/// How a SimulationServer behaves. Every field has a default.
struct SimulationServerOptions {
    /// Once running, the longest gap between two Controls before the watchdog
    /// stops the actuators. 0: no watchdog.
    std::chrono::milliseconds watchdog{0};
    /// Cycles of stop commands before a start is honoured and before exit (spine's N).
    unsigned stop_cycles{5};
    /// Shortest time between two cycles of stop commands. A real robot: its
    /// bus period, so that each cycle's commands reach the actuators (as
    /// Upkie's spine spreads them over its cycles). 0: back to back, for a
    /// simulation whose stop_actuators() takes effect at once.
    std::chrono::milliseconds stop_cycle_period{0};
    /// How often the server runs a spine cycle when no request comes (stop
    /// commands, watchdog check). Also the poll granularity of run().
    std::chrono::milliseconds idle_cycle{10};
    /// Another controller may take over once the one in charge has sent nothing
    /// for this long. 0: never (only its Error or the watchdog frees the slot).
    std::chrono::milliseconds takeover_after{10000};
    /// An Error request also ends run() (as an interrupt does), for one-shot simulations.
    bool exit_on_error{false};
    /// The request topic's subscriber. Its depth is raised to at least 1024 so
    /// that no request is overwritten; unless set, its `spin` is
    /// default_lockstep_spin (the next Control of a controller on this host
    /// often comes within it).
    SubscriberOptions request_subscriber;
    /// The answer topic's publisher.
    PublisherOptions answer_publisher;
    /// Offer the control services and the status topic (see above).
    bool control_services{true};
    /// Start paused: nothing steps until `start` or `resume`.
    bool start_paused{false};
    /// The status topic's period (500 ms: 2 Hz).
    std::chrono::milliseconds status_period{500};
    /// How long a Control that comes while paused is held before it is
    /// answered with a `paused:` Error; below ControllerOptions::timeout
    /// (5 s by default), so the controller hears why. 0: held until resumed.
    std::chrono::milliseconds paused_control_hold{3000};
    /// Longest a control service waits for spin_once() to carry its
    /// operation out before it answers with an error.
    std::chrono::milliseconds control_timeout{10000};
};

/// What the server is doing, for people and tests (status()).
struct SimulationStatus {
    spine::State state{spine::State::stop};  ///< the spine's state
    std::string stop_cause;                  ///< why the spine is in stop ("watchdog", "agent", ...); empty at start
    std::string controller;                  ///< the controller in charge; empty if none
    bool running{false};                     ///< a Control came since the last handshake or reset
    bool reset_pending{false};               ///< a simulation-side reset awaits its Reset answer
    bool paused{false};                      ///< paused by the control services: Controls are held
    bool control_held{false};                ///< a Control waits for `resume`
    std::uint64_t steps{0};                  ///< Backend::step() calls
    std::uint64_t requests{0};               ///< requests handled (duplicates included)
    std::uint64_t duplicate_requests{0};     ///< answered from the cache, nothing done
    std::uint64_t stale_requests{0};         ///< older than the controller's last request: not acted on
    std::uint64_t refused_requests{0};       ///< answered with an Error
    std::uint64_t stop_commands{0};          ///< Backend::stop_actuators() calls
    std::uint64_t watchdog_trips{0};         ///< times the watchdog stopped the actuators
    std::uint64_t resets{0};                 ///< Backend::reset() calls
    std::uint64_t simulation_resets{0};      ///< resets the backend reported (SimulationReset), each answered with Reset
    std::uint64_t held_controls{0};          ///< Controls held because the simulation was paused
    std::uint64_t paused_refusals{0};        ///< held Controls answered with a `paused:` Error
    std::uint64_t control_operations{0};     ///< operations carried out for the control services
};

/// Serves the Click lockstep protocol for one Backend on the topics
/// lockstep_topics(name) under the node's key.
class SimulationServer {
public:
    /// Creates the topics and calls backend.handshake() once (to check controls).
    /// `backend` must outlive the server.
    SimulationServer(Node& node, std::string_view name, Backend& backend, SimulationServerOptions options = {});
    ~SimulationServer();
    SimulationServer(SimulationServer&&) noexcept;
    SimulationServer& operator=(SimulationServer&&) noexcept;
    SimulationServer(const SimulationServer&) = delete;
    SimulationServer& operator=(const SimulationServer&) = delete;

    /// Waits up to `timeout` (at most idle_cycle) for one request and serves it,
    /// or runs an idle cycle. Handles an interrupt (gecko::ok() false, or
    /// shutdown()) by running the stop cycles.
    /// @return false once the spine is over (the caller leaves its loop).
    bool spin_once(std::chrono::milliseconds timeout);

    /// Calls spin_once() until the spine is over (after SIGINT, shutdown(), or
    /// an Error with exit_on_error).
    void run();

    /// Simulation-side reset (thread-safe): resets the backend at the next
    /// cycle; the next request except Error is answered with Reset.
    void request_reset();

    /// Like SIGINT, for this server only (thread-safe): stop cycles, then over.
    void shutdown();

    /// The frequency (Hz) of the brain that drives the simulation, shown in
    /// the status; 0 when none runs (thread-safe).
    void report_brain_frequency(double hz);

    /// A snapshot of the state (thread-safe).
    SimulationStatus status() const;

    const LockstepTopics& topics() const noexcept;   ///< the two topic names

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace gecko::click
