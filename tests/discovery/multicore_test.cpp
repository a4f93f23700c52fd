// SPDX-License-Identifier: Apache-2.0
// Several geckocores on one host: each key's core on a port of its own, found
// by multicast, and the host door (one well-known port) that sends unicast
// users (GECKO_CORE=host) to the core of their key, across the door holder's
// exit and a core's restart.
#include <catch2/catch.hpp>

#include <netinet/in.h>
#include <sys/socket.h>

#include <gecko/msgs/std.hpp>
#include <zmq.hpp>

#include <mutex>

#include "gecko/error.hpp"
#include "gecko/log.hpp"
#include "gecko/wire/discovery.hpp"

#include "discovery/harness.hpp"

using namespace gecko::test;

namespace {

// TODO(ports): use tests/support/ports.hpp once it lands.
std::uint16_t free_tcp_port() {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_ANY);
    ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
    socklen_t len = sizeof a;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    ::close(fd);
    return ntohs(a.sin_port);
}

// A node finds the core of its key through the door only: multicast off.
std::map<std::string, std::string> via_door(std::uint16_t door) {
    return {{"GECKO_NO_MULTICAST", "1"}, {"GECKO_CORE", "127.0.0.1:" + std::to_string(door)}};
}

gecko::net::FinderOptions door_query(const std::string& key, std::uint16_t door) {
    auto o = query_options(key);
    o.multicast = false;
    o.core = "127.0.0.1:" + std::to_string(door);
    return o;
}

bool serves(const gecko::Graph& r, const std::string& key, std::uint64_t instance = 0) {
    return r.key == key && (instance == 0 || r.core_instance == instance);
}

std::uint64_t instance_of(CoreProcess& c) {
    // "geckocore: key 'K' instance N listening on ..."
    for (const auto& line : c.proc.out().lines()) {
        const auto at = line.find(" instance ");
        if (line.rfind("geckocore: key", 0) == 0 && at != std::string::npos) return std::stoull(line.substr(at + 10));
    }
    return 0;
}

}  // namespace

TEST_CASE("three cores of three keys share one host with default ports, found by multicast and through the door",
          "[discovery][process][multicore]") {
    const auto door = free_tcp_port();
    const std::vector<std::string> keys{test_key("robot-a"), test_key("robot-b"), test_key("robot-c")};
    std::vector<CoreProcess> cores;
    for (const auto& key : keys)
        cores.push_back(CoreProcess::start(key, {"--door", std::to_string(door)}, "tcp://0.0.0.0:*"));
    // None of them exits for want of a port; each has its own.
    for (auto& c : cores) CHECK(c.proc.running());
    CHECK(cores[0].port() != cores[1].port());
    CHECK(cores[1].port() != cores[2].port());
    CHECK(cores[0].proc.output().find("holding the host door") != std::string::npos);

    // By multicast, each key reaches its own core.
    for (std::size_t i = 0; i < keys.size(); ++i) {
        const auto r = query_until(query_options(keys[i]), [&](const gecko::Graph& q) { return serves(q, keys[i]); }, 20s);
        CHECK(serves(r, keys[i], instance_of(cores[i])));
    }
    // With multicast off, the door sends each key to its core (the registrations
    // of the two others reach the door within a registration period).
    for (std::size_t i = 0; i < keys.size(); ++i) {
        const auto r = query_until(door_query(keys[i], door), [&](const gecko::Graph& q) { return serves(q, keys[i]); }, 20s);
        CHECK(serves(r, keys[i], instance_of(cores[i])));
    }
    // Nodes of two keys, unicast only, register with their own cores and match.
    auto pub = start_node(keys[1], "pub", via_door(door));
    pub.write_line("pub 2 imu gecko.msgs.Imu");
    auto sub = start_node(keys[1], "sub", via_door(door));
    sub.write_line("sub 1 imu gecko.msgs.Imu");
    CHECK(sub.wait_for_line(peers_line(1, 1), 10s));
    auto other = start_node(keys[2], "sub", via_door(door));
    other.write_line("sub 3 imu gecko.msgs.Imu");
    CHECK(other.wait_for_line(peers_line(3, 0), 10s));  // another key: never sees robot-b's publisher

    // A key with no core on the host: the door says so and lists the keys it serves.
    auto lost = door_query(test_key("nobody"), door);
    try {
        gecko::query_graph(lost, 10s);
        FAIL("a key without a core was answered");
    } catch (const gecko::Error& e) {
        CHECK(std::string(e.what()).find("no geckocore for key") != std::string::npos);
        CHECK(std::string(e.what()).find(keys[0]) != std::string::npos);
    }

    SECTION("the door holder exits: another core takes the door, unicast nodes keep working") {
        cores[0].proc.kill();
        REQUIRE(cores[0].proc.wait(10s));
        // One of the two takes it: look at both in turn, each briefly, until one says so.
        bool taken = false;
        for (const auto deadline = std::chrono::steady_clock::now() + 20s; !taken && std::chrono::steady_clock::now() < deadline;)
            taken = cores[1].proc.wait_for_line("holding the host door", 50ms).has_value() ||
                    cores[2].proc.wait_for_line("holding the host door", 50ms).has_value();
        CHECK(taken);
        for (std::size_t i = 1; i < keys.size(); ++i) {
            const auto r = query_until(door_query(keys[i], door), [&](const gecko::Graph& q) { return serves(q, keys[i]); }, 20s);
            CHECK(serves(r, keys[i], instance_of(cores[i])));
        }
        // A new node of robot-b still finds its core and its publisher.
        auto late = start_node(keys[1], "late", via_door(door));
        late.write_line("sub 4 imu gecko.msgs.Imu");
        CHECK(late.wait_for_line(peers_line(4, 1), 10s));
    }

    SECTION("a core restarts on another port: unicast nodes go back through the door and re-register") {
        cores[1].proc.kill();
        REQUIRE(cores[1].proc.wait(10s));
        auto again = CoreProcess::start(keys[1], {"--door", std::to_string(door)}, "tcp://0.0.0.0:*");
        const auto new_instance = instance_of(again);
        // The living nodes find the new core (their old one is gone) and re-register:
        // its table has both of them back.
        const auto r = query_until(door_query(keys[1], door), [&](const gecko::Graph& q) {
            return serves(q, keys[1], new_instance) && producers(q, "imu") == 1 && consumers(q, "imu") == 1;
        }, 10s);
        CHECK(serves(r, keys[1], new_instance));
        CHECK(producers(r, "imu") == 1);
        CHECK(consumers(r, "imu") == 1);
    }
}

TEST_CASE("the door ignores a node's adds sent behind its hello, and such a node still registers with its core",
          "[discovery][process][multicore]") {
    namespace discovery = gecko::discovery;
    const auto door = free_tcp_port();
    const auto key = test_key("early");
    auto core = CoreProcess::start(key, {"--door", std::to_string(door)});
    REQUIRE(core.proc.output().find("holding the host door") != std::string::npos);

    zmq::context_t ctx(1);
    zmq::socket_t dealer(ctx, zmq::socket_type::dealer);
    dealer.set(zmq::sockopt::linger, 0);
    dealer.connect("tcp://127.0.0.1:" + std::to_string(door));
    auto answer = [&](std::chrono::milliseconds within) -> std::optional<discovery::Message> {
        zmq::pollitem_t item{dealer.handle(), 0, ZMQ_POLLIN, 0};
        if (zmq::poll(&item, 1, within) <= 0) return std::nullopt;
        zmq::message_t m;
        if (!dealer.recv(m)) return std::nullopt;
        std::string why;
        return discovery::Message::parse(static_cast<const char*>(m.data()), m.size(), &why);
    };
    // An add of a session (no key): silence. A question without key or session: the door says what it is.
    discovery::Writer early_add("add", 2);
    early_add.kv("s", std::uint64_t{42});
    early_add.kv("id", std::uint64_t{7});
    dealer.send(zmq::const_buffer(early_add.data(), early_add.size()), zmq::send_flags::none);
    discovery::Writer nothing("list", 0);
    dealer.send(zmq::const_buffer(nothing.data(), nothing.size()), zmq::send_flags::none);
    const auto first = answer(10s);
    REQUIRE(first);
    CHECK(first->type() == "error");
    CHECK(discovery::get_str(first->root(), "code").value_or("") == "door");
    CHECK_FALSE(answer(200ms));  // nothing else: the add got no answer

    // Nodes that have their entities before their first hello (so their adds
    // ride behind it, to the door) still register with the core, and match,
    // and hear no complaint from the door about them.
    std::mutex log_mutex;
    std::vector<std::string> warnings;
    gecko::set_log_sink([&](gecko::LogLevel level, std::string_view, std::string_view message) {
        if (level < gecko::LogLevel::warn) return;
        std::lock_guard<std::mutex> lock(log_mutex);
        warnings.emplace_back(message);
    });
    auto pub_options = node_options(key, "pub", core);
    pub_options.core = "127.0.0.1:" + std::to_string(door);
    auto sub_options = pub_options;
    sub_options.name = "sub";
    gecko::Node pub_node(pub_options);
    auto pub = pub_node.publisher<gecko::msgs::Int64>("early");
    gecko::Node sub_node(sub_options);
    auto sub = sub_node.subscriber<gecko::msgs::Int64>("early");
    REQUIRE(pub.wait_for_subscribers(1, 10s));
    gecko::msgs::Int64 m;
    m.data = 5;
    pub.publish(m);
    gecko::msgs::Int64 got;
    REQUIRE(sub.receive(got, 10s));
    CHECK(got.data == 5);
    CHECK(core.proc.running());
    gecko::set_log_sink(nullptr);
    std::lock_guard<std::mutex> lock(log_mutex);
    for (const auto& w : warnings) CHECK(w.find("door") == std::string::npos);
}
