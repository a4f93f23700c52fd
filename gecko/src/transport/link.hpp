#pragma once
// The transport seam. Publishers send through an OutLink and subscribers read
// from an InLink; today both are ZeroMQ sockets (tcp, ipc, inproc, chosen from
// the endpoint). A same-host shared-memory link will implement the same two
// interfaces, negotiated through geckocore, without touching the layers above.

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <unistd.h>
#include <zmq.hpp>

#include "gecko/buffer.hpp"
#include "gecko/detail/function_ref.hpp"

namespace gecko::detail {

/// Something the executor can wait on: a ZeroMQ socket or a file descriptor.
struct PollHandle {
    void* socket = nullptr;
    int fd = -1;
};

/// zmq::poll that treats a signal (EINTR) as "nothing ready": the caller's
/// loop re-checks its deadline and ok(), so Ctrl-C never surfaces as an exception.
inline int poll_interruptible(zmq::pollitem_t* items, std::size_t count, std::chrono::milliseconds timeout) {
    try {
        return zmq::poll(items, count, timeout);
    } catch (const zmq::error_t& e) {
        if (e.num() == EINTR) return 0;
        throw;
    }
}

/// Removes the socket files of the ipc:// endpoints in `bound` (ZeroMQ leaves
/// them behind when the process exits before its context is torn down).
/// Call after closing the socket that bound them.
inline void remove_ipc_files(const std::vector<std::string>& bound) {
    for (const auto& e : bound) {
        if (e.rfind("ipc://", 0) == 0 && e.size() > 6 && e[6] != '@') ::unlink(e.c_str() + 6);
    }
}

/// One received frame; owns its bytes until destroyed.
struct InFrame {
    zmq::message_t message;
    const std::uint8_t* data() const noexcept { return static_cast<const std::uint8_t*>(message.data()); }
    std::size_t size() const noexcept { return message.size(); }
};

struct OutLinkOptions {
    int send_queue = 1000;
    std::chrono::milliseconds linger{0};
};

class OutLink {
public:
    virtual ~OutLink() = default;
    /// Endpoints bound, with wildcard ports resolved.
    virtual std::vector<std::string> endpoints() const = 0;
    /// Sends a complete frame. May take over the buffer's memory (large frames).
    /// Returns false if the frame could not be queued.
    virtual bool send(Buffer& frame) = 0;
    virtual bool send_copy(const void* data, std::size_t size) = 0;
    /// Reports subscriber announcements (subscribed = true) and departures,
    /// waiting up to `wait` for the first one.
    virtual void poll_announcements(std::chrono::milliseconds wait,
                                    FunctionRef<void(std::string_view announcement, bool subscribed)> on) = 0;
};

class InLink {
public:
    virtual ~InLink() = default;
    virtual void connect(const std::string& endpoint) = 0;
    virtual void disconnect(const std::string& endpoint) = 0;
    /// Takes the next frame if one is ready; never blocks.
    virtual bool try_receive(InFrame& frame) = 0;
    /// Waits up to `timeout` for the next frame.
    virtual bool wait_receive(InFrame& frame, std::chrono::milliseconds timeout) = 0;
    virtual PollHandle poll_handle() = 0;
};

/// Binds `endpoints` ("tcp://host:*" picks a free port).
std::unique_ptr<OutLink> make_out_link(zmq::context_t& context, const std::vector<std::string>& endpoints,
                                       const OutLinkOptions& options);
/// A link that announces itself to every publisher it reaches with `announcement`.
std::unique_ptr<InLink> make_in_link(zmq::context_t& context, const std::string& announcement, int receive_queue);

/// Announcement text a subscriber sends: "\xffgecko-sub <type> <id-hex> <node>".
std::string make_announcement(std::string_view type_name, std::uint64_t subscriber_id, std::string_view node);
struct Announcement {
    std::string type_name;
    std::uint64_t subscriber_id = 0;
    std::string node;
};
/// Parses an announcement; false for anything else (plain subscriptions).
bool parse_announcement(std::string_view text, Announcement& out);

}  // namespace gecko::detail
