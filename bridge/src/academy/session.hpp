// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file session.hpp
/// One page on an academy endpoint: a WebSocket of text messages (no
/// subprotocol), handed over by the bridge's HTTP server once the upgrade
/// request passed its checks (token, Origin).

#include "academy/academy.hpp"
#include "streams.hpp"

#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>

#include <memory>

namespace gecko::bridge::academy {

using UpgradeRequest = boost::beast::http::request<boost::beast::http::string_body>;

struct SessionOptions {
    std::size_t max_message = 4u << 20;   ///< a larger message closes the connection (1009)
    std::size_t max_queued = 1024;        ///< messages waiting for a page that does not read; more close it
};

/// Completes the WebSocket handshake on `stream` and serves `endpoint` on it.
void accept_session(TcpStream&& stream, UpgradeRequest request, std::shared_ptr<Academy> academy,
                    Endpoint endpoint, SessionOptions options = {});
void accept_session(TlsStream&& stream, UpgradeRequest request,
                    std::shared_ptr<Academy> academy, Endpoint endpoint, SessionOptions options = {});

}  // namespace gecko::bridge::academy
