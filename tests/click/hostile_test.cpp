// SPDX-License-Identifier: Apache-2.0
// Hostile Click clients against a real gecko-click-gateway (in front of a real
// gecko-sim and geckocore on loopback): requests too large to read, protobuf
// that inflates when parsed, Controls far larger than the handshake allows,
// and floods of bad requests. The gateway's memory is measured from /proc
// (resident now, and its peak), its log lines counted; every attack ends with
// an honest client being served. docs/RELIABILITY.md, "The Click gateway",
// states the promises and the figures these tests print.
#include "click.pb.h"

#include "support/ports.hpp"
#include "support/process.hpp"

#include <catch2/catch.hpp>
#include <zmq.hpp>

#include <unistd.h>

#include <chrono>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

namespace pb = click::protobuf;
using namespace std::chrono_literals;
using gecko::test::Process;
using gecko::test::SpawnOptions;

namespace {

constexpr bool sanitized =
#ifdef GECKO_CLICK_SANITIZED
    true;  // ASan keeps freed memory in quarantine and adds its own: memory bounds are not checked
#else
    false;
#endif

constexpr long MiB = 1024;  // in kB, as /proc says

struct Memory {
    long rss_kb = 0;  ///< resident now
    long hwm_kb = 0;  ///< peak resident since the process started
};

Memory memory_of(pid_t pid) {
    Memory m;
    std::ifstream status("/proc/" + std::to_string(pid) + "/status");
    for (std::string line; std::getline(status, line);) {
        if (line.rfind("VmRSS:", 0) == 0) m.rss_kb = std::atol(line.c_str() + 6);
        if (line.rfind("VmHWM:", 0) == 0) m.hwm_kb = std::atol(line.c_str() + 6);
    }
    return m;
}

// A Click client's REQ socket, with a receive timeout so that a missing reply
// fails (or, where no reply is due, ends) a wait instead of hanging the test.
struct Client {
    zmq::context_t context{1};
    zmq::socket_t socket{context, zmq::socket_type::req};

    explicit Client(const std::string& endpoint, std::chrono::milliseconds receive_timeout = 10s) {
        socket.set(zmq::sockopt::rcvtimeo, static_cast<int>(receive_timeout.count()));
        socket.set(zmq::sockopt::sndtimeo, 30000);
        socket.set(zmq::sockopt::linger, 0);
        socket.connect(endpoint);
    }
    void send(const std::string& request) { REQUIRE(socket.send(zmq::buffer(request), zmq::send_flags::none)); }
    std::optional<std::string> receive() {
        zmq::message_t reply;
        if (!socket.recv(reply)) return std::nullopt;
        return reply.to_string();
    }
    std::string ask(const std::string& request) {
        send(request);
        auto reply = receive();
        REQUIRE(reply);  // no reply within the timeout: a real Click client would hang here
        return *reply;
    }
    static pb::MessageType type_of(const std::string& reply) {
        pb::Message m;
        REQUIRE(m.ParseFromString(reply));
        return m.messagetype();
    }
    static std::string error_text(const std::string& reply) {
        REQUIRE(type_of(reply) == pb::ErrorMessageType);
        pb::ErrorMessage e;
        REQUIRE(e.ParseFromString(reply));
        return e.errormessage();
    }
    void handshake() {
        pb::HandshakeInitMessage init;
        init.set_version(pb::CURRENT_VERSION);
        REQUIRE(type_of(ask(init.SerializeAsString())) == pb::HandshakeMessageType);
    }
    // A SensorRequest answered with a SensorMessage: the gateway serves.
    void served() {
        pb::SensorRequestMessage request;
        request.set_messagetype(pb::SensorRequestMessageType);
        const std::string reply = ask(request.SerializeAsString());
        if (type_of(reply) == pb::ErrorMessageType) FAIL("the gateway answered with an ErrorMessage: " << error_text(reply));
        CHECK(type_of(reply) == pb::SensorMessageType);
    }
};

/// geckocore, gecko-sim (the demo scene: robot1, robot2, box) and
/// gecko-click-gateway on loopback; the gateway's stderr (its log) captured.
struct Rig {
    std::string key = "click-hostile-" + std::to_string(::getpid());
    gecko::test::CoreOnLoopback core = gecko::test::start_core(GECKOCORE_PATH, key);
    gecko::test::TempDir ipc_dir;
    Process sim;
    Process gateway;
    std::string endpoint;

    explicit Rig(std::vector<std::string> gateway_args = {}) {
        SpawnOptions env;
        env.env = {{"GECKO_CORE", core.address()}, {"GECKO_NO_MULTICAST", "1"}, {"GECKO_IPC_DIR", ipc_dir.path()},
                   {"GECKO_LOG", "info"}};
        env.unset_env = {"GECKO_KEY", "GECKO_DISCOVERY", "GECKO_MULTICAST", "GECKO_INTERFACE"};
        env.stderr_mode = gecko::test::Stderr::merge;
        sim = Process::spawn(GECKO_SIM_PATH, {"--key", key, "--watchdog-ms", "0"}, env);
        REQUIRE(sim.wait_for_line("ready", 10s));
        env.stderr_mode = gecko::test::Stderr::capture;
        std::vector<std::string> args{"--key", key, "--bind", "tcp://127.0.0.1:*", "--timeout-ms", "10000"};
        args.insert(args.end(), gateway_args.begin(), gateway_args.end());
        gateway = Process::spawn(GECKO_CLICK_GATEWAY_PATH, args, env);
        const auto banner = gateway.wait_for_line("Click clients on ", 10s);
        INFO("gateway output:\n" << gateway.output() << gateway.err().text());
        REQUIRE(banner);
        const auto bound = gecko::test::endpoint_after(*banner, "Click clients on ");
        REQUIRE(bound);
        endpoint = *bound;
    }

    Memory memory() { return memory_of(gateway.pid()); }
    /// The gateway's log lines so far (read without waiting, so that its stderr never fills up).
    const std::vector<std::string>& log() {
        gateway.err().drain();
        return gateway.err().lines();
    }
    std::size_t log_lines_with(const std::string& needle) {
        std::size_t n = 0;
        for (const std::string& line : log()) n += line.find(needle) != std::string::npos ? 1 : 0;
        return n;
    }
    /// Stops the gateway (SIGINT) and returns its summary line.
    std::string stop() {
        gateway.kill(SIGINT);
        const auto summary = gateway.wait_for_line("stopped after", 10s);
        CHECK(gateway.wait(10s) == 0);
        return summary.value_or("");
    }
};

// The bytes of a protobuf varint.
std::string varint(std::uint64_t v) {
    std::string out;
    while (v >= 0x80) {
        out.push_back(static_cast<char>((v & 0x7f) | 0x80));
        v >>= 7;
    }
    out.push_back(static_cast<char>(v));
    return out;
}

// A ControlMessage of `robots` objects "r0", "r1", ..., each with one value,
// written by hand: building it with the generated classes would cost the test
// what it costs the gateway.
std::string control_of_robots(std::size_t robots) {
    std::string out = "\x08\x02";  // messageType = ControlMessageType
    const std::string value = std::string("\x2a\x08", 2) + std::string(8, '\0');  // values = [0.0], packed
    for (std::size_t i = 0; i < robots; ++i) {
        const std::string name = "r" + std::to_string(i);
        const std::string key = "\x0a" + varint(name.size()) + name;
        const std::string object = "\x12" + varint(value.size()) + value;
        const std::string entry = key + object;
        out += "\x12" + varint(entry.size()) + entry;
    }
    return out;
}

}  // namespace

TEST_CASE("a 256 MiB Click request is refused before it is read whole, and the gateway keeps serving (RSS measured)",
          "[click][hostile][memory]") {
    Rig rig;
    Client honest(rig.endpoint);
    honest.served();
    const Memory before = rig.memory();

    Client attacker(rig.endpoint, 1s);
    attacker.send(std::string(256u << 20, '\0'));
    // Refused at arrival, the request gets no reply (its bytes were never read);
    // the gateway says why in its log. Wait for either, bounded.
    std::optional<std::string> reply;
    const auto deadline = std::chrono::steady_clock::now() + 60s;
    while (!reply && rig.log_lines_with("larger than") == 0 && std::chrono::steady_clock::now() < deadline) {
        reply = attacker.receive();
    }
    honest.served();
    const Memory after = rig.memory();
    WARN("256 MiB request: gateway peak RSS +" << (after.hwm_kb - before.rss_kb) / MiB << " MiB, resident +"
                                              << (after.rss_kb - before.rss_kb) / MiB << " MiB; reply: "
                                              << (reply ? Client::error_text(*reply) : std::string("none")));
    INFO("gateway log:\n" << rig.gateway.err().text());
    CHECK(rig.log_lines_with("larger than") >= 1);  // the reason, in the gateway's log
    if (!sanitized) CHECK(after.hwm_kb - before.rss_kb < 32 * MiB);
    const std::string summary = rig.stop();
    CHECK_THAT(summary, Catch::Contains("1 client connections closed"));
}

TEST_CASE("15 MiB of protobuf fields Click does not have are refused before anything is built (RSS measured)",
          "[click][hostile][memory]") {
    Rig rig;
    Client client(rig.endpoint);
    client.served();
    const Memory before = rig.memory();

    // A ControlMessage followed by 7.8 million unknown varint fields (15 = 0): an
    // unknown field costs protobuf ~16 bytes for every 2 on the wire.
    std::string request = "\x08\x02";
    request.reserve(15u << 20);
    while (request.size() + 2 <= (15u << 20)) request += std::string("\x78\x00", 2);
    const std::string reason = Client::error_text(client.ask(request));
    client.served();
    const Memory after = rig.memory();
    WARN("15 MiB of unknown fields: gateway peak RSS +" << (after.hwm_kb - before.rss_kb) / MiB << " MiB, resident +"
                                                       << (after.rss_kb - before.rss_kb) / MiB << " MiB; reply: " << reason);
    CHECK_THAT(reason, Catch::Contains("field 15") && Catch::Contains("not in the Click schema"));
    // The request itself is 15 MiB (ZeroMQ's buffer); what parsing it may add is bounded.
    if (!sanitized) CHECK(after.hwm_kb - before.rss_kb < 15 * MiB + 24 * MiB);
    if (!sanitized) CHECK(after.rss_kb - before.rss_kb < 8 * MiB);
    CHECK_THAT(rig.stop(), Catch::Contains("1 refused"));
}

TEST_CASE("a Control of 400,000 robots is refused against the handshake's 3 objects, and its memory given back "
          "(RSS measured)",
          "[click][hostile][memory]") {
    Rig rig;
    Client client(rig.endpoint);
    client.handshake();
    client.served();
    const Memory before = rig.memory();

    const std::string request = control_of_robots(400000);
    const std::string reason = Client::error_text(client.ask(request));
    client.served();
    const Memory after = rig.memory();
    WARN("a Control of 400,000 robots (" << request.size() / 1000 << " kB): gateway peak RSS +"
                                         << (after.hwm_kb - before.rss_kb) / MiB << " MiB, resident after +"
                                         << (after.rss_kb - before.rss_kb) / MiB << " MiB; reply: " << reason);
    CHECK_THAT(reason, Catch::Contains("400000") && Catch::Contains("handshake"));
    if (!sanitized) CHECK(after.hwm_kb - before.rss_kb < 32 * MiB);
    if (!sanitized) CHECK(after.rss_kb - before.rss_kb < 8 * MiB);

    // The honest client's Controls still step the simulation.
    pb::ControlMessage control;
    control.set_messagetype(pb::ControlMessageType);
    for (const char* robot : {"robot1", "robot2"}) {
        auto& object = (*control.mutable_objects())[robot];
        object.add_values(0.1);
        object.add_values(-0.1);
    }
    CHECK(Client::type_of(client.ask(control.SerializeAsString())) == pb::SensorMessageType);
    CHECK_THAT(rig.stop(), Catch::Contains("1 refused"));
}

TEST_CASE("a Control of a million distinct control events, before any handshake, is refused by the element budget "
          "(RSS measured)",
          "[click][hostile][memory]") {
    Rig rig;
    Client client(rig.endpoint);
    client.served();
    const Memory before = rig.memory();

    // One object whose controlEvents map lists "e0", "e1", ...: each entry ~10 bytes
    // on the wire, a map node, a string and a bool once built (twice: protobuf's,
    // then Gecko's), and no handshake yet to compare the objects with.
    std::string events;
    for (std::size_t i = 0; i < 1000000; ++i) {
        const std::string name = "e" + std::to_string(i);
        const std::string entry = "\x0a" + varint(name.size()) + name + std::string("\x10\x01", 2);
        events += "\x22" + varint(entry.size()) + entry;
    }
    const std::string object = "\x12" + varint(events.size()) + events;
    const std::string key = std::string("\x0a\x06") + "robot1";
    const std::string request = "\x08\x02\x12" + varint(key.size() + object.size()) + key + object;
    const std::string reason = Client::error_text(client.ask(request));
    client.served();
    const Memory after = rig.memory();
    WARN("a Control of 1,000,000 control events (" << request.size() / 1000 << " kB): gateway peak RSS +"
                                                   << (after.hwm_kb - before.rss_kb) / MiB << " MiB, resident after +"
                                                   << (after.rss_kb - before.rss_kb) / MiB << " MiB; reply: " << reason);
    CHECK_THAT(reason, Catch::Contains("more than 65536 fields and numbers"));
    if (!sanitized) CHECK(after.hwm_kb - before.rss_kb < 16 * MiB + 24 * MiB);
    if (!sanitized) CHECK(after.rss_kb - before.rss_kb < 8 * MiB);
    CHECK_THAT(rig.stop(), Catch::Contains("1 refused"));
}

TEST_CASE("a Control naming one robot with a 15 MB name is refused with a short reply and a short log line "
          "(RSS measured)",
          "[click][hostile][memory]") {
    Rig rig;
    Client client(rig.endpoint);
    client.handshake();
    client.served();
    const Memory before = rig.memory();
    const std::size_t log_before = rig.log().size();

    pb::ControlMessage control;
    control.set_messagetype(pb::ControlMessageType);
    (*control.mutable_objects())[std::string(15000000, 'a')].add_values(0.0);
    const std::string reply = client.ask(control.SerializeAsString());
    const std::string reason = Client::error_text(reply);
    client.served();
    const Memory after = rig.memory();
    std::size_t log_bytes = 0;
    for (std::size_t i = log_before; i < rig.log().size(); ++i) log_bytes += rig.log()[i].size();
    WARN("a 15 MB robot name: gateway peak RSS +" << (after.hwm_kb - before.rss_kb) / MiB << " MiB, resident after +"
                                                  << (after.rss_kb - before.rss_kb) / MiB << " MiB; reply of "
                                                  << reply.size() << " bytes, " << log_bytes << " bytes of log: " << reason);
    CHECK_THAT(reason, Catch::Contains("a string of 15000000 bytes, more than the 4096"));
    CHECK(reply.size() < 1024);
    CHECK(log_bytes < 4096);
    if (!sanitized) CHECK(after.hwm_kb - before.rss_kb < 15 * MiB + 24 * MiB);
    CHECK_THAT(rig.stop(), Catch::Contains("1 refused"));
}

TEST_CASE("20 requests of 15 MB sent at once by a DEALER are not all queued in the gateway (RSS measured)",
          "[click][hostile][memory]") {
    Rig rig;
    Client client(rig.endpoint);
    client.served();
    const Memory before = rig.memory();

    // A REQ client sends one request at a time; a DEALER sends as many as it likes.
    zmq::context_t context{1};
    zmq::socket_t dealer{context, zmq::socket_type::dealer};
    dealer.set(zmq::sockopt::rcvtimeo, 30000);
    dealer.set(zmq::sockopt::linger, 0);
    dealer.connect(rig.endpoint);
    const std::string request = std::string("\x08\x06", 2) + std::string(15000000, '\0');  // a SensorRequest, then garbage
    const int n = 20;
    for (int i = 0; i < n; ++i) {
        REQUIRE(dealer.send(zmq::message_t(), zmq::send_flags::sndmore));  // REP's empty delimiter
        REQUIRE(dealer.send(zmq::buffer(request), zmq::send_flags::none));
    }
    int replies = 0;
    for (int i = 0; i < n; ++i) {
        zmq::message_t delimiter;
        zmq::message_t reply;
        if (!dealer.recv(delimiter) || !dealer.recv(reply)) break;
        ++replies;
    }
    client.served();
    const Memory after = rig.memory();
    WARN(n << " pipelined requests of 15 MB: gateway peak RSS +" << (after.hwm_kb - before.rss_kb) / MiB
           << " MiB, resident after +" << (after.rss_kb - before.rss_kb) / MiB << " MiB; " << replies << " replies");
    CHECK(replies == n);
    if (!sanitized) CHECK(after.hwm_kb - before.rss_kb < 4 * 15 * MiB + 24 * MiB);
    CHECK_THAT(rig.stop(), Catch::Contains(std::to_string(n) + " refused"));
}

TEST_CASE("1,000 bad requests of each kind write a bounded number of gateway log lines, and are counted",
          "[click][hostile][log]") {
    Rig rig;
    Client client(rig.endpoint);
    client.handshake();
    const std::size_t lines_before = rig.log().size();

    // A name that is not UTF-8 (libprotobuf logs an ERROR line for each such parse),
    // and a Control the handshake does not allow (the simulation never sees it).
    pb::ControlMessage bad_utf8;
    bad_utf8.set_messagetype(pb::ControlMessageType);
    (*bad_utf8.mutable_objects())["ok"].add_values(1.0);
    std::string bad_utf8_bytes = bad_utf8.SerializeAsString();
    bad_utf8_bytes[bad_utf8_bytes.find("ok")] = '\xff';
    pb::ControlMessage unknown_robot;
    unknown_robot.set_messagetype(pb::ControlMessageType);
    (*unknown_robot.mutable_objects())["robot9"].add_values(1.0);
    const std::string unknown_robot_bytes = unknown_robot.SerializeAsString();

    const int n = 1000;
    for (int i = 0; i < n; ++i) {
        CHECK_THAT(Client::error_text(client.ask(bad_utf8_bytes)), Catch::Contains("UTF-8"));
        CHECK_THAT(Client::error_text(client.ask(unknown_robot_bytes)), Catch::Contains("robot9"));
        if (i % 50 == 0) rig.log();  // keep the gateway's stderr pipe from filling up
    }
    client.served();
    const std::size_t lines = rig.log().size() - lines_before;
    WARN(2 * n << " bad requests: " << lines << " gateway log lines, " << rig.log_lines_with("libprotobuf")
               << " from libprotobuf");
    INFO("gateway log:\n" << rig.gateway.err().text());
    CHECK(lines <= 6);
    const std::string summary = rig.stop();
    CHECK_THAT(summary, Catch::Contains(std::to_string(2 * n) + " ErrorMessage replies"));
    CHECK_THAT(summary, Catch::Contains(std::to_string(n) + " refused"));
}
