// SPDX-License-Identifier: Apache-2.0
#include "server.hpp"

#include "academy/session.hpp"
#include "page.hpp"
#include "state.hpp"
#include "streams.hpp"

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <boost/beast/websocket.hpp>
#include <boost/beast/websocket/ssl.hpp>

#include <array>
#include <iostream>
#include <stdexcept>

namespace gecko::bridge {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;

bool is_loopback(const std::string& address) {
    if (address == "localhost") return true;
    boost::system::error_code ec;
    const auto a = asio::ip::make_address(address, ec);
    return !ec && a.is_loopback();
}

std::string check_exposure(const ServerOptions& o) {
    if (is_loopback(o.address) || !o.token.empty()) return "";
    return "listening on " + o.address +
           " lets other machines in: give a token (--token or GECKO_BRIDGE_TOKEN) that every client must present, "
           "or listen on 127.0.0.1";
}

namespace {

constexpr std::string_view token_cookie = "gecko_bridge_token";

// Equal without telling by its timing how much of a guess was right.
bool same_secret(std::string_view a, std::string_view b) {
    if (a.size() != b.size() || b.empty()) return false;  // the length is no secret worth hiding
    unsigned char diff = 0;
    for (std::size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
    return diff == 0;
}

int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

std::string percent_decode(std::string_view s) {
    std::string out;
    for (std::size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '%' && i + 2 < s.size() && hex_value(s[i + 1]) >= 0 && hex_value(s[i + 2]) >= 0) {
            out += static_cast<char>(hex_value(s[i + 1]) * 16 + hex_value(s[i + 2]));
            i += 2;
        } else {
            out += s[i] == '+' ? ' ' : s[i];
        }
    }
    return out;
}

// The value of `name` in a query string ("a=1&token=x"), if there.
std::optional<std::string> query_value(std::string_view target, std::string_view name) {
    const auto q = target.find('?');
    if (q == std::string_view::npos) return std::nullopt;
    std::string_view rest = target.substr(q + 1);
    while (!rest.empty()) {
        const auto amp = rest.find('&');
        const auto pair = rest.substr(0, amp);
        const auto eq = pair.find('=');
        if (pair.substr(0, eq) == name) return percent_decode(eq == std::string_view::npos ? "" : pair.substr(eq + 1));
        if (amp == std::string_view::npos) break;
        rest.remove_prefix(amp + 1);
    }
    return std::nullopt;
}

std::optional<std::string> cookie_value(std::string_view cookies, std::string_view name) {
    while (!cookies.empty()) {
        const auto semi = cookies.find(';');
        auto pair = cookies.substr(0, semi);
        while (!pair.empty() && pair.front() == ' ') pair.remove_prefix(1);
        const auto eq = pair.find('=');
        if (eq != std::string_view::npos && pair.substr(0, eq) == name) return std::string(pair.substr(eq + 1));
        if (semi == std::string_view::npos) break;
        cookies.remove_prefix(semi + 1);
    }
    return std::nullopt;
}

using Request = http::request<http::string_body>;

std::string_view view(beast::string_view s) { return {s.data(), s.size()}; }

}  // namespace

struct Server::Impl : std::enable_shared_from_this<Server::Impl> {
    asio::io_context& io;
    std::shared_ptr<Bridge> bridge;
    ServerOptions options;
    TcpAcceptor acceptor;
    std::optional<ssl::context> tls;
    std::string www;
    std::shared_ptr<academy::Academy> academy;  // null: no academy endpoints
    std::optional<academy::Endpoint> academy_only;  // every upgrade goes to this endpoint

    Impl(asio::io_context& io_, std::shared_ptr<Bridge> bridge_, ServerOptions options_)
        : io(io_), bridge(std::move(bridge_)), options(std::move(options_)), acceptor(io_.get_executor()) {}

    void accept();

    // Whether `req` carries the token (always true without one).
    bool authorised(const Request& req) const {
        if (options.token.empty()) return true;
        if (auto t = query_value(view(req.target()), "token"); t && same_secret(*t, options.token)) return true;
        if (const auto a = req.find(http::field::authorization); a != req.end()) {
            const auto value = view(a->value());
            if (value.rfind("Bearer ", 0) == 0 && same_secret(value.substr(7), options.token)) return true;
        }
        if (const auto c = req.find(http::field::cookie); c != req.end())
            if (auto t = cookie_value(view(c->value()), token_cookie); t && same_secret(*t, options.token)) return true;
        return false;
    }

    // "" if a browser page at this Origin may connect, else why not.
    std::string origin_refusal(const Request& req) const {
        const auto o = req.find(http::field::origin);
        if (o == req.end()) return "";  // not a browser page: programs send no Origin
        const std::string origin(view(o->value()));
        const auto h = req.find(http::field::host);
        const std::string host = h == req.end() ? "" : std::string(view(h->value()));
        if (origin == "http://" + host || origin == "https://" + host) return "";  // the bridge's own page
        for (const auto& allowed : options.allow_origins)
            if (allowed == "*" || allowed == origin) return "";
        return "a web page from " + origin + " may not connect (only the bridge's own page may; gecko-bridge "
               "--allow-origin " + origin + " admits it)";
    }
};

namespace {

template <class Stream>
void close_lowest(Stream& s) {
    beast::error_code ec;
    beast::get_lowest_layer(s).socket().shutdown(tcp::socket::shutdown_both, ec);
    beast::get_lowest_layer(s).close();
}

// ---------------------------------------------------------------- WebSocket

template <class Stream>
class WsSession : public Connection, public std::enable_shared_from_this<WsSession<Stream>> {
public:
    WsSession(Stream&& stream, std::shared_ptr<Server::Impl> server, std::string subprotocol)
        : ws_(std::move(stream)), server_(std::move(server)), subprotocol_(std::move(subprotocol)),
          write_timer_(ws_.get_executor()) {}

    void run(Request req) {
        beast::error_code ec;
        const auto endpoint = beast::get_lowest_layer(ws_).socket().remote_endpoint(ec);
        remote_ = ec ? "?" : endpoint.address().to_string() + ":" + std::to_string(endpoint.port());
        beast::get_lowest_layer(ws_).socket().set_option(tcp::no_delay(true), ec);
        beast::get_lowest_layer(ws_).expires_never();
        auto timeouts = websocket::stream_base::timeout::suggested(beast::role_type::server);
        timeouts.idle_timeout = std::chrono::seconds(60);  // pinged at half of it; a peer that never answers goes
        timeouts.keep_alive_pings = true;
        ws_.set_option(timeouts);
        ws_.set_option(websocket::stream_base::decorator([p = subprotocol_](websocket::response_type& res) {
            res.set(http::field::sec_websocket_protocol, p);
            res.set(http::field::server, "gecko-bridge");
        }));
        // The size limit is this session's (on_read), not Beast's: Beast 1.74 fails
        // an oversized message by closing the socket with the rest of it unread,
        // which resets the connection before the client reads the 1009 close.
        ws_.read_message_max(0);
        ws_.auto_fragment(false);
        ws_.async_accept(req, [self = this->shared_from_this()](beast::error_code ec) { self->on_accept(ec); });
    }

    void wake() override {
        if (writing_ || finished_ || closing_ || !client_) return;
        auto next = server_->bridge->next(*client_);
        if (!next) return;
        writing_ = true;
        current_ = std::move(next);
        ++writes_;
        arm_write_timer();
        // One buffer type and one handler for both kinds of message: each
        // distinct pair instantiates Beast's whole write path again.
        std::array<asio::const_buffer, 2> buffers;
        if (current_->control) {
            ws_.binary(current_->binary);
            buffers = {asio::buffer(current_->frame), asio::const_buffer()};
        } else {
            message_data_header(header_.data(), current_->subscription, current_->timestamp_ns);
            ws_.binary(true);
            buffers = {asio::buffer(header_), asio::buffer(*current_->payload)};
        }
        ws_.async_write(buffers, [self = this->shared_from_this()](beast::error_code ec, std::size_t n) {
            self->on_write(ec, n);
        });
    }

    void disconnect(const std::string& reason) override {
        if (closing_ || finished_) return;
        closing_ = true;
        if (client_) std::clog << "gecko-bridge: closing " << remote_ << ": " << reason << "\n";
        if (writing_) {  // a close frame would wait behind a write that may never end
            close_lowest(ws_);
            return;
        }
        // A close reason has at most 123 bytes.
        close_with({websocket::close_code::policy_error, reason.substr(0, 120)});
    }

private:
    void on_accept(beast::error_code ec) {
        if (ec) {
            server_->bridge->counters().connection_errors.fetch_add(1, std::memory_order_relaxed);
            return;
        }
        client_ = server_->bridge->connect(*this, subprotocol_, remote_);
        read();
        wake();
    }

    // A message is read in pieces, so that one larger than the limit is
    // refused once the limit is passed, never held whole.
    void read() {
        ws_.async_read_some(buffer_, read_piece,
                            [self = this->shared_from_this()](beast::error_code ec, std::size_t) { self->on_read(ec); });
    }

    void on_read(beast::error_code ec) {
        if (ec) {
            finish();
            return;
        }
        if (buffer_.size() > server_->options.max_client_message) {
            refuse_too_big();
            return;
        }
        if (!ws_.is_message_done()) {
            read();
            return;
        }
        if (client_ && !closing_) {
            const auto data = buffer_.data();
            const auto* bytes = static_cast<const std::uint8_t*>(data.data());
            if (ws_.got_text())
                server_->bridge->on_text(*client_, std::string_view(reinterpret_cast<const char*>(bytes), data.size()));
            else
                server_->bridge->on_binary(*client_, bytes, data.size());
        }
        buffer_.consume(buffer_.size());
        if (!finished_) read();
    }

    void on_write(beast::error_code ec, std::size_t bytes) {
        writing_ = false;
        write_timer_.cancel();
        if (client_) server_->bridge->sent(*client_, bytes);
        current_.reset();
        if (ec) {
            finish();
            return;
        }
        if (closing_) {
            if (!handshaking_close_) close_lowest(ws_);  // else the close goes out after this write
            return;
        }
        wake();
    }

    // Closes with 1009 through the close handshake, which reads and discards
    // the rest of the message and then the client's close.
    void refuse_too_big() {
        server_->bridge->counters().connection_errors.fetch_add(1, std::memory_order_relaxed);
        std::clog << "gecko-bridge: " << remote_ << " sent a message larger than "
                  << server_->options.max_client_message << " bytes; connection closed (1009)\n";
        buffer_.consume(buffer_.size());
        closing_ = true;
        close_with({websocket::close_code::too_big, "a message larger than " +
                                                        std::to_string(server_->options.max_client_message) +
                                                        " bytes (gecko-bridge --max-client-message)"});
    }

    // The closing handshake, from one call site: each distinct handler
    // instantiates Beast's close path again.
    void close_with(const websocket::close_reason& why) {
        handshaking_close_ = true;
        ws_.async_close(why, [self = this->shared_from_this()](beast::error_code) { self->finish(); });
    }

    // A write that has not finished after write_timeout: the peer stopped reading.
    void arm_write_timer() {
        write_timer_.expires_after(server_->options.write_timeout);
        write_timer_.async_wait([self = this->shared_from_this(), write = writes_](beast::error_code ec) {
            if (ec || !self->writing_ || self->writes_ != write || self->finished_) return;
            self->server_->bridge->counters().stalled.fetch_add(1, std::memory_order_relaxed);
            std::clog << "gecko-bridge: " << self->remote_ << " read nothing for "
                      << self->server_->options.write_timeout.count() << " s; connection closed\n";
            self->closing_ = true;
            close_lowest(self->ws_);
        });
    }

    void finish() {
        if (finished_) return;
        finished_ = true;
        write_timer_.cancel();
        if (client_) {
            auto client = std::move(client_);
            server_->bridge->disconnected(*client);
        }
        beast::error_code ec;
        beast::get_lowest_layer(ws_).socket().close(ec);
    }

    websocket::stream<Stream> ws_;
    std::shared_ptr<Server::Impl> server_;
    std::string subprotocol_, remote_;
    beast::flat_buffer buffer_;
    std::shared_ptr<Client> client_;
    std::optional<Outbox::Next> current_;
    std::array<std::uint8_t, message_data_header_size> header_{};
    Timer write_timer_;
    std::uint64_t writes_ = 0;
    static constexpr std::size_t read_piece = 256 * 1024;
    bool writing_ = false, closing_ = false, finished_ = false;
    bool handshaking_close_ = false;  // async_close is under way: nothing else closes the socket
};

// ---------------------------------------------------------------- HTTP

template <class Stream>
class HttpSession : public std::enable_shared_from_this<HttpSession<Stream>> {
public:
    HttpSession(Stream&& stream, std::shared_ptr<Server::Impl> server)
        : stream_(std::move(stream)), server_(std::move(server)) {}

    void run() {
        if constexpr (std::is_same_v<Stream, TlsStream>) {
            beast::get_lowest_layer(stream_).expires_after(std::chrono::seconds(30));
            stream_.async_handshake(ssl::stream_base::server, [self = this->shared_from_this()](beast::error_code ec) {
                if (ec) {
                    self->server_->bridge->counters().connection_errors.fetch_add(1, std::memory_order_relaxed);
                    return;
                }
                self->read();
            });
        } else {
            read();
        }
    }

private:
    void read() {
        parser_.emplace();
        parser_->header_limit(16 * 1024);
        parser_->body_limit(64 * 1024);
        beast::get_lowest_layer(stream_).expires_after(std::chrono::seconds(30));
        http::async_read(stream_, buffer_, *parser_,
                         [self = this->shared_from_this()](beast::error_code ec, std::size_t) { self->on_read(ec); });
    }

    void on_read(beast::error_code ec) {
        if (ec) {
            if (ec != http::error::end_of_stream && ec != beast::error::timeout) {
                server_->bridge->counters().refused_http.fetch_add(1, std::memory_order_relaxed);
                respond(http::status::bad_request, "malformed or oversized HTTP request: " + ec.message() + "\n", false);
                return;
            }
            close_lowest(stream_);
            return;
        }
        Request req = parser_->release();
        auto& counters = server_->bridge->counters();
        if (websocket::is_upgrade(req)) {
            if (!server_->authorised(req)) {
                counters.refused_token.fetch_add(1, std::memory_order_relaxed);
                respond(http::status::unauthorized,
                        "this bridge wants a token: add ?token=... to the URL or send 'Authorization: Bearer ...'\n",
                        false);
                return;
            }
            if (const auto why = server_->origin_refusal(req); !why.empty()) {
                counters.refused_origin.fetch_add(1, std::memory_order_relaxed);
                respond(http::status::forbidden, why + "\n", false);
                return;
            }
            if (server_->academy) {
                const std::string target(view(req.target()));
                auto endpoint = server_->academy_only;
                if (!endpoint) endpoint = academy::endpoint_of_path(target.substr(0, target.find('?')));
                if (endpoint) {
                    academy::accept_session(std::move(stream_), std::move(req), server_->academy, *endpoint);
                    return;
                }
            }
            const auto offered = req.find(http::field::sec_websocket_protocol);
            const std::string chosen = offered == req.end() ? "" : choose_subprotocol(view(offered->value()));
            if (chosen.empty()) {
                counters.refused_subprotocol.fetch_add(1, std::memory_order_relaxed);
                respond(http::status::bad_request,
                        "offer the WebSocket subprotocol foxglove.websocket.v1 or foxglove.sdk.v1\n", false);
                return;
            }
            std::make_shared<WsSession<Stream>>(std::move(stream_), server_, chosen)->run(std::move(req));
            return;
        }
        serve(req);
    }

    void serve(const Request& req) {
        auto& counters = server_->bridge->counters();
        const bool keep = req.keep_alive();
        if (req.method() != http::verb::get && req.method() != http::verb::head) {
            counters.refused_http.fetch_add(1, std::memory_order_relaxed);
            respond(http::status::method_not_allowed, "only GET and HEAD\n", keep);
            return;
        }
        const std::string target(view(req.target()));
        const std::string path = target.substr(0, target.find('?'));
        const bool with_token_in_url = !server_->options.token.empty() && query_value(target, "token").has_value();
        if (!server_->authorised(req)) {
            counters.refused_token.fetch_add(1, std::memory_order_relaxed);
            respond(http::status::unauthorized, "this bridge wants a token: open the page as /?token=...\n", keep);
            return;
        }
        if (path == "/api/stats") {
            respond(http::status::ok, server_->bridge->stats_json(), keep, "application/json");
            return;
        }
        if (path == "/api/academy") {  // whether the page shows its simulation view, and for which simulation
            respond(http::status::ok, server_->academy ? server_->academy->page_json() : "{\"academy\":false}", keep,
                    "application/json");
            return;
        }
        if (path == "/api/topics") {
            server_->bridge->topics_json([self = this->shared_from_this(), keep](std::string json) {
                self->respond(http::status::ok, std::move(json), keep, "application/json");
            });
            return;
        }
        const PageFile* file = page_file(path);
        if (!file) {
            counters.refused_http.fetch_add(1, std::memory_order_relaxed);
            respond(http::status::not_found, "no such page: " + path + "\n", keep);
            return;
        }
        auto body = read_file(server_->www + "/" + file->file);
        if (!body) {
            respond(http::status::not_found,
                    file->from_npm ? "missing " + file->file + ": install the page's libraries (scripts/install-deps)\n"
                                   : "missing " + file->file + " in " + server_->www + "\n",
                    keep);
            return;
        }
        std::string cookie;
        if (with_token_in_url)  // the page's own requests (scripts, the WebSocket) carry it from here on
            cookie = std::string(token_cookie) + "=" + server_->options.token + "; Path=/; HttpOnly; SameSite=Strict";
        respond(http::status::ok, std::move(*body), keep, file->content_type, cookie, req.method() == http::verb::head);
    }

    void respond(http::status status, std::string body, bool keep, const std::string& type = "text/plain; charset=utf-8",
                 const std::string& cookie = "", bool head = false) {
        auto res = std::make_shared<http::response<http::string_body>>(status, 11);
        res->set(http::field::server, "gecko-bridge");
        res->set(http::field::content_type, type);
        res->set(http::field::cache_control, "no-store");
        res->set("X-Content-Type-Options", "nosniff");
        if (!cookie.empty()) res->set(http::field::set_cookie, cookie);
        res->keep_alive(keep);
        res->body() = head ? std::string() : std::move(body);
        res->prepare_payload();
        beast::get_lowest_layer(stream_).expires_after(std::chrono::seconds(30));
        http::async_write(stream_, *res, [self = this->shared_from_this(), res, keep](beast::error_code ec, std::size_t) {
            if (ec || !keep) {
                close_lowest(self->stream_);
                return;
            }
            self->read();
        });
    }

    Stream stream_;
    std::shared_ptr<Server::Impl> server_;
    beast::flat_buffer buffer_;
    std::optional<http::request_parser<http::string_body>> parser_;
};

}  // namespace

void Server::Impl::accept() {
    acceptor.async_accept([self = shared_from_this()](beast::error_code ec, TcpSocket socket) {
        if (ec == asio::error::operation_aborted) return;
        if (!ec) {
            TcpStream stream(std::move(socket));
            if (self->tls)
                std::make_shared<HttpSession<TlsStream>>(
                    TlsStream(std::move(stream), *self->tls), self)
                    ->run();
            else
                std::make_shared<HttpSession<TcpStream>>(std::move(stream), self)->run();
        }
        self->accept();
    });
}

Server::Server(asio::io_context& io, std::shared_ptr<Bridge> bridge, ServerOptions options)
    : impl_(std::make_shared<Impl>(io, std::move(bridge), std::move(options))) {
    auto& o = impl_->options;
    if (const auto why = check_exposure(o); !why.empty()) throw std::runtime_error(why);
    if (!o.tls_cert.empty() || !o.tls_key.empty()) {
        if (o.tls_cert.empty() || o.tls_key.empty()) throw std::runtime_error("TLS needs both --tls-cert and --tls-key");
        impl_->tls.emplace(ssl::context::tls_server);
        impl_->tls->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 | ssl::context::no_sslv3 |
                                ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1);
        boost::system::error_code ec;
        impl_->tls->use_certificate_chain_file(o.tls_cert, ec);
        if (ec) throw std::runtime_error("cannot load the TLS certificate " + o.tls_cert + ": " + ec.message());
        impl_->tls->use_private_key_file(o.tls_key, ssl::context::pem, ec);
        if (ec) throw std::runtime_error("cannot load the TLS key " + o.tls_key + ": " + ec.message());
    }
    impl_->www = o.www;
    boost::system::error_code ec;
    const auto address = asio::ip::make_address(o.address == "localhost" ? "127.0.0.1" : o.address, ec);
    if (ec) throw std::runtime_error("'" + o.address + "' is not an IP address to listen on");
    const tcp::endpoint endpoint(address, o.port);
    auto& a = impl_->acceptor;
    a.open(endpoint.protocol(), ec);
    if (!ec) a.set_option(asio::socket_base::reuse_address(true), ec);
    if (!ec) a.bind(endpoint, ec);
    if (!ec) a.listen(asio::socket_base::max_listen_connections, ec);
    if (ec)
        throw std::runtime_error("cannot listen on " + o.address + ":" + std::to_string(o.port) + ": " + ec.message());
}

Server::~Server() { stop(); }

void Server::serve_academy(std::shared_ptr<academy::Academy> academy) { impl_->academy = std::move(academy); }

void Server::serve_academy_only(std::shared_ptr<academy::Academy> academy, academy::Endpoint endpoint) {
    impl_->academy = std::move(academy);
    impl_->academy_only = endpoint;
}

void Server::start() { impl_->accept(); }

void Server::stop() {
    boost::system::error_code ec;
    impl_->acceptor.close(ec);
}

unsigned short Server::port() const noexcept {
    boost::system::error_code ec;
    return impl_->acceptor.local_endpoint(ec).port();
}

bool Server::tls() const noexcept { return impl_->tls.has_value(); }

}  // namespace gecko::bridge
