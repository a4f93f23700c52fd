// SPDX-License-Identifier: Apache-2.0
#include "discovery/handshake_watch.hpp"

#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>

#include "gecko/net/zmq_socket.hpp"

namespace gecko::detail {

HandshakeWatch::HandshakeWatch(zmq::context_t& context, zmq::socket_t& socket) {
    static std::atomic<unsigned> watches{0};
    const std::string endpoint = "inproc://gecko-handshakes-" + std::to_string(::getpid()) + "-" + std::to_string(watches++);
    if (zmq_socket_monitor(socket.handle(), endpoint.c_str(),
                           ZMQ_EVENT_HANDSHAKE_SUCCEEDED | ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL |
                               ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL | ZMQ_EVENT_HANDSHAKE_FAILED_AUTH) != 0)
        return;
    watched_ = socket.handle();
    monitor_ = net::make_socket(context, zmq::socket_type::pair);
    monitor_.connect(endpoint);
}

HandshakeWatch::~HandshakeWatch() { stop(); }

HandshakeWatch::HandshakeWatch(HandshakeWatch&& other) noexcept
    : watched_(std::exchange(other.watched_, nullptr)), monitor_(std::move(other.monitor_)), failures_(other.failures_) {}

HandshakeWatch& HandshakeWatch::operator=(HandshakeWatch&& other) noexcept {
    if (this != &other) {
        stop();
        watched_ = std::exchange(other.watched_, nullptr);
        monitor_ = std::move(other.monitor_);
        failures_ = other.failures_;
    }
    return *this;
}

void HandshakeWatch::stop() noexcept {
    if (watched_) zmq_socket_monitor(watched_, nullptr, 0);
    watched_ = nullptr;
    monitor_.close();
}

unsigned HandshakeWatch::failures() {
    if (!monitor_) return 0;
    try {
        for (int budget = 64; budget > 0; --budget) {
            zmq::message_t event, address;
            if (!monitor_.recv(event, zmq::recv_flags::dontwait)) break;
            if (event.more()) (void)monitor_.recv(address, zmq::recv_flags::dontwait);
            std::uint16_t what = 0;
            if (event.size() >= 2) std::memcpy(&what, event.data(), 2);
            if (what == ZMQ_EVENT_HANDSHAKE_SUCCEEDED)
                failures_ = 0;
            else
                failures_ += what == ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL ? 1 : 3;
        }
    } catch (const zmq::error_t&) {
        // The context is terminating.
    }
    return failures_;
}

}  // namespace gecko::detail
