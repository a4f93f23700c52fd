// SPDX-License-Identifier: Apache-2.0
#include "gecko/net/net.hpp"

#include <arpa/inet.h>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <sstream>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <poll.h>
#include <random>
#include <sys/socket.h>
#include <unistd.h>

namespace gecko::net {

std::string hostname() {
    char buf[256] = {};
    if (::gethostname(buf, sizeof buf - 1) != 0 || buf[0] == '\0') return "localhost";
    return buf;
}

std::string host_id() {
    std::string boot;
    if (FILE* f = std::fopen("/proc/sys/kernel/random/boot_id", "r")) {
        char buf[64] = {};
        if (std::fgets(buf, sizeof buf, f)) boot = buf;
        std::fclose(f);
    }
    while (!boot.empty() && (boot.back() == '\n' || boot.back() == ' ')) boot.pop_back();
    char mnt[128] = {};
    const auto n = ::readlink("/proc/self/ns/mnt", mnt, sizeof mnt - 1);
    if (boot.empty() || n <= 0) return {};
    return boot + "/" + std::string(mnt, static_cast<std::size_t>(n));
}

std::uint64_t random_id() {
    static thread_local std::mt19937_64 gen([] {
        std::random_device rd;
        std::seed_seq seq{rd(), rd(), rd(), rd(), static_cast<unsigned>(::getpid())};
        return std::mt19937_64(seq);
    }());
    std::uint64_t v = 0;
    while (v == 0) v = gen();
    return v;
}

Fd::~Fd() {
    if (fd_ >= 0) ::close(fd_);
}

Fd& Fd::operator=(Fd&& o) noexcept {
    if (this != &o) {
        if (fd_ >= 0) ::close(fd_);
        fd_ = o.release();
    }
    return *this;
}

std::optional<in_addr> parse_ipv4(const std::string& text) {
    in_addr a{};
    if (::inet_pton(AF_INET, text.c_str(), &a) == 1) return a;
    return std::nullopt;
}

std::optional<in_addr> interface_address(const std::string& iface) {
    if (iface.empty()) {
        in_addr any{};
        any.s_addr = htonl(INADDR_ANY);
        return any;
    }
    if (auto a = parse_ipv4(iface)) return a;
    ifaddrs* list = nullptr;
    if (::getifaddrs(&list) != 0) return std::nullopt;
    std::optional<in_addr> found;
    for (ifaddrs* it = list; it; it = it->ifa_next) {
        if (it->ifa_addr && it->ifa_addr->sa_family == AF_INET && iface == it->ifa_name) {
            found = reinterpret_cast<const sockaddr_in*>(it->ifa_addr)->sin_addr;
            break;
        }
    }
    ::freeifaddrs(list);
    return found;
}

std::string to_string(const in_addr& a) {
    char buf[INET_ADDRSTRLEN] = {};
    ::inet_ntop(AF_INET, &a, buf, sizeof buf);
    return buf;
}

std::string to_string(const sockaddr_in& a) { return to_string(a.sin_addr) + ":" + std::to_string(ntohs(a.sin_port)); }

namespace {
std::string errno_text(const char* what) { return std::string(what) + ": " + std::strerror(errno); }

bool set_nonblocking(int fd) {
    const int flags = ::fcntl(fd, F_GETFL, 0);
    return flags >= 0 && ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) == 0;
}

bool set_multicast_send_options(int fd, const in_addr& iface, int ttl, std::string& error) {
    const unsigned char loop = 1;
    const unsigned char uttl = static_cast<unsigned char>(ttl < 0 ? 0 : (ttl > 255 ? 255 : ttl));
    if (::setsockopt(fd, IPPROTO_IP, IP_MULTICAST_LOOP, &loop, sizeof loop) != 0) {
        error = errno_text("IP_MULTICAST_LOOP");
        return false;
    }
    if (::setsockopt(fd, IPPROTO_IP, IP_MULTICAST_TTL, &uttl, sizeof uttl) != 0) {
        error = errno_text("IP_MULTICAST_TTL");
        return false;
    }
    if (iface.s_addr != htonl(INADDR_ANY) && ::setsockopt(fd, IPPROTO_IP, IP_MULTICAST_IF, &iface, sizeof iface) != 0) {
        error = errno_text("IP_MULTICAST_IF");
        return false;
    }
    return true;
}
}  // namespace

Fd open_multicast_listener(const in_addr& group, std::uint16_t port, const in_addr& iface, std::string& error) {
    Fd fd(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
    if (!fd) {
        error = errno_text("socket");
        return {};
    }
    const int one = 1;
    if (::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
        ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEPORT, &one, sizeof one) != 0) {
        error = errno_text("SO_REUSEADDR/SO_REUSEPORT");
        return {};
    }
    // Binding to the group address (not INADDR_ANY) keeps unrelated unicast
    // traffic to this port out of the socket.
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr = group;
    if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
        error = errno_text(("bind " + to_string(addr)).c_str());
        return {};
    }
    ip_mreq mreq{};
    mreq.imr_multiaddr = group;
    mreq.imr_interface = iface;
    if (::setsockopt(fd.get(), IPPROTO_IP, IP_ADD_MEMBERSHIP, &mreq, sizeof mreq) != 0) {
        // A host with only a loopback interface: join on lo if it is multicast-capable.
        in_addr lo{};
        lo.s_addr = htonl(INADDR_LOOPBACK);
        mreq.imr_interface = lo;
        if (iface.s_addr != htonl(INADDR_ANY) ||
            ::setsockopt(fd.get(), IPPROTO_IP, IP_ADD_MEMBERSHIP, &mreq, sizeof mreq) != 0) {
            error = errno_text(("join " + to_string(group) + " on " + to_string(iface)).c_str());
            return {};
        }
    }
    if (!set_multicast_send_options(fd.get(), iface, 1, error) || !set_nonblocking(fd.get())) {
        if (error.empty()) error = errno_text("O_NONBLOCK");
        return {};
    }
    return fd;
}

Fd open_multicast_sender(const in_addr& iface, int ttl, std::string& error) {
    Fd fd(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
    if (!fd) {
        error = errno_text("socket");
        return {};
    }
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = 0;
    addr.sin_addr.s_addr = htonl(INADDR_ANY);
    if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
        error = errno_text("bind");
        return {};
    }
    if (!set_multicast_send_options(fd.get(), iface, ttl, error)) return {};
    if (!set_nonblocking(fd.get())) {
        error = errno_text("O_NONBLOCK");
        return {};
    }
    return fd;
}

std::string send_to(int fd, const sockaddr_in& to, const void* data, std::size_t size) {
    const auto n = ::sendto(fd, data, size, MSG_NOSIGNAL, reinterpret_cast<const sockaddr*>(&to), sizeof to);
    if (n < 0) {
        if ((errno == ENETUNREACH || errno == ENODEV || errno == EADDRNOTAVAIL) && IN_MULTICAST(ntohl(to.sin_addr.s_addr))) {
            // No multicast route (loopback-only host): try the loopback interface.
            const std::string first = std::strerror(errno);
            in_addr lo{};
            lo.s_addr = htonl(INADDR_LOOPBACK);
            if (::setsockopt(fd, IPPROTO_IP, IP_MULTICAST_IF, &lo, sizeof lo) == 0 &&
                ::sendto(fd, data, size, MSG_NOSIGNAL, reinterpret_cast<const sockaddr*>(&to), sizeof to) >= 0)
                return "";
            return first;
        }
        return std::strerror(errno);
    }
    return "";
}

std::optional<in_addr> local_address_towards(const in_addr& remote) {
    Fd fd(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
    if (!fd) return std::nullopt;
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_port = htons(9);  // any port: connect() on UDP only picks a route
    to.sin_addr = remote;
    if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&to), sizeof to) != 0) return std::nullopt;
    sockaddr_in local{};
    socklen_t len = sizeof local;
    if (::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&local), &len) != 0) return std::nullopt;
    if (local.sin_addr.s_addr == htonl(INADDR_ANY)) return std::nullopt;
    return local.sin_addr;
}

std::optional<in_addr> resolve_ipv4(const std::string& host) {
    if (auto a = parse_ipv4(host)) return a;
    if (host == "localhost") return parse_ipv4("127.0.0.1");
    addrinfo hints{};
    hints.ai_family = AF_INET;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    if (::getaddrinfo(host.c_str(), nullptr, &hints, &res) != 0 || !res) return std::nullopt;
    const in_addr a = reinterpret_cast<const sockaddr_in*>(res->ai_addr)->sin_addr;
    ::freeaddrinfo(res);
    return a;
}

bool split_tcp_endpoint(const std::string& endpoint, std::string& host, std::uint16_t& port) {
    static const std::string prefix = "tcp://";
    if (endpoint.compare(0, prefix.size(), prefix) != 0) return false;
    const std::string rest = endpoint.substr(prefix.size());
    const auto colon = rest.rfind(':');
    if (colon == std::string::npos || colon == 0) return false;
    const std::string p = rest.substr(colon + 1);
    if (p.empty() || p.size() > 5 || p.find_first_not_of("0123456789") != std::string::npos) return false;
    const unsigned long v = std::stoul(p);
    if (v > 65535) return false;
    host = rest.substr(0, colon);
    port = static_cast<std::uint16_t>(v);
    return true;
}

bool is_wildcard_host(const std::string& host) { return host == "*" || host == "0.0.0.0" || host.empty(); }

bool is_loopback(const in_addr& a) { return (ntohl(a.s_addr) >> 24) == 127; }

std::string tcp_probe(const std::string& host, std::uint16_t port, std::chrono::milliseconds timeout) {
    const auto addr = resolve_ipv4(host);
    if (!addr) return "cannot resolve '" + host + "'";
    Fd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    if (!fd) return std::strerror(errno);
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_port = htons(port);
    to.sin_addr = *addr;
    if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&to), sizeof to) == 0) return "";
    if (errno != EINPROGRESS) return std::strerror(errno);
    pollfd p{fd.get(), POLLOUT, 0};
    const int n = ::poll(&p, 1, static_cast<int>(timeout.count()));
    if (n == 0) return "timed out";
    if (n < 0) return std::strerror(errno);
    int err = 0;
    socklen_t len = sizeof err;
    ::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &len);
    return err == 0 ? "" : std::strerror(err);
}

int established_connections(std::uint16_t port) {
    char suffix[8];  // the local address ends ":PPPP" (hex); state 01 is ESTABLISHED
    std::snprintf(suffix, sizeof suffix, ":%04X", static_cast<unsigned>(port));
    std::ifstream in("/proc/net/tcp");
    std::string line, slot, local, remote, state;
    std::getline(in, line);  // the header
    int n = 0;
    while (std::getline(in, line)) {
        std::istringstream fields(line);
        fields >> slot >> local >> remote >> state;
        if (local.size() > 5 && local.compare(local.size() - 5, 5, suffix) == 0 && state == "01") ++n;
    }
    return n;
}

}  // namespace gecko::net
