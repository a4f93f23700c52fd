// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file router_io.hpp
/// Reading and answering requests on a ROUTER socket, as the core and the host
/// door both do: `[routing id, body]` from a DEALER, `[routing id, empty, body]`
/// from a REQ (the easiest socket for a tool in another language).

#include <zmq.hpp>

#include <optional>
#include <string>

namespace gecko::core {

struct RouterRequest {
    std::string route;        ///< the ROUTER's routing id of the sender
    bool req_envelope = false;  ///< it came from a REQ socket: answer with the empty delimiter
    std::optional<zmq::message_t> body;  ///< nullopt: not one frame after the envelope (malformed)
    std::string peer_address;  ///< "Peer-Address" metadata (tcp: the remote IP), may be empty
};

/// Takes the next request without blocking; false when none is waiting.
/// Extra frames of an over-long message are read and dropped.
inline bool next_request(zmq::socket_t& router, RouterRequest& out) {
    zmq::message_t first;
    if (!router.recv(first, zmq::recv_flags::dontwait)) return false;
    out.route = first.to_string();
    out.req_envelope = false;
    out.body.reset();
    out.peer_address.clear();
    zmq::message_t parts[2];
    int count = 0;
    bool more = first.more();
    while (more) {
        zmq::message_t next;
        if (!router.recv(next, zmq::recv_flags::dontwait)) break;
        more = next.more();
        if (count < 2) parts[count] = std::move(next);
        ++count;  // counts beyond 2 only make the request malformed
    }
    if (count == 1) {
        out.body = std::move(parts[0]);
    } else if (count == 2 && parts[0].size() == 0) {
        out.req_envelope = true;
        out.body = std::move(parts[1]);
    }
    if (out.body) {
        // zmq_msg_gets, not message_t::gets: that one throws when the property is absent (ipc, inproc).
        if (const char* address = zmq_msg_gets(out.body->handle(), "Peer-Address")) out.peer_address = address;
    }
    return true;
}

/// Sends `data` back to the sender of a request (never blocks; a gone peer is ignored).
inline void answer(zmq::socket_t& router, const std::string& route, bool req_envelope, const void* data,
                   std::size_t size) {
    try {
        router.send(zmq::buffer(route), zmq::send_flags::sndmore | zmq::send_flags::dontwait);
        if (req_envelope) router.send(zmq::message_t(), zmq::send_flags::sndmore | zmq::send_flags::dontwait);
        router.send(zmq::const_buffer(data, size), zmq::send_flags::dontwait);
    } catch (const zmq::error_t&) {
        // The peer went away or its queue is full: it will ask again.
    }
}

}  // namespace gecko::core
