// SPDX-License-Identifier: Apache-2.0
// The rule that holds a ZeroMQ link's queue to its byte budget (issue 25,
// item 13; gecko/src/transport/zmq_send_budget.hpp), on its own: the mark it
// gives ZeroMQ for each frame. link_budget_test.cpp measures what it does
// for real publishers and subscribers.
#include "transport/zmq_send_budget.hpp"
#include "transport/zmq_transport.hpp"

#include <catch2/catch.hpp>

#include <chrono>
#include <string>

namespace {
gecko::Buffer frame_of(std::size_t size) {
    gecko::Buffer b;
    b.write(std::string(size, 'x').data(), size);
    return b;
}
}  // namespace

TEST_CASE("the send budget's mark times the largest frame ZeroMQ holds stays within the budget", "[faults][r2.13]") {
    using gecko::detail::ZmqSendBudget;
    ZmqSendBudget budget(8u << 20, 1000);
    CHECK(budget.initial_mark() == 1000);
    // Small frames: send_queue of them fit; nothing to account for.
    CHECK(budget.mark_for(100) == 1000);
    CHECK(budget.mark_for(8000) == 1000);
    auto small = frame_of(8000);
    { auto m = budget.message(small); CHECK(budget.held() == 0); }

    // A 1 MiB frame: 7 of them (and its header) fit in 8 MiB.
    const std::size_t big = (1u << 20) + 48;
    CHECK(budget.mark_for(big) == 7);
    auto f = frame_of(big);
    auto held_big = budget.message(f);
    CHECK(budget.held() == 1);
    // While ZeroMQ holds it, small frames keep the mark down: a queue may
    // still hold 1 MiB frames.
    CHECK(budget.mark_for(100) == 7);
    // A larger one lowers it at once.
    CHECK(budget.mark_for(3u << 20) == 2);
    CHECK(budget.mark_for(64u << 20) == 1);
    // Released (sent, or dropped by every queue): back to the cap.
    held_big = zmq::message_t();
    CHECK(budget.held() == 0);
    CHECK(budget.mark_for(100) == 1000);
}

TEST_CASE("the send budget raises its mark only by a quarter or more", "[faults][r2.13]") {
    using gecko::detail::ZmqSendBudget;
    ZmqSendBudget budget(8u << 20, 1000);
    auto a = frame_of(1u << 20);
    CHECK(budget.mark_for(a.size()) == 8);
    auto held = budget.message(a);
    auto b = frame_of((1u << 20) - 64 * 1024);  // 8 would fit, not 10: the mark stays at 8
    CHECK(budget.mark_for(b.size()) == 8);
    held = budget.message(b);  // the 1 MiB frame is released, the smaller one held
    CHECK(budget.mark_for(b.size()) == 8);
    auto c = frame_of(512u * 1024);  // 16 fit: up
    held = budget.message(c);
    CHECK(budget.mark_for(c.size()) == 16);
}

TEST_CASE("without a byte budget the mark is the send queue's, and nothing is accounted", "[faults][r2.13]") {
    using gecko::detail::ZmqSendBudget;
    ZmqSendBudget frames_only(0, 1000);
    CHECK(frames_only.mark_for(64u << 20) == 1000);
    auto f = frame_of(1u << 20);
    auto m = frames_only.message(f);
    CHECK(frames_only.held() == 0);
    ZmqSendBudget unbounded(0, 0);
    CHECK(unbounded.initial_mark() == 0);
    CHECK(unbounded.mark_for(64u << 20) == 0);
    // No bound in frames, one in bytes: every frame is accounted.
    ZmqSendBudget bytes_only(8u << 20, 0);
    CHECK(bytes_only.initial_mark() == 0);
    CHECK(bytes_only.mark_for(1u << 20) == 8);
    auto g = frame_of(100);
    auto n = bytes_only.message(g);
    CHECK(bytes_only.held() == 1);
}

TEST_CASE("once a peer came, the mark stays where no peer's queue can stop", "[faults][r2.13]") {
    using gecko::detail::ZmqSendBudget;
    using Clock = ZmqSendBudget::Clock;
    const auto t0 = Clock::now();
    auto at = [&](double s) { return t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s)); };
    const std::size_t big = (1u << 20) + 100;
    // libzmq's reader tells its writer at every (mark + 1) / 2 frames read.
    CHECK(ZmqSendBudget::acknowledged_every(1000) == 500);
    CHECK(ZmqSendBudget::lowest_mark_after(1000) == 998);
    CHECK(ZmqSendBudget::lowest_mark_after(7) == 6);
    CHECK(ZmqSendBudget::lowest_mark_after(5000) == 0);  // none lower

    // No peer: any mark, back to the cap once the large frame is released.
    ZmqSendBudget alone(8u << 20, 1000);
    {
        CHECK(alone.mark_for(big, at(0)) == 7);
        auto f = frame_of(big);
        auto held = alone.message(f);
    }
    CHECK(alone.mark_for(64, at(0.1)) == 1000);

    // Large frames from the first one: bounded in bytes, not up while they come.
    ZmqSendBudget fed(8u << 20, 1000);
    fed.told(fed.mark_for(big, at(0)));
    CHECK(fed.heard() == 7);
    fed.sent();
    CHECK(fed.mark_for(64, at(0.1)) == 7);
    fed.told(fed.mark_for(3u << 20, at(0.2)));
    CHECK(fed.mark_for(3u << 20, at(0.2)) == 6);  // 7's readers owe up to 3 frames; 6's tell within 3
    fed.sent();
    fed.told(fed.mark_for(64, at(20)));
    CHECK(fed.mark_for(64, at(20)) == 1000);  // quiet for 10 s: back to the cap ...
    CHECK(fed.mark_for(big, at(20.1)) == 1000);  // ... for good

    // Small frames reached a peer under the full mark first: its reader may owe 499.
    ZmqSendBudget mixed(8u << 20, 1000);
    mixed.told(mixed.mark_for(64, at(0)));
    CHECK(mixed.heard() == 1000);
    mixed.sent();
    CHECK(mixed.mark_for(640 * 480 * 3 + 100, at(1)) == 998);

    // A peer came, nothing was sent to it yet: it owes nothing, the first large frame may go low.
    ZmqSendBudget fresh(8u << 20, 1000);
    CHECK(fresh.heard() == 1000);
    CHECK(fresh.mark_for(big, at(0)) == 7);
}

// The out-port alone against a plain ZeroMQ SUB over tcp: 100 small frames
// read, then a 1 MiB one. The SUB's queue was told 1,000, so its reader
// acknowledged none of the 100 (libzmq does at every 500): a mark of 8 for
// the large frame made the emptied queue full for good, and nothing reached
// that SUB again.
TEST_CASE("a lower mark does not stop a queue its reader has emptied", "[faults][r2.13]") {
    using namespace std::chrono_literals;
    auto context = std::make_shared<zmq::context_t>();
    auto transport = gecko::detail::make_zmq_transport(context, {"tcp"});
    gecko::detail::PortOptions o;
    o.node = "lone";
    o.key = "budget";
    o.session = 0x5eed;
    o.tcp_address = "127.0.0.1";
    auto port = transport->open_out(o);
    std::string locator;
    for (const auto& l : port->locators())
        if (l.rfind("tcp://", 0) == 0) locator = l;
    REQUIRE(!locator.empty());
    zmq::socket_t sub(*context, zmq::socket_type::sub);
    sub.set(zmq::sockopt::subscribe, "");
    sub.set(zmq::sockopt::rcvtimeo, 10000);
    sub.set(zmq::sockopt::linger, 0);
    sub.connect(locator);
    auto send = [&](const std::string& bytes) {
        auto f = frame_of(0);
        f.write(bytes.data(), bytes.size());
        return port->send(f).sent;
    };
    auto receive = [&] {
        zmq::message_t m;
        return sub.recv(m) ? m.to_string() : std::string("(nothing in 10 s)");
    };
    const std::string small(64, 's'), large(1u << 20, 'b');
    bool linked = false;
    for (const auto deadline = std::chrono::steady_clock::now() + 20s; !linked && std::chrono::steady_clock::now() < deadline;) {
        port->drain_events([](const gecko::detail::PortEvent&) {});
        REQUIRE(send(small));
        zmq::pollitem_t item{sub.handle(), 0, ZMQ_POLLIN, 0};
        linked = zmq::poll(&item, 1, 10ms) > 0;  // until the subscription is in: the first frame it gets
    }
    REQUIRE(linked);
    for (zmq::pollitem_t item{sub.handle(), 0, ZMQ_POLLIN, 0}; zmq::poll(&item, 1, 100ms) > 0;) receive();
    for (int i = 0; i < 100; ++i) {
        REQUIRE(send(small));
        REQUIRE(receive() == small);
    }
    REQUIRE(send(large));
    CHECK(receive().size() == large.size());
    REQUIRE(send(small));
    CHECK(receive() == small);
}
