// SPDX-License-Identifier: Apache-2.0
// geckocore against hostile discovery peers (issue 9, items 1-7 on the core's
// side): every registration it should refuse is refused with a reason and
// counted, its work and memory per peer are bounded, and nothing one peer
// sends takes anything from another.
#include "faults.hpp"

#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>

using namespace gecko::faults;
using gecko::discovery::EntityKind;
namespace discovery = gecko::discovery;

namespace {

std::string str(const gecko::wire::Value& o, const char* key) { return discovery::get_str(o, key).value_or(""); }

// The error a core answers a hello or add with (nullopt: none within the timeout).
std::optional<std::pair<std::string, std::string>> error_of(CoreClient& c, std::chrono::milliseconds timeout = 10s) {
    auto e = c.await("error", timeout);
    if (!e) return std::nullopt;
    return std::make_pair(str(e->root(), "code"), str(e->root(), "message"));
}

bool welcomed(CoreClient& c, std::chrono::milliseconds timeout = 10s) { return c.await("welcome", timeout).has_value(); }

// The core's log lines so far (its stderr), waiting up to `wait` for more.
std::vector<std::string> core_lines(gecko::test::CoreOnLoopback& core, std::chrono::milliseconds wait = 0ms) {
    core.proc.err().drain(wait);
    return core.proc.err().lines();
}

std::size_t count_containing(const std::vector<std::string>& lines, const std::string& needle) {
    return static_cast<std::size_t>(
        std::count_if(lines.begin(), lines.end(), [&](const std::string& l) { return l.find(needle) != std::string::npos; }));
}

// The `list` answer's array `field` (nodes, topics).
std::size_t list_size(const discovery::Message& list, const char* field) {
    const auto a = discovery::find(list.root(), field);
    return a ? a->count() : 0;
}

}  // namespace

// ---- item 1 -------------------------------------------------------------------------------

TEST_CASE("a hello whose locator ZeroMQ would reject is refused by the core with a reason, and counted",
          "[faults][item1][core]") {
    const auto key = unique_key("locator");
    auto core = start_core(key);
    const std::vector<std::string> bad = {"tcp://x", "tcp://*:5", "ipc:///" + std::string(200, 'a')};
    for (const auto& locator : bad) {
        CAPTURE(locator);
        CoreClient c(core.endpoint);
        c.hello(key, "bad-locator", "host", {locator});
        const auto e = error_of(c);
        REQUIRE(e);
        CHECK(e->first == "refused");
        CHECK(e->second.find("locator") != std::string::npos);
    }
    const auto list = list_core(core.endpoint, key);
    REQUIRE(list);
    CHECK(list_size(*list, "nodes") == 0);
    CHECK(core_counter(*list, "refused") == bad.size());
}

// ---- item 2 -------------------------------------------------------------------------------

TEST_CASE("hello, remove and bye with a victim's session id but not its secret leave the victim's stream alone",
          "[faults][item2][core]") {
    const auto key = unique_key("hijack");
    auto core = start_core(key);
    const std::map<std::string, std::string> env{{"GECKO_CORE", core.address()}, {"GECKO_NO_MULTICAST", "1"}, {"GECKO_KEY", key}};
    auto pub = Victim::start({"pub", "--topic", "stream", "--rate", "200"}, env);
    auto sub = Victim::start({"sub", "--topic", "stream"}, env);
    auto before = sub.stats_until([](auto& s) { return s["delivered"] >= 20; }, 10s);
    REQUIRE(before["delivered"] >= 20);

    // What `gecko list --json` shows anyone: the victim's session id.
    const auto list = list_core(core.endpoint, key);
    REQUIRE(list);
    std::uint64_t victim_session = 0;
    const auto nodes = discovery::find(list->root(), "nodes");
    REQUIRE(nodes);
    for (std::uint32_t i = 0; i < nodes->count(); ++i)
        if (str(*nodes->item(i), "node") == "victim_pub")
            victim_session = discovery::get_u64(*nodes->item(i), "s").value_or(0);
    REQUIRE(victim_session != 0);

    CoreClient thief(core.endpoint, victim_session, /*secret=*/12345);
    thief.hello(key, "thief", "elsewhere", {}, {});
    auto e = error_of(thief);
    REQUIRE(e);
    CHECK(e->first == "auth");
    thief.remove(pub.id);
    e = error_of(thief);
    REQUIRE(e);
    CHECK(e->first == "auth");
    thief.session_message("bye");
    e = error_of(thief);
    REQUIRE(e);
    CHECK(e->first == "auth");

    // The stream goes on, without a gap, well past a lease (3 s) after the attack.
    const auto target = before["delivered"] + 200 * 4;
    auto after = sub.stats_until([&](auto& s) { return s["delivered"] >= target; }, 15s);
    CHECK(after["delivered"] >= target);
    CHECK(after["max_gap_ms"] < 1000);
    const auto later = list_core(core.endpoint, key);
    REQUIRE(later);
    CHECK(list_size(*later, "topics") == 1);
    CHECK(core_counter(*later, "auth_failures") >= 3);
}

TEST_CASE("a node whose entities the core lost (heartbeat digest differs) registers them again",
          "[faults][item2][node]") {
    const auto key = unique_key("digest");
    // A core that welcomes, then answers every heartbeat "you have nothing".
    FakeCore fake([&](FakeCore& f, const FakeCore::Request& r) {
        const auto& t = r.message.type();
        if (t == "hello") {
            f.welcome(r, key, 300);
        } else if (t == "hb") {
            discovery::Writer w("hb", 3);
            w.kv("instance", f.instance());
            w.kv("n", std::uint64_t{0});
            w.kv("digest", std::uint64_t{0});
            f.reply(r, w);
        }
    });
    auto pub = Victim::start({"pub", "--topic", "kept"}, {{"GECKO_CORE", fake.address()}, {"GECKO_NO_MULTICAST", "1"}, {"GECKO_KEY", key}});
    const auto is_pub = [&](const gecko::wire::Value& o) { return discovery::get_u64(o, "id").value_or(0) == pub.id; };
    REQUIRE(fake.wait_count("add", 1, 10s, is_pub));
    // Heartbeats every 100 ms (a third of the 300 ms lease): each says the core lost it.
    CHECK(fake.wait_count("add", 3, 10s, is_pub));
    CHECK(fake.count("hello") >= 2);
}

TEST_CASE("a node and the core agree on its entities: heartbeats cause no re-registration",
          "[faults][item2][core]") {
    const auto key = unique_key("agree");
    auto core = start_core(key, {"--lease", "600"});
    const std::map<std::string, std::string> env{{"GECKO_CORE", core.address()}, {"GECKO_NO_MULTICAST", "1"}, {"GECKO_KEY", key}};
    auto pub = Victim::start({"pub", "--topic", "agreed", "--rate", "10"}, env);
    auto sub = Victim::start({"sub", "--topic", "agreed"}, env);
    REQUIRE(sub.stats_until([](auto& s) { return s["delivered"] >= 5; }, 10s)["delivered"] >= 5);
    // Ten heartbeats each (every 200 ms with a 600 ms lease) compare the core's digest with the node's.
    const auto after = sub.stats_until([&](auto& s) { return s["delivered"] >= 25; }, 10s);
    CHECK(after.at("delivered") >= 25);
    for (auto* v : {&pub, &sub}) {
        const auto lines = v->log_lines(0ms);
        CHECK(std::none_of(lines.begin(), lines.end(),
                           [](const std::string& l) { return l.find("view of this node differs") != std::string::npos; }));
    }
}

// ---- item 3 -------------------------------------------------------------------------------

TEST_CASE("10,000 adds from one session cost the core bounded CPU time, and its bye stalls nobody (CPU measured)",
          "[faults][item3][core][heavy]") {
    const std::size_t n = scaled(10000, 500);
    const auto key = unique_key("adds");
    auto core = start_core(key, {"--max-entities-per-node", std::to_string(n)});
    CoreClient flood(core.endpoint);
    flood.hello(key, "flood");
    REQUIRE(welcomed(flood));
    CoreClient bystander(core.endpoint);
    bystander.hello(key, "bystander");
    REQUIRE(welcomed(bystander));

    const double cpu0 = figures_of(core.proc.pid()).cpu_s;
    const auto t0 = Clock::now();
    for (std::size_t i = 0; i < n; ++i) flood.add(1000 + i, EntityKind::publisher, "flood/" + std::to_string(i), "gecko.msgs.Int64");
    // Messages of one connection are handled in order: the heartbeat's answer comes after every add.
    flood.session_message("hb");
    const auto hb = flood.await("hb", 60s);
    REQUIRE(hb);
    CHECK(discovery::get_u64(hb->root(), "n").value_or(0) == n);
    const double add_cpu = figures_of(core.proc.pid()).cpu_s - cpu0;
    const double add_wall = std::chrono::duration<double>(Clock::now() - t0).count();
    WARN("item 3: " << n << " adds: core CPU " << add_cpu << " s (wall " << add_wall << " s)");
    // The bystander was silent meanwhile: within its lease if the core kept up.
    bystander.hello(key, "bystander");
    REQUIRE(welcomed(bystander));

    // bye removes them all; meanwhile another node's heartbeats are answered promptly.
    const double cpu1 = figures_of(core.proc.pid()).cpu_s;
    flood.session_message("bye");
    double worst_ms = 0;
    for (int i = 0; i < 20; ++i) {
        const auto sent = Clock::now();
        bystander.session_message("hb");
        REQUIRE(bystander.await("hb", 10s));
        worst_ms = std::max(worst_ms, std::chrono::duration<double, std::milli>(Clock::now() - sent).count());
    }
    const auto list = list_core(core.endpoint, key);
    REQUIRE(list);
    CHECK(list_size(*list, "topics") == 0);
    const double bye_cpu = figures_of(core.proc.pid()).cpu_s - cpu1;
    WARN("item 3: bye + 20 hb: core CPU " << bye_cpu << " s; worst bystander heartbeat round trip " << worst_ms << " ms");
    const double bound = sanitized ? 10.0 : 2.0;  // was 14 s for 10,000 before registration was indexed
    CHECK(add_cpu < bound);
    CHECK(bye_cpu < bound);
    CHECK(worst_ms < 1000);  // the lease is 3 s: a stall of seconds makes nodes declare the core lost
}

TEST_CASE("10,000 publishers on one topic with a subscriber watching it cost the core bounded CPU time (CPU measured)",
          "[faults][item3][core][heavy]") {
    const std::size_t n = scaled(10000, 500);
    const auto key = unique_key("crowd");
    auto core = start_core(key, {"--max-entities-per-node", std::to_string(n)});
    CoreClient watcher(core.endpoint);
    watcher.hello(key, "watcher");
    REQUIRE(welcomed(watcher));
    watcher.add(1, EntityKind::subscriber, "crowded", "gecko.msgs.Int64");
    REQUIRE(watcher.await("peers", 10s));
    CoreClient flood(core.endpoint);
    flood.hello(key, "flood");
    REQUIRE(welcomed(flood));

    const double cpu0 = figures_of(core.proc.pid()).cpu_s;
    // Half of one type, half of another: the second half conflicts with the watcher.
    for (std::size_t i = 0; i < n; ++i)
        flood.add(1000 + i, EntityKind::publisher, "crowded", i % 2 ? "gecko.msgs.Int64" : "gecko.msgs.Float64");
    flood.session_message("hb");
    const auto hb = flood.await("hb", 60s);
    REQUIRE(hb);
    CHECK(discovery::get_u64(hb->root(), "n").value_or(0) == n);
    const double add_cpu = figures_of(core.proc.pid()).cpu_s - cpu0;
    // The watcher heard of every publisher of its type, one delta each.
    std::size_t peers = 0;
    for (auto m = watcher.recv(10s); m; m = watcher.recv(500ms))
        if (m->type() == "peers") {
            const auto list = discovery::find(m->root(), "peers");
            if (list) peers += list->count();
        }
    CHECK(peers == n / 2);
    const double cpu1 = figures_of(core.proc.pid()).cpu_s;
    flood.session_message("bye");
    watcher.session_message("hb");
    REQUIRE(watcher.await("hb", 30s));
    const double bye_cpu = figures_of(core.proc.pid()).cpu_s - cpu1;
    WARN("item 3: " << n << " publishers on one topic: core CPU " << add_cpu << " s to add, " << bye_cpu << " s to remove");
    const double bound = sanitized ? 10.0 : 2.0;
    CHECK(add_cpu < bound);
    CHECK(bye_cpu < bound);
}

TEST_CASE("entities beyond max_entities_per_session and sessions beyond max_sessions_per_host are refused with a reason and counted",
          "[faults][item3][core]") {
    const auto key = unique_key("caps");
    auto core = start_core(key, {"--max-entities-per-node", "100", "--max-sessions-per-host", "3"});
    CoreClient c(core.endpoint);
    c.hello(key, "greedy");
    REQUIRE(welcomed(c));
    for (std::uint64_t i = 0; i < 150; ++i) c.add(1 + i, EntityKind::publisher, "cap/" + std::to_string(i), "gecko.msgs.Int64");
    c.session_message("hb");
    std::size_t refused = 0;
    std::string message;
    for (;;) {
        auto m = c.recv(10s);
        REQUIRE(m);
        if (m->type() == "hb") {
            CHECK(discovery::get_u64(m->root(), "n").value_or(0) == 100);
            break;
        }
        if (m->type() == "error" && str(m->root(), "code") == "refused") {
            ++refused;
            message = str(m->root(), "message");
        }
    }
    CHECK(refused == 50);
    CHECK(message.find("max-entities-per-node") != std::string::npos);

    std::vector<std::unique_ptr<CoreClient>> nodes;
    std::size_t welcomed_nodes = 0, refused_nodes = 0;
    for (int i = 0; i < 5; ++i) {  // "greedy" is one of the host's 3 already
        nodes.push_back(std::make_unique<CoreClient>(core.endpoint));
        nodes.back()->hello(key, "n" + std::to_string(i), "hostile-host");
        auto m = nodes.back()->recv(10s);
        REQUIRE(m);
        if (m->type() == "welcome") ++welcomed_nodes;
        if (m->type() == "error" && str(m->root(), "code") == "refused" &&
            str(m->root(), "message").find("max-sessions-per-host") != std::string::npos)
            ++refused_nodes;
    }
    CHECK(welcomed_nodes == 2);
    CHECK(refused_nodes == 3);
    const auto list = list_core(core.endpoint, key);
    REQUIRE(list);
    CHECK(core_counter(*list, "refused") == 53);
}

TEST_CASE("sessions beyond max_sessions_per_connection are refused with a reason and counted, whatever hosts they claim",
          "[faults][item3][core]") {
    const auto key = unique_key("perconn");
    auto core = start_core(key, {"--max-sessions-per-connection", "4"});
    CoreClient c(core.endpoint);
    for (int i = 0; i < 10; ++i) {
        discovery::Writer w("hello", 12);
        w.kv("s", random_u64());
        w.kv("secret", random_u64());
        w.kv("key", key);
        w.kv("node", "n" + std::to_string(i));
        w.kv("host", "claimed-host-" + std::to_string(i));  // a host of its own each: the per-host cap does not apply
        w.kv("hostid", std::string());
        w.kv("pid", 0);
        w.kv("pidns", std::string());
        w.kv("lease_ms", std::int64_t{3000});
        w.kv("ids", std::vector<std::uint64_t>{});
        w.kv("locators", std::vector<std::string>{});
        w.kv("tool", false);
        c.send(w);
    }
    std::size_t welcomes = 0, refusals = 0;
    for (int i = 0; i < 10; ++i) {
        const auto m = c.recv(10s);
        REQUIRE(m);
        if (m->type() == "welcome") ++welcomes;
        if (m->type() == "error" && str(m->root(), "code") == "refused" &&
            str(m->root(), "message").find("max-sessions-per-connection") != std::string::npos)
            ++refusals;
    }
    CHECK(welcomes == 4);
    CHECK(refusals == 6);
    // Another connection is another budget.
    CoreClient other(core.endpoint);
    other.hello(key, "other");
    CHECK(welcomed(other));
    const auto list = list_core(core.endpoint, key);
    REQUIRE(list);
    CHECK(list_size(*list, "nodes") == 5);
    CHECK(core_counter(*list, "refused") == 6);
}

// ---- item 4 -------------------------------------------------------------------------------

TEST_CASE("huge names are refused at registration, with a reason", "[faults][item4][core]") {
    const auto key = unique_key("huge");
    auto core = start_core(key);
    const std::string huge(900000, 'n');
    {
        CoreClient c(core.endpoint);
        c.hello(key, huge);
        const auto e = error_of(c);
        REQUIRE(e);
        CHECK(e->first == "refused");
        CHECK(e->second.find("at most 128") != std::string::npos);
        CHECK(e->second.size() < 1000);  // the reason does not echo the name back
    }
    {
        CoreClient c(core.endpoint);
        c.hello(key, "ok", huge);
        const auto e = error_of(c);
        REQUIRE(e);
        CHECK(e->first == "refused");
    }
    // hostid and pidns travel in every peer map of the node's entities.
    for (const bool pidns : {false, true}) {
        CoreClient c(core.endpoint);
        c.hello(key, "ok", "host", {}, {}, std::nullopt, pidns ? "id" : huge, pidns ? huge : "");
        const auto e = error_of(c);
        REQUIRE(e);
        CHECK(e->first == "refused");
        CHECK(e->second.find(pidns ? "pidns" : "hostid") != std::string::npos);
    }
    // A host id that kept boot_id's trailing newline (DISCOVERY.md §2.3): refused, not linked over tcp.
    {
        CoreClient c(core.endpoint);
        c.hello(key, "newline", "host", {}, {}, std::nullopt, "0c9a5b1e-7d2f-4c1a-9e3b-5f6a7b8c9d0e\n/mnt:[4026531841]");
        const auto e = error_of(c);
        REQUIRE(e);
        CHECK(e->first == "refused");
        CHECK(e->second.find("hostid") != std::string::npos);
    }
    CoreClient c(core.endpoint);
    c.hello(key, "namer");
    REQUIRE(welcomed(c));
    c.add(1, EntityKind::publisher, huge, "gecko.msgs.Int64");
    auto e = error_of(c);
    REQUIRE(e);
    CHECK(e->first == "refused");
    CHECK(e->second.find("at most 256") != std::string::npos);
    c.add(2, EntityKind::publisher, "fine", huge);
    e = error_of(c);
    REQUIRE(e);
    CHECK(e->first == "refused");
    CHECK(e->second.size() < 2000);
    const auto list = list_core(core.endpoint, key);
    REQUIRE(list);
    CHECK(list_size(*list, "topics") == 0);
    CHECK(core_counter(*list, "refused") == 7);
}

TEST_CASE("registrations crafted to the limits do not break discovery for another subscriber of the topic",
          "[faults][item4][core]") {
    const auto key = unique_key("crafted");
    auto core = start_core(key);
    // Sessions with everything a peer map carries at its longest (names,
    // hostid, pidns, 8 locators of 256 bytes pointing nowhere), each with
    // many publishers on the victim's topic and type: the core's pushes to the
    // subscriber are as large as they get (256 peers per push).
    std::vector<std::unique_ptr<CoreClient>> crafted;
    for (int s = 0; s < 4; ++s) {
        std::vector<std::string> locators;
        for (int l = 0; l < 8; ++l)
            locators.push_back(l % 2 ? "inproc://" + std::string(246, 'h') + std::to_string(l)
                                     : "ipc:///nonexistent/" + std::string(90, char('a' + l)));
        crafted.push_back(std::make_unique<CoreClient>(core.endpoint));
        crafted.back()->hello(key, std::string(128, char('A' + s)), std::string(128, 'h'), locators, {}, std::nullopt,
                              std::string(128, 'i'), std::string(128, 'p'));
        REQUIRE(welcomed(*crafted.back()));
        for (std::uint64_t i = 0; i < 300; ++i)
            crafted.back()->add((s + 1) * 100000 + i, EntityKind::publisher, "shared", "gecko.msgs.Bytes");
    }
    for (auto& c : crafted) {
        c->session_message("hb");
        REQUIRE(c->await("hb", 10s));
    }
    const std::map<std::string, std::string> env{{"GECKO_CORE", core.address()}, {"GECKO_NO_MULTICAST", "1"}, {"GECKO_KEY", key}};
    auto sub = Victim::start({"sub", "--topic", "shared"}, env);
    auto pub = Victim::start({"pub", "--topic", "shared", "--rate", "200"}, env);
    auto s = sub.stats_until([](auto& st) { return st["delivered"] >= 50; }, 15s);
    CHECK(s["delivered"] >= 50);
    CHECK(sub.proc.running());
}

TEST_CASE("list answers stay under the tools' limit whatever the table holds, and count what they leave out",
          "[faults][item4][core]") {
    const auto key = unique_key("bounded");
    auto core = start_core(key, {"--max-sessions-per-host", "100000", "--max-sessions-per-connection", "100000", "--lease", "60000"});
    std::vector<std::string> locators;
    for (int l = 0; l < 8; ++l) locators.push_back("inproc://" + std::string(239, char('a' + l)));
    // 2,000 nodes with 8 locators of 250 bytes: ~4 MB of node list.
    CoreClient many(core.endpoint);
    const std::size_t nodes = 2000;
    for (std::size_t i = 0; i < nodes; ++i) {
        discovery::Writer w("hello", 12);
        w.kv("s", random_u64());
        w.kv("secret", random_u64());
        w.kv("key", key);
        w.kv("node", "n" + std::to_string(i));
        w.kv("host", std::string("h"));
        w.kv("hostid", std::string());
        w.kv("pid", 0);
        w.kv("pidns", std::string());
        w.kv("lease_ms", std::int64_t{3000});
        w.kv("ids", std::vector<std::uint64_t>{});
        w.kv("locators", locators);
        w.kv("tool", false);
        many.send(w);
    }
    // One node with 4,000 publishers on one topic: ~10 MB of one topic.
    CoreClient one(core.endpoint);
    one.hello(key, "one", "h", locators);
    REQUIRE(welcomed(one));
    for (std::uint64_t i = 0; i < 4000; ++i) one.add(1 + i, EntityKind::publisher, "heavy", "gecko.msgs.Int64");
    one.session_message("hb");
    REQUIRE(one.await("hb", 20s));
    std::size_t welcomes = 0;
    while (welcomes < nodes) {
        const auto m = many.recv(10s);
        REQUIRE(m);
        welcomes += m->type() == "welcome";
    }
    REQUIRE(welcomes == nodes);

    // Asked as a tool asks (a DEALER limited to 4 MiB, as the tools are): answered.
    const auto list = list_core(core.endpoint, key, 10s);
    REQUIRE(list);
    const auto omitted = discovery::find(list->root(), "omitted");
    REQUIRE(omitted);
    const auto nodes_listed = list_size(*list, "nodes");
    const auto nodes_omitted = discovery::get_u64(*omitted, "nodes").value_or(0);
    const auto entities_omitted = discovery::get_u64(*omitted, "entities").value_or(0);
    WARN("item 4: " << nodes + 1 << " nodes, 4,000 publishers on one topic: the answer lists " << nodes_listed
                    << " nodes (" << nodes_omitted << " omitted) and omits " << entities_omitted << " publishers");
    CHECK(nodes_listed + nodes_omitted == nodes + 1);
    CHECK(nodes_omitted > 0);
    CHECK(entities_omitted > 0);
    const auto topics = discovery::find(list->root(), "topics");
    REQUIRE(topics);
    REQUIRE(topics->count() == 1);
    const auto heavy = *topics->item(0);
    const auto pubs = discovery::find(heavy, "publishers");
    REQUIRE(pubs);
    CHECK(pubs->count() + discovery::get_u64(heavy, "omitted").value_or(0) == 4000);
#ifdef GECKO_CLI_PATH
    // And `gecko list` shows the table rather than blaming the network.
    SpawnOptions o;
    o.env = {{"GECKO_CORE", core.address()}, {"GECKO_NO_MULTICAST", "1"}, {"GECKO_KEY", key}, {"GECKO_LOG", "warn"}};
    o.unset_env = {"GECKO_MULTICAST", "GECKO_INTERFACE"};
    o.stderr_mode = Stderr::merge;
    o.pipe_stdin = false;
    auto tool = Process::spawn(GECKO_CLI_PATH, {"list", "--names"}, o);
    const auto deadline = Clock::now() + 20s;
    while (!tool.out().eof() && Clock::now() < deadline) tool.out().drain(100ms);
    const auto rc = tool.wait(10s);
    REQUIRE(rc);
    CHECK(*rc == 0);
    const auto lines = tool.out().lines();
    CHECK(std::find(lines.begin(), lines.end(), "heavy") != lines.end());
#endif
}

// ---- item 5 -------------------------------------------------------------------------------

TEST_CASE("1,100 idle tcp connections to a core limited to 1,024 fds: it does not spin, and nodes still get in (CPU measured)",
          "[faults][item5][core][heavy]") {
    // Our own end needs 1,100 fds too.
    rlimit mine{};
    REQUIRE(::getrlimit(RLIMIT_NOFILE, &mine) == 0);
    if (mine.rlim_cur < 2048 && mine.rlim_max >= 2048) {
        mine.rlim_cur = std::min<rlim_t>(mine.rlim_max, 4096);
        ::setrlimit(RLIMIT_NOFILE, &mine);
    }
    REQUIRE(mine.rlim_cur >= 1200);
    const auto key = unique_key("idle");
    // Idle connections expire after 1 s here (10 s by default), so that the test sees them go.
    auto core = start_core(key, {"--hello-timeout", "1000"}, "/usr/bin/prlimit", {"--nofile=1024:1024", "--"});
    const int port = core.port();

    struct Fds {
        std::vector<int> fds;
        ~Fds() {
            for (int fd : fds) ::close(fd);
        }
    } idle;
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_port = htons(static_cast<std::uint16_t>(port));
    to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    for (int i = 0; i < 1100; ++i) {
        const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        REQUIRE(fd >= 0);
        idle.fds.push_back(fd);
        // In progress or done, both idle; those beyond the listen backlog are retried by the kernel.
        (void)::connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof to);
    }
    // Over three seconds with 1,100 silent connections, the core mostly sleeps.
    const double cpu0 = figures_of(core.proc.pid()).cpu_s;
    const auto t0 = Clock::now();
    CoreClient late(core.endpoint);
    late.hello(key, "late");
    const bool in = welcomed(late, 10s);
    const auto joined_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    while (Clock::now() - t0 < 3s) std::this_thread::sleep_for(50ms);  // the measuring window itself
    const double cpu = figures_of(core.proc.pid()).cpu_s - cpu0;
    const auto list = list_core(core.endpoint, key);
    REQUIRE(list);
    WARN("item 5: core CPU over 3 s with 1,100 idle connections: " << cpu << " s; a new node was welcomed after "
                                                                    << joined_ms << " ms; connections closed: "
                                                                    << core_counter(*list, "connections_closed"));
    CHECK(in);
    CHECK(cpu < (sanitized ? 1.0 : 0.5));
    CHECK(core_counter(*list, "connections_closed") > 0);
    CHECK(core.proc.running());
}

// ---- item 6 -------------------------------------------------------------------------------

TEST_CASE("20,000 hellos write a bounded number of core lines, with a count of those held back", "[faults][item6][core][heavy]") {
    const std::size_t n = scaled(20000, 2000);
    const auto key = unique_key("hellos");
    // One connection opening every session: allowed here, to flood the log.
    auto core = start_core(key, {"--lease", "500", "--log-period", "300", "--max-sessions-per-connection", "100000",
                                 "--max-sessions-per-host", "100000"});
    const auto start_lines = core_lines(core, 100ms).size();
    CoreClient c(core.endpoint);
    for (std::size_t i = 0; i < n; ++i) {
        discovery::Writer w("hello", 12);
        w.kv("s", random_u64());
        w.kv("secret", random_u64());
        w.kv("key", key);
        w.kv("node", "flood" + std::to_string(i));
        w.kv("host", "host" + std::to_string(i % 64));
        w.kv("hostid", std::string());
        w.kv("pid", 0);
        w.kv("pidns", std::string());
        w.kv("lease_ms", std::int64_t{500});
        w.kv("ids", std::vector<std::uint64_t>{});
        w.kv("locators", std::vector<std::string>{});
        w.kv("tool", false);
        c.send(w);
    }
    // Every session joins, then expires (lease 500 ms): both kinds of lines are floods.
    const auto deadline = Clock::now() + 30s;
    for (;;) {
        const auto list = list_core(core.endpoint, key);
        REQUIRE(list);
        if (core_counter(*list, "leases_expired") >= n) break;
        REQUIRE(Clock::now() < deadline);
        std::this_thread::sleep_for(100ms);  // poll interval of a bounded wait for the leases to expire
    }
    // The held-back counts come out within a log period or two.
    auto lines = core_lines(core, 1s);
    for (auto until = Clock::now() + 20s; count_containing(lines, "held back") < 2 && Clock::now() < until;)
        lines = core_lines(core, 200ms);
    const auto written = lines.size() - start_lines;
    WARN("item 6: " << n << " hellos (joined, then expired) wrote " << written << " core lines");
    CHECK(written < 60);
    CHECK(count_containing(lines, "held back") >= 1);
}

TEST_CASE("1,000 conflicting types on one topic write a bounded number of lines in the core and in a subscriber",
          "[faults][item6][core][node]") {
    const auto key = unique_key("types");
    auto core = start_core(key, {"--log-period", "300"});
    auto sub = Victim::start({"sub", "--topic", "contested"}, {{"GECKO_CORE", core.address()}, {"GECKO_NO_MULTICAST", "1"}, {"GECKO_KEY", key}});
    const auto sub_lines0 = sub.log_lines(100ms).size();
    const auto core_lines0 = core_lines(core, 100ms).size();
    CoreClient c(core.endpoint);
    c.hello(key, "types");
    REQUIRE(welcomed(c));
    for (std::uint64_t i = 0; i < 1000; ++i) c.add(1 + i, EntityKind::publisher, "contested", "evil.Type" + std::to_string(i));
    c.session_message("hb");
    REQUIRE(c.await("hb", 20s));
    const auto list = list_core(core.endpoint, key);
    REQUIRE(list);
    // 16 types at most from one node on one topic: the rest refused and counted.
    CHECK(core_counter(*list, "refused") == 1000 - 16);
    const auto node_written = sub.log_lines(1s).size() - sub_lines0;
    const auto core_written = core_lines(core, 0ms).size() - core_lines0;
    WARN("item 6: 1,000 conflicting types wrote " << core_written << " core lines and " << node_written << " subscriber lines");
    CHECK(core_written < 30);
    CHECK(node_written < 30);
    CHECK(sub.proc.running());
}

// ---- item 7 -------------------------------------------------------------------------------

TEST_CASE("names with terminal escape sequences are refused at registration", "[faults][item7][core]") {
    const auto key = unique_key("escapes");
    auto core = start_core(key);
    const std::string title = "\x1b]0;owned\x07", clear = "\x1b[2J\x1b[H";
    // A UTF-8 C1 CSI and a raw 8-bit one: names may be UTF-8, but not these.
    const std::string c1 = "n\xc2\x9b" "2J", raw = "n\x9b" "2J";
    for (const auto& [node, host] : {std::make_pair(title, std::string("h")), std::make_pair(std::string("n"), clear),
                                     std::make_pair(c1, std::string("h")), std::make_pair(std::string("n"), raw)}) {
        CoreClient c(core.endpoint);
        c.hello(key, node, host);
        const auto e = error_of(c);
        REQUIRE(e);
        CHECK(e->first == "refused");
    }
    CoreClient c(core.endpoint);
    c.hello(key, "fine");
    REQUIRE(welcomed(c));
    c.add(1, EntityKind::publisher, "topic" + clear, "gecko.msgs.Int64");
    auto e = error_of(c);
    REQUIRE(e);
    CHECK(e->first == "refused");
    CHECK(e->second.find('\x1b') == std::string::npos);  // the reason itself is safe to print
    c.add(2, EntityKind::publisher, "topic", "gecko.msgs." + title);
    e = error_of(c);
    REQUIRE(e);
    CHECK(e->first == "refused");
    CHECK(e->second.find('\x1b') == std::string::npos);
    for (const auto& line : core_lines(core, 200ms)) {
        CHECK(line.find('\x1b') == std::string::npos);
        CHECK(line.find('\x9b') == std::string::npos);
    }
    // A node named in UTF-8 is welcome.
    CoreClient utf8(core.endpoint);
    utf8.hello(key, "r\xc3\xb6" "bot-\xe2\x9c\x93");
    CHECK(welcomed(utf8));
    const auto list = list_core(core.endpoint, key);
    REQUIRE(list);
    CHECK(list_size(*list, "topics") == 0);
    CHECK(core_counter(*list, "refused") == 6);
}

// ---- item 15 ------------------------------------------------------------------------------

TEST_CASE("the core removes the ipc socket file of a node of its host that was killed", "[faults][item15][core]") {
    gecko::test::TempDir dir;
    const auto key = unique_key("ipcgone");
    auto core = start_core(key);
    const std::map<std::string, std::string> env{
        {"GECKO_CORE", core.address()}, {"GECKO_NO_MULTICAST", "1"}, {"GECKO_KEY", key}, {"GECKO_IPC_DIR", dir.path()}};
    auto pub = Victim::start({"pub", "--topic", "t"}, env);
    std::string socket;
    for (const auto& l : pub.locators)
        if (l.rfind("ipc://", 0) == 0) socket = l.substr(6);
    REQUIRE(!socket.empty());
    // Registered: the core knows its locators.
    const auto deadline = Clock::now() + 10s;
    for (;;) {
        const auto list = list_core(core.endpoint, key);
        REQUIRE(list);
        if (list_size(*list, "topics") == 1) break;
        REQUIRE(Clock::now() < deadline);
        std::this_thread::sleep_for(20ms);  // poll interval of a bounded wait for the registration
    }
    struct stat st {};
    REQUIRE(::stat(socket.c_str(), &st) == 0);
    pub.proc.kill();
    REQUIRE(pub.proc.wait(20s));
    REQUIRE(::stat(socket.c_str(), &st) == 0);  // SIGKILL leaves it behind
    // The core checks its host's nodes every 200 ms (kill(pid, 0)).
    bool gone = false;
    for (const auto until = Clock::now() + 20s; !gone && Clock::now() < until;) {
        gone = ::stat(socket.c_str(), &st) != 0;
        if (!gone) std::this_thread::sleep_for(20ms);  // poll interval of a bounded wait on the file system
    }
    CHECK(gone);
    const auto list = list_core(core.endpoint, key);
    REQUIRE(list);
    CHECK(core_counter(*list, "dead_processes") == 1);
}
