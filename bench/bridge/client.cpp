// SPDX-License-Identifier: Apache-2.0
#include "client.hpp"

#include <gecko/time.hpp>
#include <gecko/wire/value.hpp>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/websocket.hpp>

#include <nlohmann/json.hpp>

#include <cstring>
#include <mutex>

namespace bench_bridge {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace websocket = beast::websocket;
using tcp = asio::ip::tcp;

namespace {

std::int64_t stamp_in(const std::uint8_t* p, std::size_t n, bool json) {
    if (json) {
        static const char key[] = "\"stamp_ns\":";
        const auto* end = p + std::min<std::size_t>(n, 256);
        const auto* at = std::search(p, end, key, key + sizeof key - 1);
        return at == end ? 0 : std::atoll(reinterpret_cast<const char*>(at) + sizeof key - 1);
    }
    try {
        const auto v = gecko::wire::Value::parse(p, n);
        if (auto s = v.find("stamp_ns")) return s->as_int().value_or(0);
    } catch (const std::exception&) {
    }
    return 0;
}

std::uint64_t le(const std::uint8_t* p, int bytes) {
    std::uint64_t v = 0;
    for (int i = bytes - 1; i >= 0; --i) v = v << 8 | p[i];
    return v;
}

}  // namespace

struct WsClient::Impl : std::enable_shared_from_this<WsClient::Impl> {
    WsClient& owner;
    websocket::stream<beast::tcp_stream> ws;
    int port;
    Server server;
    std::vector<Want> wants;
    beast::flat_buffer buffer;
    std::mutex mutex;
    std::vector<std::vector<Sample>> samples;
    std::vector<std::uint32_t> channels;  // bridge: the channel of each want, once advertised
    std::string error;
    std::vector<std::shared_ptr<std::string>> outgoing;

    Impl(WsClient& o, asio::io_context& io, int p, Server s, std::vector<Want> w)
        : owner(o), ws(io), port(p), server(s), wants(std::move(w)), samples(wants.size()), channels(wants.size(), 0) {}

    void fail(const std::string& what, beast::error_code ec) {
        std::lock_guard<std::mutex> lock(mutex);
        if (error.empty()) error = what + ": " + ec.message();
    }

    void start() {
        beast::error_code ec;
        beast::get_lowest_layer(ws).connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), static_cast<unsigned short>(port)), ec);
        if (ec) return fail("connect", ec);
        beast::get_lowest_layer(ws).socket().set_option(tcp::no_delay(true));
        ws.set_option(websocket::stream_base::decorator([](websocket::request_type& req) {
            req.set(beast::http::field::sec_websocket_protocol, "foxglove.websocket.v1");
        }));
        ws.read_message_max(64u << 20);
        ws.handshake("127.0.0.1:" + std::to_string(port), "/", ec);
        if (ec) return fail("handshake", ec);
        if (server == Server::forwarder) {
            for (const auto& w : wants) send(w.topic);
            owner.subscribed_.store(true);
        }
        read();
    }

    void send(std::string text) {  // writes one after another (the bench sends little)
        auto msg = std::make_shared<std::string>(std::move(text));
        outgoing.push_back(msg);
        if (outgoing.size() == 1) write_next();
    }
    void write_next() {
        ws.text(true);
        ws.async_write(asio::buffer(*outgoing.front()), [self = shared_from_this()](beast::error_code ec, std::size_t) {
            if (ec) return self->fail("write", ec);
            self->outgoing.erase(self->outgoing.begin());
            if (!self->outgoing.empty()) self->write_next();
        });
    }

    void read() {
        ws.async_read(buffer, [self = shared_from_this()](beast::error_code ec, std::size_t) {
            if (ec) return self->fail("read", ec);
            self->on_message();
            self->buffer.consume(self->buffer.size());
            self->read();
        });
    }

    void on_message() {
        const auto received = gecko::now_ns();
        const auto data = buffer.data();
        const auto* p = static_cast<const std::uint8_t*>(data.data());
        const std::size_t n = data.size();
        if (ws.got_text()) {
            if (server == Server::bridge) on_json(std::string(reinterpret_cast<const char*>(p), n));
            return;
        }
        std::size_t stream = 0;
        std::int64_t gecko_ns = 0;
        const std::uint8_t* payload = nullptr;
        std::size_t size = 0;
        if (server == Server::bridge) {
            if (n < 13 || p[0] != 0x01) return;
            stream = le(p + 1, 4) - 1;
            gecko_ns = static_cast<std::int64_t>(le(p + 5, 8));
            payload = p + 13;
            size = n - 13;
        } else {
            if (n < 9) return;
            stream = p[0];
            gecko_ns = static_cast<std::int64_t>(le(p + 1, 8));
            payload = p + 9;
            size = n - 9;
        }
        if (stream >= wants.size()) return;
        owner.counts_[stream]->fetch_add(1, std::memory_order_relaxed);
        if (!owner.recording_.load(std::memory_order_relaxed)) return;
        const auto stamp = stamp_in(payload, size, wants[stream].encoding == "json" && server == Server::bridge);
        std::lock_guard<std::mutex> lock(mutex);
        samples[stream].push_back({received, gecko_ns, stamp});
    }

    void on_json(const std::string& text) {
        const auto j = nlohmann::json::parse(text, nullptr, false);
        if (j.is_discarded() || j.value("op", "") != "advertise") return;
        nlohmann::json subs = nlohmann::json::array();
        for (const auto& ch : j["channels"])
            for (std::size_t i = 0; i < wants.size(); ++i)
                if (!channels[i] && ch["topic"] == wants[i].topic && ch["encoding"] == wants[i].encoding) {
                    channels[i] = ch["id"].get<std::uint32_t>();
                    subs.push_back({{"id", i + 1}, {"channelId", channels[i]}});
                    if (wants[i].depth) subs.back()["depth"] = wants[i].depth;
                }
        if (!subs.empty()) send(nlohmann::json{{"op", "subscribe"}, {"subscriptions", subs}}.dump());
        bool all = true;
        for (auto c : channels) all = all && c != 0;
        if (all) owner.subscribed_.store(true);
    }
};

WsClient::WsClient(asio::io_context& io, int port, Server server, std::vector<Want> wants) {
    for (std::size_t i = 0; i < wants.size(); ++i) counts_.push_back(std::make_unique<std::atomic<std::uint64_t>>(0));
    impl_ = std::make_shared<Impl>(*this, io, port, server, std::move(wants));
}

WsClient::~WsClient() {
    beast::error_code ec;
    beast::get_lowest_layer(impl_->ws).socket().close(ec);
}

void WsClient::start() {
    asio::post(impl_->ws.get_executor(), [impl = impl_] { impl->start(); });
}

std::vector<std::vector<Sample>> WsClient::take() {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    auto out = std::move(impl_->samples);
    impl_->samples.assign(out.size(), {});
    return out;
}

std::string WsClient::error() const {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    return impl_->error;
}

}  // namespace bench_bridge
