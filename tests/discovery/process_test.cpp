// SPDX-License-Identifier: Apache-2.0
// Discovery with real processes on loopback: the geckocore binary and
// fake_node helpers, started in every order, killed with -9, restarted.
#include "harness.hpp"

#include "gecko/net/net.hpp"
#include "gecko/wire/discovery.hpp"

#include <catch2/catch.hpp>
#include <zmq.hpp>

#include <arpa/inet.h>

using namespace gecko::test;
using namespace gecko::detail;
namespace discovery = gecko::discovery;
namespace net = gecko::net;
using namespace std::chrono_literals;

TEST_CASE("publishers and subscribers find each other whatever starts first, core included", "[discovery][process]") {
    const auto key = test_key("order");
    // A node that starts before the core waits for it (multicast announcement).
    auto sub = start_node(key, "sub");
    sub.write_line("sub 1 imu gecko.msgs.Imu");
    CHECK_FALSE(sub.wait_for_line("core ", 300ms));
    auto core = CoreProcess::start(key);
    REQUIRE(sub.wait_for_line(peers_line(1, 0), 10s));  // told once, as soon as the core answered

    auto pub = start_node(key, "pub");
    pub.write_line("pub 2 imu gecko.msgs.Imu");
    const auto one = sub.wait_for_line(peers_line(1, 1), 10s);
    REQUIRE(one);
    CHECK_THAT(*one, Catch::Contains(" 2@pub@tcp://"));
    CHECK_THAT(*one, !Catch::Contains("0.0.0.0"));

    // A second publisher, then a subscriber that comes last.
    auto pub2 = start_node(key, "pub2");
    pub2.write_line("pub 3 imu gecko.msgs.Imu");
    REQUIRE(sub.wait_for_line(peers_line(1, 2), 10s));
    auto late = start_node(key, "late");
    late.write_line("sub 4 imu gecko.msgs.Imu");
    REQUIRE(late.wait_for_line(peers_line(4, 2), 10s));

    // A publisher that withdraws is gone for its subscribers at once.
    pub2.write_line("remove 3");
    REQUIRE(sub.wait_for_line(peers_line(1, 1), 10s));
    REQUIRE(late.wait_for_line(peers_line(4, 1), 10s));
}

TEST_CASE("a node killed with -9 disappears from the core and from its peers", "[discovery][process]") {
    const auto key = test_key("kill9");
    const auto lease = 1500ms;
    auto core = CoreProcess::start(key, {"--lease", std::to_string(lease.count())});
    auto sub = start_node(key, "sub");
    sub.write_line("sub 1 imu gecko.msgs.Imu");
    auto pub = start_node(key, "pub");
    pub.write_line("pub 2 imu gecko.msgs.Imu");
    REQUIRE(sub.wait_for_line(peers_line(1, 1), 10s));
    const bool kill_subscriber = GENERATE(false, true);
    INFO((kill_subscriber ? "the subscriber" : "the publisher") << " is killed");

    Process& victim = kill_subscriber ? sub : pub;
    victim.kill();
    REQUIRE(victim.wait(10s));
    // Same host: the core's kill(pid, 0) check notices, without waiting for the
    // lease. What is asserted is which mechanism removed the node (the core's
    // counters), not a time: the waits are generous multiples of the lease so
    // that a loaded machine cannot fail the test, and the lease would have
    // removed the node too, but counted as an expired lease.
    if (!kill_subscriber) REQUIRE(sub.wait_for_line(peers_line(1, 0), 10 * lease));
    const auto r = query_until(query_options(key), [](const gecko::Graph& r) { return r.nodes.size() == 1; }, 10 * lease);
    REQUIRE(r.nodes.size() == 1);
    CHECK(producers(r, "imu") == (kill_subscriber ? 1 : 0));
    CHECK(consumers(r, "imu") == (kill_subscriber ? 0 : 1));
    CHECK(r.counters.at("dead_processes") == 1);
    CHECK(r.counters.at("leases_expired") == 0);
}

TEST_CASE("a node that stops answering expires after the lease", "[discovery][process]") {
    const auto key = test_key("lease");
    auto core = CoreProcess::start(key, {"--lease", "1000"});
    auto sub = start_node(key, "sub");
    sub.write_line("sub 1 imu gecko.msgs.Imu");
    auto pub = start_node(key, "pub");
    pub.write_line("pub 2 imu gecko.msgs.Imu");
    REQUIRE(sub.wait_for_line(peers_line(1, 1), 10s));
    pub.kill(SIGSTOP);  // alive for kill(pid, 0), but silent: only the lease can catch it
    REQUIRE(sub.wait_for_line(peers_line(1, 0), 10s));
    const auto r = query_until(query_options(key), [](const gecko::Graph& r) { return r.nodes.size() == 1; }, 20s);
    CHECK(r.counters.at("leases_expired") == 1);
    // Woken up, it notices that the core forgot it and registers again.
    pub.kill(SIGCONT);
    REQUIRE(sub.wait_for_line(peers_line(1, 1), 10s));
}

namespace {

// Kills the core with -9, starts another on the same port, and checks that the
// table comes back within one lease while the watchers never see peers vanish.
void restart_core_scenario(const std::string& key, bool unicast) {
    const auto lease = 2000ms;
    std::vector<std::string> core_args{"--lease", std::to_string(lease.count())};
    if (unicast) core_args.push_back("--no-multicast");
    auto core = CoreProcess::start(key, core_args);
    std::map<std::string, std::string> env;
    if (unicast) env = {{"GECKO_NO_MULTICAST", "1"}, {"GECKO_CORE", core.endpoint}};
    auto sub = start_node(key, "sub", env, {"--lease", "2000"});
    sub.write_line("sub 1 imu gecko.msgs.Imu");
    sub.write_line("client 5 plan A->B");
    auto pub = start_node(key, "pub", env, {"--lease", "2000"});
    pub.write_line("pub 2 imu gecko.msgs.Imu");
    pub.write_line("server 6 plan A->B");
    REQUIRE(sub.wait_for_line(peers_line(1, 1), 10s));
    REQUIRE(sub.wait_for_line(peers_line(5, 1), 10s));
    sub.out().drain(100ms);
    const auto seen_before = sub.out().lines().size();
    // Both registered with the first core (asked where the nodes ask it: with
    // multicast off, at its address).
    auto asked = query_options(key);
    if (unicast) {
        asked.multicast = false;
        asked.core = core.endpoint;
    }
    REQUIRE(query_until(asked, [](const gecko::Graph& r) { return r.nodes.size() == 2; }, 20s).nodes.size() == 2);

    core.proc.kill();
    REQUIRE(core.proc.wait(10s));
    auto core2 = CoreProcess::start(key, core_args, "tcp://127.0.0.1:" + core.port());
    auto o = query_options(key);
    if (unicast) {
        o.multicast = false;
        o.core = core2.endpoint;
    }
    // The living nodes register again with the new core (normally within one
    // lease). The behaviour checked is that the whole table comes back from
    // them, with no peer vanishing on the way (below); the bound is a generous
    // multiple of the lease, not a time the test claims, so that a loaded
    // machine cannot fail it.
    const auto r = query_until(o, [](const gecko::Graph& r) {
        return r.nodes.size() == 2 && producers(r, "imu") == 1 && consumers(r, "imu") == 1 && r.find("plan", true) &&
               r.find("plan", true)->producers.size() == 1;
    }, 10 * lease);
    CHECK(r.nodes.size() == 2);
    CHECK(producers(r, "imu") == 1);
    CHECK(consumers(r, "imu") == 1);
    // The new core's warm-up (one lease) ends with a complete push to every watcher.
    REQUIRE(core2.proc.wait_for_line("warm-up over", 10s));
    REQUIRE(sub.wait_for_line("core ", 10s));
    sub.out().drain(300ms);
    INFO(sub.output());
    const auto& lines = sub.out().lines();
    for (auto i = seen_before; i < lines.size(); ++i)
        if (lines[i].rfind("peers ", 0) == 0) CHECK(peer_count(lines[i]) == 1);
    // A restart recovered within the lease is not a missing core: no warning.
    pub.out().drain(100ms);
    CHECK(sub.output().find("no geckocore") == std::string::npos);
    CHECK(pub.output().find("no geckocore") == std::string::npos);
    // And the data links are still described the same way: a fresh subscriber sees the publisher.
    auto late = start_node(key, "late", env);
    late.write_line("sub 7 imu gecko.msgs.Imu");
    REQUIRE(late.wait_for_line(peers_line(7, 1), 10s));
}

}  // namespace

TEST_CASE("a core killed with -9 and restarted gets its table back from the living nodes (multicast)", "[discovery][process][restart]") {
    restart_core_scenario(test_key("restart-mc"), false);
}

TEST_CASE("a core killed with -9 and restarted gets its table back from the living nodes (unicast only)", "[discovery][process][restart]") {
    restart_core_scenario(test_key("restart-uc"), true);
}

TEST_CASE("two keys on one multicast group never see each other", "[discovery][process]") {
    const auto a = test_key("alpha");
    const auto b = test_key("beta");
    auto core_a = CoreProcess::start(a);
    auto core_b = CoreProcess::start(b);
    auto pub = start_node(a, "pub");
    pub.write_line("pub 1 imu gecko.msgs.Imu");
    auto sub = start_node(b, "sub");
    sub.write_line("sub 2 imu gecko.msgs.Imu");
    auto sub_a = start_node(a, "sub_a");
    sub_a.write_line("sub 3 imu gecko.msgs.Imu");
    REQUIRE(sub_a.wait_for_line(peers_line(3, 1), 10s));
    REQUIRE(sub.wait_for_line(peers_line(2, 0), 10s));
    const auto rb = gecko::query_graph(query_options(b), 10s);
    CHECK(rb.key == b);
    CHECK(producers(rb, "imu") == 0);
    CHECK(consumers(rb, "imu") == 1);
    const auto ra = gecko::query_graph(query_options(a), 10s);
    CHECK(ra.key == a);
    CHECK(producers(ra, "imu") == 1);
    CHECK(ra.counters.at("duplicate_cores") == 0);
    sub.out().drain(200ms);
    for (const auto& line : sub.out().lines()) CHECK((line.rfind("peers ", 0) != 0 || peer_count(line) == 0));
}

TEST_CASE("a type conflict is reported to both sides with both type names", "[discovery][process][types]") {
    const auto key = test_key("conflict");
    auto core = CoreProcess::start(key);
    auto pub = start_node(key, "imu_driver");
    pub.write_line("pub 1 imu gecko.msgs.Imu");
    REQUIRE(query_until(query_options(key), [](const gecko::Graph& r) { return producers(r, "imu") == 1; }, 20s).nodes.size() == 1);
    auto sub = start_node(key, "controller");
    sub.write_line("sub 2 imu gecko.msgs.JointState");
    const auto sub_err = sub.wait_for_line("error 2 ", 10s);
    const auto pub_err = pub.wait_for_line("error 1 ", 10s);
    REQUIRE(sub_err);
    REQUIRE(pub_err);
    for (const auto& e : {*sub_err, *pub_err}) {
        CHECK_THAT(e, Catch::Contains("gecko.msgs.Imu") && Catch::Contains("gecko.msgs.JointState"));
    }
    const auto r = gecko::query_graph(query_options(key), 10s);
    REQUIRE(r.conflicts.size() == 1);
    CHECK_THAT(r.conflicts[0].message, Catch::Contains("gecko.msgs.Imu") && Catch::Contains("gecko.msgs.JointState"));
}

TEST_CASE("unicast-only discovery works with --no-multicast and GECKO_CORE", "[discovery][process][unicast]") {
    const auto key = test_key("unicast");
    auto core = CoreProcess::start(key, {"--no-multicast"});
    CHECK_THAT(core.proc.output(), Catch::Contains("no multicast"));
    const std::map<std::string, std::string> env{{"GECKO_NO_MULTICAST", "1"}, {"GECKO_CORE", core.endpoint}};
    auto sub = start_node(key, "sub", env);
    sub.write_line("sub 1 imu gecko.msgs.Imu");
    auto pub = start_node(key, "pub", env);
    pub.write_line("pub 2 imu gecko.msgs.Imu");
    REQUIRE(sub.wait_for_line(peers_line(1, 1), 10s));

    // Multicast on, nobody answering it: the explicit address is used after find_timeout.
    auto mixed = start_node(key, "mixed", {{"GECKO_CORE", core.endpoint}}, {"--find-timeout", "300"});
    mixed.write_line("sub 3 imu gecko.msgs.Imu");
    REQUIRE(mixed.wait_for_line(peers_line(3, 1), 10s));
}

TEST_CASE("geckocore refuses a boolean variable it cannot read, saying which, with exit status 2", "[discovery][process]") {
    SpawnOptions o;
    o.env = {{"GECKO_NO_MULTICAST", "maybe"}};
    o.stderr_mode = Stderr::capture;
    auto core = Process::spawn(GECKOCORE_PATH, {"--key", test_key("badflag")}, o);
    CHECK(core.wait(20s) == 2);
    CHECK(core.err().wait_for("GECKO_NO_MULTICAST", 10s).value_or("") ==
          "geckocore: GECKO_NO_MULTICAST='maybe': expected 1, true, yes or on; or 0, false, no or off");
}

TEST_CASE("without a core, a node says what it tried", "[discovery][process][unicast]") {
    const auto key = test_key("nocore");
    // A port nobody listens on: bind-and-close a socket to find one.
    auto node = start_node(key, "alone", {{"GECKO_CORE", "127.0.0.1:1"}}, {"--find-timeout", "200"});
    const auto deadline = std::chrono::steady_clock::now() + 20s;
    std::string text;
    while (std::chrono::steady_clock::now() < deadline) {
        node.write_line("describe");
        text = node.wait_for_line("attempts ", 10s).value_or("");
        if (text.find("refused") != std::string::npos) break;
    }
    CHECK_THAT(text, Catch::Contains("multicast 239.255.71.67:") && Catch::Contains("no answer"));
    CHECK_THAT(text, Catch::Contains("tcp://127.0.0.1:1") && Catch::Contains("refused"));
}

TEST_CASE("garbage on the multicast port and on the ROUTER is counted and ignored", "[discovery][process][robustness]") {
    const auto key = test_key("garbage");
    auto core = CoreProcess::start(key);
    std::string err;
    const auto any = net::interface_address("");
    auto sock = net::open_multicast_sender(*any, 1, err);
    REQUIRE(sock);
    sockaddr_in group{};
    group.sin_family = AF_INET;
    group.sin_port = htons(test_multicast_port());
    group.sin_addr = *net::parse_ipv4("239.255.71.67");
    const std::string bad[] = {std::string("\xc1\xc1\xc1", 3), "hello", std::string("\x93\x01\x02\x03", 4),
                               std::string("\x82\xa1v\x01\xa1t", 6), std::string("\xdd\xff\xff\xff\xff", 5),
                               std::string(3000, '\x90')};
    for (const auto& b : bad) REQUIRE(net::send_to(sock.get(), group, b.data(), b.size()).empty());
    // A well-formed query without a key is malformed too; one for another key is merely ignored.
    discovery::Writer nokey("query", 0);
    REQUIRE(net::send_to(sock.get(), group, nokey.data(), nokey.size()).empty());
    discovery::Writer other("query", 1);
    other.kv("key", key + "-someone-else");
    REQUIRE(net::send_to(sock.get(), group, other.data(), other.size()).empty());

    zmq::context_t ctx(1);
    zmq::socket_t dealer(ctx, zmq::socket_type::dealer);
    dealer.set(zmq::sockopt::linger, 0);
    dealer.connect(core.endpoint);
    dealer.send(zmq::str_buffer("not msgpack"), zmq::send_flags::none);
    dealer.send(zmq::str_buffer("two"), zmq::send_flags::sndmore);
    dealer.send(zmq::str_buffer("frames"), zmq::send_flags::none);
    discovery::Writer add_without_hello("add", 1);
    add_without_hello.kv("s", std::uint64_t{42});
    dealer.send(zmq::const_buffer(add_without_hello.data(), add_without_hello.size()), zmq::send_flags::none);
    discovery::Writer unknown_type("frobnicate", 0);
    dealer.send(zmq::const_buffer(unknown_type.data(), unknown_type.size()), zmq::send_flags::none);
    // Each gets an answer (error or unknown), and the core stays up.
    int answers = 0;
    for (int i = 0; i < 4; ++i) {
        zmq::pollitem_t item{dealer.handle(), 0, ZMQ_POLLIN, 0};
        if (zmq::poll(&item, 1, 10000ms) <= 0) break;
        zmq::message_t m;
        if (dealer.recv(m)) ++answers;
    }
    CHECK(answers == 4);

    const auto r = query_until(query_options(key), [&](const gecko::Graph& r) {
        return r.counters.at("malformed_datagrams") >= 7 && r.counters.at("other_key_queries") >= 1;
    }, 20s);
    CHECK(r.counters.at("malformed_datagrams") == 7);
    CHECK(r.counters.at("other_key_queries") == 1);
    CHECK(r.counters.at("malformed_messages") >= 3);
    CHECK(core.proc.running());
    CHECK(core.proc.wait_for_line("malformed", 10s));
    // And it still serves nodes.
    auto sub = start_node(key, "sub");
    sub.write_line("sub 1 imu gecko.msgs.Imu");
    REQUIRE(sub.wait_for_line(peers_line(1, 0), 10s));
}

TEST_CASE("a second core for the same key is reported by both cores and by the nodes", "[discovery][process]") {
    const auto key = test_key("twin");
    auto one = CoreProcess::start(key);
    auto two = CoreProcess::start(key);
    CHECK(one.proc.wait_for_line("another geckocore serves key", 10s));
    CHECK(two.proc.wait_for_line("another geckocore serves key", 10s));
    // A node registers with one of them and says that another answers too.
    auto node = start_node(key, "node");
    CHECK(node.wait_for_line("a second geckocore for key", 10s));
}

TEST_CASE("geckocore exits 0 on SIGTERM, 2 on usage errors, 1 when it cannot listen", "[discovery][process][cli]") {
    SpawnOptions quiet;
    quiet.stderr_mode = Stderr::discard;
    quiet.unset_env = {"GECKO_KEY"};
    CHECK(Process::spawn(GECKOCORE_PATH, {"--help"}, quiet).wait(20s) == 0);
    CHECK(Process::spawn(GECKOCORE_PATH, {}, quiet).wait(20s) == 2);
    CHECK(Process::spawn(GECKOCORE_PATH, {"--key", "k", "--ttl", "x"}, quiet).wait(20s) == 2);
    CHECK(Process::spawn(GECKOCORE_PATH, {"--key", "k", "--multicast", "10.1.1.1:5"}, quiet).wait(20s) == 2);
    CHECK(Process::spawn(GECKOCORE_PATH, {"--key", "k", "--bogus"}, quiet).wait(20s) == 2);

    const auto key = test_key("cli");
    auto core = CoreProcess::start(key);
    auto clash = Process::spawn(GECKOCORE_PATH, {"--key", key, "--no-multicast", "--listen", core.endpoint}, quiet);
    CHECK(clash.wait(20s) == 1);
    core.proc.kill(SIGTERM);
    CHECK(core.proc.wait(20s) == 0);
}
