// The node session: handles that outlive their Node, a log sink that
// publishes on a Gecko topic, and the in-process queue transport (the second
// transport behind the seam).

#include <catch2/catch.hpp>

#include <gecko/gecko.hpp>
#include <gecko/msgs/std.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "test_support.hpp"

using namespace std::chrono_literals;
using gecko::msgs::Int64;
using gecko::msgs::String;

namespace {

gecko::Errc code_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const gecko::Error& e) {
        return e.code();
    }
    FAIL("no gecko::Error thrown");
    return gecko::Errc::invalid_argument;
}

}  // namespace

TEST_CASE("handles that outlive their Node are inert: closed errors, nothing received, safe to destroy",
          "[session][lifetime]") {
    std::optional<gecko::Node> node;
    node.emplace(test::make_node("short-lived"));
    auto pub = node->publisher<Int64>("numbers");
    auto sub = node->subscriber<Int64>("numbers");
    std::atomic<int> calls{0};
    auto cb = node->subscriber<Int64>("numbers", [&](const Int64&) { ++calls; });
    auto server = node->service<Int64, Int64>("double", [](const Int64& x) { return Int64{2 * x.data}; });
    auto client = node->client<Int64, Int64>("double");
    node->spin_in_background();
    REQUIRE(pub.wait_for_subscribers(2, 10s));
    pub.publish(Int64{1});
    REQUIRE(sub.receive(10s));

    node.reset();  // the Node goes first; every handle is still alive

    CHECK(code_of([&] { pub.publish(Int64{2}); }) == gecko::Errc::closed);
    CHECK(code_of([&] { (void)client.call(Int64{3}, 1s); }) == gecko::Errc::closed);
    const auto start = std::chrono::steady_clock::now();
    CHECK_FALSE(sub.receive(30s));  // at once: nothing will ever come
    CHECK(std::chrono::steady_clock::now() - start < 10s);
    CHECK_FALSE(pub.wait_for_subscribers(1, 2s));
    (void)pub.stats();
    (void)sub.stats();
    // The handles are destroyed here, on this thread, after their node.
}

TEST_CASE("a handle destroyed on another thread while its node spins is safe", "[session][lifetime]") {
    auto node = test::make_node("spinning");
    node.spin_in_background();
    for (int round = 0; round < 20; ++round) {
        auto sub = node.subscriber<Int64>("t" + std::to_string(round), [](const Int64&) {});
        auto pub = node.publisher<Int64>("t" + std::to_string(round));
        std::thread other([p = std::move(pub), s = std::move(sub)]() mutable {
            p.publish(Int64{1});
            // p and s die here, on a thread that is neither the spinner nor the creator.
        });
        other.join();
    }
    node.stop_spinning();
}

// One thread waits on a subscriber for a long time, and so leads the node's
// ports; another thread's receives on another subscriber of the same node are
// each answered by that leader's drains, however their waits interleave with
// its deliveries (a follower that registered just after a delivery once slept
// through its message until the leader's deadline).
TEST_CASE("a thread waiting long on one subscriber does not hold up another thread's receives",
          "[session][threads]") {
    auto node = test::make_node("two-readers");
    auto to_b = node.publisher<Int64>("b");
    auto to_a = node.publisher<Int64>("a");
    auto sub_a = node.subscriber<Int64>("a");
    auto sub_b = node.subscriber<Int64>("b");
    REQUIRE(to_b.wait_for_subscribers(1, 10s));
    REQUIRE(to_a.wait_for_subscribers(1, 10s));
    std::atomic<bool> done{false};
    std::thread leader([&] {
        while (!done.load()) (void)sub_a.receive(30s);  // ended by a message on "a"
    });
    int received = 0;
    for (int i = 0; i < 300; ++i) {
        to_b.publish(Int64{i});
        const auto m = sub_b.receive(10s);
        if (!m) break;
        CHECK(m->data == i);
        ++received;
    }
    done = true;
    to_a.publish(Int64{-1});  // queued for sub_a whenever the leader looks: its receive returns, it sees `done`
    leader.join();
    CHECK(received == 300);
}

TEST_CASE("a log sink that publishes on a Gecko topic does not deadlock, and its lines arrive",
          "[session][log]") {
    auto node = test::make_node("logger");
    auto log_pub = node.publisher<String>("log");
    gecko::SubscriberOptions deep;
    deep.depth = 64;
    auto log_sub = node.subscriber<String>("log", deep);
    REQUIRE(log_pub.wait_for_subscribers(1, 10s));
    std::atomic<int> sunk{0};
    gecko::set_log_sink([&](gecko::LogLevel, std::string_view who, std::string_view message) {
        ++sunk;
        log_pub.publish(String{std::string(who) + ": " + std::string(message)});  // re-enters Gecko from the sink
    });
    struct Restore {
        ~Restore() { gecko::set_log_sink({}); }
    } restore;

    // A line from the application, and lines from Gecko's own threads: a
    // subscriber of another type makes the node log a type mismatch from its
    // reactor, with its internal state in the middle of being updated.
    node.logger().warn("hello from the application");
    auto wrong = node.subscriber<Int64>("log");
    const auto deadline = std::chrono::steady_clock::now() + 20s;
    std::vector<std::string> lines;
    while (std::chrono::steady_clock::now() < deadline && lines.size() < 2) {
        if (auto line = log_sub.receive(100ms)) lines.push_back(line->data);
    }
    INFO("sink saw " << sunk.load() << " line(s)");
    REQUIRE(lines.size() >= 2);
    CHECK(lines[0].find("hello from the application") != std::string::npos);
    bool mismatch = false;
    std::string all;
    for (const auto& l : lines) {
        all += l + "\n";
        // The publisher's notice or the subscriber's, whichever comes first: both name the expected type.
        mismatch = mismatch || l.find("expects gecko.msgs.Int64") != std::string::npos;
    }
    INFO(all);
    CHECK(mismatch);
}

TEST_CASE("the in-process queue transport carries pub/sub between two nodes, in order, counted",
          "[session][mem]") {
    auto a = test::make_node("mem-a", {"mem"});
    auto b = test::make_node("mem-b", {"mem"});
    REQUIRE(a.locators().size() == 1);
    CHECK(a.locators().front().rfind("mem://", 0) == 0);
    test::link(a, b);
    auto pub = a.publisher<Int64>("numbers");
    gecko::SubscriberOptions options;
    options.depth = 1000;
    auto sub = b.subscriber<Int64>("numbers", options);
    REQUIRE(pub.wait_for_subscribers(1, 10s));
    for (int i = 0; i < 500; ++i) pub.publish(Int64{i});
    for (int i = 0; i < 500; ++i) {
        auto m = sub.receive(10s);
        REQUIRE(m);
        CHECK(m->data == i);
    }
    CHECK(sub.stats().received == 500);
    CHECK(sub.stats().drops == 0);
    CHECK(pub.stats().messages == 500);
}

TEST_CASE("over the in-process queues, every message sent is received or counted, by one side or the other",
          "[session][mem]") {
    auto a = test::make_node("mem-full-a", {"mem"});
    auto b = test::make_node("mem-full-b", {"mem"});
    test::link(a, b);
    auto pub = a.publisher<Int64>("flood");
    gecko::SubscriberOptions options;
    options.depth = 4;
    auto sub = b.subscriber<Int64>("flood", options);
    REQUIRE(pub.wait_for_subscribers(1, 10s));
    // Faster than anyone reads: the link's queue (1000 frames) fills and the
    // subscriber's 4 slots overwrite. The in-process link knows when it
    // refuses a frame (PublisherStats::dropped, for information); the
    // subscriber accounts for every message: delivered, overwritten unread,
    // or a drop (a sequence gap, or the tail the publisher reports when it
    // goes quiet).
    constexpr std::uint64_t sent = 5000;
    for (std::uint64_t i = 0; i < sent; ++i) pub.publish(Int64{static_cast<std::int64_t>(i)});
    CHECK(pub.stats().messages == sent);
    std::uint64_t accounted = 0;
    const auto deadline = std::chrono::steady_clock::now() + 20s;
    while (std::chrono::steady_clock::now() < deadline) {
        while (sub.receive(20ms)) {
        }
        const auto st = sub.stats();
        accounted = st.delivered + st.overwritten + st.drops;
        if (accounted >= sent) break;
    }
    const auto st = sub.stats();
    INFO("delivered " << st.delivered << ", overwritten " << st.overwritten << ", drops " << st.drops
                      << "; refused by the link, at the sender: " << pub.stats().dropped);
    CHECK(accounted == sent);
    CHECK(st.drops >= pub.stats().dropped);  // what the link refused is among the subscriber's drops
}
