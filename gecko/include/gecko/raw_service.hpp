#pragma once
/// @file raw_service.hpp
/// Untyped request/reply. Service<Req, Rep> and Client<Req, Rep> wrap these.
///
/// Requests and replies travel on the same links as messages: a request is a
/// frame directed at one server, its reply a frame directed back at the
/// client, matched by request id (docs/PROTOCOL.md §5).

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "gecko/buffer.hpp"
#include "gecko/raw_subscriber.hpp"

namespace gecko {

namespace detail {
class ServerImpl;
class ClientImpl;
}  // namespace detail

struct ServiceOptions {
    std::size_t max_message_size = 64u << 20;  ///< larger requests are answered with an error
    std::size_t queue = 64;                    ///< requests waiting for spin() before the oldest are refused
};

struct ClientOptions {
    std::size_t max_message_size = 64u << 20;  ///< larger replies fail the call
};

/// A request handler: reads the request payload and appends the reply's
/// msgpack payload to `reply` (after the header room already in it). Throwing
/// sends an error reply carrying the exception's message: gecko::Error with
/// Errc::decode says the request does not decode ("service 'S' could not
/// decode the request: ..."), anything else that the handler failed
/// ("service 'S' failed: ...") (docs/PROTOCOL.md §5).
using RawHandler = std::function<void(const RawView& request, Buffer& reply)>;

class RawServer {
public:
    RawServer() = default;
    explicit RawServer(std::shared_ptr<detail::ServerImpl> impl);
    ~RawServer();
    RawServer(RawServer&&) noexcept;
    RawServer& operator=(RawServer&&) noexcept;

    const std::string& name() const;
    std::uint64_t id() const;
    std::uint64_t requests() const;  ///< requests answered
    std::uint64_t rejected() const;  ///< malformed or mistyped requests answered with an error
    /// Replies dropped because their client never became reachable (it left,
    /// or its node cannot reach this one) within 5 s of the answer.
    std::uint64_t lost_replies() const;
    explicit operator bool() const noexcept { return impl_ != nullptr; }

private:
    std::shared_ptr<detail::ServerImpl> impl_;
};

class RawClient {
public:
    RawClient() = default;
    explicit RawClient(std::shared_ptr<detail::ClientImpl> impl);
    ~RawClient();
    RawClient(RawClient&&) noexcept;
    RawClient& operator=(RawClient&&) noexcept;

    /// Sends the request frame in `request` (frame_header_room() bytes, then
    /// the payload) to one server and waits up to `timeout` for its reply, which
    /// is passed to `on_reply`. A reply to an earlier, timed-out call is
    /// recognised and discarded. Calls from several threads are serialised.
    /// @throws gecko::Error: Errc::no_peer (no server: at once when discovery
    /// lists none; after `timeout` if the ones it lists never became reachable),
    /// Errc::timeout, Errc::remote (the handler failed or refused the request),
    /// Errc::type_mismatch, Errc::decode, Errc::closed.
    void call(Buffer& request, std::chrono::nanoseconds timeout, RawSubscriber::Visitor on_reply);

    const std::string& name() const;
    const std::string& request_type() const;
    const std::string& reply_type() const;
    /// True once at least one server is connected and ready for requests.
    bool wait_for_server(std::chrono::milliseconds timeout);
    /// Servers connected and ready for requests now.
    std::size_t server_count() const;
    explicit operator bool() const noexcept { return impl_ != nullptr; }

private:
    std::shared_ptr<detail::ClientImpl> impl_;
};

}  // namespace gecko
