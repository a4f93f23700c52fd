// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file zap_handler.hpp
/// The ZAP handler (ZeroMQ RFC 27) that makes CURVE authenticate: a CURVE
/// server socket asks it about each client, and it admits only a client that
/// proved the client key of the socket's domain ("gecko/" + key). Without
/// one, CURVE encrypts but admits anyone (the "Stonehouse" pattern); with
/// ZMQ_ZAP_ENFORCE_DOMAIN on (make_socket sets it) and no handler, libzmq
/// refuses every client instead.
///
///     auto keys = std::make_shared<gecko::net::CurveKeys>(...);
///     gecko::net::ZapAdmission admission(context, *keys, "geckocore");
///     // CURVE server sockets of keys->zap_domain on `context` now admit
///     // clients holding keys->client_public, while `admission` lives.
///
/// One handler per ZeroMQ context (a thread with a REP socket bound at
/// inproc://zeromq.zap.01), shared by every admission on that context: a
/// process may hold nodes of several keys. It stops, its thread joined, when
/// the last admission goes.

#include <zmq.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "gecko/net/zmq_socket.hpp"

namespace gecko::net {

/// What the process's ZAP handlers answered since it started.
struct ZapCounters {
    std::uint64_t admitted = 0;  ///< clients that proved the client key of their domain
    std::uint64_t refused = 0;   ///< anything else: another key, another mechanism, a domain nobody admits
};

/// The ZAP answers of every handler of this process so far.
ZapCounters zap_counters() noexcept;

class ZapHandler;

/// While it lives, CURVE server sockets of `keys.zap_domain` on `context`
/// admit clients that prove `keys.client_public` (or, during a rotation,
/// `keys.accepted_client_public`). Refusals are counted
/// (zap_counters) and logged under `log_name`, the first of each reason at
/// once, then at most one per 10 s, naming the peer's address.
class ZapAdmission {
public:
    /// @throws gecko::Error (Errc::security) if the handler cannot bind
    /// inproc://zeromq.zap.01 (another ZAP handler holds it on `context`) or
    /// `keys.client_public` is not a Z85 key.
    ZapAdmission(std::shared_ptr<zmq::context_t> context, const CurveKeys& keys, std::string log_name);
    ~ZapAdmission();
    ZapAdmission(const ZapAdmission&) = delete;  // hold it in a std::optional or a std::unique_ptr
    ZapAdmission& operator=(const ZapAdmission&) = delete;

private:
    std::shared_ptr<ZapHandler> handler_;
    std::string domain_;
    std::vector<std::string> client_keys_;  // 32 bytes each, as ZAP carries them
};

}  // namespace gecko::net
