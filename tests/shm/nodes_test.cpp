// SPDX-License-Identifier: Apache-2.0
// Nodes whose only transport is shm: typed messages end to end, linked by
// hand in one process, and found through a real geckocore across processes.

#include <catch2/catch.hpp>

#include <gecko/gecko.hpp>
#include <gecko/msgs/std.hpp>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <vector>
#include <thread>
#include <time.h>

#include "support/ports.hpp"
#include "support/process.hpp"

using namespace std::chrono_literals;
using gecko::msgs::Int64;
using gecko::msgs::String;

namespace {

gecko::Node shm_node(const std::string& name, const std::string& listen = {}) {
    gecko::NodeOptions o;
    o.key = "shmtest";
    o.name = name;
    o.discovery = false;
    o.transports = {"shm"};
    if (!listen.empty()) o.listen = {listen};
    return gecko::Node(o);
}

bool in_dev_shm(const std::string& locator) { return std::filesystem::exists("/dev/shm/" + locator.substr(6)); }

// `pub` has `subscribers` subscribers, and `value` published reaches `sub`.
void check_carries(gecko::Publisher<Int64>& pub, std::size_t subscribers, gecko::Subscriber<Int64>& sub, std::int64_t value) {
    REQUIRE(pub.wait_for_subscribers(subscribers, 10s));
    pub.publish(Int64{value});
    auto m = sub.receive(5s);
    REQUIRE(m);
    CHECK(m->data == value);
}

}  // namespace

TEST_CASE("two nodes over shm only exchange typed messages both ways", "[shm][nodes]") {
    std::string la, lb;
    {
        auto a = shm_node("shm_a");
        auto b = shm_node("shm_b");
        REQUIRE(a.locators().size() == 1);
        la = a.locators().front();
        lb = b.locators().front();
        CHECK(la.rfind("shm://", 0) == 0);
        CHECK(in_dev_shm(la));
        b.connect(la);
        a.connect(lb);

        auto pub = a.publisher<Int64>("numbers");
        gecko::SubscriberOptions so;
        so.depth = 200;
        auto sub = b.subscriber<Int64>("numbers", so);
        REQUIRE(pub.wait_for_subscribers(1, 5s));
        for (int i = 1; i <= 100; ++i) pub.publish(Int64{i});
        for (int i = 1; i <= 100; ++i) {
            auto m = sub.receive(2s);
            REQUIRE(m);
            CHECK(m->data == i);
        }
        CHECK(sub.stats().drops == 0);

        // The other way, a larger message (beyond the small chunk classes).
        auto back = b.publisher<String>("text");
        auto listen = a.subscriber<String>("text");
        REQUIRE(back.wait_for_subscribers(1, 5s));
        const std::string big(300000, 'z');
        back.publish(String{big});
        auto m = listen.receive(2s);
        REQUIRE(m);
        CHECK(m->data == big);

        // A node hears its own publisher through its link to itself (over shm).
        auto self = a.subscriber<Int64>("numbers");
        check_carries(pub, 2, self, 1000);
    }
    // Clean close: their segments are gone.
    CHECK_FALSE(in_dev_shm(la));
    CHECK_FALSE(in_dev_shm(lb));
}

TEST_CASE("node processes that only offer shm find each other through geckocore", "[shm][nodes][discovery]") {
    const std::string key = "shm-" + std::to_string(::getpid());
    const auto core = gecko::test::start_core(GECKOCORE_PATH, key);
    gecko::test::SpawnOptions env;
    env.env = {{"GECKO_CORE", core.address()}, {"GECKO_NO_MULTICAST", "1"}, {"GECKO_KEY", key}, {"GECKO_TRANSPORTS", "shm"}};
    env.unset_env = {"GECKO_DISCOVERY", "GECKO_MULTICAST", "GECKO_INTERFACE"};
    auto sub = gecko::test::Process::spawn(GECKO_SHM_PEER, {"node-sub", "50"}, env);
    const auto ready = sub.wait_for_line("ready", 10s);
    REQUIRE(ready);
    CHECK(ready->find("shm://") != std::string::npos);
    auto pub = gecko::test::Process::spawn(GECKO_SHM_PEER, {"node-pub", "50"}, env);
    for (int i = 1; i <= 50; ++i) {
        const auto line = sub.wait_for_line("recv ", 10s);
        INFO("subscriber:\n" << sub.output() << "publisher:\n" << pub.output());
        REQUIRE(line);
        CHECK(*line == "recv hello " + std::to_string(i));
    }
    CHECK(sub.wait_for_line("done", 5s));
    CHECK(sub.wait(5s) == 0);
    pub.close_stdin();
    CHECK(pub.wait(5s) == 0);
}

namespace {

double thread_cpu_ms() {
    timespec ts{};
    ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

std::string shm_locator_of(const gecko::Node& n) {
    for (const auto& l : n.locators())
        if (l.rfind("shm://", 0) == 0) return l;
    return "";
}

}  // namespace

TEST_CASE("spin busy-polls a node linked over shm and to itself, hears both, then blocks", "[shm][nodes][spin]") {
    // Default transports: b's link to a is shm, its link to itself is inproc
    // (ZeroMQ's port). Its waits cover both ports, spinning first.
    auto options = [](const std::string& name, std::chrono::microseconds spin) {
        gecko::NodeOptions o;
        o.key = "shmspin" + std::to_string(::getpid());
        o.name = name;
        o.discovery = false;
        o.spin = spin;
        return o;
    };
    gecko::Node a(options("spin_a", 0us));
    gecko::Node b(options("spin_b", 50000us));  // 50 ms: long enough to see on the thread's CPU clock
    const auto la = shm_locator_of(a);
    REQUIRE_FALSE(la.empty());
    b.connect(la);
    auto from_a = a.publisher<Int64>("numbers");
    auto own = b.publisher<Int64>("mine");
    auto sub = b.subscriber<Int64>("numbers");
    auto self = b.subscriber<Int64>("mine");
    REQUIRE(from_a.wait_for_subscribers(1, 5s));
    REQUIRE(own.wait_for_subscribers(1, 5s));

    // Nothing comes: the wait spins (its CPU time shows it), then blocks until the timeout.
    double before = thread_cpu_ms();
    CHECK_FALSE(sub.receive(150ms));
    const double spun = thread_cpu_ms() - before;
    CHECK(spun >= 5.0);  // ~50 ms when the thread has a core; bounded well below for a loaded machine
    CHECK(spun < 140.0);  // and not for the whole 150 ms: it blocked after the spin

    // What comes while it spins arrives, over shm and over the link to itself.
    std::thread sender([&] {
        std::this_thread::sleep_for(5ms);  // lands inside the receiver's spin (the test is of arrival, not of timing)
        from_a.publish(Int64{7});
        own.publish(Int64{8});
    });
    auto m = sub.receive(5s);
    auto n = self.receive(5s);
    sender.join();
    REQUIRE(m);
    CHECK(m->data == 7);
    REQUIRE(n);
    CHECK(n->data == 8);

    // Without spin, a wait that times out costs next to no CPU.
    gecko::Node c(options("spin_c", 0us));
    c.connect(la);
    auto quiet = c.subscriber<Int64>("numbers");
    REQUIRE(from_a.wait_for_subscribers(2, 5s));
    before = thread_cpu_ms();
    CHECK_FALSE(quiet.receive(150ms));
    CHECK(thread_cpu_ms() - before < 5.0);
}

TEST_CASE("a segment named before its node made it: quiet at first, a warning if it stays missing, linked when it comes",
          "[shm][nodes][retry]") {
    const std::string segment = "gecko-test-late-" + std::to_string(::getpid());
    const std::string locator = "shm://" + segment;
    std::mutex mutex;
    std::condition_variable logged;
    std::vector<std::pair<gecko::LogLevel, std::string>> said;
    gecko::set_log_sink([&](gecko::LogLevel level, std::string_view, std::string_view message) {
        if (message.find(segment) == std::string_view::npos) return;
        std::lock_guard<std::mutex> lock(mutex);
        said.emplace_back(level, std::string(message));
        logged.notify_all();
    });
    struct Restore {
        ~Restore() { gecko::set_log_sink({}); }
    } restore;
    // The lines of `level` logged so far, once there is one containing `text` (or 10 s passed).
    auto lines_once = [&](gecko::LogLevel level, const std::string& text) {
        std::unique_lock<std::mutex> lock(mutex);
        auto matching = [&] {
            std::vector<std::string> out;
            for (const auto& [l, m] : said)
                if (l == level) out.push_back(m);
            return out;
        };
        logged.wait_for(lock, 10s, [&] {
            for (const auto& m : matching())
                if (m.find(text) != std::string::npos) return true;
            return false;
        });
        return matching();
    };

    auto b = shm_node("late_b");
    const auto asked = std::chrono::steady_clock::now();
    b.connect(locator);  // nothing at that name yet
    // Nodes started together name each other's segments before they exist:
    // that is no warning at once, only once it has lasted a second.
    const auto warnings = lines_once(gecko::LogLevel::warn, "cannot connect to another node at " + locator);
    REQUIRE(warnings.size() == 1);
    CHECK(std::chrono::steady_clock::now() - asked >= 1s);
    CHECK(warnings.front().find("cannot connect to another node at " + locator) != std::string::npos);

    // The publisher's node comes: the retry links, and says so, once.
    auto a = shm_node("late_a", locator);
    auto pub = a.publisher<Int64>("late");
    auto sub = b.subscriber<Int64>("late");
    check_carries(pub, 1, sub, 42);
    const auto infos = lines_once(gecko::LogLevel::info, "after retrying");
    CHECK(std::any_of(infos.begin(), infos.end(), [](const std::string& m) { return m.find("after retrying") != std::string::npos; }));
    CHECK(lines_once(gecko::LogLevel::warn, "").size() == 1);  // said once
}
