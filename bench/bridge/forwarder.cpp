// SPDX-License-Identifier: Apache-2.0
// The baseline: the smallest WebSocket server that forwards a Gecko topic's
// bytes to browsers, as one would write it in an afternoon on the same
// library (Boost.Beast) and the same subscription (a raw Gecko subscriber):
// a client names topics in text messages; each message goes out as
// [u8 topic index][u64 receive time][msgpack], in arrival order, through an
// unbounded queue per client. No JSON, no schemas, no flow control.
#include "forwarder.hpp"

#include <gecko/node.hpp>
#include <gecko/signals.hpp>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/websocket.hpp>

#include <deque>
#include <iostream>
#include <map>
#include <memory>

namespace bench_bridge {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace websocket = beast::websocket;
using tcp = asio::ip::tcp;

namespace {

struct Forwarder;

struct Session : std::enable_shared_from_this<Session> {
    websocket::stream<beast::tcp_stream> ws;
    Forwarder& owner;
    beast::flat_buffer buffer;
    std::deque<std::shared_ptr<const std::string>> queue;
    std::vector<gecko::RawSubscriber> subscribers;
    bool open = true;
    Session(tcp::socket s, Forwarder& f) : ws(std::move(s)), owner(f) {}
    void run();
    void read();
    void push(std::shared_ptr<const std::string> frame) {
        if (!open) return;
        queue.push_back(std::move(frame));
        if (queue.size() == 1) write();
    }
    void write() {
        ws.binary(true);
        ws.async_write(asio::buffer(*queue.front()), [self = shared_from_this()](beast::error_code ec, std::size_t) {
            self->queue.pop_front();
            if (ec) {
                self->open = false;
                self->queue.clear();
                return;
            }
            if (!self->queue.empty()) self->write();
        });
    }
};

struct Forwarder {
    asio::io_context& io;
    gecko::Node& node;
    tcp::acceptor acceptor;
    Forwarder(asio::io_context& i, gecko::Node& n) : io(i), node(n), acceptor(i, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0)) {}
    void accept() {
        acceptor.async_accept([this](beast::error_code ec, tcp::socket s) {
            if (ec) return;
            s.set_option(tcp::no_delay(true));
            std::make_shared<Session>(std::move(s), *this)->run();
            accept();
        });
    }
};

void Session::run() {
    ws.set_option(websocket::stream_base::decorator([](websocket::response_type& res) {
        res.set(beast::http::field::sec_websocket_protocol, "foxglove.websocket.v1");
    }));
    ws.auto_fragment(false);
    ws.async_accept([self = shared_from_this()](beast::error_code ec) {
        if (!ec) self->read();
    });
}

void Session::read() {
    ws.async_read(buffer, [self = shared_from_this()](beast::error_code ec, std::size_t) {
        if (ec) {
            self->open = false;
            self->subscribers.clear();
            return;
        }
        const std::string topic = beast::buffers_to_string(self->buffer.data());
        self->buffer.consume(self->buffer.size());
        const auto index = static_cast<std::uint8_t>(self->subscribers.size());
        std::weak_ptr<Session> weak = self;
        gecko::SubscriberOptions o;
        o.depth = 64;
        self->subscribers.push_back(self->owner.node.raw_subscriber(topic, o, [weak, index, &io = self->owner.io](const gecko::RawView& v) {
            auto frame = std::make_shared<std::string>(9 + v.size, '\0');
            (*frame)[0] = static_cast<char>(index);
            const auto t = static_cast<std::uint64_t>(v.info.receive_time_ns);
            for (int i = 0; i < 8; ++i) (*frame)[1 + i] = static_cast<char>(t >> (8 * i));
            std::memcpy(frame->data() + 9, v.payload, v.size);
            asio::post(io, [weak, frame = std::shared_ptr<const std::string>(std::move(frame))] {
                if (auto s = weak.lock()) s->push(frame);
            });
        }));
        self->read();
    });
}

}  // namespace

int run_forwarder(const gecko::NodeOptions& options) {
    // The node outlives the io_context: the sessions its handlers still hold
    // own raw subscribers, which end before their node does.
    gecko::Node node(options);
    asio::io_context io(1);
    node.spin_in_background();
    Forwarder f(io, node);
    f.accept();
    std::cout << "forwarder: serving ws://127.0.0.1:" << f.acceptor.local_endpoint().port() << "/" << std::endl;
    asio::signal_set signals(io, SIGINT, SIGTERM);
    signals.async_wait([&](const beast::error_code&, int) { io.stop(); });
    io.run();
    node.stop_spinning();  // no callback posts to the io_context while it goes
    return 0;
}

}  // namespace bench_bridge
