// Publishers and subscribers in separate processes, over tcp and ipc on
// loopback, with and without a real geckocore.

#include <catch2/catch.hpp>

#include <unistd.h>

#include <chrono>
#include <set>
#include <string>

#include "support/process.hpp"

using namespace std::chrono_literals;
using gecko::test::Process;
using gecko::test::SpawnOptions;

namespace {

// Ports unique per test process, so ctest can run tests in parallel.
int port_base() { return 30000 + (::getpid() % 1000) * 20; }

Process node(const std::vector<std::string>& args, const SpawnOptions& options = {}) {
    return Process::spawn(GECKO_TEST_NODE, args, options);
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
    const std::string tcp = "tcp://127.0.0.1:" + std::to_string(port_base());
    const std::string ipc = "ipc:///tmp/gecko-it-" + std::to_string(::getpid()) + ".sock";
    for (const auto& endpoint : {tcp, ipc}) {
        INFO("endpoint " << endpoint);
        const std::vector<std::string> common = {"--no-discovery", "--key", "it", "--endpoint", endpoint};
        auto pub = node(with({"pub", "--count", "200", "--wait-subs", "1"}, common));
        REQUIRE(pub.wait_for_line("ready", 5s));
        auto sub = node(with({"sub", "--count", "200"}, common));
        expect_in_order(sub, 200);
        auto stats = sub.wait_for_line("stats", 5s);
        REQUIRE(stats);
        CHECK(stats->find("drops=0") != std::string::npos);
        CHECK(sub.wait(5s) == 0);
    }
}

TEST_CASE("with geckocore, publisher and subscriber find each other in either start order", "[integration][discovery]") {
    const int port = port_base() + 1;
    const std::string key = "it-" + std::to_string(::getpid());
    SpawnOptions env;
    env.env = {{"GECKO_CORE", "127.0.0.1:" + std::to_string(port)}, {"GECKO_NO_MULTICAST", "1"}};
    auto core = Process::spawn(GECKOCORE_PATH, {"--key", key, "--no-multicast", "--listen", "tcp://127.0.0.1:" + std::to_string(port)});
    REQUIRE(core.wait_for_line("listening", 5s));
    const std::vector<std::string> common = {"--key", key};

    SECTION("subscriber first") {
        auto sub = node(with({"sub", "--count", "50"}, common), env);
        REQUIRE(sub.wait_for_line("ready", 5s));
        auto pub = node(with({"pub", "--count", "50", "--wait-subs", "1"}, common), env);
        expect_in_order(sub, 50);
        CHECK(sub.wait(5s) == 0);
    }
    SECTION("publisher first") {
        auto pub = node(with({"pub", "--count", "50", "--wait-subs", "1"}, common), env);
        REQUIRE(pub.wait_for_line("ready", 5s));
        auto sub = node(with({"sub", "--count", "50"}, common), env);
        expect_in_order(sub, 50);
        CHECK(sub.wait(5s) == 0);
    }
}

TEST_CASE("a subscriber process receives from two publisher processes", "[integration][discovery]") {
    const int port = port_base() + 2;
    const std::string key = "it2-" + std::to_string(::getpid());
    SpawnOptions env;
    env.env = {{"GECKO_CORE", "127.0.0.1:" + std::to_string(port)}, {"GECKO_NO_MULTICAST", "1"}};
    auto core = Process::spawn(GECKOCORE_PATH, {"--key", key, "--no-multicast", "--listen", "tcp://127.0.0.1:" + std::to_string(port)});
    REQUIRE(core.wait_for_line("listening", 5s));
    auto sub = node({"sub", "--count", "40", "--key", key}, env);
    REQUIRE(sub.wait_for_line("ready", 5s));
    auto a = node({"pub", "--count", "20", "--wait-subs", "1", "--key", key}, env);
    auto b = node({"pub", "--count", "20", "--wait-subs", "1", "--key", key}, env);
    std::set<std::string> publishers;
    for (int i = 0; i < 40; ++i) {
        auto line = sub.out().wait_for("recv ", 10s);
        REQUIRE(line);
        publishers.insert(line->substr(line->rfind(' ') + 1));
    }
    CHECK(publishers.size() == 2);
    CHECK(sub.wait(5s) == 0);
}

TEST_CASE("a subscriber process of another type counts mismatches and decodes nothing", "[integration][types]") {
    const std::string tcp = "tcp://127.0.0.1:" + std::to_string(port_base() + 3);
    const std::vector<std::string> common = {"--no-discovery", "--key", "it", "--endpoint", tcp};
    auto pub = node(with({"pub", "--type", "int", "--count", "5", "--wait-subs", "1"}, common));
    REQUIRE(pub.wait_for_line("ready", 5s));
    SpawnOptions quiet;
    quiet.stderr_mode = gecko::test::Stderr::discard;
    auto sub = node(with({"sub", "--type", "string", "--count", "1", "--timeout-ms", "1500"}, common), quiet);
    auto stats = sub.wait_for_line("stats", 10s);
    REQUIRE(stats);
    CHECK(stats->find("received=0") != std::string::npos);
    CHECK(stats->find("mismatches=5") != std::string::npos);
    CHECK(sub.wait(5s) == 1);
}
