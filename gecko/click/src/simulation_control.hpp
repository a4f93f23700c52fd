// SPDX-License-Identifier: Apache-2.0
// The control services and the status topic of one simulation
// (simulation.hpp, "Control services and status topic"): service handlers,
// on the node's spinner, hand each operation to the simulation's thread and
// wait until it has been carried out; that thread publishes the status.
#pragma once

#include <gecko/click/simulation.hpp>
#include <gecko/msgs/sim.hpp>
#include <gecko/node.hpp>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace gecko::click::detail {

/// What a control service asks for.
enum class ControlOperation { resume, pause, reset, status };

/// What the simulation's thread does for the control services
/// (SimulationServer's implementation provides it).
class ControlTarget {
public:
    virtual ~ControlTarget() = default;
    /// Carries `operation` out. @return why it could not; nothing once done.
    virtual std::optional<std::string> carry_out(ControlOperation operation, const std::string& requester) = 0;
    /// The status now; its rates (steps/s, real-time factor) are filled in by SimulationControl.
    virtual msgs::sim::Status status_now() = 0;
};

/// The services SIM/control/{start,resume,stop,pause,reset,status} and the
/// topic SIM/status. Constructed and used on the simulation's thread.
class SimulationControl {
public:
    SimulationControl(Node& node, const std::string& simulation, const SimulationServerOptions& options);
    ~SimulationControl();  // callers still waiting get an error
    SimulationControl(const SimulationControl&) = delete;
    SimulationControl& operator=(const SimulationControl&) = delete;

    /// True if an operation waits (a relaxed atomic load: cheap enough for every request).
    bool pending() const noexcept;
    /// Carries out every waiting operation, in arrival order, answering each
    /// caller, and publishes the status after each.
    void serve(ControlTarget& target);
    /// Publishes the status if its period has passed since the last one, or now with `force`.
    void publish_status(ControlTarget& target, bool force = false);
    /// Refuses every operation from now on, saying `why` (the simulation is over).
    void close(const std::string& why);
    /// For the status (thread-safe).
    void report_brain_frequency(double hz) noexcept;
    /// Operations carried out so far.
    std::uint64_t operations() const noexcept { return operations_; }

private:
    struct Mailbox;
    msgs::sim::Status status_with_rates(ControlTarget& target);

    std::shared_ptr<Mailbox> mailbox_;
    std::vector<Service<msgs::sim::ControlRequest, msgs::sim::ControlReply>> services_;
    Publisher<msgs::sim::Status> status_topic_;
    std::chrono::milliseconds period_;
    std::chrono::steady_clock::time_point window_start_;
    std::uint64_t window_steps_ = 0;
    double window_time_ = 0.0;
    std::uint64_t window_resets_ = 0;
    bool window_started_ = false;
    double steps_per_s_ = 0.0;
    double real_time_factor_ = 0.0;
    std::uint64_t operations_ = 0;
};

}  // namespace gecko::click::detail
