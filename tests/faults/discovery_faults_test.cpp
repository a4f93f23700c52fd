// SPDX-License-Identifier: Apache-2.0
// Discovery under attack (issue 25, items 6-11 and the core's part of 16):
// peers that register only what the protocol allows, yet try to deny a key's
// nodes their core, their topics or their entity ids, or to make the core
// hold or send more than it should. Each test is tagged [r2.N], N the item.
#include "faults.hpp"

#include <gecko/net/net.hpp>

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <thread>

#include <stdlib.h>

using namespace gecko::faults;
using gecko::discovery::EntityKind;
namespace discovery = gecko::discovery;

namespace {

std::string str(const gecko::wire::Value& o, const char* key) { return discovery::get_str(o, key).value_or(""); }

bool welcomed(CoreClient& c, std::chrono::milliseconds timeout = 10s) { return c.await("welcome", timeout).has_value(); }

// The core's endpoint reached from another loopback address (127.0.0.2): to
// the core, a connection from another host.
std::string from_address(const std::string& endpoint, const std::string& source) {
    return "tcp://" + source + ":0;" + gecko::test::host_port(endpoint);
}

// A hello for session `sid` on `c`'s connection (one connection carries several sessions).
void hello_as(CoreClient& c, const std::string& key, std::uint64_t sid, std::uint64_t secret, const std::string& node,
              const std::string& host, const std::vector<std::string>& locators = {}) {
    discovery::Writer w("hello", 12);
    w.kv("s", sid);
    w.kv("secret", secret);
    w.kv("key", key);
    w.kv("node", node);
    w.kv("host", host);
    w.kv("hostid", std::string("elsewhere"));
    w.kv("pid", 0);
    w.kv("pidns", std::string());
    w.kv("lease_ms", std::int64_t{3000});
    w.kv("ids", std::vector<std::uint64_t>{});
    w.kv("locators", locators);
    w.kv("tool", false);
    c.send(w);
}

// An `add` for session `sid` on `c`'s connection.
void add_as(CoreClient& c, std::uint64_t sid, std::uint64_t secret, std::uint64_t id, EntityKind kind,
            const std::string& topic, const std::string& type) {
    discovery::Writer w("add", 2 + discovery::registration_fields);
    w.kv("s", sid);
    w.kv("secret", secret);
    discovery::Registration r;
    r.id = id;
    r.kind = kind;
    r.topic = topic;
    r.type_name = type;
    discovery::pack_registration_fields(w.packer(), r);
    c.send(w);
}

// How many welcomes and `refused` errors (whose message has `needle`) `c` gets for `n` hellos.
std::pair<std::size_t, std::size_t> answers_to_hellos(CoreClient& c, std::size_t n, const std::string& needle) {
    std::size_t welcomes = 0, refusals = 0;
    for (std::size_t i = 0; i < n; ++i) {
        const auto m = c.recv(10s);
        if (!m) break;
        if (m->type() == "welcome") ++welcomes;
        if (m->type() == "error" && str(m->root(), "code") == "refused" &&
            str(m->root(), "message").find(needle) != std::string::npos)
            ++refusals;
    }
    return {welcomes, refusals};
}

std::map<std::string, std::string> node_env(const gecko::test::CoreOnLoopback& core, const std::string& key) {
    return {{"GECKO_CORE", core.address()}, {"GECKO_NO_MULTICAST", "1"}, {"GECKO_KEY", key}};
}

// The code and message of the next `error` on `c`, if one comes within `timeout`.
std::optional<std::pair<std::string, std::string>> error_of(CoreClient& c, std::chrono::milliseconds timeout = 10s) {
    const auto m = c.await("error", timeout);
    if (!m) return std::nullopt;
    return std::make_pair(str(m->root(), "code"), str(m->root(), "message"));
}

// A victim subscriber of `topic` and a publisher at 200 Hz: how many messages
// the subscriber got within `timeout` (it stops counting at 50).
long long real_stream(const gecko::test::CoreOnLoopback& core, const std::string& key, const std::string& topic,
                      std::chrono::milliseconds timeout = 15s) {
    auto pub = Victim::start({"pub", "--topic", topic, "--rate", "200"}, node_env(core, key));
    auto sub = Victim::start({"sub", "--topic", topic}, node_env(core, key));
    return sub.stats_until([](auto& st) { return st["delivered"] >= 50; }, timeout).at("delivered");
}

// A DEALER that asks and never reads: ZeroMQ takes one message off the wire
// for it, then the socket's buffers fill and the core's answers stay in the core.
class NonReader {
public:
    explicit NonReader(const std::string& endpoint) {
        gecko::net::SocketOptions so;
        so.send_queue = 0;
        so.receive_queue = 1;
        socket_ = gecko::net::make_socket(*context_, zmq::socket_type::dealer, so);
        socket_.set(zmq::sockopt::rcvbuf, 4096);
        socket_.connect(endpoint);
    }
    void send(const discovery::Writer& w) { socket_.send(zmq::const_buffer(w.data(), w.size()), zmq::send_flags::none); }

private:
    std::shared_ptr<zmq::context_t> context_ = gecko::net::process_context();
    zmq::socket_t socket_;
};

discovery::Writer list_request(const std::string& key) {
    discovery::Writer w("list", 1);
    w.kv("key", key);
    return w;
}

}  // namespace

// ---- item 6: locators name no host names ----------------------------------------------------

TEST_CASE("a hello whose tcp locator names a host instead of an address is refused with a reason",
          "[faults][discovery][r2.6][core]") {
    const auto key = unique_key("dnsloc");
    auto core = start_core(key);
    // ZeroMQ would resolve it on the I/O thread of every subscriber (5 s per try if the DNS does not answer).
    for (const std::string locator : {"tcp://never-answers.invalid:5555", "tcp://localhost:5555", "tcp://[robot]:5555"}) {
        CoreClient c(core.endpoint);
        c.hello(key, "named", "hostile-host", {locator});
        const auto e = error_of(c);
        REQUIRE(e);
        CHECK(e->first == "refused");
        CHECK(e->second.find("not a numeric address") != std::string::npos);
    }
    // Numbers are fine, IPv4 and IPv6 alike.
    CoreClient ok(core.endpoint);
    ok.hello(key, "numeric", "hostile-host", {"tcp://127.0.0.1:5555", "tcp://[::1]:5556"});
    CHECK(welcomed(ok));
}

// ---- item 7: made-up types do not lock a topic ---------------------------------------------------

TEST_CASE("made-up types declared on a topic before its publisher starts do not lock the publisher out",
          "[faults][discovery][r2.7][core][node]") {
    const auto key = unique_key("typesquat");
    auto core = start_core(key, {"--lease", "60000"});  // the squatters stay while the robot starts
    // Three nodes declare 16 made-up types each on `imu` (48: three times what one topic allowed).
    std::vector<std::unique_ptr<CoreClient>> squatters;
    std::uint64_t id = 1;
    for (int n = 0; n < 3; ++n) {
        squatters.push_back(std::make_unique<CoreClient>(core.endpoint));
        squatters.back()->hello(key, "squatter" + std::to_string(n));
        REQUIRE(welcomed(*squatters.back()));
        for (int t = 0; t < 16; ++t)
            squatters.back()->add(id++, t % 2 ? EntityKind::publisher : EntityKind::subscriber, "imu",
                                  "made.up.Type" + std::to_string(n * 16 + t));
        squatters.back()->session_message("hb");
        REQUIRE(squatters.back()->await("hb", 10s));
    }
    // One node may declare 16 types on a topic: its 17th is refused, naming the option.
    squatters.front()->add(id++, EntityKind::publisher, "imu", "made.up.OneMore");
    const auto refused = squatters.front()->await("error", 10s, [](const gecko::wire::Value& r) {
        return str(r, "code") == "refused";  // type conflicts the others' types caused come first
    });
    REQUIRE(refused);
    CHECK(str(refused->root(), "message").find("--max-types-per-topic-per-node") != std::string::npos);

    // The robot's own publisher and subscriber of `imu` get in and talk.
    const auto delivered = real_stream(core, key, "imu");
    WARN("item 7 (second round): with 48 made-up types on the topic, the real subscriber got " << delivered
                                                                                               << " messages");
    CHECK(delivered >= 50);
}

TEST_CASE("a producer on a topic of 2,000 types costs the core bounded work and tells it of a bounded number",
          "[faults][discovery][r2.7][core]") {
    const auto key = unique_key("manytypes");
    auto core = start_core(key, {"--lease", "60000", "--max-sessions-per-connection", "1000"});
    // 125 nodes of 16 types each on one connection: 2,000 types on `wide`.
    CoreClient c(core.endpoint);
    std::uint64_t id = 1;
    for (int n = 0; n < 125; ++n) {
        const auto sid = random_u64(), secret = random_u64();
        hello_as(c, key, sid, secret, "wide" + std::to_string(n), "hostile-host");
        for (int t = 0; t < 16; ++t)
            add_as(c, sid, secret, id++, t % 2 ? EntityKind::publisher : EntityKind::subscriber, "wide",
                   "T" + std::to_string(n * 16 + t));
    }
    c.session_message("hb");  // not a session of its own: answered `unknown` once all the above is done
    REQUIRE(c.await("unknown", 30s));
    c.drain();
    // 1,008 publishers of new types, 16 per node: each meets 2,000+ types.
    const double cpu0 = figures_of(core.proc.pid()).cpu_s;
    std::size_t conflicts_told = 0;
    const std::uint64_t first_late = id;
    for (int n = 0; n < 63; ++n) {
        const auto sid = random_u64(), secret = random_u64();
        hello_as(c, key, sid, secret, "late" + std::to_string(n), "hostile-host");
        for (int t = 0; t < 16; ++t)
            add_as(c, sid, secret, id++, EntityKind::publisher, "wide", "New" + std::to_string(n * 16 + t));
    }
    c.session_message("hb");
    for (;;) {
        const auto m = c.recv(30s);
        REQUIRE(m);
        if (m->type() == "unknown") break;
        if (m->type() == "error" && str(m->root(), "code") == "type_conflict" &&
            discovery::get_u64(m->root(), "id").value_or(0) >= first_late)
            ++conflicts_told;  // told to a newcomer (not to the consumers of the types it met)
    }
    const double cpu = figures_of(core.proc.pid()).cpu_s - cpu0;
    WARN("item 7 (second round): 1,008 publishers of new types on a topic of 2,000+ types: " << cpu
         << " s of core CPU; " << conflicts_told << " type_conflict errors to their nodes");
    CHECK(cpu < (sanitized ? 10.0 : 2.0));
    CHECK(conflicts_told <= 1008 * 9);  // at most 8 types told of, and one line with the count of the rest
    CHECK(core.proc.running());
}

// ---- item 8: quotas bind to the connection's address -------------------------------------

TEST_CASE("1,024 sessions from another address claiming the victims' host name do not lock that host's nodes out",
          "[faults][discovery][r2.8][core]") {
    const auto key = unique_key("hostquota");
    auto core = start_core(key, {"--lease", "60000"});  // the squatters stay while the victims start
    const std::string victims_host = gecko::net::hostname();
    // 64 connections of 16 sessions (the default per connection) from 127.0.0.2,
    // every hello claiming the victims' host name: the default quota of a host.
    std::vector<std::unique_ptr<CoreClient>> squatters;
    std::size_t squatting = 0;
    for (int c = 0; c < 64; ++c) {
        squatters.push_back(std::make_unique<CoreClient>(from_address(core.endpoint, "127.0.0.2")));
        for (int i = 0; i < 16; ++i)
            hello_as(*squatters.back(), key, random_u64(), random_u64(), "squatter" + std::to_string(c * 16 + i),
                     victims_host);
        squatting += answers_to_hellos(*squatters.back(), 16, "").first;
    }
    REQUIRE(squatting == 1024);
    // That address is full: one more session from it is refused, with the option's name.
    CoreClient more(from_address(core.endpoint, "127.0.0.2"));
    more.hello(key, "one-more", victims_host);
    CHECK(answers_to_hellos(more, 1, "max-sessions-per-host").second == 1);

    // The victims' own nodes, from their own address, get in and talk.
    CHECK(real_stream(core, key, "mine") >= 50);
    CoreClient local(core.endpoint);
    local.hello(key, "local", victims_host);
    CHECK(welcomed(local));
}

// ---- item 10: answers nobody reads, connections that never leave -----------------------------

TEST_CASE("list answers a peer never reads cost the core bounded memory, and are counted when dropped",
          "[faults][discovery][r2.10][core][memory]") {
    const auto key = unique_key("unread");
    auto core = start_core(key, {"--lease", "60000"});
    // A table whose list answer is about 2 MB: 4,000 publishers of 200-byte topic names.
    CoreClient table(core.endpoint);
    table.hello(key, "table");
    REQUIRE(welcomed(table));
    for (std::uint64_t i = 0; i < 4000; ++i)
        table.add(1 + i, EntityKind::publisher, std::string(190, 't') + std::to_string(100000 + i), "gecko.msgs.Bytes");
    table.session_message("hb");
    REQUIRE(table.await("hb", 20s));
    const auto first = list_core(core.endpoint, key);
    REQUIRE(first);

    const long rss0 = figures_of(core.proc.pid()).rss_kb;
    const std::size_t asks = scaled(150, 40);
    {
        NonReader lurker(core.endpoint);
        for (std::size_t i = 0; i < asks; ++i) lurker.send(list_request(key));
        // Until the core has handled them all (each answered or dropped), or for 30 s at most.
        std::uint64_t dropped = 0;
        const auto deadline = Clock::now() + 30s;
        while (dropped + 20 < asks && Clock::now() < deadline) {
            std::this_thread::sleep_for(200ms);  // poll interval of a bounded wait on the core's counter
            if (const auto list = list_core(core.endpoint, key)) dropped = core_counter(*list, "answers_dropped");
        }
        const long grown_kb = figures_of(core.proc.pid()).rss_kb - rss0;
        WARN("item 10 (second round): " << asks << " list requests of ~2 MB answers never read: core RSS +"
                                        << grown_kb / 1024 << " MiB, answers dropped " << dropped);
        // 8 MiB per connection, plus one answer and socket buffers; not under
        // ASan, whose quarantine keeps what the core freed (the drops still count).
        if (!sanitized) CHECK(grown_kb < 40 * 1024);
        CHECK(dropped + 20 >= asks);
    }
    CHECK(core.proc.running());
}

TEST_CASE("connections that asked for a list but carry no node are closed after the hello timeout",
          "[faults][discovery][r2.10][core]") {
    const auto key = unique_key("reap");
    auto core = start_core(key, {"--hello-timeout", "1000"});
    std::vector<std::unique_ptr<CoreClient>> askers;
    for (int i = 0; i < 100; ++i) {
        askers.push_back(std::make_unique<CoreClient>(core.endpoint));
        askers.back()->send(list_request(key));
        REQUIRE(askers.back()->await("list", 10s));
    }
    // A node's connection stays: it carries a session (heartbeats keep it).
    CoreClient node(core.endpoint);
    node.hello(key, "stays");
    REQUIRE(welcomed(node));
    std::uint64_t closed = 0;
    const auto deadline = Clock::now() + 20s;
    while (closed < 100 && Clock::now() < deadline) {
        std::this_thread::sleep_for(200ms);  // poll interval of a bounded wait on the core's counter
        node.session_message("hb");
        if (const auto list = list_core(core.endpoint, key)) closed = core_counter(*list, "connections_closed");
    }
    WARN("item 10 (second round): of 100 connections that each asked one list, " << closed << " were closed");
    CHECK(closed >= 100);
    node.session_message("hb");
    CHECK(node.await("hb", 10s));
}

// ---- item 11: a total entity budget -------------------------------------------------------------

TEST_CASE("the core holds at most --max-entities entities of all nodes, and refuses more with a reason",
          "[faults][discovery][r2.11][core]") {
    const auto key = unique_key("budget");
    auto core = start_core(key, {"--lease", "60000", "--max-entities", "100"});
    // Four nodes of 25 entities each fill it.
    std::vector<std::unique_ptr<CoreClient>> nodes;
    std::uint64_t id = 1;
    for (int n = 0; n < 4; ++n) {
        nodes.push_back(std::make_unique<CoreClient>(core.endpoint));
        nodes.back()->hello(key, "filler" + std::to_string(n));
        REQUIRE(welcomed(*nodes.back()));
        for (int i = 0; i < 25; ++i, ++id) nodes.back()->add(id, EntityKind::publisher, "fill" + std::to_string(id), "T");
        nodes.back()->session_message("hb");
        REQUIRE(nodes.back()->await("hb", 10s));
    }
    CoreClient late(core.endpoint);
    late.hello(key, "late");
    REQUIRE(welcomed(late));
    late.add(id++, EntityKind::publisher, "late", "T");
    const auto e = error_of(late);
    REQUIRE(e);
    CHECK(e->first == "refused");
    CHECK(e->second.find("--max-entities") != std::string::npos);
    // One gone: one more fits.
    nodes.front()->remove(1);
    // The core reads each connection in order, but two connections in any order: wait until it took the remove.
    nodes.front()->session_message("hb");
    REQUIRE(nodes.front()->await("hb", 10s));
    late.add(id++, EntityKind::publisher, "late", "T");
    late.session_message("hb");
    const auto hb = late.await("hb", 10s);
    REQUIRE(hb);
    CHECK(discovery::get_u64(hb->root(), "n").value_or(0) == 1);
}

// ---- item 16, the core's part: what nodes refuse, the core refuses too ---------------------------

TEST_CASE("the core refuses a shm locator that is a path, and keeps no link whose transport is not a scheme name",
          "[faults][discovery][r2.16][core]") {
    const auto key = unique_key("escapes2");
    auto core = start_core(key);
    for (const std::string locator : {"shm://../../etc/passwd", "shm://a/b", "shm://.hidden"}) {
        CoreClient c(core.endpoint);
        c.hello(key, "pathy", "hostile-host", {locator});
        const auto e = error_of(c);
        REQUIRE(e);
        CHECK(e->first == "refused");
        CHECK(e->second.find("shm segment name") != std::string::npos);
    }
    CoreClient c(core.endpoint);
    c.hello(key, "linker", "hostile-host", {"shm://gecko-seg_1.a"});
    REQUIRE(welcomed(c));
    discovery::Writer w("stats", 4);
    w.kv("s", c.session());
    w.kv("secret", c.secret());
    w.key("stats");
    w.packer().pack_array(0);
    w.key("links");
    w.packer().pack_array(3);
    for (const std::string via : {"\x1b]0;owned\x07", "shm", "ip\x1b[2Jc"}) {
        w.packer().pack_map(2);
        w.kv("s", c.session());
        w.kv("via", via);
    }
    c.send(w);
    c.session_message("hb");
    REQUIRE(c.await("hb", 10s));
    const auto list = list_core(core.endpoint, key);
    REQUIRE(list);
    std::vector<std::string> vias;
    for (const gecko::wire::Value& node : discovery::find(list->root(), "nodes")->items())
        if (str(node, "node") == "linker")
            for (const gecko::wire::Value& link : discovery::find(node, "links")->items()) vias.push_back(str(link, "via"));
    CHECK(vias == std::vector<std::string>{"shm"});
    CHECK(core_counter(*list, "malformed_messages") >= 1);
}

// ---- item 9: ids after a core restart ---------------------------------------------------------

TEST_CASE("after a core restart, a publisher's entity id and session id stay its own, not the first claimant's",
          "[faults][discovery][r2.9][core][node]") {
    const auto key = unique_key("takeover");
    char dir_template[] = "/tmp/gecko-claims-XXXXXX";
    REQUIRE(::mkdtemp(dir_template));
    const std::string claims = dir_template;
    struct Cleanup {
        std::string dir;
        ~Cleanup() { std::filesystem::remove_all(dir); }
    } cleanup{claims};

    auto first = start_core(key, {"--claims-directory", claims});
    const auto port = first.port();
    auto env = node_env(first, key);
    auto pub = Victim::start({"pub", "--topic", "owned", "--rate", "200"}, env);
    auto sub = Victim::start({"sub", "--topic", "owned"}, env);
    REQUIRE(sub.stats_until([](auto& st) { return st["delivered"] >= 20; }, 15s).at("delivered") >= 20);
    // What `gecko list` shows anyone: the publisher's entity id and its session.
    const auto list = list_core(first.endpoint, key);
    REQUIRE(list);
    std::uint64_t pub_session = 0;
    for (const gecko::wire::Value& t : discovery::find(list->root(), "topics")->items())
        for (const gecko::wire::Value& p : discovery::find(t, "publishers")->items())
            if (discovery::get_u64(p, "id") == pub.id) pub_session = discovery::get_u64(p, "session").value_or(0);
    REQUIRE(pub_session != 0);
    // The core writes its claims at most every 200 ms (DISCOVERY.md §3.2): the publisher's must be on
    // disk before the core dies, else the new core rightly knows nothing of it.
    const std::string claimed = "e " + std::to_string(pub.id) + " ";
    bool saved = false;
    for (const auto deadline = std::chrono::steady_clock::now() + 10s; !saved && std::chrono::steady_clock::now() < deadline;) {
        for (const auto& file : std::filesystem::directory_iterator(claims)) {
            std::ifstream in(file.path());
            const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
            saved = saved || text.find(claimed) != std::string::npos;
        }
        if (!saved) std::this_thread::sleep_for(20ms);  // a file, not an event: looked at again, bounded
    }
    REQUIRE(saved);

    // The core dies and comes back on its port; the attacker speaks first.
    first.proc.kill();
    REQUIRE(first.proc.wait(10s));
    auto second = start_core(key, {"--claims-directory", claims, "--listen", "tcp://127.0.0.1:" + std::to_string(port)});
    HostilePublisher fake;
    CoreClient thief(second.endpoint);
    thief.hello(key, "thief", "hostile-host", {fake.locator()});
    REQUIRE(welcomed(thief));
    thief.add(pub.id, EntityKind::publisher, "owned", "gecko.msgs.Bytes");
    const auto e = error_of(thief);
    CoreClient impostor(second.endpoint, pub_session);
    impostor.hello(key, "impostor", "hostile-host", {fake.locator()});
    const auto auth = error_of(impostor);

    // The real publisher registers again, and its subscriber hears it.
    const auto before = sub.stats().at("delivered");
    const auto after = sub.stats_until([&](auto& st) { return st["delivered"] >= before + 50; }, 15s).at("delivered");
    WARN("item 9 (second round): after the restart the thief got "
         << (e ? e->first : std::string("no error")) << ", the impostor "
         << (auth ? auth->first : std::string("no error")) << "; the subscriber got " << after - before
         << " messages from the real publisher");
    REQUIRE(e);
    CHECK(e->first == "duplicate");
    REQUIRE(auth);
    CHECK(auth->first == "auth");
    CHECK(after - before >= 50);
}
