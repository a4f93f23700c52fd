// SPDX-License-Identifier: Apache-2.0
#pragma once
// The core's TCP connections as it sees them: when each was accepted, the
// routing id it speaks with, whether it carries a session, and how many of
// the bytes the core handed ZeroMQ for it are still unread.
//
// ZeroMQ queues a ROUTER's outgoing messages per connection, counted in
// messages, not bytes, and never tells how far a peer has read. The kernel
// does: TCP_INFO's bytes_acked is what the peer's host received. The bytes
// handed for a connection minus those acknowledged since it spoke first are
// what the core still holds for it (ZeroMQ's queue and the socket buffer),
// within a few bytes of framing per message. Over ipc the kernel says nothing
// of the kind: such connections are not accounted.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace gecko::core {

class Connections {
public:
    using Clock = std::chrono::steady_clock;

    /// ZeroMQ accepted connection `fd` / it is gone.
    void accepted(int fd, Clock::time_point now);
    void gone(int fd);
    /// A valid request arrived on `fd` from routing id `route`; `carries_session`:
    /// after it, the connection carries at least one session.
    void spoke(int fd, const std::string& route, bool carries_session, Clock::time_point now);

    /// Bytes about to be handed to ZeroMQ for `route`.
    void handed(const std::string& route, std::size_t bytes);
    /// The bytes handed for `route` that its peer has not received yet (0 if
    /// it is not an accounted connection).
    std::uint64_t unread(const std::string& route);
    /// unread() summed over every connection.
    std::uint64_t unread_total();

    /// The connections to close now: those that carry no session `timeout`
    /// after they were accepted (or last carried one), whatever they said, and
    /// the oldest of them at once past `max_connections`. They are forgotten.
    std::vector<int> to_close(Clock::time_point now, std::chrono::milliseconds timeout, std::size_t max_connections);

    std::size_t size() const noexcept { return by_fd_.size(); }

private:
    struct Connection {
        Clock::time_point since{};  // accepted, or last seen carrying a session
        std::string route;
        bool session = false;
        bool accounted = false;       // a TCP socket whose bytes_acked can be read
        std::uint64_t acked_base = 0; // bytes_acked when it first spoke
        std::uint64_t handed = 0;     // bytes handed to ZeroMQ since
    };
    std::uint64_t unread(Connection& c, int fd);

    std::map<int, Connection> by_fd_;
    std::map<std::string, int> fd_of_route_;
};

}  // namespace gecko::core
