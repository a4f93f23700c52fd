// SPDX-License-Identifier: Apache-2.0
#include "gecko/click_gateway/gateway.hpp"

#include "gecko/net/zmq_socket.hpp"

#include "gecko/click_gateway/protobuf_log.hpp"
#include "gecko/click_gateway/translate.hpp"

#include <gecko/error.hpp>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>
#include <variant>

namespace gecko::click {

bool is_local_endpoint(const std::string& endpoint) {
    for (const char* local : {"ipc://", "inproc://", "tcp://127.", "tcp://localhost:", "tcp://[::1]:"})
        if (endpoint.rfind(local, 0) == 0) return true;
    return false;
}

namespace {

namespace mc = gecko::msgs::click;

template <class... Fs>
struct overloaded : Fs... {
    using Fs::operator()...;
};
template <class... Fs>
overloaded(Fs...) -> overloaded<Fs...>;

ServerAnswer to_answer(const StepResult& result) {
    switch (result.kind()) {
        case StepResult::Kind::sensor: return result.sensor();
        case StepResult::Kind::reset: return result.reset();
        case StepResult::Kind::error: break;
    }
    return result.error();
}

// Generated protobuf code writes fields in number order, and every Click reply
// sets messageType (field 1, varint: tag byte 0x08) explicitly; ErrorMessageType
// is 5. So an ErrorMessage starts with these two bytes, and nothing else does.
bool is_error_message(const std::string& reply) noexcept {
    return reply.size() >= 2 && reply[0] == '\x08' && reply[1] == '\x05';
}

// Binds `socket` to `endpoint`; returns the endpoint as ZeroMQ resolved it.
std::string bind_endpoint(zmq::socket_t& socket, const std::string& endpoint) {
    try {
        socket.bind(endpoint);
    } catch (const zmq::error_t& e) {
        const bool bad_endpoint = e.num() == EINVAL || e.num() == EPROTONOSUPPORT || e.num() == ENOCOMPATPROTO;
        throw gecko::Error(bad_endpoint ? Errc::invalid_argument : Errc::transport,
                           "cannot bind the Click endpoint '" + endpoint + "': " + e.what());
    }
    return socket.get(zmq::sockopt::last_endpoint);
}

}  // namespace

// ZMQ_MAXMSGSIZE is an int64_t; a limit past it is no limit.
std::int64_t max_message_size(std::size_t bytes) {
    return bytes > static_cast<std::size_t>(INT64_MAX) ? -1 : static_cast<std::int64_t>(bytes);
}

Gateway::Gateway(Node& node, GatewayOptions options)
    : node_(node),
      options_(std::move(options)),
      controller_(node, options_.simulation, options_.controller),
      context_(net::process_context()),
      socket_(net::make_socket(*context_, zmq::socket_type::rep, [&] {
          net::SocketOptions o;
          o.max_message_size = max_message_size(options_.rep.max_request_bytes);
          // A REQ client has one request in flight; a peer that sends more without
          // reading the replies (a DEALER) gets them queued here, each up to the
          // size above, as many as the queue holds: keep the queue short.
          o.receive_queue = 2;
          return o;
      }())) {
    route_protobuf_log(node_.logger().name());
    // ZeroMQ closes the connection of a request over ZMQ_MAXMSGSIZE without a
    // word to the socket's owner; its monitor at least says that a connection closed.
    static std::atomic<std::uint64_t> instances{0};
    const std::string monitor_endpoint = "inproc://gecko-click-gateway-monitor-" + std::to_string(instances++);
    if (zmq_socket_monitor(socket_.handle(), monitor_endpoint.c_str(), ZMQ_EVENT_DISCONNECTED) == 0) {
        monitor_ = net::make_socket(*context_, zmq::socket_type::pair);
        monitor_.connect(monitor_endpoint);
    }
    endpoint_ = bind_endpoint(socket_, options_.bind);
    ClickHandlerHooks hooks;
    hooks.limits = [this] {
        DecodeLimits limits;
        limits.max_elements = options_.max_request_elements;
        limits.max_string_bytes = options_.max_request_string_bytes;
        if (controller_.has_handshake()) limits.max_control_objects = controller_.last_handshake().objects.size();
        return limits;
    };
    hooks.refused = [this](const std::string& reason) {
        ++stats_.refused;
        log_limited(LogLevel::warn, "refused", "refused a Click request: " + reason);
    };
    handler_ = make_click_handler([this](const ClientRequest& request) -> ServerAnswer {
        const char* kind = "";
        try {
            ServerAnswer answer = std::visit(
                overloaded{
                    [&](const mc::HandshakeInit&) -> ServerAnswer {
                        kind = "HandshakeInit";
                        ServerAnswer a = controller_.handshake();
                        ++stats_.handshakes;
                        return a;
                    },
                    [&](const mc::SensorRequest&) -> ServerAnswer {
                        kind = "SensorRequest";
                        ServerAnswer a = to_answer(controller_.sensors());
                        ++stats_.sensor_requests;
                        return a;
                    },
                    [&](const mc::Control& control) -> ServerAnswer {
                        kind = "Control";
                        // Click lets a client send Controls without a HandshakeInit; the
                        // Controller checks controls against a handshake, so ask for one.
                        if (!controller_.has_handshake()) controller_.handshake();
                        StepResult result = controller_.step(control);
                        if (result.is_watchdog_refusal()) {
                            // Every client of the socket shares the simulation's run: one that
                            // paused, or a new one after a client that left, finds it stopped by
                            // the watchdog. A Click server never stops on its own, so the gateway
                            // starts it again with the same Control instead of ending the client's run.
                            ++stats_.watchdog_restarts;
                            log_limited(LogLevel::info, "watchdog restart",
                                        "simulation '" + options_.simulation +
                                            "' had stopped its actuators (its watchdog: no Control for a while); "
                                            "the gateway started it again with the client's Control");
                            result = controller_.step(control);
                        }
                        if (result.is_sensor()) ++stats_.steps;
                        return to_answer(result);
                    },
                    [&](const mc::Reset&) -> ServerAnswer {
                        kind = "Reset";
                        controller_.reset();
                        ++stats_.resets;
                        return mc::Reset{};
                    },
                    [&](const mc::Error& e) -> ServerAnswer {
                        kind = "Error";
                        ++stats_.ended_runs;
                        run_open_ = false;
                        const bool acknowledged = controller_.error(e.reason);
                        mc::Error ack;
                        ack.reason = acknowledged
                                         ? "the run ended: simulation '" + options_.simulation +
                                               "' acknowledged the Error"
                                         : "the run ended at the gateway; simulation '" + options_.simulation +
                                               "' did not acknowledge the Error";
                        return ack;
                    },
                },
                request);
            if (!std::holds_alternative<mc::Error>(request)) run_open_ = true;
            return answer;
        } catch (const gecko::Error& e) {
            log_limited(LogLevel::warn, std::string("error ") + kind,
                        std::string("Click ") + kind + " request answered with an ErrorMessage: " + e.what());
            mc::Error error;
            error.reason = e.what();
            return error;
        }
    }, std::move(hooks));
}

Gateway::~Gateway() {
    if (monitor_) zmq_socket_monitor(socket_.handle(), nullptr, 0);
}

void Gateway::log_limited(LogLevel level, const std::string& reason, const std::string& line) {
    std::string note;
    if (log_limiter_.admit(reason, LogLimiter::Clock::now(), &note)) node_.logger().log_at(level, line + note);
}

void Gateway::read_monitor() {
    if (!monitor_) return;
    for (;;) {
        zmq::message_t event;
        zmq::message_t address;
        if (!monitor_.recv(event, zmq::recv_flags::dontwait)) return;
        if (!event.more() || !monitor_.recv(address, zmq::recv_flags::dontwait)) continue;
        std::uint16_t id = 0;
        if (event.size() >= sizeof id) std::memcpy(&id, event.data(), sizeof id);
        if (id != ZMQ_EVENT_DISCONNECTED) continue;
        ++stats_.connections_closed;
        log_limited(LogLevel::info, "connection closed",
                    "a Click client's connection closed: the client left, or sent a request larger than the " +
                        std::to_string(options_.rep.max_request_bytes) +
                        " bytes this gateway accepts, which ZeroMQ refuses unread by closing the connection (that "
                        "client gets no reply)");
    }
}

std::string Gateway::handle(std::string_view request) {
    ++stats_.requests;
    std::string reply = handler_(request);  // never throws, never empty (make_click_handler)
    if (is_error_message(reply)) ++stats_.error_replies;
    return reply;
}

RepLoopStats Gateway::run(const std::function<bool()>& keep_running) {
    std::uint64_t handled = 0;
    const RepLoopStats loop = serve_click_rep(
        socket_,
        [&](std::string_view request) {
            ++handled;
            return handle(request);
        },
        [&] {
            read_monitor();
            return keep_running();
        },
        options_.rep);
    read_monitor();
    // The loop answers a multipart or oversized request itself, without the handler.
    stats_.requests += loop.requests - handled;
    stats_.error_replies += loop.requests - handled;
    return loop;
}

bool Gateway::end_run(const std::string& reason) {
    if (!run_open_) return true;
    run_open_ = false;
    return controller_.error(reason);
}

}  // namespace gecko::click
