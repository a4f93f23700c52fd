// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file sim.hpp
/// Simulation control: the messages of the control services a simulation
/// offers under its name (gecko::click::SimulationServer, hence gecko-sim)
/// and of its status topic.
///
/// Services (SIM is the simulation's name, e.g. `sim`), each taking a
/// ControlRequest and answering a ControlReply once the operation has taken
/// effect:
///
/// service              | what has happened when it answers
/// ---------------------|-------------------------------------------------------------
/// `SIM/control/start`  | stepping runs: Controls are stepped again (as `resume`)
/// `SIM/control/resume` | the same
/// `SIM/control/stop`   | paused: no step is taken after the answer (as `pause`)
/// `SIM/control/pause`  | the same
/// `SIM/control/reset`  | the simulation is back in its initial state, simulated time 0, paused
/// `SIM/control/status` | nothing: the status now
///
/// Topic `SIM/status` carries a Status a few times a second and after each
/// operation.
///
/// **Example**:
/// ```cpp
/// auto pause = node.client<gecko::msgs::sim::ControlRequest, gecko::msgs::sim::ControlReply>("sim/control/pause");
/// auto reply = pause.call({}, std::chrono::seconds(10));   // reply.status.state == SimulationState::paused
/// ```

#include <gecko/msgs/codec.hpp>

#include <cstdint>
#include <string>

namespace gecko::msgs::sim {

/// Where a simulation is. On the wire: its name ("running", "paused", ...).
enum class SimulationState : std::uint8_t {
    running = 0,    ///< Controls are stepped (whether a controller sends any or not)
    paused = 1,     ///< Controls are held, nothing steps (SensorRequests are answered)
    resetting = 2,  ///< a reset is under way; it ends paused
    over = 3,       ///< the simulation has shut down
};
GECKO_MSG_ENUM(SimulationState, running, paused, resetting, over)

/// The name of `s` as written on the wire.
constexpr const char* to_string(SimulationState s) noexcept {
    switch (s) {
        case SimulationState::running: return "running";
        case SimulationState::paused: return "paused";
        case SimulationState::resetting: return "resetting";
        case SimulationState::over: return "over";
    }
    return "?";
}

/// What a simulation is doing: its status topic's message, and the `status`
/// in every control reply.
struct Status {
    static constexpr const char* type_name = "gecko.msgs.sim.Status";
    std::int64_t stamp_ns = 0;        ///< when it was taken (gecko::now_ns())
    std::string simulation;           ///< the simulation's name (its topic prefix)
    SimulationState state = SimulationState::running;     ///< running, paused, resetting or over
    std::uint64_t steps = 0;          ///< steps taken since the simulation started (resets do not clear it)
    double steps_per_s = 0.0;         ///< steps per second of wall time, over the last status period
    double simulated_time = 0.0;      ///< s since the last reset
    double real_time_factor = 0.0;    ///< simulated s per wall s, over the last status period
    std::string controller;           ///< the node of the controller that drives it; empty if none
    std::string controller_id;        ///< that controller's id on the lockstep topics; empty if none
    double brain_frequency = 0.0;     ///< Hz of the brain that drives it; 0 when no brain runs
    std::uint64_t resets = 0;         ///< resets since the simulation started (controller's and services')

    bool operator==(const Status& o) const {
        return stamp_ns == o.stamp_ns && simulation == o.simulation && state == o.state && steps == o.steps &&
               steps_per_s == o.steps_per_s && simulated_time == o.simulated_time &&
               real_time_factor == o.real_time_factor && controller == o.controller &&
               controller_id == o.controller_id && brain_frequency == o.brain_frequency && resets == o.resets;
    }
    bool operator!=(const Status& o) const { return !(*this == o); }
    GECKO_MSG_FIELDS(stamp_ns, simulation, state, steps, steps_per_s, simulated_time, real_time_factor, controller,
                     controller_id, brain_frequency, resets)
};

/// The request of every control service.
struct ControlRequest {
    static constexpr const char* type_name = "gecko.msgs.sim.ControlRequest";
    std::string requester;  ///< who asks (a person, a page, a program): written in the simulation's log; may be empty

    bool operator==(const ControlRequest& o) const { return requester == o.requester; }
    bool operator!=(const ControlRequest& o) const { return !(*this == o); }
    GECKO_MSG_FIELDS(requester)
};

/// The reply of every control service, sent once the operation has taken effect.
struct ControlReply {
    static constexpr const char* type_name = "gecko.msgs.sim.ControlReply";
    bool ok = false;     ///< the operation took effect
    std::string error;   ///< why not, when !ok
    Status status;       ///< the status right after the operation

    bool operator==(const ControlReply& o) const { return ok == o.ok && error == o.error && status == o.status; }
    bool operator!=(const ControlReply& o) const { return !(*this == o); }
    GECKO_MSG_FIELDS(ok, error, status)
};

}  // namespace gecko::msgs::sim
