// SPDX-License-Identifier: Apache-2.0
// Nodes whose only transport is shm: typed messages end to end, linked by
// hand in one process, and found through a real geckocore across processes.

#include <catch2/catch.hpp>

#include <gecko/gecko.hpp>
#include <gecko/msgs/std.hpp>

#include <unistd.h>

#include <chrono>
#include <filesystem>

#include "support/ports.hpp"
#include "support/process.hpp"

using namespace std::chrono_literals;
using gecko::msgs::Int64;
using gecko::msgs::String;

namespace {

gecko::Node shm_node(const std::string& name) {
    gecko::NodeOptions o;
    o.key = "shmtest";
    o.name = name;
    o.discovery = false;
    o.transports = {"shm"};
    return gecko::Node(o);
}

bool in_dev_shm(const std::string& locator) { return std::filesystem::exists("/dev/shm/" + locator.substr(6)); }

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
        REQUIRE(pub.wait_for_subscribers(2, 5s));
        pub.publish(Int64{1000});
        auto mine = self.receive(2s);
        REQUIRE(mine);
        CHECK(mine->data == 1000);
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
