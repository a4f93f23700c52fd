// Type safety and schema evolution across a real publisher/subscriber pair.

#include <catch2/catch.hpp>

#include <gecko/gecko.hpp>
#include <gecko/msgs/std.hpp>

#include <chrono>

#include "test_support.hpp"

using namespace std::chrono_literals;

namespace {

// Two versions of one type: v2 adds an optional field.
struct PoseV1 {
    static constexpr const char* type_name = "test.Pose";
    double x = 0, y = 0;
    GECKO_MSG_FIELDS(x, y)
};
struct PoseV2 {
    static constexpr const char* type_name = "test.Pose";
    double x = 0, y = 0;
    double theta = -1;  // new optional field: default when absent
    GECKO_MSG_FIELDS(x, y, theta)
};

template <class Out, class In>
struct Pair {
    gecko::Node node = test::make_node("types");
    gecko::Publisher<Out> pub;
    gecko::Subscriber<In> sub;
    Pair() {
        pub = node.template publisher<Out>("topic");
        sub = node.template subscriber<In>("topic");
        REQUIRE(pub.wait_for_subscribers(1, 10s));
    }
};

}  // namespace

TEST_CASE("a subscriber of another type drops the messages and counts them", "[types]") {
    test::LogCapture log;
    Pair<gecko::msgs::Int64, gecko::msgs::String> p;
    p.pub.publish(gecko::msgs::Int64{5});
    p.pub.publish(gecko::msgs::Int64{6});
    CHECK_FALSE(p.sub.receive(200ms));
    CHECK(p.sub.stats().type_mismatches == 2);
    CHECK(p.sub.stats().delivered == 0);
    // Said once on each side; without discovery the subscriber knows only the type's hash.
    CHECK(log.wait_for("subscriber of 'topic' expects gecko.msgs.String but publisher"));
    CHECK(log.wait_for("publisher of 'topic' sends gecko.msgs.Int64 but the subscriber of node 'types' expects "
                       "gecko.msgs.String"));
    CHECK(log.count("subscriber of 'topic' expects gecko.msgs.String but publisher") == 1);
}

TEST_CASE("the publisher learns that a subscriber expects another type", "[types]") {
    test::LogCapture log;
    Pair<gecko::msgs::String, gecko::msgs::Int64> p;  // the other direction
    CHECK(p.pub.stats().mismatched_subscribers == 1);
    CHECK(log.wait_for("publisher of 'topic' sends gecko.msgs.String but the subscriber of node 'types' expects "
                       "gecko.msgs.Int64"));
    p.pub.publish(gecko::msgs::String{"x"});
    CHECK_FALSE(p.sub.receive(200ms));
    CHECK(p.sub.stats().type_mismatches == 1);
}

TEST_CASE("a matching subscriber is not reported as mismatched", "[types]") {
    Pair<gecko::msgs::Int64, gecko::msgs::Int64> p;
    CHECK(p.pub.stats().mismatched_subscribers == 0);
}

TEST_CASE("an older reader ignores a field added by a newer writer", "[types][schema]") {
    Pair<PoseV2, PoseV1> p;
    p.pub.publish(PoseV2{1.5, 2.5, 0.25});
    auto got = p.sub.receive(10s);
    REQUIRE(got);
    CHECK(got->x == 1.5);
    CHECK(got->y == 2.5);
}

TEST_CASE("a newer reader gives a field an older writer omits its default", "[types][schema]") {
    Pair<PoseV1, PoseV2> p;
    p.pub.publish(PoseV1{1.5, 2.5});
    auto got = p.sub.receive(10s);
    REQUIRE(got);
    CHECK(got->x == 1.5);
    CHECK(got->y == 2.5);
    CHECK(got->theta == -1);
}
