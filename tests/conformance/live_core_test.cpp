// SPDX-License-Identifier: Apache-2.0
// A live geckocore (in-process) against the discovery vectors: raw ZeroMQ and
// UDP peers send it the vectors' messages and check that its answers are the
// vectors' answers, field for field (docs/DISCOVERY.md). Values that differ
// from run to run (the core's instance, host, pid, endpoint, ages) must keep
// their place and msgpack type.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gecko/net/net.hpp>
#include <gecko/wire/discovery.hpp>
#include <gecko/wire/hash.hpp>
#include <geckocore/core.hpp>

#include <cstring>
#include <variant>
#include <thread>

#include "live.hpp"

namespace c = gecko::conformance;
namespace lv = gecko::conformance::live;
using c::Bytes;
using c::Json;
using namespace std::chrono_literals;

namespace {

// A core of key "dalek" on loopback: no multicast, no door, unless asked.
struct LiveCore {
    gecko::core::Core core;
    zmq::context_t context;
    explicit LiveCore(gecko::core::CoreOptions o) : core(std::move(o)) { core.start(); }
    static gecko::core::CoreOptions options() {
        gecko::core::CoreOptions o;
        o.key = c::key;
        o.multicast = false;
        o.door_port = 0;
        o.listen = "tcp://127.0.0.1:*";
        // No sweep of /dev/shm: what other tests' killed processes left there
        // would show in the list answer's counters (stale_shm_removed), which
        // the vectors hold at 0. (It failed that way under ctest -j2.)
        o.shm_directory.clear();
        return o;
    }
};

// A msgpack map of ints and strs, for messages the vectors do not hold (broken ones).
using Value = std::variant<std::uint64_t, std::string>;
Bytes map_bytes(const std::vector<std::pair<std::string, Value>>& fields) {
    msgpack::sbuffer b;
    msgpack::packer<msgpack::sbuffer> pk(b);
    pk.pack_map(static_cast<std::uint32_t>(fields.size()));
    for (const auto& [k, v] : fields) {
        pk.pack(k);
        std::visit([&](const auto& x) { pk.pack(x); }, v);
    }
    return Bytes(reinterpret_cast<const std::uint8_t*>(b.data()), reinterpret_cast<const std::uint8_t*>(b.data()) + b.size());
}

// A free tcp port for the host door (tests/support/ports.hpp explains the small race).
std::uint16_t unused_tcp_port() {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    ::close(fd);
    return ntohs(a.sin_port);
}

const std::set<std::string> core_varies{"instance", "host", "pid", "endpoint", "uptime_ms", "silent_ms", "stats_age_ms"};

}  // namespace

TEST_CASE("a live core answers a node's session exactly as the vectors show", "[conformance][live][core]") {
    auto options = LiveCore::options();
    options.lease = 1500ms;  // the warm-up lasts a lease: short, so that the answers are the steady state's
    LiveCore live(options);
    lv::Dealer talker(live.context, live.core.endpoint());
    lv::Dealer listener(live.context, live.core.endpoint());
    lv::Dealer tool(live.context, live.core.endpoint());

    // hello -> welcome; repeated (a known session's hello is idempotent) until the warm-up is over.
    std::optional<Json> welcome;
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    do {
        talker.send(lv::vector_bytes("discovery.hello"));
        welcome = talker.next("welcome");
        REQUIRE(welcome);
        if (!welcome->at("warm").get<bool>()) break;
        lv::receive(talker.socket, 100ms);  // nothing comes: a bounded pause before asking again
    } while (std::chrono::steady_clock::now() < deadline);
    lv::check_like(*welcome, lv::as_json(lv::vector_bytes("discovery.welcome")), {"instance", "host", "pid", "lease_ms"});
    CHECK(welcome->at("lease_ms") == 1500);
    CHECK(welcome->at("instance") == live.core.instance());

    listener.send(c::hello(c::listener()));
    REQUIRE(listener.next("welcome"));

    // Registrations, in an order that makes each push the one the vectors show.
    talker.send(lv::vector_bytes("discovery.add_publisher"));
    listener.send(lv::vector_bytes("discovery.add_client"));
    auto client_peers = listener.next("peers");  // the client's first (empty) set
    REQUIRE(client_peers);
    CHECK(client_peers->at("peers").empty());
    talker.send(lv::vector_bytes("discovery.add_server"));
    auto server_peers = talker.next("peers");
    REQUIRE(server_peers);
    lv::check_like(*server_peers, lv::as_json(lv::vector_bytes("discovery.peers_server")), {"instance"});
    listener.send(lv::vector_bytes("discovery.add_subscriber"));
    auto subscriber_peers = listener.next("peers");
    REQUIRE(subscriber_peers);
    if (subscriber_peers->at("id") == c::client_id) subscriber_peers = listener.next("peers");  // the client heard of the server first
    REQUIRE(subscriber_peers);
    lv::check_like(*subscriber_peers, lv::as_json(lv::vector_bytes("discovery.peers_full")), {"instance"});

    talker.send(lv::vector_bytes("discovery.hb"));
    const auto hb = talker.next("hb");
    REQUIRE(hb);
    lv::check_like(*hb, lv::as_json(lv::vector_bytes("discovery.hb_answer")), {"instance"});

    talker.send(lv::vector_bytes("discovery.stats"));
    tool.send(lv::vector_bytes("discovery.list"));
    const auto list = tool.next("list");
    REQUIRE(list);
    lv::check_like(*list, lv::as_json(lv::vector_bytes("discovery.list_answer")), core_varies);

    listener.send(lv::vector_bytes("discovery.watch_graph"));
    const auto graph = listener.next("graph");
    REQUIRE(graph);
    lv::check_like(*graph, lv::as_json(lv::vector_bytes("discovery.graph")), {"instance"});

    listener.send(lv::vector_bytes("discovery.watch_directory"));
    const auto directory = listener.next("directory");
    REQUIRE(directory);
    lv::check_like(*directory, lv::as_json(lv::vector_bytes("discovery.directory_full")), {"instance"});

    talker.send(lv::vector_bytes("discovery.remove"));
    std::optional<Json> delta;
    for (int i = 0; i < 4 && (!delta || delta->at("id") != c::subscriber_id); ++i) delta = listener.next("peers");
    REQUIRE(delta);
    lv::check_like(*delta, lv::as_json(lv::vector_bytes("discovery.peers_delta")), {"instance"});
    const auto directory_delta = listener.next("directory");  // sent after the peer sets the removal changed
    REQUIRE(directory_delta);
    lv::check_like(*directory_delta, lv::as_json(lv::vector_bytes("discovery.directory_delta")), {"instance"});

    talker.send(lv::vector_bytes("discovery.bye"));
    const auto client_delta = listener.next("peers");  // the server left with talker
    REQUIRE(client_delta);
    CHECK(client_delta->at("id") == c::client_id);
    CHECK(client_delta->at("gone") == Json::array({c::server_id}));

    talker.send(lv::vector_bytes("discovery.hb"));  // the session is gone
    const auto unknown = talker.next("unknown");
    REQUIRE(unknown);
    lv::check_like(*unknown, lv::as_json(lv::vector_bytes("discovery.unknown")), {"instance"});
}

TEST_CASE("a live core refuses a topic whose channel id another has, and tells a key-wide subscriber of every publisher "
          "its filter takes",
          "[conformance][live][core]") {
    LiveCore live(LiveCore::options());
    lv::Dealer talker(live.context, live.core.endpoint());
    lv::Dealer listener(live.context, live.core.endpoint());
    talker.send(lv::vector_bytes("discovery.hello"));
    REQUIRE(talker.next("welcome"));
    listener.send(c::hello(c::listener()));
    REQUIRE(listener.next("welcome"));

    // Two names, one channel id: the second to register is refused, with the vector's error.
    auto first = c::publisher_registration();
    first.topic = c::colliding_topic;
    talker.send(c::add(c::talker_session, c::talker_secret, first));
    REQUIRE(live.core.wait_until_registered(c::colliding_topic, 1, 10s));
    auto second = c::publisher_registration();
    second.id = c::subscriber_id + 2;
    second.topic = c::collided_topic;
    listener.send(c::add(c::listener_session, c::listener_secret, second));
    auto e = listener.next("error");
    REQUIRE(e);
    lv::check_like(*e, lv::as_json(lv::vector_bytes("discovery.error_collision")), {"instance"});
    CHECK(live.core.registered(c::collided_topic) == 0);
    CHECK(live.core.counters().refused == 1);

    // A key-wide subscriber of arm1/*: told of arm1's publishers, and of those that come later, not of others.
    listener.send(lv::vector_bytes("discovery.add_key_wide"));
    auto peers = listener.next("peers");
    REQUIRE(peers);
    CHECK(peers->at("id") == c::recorder_id);
    CHECK(peers->at("peers").empty());  // arm/joint5676 is not under arm1/
    auto other = c::publisher_registration();
    other.id = c::publisher_id + 100;
    other.topic = "arm2/imu";
    talker.send(c::add(c::talker_session, c::talker_secret, other));
    auto arm1 = c::publisher_registration();
    arm1.id = c::publisher_id + 101;
    arm1.topic = "arm1/imu";
    talker.send(c::add(c::talker_session, c::talker_secret, arm1));
    peers = listener.next("peers");
    REQUIRE(peers);
    CHECK(peers->at("partial") == true);
    REQUIRE(peers->at("peers").size() == 1);  // arm1/imu only: arm2/imu, sent before it, was no delta
    CHECK(peers->at("peers")[0].at("topic") == "arm1/imu");

    // `list` shows it apart, with its filter; the topics carry their channel ids.
    lv::Dealer tool(live.context, live.core.endpoint());
    tool.send(c::list(c::key, 0));
    const auto list = tool.next("list");
    REQUIRE(list);
    REQUIRE(list->at("key_wide").size() == 1);
    CHECK(list->at("key_wide")[0].at("filter").at("topics") == Json::array({"arm1/*"}));
    for (const auto& t : list->at("topics"))
        CHECK(t.at("channel") == gecko::wire::channel_of(c::key, t.at("name").get<std::string>()));
}

TEST_CASE("a live core refuses bad messages with the vectors' errors, checked in the documented order",
          "[conformance][live][core]") {
    LiveCore live(LiveCore::options());
    lv::Dealer peer(live.context, live.core.endpoint());
    const std::set<std::string> varies{"instance"};

    // Another protocol version: malformed, counted, answered.
    peer.send(map_bytes({{"v", Value(std::uint64_t{1})}, {"t", Value(std::string("hb"))}}));
    auto e = peer.next("error");
    REQUIRE(e);
    lv::check_like(*e, lv::as_json(lv::vector_bytes("discovery.error_malformed")), varies);
    CHECK(live.core.counters().malformed_messages == 1);

    // Not msgpack at all (0xc1 is never used), and msgpack that is not one map.
    peer.send(Bytes{0xc1, 0x00});
    e = peer.next("error");
    REQUIRE(e);
    CHECK(e->at("code") == "malformed");
    CHECK(e->at("message").get<std::string>().rfind("not msgpack", 0) == 0);
    peer.send(Bytes{'h', 'e', 'l', 'l', 'o'});  // five positive fixints: the first is one value, the rest trail it
    e = peer.next("error");
    REQUIRE(e);
    CHECK(e->at("message") == "trailing bytes after the msgpack map");

    // A session message without `s`: the session is checked before any other field.
    peer.send(map_bytes({{"v", Value(std::uint64_t{2})}, {"t", Value(std::string("add"))}}));
    e = peer.next("error");
    REQUIRE(e);
    CHECK(e->at("code") == "malformed");
    CHECK(e->at("message") == "'add' without a session id 's'");

    // Session id 0 names no session: refused like a missing one.
    peer.send(map_bytes({{"v", Value(std::uint64_t{2})}, {"t", Value(std::string("hello"))}, {"s", Value(std::uint64_t{0})}}));
    e = peer.next("error");
    REQUIRE(e);
    CHECK(e->at("code") == "malformed");
    CHECK(e->at("message") == "'hello' with session id 0 (session ids are non-zero)");

    // An unknown type from a session the core does not know: `unknown` (the session comes first).
    peer.send(map_bytes({{"v", Value(std::uint64_t{2})}, {"t", Value(std::string("frobnicate"))}, {"s", Value(std::uint64_t{7})}}));
    REQUIRE(peer.next("unknown"));

    // A hello for another key.
    auto wrong = c::talker();
    wrong.key = "daleks";
    peer.send(c::hello(wrong));
    e = peer.next("error");
    REQUIRE(e);
    lv::check_like(*e, lv::as_json(lv::vector_bytes("discovery.error_wrong_key")), {"instance", "message"});
    CHECK(e->at("message").get<std::string>().find("serves key 'dalek', not 'daleks'") != std::string::npos);

    // A known session: unknown types, refused names, duplicates, type conflicts, a missing secret.
    peer.send(lv::vector_bytes("discovery.hello"));
    REQUIRE(peer.next("welcome"));
    peer.send(map_bytes({{"v", Value(std::uint64_t{2})},
                         {"t", Value(std::string("frobnicate"))},
                         {"s", Value(std::uint64_t{c::talker_session})},
                         {"secret", Value(std::uint64_t{c::talker_secret})}}));
    e = peer.next("error");
    REQUIRE(e);
    lv::check_like(*e, lv::as_json(lv::vector_bytes("discovery.error_unknown_type")), varies);

    gecko::discovery::Registration bad = c::publisher_registration();
    bad.id = 0x0102030405060799ull;
    bad.topic = "#bad";
    peer.send(c::add(c::talker_session, c::talker_secret, bad));
    e = peer.next("error");
    REQUIRE(e);
    lv::check_like(*e, lv::as_json(lv::vector_bytes("discovery.error_refused")), varies);
    CHECK(live.core.counters().refused == 1);

    peer.send(lv::vector_bytes("discovery.add_publisher"));
    lv::Dealer listener(live.context, live.core.endpoint());
    listener.send(c::hello(c::listener()));
    REQUIRE(listener.next("welcome"));
    auto stolen = c::publisher_registration();
    stolen.kind = gecko::discovery::EntityKind::subscriber;
    listener.send(c::add(c::listener_session, c::listener_secret, stolen));
    e = listener.next("error");
    REQUIRE(e);
    lv::check_like(*e, lv::as_json(lv::vector_bytes("discovery.error_duplicate")), varies);

    auto other_type = c::subscriber_registration();
    other_type.id = c::subscriber_id + 1;
    other_type.type_name = "gecko.msgs.Int64";
    listener.send(c::add(c::listener_session, c::listener_secret, other_type));
    e = listener.next("error");
    REQUIRE(e);
    lv::check_like(*e, lv::as_json(lv::vector_bytes("discovery.error_type_conflict")), varies);
    // The publisher's node hears of it too, about its own entity.
    const auto theirs = peer.next("error");
    REQUIRE(theirs);
    CHECK(theirs->at("code") == "type_conflict");
    CHECK(theirs->at("id") == c::publisher_id);
    CHECK(live.core.counters().type_conflicts == 1);

    lv::Dealer impostor(live.context, live.core.endpoint());
    impostor.send(c::hb(c::talker_session, 12345, {}));
    e = impostor.next("error");
    REQUIRE(e);
    lv::check_like(*e, lv::as_json(lv::vector_bytes("discovery.error_auth")), varies);
    CHECK(live.core.counters().auth_failures == 1);
}

TEST_CASE("a live core drops a ZeroMQ message above 4 MiB without an answer, by closing the connection",
          "[conformance][live][core][limits]") {
    LiveCore live(LiveCore::options());
    lv::Dealer peer(live.context, live.core.endpoint());
    // The socket's connection events, to see the core close the link.
    zmq_socket_monitor(peer.socket.handle(), "inproc://conformance-dealer-monitor", ZMQ_EVENT_DISCONNECTED);
    zmq::socket_t events(live.context, zmq::socket_type::pair);
    events.connect("inproc://conformance-dealer-monitor");

    // A `hb` of an unknown session, padded to an exact size with five extra
    // fields (a discovery message's str is at most 1 MiB).
    auto padded = [](std::size_t total) {
        const std::size_t overhead = c::hb(c::talker_session, c::talker_secret, {}).size() + 5 * (3 + 5);  // key "pN", str32 header
        const std::size_t each = (total - overhead) / 5;
        gecko::discovery::Writer w("hb", 9);
        w.kv("s", c::talker_session);
        w.kv("secret", c::talker_secret);
        w.kv("n", std::uint64_t{0});
        w.kv("digest", std::uint64_t{0});
        for (int i = 0; i < 5; ++i) {
            const std::string pad(i < 4 ? each : total - overhead - 4 * each, 'x');
            w.key("p" + std::to_string(i));
            w.packer().pack_str(static_cast<std::uint32_t>(pad.size()));
            w.packer().pack_str_body(pad.data(), static_cast<std::uint32_t>(pad.size()));
        }
        return Bytes(reinterpret_cast<const std::uint8_t*>(w.data()), reinterpret_cast<const std::uint8_t*>(w.data()) + w.size());
    };
    const Bytes at_limit = padded(4u << 20);
    REQUIRE(at_limit.size() == (4u << 20));
    peer.send(at_limit);
    REQUIRE(peer.next("unknown"));  // exactly 4 MiB: read and answered

    const auto malformed = live.core.counters().malformed_messages;
    peer.send(padded((4u << 20) + 1));
    CHECK(lv::receive(events, 10000ms));                          // the core closed the link...
    CHECK_FALSE(lv::receive(peer.socket, 0ms));                  // ...without an answer first...
    CHECK(live.core.counters().malformed_messages == malformed);  // ...and counted nothing
    // The DEALER reconnects by itself; the session goes on.
    peer.send(lv::vector_bytes("discovery.hello"));
    CHECK(peer.next("welcome"));
    zmq_socket_monitor(peer.socket.handle(), nullptr, 0);
}

TEST_CASE("a live host door redirects, registers and refuses as the vectors show", "[conformance][live][door]") {
    auto options = LiveCore::options();
    options.door_port = unused_tcp_port();
    LiveCore live(options);
    REQUIRE(live.core.holds_door());
    const std::string door = "tcp://127.0.0.1:" + std::to_string(options.door_port);
    lv::Dealer node(live.context, door);
    const std::set<std::string> varies{"instance", "endpoint", "host", "pid", "pidns"};

    node.send(lv::vector_bytes("discovery.hello"));
    const auto redirect = node.next("redirect");
    REQUIRE(redirect);
    lv::check_like(*redirect, lv::as_json(lv::vector_bytes("discovery.redirect")), varies);
    CHECK(redirect->at("endpoint") == live.core.endpoint());
    CHECK(redirect->at("instance") == live.core.instance());

    auto wrong = c::talker();
    wrong.key = "daleks";
    node.send(c::hello(wrong));
    auto e = node.next("error");
    REQUIRE(e);
    lv::check_like(*e, lv::as_json(lv::vector_bytes("discovery.error_no_core")), {"instance", "message"});
    CHECK(e->at("message").get<std::string>().find("keys served here: 'dalek'") != std::string::npos);

    lv::Dealer other_core(live.context, door);
    other_core.send(lv::vector_bytes("discovery.door_registration"));
    const auto ack = other_core.next("door");
    REQUIRE(ack);
    lv::check_like(*ack, lv::as_json(lv::vector_bytes("discovery.door_ack")), {"instance"});

    node.send(map_bytes({{"v", Value(std::uint64_t{2})}, {"t", Value(std::string("list"))}}));
    e = node.next("error");
    REQUIRE(e);
    CHECK(e->at("code") == "door");
}

TEST_CASE("a live core answers a multicast query as the vectors show", "[conformance][live][udp]") {
    auto options = LiveCore::options();
    options.multicast = true;
    options.multicast_port = static_cast<std::uint16_t>(20000 + (::getpid() % 20000));  // this process's own
    LiveCore live(options);
    if (!live.core.multicast_active()) {
        WARN("multicast does not work on this machine: the UDP vectors are checked by the other tests only");
        return;
    }
    const int fd = ::socket(AF_INET, SOCK_DGRAM, 0);
    REQUIRE(fd >= 0);
    const unsigned char loop = 1;
    ::setsockopt(fd, IPPROTO_IP, IP_MULTICAST_LOOP, &loop, sizeof loop);
    sockaddr_in group{};
    group.sin_family = AF_INET;
    group.sin_port = htons(options.multicast_port);
    ::inet_pton(AF_INET, options.multicast_group.c_str(), &group.sin_addr);
    auto ask = [&](const Bytes& datagram, int timeout_ms = 10000) -> std::optional<Json> {
        std::string why = gecko::net::send_to(fd, group, datagram.data(), datagram.size());
        REQUIRE(why.empty());
        pollfd p{fd, POLLIN, 0};
        if (::poll(&p, 1, timeout_ms) <= 0) return std::nullopt;
        std::uint8_t buf[8192];
        const auto n = ::recv(fd, buf, sizeof buf, 0);
        REQUIRE(n > 0);
        return c::msgpack_to_json(buf, static_cast<std::size_t>(n));
    };
    const auto answer = ask(lv::vector_bytes("discovery.query"));
    REQUIRE(answer);
    lv::check_like(*answer, lv::as_json(lv::vector_bytes("discovery.core")), {"instance", "endpoint", "host", "pid"});
    CHECK(answer->at("endpoint") == live.core.endpoint());

    // v: 1 is not answered over UDP: only counted.
    CHECK_FALSE(ask(map_bytes({{"v", Value(std::uint64_t{1})}, {"t", Value(std::string("query"))}, {"key", Value(std::string(c::key))}}), 3000));
    CHECK(live.core.counters().malformed_datagrams >= 1);
    ::close(fd);
}
