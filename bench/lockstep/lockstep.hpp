// SPDX-License-Identifier: Apache-2.0
#pragma once
// What gecko_lockstep_bench's modes share (the rotation, main.cpp; a pairing
// alone, alone.cpp; the in-process costs, costs.cpp): the scene of one step,
// the simulation that does no physics, Gecko's controller end and raw
// REQ/REP's client.
#include "common.hpp"

#include "click.pb.h"

#include <gecko/click/controller.hpp>
#include <gecko/click/simulation.hpp>
#include <gecko/gecko.hpp>
#include <gecko/wire/assign.hpp>

#include <zmq.hpp>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace lockstep {

using namespace bench;
namespace mc = gecko::msgs::click;
namespace pb = click::protobuf;

constexpr milliseconds kSetupTimeout{10000};
constexpr milliseconds kStepTimeout{5000};  // a round trip slower than this is a stall
// NodeOptions::spin of both ends of the spin stack. Well above the time this
// VM takes to wake a sleeping process (~50 µs): with a spin of about that
// time, a loop whose one end had to sleep stays slow (each end's spin runs
// out just before the other's answer wakes it: 111 µs steps, stable), and
// runs fell into either mode (4.8 or 111 µs). With 200 µs: 5 of 5 fast.
constexpr std::chrono::microseconds kSpin{200};

// ---- the scene: ~200 B Control, ~900 B Sensor on Click's wire -------------------

struct Scene {
    mc::Handshake handshake;
    mc::Sensor sensor;                ///< what the backend answers (simulated_time set per step)
    mc::Control control;              ///< what the gecko controller sends
    pb::ControlMessage click_control; ///< the same, as a Click client sends it
    std::string click_control_bytes;  ///< its protobuf bytes (raw's request size)
    std::string click_sensor_bytes;   ///< the Sensor's protobuf bytes (raw's reply size)
    std::size_t gecko_request_bytes{0};  ///< msgpack of the Request envelope carrying `control`
    std::size_t gecko_answer_bytes{0};   ///< msgpack of the Answer envelope carrying `sensor`
};

/// Two 9-joint arms with a gripper and a wrist force/torque sensor, and a box.
Scene make_scene();

/// A simulation that does no physics: counts steps and answers the prebuilt Sensor.
class BenchBackend : public gecko::click::Backend {
public:
    explicit BenchBackend(const Scene& scene) : scene_(scene) {}
    mc::Handshake handshake() override { return scene_.handshake; }
    void apply(const mc::Control& control) override { last_ = control.objects.at("robot1").values.at(0); }
    void step() override { ++steps_; }
    mc::Sensor sensors() override {
        mc::Sensor s;
        fill_sensors(s);
        return s;
    }
    void fill_sensors(mc::Sensor& s) override {  // assigned in place: what a backend that cares does
        gecko::wire::assign(s, scene_.sensor);
        s.simulated_time = 0.001 * static_cast<double>(steps_);
        s.objects["robot1"].angle_sensors.at(0) = last_;
    }
    void reset() override { steps_ = 0; }
    void stop_actuators() override {}

private:
    const Scene& scene_;
    std::uint64_t steps_{0};
    double last_{0.0};
};

/// Endpoints of one stack. raw: `rep` (REP binds). gecko: `request` (the
/// controller's request publisher binds) and `answer` (the simulation's answer
/// publisher binds). gateway: `rep` (the gateway's Click socket) plus request and answer.
struct StackEndpoints {
    std::string rep, request, answer;
};

/// A node that binds exactly `listen` and links to `peer` (discovery off);
/// without them, one reachable in this process only (inproc).
gecko::Node bench_node(const std::string& name, const std::string& listen = "", const std::string& peer = "",
                       std::chrono::microseconds spin = std::chrono::microseconds(0));

/// In a child process: waits for the parent's kDone (the child's end of the run); throws Stall after 110 s.
void wait_done(Child& self);

/// CPU time of this process (every thread), µs.
double process_cpu_us();

// ---- the controller side (this process) -------------------------------------------

/// One stack's client: steps once per call and returns the round trip in µs.
class Client {
public:
    virtual ~Client() = default;
    virtual double step(std::uint64_t i) = 0;
};

struct NodeHolder {
    std::optional<gecko::Node> own;  // a base: made before the members that use it
};

class GeckoClient : public Client, private NodeHolder {
public:
    /// With a node of its own that binds e.request and links to e.answer.
    GeckoClient(const StackEndpoints& e, const Scene& scene, std::chrono::microseconds spin = std::chrono::microseconds(0))
        : NodeHolder{bench_node("bench-controller", e.request, e.answer, spin)}, control_(scene.control) {
        start(*own, spin);
    }
    /// On `node`, already linked to the simulation.
    GeckoClient(gecko::Node& node, const Scene& scene) : control_(scene.control) { start(node, std::chrono::microseconds(0)); }

    void start(gecko::Node& node, std::chrono::microseconds spin) {
        gecko::click::ControllerOptions o;
        o.answer_subscriber.spin = spin;  // the rotation's rows block (the Click default spins 50 µs)
        o.timeout = kStepTimeout;
        o.connect_timeout = kSetupTimeout;
        controller_ = std::make_unique<gecko::click::Controller>(node, "sim", o);
        controller_->handshake();
        values_ = &control_.objects.begin()->second.values;
    }
    double step(std::uint64_t i) override {
        (*values_)[0] = 1e-3 * static_cast<double>(i % 1000);
        const std::int64_t t0 = mono_ns();
        controller_->step(control_, result_);  // into the last step's memory
        const std::int64_t t1 = mono_ns();
        if (!result_.is_sensor()) throw Stall("gecko: a Control was not answered with a Sensor");
        do_not_optimize(result_.sensor().simulated_time);
        return static_cast<double>(t1 - t0) / 1000.0;
    }

private:
    std::unique_ptr<gecko::click::Controller> controller_;
    gecko::click::StepResult result_{mc::Sensor{}};
    mc::Control control_;
    std::vector<double>* values_ = nullptr;
};

zmq::socket_t req_socket(zmq::context_t& context, const std::string& endpoint);


class RawClient : public Client {
public:
    RawClient(zmq::context_t& context, const StackEndpoints& e, const Scene& scene)
        : socket_(req_socket(context, e.rep)), request_(scene.click_control_bytes), reply_size_(scene.click_sensor_bytes.size()) {
        exchange();  // the first one also waits for the connection
        socket_.set(zmq::sockopt::rcvtimeo, static_cast<int>(kStepTimeout.count()));
    }
    double step(std::uint64_t i) override {
        std::memcpy(request_.data(), &i, sizeof i);
        const std::int64_t t0 = mono_ns();
        exchange();
        const std::int64_t t1 = mono_ns();
        return static_cast<double>(t1 - t0) / 1000.0;
    }

private:
    void exchange() {
        if (!socket_.send(zmq::buffer(request_), zmq::send_flags::none)) throw Stall("raw: send timed out");
        zmq::message_t reply;
        if (!socket_.recv(reply)) throw Stall("raw: no reply");
        if (reply.size() != reply_size_) throw Stall("raw: a reply of the wrong size");
        do_not_optimize(*static_cast<const char*>(reply.data()));
    }
    zmq::socket_t socket_;
    std::string request_;
    std::size_t reply_size_;
};

}  // namespace lockstep
