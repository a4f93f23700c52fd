// SPDX-License-Identifier: Apache-2.0
// The rule that holds a ZeroMQ link's queue to its byte budget (issue 25,
// item 13; gecko/src/transport/zmq_send_budget.hpp), on its own: the mark it
// gives ZeroMQ for each frame. link_budget_test.cpp measures what it does
// for real publishers and subscribers.
#include "transport/zmq_send_budget.hpp"

#include <catch2/catch.hpp>

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
