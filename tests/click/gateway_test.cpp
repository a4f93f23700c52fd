// SPDX-License-Identifier: Apache-2.0
// click_gateway/src/gateway.hpp and gecko-click-gateway: a Click client (a
// ZeroMQ REQ socket speaking Click protobuf, written here with the generated
// classes) drives a Gecko lockstep simulation through the gateway. In one
// process (Gateway + SimulationServer wired by inproc endpoints), and as real
// programs (geckocore, gecko-sim, gecko-click-gateway) on loopback.
#include "gecko/click_gateway/gateway.hpp"

#include "click.pb.h"

#include "sim_backend.hpp"
#include "support/ports.hpp"
#include "support/process.hpp"

#include <gecko/click/simulation.hpp>
#include <gecko/gecko.hpp>

#include <catch2/catch.hpp>

#include <unistd.h>

#include <atomic>
#include <csignal>
#include <exception>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace pb = click::protobuf;
using namespace std::chrono_literals;
using gecko::test::Process;
using gecko::test::SpawnOptions;

namespace {


// A Click client as Click's own clients are: one REQ socket, one frame per
// message. Unlike them it has a receive timeout, so that a missing reply fails
// the test instead of hanging it.
struct ClickClient {
    zmq::context_t context{1};
    zmq::socket_t socket{context, zmq::socket_type::req};

    explicit ClickClient(const std::string& endpoint) {
        socket.set(zmq::sockopt::rcvtimeo, 10000);
        socket.set(zmq::sockopt::sndtimeo, 5000);
        socket.set(zmq::sockopt::linger, 0);
        socket.connect(endpoint);
    }

    // Sends `request` bytes and returns the one reply.
    std::string ask(const std::string& request) {
        REQUIRE(socket.send(zmq::buffer(request), zmq::send_flags::none));
        zmq::message_t reply;
        REQUIRE(socket.recv(reply).has_value());  // no reply within 10 s: a real client would hang here
        CHECK_FALSE(reply.more());
        return reply.to_string();
    }
    template <class M>
    std::string ask(const M& message) {
        return ask(message.SerializeAsString());
    }

    static pb::MessageType type_of(const std::string& reply) {
        pb::Message m;
        REQUIRE(m.ParseFromString(reply));
        return m.messagetype();
    }
    // The reply parsed as `M`, after checking its messageType; an ErrorMessage
    // instead fails with its text.
    template <class M>
    static M expect(const std::string& reply, pb::MessageType type) {
        const pb::MessageType got = type_of(reply);
        if (got == pb::ErrorMessageType && type != pb::ErrorMessageType) {
            pb::ErrorMessage e;
            REQUIRE(e.ParseFromString(reply));
            FAIL("the gateway answered with an ErrorMessage: " << e.errormessage());
        }
        REQUIRE(got == type);
        M m;
        REQUIRE(m.ParseFromString(reply));
        return m;
    }

    pb::HandshakeMessage handshake() {
        pb::HandshakeInitMessage init;
        init.set_messagetype(pb::HandshakeInitMessageType);
        init.set_version(pb::CURRENT_VERSION);
        return expect<pb::HandshakeMessage>(ask(init), pb::HandshakeMessageType);
    }
    pb::SensorMessage sensors() {
        pb::SensorRequestMessage request;
        request.set_messagetype(pb::SensorRequestMessageType);
        return expect<pb::SensorMessage>(ask(request), pb::SensorMessageType);
    }
    // A Control setting every joint of robot1 and robot2 (the demo scene) to `angle`.
    static pb::ControlMessage demo_control(double angle) {
        pb::ControlMessage c;
        c.set_messagetype(pb::ControlMessageType);
        for (const char* robot : {"robot1", "robot2"}) {
            auto& object = (*c.mutable_objects())[robot];
            object.add_values(angle);
            object.add_values(-angle);
        }
        return c;
    }
    pb::SensorMessage step(double angle) {
        return expect<pb::SensorMessage>(ask(demo_control(angle)), pb::SensorMessageType);
    }
    void reset() {
        pb::ResetMessage r;
        r.set_messagetype(pb::ResetMessageType);
        expect<pb::ResetMessage>(ask(r), pb::ResetMessageType);
    }
    // The text of the ErrorMessage that answers `request` (fails on any other reply).
    std::string error_for(const std::string& request) {
        return expect<pb::ErrorMessage>(ask(request), pb::ErrorMessageType).errormessage();
    }
};

/// The demo simulation (gecko-sim's scene) served by a SimulationServer on a
/// thread of its own, and a Gateway in front of it on another, all in this
/// process, their nodes linked by hand (discovery off). Click clients reach the
/// gateway over tcp loopback.
struct InProcessRig {
    static gecko::Node node(const std::string& name) {
        gecko::NodeOptions o;
        o.key = "gateway-test";
        o.name = name;
        o.discovery = false;
        return gecko::Node(o);
    }

    gecko::Node sim_node = node("sim");
    gecko::Node gateway_node = node("gateway");
    gecko::sim::ClickBackend backend{gecko::sim::SceneConfig::demo()};
    std::unique_ptr<gecko::click::SimulationServer> server;
    std::unique_ptr<gecko::click::Gateway> gateway;
    std::atomic<bool> running{true};
    std::thread sim_thread;
    std::thread gateway_thread;
    std::exception_ptr gateway_failure;

    explicit InProcessRig(const std::string& simulation = "sim", std::chrono::milliseconds watchdog = 0ms) {
        // Linked both ways by hand (requests one way, answers the other).
        sim_node.connect(gateway_node.locators().front());
        gateway_node.connect(sim_node.locators().front());
        gecko::click::SimulationServerOptions so;
        so.watchdog = watchdog;
        server = std::make_unique<gecko::click::SimulationServer>(sim_node, "sim", backend, so);
        sim_thread = std::thread([this] {
            while (running && server->spin_once(5ms)) {
            }
        });

        gecko::click::GatewayOptions go;
        go.bind = "tcp://127.0.0.1:*";
        go.simulation = simulation;
        go.controller.timeout = 10000ms;
        go.controller.connect_timeout = simulation == "sim" ? 10000ms : 300ms;
        gateway = std::make_unique<gecko::click::Gateway>(gateway_node, go);
        gateway_thread = std::thread([this] {
            try {
                gateway->run([this] { return running.load(); });
            } catch (...) {
                gateway_failure = std::current_exception();
            }
        });
    }
    ~InProcessRig() { join(); }

    /// Stops both threads; then the gateway's stats can be read. Rethrows what run() threw.
    void stop() {
        join();
        if (gateway_failure) std::rethrow_exception(gateway_failure);
    }

    void join() {
        running = false;
        if (gateway_thread.joinable()) gateway_thread.join();
        if (sim_thread.joinable()) sim_thread.join();
    }
    InProcessRig(const InProcessRig&) = delete;
    InProcessRig& operator=(const InProcessRig&) = delete;
};

}  // namespace

TEST_CASE("a Click client steps the simulation through an in-process gateway without a HandshakeInit",
          "[click][gateway]") {
    InProcessRig rig;
    ClickClient client(rig.gateway->endpoint());
    const double dt = rig.backend.simulation().scene().time_step;

    // Click allows Controls without a HandshakeInit: the gateway asks for the handshake itself.
    auto sensor = client.step(0.1);
    CHECK(sensor.simvars().simulatedtime() == Approx(dt));
    REQUIRE(sensor.objects().count("robot1") == 1);
    CHECK(sensor.objects().at("robot1").anglesensors_size() == 2);
    sensor = client.step(0.1);
    CHECK(sensor.simvars().simulatedtime() == Approx(2 * dt));
    CHECK(rig.backend.simulation().steps() == 2);

    // The deprecated `angles` plus `gripper: true`, as the stock C++ demo client sends.
    pb::ControlMessage legacy;
    legacy.set_messagetype(pb::ControlMessageType);
    auto& robot = (*legacy.mutable_objects())["robot1"];
    robot.add_angles(0.2);
    robot.add_angles(-0.1);
    (*robot.mutable_controlevents())["gripper"] = true;
    sensor = ClickClient::expect<pb::SensorMessage>(client.ask(legacy), pb::SensorMessageType);
    CHECK(sensor.simvars().simulatedtime() == Approx(3 * dt));

    rig.stop();
    CHECK(rig.gateway->stats().requests == 3);
    CHECK(rig.gateway->stats().steps == 3);
    CHECK(rig.gateway->stats().handshakes == 0);  // none asked by the client
    CHECK(rig.gateway->stats().error_replies == 0);
}

// Waits (bounded) until the simulation's watchdog has stopped it `trips` times.
bool watchdog_tripped(const InProcessRig& rig, std::uint64_t trips) {
    const auto deadline = std::chrono::steady_clock::now() + 20s;
    while (rig.server->status().watchdog_trips < trips) {
        if (std::chrono::steady_clock::now() > deadline) return false;
        std::this_thread::sleep_for(10ms);  // polling a status: the server has no event for it
    }
    return true;
}

TEST_CASE("a Click client that pauses, and a new client after one that left, get Sensors after the watchdog stopped the simulation",
          "[click][gateway]") {
    InProcessRig rig("sim", 100ms);
    const double dt = rig.backend.simulation().scene().time_step;
    {
        ClickClient client(rig.gateway->endpoint());
        CHECK(client.step(0.1).simvars().simulatedtime() == Approx(dt));
        REQUIRE(watchdog_tripped(rig, 1));  // the client paused longer than the watchdog
        CHECK(client.step(0.1).simvars().simulatedtime() == Approx(2 * dt));  // not an ErrorMessage
    }
    REQUIRE(watchdog_tripped(rig, 2));  // that client left; a new one starts with a Control, as Click allows
    ClickClient next(rig.gateway->endpoint());
    CHECK(next.step(0.1).simvars().simulatedtime() == Approx(3 * dt));
    CHECK(rig.backend.simulation().steps() == 3);  // the refused Controls stepped nothing
    rig.stop();
    CHECK(rig.gateway->stats().watchdog_restarts == 2);
    CHECK(rig.gateway->stats().error_replies == 0);
}

TEST_CASE("a gecko::Error in the gateway reaches the Click client as an ErrorMessage with its text",
          "[click][gateway]") {
    InProcessRig rig("nosim");  // nobody serves simulation 'nosim'
    ClickClient client(rig.gateway->endpoint());

    pb::SensorRequestMessage request;
    request.set_messagetype(pb::SensorRequestMessageType);
    const std::string reason = client.error_for(request.SerializeAsString());
    CHECK_THAT(reason, Catch::Contains("no simulation 'nosim' subscribes"));

    // ... and the gateway keeps serving: the next request gets its own reply.
    CHECK_THAT(client.error_for(request.SerializeAsString()), Catch::Contains("no simulation 'nosim'"));
    rig.stop();
    CHECK(rig.gateway->stats().requests == 2);
    CHECK(rig.gateway->stats().error_replies == 2);
}

TEST_CASE("geckocore, gecko-sim and gecko-click-gateway serve a Click client in lockstep", "[click][gateway][process]") {
    const std::string key = "click-gateway-" + std::to_string(::getpid());
    const auto core = gecko::test::start_core(GECKOCORE_PATH, key);  // unicast, on a port it picked
    const gecko::test::TempDir ipc_dir;
    SpawnOptions env;
    env.env = {{"GECKO_CORE", core.address()}, {"GECKO_NO_MULTICAST", "1"}, {"GECKO_IPC_DIR", ipc_dir.path()}};
    env.stderr_mode = gecko::test::Stderr::merge;
    env.unset_env = {"GECKO_KEY", "GECKO_DISCOVERY", "GECKO_MULTICAST", "GECKO_INTERFACE"};

    auto sim = Process::spawn(GECKO_SIM_PATH, {"--key", key, "--watchdog-ms", "0"}, env);
    REQUIRE(sim.wait_for_line("ready", 10s));
    auto gateway = Process::spawn(GECKO_CLICK_GATEWAY_PATH,
                                  {"--key", key, "--bind", "tcp://127.0.0.1:*", "--timeout-ms", "5000"}, env);
    const auto banner = gateway.wait_for_line("Click clients on ", 10s);
    INFO("gateway output:\n" << gateway.output());
    REQUIRE(banner);
    CHECK_THAT(*banner, Catch::Contains("key '" + key + "'"));
    // "... Click clients on tcp://127.0.0.1:PORT (REP, ...": the port ZeroMQ picked.
    const auto bound = gecko::test::endpoint_after(*banner, "Click clients on ");
    REQUIRE(bound);
    const std::string endpoint = *bound;
    REQUIRE(gecko::test::port_of(endpoint) > 0);

    ClickClient client(endpoint);

    // Handshake: the demo scene.
    const pb::HandshakeMessage handshake = client.handshake();
    CHECK(handshake.version() == pb::CURRENT_VERSION);
    REQUIRE(handshake.objects().count("robot1") == 1);
    REQUIRE(handshake.objects().count("robot2") == 1);
    CHECK(handshake.objects().count("box") == 1);
    CHECK(handshake.objects().at("robot1").controlsinorder_size() == 2);
    const double dt = handshake.simsettings().timestep();
    REQUIRE(dt > 0.0);

    // A SensorRequest before any Control: time 0, nothing steps.
    CHECK(client.sensors().simvars().simulatedtime() == Approx(0.0));

    // Each Control steps exactly once.
    for (int k = 1; k <= 5; ++k) {
        const auto sensor = client.step(0.05 * k);
        CHECK(sensor.simvars().simulatedtime() == Approx(k * dt));
        CHECK(sensor.objects().at("robot1").anglesensors_size() == 2);
    }
    // A SensorRequest does not step.
    CHECK(client.sensors().simvars().simulatedtime() == Approx(5 * dt));
    CHECK(client.sensors().simvars().simulatedtime() == Approx(5 * dt));
    REQUIRE(sim.write_line("status"));
    const auto status = sim.wait_for_line("status:", 10s);
    REQUIRE(status);
    CHECK_THAT(*status, Catch::Contains("steps=5 "));

    // Malformed bytes: an ErrorMessage, and the gateway keeps serving.
    CHECK_THAT(client.error_for(std::string("\xff\xff\xff\xff", 4)), Catch::Contains("malformed"));
    CHECK(client.sensors().simvars().simulatedtime() == Approx(5 * dt));

    // A control the handshake does not allow: an ErrorMessage naming what is wrong; nothing steps.
    pb::ControlMessage wrong = ClickClient::demo_control(0.1);
    (*wrong.mutable_objects())["robot9"].add_values(1.0);
    CHECK_THAT(client.error_for(wrong.SerializeAsString()), Catch::Contains("robot9"));
    CHECK(client.step(0.1).simvars().simulatedtime() == Approx(6 * dt));

    // Reset: back to the initial state, paused until the next Control.
    client.reset();
    CHECK(client.sensors().simvars().simulatedtime() == Approx(0.0));
    CHECK(client.step(0.1).simvars().simulatedtime() == Approx(dt));

    // Error: the client ends its run; the gateway acknowledges with an ErrorMessage.
    pb::ErrorMessage end;
    end.set_messagetype(pb::ErrorMessageType);
    end.set_errormessage("client done");
    CHECK_THAT(client.error_for(end.SerializeAsString()), Catch::Contains("the run ended"));
    CHECK(sim.wait_for_line("ended the run: client done", 10s));

    // SIGINT: a clean exit with a summary.
    gateway.kill(SIGINT);
    const auto summary = gateway.wait_for_line("stopped after", 10s);
    REQUIRE(summary);
    CHECK_THAT(*summary, Catch::Contains("7 steps"));
    CHECK(gateway.wait(10s) == 0);
    INFO("sim output:\n" << sim.output());
}

TEST_CASE("a Click endpoint is local only on ipc, inproc and loopback: in a secured key others are warned about",
          "[click][gateway]") {
    for (const char* local : {"ipc:///tmp/click.sock", "inproc://click", "tcp://127.0.0.1:5555", "tcp://127.0.0.1:*",
                              "tcp://localhost:5555", "tcp://[::1]:5555"})
        CHECK(gecko::click::is_local_endpoint(local));
    for (const char* exposed : {"tcp://*:5555", "tcp://0.0.0.0:5555", "tcp://192.0.2.1:5555", "tcp://sim-host:5555",
                                "tcp://[::]:5555", "tcp://1270.0.0.1:5555"})
        CHECK_FALSE(gecko::click::is_local_endpoint(exposed));
}

TEST_CASE("gecko-click-gateway explains its usage and exits 0, 1 or 2", "[click][gateway][process]") {
    SpawnOptions quiet;
    quiet.stderr_mode = gecko::test::Stderr::merge;
    quiet.unset_env = {"GECKO_KEY"};
    quiet.env = {{"GECKO_DISCOVERY", "off"}};

    SECTION("--help prints the options and exits 0") {
        auto p = Process::spawn(GECKO_CLICK_GATEWAY_PATH, {"--help"}, quiet);
        CHECK(p.wait(10s) == 0);
        p.out().drain(10000ms);
        for (const char* needle : {"usage: gecko-click-gateway", "--bind", "--sim", "--core", "--timeout-ms", "Exit codes"})
            CHECK_THAT(p.output(), Catch::Contains(needle));
    }
    SECTION("no key, an unknown option or a bad value is a usage error (2)") {
        for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
                 {"--bind", "tcp://127.0.0.1:*"},
                 {"--key", "k", "--frobnicate"},
                 {"--key", "k", "--timeout-ms", "soon"},
                 {"--key", "k", "--bind", "nonsense://x"}}) {
            auto p = Process::spawn(GECKO_CLICK_GATEWAY_PATH, args, quiet);
            INFO("args: " << args.back());
            CHECK(p.wait(10s) == 2);
        }
    }
    SECTION("an endpoint that cannot be bound is a runtime failure (1)") {
        zmq::context_t context;
        zmq::socket_t taken(context, zmq::socket_type::rep);
        taken.set(zmq::sockopt::linger, 0);
        taken.bind("tcp://127.0.0.1:*");  // held by this test for as long as the gateway tries
        const std::string endpoint = taken.get(zmq::sockopt::last_endpoint);
        REQUIRE(gecko::test::port_of(endpoint) > 0);
        auto p = Process::spawn(GECKO_CLICK_GATEWAY_PATH, {"--key", "k", "--bind", endpoint}, quiet);
        CHECK(p.wait(10s) == 1);
        p.out().drain(10000ms);
        CHECK_THAT(p.output(), Catch::Contains("cannot bind the Click endpoint"));
    }
}
