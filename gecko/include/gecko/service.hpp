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
#include <utility>

#include "gecko/codec.hpp"
#include "gecko/frame.hpp"
#include "gecko/raw_service.hpp"

namespace gecko {

/// The name services register under for a request/reply pair of types.
template <class Req, class Rep>
std::string service_type_name() {
    return std::string(type_name_of<Req>()) + "->" + std::string(type_name_of<Rep>());
}

template <class Req, class Rep>
class Service {
public:
    Service() = default;
    explicit Service(RawServer raw) : raw_(std::move(raw)) {}
    std::vector<std::string> endpoints() const { return raw_.endpoints(); }
    std::uint64_t requests() const { return raw_.requests(); }  ///< requests answered
    std::uint64_t rejected() const { return raw_.rejected(); }  ///< malformed or mistyped requests answered with an error
    RawServer& raw() noexcept { return raw_; }

private:
    RawServer raw_;
};

template <class Req, class Rep>
class Client {
public:
    Client() = default;
    explicit Client(RawClient raw) : raw_(std::move(raw)) {}

    /// Calls the service and returns its reply.
    /// @throws gecko::Error with Errc::timeout, no_peer, remote, type_mismatch or decode.
    template <class R, class P>
    Rep call(const Req& request, std::chrono::duration<R, P> timeout) {
        thread_local Buffer buffer;
        buffer.resize(frame_header_size(type_name_of<Req>()));
        codec::encode(buffer, request);
        Rep reply{};
        raw_.call(buffer, std::chrono::duration_cast<std::chrono::nanoseconds>(timeout),
                  [&](const RawView& view) { codec::decode(view.payload, view.size, reply); });
        return reply;
    }

    bool wait_for_server(std::chrono::milliseconds timeout) { return raw_.wait_for_server(timeout); }
    void connect(const std::string& endpoint) { raw_.connect(endpoint); }
    RawClient& raw() noexcept { return raw_; }

private:
    RawClient raw_;
};

}  // namespace gecko
