// SPDX-License-Identifier: Apache-2.0
// The discovery wire format and option parsing, without any network.
#include "discovery/core_query.hpp"
#include "discovery/discovery_client.hpp"
#include "gecko/graph.hpp"
#include "gecko/net/finder.hpp"
#include "gecko/net/net.hpp"
#include "gecko/node.hpp"
#include "gecko/options.hpp"
#include "gecko/wire/discovery.hpp"
#include "geckocore/core.hpp"

#include <catch2/catch.hpp>

#include <cstdlib>

using namespace gecko::detail;
namespace discovery = gecko::discovery;
namespace net = gecko::net;
using gecko::net::normalize_core_address;

TEST_CASE("core addresses are normalised to tcp://host:port", "[discovery][options]") {
    CHECK(normalize_core_address("10.0.0.2") == "tcp://10.0.0.2:7651");
    CHECK(normalize_core_address("robot.local:9000") == "tcp://robot.local:9000");
    CHECK(normalize_core_address("tcp://10.0.0.2:7000") == "tcp://10.0.0.2:7000");
    CHECK(normalize_core_address("udp://x:1").empty());
    CHECK(normalize_core_address("host:notaport").empty());
    CHECK(normalize_core_address("").empty());
}

TEST_CASE("multicast settings parse as GROUP[:PORT] and reject non-multicast groups", "[discovery][options]") {
    std::string g;
    std::uint16_t p = 0;
    REQUIRE(gecko::parse_multicast("239.255.1.2:9999", g, p).empty());
    CHECK(g == "239.255.1.2");
    CHECK(p == 9999);
    REQUIRE(gecko::parse_multicast("239.255.1.3", g, p).empty());
    CHECK(p == 7650);
    CHECK_FALSE(gecko::parse_multicast("10.0.0.1:7650", g, p).empty());
    CHECK_FALSE(gecko::parse_multicast("239.255.1.2:0", g, p).empty());
    CHECK_FALSE(gecko::parse_multicast("239.255.1.2:70000", g, p).empty());
}

TEST_CASE("a node searches for its core where the GECKO_ variables say", "[discovery][options]") {
    ::setenv("GECKO_KEY", "dalek", 1);
    ::setenv("GECKO_CORE", "10.1.2.3:7000", 1);
    ::setenv("GECKO_MULTICAST", "239.255.9.9:7777", 1);
    ::setenv("GECKO_NO_MULTICAST", "1", 1);
    ::setenv("GECKO_INTERFACE", "eth1", 1);
    const auto o = gecko::finder_options(gecko::NodeOptions::from_env());
    CHECK(o.key == "dalek");
    CHECK(o.core == "10.1.2.3:7000");
    CHECK(o.multicast_group == "239.255.9.9");
    CHECK(o.multicast_port == 7777);
    CHECK_FALSE(o.multicast);
    CHECK(o.interface == "eth1");
    ::setenv("GECKO_MULTICAST", "10.0.0.1", 1);
    CHECK_THROWS_WITH(gecko::NodeOptions::from_env(), Catch::Contains("GECKO_MULTICAST"));
    for (const char* v : {"GECKO_KEY", "GECKO_CORE", "GECKO_MULTICAST", "GECKO_NO_MULTICAST", "GECKO_INTERFACE"}) ::unsetenv(v);
    const auto d = gecko::finder_options(gecko::NodeOptions::from_env());
    CHECK(d.multicast);
    CHECK(d.multicast_group == "239.255.71.67");
    CHECK(d.multicast_port == 7650);
}

TEST_CASE("boolean GECKO_ variables take one set of values, in nodes and in geckocore alike", "[discovery][options]") {
    for (const char* on : {"1", "true", "yes", "on", "TRUE", "Yes", " on ", "\t1\n", "oN"}) {
        bool out = false;
        CHECK(gecko::parse_flag(on, out).empty());
        CHECK(out);
    }
    for (const char* off : {"0", "false", "no", "off", "FALSE", "No", " off", "0 ", "oFf"}) {
        bool out = true;
        CHECK(gecko::parse_flag(off, out).empty());
        CHECK_FALSE(out);
    }
    for (const char* empty : {"", " ", "\t"}) {  // the default: `out` untouched
        bool a = true, b = false;
        CHECK(gecko::parse_flag(empty, a).empty());
        CHECK(gecko::parse_flag(empty, b).empty());
        CHECK(a);
        CHECK_FALSE(b);
    }
    for (const char* bad : {"maybe", "2", "y", "n", "enable", "o n", "-1", "truee"}) {
        bool out = false;
        CHECK(gecko::parse_flag(bad, out) == "expected 1, true, yes or on; or 0, false, no or off");
    }

    // The same values reach a node and the core: `no` leaves multicast on in both.
    for (const auto& [value, multicast] : {std::pair<const char*, bool>{"no", true}, {" YES", false}, {"Off", true},
                                           {"1", false}, {"", true}}) {
        ::setenv("GECKO_NO_MULTICAST", value, 1);
        CHECK(gecko::NodeOptions::from_env().multicast_enabled == multicast);
        CHECK(gecko::core::CoreOptions::from_env().multicast == multicast);
    }
    ::setenv("GECKO_NO_MULTICAST", "maybe", 1);
    const std::string said = "GECKO_NO_MULTICAST='maybe': expected 1, true, yes or on; or 0, false, no or off";
    CHECK_THROWS_WITH(gecko::NodeOptions::from_env(), said);
    CHECK_THROWS_WITH(gecko::core::CoreOptions::from_env(), said);
    ::unsetenv("GECKO_NO_MULTICAST");

    // GECKO_DISCOVERY: on is discovery on.
    for (const auto& [value, discovery] : {std::pair<const char*, bool>{"off", false}, {"FALSE", false}, {"0", false},
                                           {"no", false}, {"on", true}, {"1", true}, {"", true}}) {
        ::setenv("GECKO_DISCOVERY", value, 1);
        CHECK(gecko::NodeOptions::from_env().discovery == discovery);
    }
    ::setenv("GECKO_DISCOVERY", "disabled", 1);
    CHECK_THROWS_WITH(gecko::NodeOptions::from_env(), Catch::StartsWith("GECKO_DISCOVERY='disabled': expected 1, true"));
    ::unsetenv("GECKO_DISCOVERY");

    for (const auto& [value, group] : {std::pair<const char*, bool>{"yes", true}, {"0", false}, {" On", true}}) {
        ::setenv("GECKO_SHM_GROUP", value, 1);
        CHECK(gecko::NodeOptions::from_env().shared_memory_group == group);
    }
    ::setenv("GECKO_SHM_GROUP", "group", 1);
    CHECK_THROWS_WITH(gecko::NodeOptions::from_env(), Catch::StartsWith("GECKO_SHM_GROUP='group': expected 1, true"));
    ::unsetenv("GECKO_SHM_GROUP");
}

TEST_CASE("CoreOptions::from_env reads geckocore's GECKO_ variables", "[discovery][options]") {
    ::setenv("GECKO_KEY", "dalek", 1);
    ::setenv("GECKO_MULTICAST", "239.255.9.9:7777", 1);
    ::setenv("GECKO_INTERFACE", "eth1", 1);
    ::setenv("GECKO_NO_MULTICAST", "true", 1);
    auto o = gecko::core::CoreOptions::from_env();
    CHECK(o.key == "dalek");
    CHECK(o.multicast_group == "239.255.9.9");
    CHECK(o.multicast_port == 7777);
    CHECK(o.interface == "eth1");
    CHECK_FALSE(o.multicast);
    ::setenv("GECKO_MULTICAST", "10.0.0.1", 1);
    CHECK_THROWS_WITH(gecko::core::CoreOptions::from_env(), Catch::StartsWith("GECKO_MULTICAST='10.0.0.1': "));
    for (const char* v : {"GECKO_KEY", "GECKO_MULTICAST", "GECKO_NO_MULTICAST", "GECKO_INTERFACE"}) ::unsetenv(v);
    o = gecko::core::CoreOptions::from_env();
    CHECK(o.key.empty());
    CHECK(o.multicast);
    CHECK(o.multicast_group == gecko::core::CoreOptions{}.multicast_group);
}

TEST_CASE("malformed input is rejected with a reason, never a crash", "[discovery][wire]") {
    std::string why;
    const char garbage[] = "\xc1\xff\x00garbage";
    CHECK_FALSE(discovery::Message::parse(garbage, sizeof garbage, &why));
    CHECK_FALSE(why.empty());
    // Truncated map, a non-map, a map without v/t, a wrong version.
    msgpack::sbuffer b;
    msgpack::packer<msgpack::sbuffer> pk(b);
    pk.pack_map(3);
    pk.pack(std::string("v"));
    pk.pack(1);
    CHECK_FALSE(discovery::Message::parse(b.data(), b.size(), &why));
    msgpack::sbuffer b2;
    msgpack::pack(b2, std::vector<int>{1, 2, 3});
    CHECK_FALSE(discovery::Message::parse(b2.data(), b2.size(), &why));
    CHECK(why == "not a msgpack map");
    discovery::Writer other("hello", 0);
    std::string bytes = other.str();
    bytes[bytes.find('\x02')] = '\x07';  // v: 2 -> 7
    CHECK_FALSE(discovery::Message::parse(bytes.data(), bytes.size(), &why));
    CHECK(why.find("version 7") != std::string::npos);
    // A huge declared array length must not allocate.
    const char huge[] = "\xdd\xff\xff\xff\xff";
    CHECK_FALSE(discovery::Message::parse(huge, sizeof huge - 1, &why));
}

TEST_CASE("a peer survives a round trip through the wire format", "[discovery][wire]") {
    Peer p;
    p.reg.id = 0xfedcba9876543210ull;
    p.reg.kind = EntityKind::server;
    p.reg.topic = "arm/move";
    p.reg.type_name = "gecko.msgs.Goal->gecko.msgs.Result";
    p.reg.latched = true;
    p.locators = {"tcp://10.0.0.2:41234", "ipc:///tmp/gecko/x.sock"};
    p.session = 77;
    p.pid_ns = "pid:[4026531836]";
    p.node = "planner";
    p.host = "robot";
    p.host_id = "8f3c0c1e-boot/mnt:[4026531841]";
    p.pid = 4242;
    discovery::Writer w("peers", 1);
    w.key("peer");
    discovery::pack_peer(w.packer(), p);
    const auto m = discovery::Message::parse(w.data(), w.size(), nullptr);
    REQUIRE(m);
    CHECK(m->type() == "peers");
    const auto back = discovery::read_peer(*discovery::find(m->root(), "peer"));
    REQUIRE(back);
    CHECK(back->reg.id == p.reg.id);
    CHECK(back->reg.kind == p.reg.kind);
    CHECK(back->reg.topic == p.reg.topic);
    CHECK(back->reg.type_name == p.reg.type_name);
    CHECK(back->reg.latched);
    CHECK(back->locators == p.locators);
    CHECK(back->session == 77);
    CHECK(back->pid_ns == p.pid_ns);
    CHECK(back->node == "planner");
    CHECK(back->host == "robot");
    CHECK(back->host_id == p.host_id);
    CHECK(back->pid == 4242);
}

TEST_CASE("wildcard tcp locators are rewritten to a reachable address, others kept", "[discovery][endpoint]") {
    DiscoveryOptions o;
    o.key = "endpoint-test";
    o.multicast = false;  // no core: the rewrite must not need one
    DiscoveryClient client(o);
    const auto rewritten = client.local_endpoint_for("tcp://0.0.0.0:41234");
    CHECK(rewritten.rfind("tcp://", 0) == 0);
    CHECK(rewritten.find("0.0.0.0") == std::string::npos);
    CHECK(rewritten.substr(rewritten.rfind(':')) == ":41234");
    CHECK(client.local_endpoint_for("tcp://*:5") .find("*") == std::string::npos);
    CHECK(client.local_endpoint_for("ipc:///tmp/gecko-1/x.sock") == "ipc:///tmp/gecko-1/x.sock");
    CHECK(client.local_endpoint_for("tcp://10.9.8.7:99") == "tcp://10.9.8.7:99");
    CHECK(client.local_endpoint_for("inproc://x") == "inproc://x");
}
