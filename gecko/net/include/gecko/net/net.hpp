// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file net.hpp
/// Small POSIX helpers for discovery: UDP multicast sockets, local addresses,
/// endpoint parsing. IPv4 only (multicast discovery is IPv4).

#include <netinet/in.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

namespace gecko::net {

/// gethostname(), never empty.
std::string hostname();
/// Identifies a "same host" for ipc: the kernel's boot id and this process's
/// mount namespace ("<boot_id>/mnt:[inode]"). Two processes with equal ids
/// see the same /tmp, so an ipc:// path works between them; containers that
/// share a hostname (Docker's --network host) get different ids.
/// Empty if /proc does not tell.
std::string host_id();
/// A random 64-bit id, never 0.
std::uint64_t random_id();

/// An owned file descriptor.
class Fd {
public:
    Fd() = default;
    explicit Fd(int fd) noexcept : fd_(fd) {}
    ~Fd();
    Fd(Fd&& o) noexcept : fd_(o.release()) {}
    Fd& operator=(Fd&& o) noexcept;
    Fd(const Fd&) = delete;
    Fd& operator=(const Fd&) = delete;
    int get() const noexcept { return fd_; }
    int release() noexcept { int f = fd_; fd_ = -1; return f; }
    explicit operator bool() const noexcept { return fd_ >= 0; }

private:
    int fd_ = -1;
};

/// An interface name ("eth0") or dotted IPv4 address -> its IPv4 address.
/// Empty text -> INADDR_ANY. nullopt if unknown.
std::optional<in_addr> interface_address(const std::string& iface);
std::optional<in_addr> parse_ipv4(const std::string& text);
std::string to_string(const in_addr& a);
std::string to_string(const sockaddr_in& a);  // "a.b.c.d:port"

/// A UDP socket bound to group:port (SO_REUSEADDR + SO_REUSEPORT, so any number
/// of cores and nodes on one host share it) that joined `group` on `iface`.
/// Non-blocking. On failure returns an invalid Fd and sets `error`.
Fd open_multicast_listener(const in_addr& group, std::uint16_t port, const in_addr& iface, std::string& error);
/// A non-blocking UDP socket on an ephemeral port that sends to the group
/// (IP_MULTICAST_IF = iface, TTL, LOOP on) and receives unicast replies.
Fd open_multicast_sender(const in_addr& iface, int ttl, std::string& error);
/// sendto() returning "" on success or the reason.
std::string send_to(int fd, const sockaddr_in& to, const void* data, std::size_t size);

/// The local address the kernel would use to reach `remote` (UDP connect + getsockname; nothing is sent).
std::optional<in_addr> local_address_towards(const in_addr& remote);
/// Resolves a host name or dotted address (IPv4).
std::optional<in_addr> resolve_ipv4(const std::string& host);

/// "tcp://host:port" -> host, port. False if not tcp:// or malformed.
bool split_tcp_endpoint(const std::string& endpoint, std::string& host, std::uint16_t& port);
bool is_wildcard_host(const std::string& host);
bool is_loopback(const in_addr& a);

/// A TCP connect to host:port bounded by `timeout`: "" if it connected, else
/// the reason ("connection refused", "timed out", ...). Used only to explain failures.
std::string tcp_probe(const std::string& host, std::uint16_t port, std::chrono::milliseconds timeout);

/// IPv4 TCP connections of this network namespace that are established and
/// whose local port is `port` (from /proc/net/tcp): a server's side of its
/// clients' connections. For diagnostics, benchmarks and tests.
int established_connections(std::uint16_t port);

}  // namespace gecko::net
