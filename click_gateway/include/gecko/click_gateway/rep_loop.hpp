// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file rep_loop.hpp
/// The server side of Click's transport: one ZeroMQ REP socket that answers every
/// request with exactly one reply. A Click client's REQ socket has no receive
/// timeout, so a request left unanswered hangs the client forever; this loop
/// therefore replies to everything, with a Click ErrorMessage when the request
/// (or the handler) is at fault. Private to the gateway: it exposes ZeroMQ.

#include <zmq.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace gecko::click {

/// How serve_click_rep() behaves. Every field has a safe default.
struct RepLoopOptions {
    std::chrono::milliseconds poll_interval{50};  ///< how often keep_running() is asked while no request arrives
    /// Larger requests are answered with an ErrorMessage, not handled. (The loop
    /// reads a request whole before it sees its size: a socket that must not, as
    /// the gateway's, also sets ZMQ_MAXMSGSIZE.) A Click request is a few kB.
    std::size_t max_request_bytes{16u << 20};
};

/// What serve_click_rep() did, for logs and tests.
struct RepLoopStats {
    std::uint64_t requests{0};       ///< requests received, each answered exactly once
    std::uint64_t error_replies{0};  ///< of those, answered by the loop itself with an ErrorMessage (multipart,
                                     ///< oversized, handler threw or returned nothing)
};

/// Answers requests on an already bound (or connected) REP socket with
/// `handler(request bytes)` until `keep_running()` returns false. Every request
/// gets exactly one reply: a multipart or oversized request, an exception from the
/// handler, or an empty reply (which a client would read as a HandshakeInit) is
/// replaced by a Click ErrorMessage saying why.
/// @param rep a ZMQ_REP socket; used from the calling thread only.
/// @param handler bytes of one Click message in, bytes of the reply out (see make_click_handler()).
/// @param keep_running asked between requests and at least every `poll_interval`.
/// @return how many requests were served.
/// @throws zmq::error_t if the socket fails (e.g. its context is terminated).
RepLoopStats serve_click_rep(zmq::socket_ref rep, const std::function<std::string(std::string_view)>& handler,
                             const std::function<bool()>& keep_running, const RepLoopOptions& options = {});

/// Same, on a new REP socket of `context` bound to `endpoint` (e.g. "tcp://127.0.0.1:5555",
/// "tcp://*:5555", "ipc:///tmp/click", "inproc://click"); the socket is closed on return.
/// @throws zmq::error_t if `endpoint` cannot be bound, or the socket fails.
RepLoopStats serve_click_rep(zmq::context_t& context, const std::string& endpoint,
                             const std::function<std::string(std::string_view)>& handler,
                             const std::function<bool()>& keep_running, const RepLoopOptions& options = {});

}  // namespace gecko::click
