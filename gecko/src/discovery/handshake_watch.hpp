// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file handshake_watch.hpp
/// The handshake events of one connecting socket (internal). A core that
/// refuses our security handshake (one of us holds the key's secret and the
/// other not, or they hold different secrets) says nothing else: these
/// events are how a node or a tool tells that from a core that is not there.

#include <zmq.hpp>

namespace gecko::detail {

class HandshakeWatch {
public:
    HandshakeWatch() = default;  ///< watches nothing: failures() is 0
    /// Starts watching `socket` (before it connects). If libzmq cannot
    /// monitor it, the watch sees nothing. `socket` must outlive the watch.
    HandshakeWatch(zmq::context_t& context, zmq::socket_t& socket);
    ~HandshakeWatch();
    HandshakeWatch(HandshakeWatch&& other) noexcept;
    HandshakeWatch& operator=(HandshakeWatch&& other) noexcept;

    /// Handshakes that failed since the last one that succeeded. A protocol
    /// or auth failure, which ZeroMQ does not retry, counts three; a
    /// connection error mid-handshake (a core restarting) counts one.
    unsigned failures();

private:
    void stop() noexcept;

    void* watched_ = nullptr;  // the socket's handle
    zmq::socket_t monitor_;    // PAIR: its handshake events
    unsigned failures_ = 0;
};

}  // namespace gecko::detail
