// SPDX-License-Identifier: Apache-2.0
// click_gateway/src/rep_loop.hpp: exactly one reply per request, over real sockets.
#include "gecko/click_gateway/rep_loop.hpp"
#include "gecko/click_gateway/translate.hpp"

#include "click.pb.h"

#include <catch2/catch.hpp>

#include <atomic>
#include <exception>
#include <functional>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>

namespace mc = gecko::msgs::click;
namespace pb = click::protobuf;

namespace {

using Handler = std::function<std::string(std::string_view)>;

// Runs serve_click_rep on its own thread until destroyed (or stop()), and gives the
// test a REQ client with a bounded receive timeout: a missing reply fails the test
// instead of hanging it.
struct RepFixture {
    zmq::context_t context;
    std::atomic<bool> running{true};
    gecko::click::RepLoopStats stats;
    std::exception_ptr failure;
    std::thread server;
    zmq::socket_t client{context, zmq::socket_type::req};

    RepFixture(const std::string& endpoint, Handler handler) {
        server = std::thread([this, endpoint, handler = std::move(handler)] {
            try {
                stats = gecko::click::serve_click_rep(context, endpoint, handler, [this] { return running.load(); });
            } catch (...) {
                failure = std::current_exception();
            }
        });
        client.set(zmq::sockopt::rcvtimeo, 5000);
        client.set(zmq::sockopt::sndtimeo, 5000);
        client.set(zmq::sockopt::linger, 0);
        client.connect(endpoint);
    }

    ~RepFixture() { stop(); }

    void stop() {
        running = false;
        if (server.joinable()) server.join();
    }

    // Sends one request (one or more frames) and returns the one reply.
    std::string ask(const std::vector<std::string>& frames) {
        for (std::size_t i = 0; i < frames.size(); ++i) {
            const auto flags = i + 1 < frames.size() ? zmq::send_flags::sndmore : zmq::send_flags::none;
            REQUIRE(client.send(zmq::buffer(frames[i]), flags));
        }
        zmq::message_t reply;
        const auto received = client.recv(reply);
        REQUIRE(received.has_value());  // no reply within the timeout would hang a real Click client
        CHECK_FALSE(reply.more());      // one frame
        return reply.to_string();
    }
    std::string ask(const std::string& request) { return ask(std::vector<std::string>{request}); }
};

// A thread that is stopped (`running` set false) and joined when the scope
// ends, however it ends: a failing REQUIRE throws past it, and a joinable
// std::thread destroyed on the way would call std::terminate.
struct JoiningThread {
    std::atomic<bool>& running;
    std::thread thread;

    template <class F>
    JoiningThread(std::atomic<bool>& r, F&& body) : running(r), thread(std::forward<F>(body)) {}
    ~JoiningThread() { join(); }
    void join() {
        running = false;
        if (thread.joinable()) thread.join();
    }
    JoiningThread(const JoiningThread&) = delete;
    JoiningThread& operator=(const JoiningThread&) = delete;
};

pb::MessageType type_of(const std::string& reply) {
    pb::Message m;
    REQUIRE(m.ParseFromString(reply));
    return m.messagetype();
}

std::string error_text(const std::string& reply) {
    pb::ErrorMessage m;
    REQUIRE(m.ParseFromString(reply));
    REQUIRE(m.messagetype() == pb::ErrorMessageType);
    return m.errormessage();
}

// Answers HandshakeInit with a Handshake, Control and SensorRequest with a Sensor.
gecko::click::ServerAnswer tiny_server(const gecko::click::ClientRequest& request) {
    if (std::holds_alternative<mc::HandshakeInit>(request)) {
        mc::Handshake h;
        h.objects["robot"].controls_in_order = {"j1"};
        h.objects["robot"].control_types_in_order = {mc::ValueType::angle};
        return h;
    }
    if (std::holds_alternative<mc::Reset>(request)) return mc::Reset{};
    if (std::holds_alternative<mc::Error>(request)) return mc::Error{};
    mc::Sensor s;
    s.objects["robot"].angle_sensors = {0.5};
    return s;
}

}  // namespace

TEST_CASE("the REP loop answers every request exactly once, garbage included", "[click][rep]") {
    RepFixture f("inproc://click-rep-every-request", gecko::click::make_click_handler(tiny_server));

    CHECK(type_of(f.ask("")) == pb::HandshakeMessageType);  // empty frame: HandshakeInit
    CHECK_THAT(error_text(f.ask(std::string("\xff\xff\xff\xff", 4))), Catch::Contains("malformed"));
    CHECK_THAT(error_text(f.ask(std::vector<std::string>{"a", "b"})), Catch::Contains("one frame"));

    pb::ControlMessage both;
    both.set_messagetype(pb::ControlMessageType);
    (*both.mutable_objects())["robot"].add_values(1.0);
    (*both.mutable_objects())["robot"].add_angles(1.0);
    CHECK_THAT(error_text(f.ask(both.SerializeAsString())), Catch::Contains("values") && Catch::Contains("angles"));

    pb::ControlMessage control;
    control.set_messagetype(pb::ControlMessageType);
    (*control.mutable_objects())["robot"].add_values(1.0);
    CHECK(type_of(f.ask(control.SerializeAsString())) == pb::SensorMessageType);

    // After the client's ErrorMessage, the socket still replies.
    pb::ErrorMessage bye;
    bye.set_messagetype(pb::ErrorMessageType);
    CHECK(type_of(f.ask(bye.SerializeAsString())) == pb::ErrorMessageType);
    CHECK(type_of(f.ask(control.SerializeAsString())) == pb::SensorMessageType);

    f.stop();
    REQUIRE_FALSE(f.failure);
    CHECK(f.stats.requests == 7);
    CHECK(f.stats.error_replies == 1);  // the multipart one; the others came from the handler
}

TEST_CASE("the REP loop replies with an ErrorMessage when the handler throws or returns nothing", "[click][rep]") {
    int calls = 0;
    RepFixture f("inproc://click-rep-bad-handler", [&calls](std::string_view request) -> std::string {
        ++calls;
        if (request == "throw") throw std::runtime_error("handler blew up");
        if (request == "throw-int") throw 42;
        if (request == "empty") return std::string();
        return gecko::click::error_reply("fine");
    });

    CHECK_THAT(error_text(f.ask("throw")), Catch::Contains("handler blew up"));
    CHECK_THAT(error_text(f.ask("throw-int")), Catch::Contains("failed"));
    CHECK_THAT(error_text(f.ask("empty")), Catch::Contains("empty reply"));
    CHECK(error_text(f.ask("ok")) == "fine");

    f.stop();
    REQUIRE_FALSE(f.failure);
    CHECK(calls == 4);
    CHECK(f.stats.requests == 4);
    CHECK(f.stats.error_replies == 3);
}

TEST_CASE("the REP loop refuses oversized requests with an ErrorMessage", "[click][rep]") {
    zmq::context_t context;
    zmq::socket_t rep(context, zmq::socket_type::rep);
    rep.set(zmq::sockopt::linger, 0);
    rep.bind("tcp://127.0.0.1:*");  // a real transport, as Click clients use
    const std::string endpoint = rep.get(zmq::sockopt::last_endpoint);

    std::atomic<bool> running{true};
    gecko::click::RepLoopOptions options;
    options.max_request_bytes = 16;
    options.poll_interval = std::chrono::milliseconds(10);
    gecko::click::RepLoopStats stats;
    std::exception_ptr failure;
    JoiningThread server(running, [&] {
        try {
            stats = gecko::click::serve_click_rep(
                rep, [](std::string_view) { return gecko::click::error_reply("handled"); },
                [&] { return running.load(); }, options);
        } catch (...) {
            failure = std::current_exception();  // reported on the test's thread, after the join
        }
    });

    zmq::socket_t req(context, zmq::socket_type::req);
    req.set(zmq::sockopt::rcvtimeo, 5000);
    req.set(zmq::sockopt::linger, 0);
    req.connect(endpoint);
    auto ask = [&](const std::string& request) {
        REQUIRE(req.send(zmq::buffer(request), zmq::send_flags::none));
        zmq::message_t reply;
        REQUIRE(req.recv(reply).has_value());
        return error_text(reply.to_string());
    };
    CHECK(ask("small") == "handled");
    CHECK_THAT(ask(std::string(17, 'x')), Catch::Contains("17 bytes") && Catch::Contains("16"));
    CHECK(ask("small again") == "handled");

    server.join();
    REQUIRE_FALSE(failure);
    CHECK(stats.requests == 3);
    CHECK(stats.error_replies == 1);
}

TEST_CASE("the REP loop stops when asked, with no request pending", "[click][rep]") {
    RepFixture f("inproc://click-rep-stop", gecko::click::make_click_handler(tiny_server));
    f.stop();  // returns within one poll interval
    REQUIRE_FALSE(f.failure);
    CHECK(f.stats.requests == 0);
}
