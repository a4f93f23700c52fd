// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file click_server_backend.hpp
/// The gateway's other direction: an existing Click server (a C++ `click` or
/// Python `pclick` simulation, e.g. AGX/OpenPLX) behind a gecko::click::Backend,
/// so that a SimulationServer offers it on Gecko as gecko-sim offers its own
/// simulation. Each Backend call is one Click request on a REQ socket:
///
/// Backend call      | Click request   | Click answer → what the backend does
/// ------------------|-----------------|------------------------------------------------------
/// handshake()       | HandshakeInit   | HandshakeMessage → returned
/// apply() + step()  | ControlMessage  | SensorMessage → kept for fill_sensors(); ResetMessage →
///                   |                 | throws SimulationReset; ErrorMessage → throws its text
/// fill_sensors()    | SensorRequest   | (not after a step: that step's Sensor is used)
/// reset()           | ResetMessage    | ResetMessage
/// ended(reason)     | ErrorMessage    | any answer (Click defines none; a REP server sends one)
///
/// Exactly one request is in flight. A server that does not answer within
/// `timeout` (dead, hung, never started) makes the call throw a gecko::Error
/// that says so, which the SimulationServer turns into an Error answer to
/// the Gecko controller: never a hang. The REQ socket is then closed and a
/// new one connected (a REQ socket whose request went unanswered can send
/// nothing more), and the next request the server gets is a HandshakeInit
/// (a restarted server starts a new session). stop_actuators() sends
/// nothing: a Click simulation steps only when a Control comes.

#include "gecko/click_gateway/translate.hpp"

#include <gecko/click/simulation.hpp>
#include <gecko/log.hpp>
#include <gecko/msgs/sensors.hpp>

#include <zmq.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace gecko::click {

/// Where the Click server is and how long to wait for it.
struct ClickServerOptions {
    /// The server's REP endpoint: "tcp://sim-host:5555", "ipc:///tmp/click".
    std::string endpoint{"tcp://127.0.0.1:5555"};
    /// Longest wait for one answer. Past it the call throws and the socket is replaced.
    std::chrono::milliseconds timeout{5000};
    /// What one answer may hold (checked before protobuf builds anything).
    DecodeLimits limits;
};

/// What a ClickServerBackend did, for logs and tests.
struct ClickServerStats {
    std::uint64_t requests{0};        ///< requests sent to the server
    std::uint64_t answers{0};         ///< answers received
    std::uint64_t handshakes{0};      ///< HandshakeInit requests (the gateway's own after a reconnect included)
    std::uint64_t steps{0};           ///< Controls answered with a Sensor
    std::uint64_t server_resets{0};   ///< Controls or SensorRequests answered with a Reset (the server reset itself)
    std::uint64_t server_errors{0};   ///< answers that were an ErrorMessage
    std::uint64_t timeouts{0};        ///< requests the server did not answer in time
    std::uint64_t reconnects{0};      ///< REQ sockets replaced after a timeout or a bad answer
    std::uint64_t bad_answers{0};     ///< answers that were not a Click message, or not one that answers the request
};

class ClickServerBackend final : public Backend {
public:
    /// Connects the REQ socket (ZeroMQ connects in the background: nothing is
    /// sent, and nothing fails, until the first request).
    ClickServerBackend(ClickServerOptions options, Logger logger);
    ~ClickServerBackend() override;
    ClickServerBackend(const ClickServerBackend&) = delete;
    ClickServerBackend& operator=(const ClickServerBackend&) = delete;

    msgs::click::Handshake handshake() override;
    void apply(const msgs::click::Control& control) override;
    void step() override;
    msgs::click::Sensor sensors() override;
    void fill_sensors(msgs::click::Sensor& out) override;
    void reset() override;
    void stop_actuators() override {}
    void ended(const std::string& reason) override;

    /// The server's latest handshake (empty before the first).
    const std::optional<msgs::click::Handshake>& last_handshake() const noexcept { return handshake_; }
    /// The joints as the server's latest Sensor has them (names "object/joint"
    /// from the handshake's joint_sensors_in_order; position, velocity and
    /// effort from the angle, angular velocity and torque arrays, where sent),
    /// and how many Sensors it has seen: what gecko-sim publishes on
    /// SIM/joint_states, for a gateway to publish after each.
    const msgs::JointState& joint_state() const noexcept { return joint_state_; }
    std::uint64_t sensors_seen() const noexcept { return sensors_seen_; }
    const ClickServerStats& stats() const noexcept { return stats_; }
    const ClickServerOptions& options() const noexcept { return options_; }

private:
    // Sends `request` and returns the decoded answer; throws gecko::Error on a
    // timeout or an answer that is not a Click message (the socket is replaced).
    Decoded exchange(const Encoded& request, const char* what);
    void connect();
    void handshake_if_new_session();
    void saw(const msgs::click::Sensor& sensor);
    msgs::click::Sensor& sensor_of(Decoded& d, const char* what);

    ClickServerOptions options_;
    Logger logger_;
    std::shared_ptr<zmq::context_t> context_;
    zmq::socket_t socket_;
    msgs::click::Control control_;
    std::optional<msgs::click::Sensor> stepped_;  // the last step's Sensor, until fill_sensors() takes it
    std::optional<msgs::click::Handshake> handshake_;
    msgs::JointState joint_state_;
    std::uint64_t sensors_seen_{0};
    bool new_session_{false};  // the socket was replaced: the server hears a HandshakeInit first
    ClickServerStats stats_;
};

}  // namespace gecko::click
