// SPDX-License-Identifier: Apache-2.0
// The nodes of one process share their connections to geckocore (up to 16
// sessions each), against a real geckocore process: what the core sends to a
// session names it, so each node gets its own answers over the shared link.
#include "harness.hpp"

#include <gecko/gecko.hpp>
#include <gecko/msgs/std.hpp>

#include <gecko/net/net.hpp>

#include <catch2/catch.hpp>

#include <memory>

using namespace gecko::test;

namespace {


// Polls (bounded) until the core holds `want` connections (its side of them); returns the last count.
int established_until(const std::string& port, int want) {
    int n = -1;
    for (int i = 0; i < 250 && (n = gecko::net::established_connections(static_cast<std::uint16_t>(std::stoul(port)))) != want; ++i)
        std::this_thread::sleep_for(20ms);  // poll interval of a bounded wait: a closed socket's FIN
    return n;
}

}  // namespace

TEST_CASE("the nodes of one process share their connections to the core, 16 to a connection", "[discovery][process]") {
    const auto key = test_key("shared");
    auto core = CoreProcess::start(key);
    std::vector<std::unique_ptr<gecko::Node>> nodes;
    std::vector<gecko::Publisher<gecko::msgs::Int64>> publishers;
    for (int i = 0; i < 20; ++i) {
        nodes.push_back(std::make_unique<gecko::Node>(node_options(key, "n" + std::to_string(i), core)));
        publishers.push_back(nodes.back()->publisher<gecko::msgs::Int64>("t" + std::to_string(i)));
    }
    const auto g = query_until(query_options(key), [](const gecko::Graph& r) { return r.nodes.size() == 20 && r.topics.size() == 20; }, 10s);
    REQUIRE(g.nodes.size() == 20);
    CHECK(established_until(core.port(), 2) == 2);  // 20 nodes: 16 + 4

    // Each node hears its own peers over the shared link: the last node subscribes
    // to the first node's topic and gets its messages.
    auto sub = nodes.back()->subscriber<gecko::msgs::Int64>("t0");
    gecko::msgs::Int64 got;
    bool received = false;
    for (int i = 0; i < 3000 && !received; ++i) {  // up to 30 s: the first may go before the link is up
        publishers.front().publish(gecko::msgs::Int64{42});
        received = sub.receive(got, 10ms);
    }
    REQUIRE(received);
    CHECK(got.data == 42);

    // Nodes that close say goodbye for themselves only: the others stay.
    publishers.clear();
    nodes.erase(nodes.begin(), nodes.begin() + 10);
    const auto after = query_until(query_options(key), [](const gecko::Graph& r) { return r.nodes.size() == 10; }, 10s);
    CHECK(after.nodes.size() == 10);
    CHECK(after.counters.at("leases_expired") == 0);
    nodes.clear();
    CHECK(established_until(core.port(), 0) == 0);  // the last member closes the connection
}

TEST_CASE("a node refused on a full shared connection gets one of its own", "[discovery][process]") {
    const auto key = test_key("fullconn");
    auto core = CoreProcess::start(key, {"--max-sessions-per-connection", "4"});
    std::vector<std::unique_ptr<gecko::Node>> nodes;
    for (int i = 0; i < 6; ++i) nodes.push_back(std::make_unique<gecko::Node>(node_options(key, "n" + std::to_string(i), core)));
    const auto g = query_until(query_options(key), [](const gecko::Graph& r) { return r.nodes.size() == 6; }, 10s);
    CHECK(g.nodes.size() == 6);
    // 4 on the shared connection, then the two it refused on connections of their own.
    CHECK(established_until(core.port(), 3) == 3);
}
