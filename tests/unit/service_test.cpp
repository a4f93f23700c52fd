// Services: request/reply, timeouts, recovery, several clients, remote errors.

#include <catch2/catch.hpp>

#include <gecko/frame.hpp>
#include <gecko/gecko.hpp>
#include <gecko/msgs/std.hpp>

#include <zmq.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <string>
#include <thread>
#include <vector>

#include "../support/ports.hpp"
#include "test_support.hpp"

using namespace std::chrono_literals;
using gecko::msgs::Int64;
using gecko::msgs::String;

namespace {

struct Fixture {
    gecko::Node server_node = test::make_node("server");
    gecko::Node client_node = test::make_node("client");
    std::string endpoint = test::unique_inproc("svc");
    std::atomic<bool> stall{false};
    gecko::Service<Int64, Int64> service;
    gecko::Client<Int64, Int64> client;

    Fixture() {
        gecko::ServiceOptions so;
        so.endpoints = {endpoint};
        service = server_node.service<Int64, Int64>("double", [this](const Int64& x) {
            if (x.data < 0) throw std::runtime_error("negative input");
            if (stall.load()) std::this_thread::sleep_for(300ms);  // a slow handler, on purpose
            return Int64{2 * x.data};
        }, so);
        server_node.spin_in_background();
        gecko::ClientOptions co;
        co.endpoints = {endpoint};
        client = client_node.client<Int64, Int64>("double", co);
        REQUIRE(client.wait_for_server(2s));
    }
};

}  // namespace

TEST_CASE("a client gets the reply to its request", "[service]") {
    Fixture f;
    for (int i = 0; i < 20; ++i) CHECK(f.client.call(Int64{i}, 1s).data == 2 * i);
    CHECK(f.service.requests() == 20);
}

TEST_CASE("a handler that throws sends the caller an error naming the reason", "[service]") {
    Fixture f;
    try {
        f.client.call(Int64{-1}, 1s);
        FAIL("expected an error");
    } catch (const gecko::Error& e) {
        CHECK(e.code() == gecko::Errc::remote);
        CHECK(std::string(e.what()).find("negative input") != std::string::npos);
    }
    CHECK(f.client.call(Int64{3}, 1s).data == 6);  // and the service goes on
}

TEST_CASE("a call times out, and the late reply does not confuse the next call", "[service]") {
    Fixture f;
    f.stall = true;
    CHECK_THROWS_MATCHES(f.client.call(Int64{1}, 50ms), gecko::Error,
                         Catch::Matchers::Predicate<gecko::Error>([](const gecko::Error& e) {
                             return e.code() == gecko::Errc::timeout;
                         }));
    f.stall = false;
    // The reply to 1 (=2) arrives late; the next call must return 2*7.
    CHECK(f.client.call(Int64{7}, 2s).data == 14);
}

TEST_CASE("a call with no server fails fast with no_peer", "[service]") {
    auto node = test::make_node("lonely");
    gecko::ClientOptions co;
    co.endpoints = {"tcp://127.0.0.1:1"};  // nobody listens there
    auto client = node.client<Int64, Int64>("nobody", co);
    try {
        client.call(Int64{1}, 100ms);
        FAIL("expected an error");
    } catch (const gecko::Error& e) {
        CHECK(e.code() == gecko::Errc::no_peer);
        CHECK(std::string(e.what()).find("nobody") != std::string::npos);
    }
}

TEST_CASE("a client recovers when its server dies and another takes its place", "[service]") {
    auto client_node = test::make_node("recover-client");
    gecko::Client<Int64, Int64> client;
    gecko::ServiceOptions so;
    {
        // The first server binds a port the kernel picks; the second binds the
        // same port once the first has let it go. In between, the kernel could
        // in principle hand that port to another process's bind(0) (it picks at
        // random among ~28,000): vanishingly rare, and then the second bind
        // fails with its reason, never silently.
        so.endpoints = {"tcp://127.0.0.1:*"};
        auto node = test::make_node("server-1");
        auto service = node.service<Int64, Int64>("inc", [](const Int64& x) { return Int64{x.data + 1}; }, so);
        so.endpoints = {gecko::test::tcp_endpoint_in(service.endpoints())};
        gecko::ClientOptions co;
        co.endpoints = so.endpoints;
        client = client_node.client<Int64, Int64>("inc", co);
        node.spin_in_background();
        REQUIRE(client.wait_for_server(2s));
        CHECK(client.call(Int64{1}, 1s).data == 2);
    }
    CHECK_THROWS_AS(client.call(Int64{1}, 100ms), gecko::Error);  // dead server: fails, does not hang
    INFO("the second server binds " << so.endpoints.front());
    auto node = test::make_node("server-2");
    auto service = node.service<Int64, Int64>("inc", [](const Int64& x) { return Int64{x.data + 10}; }, so);
    node.spin_in_background();
    REQUIRE(client.wait_for_server(5s));
    CHECK(client.call(Int64{1}, 1s).data == 11);
}

TEST_CASE("several clients share one service", "[service]") {
    Fixture f;
    gecko::ClientOptions co;
    co.endpoints = {f.endpoint};
    auto second = f.client_node.client<Int64, Int64>("double", co);
    REQUIRE(second.wait_for_server(2s));
    // Catch2 v2 assertions are not thread-safe: the second thread only records
    // what it got, and the test's thread checks it after the join.
    std::vector<std::int64_t> replies;
    std::string failure;
    std::thread other([&] {
        try {
            for (int i = 0; i < 50; ++i) replies.push_back(second.call(Int64{i}, 2s).data);
        } catch (const std::exception& e) {
            failure = e.what();
        }
    });
    struct Join {
        std::thread& t;
        ~Join() {
            if (t.joinable()) t.join();
        }
    } join_other{other};  // joined even if a call below throws
    for (int i = 0; i < 50; ++i) CHECK(f.client.call(Int64{100 + i}, 2s).data == 2 * (100 + i));
    other.join();
    INFO("the second client's failure: " << failure);
    CHECK(failure.empty());
    REQUIRE(replies.size() == 50);
    for (int i = 0; i < 50; ++i) CHECK(replies[static_cast<std::size_t>(i)] == 2 * i);
    CHECK(f.service.requests() == 100);
}

TEST_CASE("a request of the wrong type gets an error naming both types", "[service][types]") {
    Fixture f;
    gecko::ClientOptions co;
    co.endpoints = {f.endpoint};
    auto wrong = f.client_node.client<String, Int64>("double", co);
    REQUIRE(wrong.wait_for_server(2s));
    try {
        wrong.call(String{"hi"}, 1s);
        FAIL("expected an error");
    } catch (const gecko::Error& e) {
        CHECK(e.code() == gecko::Errc::remote);
        const std::string what = e.what();
        CHECK(what.find("gecko.msgs.Int64") != std::string::npos);
        CHECK(what.find("gecko.msgs.String") != std::string::npos);
    }
}

TEST_CASE("a malformed request is answered with an error for its call, not left to time out", "[service][bad_input]") {
    auto node = test::make_node("svc-raw");
    const gecko::test::TempDir dir;  // a directory of this test's own, not /tmp itself
    const std::string endpoint = dir.ipc("svc");
    gecko::ServiceOptions so;
    so.endpoints = {endpoint};
    auto service = node.service<Int64, Int64>("double", [](const Int64& x) { return Int64{2 * x.data}; }, so);
    node.spin_in_background();

    // A foreign client: a DEALER sending a frame whose flags this build does not know.
    zmq::context_t context;
    zmq::socket_t dealer(context, zmq::socket_type::dealer);
    dealer.set(zmq::sockopt::linger, 0);
    dealer.set(zmq::sockopt::rcvtimeo, 5000);
    dealer.connect(endpoint);
    std::vector<std::uint8_t> request(gecko::frame_header_size("gecko.msgs.Int64"));
    gecko::FrameHeader h;
    h.type_name = "gecko.msgs.Int64";
    h.sequence = 77;
    gecko::write_frame_header(request.data(), h);
    request[3] = 0x80;
    dealer.send(zmq::buffer(request), zmq::send_flags::none);

    zmq::message_t reply;
    REQUIRE(dealer.recv(reply));
    gecko::FrameView view;
    REQUIRE(gecko::parse_frame(static_cast<const std::uint8_t*>(reply.data()), reply.size(), 1 << 20, view) ==
            gecko::FrameError::none);
    CHECK(view.header.sequence == 77);
    CHECK((view.header.flags & gecko::frame_flags::error) != 0);
    CHECK(service.rejected() == 1);
    node.stop_spinning();
}
