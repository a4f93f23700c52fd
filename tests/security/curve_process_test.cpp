// SPDX-License-Identifier: Apache-2.0
// A secured key across processes: real geckocore and gecko_test_node
// processes on loopback, each finding the key's secret by itself (a
// temporary secret file named with GECKO_SECRET_FILE, or none at all).

#include <catch2/catch.hpp>

#include <zmq.hpp>

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "gecko/net/net.hpp"
#include "gecko/net/zmq_socket.hpp"
#include "gecko/security/key_security.hpp"
#include "gecko/security/secret.hpp"
#include "gecko/wire/discovery.hpp"
#include "support/ports.hpp"
#include "support/process.hpp"

using namespace std::chrono_literals;
using gecko::security::Secret;
using gecko::test::Process;
using gecko::test::SpawnOptions;
using gecko::test::Stderr;
using gecko::test::TempDir;

namespace {

// A scratch home: the secret files, an empty XDG config (so that no secret of
// the machine's user is found by accident), the nodes' ipc sockets.
struct Home {
    TempDir dir;
    std::string secret_file(const std::string& name, const Secret& s) const {
        const std::string path = dir.path() + "/" + name + ".secret";
        s.write_file(path);
        return path;
    }
    // A secret file during a rotation: `own` used, `accepted` accepted too (docs/SECURITY.md §9).
    std::string secret_file(const std::string& name, const Secret& own, const Secret& accepted) const {
        const std::string path = dir.path() + "/" + name + ".secret";
        gecko::security::SecretFile{own, accepted}.write(path);
        return path;
    }
    // The environment of a process of the key; `secret` "" = no secret at all.
    SpawnOptions env(const std::string& secret, const std::string& core = "") const {
        SpawnOptions o;
        o.stderr_mode = Stderr::merge;  // their logs are what the tests read
        o.env = {{"XDG_CONFIG_HOME", dir.path() + "/config"}, {"HOME", dir.path()}, {"GECKO_IPC_DIR", dir.path()},
                 {"GECKO_NO_MULTICAST", "1"}};
        if (!core.empty()) o.env["GECKO_CORE"] = core;
        o.unset_env = {"GECKO_KEY", "GECKO_MULTICAST", "GECKO_INTERFACE", "GECKO_DISCOVERY", "GECKO_SECRET_FILE",
                       "GECKO_TRANSPORTS"};
        if (core.empty()) o.unset_env.push_back("GECKO_CORE");
        if (!secret.empty()) o.env["GECKO_SECRET_FILE"] = secret;
        return o;
    }
};

Secret secret_of(std::uint8_t first) {
    Secret::Bytes b{};
    for (std::size_t i = 0; i < b.size(); ++i) b[i] = static_cast<std::uint8_t>(first + 3 * i);
    return Secret::from_bytes(b);
}

struct Core {
    Process proc;
    std::string address;  // 127.0.0.1:PORT
};

Core start_core(const Home& home, const std::string& key, const std::string& secret) {
    auto proc = Process::spawn(GECKOCORE_PATH, {"--key", key, "--no-multicast", "--door", "0", "--listen", "tcp://127.0.0.1:*"},
                               home.env(secret));
    const auto line = proc.wait_for_line("listening on ", 20s);
    INFO("geckocore output:\n" << proc.output());
    REQUIRE(line);
    const auto endpoint = gecko::test::endpoint_after(*line, "listening on ");
    REQUIRE(endpoint);
    if (!secret.empty()) CHECK(line->find(", secured (secret ") != std::string::npos);
    return Core{std::move(proc), gecko::test::host_port(*endpoint)};
}

Process node(const Home& /*home*/, const std::vector<std::string>& args, const SpawnOptions& env) {
    return Process::spawn(GECKO_TEST_NODE, args, env);
}

// A publisher (environment `pub_env`) sends `count` messages on `topic` to a
// subscriber (`sub_env`), both over `transport` alone; every one must arrive.
// Returns both processes' output.
std::string exchange(const Home& home, const std::string& key, const std::string& topic, SpawnOptions pub_env,
                     SpawnOptions sub_env, const std::string& transport, int count) {
    pub_env.env["GECKO_TRANSPORTS"] = sub_env.env["GECKO_TRANSPORTS"] = transport;
    const std::string n = std::to_string(count);
    auto pub = node(home, {"pub", "--topic", topic, "--count", n, "--rate", "100", "--wait-subs", "1", "--key", key}, pub_env);
    auto sub = node(home, {"sub", "--topic", topic, "--count", n, "--timeout-ms", "40000", "--key", key}, sub_env);
    for (int i = 1; i <= count; ++i) {
        const auto line = sub.out().wait_for("recv ", 40s);
        INFO("subscriber output:\n" << sub.output() << "publisher output:\n" << pub.output());
        REQUIRE(line);
    }
    CHECK(sub.wait(30s) == 0);
    CHECK(pub.wait_for_line("published " + n, 30s));  // then it lingers until killed
    return sub.output() + pub.output();
}

}  // namespace

TEST_CASE("with the key's secret, processes exchange messages through a secured core over tcp, ipc and shm",
          "[security][curve][process]") {
    Home home;
    const std::string key = "sec-" + std::to_string(::getpid());
    const auto secret = home.secret_file("key", secret_of(1));
    auto core = start_core(home, key, secret);
    // shm alone: a segment whose seal the reader refused would leave no link at all.
    for (const std::string& transport : {std::string("tcp"), std::string("ipc"), std::string("shm")}) {
        INFO("transport " << transport);
        const auto out = exchange(home, key, "secret/" + transport, home.env(secret, core.address),
                                  home.env(secret, core.address), transport, 50);
        CHECK(out.find("requires authentication") == std::string::npos);
        CHECK(out.find("refuses") == std::string::npos);
    }
}

TEST_CASE("during a rotation, processes on the old secret and on the new one exchange messages over tcp, ipc, shm",
          "[security][curve][process][rotation]") {
    Home home;
    const std::string key = "sec-rot-" + std::to_string(::getpid());
    const Secret old_one = secret_of(20), new_one = secret_of(21);
    const auto unswitched = home.secret_file("unswitched", old_one, new_one);  // round 1: old, accepting new
    const auto switched = home.secret_file("switched", new_one, old_one);      // round 2: new, accepting old
    auto core = start_core(home, key, unswitched);
    CHECK(core.proc.output().find("also accepting " + new_one.fingerprint()) != std::string::npos);
    for (const std::string& transport : {std::string("tcp"), std::string("ipc"), std::string("shm")}) {
        INFO("transport " << transport);
        // The switched publisher reaches the core on the old secret's server key (after its own is
        // refused: GECKO_CORE names no secret), the subscriber names the publisher's from the peer map.
        const auto out = exchange(home, key, "rot/" + transport, home.env(switched, core.address),
                                  home.env(unswitched, core.address), transport, 30);
        CHECK(out.find("requires authentication") == std::string::npos);
        CHECK(out.find("refuses this node's CURVE handshake") == std::string::npos);
        // The switched publisher said how it reached the core.
        CHECK(out.find("trying the one it accepts (fingerprint " + old_one.fingerprint() + ")") != std::string::npos);
    }
    // A program with a third secret is still refused, and says so.
    auto outsider = node(home, {"sub", "--topic", "rot/tcp", "--count", "1", "--timeout-ms", "60000", "--key", key},
                         home.env(home.secret_file("outsider", secret_of(22)), core.address));
    const auto error = outsider.wait_for_line("refuses this node's CURVE handshake", 20s);
    INFO("outsider output:\n" << outsider.output());
    CHECK(error);
}

TEST_CASE("a process without the secret of a secured key gets a clear error within a bound", "[security][curve][process]") {
    Home home;
    const std::string key = "sec-none-" + std::to_string(::getpid());
    auto core = start_core(home, key, home.secret_file("key", secret_of(2)));
    auto sub = node(home, {"sub", "--topic", "t", "--count", "1", "--timeout-ms", "60000", "--key", key}, home.env("", core.address));
    const auto error = sub.wait_for_line("requires authentication; no secret found at", 20s);
    INFO("node output:\n" << sub.output());
    REQUIRE(error);
    CHECK(error->find("geckocore for key '" + key + "'") != std::string::npos);
    CHECK(error->find(home.dir.path() + "/config/gecko/keys/") != std::string::npos);  // where it looked
    // The core says someone tried (its address when the accept event came before the failed
    // handshake; a plain client's failure can come first, and then the address is unknown).
    const auto refused = core.proc.wait_for_line("refused a connection from ", 20s);
    INFO("geckocore output:\n" << core.proc.output());
    CHECK(refused);
}

TEST_CASE("a process with another secret gets a clear error within a bound and the core logs the refusal",
          "[security][curve][process]") {
    Home home;
    const std::string key = "sec-other-" + std::to_string(::getpid());
    auto core = start_core(home, key, home.secret_file("right", secret_of(3)));
    auto sub = node(home, {"sub", "--topic", "t", "--count", "1", "--timeout-ms", "60000", "--key", key},
                    home.env(home.secret_file("wrong", secret_of(4)), core.address));
    const auto error = sub.wait_for_line("refuses this node's CURVE handshake", 20s);
    INFO("node output:\n" << sub.output());
    REQUIRE(error);
    CHECK(error->find("holds another secret than") != std::string::npos);
    const auto refused = core.proc.wait_for_line("refused a connection from 127.0.0.1:", 20s);
    INFO("geckocore output:\n" << core.proc.output());
    REQUIRE(refused);
    CHECK(refused->find("so far") != std::string::npos);
}

TEST_CASE("a plain ZeroMQ client gets nothing from a secured publisher and a client of another key is refused and counted",
          "[security][curve][zap][process]") {
    Home home;
    const std::string key = "sec-pub-" + std::to_string(::getpid());
    const auto secret = home.secret_file("key", secret_of(6));
    auto env = home.env(secret);
    auto pub = node(home, {"pub", "--topic", "t", "--type", "string", "--count", "100000", "--rate", "200", "--wait-subs", "1",
                           "--no-discovery", "--key", key, "--endpoint", "tcp://127.0.0.1:*"},
                    env);
    const auto ready = pub.wait_for_line("ready", 20s);
    INFO("publisher output:\n" << pub.output());
    REQUIRE(ready);
    const auto port = gecko::test::endpoint_after(*ready, " tcp://");
    REQUIRE(port);
    const std::string endpoint = "tcp://" + *port;

    zmq::context_t context(1);
    // A plain subscriber to everything, as anyone on the network could try.
    zmq::socket_t plain(context, zmq::socket_type::sub);
    plain.set(zmq::sockopt::linger, 0);
    plain.set(zmq::sockopt::subscribe, "");
    plain.connect(endpoint);
    // A CURVE client that knows the server key but holds another client key.
    auto keys = gecko::security::curve_keys(key, secret_of(6));
    const auto other = gecko::security::curve_keys(key, secret_of(7));
    zmq::socket_t impostor(context, zmq::socket_type::sub);
    impostor.set(zmq::sockopt::linger, 0);
    impostor.set(zmq::sockopt::curve_serverkey, keys.server_public);
    impostor.set(zmq::sockopt::curve_publickey, other.client_public);
    impostor.set(zmq::sockopt::curve_secretkey, other.client_secret);
    impostor.set(zmq::sockopt::subscribe, "");
    impostor.connect(endpoint);

    // The control: a subscriber process holding the secret receives.
    auto sub = node(home, {"sub", "--topic", "t", "--type", "string", "--count", "20", "--timeout-ms", "30000", "--no-discovery",
                           "--key", key, "--endpoint", endpoint},
                    env);
    const auto refused = pub.wait_for_line("refused a connection from 127.0.0.1", 20s);
    CHECK(refused);
    if (refused) CHECK(refused->find("refused so far") != std::string::npos);
    int leaked = 0;
    for (int i = 0; i < 20; ++i) {
        const auto line = sub.out().wait_for("recv ", 30s);
        INFO("subscriber output:\n" << sub.output());
        REQUIRE(line);
        zmq::message_t m;
        while (plain.recv(m, zmq::recv_flags::dontwait)) ++leaked;
        while (impostor.recv(m, zmq::recv_flags::dontwait)) ++leaked;
    }
    CHECK(sub.wait(30s) == 0);
    CHECK(leaked == 0);
}

#ifdef GECKO_CLI_PATH
namespace {
// `gecko ARGS --key KEY` in `env`: its whole output, once it exits.
std::string gecko_cli(std::vector<std::string> args, const std::string& key, const SpawnOptions& env) {
    args.insert(args.end(), {"--key", key});
    auto p = Process::spawn(GECKO_CLI_PATH, args, env);
    std::string out;
    while (auto line = p.read_line(30s)) out += *line + "\n";  // until it closes stdout
    REQUIRE(p.wait(30s).has_value());
    return out;
}
}  // namespace

TEST_CASE("gecko list says a key is secured and gecko info says what protects each link", "[security][curve][process]") {
    Home home;
    const std::string key = "sec-list-" + std::to_string(::getpid());
    const auto secret = home.secret_file("key", secret_of(8));
    auto core = start_core(home, key, secret);
    auto env = home.env(secret, core.address);
    env.env["GECKO_TRANSPORTS"] = "tcp";
    auto pub = node(home, {"pub", "--topic", "guarded", "--count", "1000000", "--rate", "50", "--key", key}, env);
    auto sub = node(home, {"sub", "--topic", "guarded", "--count", "1000000", "--timeout-ms", "60000", "--key", key}, env);
    REQUIRE(sub.out().wait_for("recv ", 30s));

    const auto list = gecko_cli({"list"}, key, env);
    INFO("gecko list:\n" << list);
    CHECK(list.find(", secured (secret " + secret_of(8).fingerprint() + "): every tcp and ipc link is CurveZMQ") !=
          std::string::npos);
    // A node reports its links every few seconds: ask again until the subscriber's is there (bounded).
    std::string info;
    for (int i = 0; i < 40 && info.find("over tcp (CurveZMQ)") == std::string::npos; ++i) {
        if (i > 0) std::this_thread::sleep_for(500ms);
        info = gecko_cli({"info", "guarded"}, key, env);
    }
    INFO("gecko info guarded:\n" << info);
    CHECK(info.find(" over tcp (CurveZMQ)") != std::string::npos);
}

TEST_CASE("an attacker without the secret registers, publishes and calls in vain while the streams go on",
          "[security][curve][process]") {
    Home home;
    const std::string key = "sec-attack-" + std::to_string(::getpid());
    const auto secret = home.secret_file("key", secret_of(12));
    auto core = start_core(home, key, secret);
    auto env = home.env(secret, core.address);
    env.env["GECKO_TRANSPORTS"] = "tcp";
    auto pub = node(home, {"pub", "--topic", "guarded", "--count", "300", "--rate", "100", "--wait-subs", "1", "--key", key}, env);
    auto sub = node(home, {"sub", "--topic", "guarded", "--count", "300", "--timeout-ms", "60000", "--key", key}, env);
    REQUIRE(sub.out().wait_for("recv ", 30s));
#ifdef ADD_SERVER_PATH
    auto server = Process::spawn(ADD_SERVER_PATH, {"--key", key}, env);
    REQUIRE(server.wait_for_line("serving 'add'", 20s));
#endif

    // The attacker, with the project's own wire code and no secret: a publisher of the same topic and a
    // client of the service that register with the core over a plain connection, its data port bound and
    // sending (requests ride a client's data port, as messages do a publisher's: docs/PROTOCOL.md).
    zmq::context_t context(1);
    auto data = gecko::net::make_socket(context, zmq::socket_type::xpub);
    data.bind("tcp://127.0.0.1:*");
    const std::string locator = data.get(zmq::sockopt::last_endpoint);
    auto session = gecko::net::make_socket(context, zmq::socket_type::dealer);
    session.connect("tcp://" + core.address);
    gecko::discovery::Writer hello("hello", 12);
    hello.kv("s", std::uint64_t{0xa77ac4});
    hello.kv("secret", std::uint64_t{7});
    hello.kv("key", key);
    hello.kv("node", std::string("attacker"));
    hello.kv("host", std::string("somewhere"));
    hello.kv("hostid", std::string());
    hello.kv("pid", std::int32_t{1});
    hello.kv("pidns", std::string());
    hello.kv("lease_ms", std::int64_t{3000});
    hello.kv("ids", std::vector<std::uint64_t>{0xbad, 0xca11});
    hello.kv("locators", std::vector<std::string>{locator});
    hello.kv("tool", false);
    gecko::discovery::Registration forged;
    forged.id = 0xbad;
    forged.topic = "guarded";
    forged.type_name = "gecko.msgs.Int64";
    const auto add = gecko::discovery::add_message(0xa77ac4, 7, forged);
    gecko::discovery::Registration caller;
    caller.id = 0xca11;
    caller.kind = gecko::discovery::EntityKind::client;
    caller.topic = "add";
    caller.type_name = "examples.AddRequest->examples.AddReply";
    const auto add_client = gecko::discovery::add_message(0xa77ac4, 7, caller);
    int answers = 0, subscriptions = 0;
    for (int i = 0; i < 200; ++i) {  // 2 s of trying, as the stream goes on
        if (i % 20 == 0) {
            (void)session.send(zmq::const_buffer(hello.data(), hello.size()), zmq::send_flags::dontwait);
            (void)session.send(zmq::const_buffer(add.data(), add.size()), zmq::send_flags::dontwait);
            (void)session.send(zmq::const_buffer(add_client.data(), add_client.size()), zmq::send_flags::dontwait);
        }
        (void)data.send(zmq::str_buffer("not a frame of anyone's"), zmq::send_flags::dontwait);
        zmq::message_t m;
        while (session.recv(m, zmq::recv_flags::dontwait)) ++answers;
        while (data.recv(m, zmq::recv_flags::dontwait)) ++subscriptions;
        std::this_thread::sleep_for(10ms);  // a pace for the attack, not a synchronisation
    }
    CHECK(answers == 0);        // the core never heard it: the handshake failed
    CHECK(subscriptions == 0);  // so no secured node was told to subscribe to it
#ifdef ADD_SERVER_PATH
    // The service answers a caller that has the secret, after the attack as during it.
    const auto call = gecko_cli({"call", "add", R"({"a": 1, "b": 2})"}, key, env);
    INFO("gecko call add:\n" << call << "add_server output:\n" << server.output());
    CHECK(call.find("sum: 3.0\n") != std::string::npos);
#endif

    // The secured stream had no gap, and the core counted the refused handshakes.
    const auto stats = sub.wait_for_line("stats ", 60s);
    INFO("subscriber output:\n" << sub.output());
    REQUIRE(stats);
    CHECK(stats->find("received=300 drops=0") != std::string::npos);
    CHECK(sub.wait(30s) == 0);
    const auto list = gecko_cli({"list"}, key, env);
    INFO("gecko list:\n" << list);
    CHECK(list.find("connections whose CURVE handshake failed") != std::string::npos);
    CHECK(list.find("attacker") == std::string::npos);
}

namespace {
// What an attacker on the robot's network hears: the key's datagrams on the discovery group, as sent.
class Eavesdropper {
public:
    explicit Eavesdropper(std::uint16_t port) {
        std::string error;
        group_.sin_family = AF_INET;
        group_.sin_port = htons(port);
        group_.sin_addr = *gecko::net::parse_ipv4(gecko::discovery::default_multicast_group);
        in_ = gecko::net::open_multicast_listener(group_.sin_addr, port, *gecko::net::interface_address(""), error);
        INFO(error);
        REQUIRE(in_);
        out_ = gecko::net::open_multicast_sender(*gecko::net::interface_address(""), 1, error);
        REQUIRE(out_);
    }
    // The first datagram of `type` for `key` heard within `timeout`, as its bytes ("" if none).
    std::string capture(const std::string& type, const std::string& key, std::chrono::milliseconds timeout) {
        const auto deadline = std::chrono::steady_clock::now() + timeout;
        char buf[gecko::discovery::max_datagram];
        while (std::chrono::steady_clock::now() < deadline) {
            pollfd p{in_.get(), POLLIN, 0};
            if (::poll(&p, 1, 100) <= 0) continue;
            const auto n = ::recv(in_.get(), buf, sizeof buf, 0);
            if (n <= 0) continue;
            const auto m = gecko::discovery::Message::parse(buf, static_cast<std::size_t>(n), nullptr);
            if (m && m->type() == type && gecko::discovery::get_str(m->root(), "key").value_or("") == key)
                return std::string(buf, static_cast<std::size_t>(n));
        }
        return "";
    }
    void replay(const std::string& datagram) {
        (void)gecko::net::send_to(out_.get(), group_, datagram.data(), datagram.size());
    }

private:
    sockaddr_in group_{};
    gecko::net::Fd in_, out_;
};
}  // namespace

TEST_CASE("replays of a secured key's captured datagrams are refused and counted while its stream goes on",
          "[security][seal][process]") {
    Home home;
    const std::string key = "sec-replay-" + std::to_string(::getpid());
    const auto secret = home.secret_file("key", secret_of(14));
    const auto port = static_cast<std::uint16_t>(20000 + ::getpid() % 20000);
    const std::string group = std::string(gecko::discovery::default_multicast_group) + ":" + std::to_string(port);
    auto env = home.env(secret);  // by multicast on a group of this test's own, not through GECKO_CORE
    env.env.erase("GECKO_NO_MULTICAST");
    env.env["GECKO_MULTICAST"] = group;
    env.env["GECKO_TRANSPORTS"] = "tcp";
    Eavesdropper attacker(port);
    auto core = Process::spawn(GECKOCORE_PATH, {"--key", key, "--multicast", group, "--door", "0", "--listen", "tcp://127.0.0.1:*"},
                               env);
    const auto announce = attacker.capture("announce", key, 20s);
    INFO("geckocore output:\n" << core.output());
    REQUIRE(announce.find("mac") != std::string::npos);  // sealed: the attacker cannot forge one, only replay it
    auto pub = node(home, {"pub", "--topic", "guarded", "--count", "300", "--rate", "100", "--wait-subs", "1", "--key", key}, env);
    const auto query = attacker.capture("query", key, 20s);
    REQUIRE(query.find("mac") != std::string::npos);
    auto sub = node(home, {"sub", "--topic", "guarded", "--count", "300", "--timeout-ms", "60000", "--key", key}, env);
    REQUIRE(sub.out().wait_for("recv ", 30s));

    for (int i = 0; i < 40; ++i) {  // 2 s of replays, as the stream goes on
        attacker.replay(announce);
        attacker.replay(query);
        std::this_thread::sleep_for(50ms);  // a pace for the attack, not a synchronisation
    }
    const auto stats = sub.wait_for_line("stats ", 60s);
    INFO("subscriber output:\n" << sub.output() << "publisher output:\n" << pub.output());
    REQUIRE(stats);
    CHECK(stats->find("received=300 drops=0") != std::string::npos);
    CHECK(sub.wait(30s) == 0);
    // The subscriber ignored the replayed announce (the first copy is authentic to a node that
    // started after the original was sent; the same core anyway), and the core heard the replayed
    // query as a replay (and answered it all the same: docs/SECURITY.md §6).
    CHECK(sub.output().find("ignored a 'announce' datagram for key '" + key + "'") != std::string::npos);
    CHECK(sub.output().find("it was heard before") != std::string::npos);
    CHECK(core.wait_for_line("is not authentic: it was heard before", 20s));
    const auto list = gecko_cli({"list"}, key, env);
    INFO("gecko list:\n" << list);
    CHECK(list.find("discovery datagrams that were not authentic") != std::string::npos);
}

TEST_CASE("processes and gecko list with the secret reach their core through the plain host door",
          "[security][curve][process]") {
    Home home;
    const std::string key = "sec-door-" + std::to_string(::getpid());
    const auto secret = home.secret_file("key", secret_of(6));
    const std::uint16_t door = gecko::test::unused_tcp_port();
    auto core = Process::spawn(GECKOCORE_PATH,
                               {"--key", key, "--no-multicast", "--door", std::to_string(door), "--listen", "tcp://127.0.0.1:*"},
                               home.env(secret));
    const auto holding = core.wait_for_line("holding the host door", 20s);
    INFO("geckocore output:\n" << core.output());
    REQUIRE(holding);
    // The door is plain and only names the core; the nodes then link to it, and to each other, over CURVE.
    const auto at_door = home.env(secret, "127.0.0.1:" + std::to_string(door));
    const auto out = exchange(home, key, "through/door", at_door, at_door, "tcp", 20);
    CHECK(out.find("refuses") == std::string::npos);
    const auto list = gecko_cli({"list"}, key, at_door);
    INFO("gecko list:\n" << list);
    CHECK(list.find(", secured (secret " + secret_of(6).fingerprint() + ")") != std::string::npos);
}

TEST_CASE("gecko list given a secured core's address without its secret says why instead of no answer",
          "[security][curve][process]") {
    Home home;
    const std::string key = "sec-list-why-" + std::to_string(::getpid());
    const auto secret = home.secret_file("key", secret_of(10));
    auto core = start_core(home, key, secret);
    const auto none = gecko_cli({"list"}, key, home.env("", core.address));
    INFO("gecko list without a secret:\n" << none);
    CHECK(none.find("refuses this program's handshake: it requires authentication; no secret found at") != std::string::npos);
    const auto other = gecko_cli({"list"}, key, home.env(home.secret_file("other", secret_of(11)), core.address));
    INFO("gecko list with another secret:\n" << other);
    CHECK(other.find("refuses this program's CURVE handshake: it holds another secret than") != std::string::npos);
    // The core counted the failed handshakes, and gecko list with the secret shows them.
    const auto right = gecko_cli({"list"}, key, home.env(secret, core.address));
    INFO("gecko list with the secret:\n" << right);
    CHECK(right.find("connections whose CURVE handshake failed") != std::string::npos);
}

TEST_CASE("a process with the secret refuses a plain core given by its address, and so does gecko list",
          "[security][curve][process]") {
    Home home;
    const std::string key = "sec-plain-list-" + std::to_string(::getpid());
    auto core = start_core(home, key, "");
    const auto secured_env = home.env(home.secret_file("key", secret_of(9)), core.address);
    auto sub = node(home, {"sub", "--topic", "t", "--count", "1", "--timeout-ms", "60000", "--key", key}, secured_env);
    const auto error = sub.wait_for_line("is not secured, but this node has the key's secret", 20s);
    INFO("node output:\n" << sub.output());
    CHECK(error);
    const auto list = gecko_cli({"list"}, key, secured_env);
    INFO("gecko list:\n" << list);
    CHECK(list.find("is not secured, but this machine has the key's secret") != std::string::npos);
}
#endif
