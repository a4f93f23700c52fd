// SPDX-License-Identifier: Apache-2.0
// geckocore run in-process (gecko::core::Core on a thread) with in-process
// DiscoveryClients: the registration and type-check logic, fast.
#include "harness.hpp"

#include "discovery/core_query.hpp"
#include "discovery/discovery_client.hpp"
#include "gecko/net/net.hpp"
#include "geckocore/core.hpp"

#include <catch2/catch.hpp>

#include <condition_variable>
#include <mutex>

using namespace gecko::detail;
namespace discovery = gecko::discovery;
namespace net = gecko::net;
using namespace std::chrono_literals;

namespace {

/// Collects what a client reports, and lets the test wait for it.
struct Events {
    std::mutex mutex;
    std::condition_variable cv;
    std::map<std::uint64_t, std::vector<std::vector<Peer>>> peers;  // every callback, per watcher
    std::vector<std::pair<std::uint64_t, std::string>> errors;

    std::function<void(const std::vector<Peer>&)> watcher(std::uint64_t id) {
        return [this, id](const std::vector<Peer>& p) {
            std::lock_guard<std::mutex> lock(mutex);
            peers[id].push_back(p);
            cv.notify_all();
        };
    }
    std::function<void(std::uint64_t, const std::string&, const std::string&)> error_sink() {
        return [this](std::uint64_t id, const std::string&, const std::string& m) {
            std::lock_guard<std::mutex> lock(mutex);
            errors.emplace_back(id, m);
            cv.notify_all();
        };
    }
    bool wait_peers(std::uint64_t id, std::size_t n, std::chrono::milliseconds timeout) {
        std::unique_lock<std::mutex> lock(mutex);
        return cv.wait_for(lock, timeout, [&] { return !peers[id].empty() && peers[id].back().size() == n; });
    }
    bool wait_error(std::uint64_t id, std::chrono::milliseconds timeout) {
        std::unique_lock<std::mutex> lock(mutex);
        return cv.wait_for(lock, timeout, [&] {
            for (auto& e : errors)
                if (e.first == id) return true;
            return false;
        });
    }
    std::string error_for(std::uint64_t id) {
        std::lock_guard<std::mutex> lock(mutex);
        for (auto& e : errors)
            if (e.first == id) return e.second;
        return "";
    }
};

gecko::core::CoreOptions core_options(const std::string& key) {
    gecko::core::CoreOptions o;
    o.key = key;
    o.multicast_port = gecko::test::test_multicast_port();
    o.listen = "tcp://127.0.0.1:*";
    o.door_port = 0;  // the machine's door is not the tests' to take
    o.lease = 1000ms;
    return o;
}

DiscoveryOptions client_options(const std::string& key, const std::string& node, const gecko::core::Core& core) {
    DiscoveryOptions o;
    o.key = key;
    o.node = node;
    o.multicast = false;
    o.core = core.endpoint();
    o.lease = 1000ms;
    o.locators = {"tcp://0.0.0.0:30000", "ipc:///tmp/gecko-core-test-" + node + ".sock"};
    return o;
}

Registration reg(std::uint64_t id, EntityKind kind, const std::string& topic, const std::string& type) {
    Registration r;
    r.id = id;
    r.kind = kind;
    r.topic = topic;
    r.type_name = type;
    return r;
}

}  // namespace

TEST_CASE("an in-process core matches publishers and subscribers in any order", "[discovery][core]") {
    const auto key = gecko::test::test_key("inproc");
    gecko::core::Core core(core_options(key));
    core.start();
    Events ev;
    DiscoveryClient sub(client_options(key, "sub", core));
    sub.add(reg(1, EntityKind::subscriber, "imu", "gecko.msgs.Imu"));
    sub.watch(1, ev.watcher(1));
    REQUIRE(sub.wait_for_core(10s));
    REQUIRE(ev.wait_peers(1, 0, 10s));  // told once, right after the first answer, even with nobody there

    {
        DiscoveryClient pub(client_options(key, "pub", core));
        pub.add(reg(2, EntityKind::publisher, "imu", "gecko.msgs.Imu"));
        REQUIRE(ev.wait_peers(1, 1, 10s));
        const auto p = [&] {
            std::lock_guard<std::mutex> lock(ev.mutex);
            return ev.peers[1].back().front();
        }();
        CHECK(p.reg.id == 2);
        CHECK(p.node == "pub");
        CHECK(p.pid == ::getpid());
        // Same boot and mount namespace: the subscriber may use the publisher's ipc endpoint.
        CHECK(!p.host_id.empty());
        CHECK(p.host_id == net::host_id());
        REQUIRE(p.locators.size() == 2);
        CHECK(p.locators.at(0).find("0.0.0.0") == std::string::npos);  // rewritten before registration
        CHECK(p.locators.at(1) == "ipc:///tmp/gecko-core-test-pub.sock");
        CHECK(p.session == pub.session());
        CHECK(core.wait_until_registered("imu", 2, 10s));
    }
    // The publisher's client said goodbye: the subscriber hears at once, not after a lease.
    REQUIRE(ev.wait_peers(1, 0, 10s));
    CHECK(core.wait_until_at_most("imu", 1, 10s));
}

TEST_CASE("a subscriber of another type gets an error naming both types, and so does the publisher", "[discovery][core][types]") {
    const auto key = gecko::test::test_key("types");
    gecko::core::Core core(core_options(key));
    core.start();
    Events pub_ev, sub_ev;
    DiscoveryClient pub(client_options(key, "imu_driver", core));
    pub.on_error(pub_ev.error_sink());
    pub.add(reg(10, EntityKind::publisher, "imu", "gecko.msgs.Imu"));
    REQUIRE(core.wait_until_registered("imu", 1, 10s));

    DiscoveryClient sub(client_options(key, "controller", core));
    sub.on_error(sub_ev.error_sink());
    sub.add(reg(11, EntityKind::subscriber, "imu", "gecko.msgs.JointState"));
    sub.watch(11, sub_ev.watcher(11));
    REQUIRE(sub_ev.wait_error(11, 10s));
    REQUIRE(pub_ev.wait_error(10, 10s));
    for (const auto& text : {sub_ev.error_for(11), pub_ev.error_for(10)}) {
        CHECK_THAT(text, Catch::Contains("gecko.msgs.Imu") && Catch::Contains("gecko.msgs.JointState") && Catch::Contains("imu"));
    }
    // It never gets a publisher of the wrong type as a peer.
    REQUIRE(sub_ev.wait_peers(11, 0, 10s));

    gecko::net::FinderOptions q;
    q.key = key;
    q.multicast = false;
    q.core = core.endpoint();
    const auto r = gecko::query_graph(q, 10s);
    REQUIRE(r.conflicts.size() == 1);
    CHECK(r.conflicts[0].topic == "imu");
    CHECK(r.conflicts[0].types.size() == 2);
    CHECK(core.counters().type_conflicts >= 1);
}

TEST_CASE("a type conflict reaches only the parties between which data would flow", "[discovery][core][types]") {
    const auto key = gecko::test::test_key("conflict-parties");
    gecko::core::Core core(core_options(key));
    core.start();
    Events pub_ev, good_ev, bad_ev;
    DiscoveryClient pub(client_options(key, "imu_driver", core));
    pub.on_error(pub_ev.error_sink());
    pub.add(reg(30, EntityKind::publisher, "imu", "gecko.msgs.Imu"));
    DiscoveryClient good(client_options(key, "imu_monitor", core));
    good.on_error(good_ev.error_sink());
    good.add(reg(31, EntityKind::subscriber, "imu", "gecko.msgs.Imu"));
    good.watch(31, good_ev.watcher(31));
    REQUIRE(good_ev.wait_peers(31, 1, 10s));

    DiscoveryClient bad(client_options(key, "plotter", core));
    bad.on_error(bad_ev.error_sink());
    bad.add(reg(32, EntityKind::subscriber, "imu", "gecko.msgs.Float64"));
    REQUIRE(bad_ev.wait_error(32, 10s));   // the newcomer, naming the publisher's type
    REQUIRE(pub_ev.wait_error(30, 10s));   // the publisher whose data it cannot read
    CHECK_THAT(bad_ev.error_for(32), Catch::Contains("gecko.msgs.Imu") && Catch::Contains("gecko.msgs.Float64"));

    // The subscriber of the right type is not concerned. Its link is ordered:
    // once the push caused by a later publisher reaches it, an error sent
    // before that would have arrived too.
    DiscoveryClient second(client_options(key, "imu_driver_2", core));
    second.add(reg(33, EntityKind::publisher, "imu", "gecko.msgs.Imu"));
    REQUIRE(good_ev.wait_peers(31, 2, 10s));
    CHECK(good_ev.error_for(31).empty());
}

TEST_CASE("a subscriber that declares no type (a tool) gets every publisher and no conflict", "[discovery][core][types]") {
    const auto key = gecko::test::test_key("wildcard");
    gecko::core::Core core(core_options(key));
    core.start();
    Events ev;
    DiscoveryClient pub(client_options(key, "imu_driver", core));
    pub.add(reg(20, EntityKind::publisher, "imu", "gecko.msgs.Imu"));
    REQUIRE(core.wait_until_registered("imu", 1, 10s));

    DiscoveryClient tool(client_options(key, "gecko-echo", core));
    tool.on_error(ev.error_sink());
    tool.add(reg(21, EntityKind::subscriber, "imu", ""));
    tool.watch(21, ev.watcher(21));
    REQUIRE(ev.wait_peers(21, 1, 10s));
    // The core sends a type error before the peers on the same ordered link: none came.
    CHECK(ev.error_for(21).empty());

    gecko::net::FinderOptions q;
    q.key = key;
    q.multicast = false;
    q.core = core.endpoint();
    const auto r = gecko::query_graph(q, 10s);
    CHECK(r.conflicts.empty());
    CHECK(core.counters().type_conflicts == 0);
}

TEST_CASE("clients are given the servers of their service, and stats reach the core", "[discovery][core][services]") {
    const auto key = gecko::test::test_key("services");
    gecko::core::Core core(core_options(key));
    core.start();
    Events ev;
    DiscoveryClient node(client_options(key, "arm", core));
    node.add(reg(20, EntityKind::server, "arm/move", "Goal->Result"));
    node.add(reg(21, EntityKind::client, "arm/move", "Goal->Result"));
    node.add(reg(22, EntityKind::subscriber, "arm/move", "Goal->Result"));  // a topic of the same name is another namespace
    node.watch(21, ev.watcher(21));
    node.watch(22, ev.watcher(22));
    REQUIRE(ev.wait_peers(21, 1, 10s));
    REQUIRE(ev.wait_peers(22, 0, 10s));
    TopicStats s;
    s.id = 20;
    s.messages_per_s = 50;
    s.latency_ns = 1234;
    node.report({s});

    gecko::net::FinderOptions q;
    q.key = key;
    q.multicast = false;
    q.core = core.endpoint();
    const auto r = gecko::test::query_until(q, [](const gecko::Graph& r) {
        const auto* t = r.find("arm/move", true);
        return t && !t->producers.empty() && t->producers[0].figures;
    }, 20s);
    const auto* t = r.find("arm/move", true);
    REQUIRE(t);
    REQUIRE(t->producers.size() == 1);
    REQUIRE(t->producers[0].figures);
    CHECK(t->producers[0].figures->messages_per_s == Approx(50));
    CHECK(t->producers[0].figures->latency_ns == 1234);
    CHECK(t->consumers.size() == 1);
    REQUIRE(r.nodes.size() == 1);
    CHECK(r.nodes[0].name == "arm");
    CHECK(r.nodes[0].pid == ::getpid());
}

TEST_CASE("a node pointed at the core of another key is told so", "[discovery][core]") {
    const auto key = gecko::test::test_key("wrongkey");
    gecko::core::Core core(core_options(key));
    core.start();
    auto o = client_options(key + "-other", "lost", core);
    o.find_timeout = 200ms;
    DiscoveryClient client(o);
    CHECK_FALSE(client.wait_for_core(1s));
    CHECK_THAT(client.describe_attempts(), Catch::Contains("serves another key"));
}
