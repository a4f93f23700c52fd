// SPDX-License-Identifier: Apache-2.0
// gecko-click-gateway --connect: an existing Click server (written here with
// the generated protobuf classes, scripted per case) offered on Gecko as a
// lockstep simulation; a gecko::click::Controller drives it through
// geckocore and the gateway as real processes on loopback. And both
// directions chained: a Click client -> forward gateway -> Gecko -> reverse
// gateway -> the Click server, whose answers reach the client byte for byte.
#include "click.pb.h"

#include "support/ports.hpp"
#include "support/process.hpp"

#include <gecko/click/controller.hpp>
#include <gecko/gecko.hpp>
#include <gecko/msgs/sensors.hpp>

#include <catch2/catch.hpp>
#include <zmq.hpp>

#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <map>
#include <mutex>
#include <string>
#include <thread>

namespace pb = click::protobuf;
using namespace std::chrono_literals;
using gecko::test::Process;
using gecko::test::SpawnOptions;

namespace {

// A Click server as Click's are: one REP socket, one frame per message, an
// arm "arm" of two angle-controlled joints stepped by each Control. What it
// does on the wire is scripted through the atomics.
class ScriptedClickServer {
public:
    explicit ScriptedClickServer(std::string endpoint = "tcp://127.0.0.1:*") { start(std::move(endpoint)); }
    ~ScriptedClickServer() { stop(); }

    const std::string& endpoint() const { return endpoint_; }
    // Its thread and socket end (a server that died); start() brings it back on the same endpoint.
    void stop() {
        running_ = false;
        if (thread_.joinable()) thread_.join();
    }
    void start(std::string endpoint) {
        socket_ = zmq::socket_t(context_, zmq::socket_type::rep);
        socket_.set(zmq::sockopt::linger, 0);
        socket_.bind(endpoint);
        endpoint_ = socket_.get(zmq::sockopt::last_endpoint);
        running_ = true;
        thread_ = std::thread([this] { serve(); });
    }

    std::atomic<int> reset_at_step{0};   // a Control that brings the step count here is answered with a Reset
    std::atomic<int> error_at_step{0};   // ... with an ErrorMessage
    std::atomic<int> garbage_at_step{0}; // ... with bytes that are not a Click message
    std::atomic<bool> hang{false};       // requests go unanswered while set
    std::atomic<int> steps{0}, handshakes{0}, sensor_requests{0}, resets{0}, errors{0}, requests{0};

    std::string last_reply(pb::MessageType t) {
        std::lock_guard<std::mutex> lock(mutex_);
        return replies_[t];
    }
    // Waits until the server has answered `n` Controls since its last reset, at most `bound`.
    bool wait_for_steps(int n, std::chrono::seconds bound) {
        std::unique_lock<std::mutex> lock(mutex_);
        return answered_.wait_for(lock, bound, [&] { return steps.load() >= n; });
    }
    std::string last_request(pb::MessageType t) {
        std::lock_guard<std::mutex> lock(mutex_);
        return requests_[t];
    }
    std::string last_error_text() {
        std::lock_guard<std::mutex> lock(mutex_);
        return error_text_;
    }

    static constexpr double dt = 0.01;

private:
    std::string handshake_reply() const {
        pb::HandshakeMessage h;
        h.set_messagetype(pb::HandshakeMessageType);
        h.set_version(pb::CURRENT_VERSION);
        h.set_controltype(pb::Angle);
        auto& arm = (*h.mutable_objects())["arm"];
        for (const char* j : {"j1", "j2"}) {
            arm.add_controlsinorder(j);
            arm.add_controltypesinorder(pb::Angle);
            arm.add_jointsensorsinorder(j);
        }
        arm.add_jointsensors(pb::Angle);
        arm.add_jointsensors(pb::AngularVelocity1D);
        arm.add_objectsensors(pb::Position);
        (*arm.mutable_controlevents())["gripper"] = pb::Activated;
        auto& imu = (*arm.mutable_sensors())["imu"];
        imu.add_types(pb::Acceleration3D);
        imu.add_types(pb::Force1D);
        h.mutable_simsettings()->set_timestep(dt);
        return h.SerializeAsString();
    }
    std::string sensor_reply() const {
        pb::SensorMessage s;
        s.set_messagetype(pb::SensorMessageType);
        auto& arm = (*s.mutable_objects())["arm"];
        arm.add_anglesensors(0.5 * joint_);
        arm.add_anglesensors(-0.25 * joint_);
        arm.add_angularvelocitysensors(0.125);
        arm.add_angularvelocitysensors(-1.0);
        auto* p = arm.add_objectsensors()->mutable_position();
        for (double v : {1.0, 2.0, 3.0 + steps.load()}) p->add_arr(v);
        auto& imu = (*arm.mutable_sensors())["imu"];
        auto* acceleration = imu.add_sensor()->mutable_acceleration3d();
        for (double v : {0.0, 0.0, -9.81}) acceleration->add_arr(v);
        imu.add_sensor()->set_force1d(12.5);
        s.mutable_simvars()->set_simulatedtime(steps.load() * dt);
        return s.SerializeAsString();
    }
    static std::string of_type(pb::MessageType t) {
        pb::ResetMessage r;  // a message with messageType only (Reset)
        r.set_messagetype(t);
        return r.SerializeAsString();
    }
    static std::string error_reply(const std::string& text) {
        pb::ErrorMessage e;
        e.set_messagetype(pb::ErrorMessageType);
        e.set_errormessage(text);
        return e.SerializeAsString();
    }

    std::string answer(const std::string& request) {
        pb::Message m;
        if (!m.ParseFromString(request)) return error_reply("malformed");
        switch (m.messagetype()) {
            case pb::HandshakeInitMessageType: ++handshakes; return handshake_reply();
            case pb::SensorRequestMessageType: ++sensor_requests; return sensor_reply();
            case pb::ControlMessageType: {
                pb::ControlMessage c;
                if (!c.ParseFromString(request) || c.objects().count("arm") == 0) return error_reply("no arm in the Control");
                const auto& v = c.objects().at("arm").values();
                joint_ = v.empty() ? 0.0 : v[0];
                const int n = ++steps;
                if (n == reset_at_step) {
                    steps = 0;
                    ++resets;
                    return of_type(pb::ResetMessageType);
                }
                if (n == error_at_step) return error_reply("scripted failure at step " + std::to_string(n));
                if (n == garbage_at_step) return std::string("\xff\xff\xff\xff", 4);
                return sensor_reply();
            }
            case pb::ResetMessageType: steps = 0; ++resets; return of_type(pb::ResetMessageType);
            case pb::ErrorMessageType: {
                pb::ErrorMessage e;
                e.ParseFromString(request);
                ++errors;
                std::lock_guard<std::mutex> lock(mutex_);
                error_text_ = e.errormessage();
                return error_reply("run ended");
            }
            default: return error_reply("not a request");
        }
    }

    void serve() {
        while (running_) {
            zmq::pollitem_t item{socket_.handle(), 0, ZMQ_POLLIN, 0};
            if (zmq::poll(&item, 1, 20ms) == 0) continue;
            zmq::message_t request;
            if (!socket_.recv(request)) continue;
            ++requests;
            while (hang && running_) std::this_thread::sleep_for(5ms);  // a hung server: the flag, bounded by stop()
            if (!running_) break;
            const std::string reply = answer(request.to_string());
            pb::Message in, out;
            in.ParseFromString(request.to_string());
            out.ParseFromString(reply);
            {
                std::lock_guard<std::mutex> lock(mutex_);
                requests_[in.messagetype()] = request.to_string();
                replies_[out.messagetype()] = reply;
            }
            answered_.notify_all();
            socket_.send(zmq::buffer(reply), zmq::send_flags::none);
        }
        socket_.close();
    }

    zmq::context_t context_{1};
    zmq::socket_t socket_;
    std::string endpoint_;
    std::atomic<bool> running_{false};
    std::thread thread_;
    std::mutex mutex_;
    std::condition_variable answered_;
    std::map<pb::MessageType, std::string> replies_, requests_;
    std::string error_text_;
    double joint_ = 0.0;
};

struct Rig {
    std::string key = "reverse-gateway-" + std::to_string(::getpid());
    gecko::test::CoreOnLoopback core = gecko::test::start_core(GECKOCORE_PATH, key);
    gecko::test::TempDir ipc_dir;
    SpawnOptions env;
    Rig() {
        env.env = {{"GECKO_CORE", core.address()}, {"GECKO_NO_MULTICAST", "1"}, {"GECKO_IPC_DIR", ipc_dir.path()}};
        env.stderr_mode = gecko::test::Stderr::merge;
        env.unset_env = {"GECKO_KEY", "GECKO_DISCOVERY", "GECKO_MULTICAST", "GECKO_INTERFACE"};
    }
    Process reverse_gateway(const std::string& endpoint, const std::string& timeout_ms = "1000") {
        auto p = Process::spawn(GECKO_CLICK_GATEWAY_PATH,
                                {"--key", key, "--connect", endpoint, "--timeout-ms", timeout_ms, "--watchdog-ms", "0",
                                 "--name", "reverse"},
                                env);
        REQUIRE(p.wait_for_line("is simulation 'sim'", 20s));
        return p;
    }
    gecko::NodeOptions node_options(const std::string& name) const {
        gecko::NodeOptions o;
        o.key = key;
        o.name = name;
        o.core = core.address();
        o.multicast_enabled = false;
        o.ipc_directory = ipc_dir.path();
        return o;
    }
};

gecko::click::ControllerOptions patient() {
    gecko::click::ControllerOptions o;
    o.timeout = 10s;
    o.connect_timeout = 20s;
    return o;
}

}  // namespace

TEST_CASE("a Gecko controller drives a Click server through gecko-click-gateway --connect", "[click][gateway][reverse]") {
    ScriptedClickServer server;
    Rig rig;
    auto gateway = rig.reverse_gateway(server.endpoint());
    INFO("gateway output:\n" << gateway.output());
    gecko::Node node(rig.node_options("reverse_test"));
    auto joint_states = node.subscriber<gecko::msgs::JointState>("sim/joint_states");
    gecko::click::Controller controller(node, "sim", patient());

    // The server's handshake, as Gecko says it.
    const auto& h = controller.handshake();
    REQUIRE(h.objects.size() == 1);
    REQUIRE(h.objects.count("arm") == 1);
    CHECK(h.objects.at("arm").controls_in_order == std::vector<std::string>{"j1", "j2"});
    CHECK(h.time_step == Approx(ScriptedClickServer::dt));

    // A SensorRequest reaches the server and steps nothing.
    const int asked = server.sensor_requests;
    auto sensed = controller.sensors();
    REQUIRE(sensed.is_sensor());
    CHECK(server.sensor_requests == asked + 1);
    CHECK(server.steps == 0);

    // Each Control is exactly one step of the server, its Sensor answered.
    auto control = controller.make_control();
    for (int k = 1; k <= 5; ++k) {
        control.objects["arm"].values = {0.1 * k, -0.1 * k};
        auto r = controller.step(control);
        INFO((r.is_error() ? r.error().reason : std::string()));
        REQUIRE(r.is_sensor());
        CHECK(r.sensor().simulated_time == Approx(k * ScriptedClickServer::dt));
        CHECK(r.sensor().objects.at("arm").angle_sensors.at(0) == Approx(0.05 * k));
    }
    CHECK(server.steps == 5);
    // The joints of each Sensor, as gecko-sim publishes its own.
    gecko::msgs::JointState js;
    bool fifth = false;
    for (const auto deadline = std::chrono::steady_clock::now() + 20s; !fifth && std::chrono::steady_clock::now() < deadline;)
        fifth = joint_states.receive(js, 1s) && js.position.size() == 2 && js.position[0] == Approx(0.25);
    REQUIRE(fifth);
    CHECK(js.names == std::vector<std::string>{"arm/j1", "arm/j2"});
    CHECK(js.position[1] == Approx(-0.125));
    CHECK(js.velocity == std::vector<double>{0.125, -1.0});

    // The controller's reset reaches the server.
    const int resets = server.resets;
    controller.reset();
    CHECK(server.resets == resets + 1);
    CHECK(server.steps == 0);
    REQUIRE(controller.step(control).is_sensor());

    // A reset from the server's side: the Control is answered with a Reset, then stepping resumes.
    server.reset_at_step = 3;
    REQUIRE(controller.step(control).is_sensor());  // step 2
    auto reset = controller.step(control);          // step 3: the server resets
    CHECK(reset.is_reset());
    auto after = controller.step(control);
    REQUIRE(after.is_sensor());
    CHECK(after.sensor().simulated_time == Approx(ScriptedClickServer::dt));
    server.reset_at_step = 0;

    // An ErrorMessage from the server reaches the controller with its text.
    server.error_at_step = 2;
    auto failed = controller.step(control);
    REQUIRE(failed.is_error());
    CHECK_THAT(failed.error().reason, Catch::Contains("scripted failure at step 2"));
    server.error_at_step = 0;

    // Bytes that are not a Click message: an Error saying so, and the next step goes on.
    server.garbage_at_step = server.steps + 1;
    auto garbage = controller.step(control);
    REQUIRE(garbage.is_error());
    CHECK_THAT(garbage.error().reason, Catch::Contains("not a Click message"));
    server.garbage_at_step = 0;
    CHECK(controller.step(control).is_sensor());

    // The controller ends its run: the server hears an ErrorMessage with its reason.
    CHECK(controller.error("controller done"));
    CHECK(server.errors == 1);
    CHECK(server.last_error_text() == "controller done");

    gateway.kill(SIGINT);
    const auto summary = gateway.wait_for_line("stopped after", 10s);
    REQUIRE(summary);
    CHECK_THAT(*summary, Catch::Contains("1 server resets"));
    CHECK(gateway.wait(10s) == 0);
}

TEST_CASE("gecko-controller runs its whole program against a Click server behind gecko-click-gateway --connect",
          "[click][gateway][reverse]") {
    ScriptedClickServer server;
    Rig rig;
    auto gateway = rig.reverse_gateway(server.endpoint());
    auto controller = Process::spawn(GECKO_CONTROLLER_PATH, {"--key", rig.key, "--steps", "200"}, rig.env);
    const auto exit_code = controller.wait(60s);
    INFO("gateway output:\n" << gateway.output() << "\ncontroller output:\n" << controller.output());
    CHECK(exit_code == std::optional<int>(0));
    CHECK(server.handshakes >= 2);  // the gateway's own, then the controller's
    CHECK(server.resets == 1);      // its midway reset reached the server
    CHECK(server.steps > 0);
}

TEST_CASE("a Gecko controller killed mid-run through --connect: a new controller takes the Click server over",
          "[click][gateway][reverse]") {
    ScriptedClickServer server;
    Rig rig;
    auto gateway = rig.reverse_gateway(server.endpoint());
    auto first = Process::spawn(GECKO_CONTROLLER_PATH, {"--key", rig.key, "--steps", "0"}, rig.env);
    const bool stepping = server.wait_for_steps(50, 20s);
    INFO("gateway output:\n" << gateway.output() << "\nfirst controller:\n" << first.output());
    REQUIRE(stepping);
    first.kill(SIGKILL);
    first.wait(10s);
    const int handshakes = server.handshakes;
    gecko::Node node(rig.node_options("successor"));
    gecko::click::Controller next(node, "sim", patient());
    // Refused ("driven by controller ...") until the simulation has seen the
    // first one's answer subscription close with its process; then accepted.
    const auto killed_at = std::chrono::steady_clock::now();
    bool accepted = false;
    std::string refusal;
    for (int attempt = 0; attempt < 200 && !accepted; ++attempt) {
        try {
            next.handshake();
            accepted = true;
        } catch (const gecko::Error& e) {
            refusal = e.what();
            std::this_thread::sleep_for(50ms);  // a user trying again; bounded by the attempts
        }
    }
    INFO("last refusal: " << refusal);
    REQUIRE(accepted);
    std::printf("a new controller was accepted %lld ms after the first was killed\n",
                static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                           std::chrono::steady_clock::now() - killed_at).count()));
    CHECK(std::chrono::steady_clock::now() - killed_at < 9s);  // not the 10 s takeover: the departure was noticed
    CHECK(server.handshakes == handshakes + 1);  // a new session for the server too
    auto control = next.make_control();
    const auto r = next.step(control);
    INFO((r.is_error() ? r.error().reason : std::string()));
    CHECK(r.is_sensor());
}

TEST_CASE("a Click server that hangs or dies: the Gecko controller hears why within the bound, and the gateway reconnects",
          "[click][gateway][reverse]") {
    ScriptedClickServer server;
    const std::string endpoint = server.endpoint();
    Rig rig;
    auto gateway = rig.reverse_gateway(endpoint);
    INFO("gateway output:\n" << gateway.output());
    gecko::Node node(rig.node_options("reverse_faults"));
    gecko::click::Controller controller(node, "sim", patient());
    controller.handshake();
    auto control = controller.make_control();
    REQUIRE(controller.step(control).is_sensor());

    // Hung: the controller's step is answered with an Error naming the server, not its own 10 s timeout.
    server.hang = true;
    const auto asked = std::chrono::steady_clock::now();
    auto hung = controller.step(control);
    const auto waited = std::chrono::steady_clock::now() - asked;
    REQUIRE(hung.is_error());
    CHECK_THAT(hung.error().reason, Catch::Contains("did not answer the Control within 1000 ms"));
    CHECK(waited < 9s);
    server.hang = false;

    // The gateway starts a new session with the server before the next Control.
    const int handshakes = server.handshakes;
    REQUIRE(controller.step(control).is_sensor());
    CHECK(server.handshakes == handshakes + 1);

    // Dead, then back on the same endpoint.
    server.stop();
    auto dead = controller.step(control);
    REQUIRE(dead.is_error());
    CHECK_THAT(dead.error().reason, Catch::Contains("is it running?"));
    server.start(endpoint);
    bool back = false;
    for (int attempt = 0; attempt < 10 && !back; ++attempt)  // ZeroMQ reconnects every 100 ms; each attempt waits up to 1 s
        back = controller.step(control).is_sensor();
    REQUIRE(back);
    CHECK(server.handshakes >= 1);  // the new server got a HandshakeInit before the Control
}

TEST_CASE("byte for byte: Click client -> forward gateway -> Gecko -> reverse gateway -> Click server",
          "[click][gateway][reverse]") {
    ScriptedClickServer server;
    Rig rig;
    auto reverse = rig.reverse_gateway(server.endpoint());
    auto forward = Process::spawn(GECKO_CLICK_GATEWAY_PATH,
                                  {"--key", rig.key, "--bind", "tcp://127.0.0.1:*", "--timeout-ms", "10000"}, rig.env);
    const auto banner = forward.wait_for_line("Click clients on ", 20s);
    INFO("reverse gateway:\n" << reverse.output() << "\nforward gateway:\n" << forward.output());
    REQUIRE(banner);
    const auto endpoint = gecko::test::endpoint_after(*banner, "Click clients on ");
    REQUIRE(endpoint);

    zmq::context_t context{1};
    zmq::socket_t client(context, zmq::socket_type::req);
    client.set(zmq::sockopt::rcvtimeo, 15000);
    client.set(zmq::sockopt::linger, 0);
    client.connect(*endpoint);
    auto ask = [&](const std::string& request) {
        REQUIRE(client.send(zmq::buffer(request), zmq::send_flags::none));
        zmq::message_t reply;
        REQUIRE(client.recv(reply).has_value());
        return reply.to_string();
    };
    // What the client got for `request` against what the server last sent of `type` (asked after: it has answered).
    auto same = [&](const std::string& request, pb::MessageType type) {
        const std::string got = ask(request);
        return got == server.last_reply(type);
    };

    pb::HandshakeInitMessage init;
    init.set_messagetype(pb::HandshakeInitMessageType);
    init.set_version(pb::CURRENT_VERSION);
    CHECK(same(init.SerializeAsString(), pb::HandshakeMessageType));

    pb::SensorRequestMessage sensors;
    sensors.set_messagetype(pb::SensorRequestMessageType);
    CHECK(same(sensors.SerializeAsString(), pb::SensorMessageType));

    pb::ControlMessage control;
    control.set_messagetype(pb::ControlMessageType);
    auto& arm = (*control.mutable_objects())["arm"];
    arm.add_values(0.25);
    arm.add_values(-0.5);
    for (int k = 0; k < 3; ++k) CHECK(same(control.SerializeAsString(), pb::SensorMessageType));
    CHECK(server.last_request(pb::ControlMessageType) == control.SerializeAsString());  // and the requests too
    pb::ControlMessage deprecated;  // Click's older arrays, kept as they are
    deprecated.set_messagetype(pb::ControlMessageType);
    auto& old_arm = (*deprecated.mutable_objects())["arm"];
    old_arm.add_angles(0.25);
    old_arm.add_angles(-0.5);
    (*old_arm.mutable_controlevents())["gripper"] = true;
    CHECK(same(deprecated.SerializeAsString(), pb::SensorMessageType));
    CHECK(server.last_request(pb::ControlMessageType) == deprecated.SerializeAsString());

    pb::ResetMessage reset;
    reset.set_messagetype(pb::ResetMessageType);
    CHECK(same(reset.SerializeAsString(), pb::ResetMessageType));

    server.reset_at_step = 2;  // a server-side reset travels back as the server sent it
    CHECK(same(control.SerializeAsString(), pb::SensorMessageType));
    CHECK(same(control.SerializeAsString(), pb::ResetMessageType));
    server.reset_at_step = 0;

    server.error_at_step = 1;  // so does an ErrorMessage's text
    const std::string failed = ask(control.SerializeAsString());
    pb::ErrorMessage e;
    REQUIRE(e.ParseFromString(failed));
    CHECK_THAT(e.errormessage(), Catch::Contains("scripted failure at step 1"));
    server.error_at_step = 0;
    CHECK(server.steps == 1);
}
