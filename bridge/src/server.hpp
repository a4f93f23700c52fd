// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file server.hpp
/// The bridge's HTTP and WebSocket server on Boost.Beast: the page's files
/// and figures over HTTP, the Foxglove protocol over WebSocket (either
/// subprotocol name, echoed), optionally over TLS. Who may connect is
/// decided before the upgrade: the token (query `token=`, header
/// `Authorization: Bearer`, or the cookie the page was given) and the
/// Origin of a browser page.

#include "bridge.hpp"

#include <boost/asio/io_context.hpp>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

namespace gecko::bridge {

namespace academy {
class Academy;
enum class Endpoint;
}

struct ServerOptions {
    std::string address = "127.0.0.1";        ///< where to listen; loopback by default
    unsigned short port = 8765;               ///< 0: any free port (the bound one is port())
    std::string token;                        ///< required of every client when set
    std::string tls_cert, tls_key;            ///< PEM files: serve https/wss
    std::vector<std::string> allow_origins;   ///< web origins besides the bridge's own page ("*": any)
    std::string www;                          ///< the page's folder (page.hpp finds one when empty)
    std::size_t max_client_message = 16u << 20;   ///< a larger WebSocket message closes the connection (1009)
    std::chrono::seconds write_timeout{30};   ///< a write that makes no progress this long ends the connection
};

/// Why a listen address is refused: not loopback and no token. "" if fine.
std::string check_exposure(const ServerOptions& options);
/// True for 127.0.0.0/8, ::1 and "localhost".
bool is_loopback(const std::string& address);

class Server {
public:
    /// Binds and listens.
    /// @throws std::runtime_error naming the address, or a TLS file that does not load.
    Server(boost::asio::io_context& io, std::shared_ptr<Bridge> bridge, ServerOptions options);
    ~Server();
    Server(const Server&) = delete;
    Server& operator=(const Server&) = delete;

    /// Serves the academy's endpoints (/academy/manager, /academy/code,
    /// /academy/gui) beside the Foxglove one. Call before start().
    void serve_academy(std::shared_ptr<academy::Academy> academy);
    /// Serves one academy endpoint on every WebSocket path instead (a
    /// RoboticsAcademy port: its frontend connects to ws://HOST:PORT).
    void serve_academy_only(std::shared_ptr<academy::Academy> academy, academy::Endpoint endpoint);
    void start();
    void stop();
    unsigned short port() const noexcept;
    bool tls() const noexcept;

    struct Impl;

private:
    std::shared_ptr<Impl> impl_;
};

}  // namespace gecko::bridge
