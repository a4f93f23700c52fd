// SPDX-License-Identifier: Apache-2.0
// CurveZMQ on sockets made by net::make_socket, and the ZAP handler that
// makes it authenticate: only a client proving the key's client key gets
// through; another key, a plain client, or no handler at all gets nothing.

#include <catch2/catch.hpp>

#include <chrono>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "gecko/net/zap_handler.hpp"
#include "gecko/net/zmq_socket.hpp"
#include "gecko/security/key_security.hpp"
#include "support/ports.hpp"

using namespace std::chrono_literals;
using gecko::net::CurveKeys;
using gecko::net::CurveRole;
using gecko::net::make_socket;
using gecko::net::SocketOptions;
using gecko::net::ZapAdmission;
using gecko::security::Secret;

namespace {

Secret secret_of(std::uint8_t first) {
    Secret::Bytes b{};
    for (std::size_t i = 0; i < b.size(); ++i) b[i] = static_cast<std::uint8_t>(first + i);
    return Secret::from_bytes(b);
}

std::shared_ptr<const CurveKeys> keys_of(const std::string& key, std::uint8_t first) {
    return std::make_shared<const CurveKeys>(gecko::security::curve_keys(key, secret_of(first)));
}

SocketOptions curve(std::shared_ptr<const CurveKeys> keys, CurveRole role) {
    SocketOptions o;
    o.curve = std::move(keys);
    o.curve_role = role;
    return o;
}

zmq::socket_t subscriber(zmq::context_t& context, const SocketOptions& o, const std::string& endpoint) {
    auto s = make_socket(context, zmq::socket_type::sub, o);
    s.set(zmq::sockopt::subscribe, "");
    s.connect(endpoint);
    return s;
}

// Publishes on `pub` until `good` has received `n` messages (bounded by
// `timeout`); meanwhile whatever `bad` receives is counted. Returns
// {received by good, received by bad}.
std::pair<int, int> publish_until(zmq::socket_t& pub, zmq::socket_t& good, zmq::socket_t* bad, int n,
                                  std::chrono::milliseconds timeout) {
    int got = 0, leaked = 0;
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (got < n && std::chrono::steady_clock::now() < deadline) {
        (void)pub.send(zmq::str_buffer("secret payload"), zmq::send_flags::dontwait);
        zmq::pollitem_t items[] = {{good.handle(), 0, ZMQ_POLLIN, 0}};
        zmq::poll(items, 1, 10ms);
        zmq::message_t m;
        while (good.recv(m, zmq::recv_flags::dontwait)) ++got;
        if (bad)
            while (bad->recv(m, zmq::recv_flags::dontwait)) ++leaked;
    }
    return {got, leaked};
}

// Waits (bounded) until the process's ZAP handlers refused more than `before`.
bool refused_more_than(std::uint64_t before, std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (gecko::net::zap_counters().refused <= before) {
        if (std::chrono::steady_clock::now() >= deadline) return false;
        std::this_thread::sleep_for(1ms);  // polling a counter another thread raises
    }
    return true;
}

}  // namespace

TEST_CASE("the key's derived CURVE keys are the documented vectors", "[security][curve]") {
    const auto k = gecko::security::curve_keys("dalek", secret_of(0));
    CHECK(k.zap_domain == "gecko/dalek");
    CHECK(k.server_public == "1LwLYiTHqqFkx<jV{cWCif^6dvOoU9oBo0>AtB9:");
    CHECK(k.client_public == "I:e!5fi00EJDgkJ@hKqo0jpX@N/1!pmCdvUt3)?j");
}

TEST_CASE("only a client proving the key's client key receives from a CURVE server socket", "[security][curve][zap]") {
    zmq::context_t context(1);
    const auto keys = keys_of("zap-test", 0);
    gecko::test::TempDir dir;
    for (const std::string& endpoint : {std::string("tcp://127.0.0.1:*"), dir.ipc("pub.sock")}) {
        INFO("bound on " << endpoint);
        ZapAdmission admission(std::shared_ptr<zmq::context_t>(&context, [](zmq::context_t*) {}), *keys, "zap-test");
        auto pub = make_socket(context, zmq::socket_type::pub, curve(keys, CurveRole::server));
        pub.bind(endpoint);
        const std::string bound = pub.get(zmq::sockopt::last_endpoint);
        auto good = subscriber(context, curve(keys, CurveRole::client), bound);

        SECTION("a client of another secret is refused by ZAP, counted, and receives nothing") {
            // It knows the server's public key (as if it had learnt it) but not the client secret.
            auto other = std::make_shared<CurveKeys>(*keys_of("zap-test", 100));
            other->server_public = keys->server_public;
            const auto before = gecko::net::zap_counters().refused;
            auto bad = subscriber(context, curve(other, CurveRole::client), bound);
            const auto [got, leaked] = publish_until(pub, good, &bad, 50, 20s);
            CHECK(got == 50);
            CHECK(refused_more_than(before, 20s));
            CHECK(leaked == 0);
        }
        SECTION("a plain client receives nothing") {
            auto bad = subscriber(context, SocketOptions{}, bound);
            const auto [got, leaked] = publish_until(pub, good, &bad, 50, 20s);
            CHECK(got == 50);
            CHECK(leaked == 0);
        }
        SECTION("a client expecting another server key receives nothing") {
            auto bad = subscriber(context, curve(keys_of("zap-test", 100), CurveRole::client), bound);
            const auto [got, leaked] = publish_until(pub, good, &bad, 50, 20s);
            CHECK(got == 50);
            CHECK(leaked == 0);
        }
    }
}

TEST_CASE("with no ZAP admission for its domain a CURVE server admits nobody", "[security][curve][zap]") {
    zmq::context_t context(1);
    const auto keys = keys_of("zap-none", 0);
    const auto other = keys_of("zap-other", 7);
    // A handler runs on this context, but for another key's domain only.
    ZapAdmission admission(std::shared_ptr<zmq::context_t>(&context, [](zmq::context_t*) {}), *other, "zap-test");
    auto pub = make_socket(context, zmq::socket_type::pub, curve(keys, CurveRole::server));
    pub.bind("tcp://127.0.0.1:*");
    const std::string bound = pub.get(zmq::sockopt::last_endpoint);
    const auto before = gecko::net::zap_counters().refused;
    auto client = subscriber(context, curve(keys, CurveRole::client), bound);
    REQUIRE(refused_more_than(before, 20s));
    // The refused client never receives, while a client of the admitted key, on the same handler, does.
    auto control_pub = make_socket(context, zmq::socket_type::pub, curve(other, CurveRole::server));
    control_pub.bind("tcp://127.0.0.1:*");
    auto control = subscriber(context, curve(other, CurveRole::client), control_pub.get(zmq::sockopt::last_endpoint));
    int got = 0, leaked = 0;
    const auto deadline = std::chrono::steady_clock::now() + 20s;
    while (got < 50 && std::chrono::steady_clock::now() < deadline) {
        (void)pub.send(zmq::str_buffer("secret payload"), zmq::send_flags::dontwait);
        (void)control_pub.send(zmq::str_buffer("payload"), zmq::send_flags::dontwait);
        zmq::pollitem_t items[] = {{control.handle(), 0, ZMQ_POLLIN, 0}};
        zmq::poll(items, 1, 10ms);
        zmq::message_t m;
        while (control.recv(m, zmq::recv_flags::dontwait)) ++got;
        while (client.recv(m, zmq::recv_flags::dontwait)) ++leaked;
    }
    CHECK(got == 50);
    CHECK(leaked == 0);
}

TEST_CASE("the ZAP handler stops with its last admission and starts again for the next", "[security][zap]") {
    zmq::context_t context(1);
    const auto keys = keys_of("zap-again", 3);
    auto no_delete = std::shared_ptr<zmq::context_t>(&context, [](zmq::context_t*) {});
    for (int round = 0; round < 3; ++round) {
        INFO("round " << round);
        std::optional<ZapAdmission> admission;
        admission.emplace(no_delete, *keys, "zap-test");
        auto pub = make_socket(context, zmq::socket_type::pub, curve(keys, CurveRole::server));
        pub.bind("tcp://127.0.0.1:*");
        auto good = subscriber(context, curve(keys, CurveRole::client), pub.get(zmq::sockopt::last_endpoint));
        CHECK(publish_until(pub, good, nullptr, 10, 20s).first == 10);
    }
}

TEST_CASE("with no ZAP handler on its context a CURVE server admits nobody (ZMQ_ZAP_ENFORCE_DOMAIN)", "[security][curve][zap]") {
    zmq::context_t context(1);
    const auto keys = keys_of("zap-nohandler", 0);
    auto pub = make_socket(context, zmq::socket_type::pub, curve(keys, CurveRole::server));
    pub.bind("tcp://127.0.0.1:*");
    auto client = make_socket(context, zmq::socket_type::sub, curve(keys, CurveRole::client));
    client.set(zmq::sockopt::subscribe, "");
    // The client's handshake fails: without the enforced domain, libzmq would
    // let it through unauthenticated (its "Stonehouse" legacy mode).
    REQUIRE(zmq_socket_monitor(client.handle(), "inproc://zap-nohandler-monitor", ZMQ_EVENT_ALL) == 0);
    zmq::socket_t monitor(context, zmq::socket_type::pair);
    monitor.set(zmq::sockopt::linger, 0);
    monitor.connect("inproc://zap-nohandler-monitor");
    client.connect(pub.get(zmq::sockopt::last_endpoint));
    bool failed = false, succeeded = false;
    int leaked = 0;
    const auto deadline = std::chrono::steady_clock::now() + 20s;
    while (!failed && !succeeded && std::chrono::steady_clock::now() < deadline) {
        (void)pub.send(zmq::str_buffer("secret payload"), zmq::send_flags::dontwait);
        zmq::pollitem_t items[] = {{monitor.handle(), 0, ZMQ_POLLIN, 0}};
        zmq::poll(items, 1, 10ms);
        zmq::message_t event, address;
        while (monitor.recv(event, zmq::recv_flags::dontwait)) {
            if (event.more()) (void)monitor.recv(address, zmq::recv_flags::none);
            std::uint16_t what = 0;
            std::memcpy(&what, event.data(), 2);
            failed |= (what & (ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL | ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL |
                               ZMQ_EVENT_HANDSHAKE_FAILED_AUTH | ZMQ_EVENT_DISCONNECTED)) != 0;
            succeeded |= (what & ZMQ_EVENT_HANDSHAKE_SUCCEEDED) != 0;
        }
        zmq::message_t m;
        while (client.recv(m, zmq::recv_flags::dontwait)) ++leaked;
    }
    zmq_socket_monitor(client.handle(), nullptr, 0);
    CHECK(failed);
    CHECK_FALSE(succeeded);
    CHECK(leaked == 0);
}
