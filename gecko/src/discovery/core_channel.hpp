// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file core_channel.hpp
/// One DEALER connection to a geckocore (or to a host door), shared by the
/// nodes of this process that talk to it (internal).
///
/// A core names the session in every message it sends to one ("s"), so up to
/// `capacity` sessions ride one connection: a process with 25 nodes costs the
/// core two connections (~45 kB of ZeroMQ state each), not 25. Every member
/// has an inbox; whichever member's reactor finds messages on the socket hands
/// each to its session's inbox and wakes that member's reactor. A message that
/// names no session (a door's redirect) goes to every member: channels are
/// per endpoint *and* key, so they all asked the same question.

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <zmq.hpp>

#include "discovery/handshake_watch.hpp"
#include "gecko/net/zmq_socket.hpp"

namespace gecko::detail {

class Reactor;

class CoreChannel {
public:
    /// Where one member's messages wait for its reactor.
    struct Inbox {
        explicit Inbox(Reactor* r) : reactor(r) {}
        std::mutex mutex;
        std::deque<zmq::message_t> messages;
        Reactor* const reactor;  // woken when a message for it is routed on another thread
    };

    /// Sessions per connection: geckocore's default --max-sessions-per-connection.
    static constexpr std::size_t capacity = 16;

    /// A channel to `endpoint` (for nodes of `key`) with room for `session`:
    /// one this process already has, or a new connection (always a new one
    /// when `shared` is false; such a channel is never shared either).
    /// With `curve` (a secured key) the connection is a CURVE client's,
    /// expecting the server key of the secret `core_fingerprint` names
    /// (CurveKeys::server_public_for; "": the key's own).
    /// @throws zmq::error_t when the socket cannot be made or connected.
    static std::shared_ptr<CoreChannel> join(const std::string& endpoint, const std::string& key, bool shared,
                                             std::uint64_t session, std::shared_ptr<Inbox> inbox,
                                             std::shared_ptr<const net::CurveKeys> curve = nullptr,
                                             const std::string& core_fingerprint = {});

    CoreChannel(const CoreChannel&) = delete;
    CoreChannel& operator=(const CoreChannel&) = delete;
    ~CoreChannel();

    /// Stops routing to `session`. The last member's leaving (its shared_ptr
    /// going) closes the connection.
    void leave(std::uint64_t session);
    /// Queues one message without blocking; false when it was not (no
    /// connection yet: ZMQ_IMMEDIATE, or the queue is full).
    bool send(const char* data, std::size_t size) noexcept;
    /// Reads what arrived and hands it to the members' inboxes.
    void route() noexcept;
    /// ZeroMQ's fd for the socket (edge-style: route() reads until empty).
    int fd() const;
    /// How long a message queued before the close may still leave, in ms.
    void set_linger(int ms) noexcept;
    /// Sessions riding this connection now.
    std::size_t members() const;
    /// Handshakes that failed since the last one that succeeded (the core
    /// and this process disagree on security: one has the key's secret and
    /// the other not, or they hold different secrets). A protocol or auth
    /// failure, which ZeroMQ does not retry, counts three.
    unsigned handshake_failures();

private:
    CoreChannel(std::shared_ptr<zmq::context_t> context, zmq::socket_t socket, bool shared);
    void route_locked() noexcept;

    struct Member {
        std::uint64_t session;
        std::shared_ptr<Inbox> inbox;
    };
    mutable std::mutex mutex_;
    std::shared_ptr<zmq::context_t> context_;  // outlives the socket
    zmq::socket_t socket_;
    HandshakeWatch handshakes_;  // of socket_, declared after it: it goes first
    const bool shared_;
    std::vector<Member> members_;
};

}  // namespace gecko::detail
