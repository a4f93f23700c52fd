// SPDX-License-Identifier: Apache-2.0
#include "gecko/click_gateway/click_server_backend.hpp"

#include <gecko/error.hpp>
#include <gecko/net/zmq_socket.hpp>

#include <type_traits>
#include <utility>
#include <variant>

namespace gecko::click {
namespace {

std::string bytes_of(const Encoded& e, const char* what) {
    if (const auto* error = std::get_if<EncodeError>(&e))
        throw Error(Errc::invalid_argument, std::string("cannot write the ") + what + " for the Click server: " + error->reason);
    return std::get<std::string>(e);
}

}  // namespace

ClickServerBackend::ClickServerBackend(ClickServerOptions options, Logger logger)
    : options_(std::move(options)), logger_(std::move(logger)), context_(net::process_context()) {
    joint_state_.frame_id = "world";
    connect();
}

ClickServerBackend::~ClickServerBackend() = default;

void ClickServerBackend::connect() {
    net::SocketOptions o;
    o.linger = std::chrono::milliseconds(0);  // an unanswered request is dropped with the socket
    o.receive_queue = 2;
    socket_ = net::make_socket(*context_, zmq::socket_type::req, o);
    try {
        socket_.connect(options_.endpoint);
    } catch (const zmq::error_t& e) {
        throw Error(Errc::invalid_argument, "cannot connect to the Click server at '" + options_.endpoint + "': " + e.what());
    }
}

Decoded ClickServerBackend::exchange(const Encoded& request, const char* what) {
    const std::string bytes = bytes_of(request, what);
    ++stats_.requests;
    // A REQ socket whose request got no answer can send nothing more: a new one, and a new session.
    auto replace_socket = [&] {
        ++stats_.reconnects;
        new_session_ = true;
        connect();
    };
    zmq::message_t reply;
    try {
        socket_.send(zmq::buffer(bytes), zmq::send_flags::none);  // a REQ queues it until the server is there
        zmq::pollitem_t item{socket_.handle(), 0, ZMQ_POLLIN, 0};
        if (zmq::poll(&item, 1, options_.timeout) == 0) {
            ++stats_.timeouts;
            replace_socket();
            throw Error(Errc::timeout, std::string("the Click server at ") + options_.endpoint + " did not answer the " +
                                           what + " within " + std::to_string(options_.timeout.count()) +
                                           " ms (is it running?); the gateway reconnects and starts a new session");
        }
        if (!socket_.recv(reply)) throw zmq::error_t();
    } catch (const zmq::error_t& e) {  // interrupted by a signal, or the socket failed
        replace_socket();
        throw Error(Errc::transport, std::string("the ") + what + " to the Click server at " + options_.endpoint +
                                         " was cut short (" + e.what() + "); the gateway starts a new session");
    }
    ++stats_.answers;
    Decoded d = decode(reply.to_string_view(), msgs::click::Direction::answer, options_.limits);
    if (const auto* bad = std::get_if<DecodeError>(&d)) {
        ++stats_.bad_answers;
        throw Error(Errc::protocol, std::string("the Click server answered the ") + what +
                                        " with bytes that are not a Click message: " + bad->reason);
    }
    if (std::holds_alternative<msgs::click::Error>(d)) ++stats_.server_errors;
    return d;
}

void ClickServerBackend::saw(const msgs::click::Sensor& sensor) {
    ++sensors_seen_;
    auto& js = joint_state_;
    js.position.clear();
    js.velocity.clear();
    js.effort.clear();
    if (!handshake_) {
        js.names.clear();
        return;
    }
    // "object/joint", compared in place and written only when it differs:
    // the names stay the same step after step, and are not rebuilt per step.
    auto name_at = [&js](std::size_t k, const std::string& object, const std::string& joint) {
        if (k < js.names.size()) {
            const std::string& n = js.names[k];
            if (n.size() == object.size() + 1 + joint.size() && n.compare(0, object.size(), object) == 0 &&
                n[object.size()] == '/' && n.compare(object.size() + 1, joint.size(), joint) == 0)
                return;
            js.names[k] = object + "/" + joint;
        } else {
            js.names.push_back(object + "/" + joint);
        }
    };
    std::size_t k = 0;
    for (const auto& [name, object] : sensor.objects) {
        const auto described = handshake_->objects.find(name);
        if (described == handshake_->objects.end()) continue;
        const auto& order = described->second.joint_sensors_in_order;
        for (std::size_t j = 0; j < order.size(); ++j, ++k) {
            auto at = [j](const std::vector<double>& v) { return j < v.size() ? v[j] : 0.0; };
            name_at(k, name, order[j]);
            js.position.push_back(at(object.angle_sensors));
            js.velocity.push_back(at(object.angular_velocity_sensors));
            js.effort.push_back(at(object.torque_sensors));
        }
    }
    js.names.resize(k);
}

void ClickServerBackend::handshake_if_new_session() {
    if (new_session_) handshake();
}

msgs::click::Handshake ClickServerBackend::handshake() {
    ++stats_.handshakes;
    new_session_ = false;
    stepped_.reset();
    Decoded d = exchange(encode(msgs::click::HandshakeInit{}), "HandshakeInit");
    if (auto* h = std::get_if<msgs::click::Handshake>(&d)) {
        handshake_ = *h;
        return std::move(*h);
    }
    if (auto* e = std::get_if<msgs::click::Error>(&d))
        throw Error(Errc::protocol, "the Click server refused the handshake: " + e->reason);
    ++stats_.bad_answers;
    throw Error(Errc::protocol, std::string("the Click server answered a HandshakeInit with a ") + kind_name(d));
}

void ClickServerBackend::apply(const msgs::click::Control& control) { control_ = control; }

void ClickServerBackend::step() {
    handshake_if_new_session();
    stepped_.reset();
    Decoded d = exchange(encode(control_), "Control");
    stepped_ = std::move(sensor_of(d, "Control"));
    ++stats_.steps;
}

// The Sensor that answers a Control or a SensorRequest (`what`), seen for
// the joint states; a Reset or anything else is thrown as the Backend says.
msgs::click::Sensor& ClickServerBackend::sensor_of(Decoded& d, const char* what) {
    if (auto* s = std::get_if<msgs::click::Sensor>(&d)) {
        saw(*s);
        return *s;
    }
    if (std::holds_alternative<msgs::click::Reset>(d)) {
        ++stats_.server_resets;
        throw SimulationReset("the Click server at " + options_.endpoint + " answered the " + what + " with a Reset");
    }
    if (auto* e = std::get_if<msgs::click::Error>(&d)) throw Error(Errc::protocol, "the Click server: " + e->reason);
    ++stats_.bad_answers;
    throw Error(Errc::protocol, std::string("the Click server answered a ") + what + " with a " + kind_name(d));
}

msgs::click::Sensor ClickServerBackend::sensors() {
    msgs::click::Sensor s;
    fill_sensors(s);
    return s;
}

void ClickServerBackend::fill_sensors(msgs::click::Sensor& out) {
    if (stepped_) {  // the step's own answer: asking again would be a second request for the same state
        out = std::move(*stepped_);
        stepped_.reset();
        return;
    }
    handshake_if_new_session();
    Decoded d = exchange(encode(msgs::click::SensorRequest{}), "SensorRequest");
    out = std::move(sensor_of(d, "SensorRequest"));
}

void ClickServerBackend::reset() {
    handshake_if_new_session();
    stepped_.reset();
    msgs::click::Reset r;
    r.direction = msgs::click::Direction::request;
    Decoded d = exchange(encode(r), "Reset");
    if (std::holds_alternative<msgs::click::Reset>(d)) return;
    if (auto* e = std::get_if<msgs::click::Error>(&d)) throw Error(Errc::protocol, "the Click server refused the reset: " + e->reason);
    ++stats_.bad_answers;
    throw Error(Errc::protocol, std::string("the Click server answered a Reset with a ") + kind_name(d));
}

void ClickServerBackend::ended(const std::string& reason) {
    stepped_.reset();
    msgs::click::Error e;
    e.direction = msgs::click::Direction::request;
    e.reason = reason;
    try {
        (void)exchange(encode(e), "ErrorMessage");  // Click defines no answer; a REP server sends one anyway
    } catch (const Error& failure) {
        logger_.warn(std::string("the Click server did not take the end of the run: ") + failure.what());
    }
}

}  // namespace gecko::click
