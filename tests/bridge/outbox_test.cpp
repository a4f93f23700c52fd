// SPDX-License-Identifier: Apache-2.0
// Flow control (bridge/src/outbox.hpp): bounded queues, a byte budget that
// takes from the biggest queue, fair turns between subscriptions, the
// control plane first and bounded.
#include <catch2/catch.hpp>

#include "outbox.hpp"

using namespace gecko::bridge;

namespace {
SharedBytes bytes(std::size_t n) { return std::make_shared<const std::string>(n, 'x'); }
}  // namespace

TEST_CASE("a small message waits behind at most the one large frame being written", "[bridge][outbox]") {
    Outbox box;
    box.open(1);  // images
    box.open(2);  // state
    for (int i = 0; i < 10; ++i) box.push(1, i, bytes(1 << 20));
    auto first = box.next();
    REQUIRE(first);
    CHECK(first->subscription == 1);
    box.push(2, 100, bytes(100));  // arrives while the first image is being written
    box.sent();
    auto second = box.next();
    REQUIRE(second);
    CHECK(second->subscription == 2);
    CHECK(second->timestamp_ns == 100);
}

TEST_CASE("subscriptions take turns by bytes: a large one does not starve a small busy one", "[bridge][outbox]") {
    Outbox box;
    box.open(1, 64);
    box.open(2, 64);
    for (int i = 0; i < 8; ++i) box.push(1, i, bytes(100000));
    for (int i = 0; i < 60; ++i) box.push(2, i, bytes(100));
    int small_before_second_large = 0, large = 0;
    while (auto n = box.next()) {
        if (n->subscription == 1 && ++large == 2) break;
        if (n->subscription == 2) ++small_before_second_large;
        box.sent();
    }
    CHECK(small_before_second_large == 60);  // all the small ones fit in one large one's bytes
}

TEST_CASE("depth bounds a queue, oldest dropped, and depth 1 is latest-wins", "[bridge][outbox]") {
    Outbox box;
    box.open(1, 3);
    box.open(2, 1);
    for (int i = 0; i < 5; ++i) {
        box.push(1, i, bytes(10));
        box.push(2, i, bytes(10));
    }
    CHECK(box.dropped(1) == 2);
    CHECK(box.dropped(2) == 4);
    std::vector<std::uint64_t> got1, got2;
    while (auto n = box.next()) {
        (n->subscription == 1 ? got1 : got2).push_back(n->timestamp_ns);
        box.sent();
    }
    CHECK(got1 == std::vector<std::uint64_t>{2, 3, 4});
    CHECK(got2 == std::vector<std::uint64_t>{4});
}

TEST_CASE("a subscription that did not ask for a depth keeps a burst of small messages, up to max_depth", "[bridge][outbox]") {
    Outbox box;  // the defaults: 1024 messages or 1 MiB
    box.open(1);
    for (int i = 0; i < 2000; ++i) CHECK(box.push(1, i, bytes(200)) == (i < 1024 ? Outbox::Drop::none : Outbox::Drop::queue_full));
    CHECK(box.queued_messages() == 1024);
    CHECK(box.dropped(1) == 2000 - 1024);
    CHECK(box.next()->timestamp_ns == 2000 - 1024);  // the oldest went first
}

TEST_CASE("a subscription that did not ask keeps at most its byte allowance of larger messages", "[bridge][outbox]") {
    Outbox box;
    box.open(1);
    for (int i = 0; i < 200; ++i) box.push(1, i, bytes(16 << 10));
    const std::size_t fit = (1u << 20) / ((16u << 10) + 64);  // 63: a message's cost includes its bookkeeping
    CHECK(box.queued_messages() == fit);
    CHECK(box.data_bytes() <= 1u << 20);
    CHECK(box.dropped(1) == 200 - fit);
}

TEST_CASE("a topic of messages larger than the allowance keeps the latest one, never none", "[bridge][outbox]") {
    OutboxLimits limits;
    limits.data_budget = 64u << 20;
    Outbox box(limits);
    box.open(1);
    for (int i = 0; i < 5; ++i) {
        box.push(1, i, bytes(6u << 20));  // 1080p rgb8
        CHECK(box.queued_messages() == 1);
    }
    CHECK(box.dropped(1) == 4);
    CHECK(box.next()->timestamp_ns == 4);
}

TEST_CASE("a subscription that asked for a depth keeps that many, whatever their bytes (within the client's budget)",
          "[bridge][outbox]") {
    Outbox box;  // a budget of 16 MiB
    box.open(1, 8);
    box.open(2, 2000);  // more than max_depth: 1024
    for (int i = 0; i < 10; ++i) box.push(1, i, bytes(1 << 20));
    CHECK(box.queued_messages() == 8);
    CHECK(box.dropped(1) == 2);
    for (int i = 0; i < 1100; ++i) box.push(2, i, bytes(10));
    CHECK(box.dropped(2) == 1100 - 1024);
}

TEST_CASE("the byte budget holds, taken from the queue with the most bytes", "[bridge][outbox]") {
    OutboxLimits limits;
    limits.data_budget = 4u << 20;
    limits.default_depth = 1000;
    limits.default_bytes = limits.data_budget;  // the client's budget binds, not the subscription's allowance
    Outbox box(limits);
    box.open(1);
    box.open(2);
    for (int i = 0; i < 100; ++i) {
        box.push(2, i, bytes(100));
        box.push(1, i, bytes(1 << 20));  // a stalled client's images
        CHECK(box.data_bytes() <= limits.data_budget);
    }
    CHECK(box.dropped(2) == 0);  // the small topic lost nothing
    CHECK(box.dropped(1) > 90);
    CHECK(box.dropped_total() == box.dropped(1));
    // A message larger than the whole budget is dropped and said so.
    CHECK(box.push(1, 0, bytes(5u << 20)) == Outbox::Drop::too_large);
}

TEST_CASE("the frame being written counts against the budget until sent", "[bridge][outbox]") {
    OutboxLimits limits;
    limits.data_budget = 1u << 20;
    Outbox box(limits);
    box.open(1);
    box.push(1, 0, bytes(700000));
    REQUIRE(box.next());
    CHECK(box.push(1, 1, bytes(700000)) == Outbox::Drop::budget);  // nothing queued to take from
    box.sent();
    CHECK(box.push(1, 2, bytes(700000)) == Outbox::Drop::none);
}

TEST_CASE("control messages go first, and the control plane is bounded", "[bridge][outbox]") {
    OutboxLimits limits;
    limits.control_messages = 3;
    Outbox box(limits);
    box.open(1);
    box.push(1, 0, bytes(10));
    CHECK(box.push_control("a", false));
    CHECK(box.push_control("b", true));
    CHECK(box.push_control("c", false));
    CHECK_FALSE(box.push_control("d", false));
    auto n = box.next();
    REQUIRE(n);
    CHECK(n->control);
    CHECK(n->frame == "a");
    CHECK_FALSE(box.next());  // one write at a time
    box.sent();
    CHECK(box.next()->binary);
    box.sent();
    box.next();
    box.sent();
    auto data = box.next();
    REQUIRE(data);
    CHECK_FALSE(data->control);
}

TEST_CASE("closing a subscription frees its bytes without counting drops", "[bridge][outbox]") {
    Outbox box;
    box.open(1);
    box.push(1, 0, bytes(1000));
    CHECK(box.data_bytes() > 1000);
    box.close(1);
    CHECK(box.data_bytes() == 0);
    CHECK(box.dropped_total() == 0);
    CHECK_FALSE(box.next());
    box.push(1, 0, bytes(10));  // no longer open: ignored
    CHECK(box.queued_messages() == 0);
}
