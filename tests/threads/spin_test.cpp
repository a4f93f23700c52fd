// Several threads spinning one node: each entity's callbacks run on one
// thread at a time, in order, and a spin inside a callback is refused
// (gecko/include/gecko/node.hpp, "Threads"; gecko/src/node/dispatchable.hpp).

#include <catch2/catch.hpp>

#include <gecko/gecko.hpp>
#include <gecko/msgs/std.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using gecko::msgs::Int64;

namespace {

// Discovery off, in-process queues only: no ZeroMQ thread (the test runs under TSan).
gecko::Node make_node(const std::string& name) {
    gecko::NodeOptions options;
    options.key = "threads";
    options.name = name;
    options.discovery = false;
    options.transports = {"mem"};
    return gecko::Node(options);
}

// Counts callbacks that overlap: entered while another call is still inside.
struct Overlaps {
    std::atomic<int> inside{0};
    std::atomic<int> overlapping{0};
    std::atomic<int> calls{0};
    void enter() {
        if (inside.fetch_add(1) != 0) ++overlapping;
    }
    void leave() {
        ++calls;
        inside.fetch_sub(1);
    }
};

// Some work inside a callback, so that another spinning thread has the time
// to come for the same entity (a sleep would not be work: this is).
// Unsigned: it wraps (a signed overflow would be undefined, and UBSan stops on it).
std::int64_t busy(std::int64_t seed) {
    volatile std::uint64_t x = static_cast<std::uint64_t>(seed);
    for (int i = 0; i < 20000; ++i) x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<std::int64_t>(x >> 1);
}

// Spins `node` from two more threads (spin_once in a loop) on top of its
// background spinner, until destroyed.
class Spinners {
public:
    explicit Spinners(gecko::Node& node) : node_(node) {
        node_.spin_in_background();
        for (int i = 0; i < 2; ++i)
            threads_.emplace_back([this] {
                while (!stop_.load()) node_.spin_once(20ms);
            });
    }
    ~Spinners() {
        stop_ = true;
        for (auto& t : threads_) t.join();
        node_.stop_spinning();
    }
    Spinners(const Spinners&) = delete;
    Spinners& operator=(const Spinners&) = delete;

private:
    gecko::Node& node_;
    std::atomic<bool> stop_{false};
    std::vector<std::thread> threads_;
};

bool wait_until(const std::function<bool()>& done, std::chrono::seconds bound) {
    const auto deadline = std::chrono::steady_clock::now() + bound;
    while (!done()) {
        if (std::chrono::steady_clock::now() >= deadline) return false;
        std::this_thread::sleep_for(1ms);  // poll interval of a bounded wait
    }
    return true;
}

}  // namespace

TEST_CASE("threads spinning one node run each subscriber's callback on one thread at a time and in order",
          "[threads][spin]") {
    auto node = make_node("spinners");
    gecko::SubscriberOptions deep;
    deep.depth = 4096;  // nothing overwritten: every message is delivered once
    constexpr int messages = 400;  // x2 topics: within the link's queue of 1000 frames
    Overlaps a, b;
    std::atomic<std::int64_t> last_a{0}, out_of_order{0};
    std::atomic<std::int64_t> sink{0};
    // The typed wrapper decodes every message into one T: two threads in it at
    // once would be a data race on that T (ThreadSanitizer reports it).
    auto sub_a = node.subscriber<Int64>("a", [&](const Int64& m, const gecko::MessageInfo& info) {
        a.enter();
        if (m.data != static_cast<std::int64_t>(info.sequence) || m.data != last_a.load() + 1) ++out_of_order;
        last_a = m.data;
        sink += busy(m.data);
        if (m.data != static_cast<std::int64_t>(info.sequence)) ++out_of_order;  // still ours after the work
        a.leave();
    }, deep);
    auto sub_b = node.subscriber<Int64>("b", [&](const Int64& m) {
        b.enter();
        sink += busy(m.data);
        b.leave();
    }, deep);
    auto pub_a = node.publisher<Int64>("a");
    auto pub_b = node.publisher<Int64>("b");
    REQUIRE(pub_a.wait_for_subscribers(1, 10s));
    REQUIRE(pub_b.wait_for_subscribers(1, 10s));
    {
        Spinners spinners(node);
        for (int i = 1; i <= messages; ++i) {
            pub_a.publish(Int64{i});
            pub_b.publish(Int64{i});
        }
        CHECK(wait_until([&] { return a.calls.load() == messages && b.calls.load() == messages; }, 30s));
    }
    CHECK(a.overlapping.load() == 0);
    CHECK(b.overlapping.load() == 0);
    CHECK(out_of_order.load() == 0);
    CHECK(last_a.load() == messages);
    CHECK(sub_a.stats().delivered == static_cast<std::uint64_t>(messages));
}

TEST_CASE("threads spinning one node run a service's handler on one thread at a time", "[threads][spin]") {
    auto node = make_node("server");
    Overlaps handler;
    std::atomic<std::int64_t> sink{0};
    gecko::ServiceOptions queue;
    queue.queue = 256;
    auto server = node.service<Int64, Int64>("double", [&](const Int64& x) {
        handler.enter();
        sink += busy(x.data);
        handler.leave();
        return Int64{2 * x.data};
    }, queue);
    constexpr int callers = 3, calls_each = 60;
    std::atomic<int> wrong{0}, failed{0};
    {
        Spinners spinners(node);
        std::vector<std::thread> threads;
        for (int c = 0; c < callers; ++c)
            threads.emplace_back([&, c] {
                auto client = node.client<Int64, Int64>("double");
                if (!client.wait_for_server(10s)) {
                    ++failed;
                    return;
                }
                for (int i = 0; i < calls_each; ++i) {
                    const std::int64_t x = c * 1000 + i;
                    try {
                        if (client.call(Int64{x}, 30s).data != 2 * x) ++wrong;
                    } catch (const gecko::Error&) {
                        ++failed;
                    }
                }
            });
        for (auto& t : threads) t.join();
    }
    CHECK(failed.load() == 0);
    CHECK(wrong.load() == 0);
    CHECK(handler.calls.load() == callers * calls_each);
    CHECK(handler.overlapping.load() == 0);
}

TEST_CASE("a background spinner answers service calls while other threads receive in a loop", "[threads][spin]") {
    // The receiving threads lead (inbound.hpp): the background spinner waits
    // apart and is woken for each request its handler must run.
    auto node = make_node("apart");
    auto server = node.service<Int64, Int64>("double", [](const Int64& x) { return Int64{2 * x.data}; });
    gecko::SubscriberOptions deep;
    deep.depth = 512;
    auto pub = node.publisher<Int64>("stream");
    auto sub = node.subscriber<Int64>("stream", deep);
    node.spin_in_background();
    constexpr int count = 300;
    std::atomic<int> received{0}, wrong{0}, failed{0};
    std::thread reader([&] {
        const auto deadline = std::chrono::steady_clock::now() + 60s;
        while (received.load() < count && std::chrono::steady_clock::now() < deadline)
            if (sub.receive(50ms)) ++received;
    });
    std::thread caller([&] {
        auto client = node.client<Int64, Int64>("double");
        if (!client.wait_for_server(10s)) {
            ++failed;
            return;
        }
        for (int i = 0; i < 100; ++i) {
            try {
                if (client.call(Int64{i}, 30s).data != 2 * i) ++wrong;
            } catch (const gecko::Error&) {
                ++failed;
            }
        }
    });
    for (int i = 0; i < count; ++i) pub.publish(Int64{i});
    caller.join();
    reader.join();
    node.stop_spinning();
    CHECK(failed.load() == 0);
    CHECK(wrong.load() == 0);
    CHECK(received.load() == count);
}

TEST_CASE("spin_once and spin called inside a callback are refused and the node goes on", "[threads][spin]") {
    auto node = make_node("nested");
    std::atomic<int> calls{0}, refused{0};
    std::string said;
    std::mutex said_mutex;
    auto sub = node.subscriber<Int64>("n", [&](const Int64& m) {
        ++calls;
        try {
            if (m.data == 1) {
                node.spin_once(0ms);
            } else {
                node.spin();
            }
        } catch (const gecko::Error& e) {
            if (e.code() == gecko::Errc::invalid_argument) ++refused;
            std::lock_guard<std::mutex> lock(said_mutex);
            said = e.what();
        }
    });
    auto pub = node.publisher<Int64>("n");
    REQUIRE(pub.wait_for_subscribers(1, 10s));
    pub.publish(Int64{1});
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    while (calls.load() < 1 && std::chrono::steady_clock::now() < deadline) node.spin_once(100ms);
    REQUIRE(calls.load() == 1);
    CHECK(refused.load() == 1);
    {
        std::lock_guard<std::mutex> lock(said_mutex);
        CHECK(said.find("from inside a callback") != std::string::npos);
    }
    // The refusal left nothing behind: the thread spins again, and so does the callback.
    pub.publish(Int64{2});
    while (calls.load() < 2 && std::chrono::steady_clock::now() < deadline) node.spin_once(100ms);
    CHECK(calls.load() == 2);
    CHECK(refused.load() == 2);
    CHECK(sub.stats().delivered == 2);
}
