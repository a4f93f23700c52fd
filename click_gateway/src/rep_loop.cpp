// SPDX-License-Identifier: Apache-2.0
#include "gecko/click_gateway/rep_loop.hpp"

#include "gecko/click_gateway/translate.hpp"
#include "gecko/net/zmq_socket.hpp"

#include <cerrno>
#include <exception>
#include <utility>
#include <vector>

namespace gecko::click {

namespace {

// Receives every frame of the pending request. Returns false if nothing was
// there after all (a spurious wake-up); the REP socket then owes no reply.
bool receive_request(zmq::socket_ref rep, std::vector<zmq::message_t>& frames) {
    frames.clear();
    do {
        zmq::message_t frame;
        if (!rep.recv(frame, zmq::recv_flags::dontwait)) {
            // The frames of one message arrive together, so only the first recv can
            // come back empty-handed.
            return !frames.empty();
        }
        frames.push_back(std::move(frame));
    } while (frames.back().more());
    return true;
}

}  // namespace

RepLoopStats serve_click_rep(zmq::socket_ref rep, const std::function<std::string(std::string_view)>& handler,
                             const std::function<bool()>& keep_running, const RepLoopOptions& options) {
    RepLoopStats stats;
    std::vector<zmq::message_t> frames;
    while (keep_running()) {
        zmq::pollitem_t item{rep.handle(), 0, ZMQ_POLLIN, 0};
        try {
            zmq::poll(&item, 1, options.poll_interval);
        } catch (const zmq::error_t& e) {
            if (e.num() == EINTR) continue;  // a signal: ask keep_running() again
            throw;
        }
        if ((item.revents & ZMQ_POLLIN) == 0) continue;
        if (!receive_request(rep, frames)) continue;

        ++stats.requests;
        std::string reply;
        bool handled = false;  // true when the handler produced the reply
        if (frames.size() != 1) {
            reply = error_reply("a Click request is one frame; this one has " + std::to_string(frames.size()));
        } else if (frames.front().size() > options.max_request_bytes) {
            reply = error_reply("request of " + std::to_string(frames.front().size()) + " bytes is larger than the " +
                                std::to_string(options.max_request_bytes) + " bytes this server accepts");
        } else {
            try {
                reply = handler(std::string_view(static_cast<const char*>(frames.front().data()), frames.front().size()));
                handled = !reply.empty();
                if (!handled) {
                    reply = error_reply("the server produced an empty reply (a client would read it as a HandshakeInit)");
                }
            } catch (const std::exception& e) {
                reply = error_reply(std::string("the server failed to handle the request: ") + e.what());
            } catch (...) {
                reply = error_reply("the server failed to handle the request");
            }
        }
        if (!handled) ++stats.error_replies;
        rep.send(zmq::buffer(reply), zmq::send_flags::none);
    }
    return stats;
}

RepLoopStats serve_click_rep(zmq::context_t& context, const std::string& endpoint,
                             const std::function<std::string(std::string_view)>& handler,
                             const std::function<bool()>& keep_running, const RepLoopOptions& options) {
    zmq::socket_t rep = net::make_socket(context, zmq::socket_type::rep);
    rep.bind(endpoint);
    return serve_click_rep(rep, handler, keep_running, options);
}

}  // namespace gecko::click
