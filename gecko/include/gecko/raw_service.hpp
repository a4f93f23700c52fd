#pragma once
/// @file raw_service.hpp
/// Untyped request/reply. Service<Req, Rep> and Client<Req, Rep> wrap these.

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "gecko/buffer.hpp"
#include "gecko/raw_subscriber.hpp"

namespace gecko {

namespace detail {
class ServerCore;
class ClientCore;
}  // namespace detail

struct ServiceOptions {
    /// Endpoints to bind; empty: automatic (ipc + tcp), as for publishers.
    std::vector<std::string> endpoints;
    std::size_t max_message_size = 64u << 20;
};

struct ClientOptions {
    /// Server endpoints to connect to in addition to what discovery finds.
    std::vector<std::string> endpoints;
    std::size_t max_message_size = 64u << 20;
};

/// A request handler: reads the request payload and appends the reply's
/// msgpack payload to `reply` (after the header room already in it). Throwing
/// sends an error reply carrying the exception's message.
using RawHandler = std::function<void(const RawView& request, Buffer& reply)>;

class RawServer {
public:
    RawServer() = default;
    explicit RawServer(std::shared_ptr<detail::ServerCore> core);
    ~RawServer();
    RawServer(RawServer&&) noexcept;
    RawServer& operator=(RawServer&&) noexcept;

    std::vector<std::string> endpoints() const;
    const std::string& name() const;
    std::uint64_t requests() const;  ///< requests answered
    std::uint64_t rejected() const;  ///< malformed or mistyped requests answered with an error
    explicit operator bool() const noexcept { return core_ != nullptr; }

private:
    std::shared_ptr<detail::ServerCore> core_;
};

class RawClient {
public:
    RawClient() = default;
    explicit RawClient(std::shared_ptr<detail::ClientCore> core);
    ~RawClient();
    RawClient(RawClient&&) noexcept;
    RawClient& operator=(RawClient&&) noexcept;

    /// Sends the request frame in `request` (header room first, then payload)
    /// and waits up to `timeout` for its reply, which is passed to `on_reply`.
    /// A reply to an earlier, timed-out call is recognised and discarded.
    /// @throws gecko::Error: Errc::no_peer (no server connected in time),
    /// Errc::timeout, Errc::remote (the handler failed), Errc::type_mismatch,
    /// Errc::decode.
    void call(Buffer& request, std::chrono::nanoseconds timeout, RawSubscriber::Visitor on_reply);

    /// Adds a server endpoint by hand.
    void connect(const std::string& endpoint);
    const std::string& name() const;
    const std::string& request_type() const;
    const std::string& reply_type() const;
    /// True once at least one server is connected.
    bool wait_for_server(std::chrono::milliseconds timeout);
    explicit operator bool() const noexcept { return core_ != nullptr; }

private:
    std::shared_ptr<detail::ClientCore> core_;
};

}  // namespace gecko
