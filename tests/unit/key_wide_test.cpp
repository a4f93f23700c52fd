// Key-wide subscriptions without discovery (no directory to name topics),
// on the in-process transports: what they take, and what they leave.

#include <catch2/catch.hpp>

#include <gecko/gecko.hpp>
#include <gecko/msgs/std.hpp>

#include "test_support.hpp"

using namespace std::chrono_literals;
using gecko::msgs::Int64;

TEST_CASE("without discovery a key-wide subscription of every topic takes every message unnamed, a filtered one nothing",
          "[key_wide]") {
    const auto transport = GENERATE(as<std::string>{}, "inproc", "mem");
    auto publisher_node = test::make_node("publisher", {transport});
    auto recorder = test::make_node("recorder", {transport});
    test::link(publisher_node, recorder);
    gecko::SubscriberOptions so;
    so.depth = 100;
    auto all = recorder.subscribe_all(gecko::TopicFilter::all(), so);
    auto arm1 = recorder.subscribe_all(gecko::TopicFilter::topic("arm1/*"), so);
    auto numbers = publisher_node.publisher<Int64>("arm1/numbers");
    REQUIRE(numbers.wait_for_subscribers(2, 10s));
    for (std::int64_t i = 1; i <= 10; ++i) numbers.publish(Int64{i});

    std::int64_t last = 0;
    while (last < 10) {
        REQUIRE(all.receive(10s, [&](const gecko::RawView& v) {
            CHECK(v.info.topic.empty());  // no directory: the channel has no name
            CHECK(v.info.channel == nullptr);
            Int64 m;
            gecko::codec::decode(v.payload, v.size, m);
            CHECK(m.data == last + 1);
            last = m.data;
        }));
    }
    // The filtered one cannot tell arm1/numbers from any other channel: it takes nothing.
    CHECK_FALSE(arm1.receive(100ms, [](const gecko::RawView&) {}));
    CHECK(arm1.stats().delivered == 0);
}

TEST_CASE("a key-wide subscription refuses an invalid pattern and a type name", "[key_wide]") {
    auto node = test::make_node("recorder");
    CHECK_THROWS_WITH(node.subscribe_all(gecko::TopicFilter::topic("")), Catch::Contains("pattern"));
    gecko::SubscriberOptions so;
    so.type_name = "gecko.msgs.Int64";
    CHECK_THROWS_WITH(node.subscribe_all(gecko::TopicFilter::all(), so), Catch::Contains("takes any type"));
    gecko::TopicFilter none;
    none.topics.clear();
    CHECK_THROWS_WITH(node.subscribe_all(none), Catch::Contains("at least one topic"));
}

TEST_CASE("topic and type names refuse the glob characters filters use", "[key_wide]") {
    auto node = test::make_node("names");
    CHECK_THROWS_WITH(node.publisher<Int64>("arm1/*"), Catch::Contains("'*' or '?'"));
    CHECK_THROWS_WITH(node.raw_publisher("ok", "my.Type?"), Catch::Contains("'*' or '?'"));
}
