// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file ports.hpp
/// Free endpoints for tests: tcp ports and ipc paths that no other test, and
/// no other program on this machine, is using.
///
/// **tcp: bind port 0 and read the port back.** No test picks a port number:
/// fixed or pid-derived ports collide with each other (ctest runs tests in
/// parallel, each in its own process) and with the ports the kernel hands out
/// to everybody else. Whoever binds, binds `tcp://127.0.0.1:*` and says which
/// port it got; the test reads it from there:
///
/// - `geckocore --listen tcp://127.0.0.1:*`: its startup line ("... listening
///   on tcp://127.0.0.1:PORT, ..."): `start_core()`, `endpoint_after()`;
/// - a Gecko publisher or service bound to `*`: `endpoints()`, `tcp_endpoint_in()`;
/// - a test's own ZeroMQ socket bound to `*`: `zmq::sockopt::last_endpoint`;
/// - `gecko-click-gateway --bind tcp://127.0.0.1:*`: its line "... Click
///   clients on ENDPOINT ...": `endpoint_after()`;
/// - `gecko_test_node pub --endpoint tcp://127.0.0.1:*`: its line "ready
///   ENDPOINT...": `endpoint_after()`.
///
/// Only a port that must be given to a program before it starts, and that it
/// cannot choose itself and report, comes from `unused_tcp_port()` (bind port
/// 0, read it, close, hand it over; see there for its small race). The one case
/// today is geckocore's host door (`--door PORT`), a well-known port that
/// several cores and nodes are told in advance. Everything else binds `*`.
///
/// **ipc: a directory of the test's own.** `TempDir` is a fresh directory
/// (mkdtemp under `$TMPDIR`, else /tmp), removed with its content when the
/// TempDir is destroyed; `ipc("name")` is an endpoint inside it, and
/// `GECKO_IPC_DIR` set to `path()` puts a node's own ipc sockets there. No test
/// builds `ipc:///tmp/...` by hand: /tmp may be shared by other runs and users.
///
/// **Example**:
/// ```
/// auto core = gecko::test::start_core(GECKOCORE_PATH, key);   // tcp://127.0.0.1:*, no multicast, no door
/// SpawnOptions env;
/// env.env = {{"GECKO_CORE", core.address()}, {"GECKO_NO_MULTICAST", "1"}};
///
/// gecko::test::TempDir dir;
/// options.endpoints = {"tcp://127.0.0.1:*", dir.ipc("numbers")};
/// auto pub = node.publisher<Int64>("numbers", options);
/// const std::string tcp = gecko::test::tcp_endpoint_in(pub.endpoints());  // port resolved
/// ```

#include "process.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

namespace gecko::test {

/// The endpoint written after `marker` in `line`, up to the next space or
/// comma: `endpoint_after("... listening on tcp://127.0.0.1:40123, no multicast", "listening on ")`
/// is "tcp://127.0.0.1:40123". nullopt if `marker` is not in `line`.
inline std::optional<std::string> endpoint_after(const std::string& line, const std::string& marker) {
    const auto at = line.find(marker);
    if (at == std::string::npos) return std::nullopt;
    const auto from = at + marker.size();
    const auto to = line.find_first_of(" ,", from);
    return line.substr(from, to == std::string::npos ? std::string::npos : to - from);
}

/// "tcp://HOST:PORT" -> "HOST:PORT" (the form GECKO_CORE takes).
inline std::string host_port(const std::string& tcp_endpoint) {
    const std::string scheme = "tcp://";
    if (tcp_endpoint.rfind(scheme, 0) != 0) throw std::invalid_argument("not a tcp endpoint: '" + tcp_endpoint + "'");
    return tcp_endpoint.substr(scheme.size());
}

/// The port of "tcp://HOST:PORT" (0 when there is none or it is `*`).
inline int port_of(const std::string& tcp_endpoint) {
    const auto colon = tcp_endpoint.rfind(':');
    if (colon == std::string::npos) return 0;
    try {
        return std::stoi(tcp_endpoint.substr(colon + 1));
    } catch (const std::exception&) {
        return 0;
    }
}

/// The first tcp endpoint of `endpoints` (e.g. a publisher's endpoints(), ports
/// resolved). Throws if there is none, naming what there was.
inline std::string tcp_endpoint_in(const std::vector<std::string>& endpoints) {
    for (const auto& e : endpoints)
        if (e.rfind("tcp://", 0) == 0) return e;
    std::string all;
    for (const auto& e : endpoints) all += (all.empty() ? "" : ", ") + e;
    throw std::runtime_error("no tcp endpoint among [" + all + "]");
}

/// A tcp port that was free a moment ago, on every address: bound (port 0, the
/// kernel picks), read back, closed, and returned. Only for a program that must
/// be told its port before it starts and cannot bind `*` and report it (e.g.
/// `geckocore --door PORT`); everything else binds `*` (see the top of this
/// file). The race: between the close and the program's bind, another process
/// can be handed the same port by the kernel. The window is the program's
/// start-up time and the kernel picks ephemeral ports at random among ~28,000,
/// so it is rare, and the program then fails to bind with its own message
/// rather than silently sharing the port. Throws if no socket can be bound.
inline std::uint16_t unused_tcp_port() {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_ANY);
    socklen_t len = sizeof addr;
    const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
                    ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0;
    const int error = errno;
    ::close(fd);
    if (!ok) throw std::runtime_error(std::string("cannot bind a tcp port: ") + std::strerror(error));
    return ntohs(addr.sin_port);
}

/// A geckocore on loopback, on a port the kernel picked.
struct CoreOnLoopback {
    Process proc;
    std::string endpoint;  ///< as it printed it: tcp://127.0.0.1:PORT

    /// "127.0.0.1:PORT", for GECKO_CORE.
    std::string address() const { return host_port(endpoint); }
    int port() const { return port_of(endpoint); }
};

/// Starts `geckocore --key KEY --no-multicast --door 0 --listen tcp://127.0.0.1:*`
/// (plus `extra`) and reads the port it bound from its startup line
/// ("geckocore: key 'K' instance N listening on tcp://127.0.0.1:PORT, ...").
/// Unicast only and no host door: nodes reach it through GECKO_CORE=address(),
/// and neither the multicast group nor the machine's door port (7651) is the
/// tests' to take. Throws, with its output, if it does not say it listens
/// within `timeout`.
inline CoreOnLoopback start_core(const std::string& geckocore_path, const std::string& key,
                                 const std::vector<std::string>& extra = {},
                                 std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
    std::vector<std::string> args{"--key", key, "--no-multicast", "--door", "0", "--listen", "tcp://127.0.0.1:*"};
    args.insert(args.end(), extra.begin(), extra.end());
    SpawnOptions o;
    // stderr (its log) goes to the test's own stderr: a pipe nobody reads could fill up and stall the core.
    o.stderr_mode = Stderr::inherit;
    o.unset_env = {"GECKO_KEY", "GECKO_CORE", "GECKO_MULTICAST", "GECKO_NO_MULTICAST", "GECKO_INTERFACE"};
    CoreOnLoopback core{Process::spawn(geckocore_path, args, o), {}};
    const auto line = core.proc.wait_for_line("listening on ", timeout);
    const auto endpoint = line ? endpoint_after(*line, "listening on ") : std::nullopt;
    if (!endpoint || port_of(*endpoint) == 0)
        throw std::runtime_error("geckocore did not say which port it listens on within " +
                                 std::to_string(timeout.count()) + " ms (its log is in the test's stderr); its stdout:\n" + core.proc.output());
    core.endpoint = *endpoint;
    return core;
}

/// A fresh directory of the test's own, `$TMPDIR/gecko-test-XXXXXX` (or under
/// /tmp), removed with everything in it when destroyed.
class TempDir {
public:
    TempDir() {
        const char* base = std::getenv("TMPDIR");
        std::string pattern = std::string(base && *base ? base : "/tmp") + "/gecko-test-XXXXXX";
        if (::mkdtemp(pattern.data()) == nullptr)
            throw std::runtime_error("mkdtemp " + pattern + ": " + std::strerror(errno));
        path_ = pattern;
    }
    ~TempDir() {
        std::error_code ignored;
        if (!path_.empty()) std::filesystem::remove_all(path_, ignored);
    }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;

    const std::string& path() const noexcept { return path_; }

    /// "ipc://DIR/NAME". Throws if the path does not fit a Unix socket address
    /// (107 bytes): a clear message instead of a bind error later.
    std::string ipc(const std::string& name) const {
        const std::string file = path_ + "/" + name;
        if (file.size() > 107)
            throw std::runtime_error("ipc path too long for a Unix socket (" + std::to_string(file.size()) +
                                     " > 107 bytes): " + file + " (set TMPDIR to a shorter directory)");
        return "ipc://" + file;
    }

private:
    std::string path_;
};

}  // namespace gecko::test
