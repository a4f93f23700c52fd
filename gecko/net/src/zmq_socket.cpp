// SPDX-License-Identifier: Apache-2.0
#include "gecko/net/zmq_socket.hpp"

#include <mutex>

namespace gecko::net {

zmq::socket_t make_socket(zmq::context_t& context, zmq::socket_type type, const SocketOptions& o) {
    zmq::socket_t s(context, type);
    s.set(zmq::sockopt::linger, static_cast<int>(o.linger.count()));
    s.set(zmq::sockopt::sndhwm, o.send_queue);
    s.set(zmq::sockopt::rcvhwm, o.receive_queue);
    s.set(zmq::sockopt::maxmsgsize, o.max_message_size);
    s.set(zmq::sockopt::reconnect_ivl, static_cast<int>(o.reconnect.count()));
    s.set(zmq::sockopt::reconnect_ivl_max, static_cast<int>(o.reconnect_max.count()));
    if (o.immediate) s.set(zmq::sockopt::immediate, 1);
    if (o.xpub_verboser && type == zmq::socket_type::xpub) s.set(zmq::sockopt::xpub_verboser, 1);
    if (o.router_handover && type == zmq::socket_type::router) s.set(zmq::sockopt::router_handover, 1);
    return s;
}

std::shared_ptr<zmq::context_t> process_context() {
    static std::mutex mutex;
    static std::weak_ptr<zmq::context_t> current;
    std::lock_guard<std::mutex> lock(mutex);
    auto context = current.lock();
    if (!context) {
        context = std::make_shared<zmq::context_t>(1);
        // zmq_ctx_term waits only for sockets whose linger says so.
        context->set(zmq::ctxopt::blocky, false);
        current = context;
    }
    return context;
}

}  // namespace gecko::net
