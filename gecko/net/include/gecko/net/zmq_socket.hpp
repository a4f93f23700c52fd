// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file zmq_socket.hpp
/// The one place where Gecko creates ZeroMQ sockets and the process's one
/// ZeroMQ context. Every socket of every component (node ports, discovery
/// sessions, geckocore, the tools, the Click gateway) is made here with its
/// options, so that switching a transport-wide setting (CurveZMQ keys, buffer
/// sizes) is one edit.

#include <zmq.hpp>

#include <chrono>
#include <cstdint>
#include <memory>

namespace gecko::net {

/// Options a socket is made with. Every field has the value most sockets want.
struct SocketOptions {
    std::chrono::milliseconds linger{0};   ///< how long close() may still send queued messages
    int send_queue = 1000;                 ///< ZMQ_SNDHWM: messages queued per peer before the socket drops/blocks
    int receive_queue = 1000;              ///< ZMQ_RCVHWM
    std::int64_t max_message_size = -1;    ///< ZMQ_MAXMSGSIZE: larger messages close the connection (-1: none)
    bool immediate = false;                ///< ZMQ_IMMEDIATE: queue only to completed connections
    std::chrono::milliseconds reconnect{100};      ///< ZMQ_RECONNECT_IVL
    std::chrono::milliseconds reconnect_max{0};    ///< ZMQ_RECONNECT_IVL_MAX (0: no back-off)
    bool xpub_verboser = false;            ///< XPUB: pass every subscribe and unsubscribe up
    bool router_handover = false;          ///< ROUTER: a reconnecting peer with the same id takes over
};

/// A socket of `type` on `context` with `options` applied.
/// @throws zmq::error_t if ZeroMQ refuses (e.g. too many sockets).
zmq::socket_t make_socket(zmq::context_t& context, zmq::socket_type type, const SocketOptions& options = {});

/// The process's ZeroMQ context: one I/O thread, shared by every node of the
/// process (so inproc:// works between them). It lives while a holder does.
std::shared_ptr<zmq::context_t> process_context();

}  // namespace gecko::net
