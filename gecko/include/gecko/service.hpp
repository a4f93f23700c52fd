#pragma once
/// @file service.hpp
/// Typed request/reply. A server answers each request from Node::spin(); a
/// client's call() always returns or throws within its timeout, and a lost
/// reply or a dead server never wedges it.
///
/// **Example**:
/// ```
/// auto add = node.service<AddRequest, AddReply>("add", [](const AddRequest& r) { return AddReply{r.a + r.b}; });
/// auto client = other.client<AddRequest, AddReply>("add");
/// AddReply sum = client.call({1, 2}, std::chrono::milliseconds(500));
/// ```

#include <chrono>
#include <string>
#include <utility>

#include "gecko/codec.hpp"
#include "gecko/raw_publisher.hpp"
#include "gecko/raw_service.hpp"

namespace gecko {

template <class Req, class Rep>
class Service {
public:
    Service() = default;
    explicit Service(RawServer raw) : raw_(std::move(raw)) {}
    std::uint64_t requests() const { return raw_.requests(); }  ///< requests answered
    std::uint64_t rejected() const { return raw_.rejected(); }  ///< malformed or mistyped requests answered with an error
    std::uint64_t lost_replies() const { return raw_.lost_replies(); }  ///< replies whose client never became reachable
    RawServer& raw() noexcept { return raw_; }
    explicit operator bool() const noexcept { return static_cast<bool>(raw_); }

private:
    RawServer raw_;
};

template <class Req, class Rep>
class Client {
public:
    Client() = default;
    explicit Client(RawClient raw) : raw_(std::move(raw)) {}

    /// Calls the service and returns its reply.
    /// @throws gecko::Error with Errc::timeout, no_peer, remote, type_mismatch, decode or closed.
    template <class R, class P>
    Rep call(const Req& request, std::chrono::duration<R, P> timeout) {
        thread_local Buffer buffer;
        buffer.resize(RawPublisher::frame_header_room());
        codec::encode(buffer, request);
        Rep reply{};
        raw_.call(buffer, std::chrono::duration_cast<std::chrono::nanoseconds>(timeout),
                  [&](const RawView& view) { codec::decode(view.payload, view.size, reply); });
        return reply;
    }

    bool wait_for_server(std::chrono::milliseconds timeout) { return raw_.wait_for_server(timeout); }
    std::size_t server_count() const { return raw_.server_count(); }
    RawClient& raw() noexcept { return raw_; }
    explicit operator bool() const noexcept { return static_cast<bool>(raw_); }

private:
    RawClient raw_;
};

}  // namespace gecko
