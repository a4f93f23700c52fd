// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file zmq_socket.hpp
/// The one place where Gecko creates ZeroMQ sockets and the process's one
/// ZeroMQ context. Every socket of every component (node ports, discovery
/// sessions, geckocore, the tools, the Click gateway) is made here with its
/// options, so that switching a transport-wide setting (CurveZMQ keys, buffer
/// sizes) is one edit. inproc:// links never run a security handshake
/// (libzmq skips it), so they stay within the process whatever the options.

#include <zmq.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

namespace gecko::net {

/// The CurveZMQ keys of a secured key (docs/SECURITY.md §3, §5), Z85 text as
/// libzmq takes it. Every process holding the key's secret derives the same.
/// During a rotation (docs/SECURITY.md §9) they also name the secret
/// accepted beside the key's own: the ZAP handler admits its client key too,
/// and a connecting socket expects its server key of a peer that uses it.
struct CurveKeys {
    std::string zap_domain;     ///< "gecko/" + key: what a listening socket asks the ZAP handler about
    std::string server_public;  ///< subkey 1's public key: what a connecting socket expects of its peer
    std::string server_secret;
    std::string client_public;  ///< subkey 2's public key: the client key the ZAP handler admits
    std::string client_secret;
    std::string fingerprint;    ///< the fingerprint of the secret these keys come from
    /// The accepted secret's fingerprint and public keys ("" outside a rotation).
    std::string accepted_fingerprint, accepted_server_public, accepted_client_public;

    /// The server key to expect of a peer whose secret has `peer_fingerprint`:
    /// the accepted secret's when it names that one, else this key's own.
    const std::string& server_public_for(const std::string& peer_fingerprint) const noexcept {
        return !accepted_fingerprint.empty() && peer_fingerprint == accepted_fingerprint ? accepted_server_public
                                                                                          : server_public;
    }
};

/// Which side of the CURVE handshake a socket takes. ZeroMQ sets it per
/// socket, not per connection: a socket only binds (server) or only connects (client).
enum class CurveRole { server, client };

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
    /// CurveZMQ (a secured key): null for a plain socket. A server socket
    /// also needs the key's ZAP admission (zap_handler.hpp) while it lives,
    /// or every handshake is refused (ZMQ_ZAP_ENFORCE_DOMAIN is on).
    std::shared_ptr<const CurveKeys> curve;
    CurveRole curve_role = CurveRole::client;  ///< with `curve`: server if the socket binds, client if it connects
    /// A client's peer's secret, by fingerprint (CurveKeys::server_public_for): "" for the key's own.
    std::string curve_peer_fingerprint;
};

/// A socket of `type` on `context` with `options` applied.
/// @throws zmq::error_t if ZeroMQ refuses (e.g. too many sockets, or CURVE
/// asked of a libzmq built without it).
zmq::socket_t make_socket(zmq::context_t& context, zmq::socket_type type, const SocketOptions& options = {});

/// The process's ZeroMQ context: one I/O thread, shared by every node of the
/// process (so inproc:// works between them). It lives while a holder does.
std::shared_ptr<zmq::context_t> process_context();

}  // namespace gecko::net
