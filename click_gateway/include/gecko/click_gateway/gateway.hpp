// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file gateway.hpp
/// The Click gateway: a ZeroMQ REP socket speaking Click's own wire format
/// (protobuf, one frame per message) in front of a Gecko lockstep simulation,
/// so that existing Click clients drive it unchanged. Private to the gateway
/// (it exposes ZeroMQ); gecko-click-gateway is a thin main() around it.
///
/// Each Click request becomes one call on a gecko::click::Controller:
///
/// Click request  | Controller call                          | Click reply
/// ---------------|------------------------------------------|-------------------------------------
/// HandshakeInit  | handshake()                              | HandshakeMessage
/// SensorRequest  | sensors()                                | SensorMessage (or Reset, or Error)
/// Control        | handshake() if none yet, then step()*    | SensorMessage (or Reset, or Error)
/// Reset          | reset()                                  | ResetMessage
/// Error          | error(reason)                            | ErrorMessage "the run ended ..."
///
/// A gecko::Error on the way (no simulation, timeout, a control that does not
/// match the handshake, a refusal) becomes an ErrorMessage whose text is the
/// error's what(); malformed bytes get an ErrorMessage too (make_click_handler),
/// and every request gets exactly one reply (serve_click_rep), but one larger
/// than rep.max_request_bytes, which ZeroMQ refuses unread. Click has no
/// answer to an Error request, but a REP socket must reply, so the gateway
/// acknowledges it with an ErrorMessage saying the run ended.
///
/// One Controller serves every client of the socket, one request at a time:
/// Click clients take turns, as they do with a Click server.
///
/// (*) The clients share the simulation's run, and its watchdog: a client
/// that paused longer than the watchdog, or a new one after a client that
/// left, finds the simulation stopped, its actuators made safe. A Click
/// server never stops on its own, so the gateway does not end the client's
/// run for it: when step() is refused because the watchdog stopped the
/// simulation, it sends the Control once more, which starts the simulation
/// again from where it stood (GatewayStats::watchdog_restarts).

#include "gecko/click_gateway/rep_loop.hpp"

#include <gecko/click/controller.hpp>
#include <gecko/log.hpp>
#include <gecko/node.hpp>

#include <zmq.hpp>

#include <memory>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace gecko::click {

/// How a Gateway behaves. Every field has a default.
struct GatewayOptions {
    /// Where Click clients connect: "tcp://*:5555" (Click's default port, IPv4),
    /// "tcp://127.0.0.1:*" (a free port: see Gateway::endpoint()), "ipc:///tmp/click", ...
    std::string bind{"tcp://*:5555"};
    /// The simulation's topic prefix (gecko-sim --sim): topics PREFIX/click/request and PREFIX/click/answer.
    std::string simulation{"sim"};
    /// The Controller's options: its timeout and connect_timeout bound the wait
    /// for the simulation on each request; endpoints wire it by hand with discovery off.
    ControllerOptions controller;
    /// The REP loop's options (poll interval, largest request). `rep.max_request_bytes`
    /// is also the socket's ZMQ_MAXMSGSIZE: ZeroMQ refuses a larger request when its
    /// size arrives, before reading it, by closing the client's connection (the
    /// client gets no reply; the gateway logs it and counts connections_closed).
    RepLoopOptions rep;
    /// Fields, map entries and packed numbers one request may hold, at every depth
    /// (DecodeLimits::max_elements): bounds what decoding a request allocates. A
    /// Control is also refused if it names more objects than the handshake has.
    std::size_t max_request_elements{1u << 16};
    /// Bytes of one string in a request (a name, an error text): replies and log
    /// lines that quote a name quote at most this much.
    std::size_t max_request_string_bytes{4096};
};

/// What a Gateway did, for logs and tests.
struct GatewayStats {
    std::uint64_t requests{0};        ///< Click requests received, each answered exactly once
    std::uint64_t handshakes{0};      ///< HandshakeInit requests served
    std::uint64_t steps{0};           ///< Controls answered with a Sensor (one simulation step each)
    std::uint64_t sensor_requests{0}; ///< SensorRequests served
    std::uint64_t resets{0};          ///< Reset requests served
    std::uint64_t ended_runs{0};      ///< Error requests (the client ended its run)
    /// Controls the simulation refused because its watchdog had stopped it
    /// (no Control for longer than its watchdog), sent again at once: the
    /// second starts it again, and the client gets its Sensor.
    std::uint64_t watchdog_restarts{0};
    std::uint64_t error_replies{0};   ///< requests answered with an ErrorMessage, whatever the cause
    std::uint64_t refused{0};         ///< of those, refused before the simulation saw them: not a Click request
                                      ///< within the limits, or a message only a server sends
    std::uint64_t connections_closed{0};  ///< client connections that closed: a client left, or ZeroMQ refused a
                                          ///< request over rep.max_request_bytes at arrival
};

/// A Click server for one Gecko simulation. Not thread-safe: run() (or
/// handle()) from one thread; read stats() from that thread or after run() returned.
class Gateway {
public:
    /// Creates the Controller of `options.simulation` on `node` and binds the
    /// REP socket. Sends nothing to the simulation yet. `node` must outlive the gateway.
    /// @throws gecko::Error: Errc::invalid_argument if `options.bind` is not an
    ///         endpoint ZeroMQ understands, Errc::transport if it cannot be bound
    ///         (e.g. the port is taken).
    Gateway(Node& node, GatewayOptions options = {});
    ~Gateway();
    Gateway(const Gateway&) = delete;
    Gateway& operator=(const Gateway&) = delete;

    /// The endpoint bound, as ZeroMQ resolved it ("tcp://0.0.0.0:5555" for
    /// "tcp://*:5555", the actual port for "tcp://127.0.0.1:*").
    const std::string& endpoint() const noexcept { return endpoint_; }

    /// Answers Click requests until `keep_running()` returns false (asked at
    /// least every options.rep.poll_interval while idle, and between requests).
    /// @return the REP loop's counts for this call.
    /// @throws zmq::error_t if the socket fails.
    RepLoopStats run(const std::function<bool()>& keep_running);

    /// Serves one request, bytes in, bytes out: what run() does per request
    /// (for tests and in-process use). Never throws; never returns empty bytes.
    std::string handle(std::string_view request);

    /// Ends the current run, if a client started one and has not ended it (an
    /// Error request to the simulation, so that another controller may drive it).
    /// For a clean exit. @return true if the simulation acknowledged, or if there was nothing to end.
    bool end_run(const std::string& reason);

    const GatewayStats& stats() const noexcept { return stats_; }
    Controller& controller() noexcept { return controller_; }  ///< e.g. to connect() it by hand

private:
    using ServeFn = std::function<std::string(std::string_view)>;

    void read_monitor();  // counts and logs the connections that closed
    // Logs `line` at `level` unless lines of `reason` came within the last 10 s (then counts it).
    void log_limited(LogLevel level, const std::string& reason, const std::string& line);

    Node& node_;
    GatewayOptions options_;
    Controller controller_;
    std::shared_ptr<zmq::context_t> context_;  // the process's (gecko/net/zmq_socket.hpp)
    zmq::socket_t socket_;
    zmq::socket_t monitor_;  // PAIR: socket_'s disconnect events; unconnected if ZeroMQ refused a monitor
    std::string endpoint_;
    LogLimiter log_limiter_;
    ServeFn handler_;
    GatewayStats stats_;
    bool run_open_{false};  // the simulation has served this gateway since the last Error request
};

/// Whether a ZeroMQ endpoint is reachable only from this host (ipc://,
/// inproc://, tcp on a loopback address). Click clients and servers speak
/// plain ZeroMQ (the Click protocol has no authentication): in a secured key,
/// a gateway on any other address lets whoever reaches it drive, or read, the
/// simulation, which gecko-click-gateway warns about.
bool is_local_endpoint(const std::string& endpoint);

}  // namespace gecko::click
