// Publishers and subscribers in separate processes, over tcp and ipc on
// loopback, with and without a real geckocore.

#include <catch2/catch.hpp>

#include <unistd.h>

#include <chrono>
#include <set>
#include <string>

#include "support/ports.hpp"
#include "support/process.hpp"

using namespace std::chrono_literals;
using gecko::test::Process;
using gecko::test::SpawnOptions;
using gecko::test::Stderr;
using gecko::test::TempDir;

namespace {

Process node(const std::vector<std::string>& args, const SpawnOptions& options = {}) {
    return Process::spawn(GECKO_TEST_NODE, args, options);
}

// The endpoint a publisher process bound, from its "ready ENDPOINT..." line:
// the first one starting with `scheme` (tcp://127.0.0.1:* comes back with its port).
std::string bound_endpoint(Process& pub, const std::string& scheme) {
    const auto ready = pub.wait_for_line("ready", 10s);
    INFO("publisher output:\n" << pub.output());
    REQUIRE(ready);
    const auto endpoint = gecko::test::endpoint_after(*ready, " " + scheme);
    REQUIRE(endpoint);
    return scheme + *endpoint;
}

// Nodes that find each other through a geckocore of their own (unicast, on a
// port it picked), with their ipc sockets in `ipc_dir`.
SpawnOptions with_core(const gecko::test::CoreOnLoopback& core, const TempDir& ipc_dir) {
    SpawnOptions env;
    env.env = {{"GECKO_CORE", core.address()}, {"GECKO_NO_MULTICAST", "1"}, {"GECKO_IPC_DIR", ipc_dir.path()}};
    env.unset_env = {"GECKO_KEY", "GECKO_DISCOVERY", "GECKO_MULTICAST", "GECKO_INTERFACE"};
    return env;
}

std::vector<std::string> with(std::vector<std::string> a, const std::vector<std::string>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
}

// Expects "recv 1" .. "recv n" in order from a subscriber process.
void expect_in_order(Process& sub, long n) {
    for (long i = 1; i <= n; ++i) {
        auto line = sub.out().wait_for("recv ", 10s);
        REQUIRE(line);
        CHECK(line->rfind("recv " + std::to_string(i) + " ", 0) == 0);
    }
}

}  // namespace

TEST_CASE("a subscriber process receives a publisher process's messages in order over tcp and ipc", "[integration]") {
    TempDir dir;
    for (const std::string scheme : {"tcp://", "ipc://"}) {
        const std::string bind = scheme == "tcp://" ? "tcp://127.0.0.1:*" : dir.ipc("numbers.sock");
        auto pub = node({"pub", "--count", "200", "--wait-subs", "1", "--no-discovery", "--key", "it", "--endpoint", bind});
        const std::string endpoint = bound_endpoint(pub, scheme);
        INFO("endpoint " << endpoint);
        auto sub = node({"sub", "--count", "200", "--no-discovery", "--key", "it", "--endpoint", endpoint});
        expect_in_order(sub, 200);
        auto stats = sub.wait_for_line("stats", 10s);
        REQUIRE(stats);
        CHECK(stats->find("drops=0") != std::string::npos);
        CHECK(sub.wait(20s) == 0);
    }
}

TEST_CASE("with geckocore, publisher and subscriber find each other in either start order", "[integration][discovery]") {
    const std::string key = "it-" + std::to_string(::getpid());
    const auto core = gecko::test::start_core(GECKOCORE_PATH, key);
    TempDir ipc_dir;
    const SpawnOptions env = with_core(core, ipc_dir);
    const std::vector<std::string> common = {"--key", key};

    SECTION("subscriber first") {
        auto sub = node(with({"sub", "--count", "50"}, common), env);
        REQUIRE(sub.wait_for_line("ready", 10s));
        auto pub = node(with({"pub", "--count", "50", "--wait-subs", "1"}, common), env);
        expect_in_order(sub, 50);
        CHECK(sub.wait(20s) == 0);
    }
    SECTION("publisher first") {
        auto pub = node(with({"pub", "--count", "50", "--wait-subs", "1"}, common), env);
        REQUIRE(pub.wait_for_line("ready", 10s));
        auto sub = node(with({"sub", "--count", "50"}, common), env);
        expect_in_order(sub, 50);
        CHECK(sub.wait(20s) == 0);
    }
}

TEST_CASE("nodes on one host link over shared memory, and over ipc when the segment cannot be opened",
          "[integration][discovery][shm]") {
    const std::string key = "it-shm-" + std::to_string(::getpid());
    const auto core = gecko::test::start_core(GECKOCORE_PATH, key);
    TempDir ipc_dir;
    SpawnOptions env = with_core(core, ipc_dir);
    env.stderr_mode = Stderr::merge;  // the subscriber's log lines, with its output
    auto pub = node({"pub", "--count", "400", "--wait-subs", "1", "--key", key}, env);
    const auto ready = pub.wait_for_line("ready", 10s);
    REQUIRE(ready);
    const auto segment = gecko::test::endpoint_after(*ready, " shm://");
    REQUIRE(segment);  // the publisher offers shared memory

    SECTION("shared memory") {
        auto sub = node({"sub", "--count", "400", "--key", key}, env);
        expect_in_order(sub, 400);
        CHECK(sub.wait(20s) == 0);
        CHECK(sub.output().find("cannot use shm://") == std::string::npos);
    }
    SECTION("its segment is gone: ipc, said once") {
        // As if it lived in another container: the name is not there to open.
        REQUIRE(::unlink(("/dev/shm/" + *segment).c_str()) == 0);
        auto sub = node({"sub", "--count", "400", "--key", key}, env);
        expect_in_order(sub, 400);
        CHECK(sub.wait(20s) == 0);
        const auto out = sub.output();
        INFO(out);
        CHECK(out.find("cannot use shm://" + *segment) != std::string::npos);
        CHECK(out.find("; using ipc://") != std::string::npos);
    }
}

TEST_CASE("a subscriber process receives from two publisher processes", "[integration][discovery]") {
    const std::string key = "it2-" + std::to_string(::getpid());
    const auto core = gecko::test::start_core(GECKOCORE_PATH, key);
    TempDir ipc_dir;
    const SpawnOptions env = with_core(core, ipc_dir);
    auto sub = node({"sub", "--count", "40", "--key", key}, env);
    REQUIRE(sub.wait_for_line("ready", 10s));
    auto a = node({"pub", "--count", "20", "--wait-subs", "1", "--key", key}, env);
    auto b = node({"pub", "--count", "20", "--wait-subs", "1", "--key", key}, env);
    std::set<std::string> publishers;
    for (int i = 0; i < 40; ++i) {
        auto line = sub.out().wait_for("recv ", 10s);
        REQUIRE(line);
        publishers.insert(line->substr(line->rfind(' ') + 1));
    }
    CHECK(publishers.size() == 2);
    CHECK(sub.wait(20s) == 0);
}

TEST_CASE("a subscriber process of another type counts mismatches and decodes nothing", "[integration][types]") {
    const std::vector<std::string> common = {"--no-discovery", "--key", "it"};
    auto pub = node(with({"pub", "--type", "int", "--count", "5", "--wait-subs", "1", "--endpoint", "tcp://127.0.0.1:*"}, common));
    const std::string tcp = bound_endpoint(pub, "tcp://");
    SpawnOptions quiet;
    quiet.stderr_mode = gecko::test::Stderr::discard;
    auto sub = node(with({"sub", "--type", "string", "--count", "1", "--timeout-ms", "1500", "--endpoint", tcp}, common), quiet);
    auto stats = sub.wait_for_line("stats", 10s);
    REQUIRE(stats);
    CHECK(stats->find("received=0") != std::string::npos);
    CHECK(stats->find("mismatches=5") != std::string::npos);
    CHECK(sub.wait(20s) == 1);
}
