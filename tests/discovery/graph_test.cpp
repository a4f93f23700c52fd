// SPDX-License-Identifier: Apache-2.0
// The public graph API (gecko/graph.hpp) against a real geckocore process:
// node.graph(), query_graph() without a node, on_graph_change().
#include "harness.hpp"

#include <gecko/gecko.hpp>
#include <gecko/msgs/std.hpp>

#include <catch2/catch.hpp>

#include <condition_variable>
#include <mutex>

using namespace gecko::test;

namespace {

// Polls (bounded) until `pred` holds for the graph the node sees.
template <class Pred>
gecko::Graph graph_until(gecko::Node& node, Pred pred) {
    const auto deadline = std::chrono::steady_clock::now() + 20s;
    gecko::Graph g;
    while (std::chrono::steady_clock::now() < deadline) {
        try {
            g = node.graph(10s);
            if (pred(g)) return g;
        } catch (const gecko::Error&) {
        }
        std::this_thread::sleep_for(20ms);  // poll interval of a bounded wait
    }
    return g;
}

}  // namespace

TEST_CASE("node.graph() lists nodes, topics with types, publishers, subscribers, servers and clients",
          "[discovery][graph]") {
    const auto key = test_key("graph");
    auto core = CoreProcess::start(key);
    gecko::Node a(node_options(key, "arm", core));
    gecko::Node b(node_options(key, "planner", core));
    gecko::PublisherOptions latched;
    latched.latched = true;
    auto pub = a.publisher<gecko::msgs::Int64>("joint", latched);
    auto sub = b.subscriber<gecko::msgs::Int64>("joint");
    auto server = a.service<gecko::msgs::Int64, gecko::msgs::Int64>("double", [](const gecko::msgs::Int64& x) {
        return gecko::msgs::Int64{2 * x.data};
    });
    auto client = b.client<gecko::msgs::Int64, gecko::msgs::Int64>("double");

    const auto g = graph_until(b, [](const gecko::Graph& g) {
        const auto* t = g.find("joint");
        const auto* s = g.find("double", true);
        return t && s && t->producers.size() == 1 && t->consumers.size() == 1 && s->producers.size() == 1 &&
               s->consumers.size() == 1;
    });
    CHECK(g.key == key);
    CHECK(g.nodes.size() == 2);
    const auto* t = g.find("joint");
    REQUIRE(t);
    CHECK(t->type == "gecko.msgs.Int64");
    REQUIRE(t->producers.size() == 1);
    CHECK(t->producers[0].node == "arm");
    CHECK(t->producers[0].kind == "publisher");
    CHECK(t->producers[0].latched);
    REQUIRE(t->consumers.size() == 1);
    CHECK(t->consumers[0].node == "planner");
    const auto* n = g.node_of(t->producers[0].session);
    REQUIRE(n);
    CHECK(n->name == "arm");
    CHECK_FALSE(n->locators.empty());
    const auto* s = g.find("double", true);
    REQUIRE(s);
    CHECK(s->type == "gecko.msgs.Int64->gecko.msgs.Int64");
    CHECK(s->producers.at(0).kind == "server");
    CHECK(s->consumers.at(0).kind == "client");
    CHECK(g.find("double") == nullptr);  // a service is not a topic

    // The same, without a node of one's own.
    const auto q = gecko::query_graph(node_options(key, "tool", core), 10s);
    CHECK(q.find("joint") != nullptr);
    CHECK(q.nodes.size() == 2);  // asking registered nothing
}

TEST_CASE("on_graph_change() reports topics as they appear and go", "[discovery][graph]") {
    const auto key = test_key("graph-watch");
    auto core = CoreProcess::start(key);
    gecko::Node watcher(node_options(key, "watcher", core));
    std::mutex m;
    std::condition_variable cv;
    std::vector<gecko::GraphEvent> events;
    auto watch = watcher.on_graph_change([&](const gecko::GraphEvent& e) {
        std::lock_guard<std::mutex> lock(m);
        events.push_back(e);
        cv.notify_all();
    });
    watcher.spin_in_background();  // graph callbacks run where the node spins
    auto seen = [&](gecko::GraphEvent::Kind kind, const std::string& name) {
        std::unique_lock<std::mutex> lock(m);
        return cv.wait_for(lock, 20s, [&] {
            for (const auto& e : events)
                if (e.kind == kind && e.name == name) return true;
            return false;
        });
    };
    {
        gecko::Node other(node_options(key, "camera", core));
        auto pub = other.publisher<gecko::msgs::String>("image_info");
        REQUIRE(seen(gecko::GraphEvent::Kind::appeared, "image_info"));
        {
            std::lock_guard<std::mutex> lock(m);
            for (const auto& e : events)
                if (e.name == "image_info") CHECK(e.type == "gecko.msgs.String");
        }
    }  // the node says goodbye: its topic goes
    CHECK(seen(gecko::GraphEvent::Kind::gone, "image_info"));

    watch.reset();  // no more callbacks after this returns
    const auto count = [&] {
        std::lock_guard<std::mutex> lock(m);
        return events.size();
    }();
    gecko::Node late(node_options(key, "late", core));
    auto pub = late.publisher<gecko::msgs::String>("after_reset");
    REQUIRE(graph_until(watcher, [](const gecko::Graph& g) { return g.find("after_reset") != nullptr; })
                .find("after_reset"));
    std::lock_guard<std::mutex> lock(m);
    CHECK(events.size() == count);
}
