// SPDX-License-Identifier: Apache-2.0
#include "gecko/net/zmq_socket.hpp"

#include <mutex>

namespace gecko::net {

namespace {
// ZMQ_ZAP_ENFORCE_DOMAIN: zmq.h of libzmq 4.3 lists it among the draft
// options, but the library takes it in stable builds too (Debian's 4.3.4
// does: tests/security/zap_test.cpp proves it refuses without a handler).
#ifdef ZMQ_ZAP_ENFORCE_DOMAIN
constexpr int zap_enforce_domain = ZMQ_ZAP_ENFORCE_DOMAIN;
#else
constexpr int zap_enforce_domain = 93;
#endif
}  // namespace

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
    if (o.curve) {
        const CurveKeys& k = *o.curve;
        if (o.curve_role == CurveRole::server) {
            s.set(zmq::sockopt::curve_server, 1);
            s.set(zmq::sockopt::curve_secretkey, k.server_secret);
            // Without a ZAP answer CURVE admits any client key ("Stonehouse"):
            // with the domain enforced, no handler means no connection.
            s.set(zmq::sockopt::zap_domain, k.zap_domain);
            const int on = 1;
            if (zmq_setsockopt(s.handle(), zap_enforce_domain, &on, sizeof on) != 0) throw zmq::error_t();
        } else {
            s.set(zmq::sockopt::curve_serverkey, k.server_public_for(o.curve_peer_fingerprint));
            s.set(zmq::sockopt::curve_publickey, k.client_public);
            s.set(zmq::sockopt::curve_secretkey, k.client_secret);
        }
    }
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
