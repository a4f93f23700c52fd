// SPDX-License-Identifier: Apache-2.0
#include "academy/session.hpp"

#include <boost/beast/core.hpp>
#include <boost/beast/websocket.hpp>
#include <boost/beast/websocket/ssl.hpp>

#include <deque>
#include <iostream>
#include <optional>

namespace gecko::bridge::academy {

namespace beast = boost::beast;
namespace websocket = beast::websocket;

namespace {

template <class Stream>
class Session : public Peer, public std::enable_shared_from_this<Session<Stream>> {
public:
    Session(Stream&& stream, std::shared_ptr<Academy> academy, Endpoint endpoint, SessionOptions options)
        : ws_(std::move(stream)), academy_(std::move(academy)), endpoint_(endpoint), options_(options) {}

    void run(UpgradeRequest request) {
        beast::get_lowest_layer(ws_).expires_never();
        auto timeouts = websocket::stream_base::timeout::suggested(beast::role_type::server);
        timeouts.idle_timeout = std::chrono::seconds(60);
        timeouts.keep_alive_pings = true;
        ws_.set_option(timeouts);
        ws_.set_option(websocket::stream_base::decorator([](websocket::response_type& res) {
            res.set(beast::http::field::server, "gecko-bridge");
        }));
        ws_.read_message_max(options_.max_message);
        ws_.async_accept(request, [self = this->shared_from_this()](beast::error_code ec) {
            if (ec) return;
            self->academy_->connected(self->endpoint_, self);
            self->read();
        });
    }

    void send(std::string text) override {
        if (finished_) return;
        if (queue_.size() >= options_.max_queued) {
            std::clog << "gecko-bridge: an academy page read nothing of " << queue_.size()
                      << " messages; connection closed\n";
            academy_->counters().refused_code.fetch_add(1, std::memory_order_relaxed);
            finish();
            return;
        }
        queue_.push_back(std::move(text));
        write();
    }

    void send_latest(std::string frame) override {
        if (finished_) return;
        if (latest_) academy_->counters().gui_frames_replaced.fetch_add(1, std::memory_order_relaxed);
        latest_ = std::move(frame);
        write();
    }

private:
    void read() {
        ws_.async_read(buffer_, [self = this->shared_from_this()](beast::error_code ec, std::size_t) {
            if (ec) {
                self->finish();
                return;
            }
            const auto data = self->buffer_.data();
            const std::string_view text(static_cast<const char*>(data.data()), data.size());
            if (self->ws_.got_text()) {
                self->academy_->on_text(self->endpoint_, self, text);
            } else {
                self->academy_->counters().refused_code.fetch_add(1, std::memory_order_relaxed);
                self->send(self->endpoint_ == Endpoint::manager
                               ? R"({"command": "error", "data": {"command": "", "message": "the manager speaks JSON text, not binary"}})"
                               : R"(#erro{"message": "the academy endpoints speak text messages, not binary"})");
            }
            self->buffer_.consume(self->buffer_.size());
            if (!self->finished_) self->read();
        });
    }

    void write() {
        if (writing_ || finished_) return;
        if (!queue_.empty()) {
            current_ = std::move(queue_.front());
            queue_.pop_front();
        } else if (latest_) {
            current_ = std::move(*latest_);
            latest_.reset();
        } else {
            return;
        }
        writing_ = true;
        ws_.text(true);
        ws_.async_write(boost::asio::buffer(current_), [self = this->shared_from_this()](beast::error_code ec, std::size_t) {
            self->writing_ = false;
            if (ec) {
                self->finish();
                return;
            }
            self->write();
        });
    }

    void finish() {
        if (finished_) return;
        finished_ = true;
        academy_->disconnected(endpoint_, this);
        beast::error_code ec;
        beast::get_lowest_layer(ws_).socket().close(ec);
    }

    websocket::stream<Stream> ws_;
    std::shared_ptr<Academy> academy_;
    Endpoint endpoint_;
    SessionOptions options_;
    beast::flat_buffer buffer_;
    std::deque<std::string> queue_;
    std::optional<std::string> latest_;  // the newest frame not yet written
    std::string current_;                // the message being written
    bool writing_ = false, finished_ = false;
};

}  // namespace

void accept_session(TcpStream&& stream, UpgradeRequest request, std::shared_ptr<Academy> academy,
                    Endpoint endpoint, SessionOptions options) {
    std::make_shared<Session<TcpStream>>(std::move(stream), std::move(academy), endpoint, options)
        ->run(std::move(request));
}

void accept_session(TlsStream&& stream, UpgradeRequest request,
                    std::shared_ptr<Academy> academy, Endpoint endpoint, SessionOptions options) {
    std::make_shared<Session<TlsStream>>(std::move(stream), std::move(academy), endpoint,
                                                                      options)
        ->run(std::move(request));
}

}  // namespace gecko::bridge::academy
