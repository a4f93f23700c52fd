// SPDX-License-Identifier: Apache-2.0
#include "connections.hpp"

#include <linux/tcp.h>  // tcp_info with tcpi_bytes_acked (glibc's netinet/tcp.h lacks it)
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstddef>

namespace gecko::core {
namespace {

// What ZeroMQ adds to a message on the wire: a frame header of at most 9
// bytes, and an empty delimiter frame for a REQ peer.
constexpr std::size_t framing = 11;

std::optional<std::uint64_t> bytes_acked(int fd) {
    tcp_info info{};
    socklen_t size = sizeof info;
    if (::getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &size) != 0 ||
        size < offsetof(tcp_info, tcpi_bytes_acked) + sizeof info.tcpi_bytes_acked)
        return std::nullopt;
    return info.tcpi_bytes_acked;
}

}  // namespace

void Connections::accepted(int fd, Clock::time_point now) {
    gone(fd);
    by_fd_[fd].since = now;
}

void Connections::gone(int fd) {
    const auto c = by_fd_.find(fd);
    if (c == by_fd_.end()) return;
    if (auto r = fd_of_route_.find(c->second.route); r != fd_of_route_.end() && r->second == fd) fd_of_route_.erase(r);
    by_fd_.erase(c);
}

void Connections::spoke(int fd, const std::string& route, bool carries_session, Clock::time_point now) {
    const auto it = by_fd_.find(fd);
    if (it == by_fd_.end()) return;  // not seen accepted (the monitor is late): counted from its next request
    Connection& c = it->second;
    if (c.route != route) {
        if (auto r = fd_of_route_.find(c.route); r != fd_of_route_.end() && r->second == fd) fd_of_route_.erase(r);
        c.route = route;
        fd_of_route_[route] = fd;
        if (const auto acked = bytes_acked(fd)) {
            c.accounted = true;
            c.acked_base = *acked;
            c.handed = 0;
        }
    }
    c.session = carries_session;
    if (carries_session) c.since = now;
}

void Connections::handed(const std::string& route, std::size_t bytes) {
    const auto r = fd_of_route_.find(route);
    if (r == fd_of_route_.end()) return;
    if (auto c = by_fd_.find(r->second); c != by_fd_.end() && c->second.accounted) c->second.handed += bytes + framing;
}

std::uint64_t Connections::unread(Connection& c, int fd) {
    if (!c.accounted || c.handed == 0) return 0;
    const auto acked = bytes_acked(fd);
    if (!acked) return 0;
    const std::uint64_t received = *acked - std::min(*acked, c.acked_base);
    if (received >= c.handed) {
        // Everything read: start again from here (keeps the figures small).
        c.acked_base = *acked;
        c.handed = 0;
        return 0;
    }
    return c.handed - received;
}

std::uint64_t Connections::unread(const std::string& route) {
    const auto r = fd_of_route_.find(route);
    if (r == fd_of_route_.end()) return 0;
    const auto c = by_fd_.find(r->second);
    return c == by_fd_.end() ? 0 : unread(c->second, c->first);
}

std::uint64_t Connections::unread_total() {
    std::uint64_t total = 0;
    for (auto& [fd, c] : by_fd_) total += unread(c, fd);
    return total;
}

std::vector<int> Connections::to_close(Clock::time_point now, std::chrono::milliseconds timeout,
                                       std::size_t max_connections) {
    std::vector<std::pair<Clock::time_point, int>> idle;
    for (const auto& [fd, c] : by_fd_)
        if (!c.session) idle.emplace_back(c.since, fd);
    std::sort(idle.begin(), idle.end());
    std::size_t excess = by_fd_.size() > max_connections ? by_fd_.size() - max_connections : 0;
    std::vector<int> out;
    for (const auto& [since, fd] : idle) {
        if (excess == 0 && now - since < timeout) break;
        out.push_back(fd);
        gone(fd);
        if (excess > 0) --excess;
    }
    return out;
}

}  // namespace gecko::core
