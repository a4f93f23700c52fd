// Fixtures for the lockstep tests: a SimulationServer spinning on its own
// thread in this process, controllers wired to it by explicit inproc
// links (discovery off), and a backend that counts what it is asked to do.
#pragma once

#include <gecko/click/controller.hpp>
#include <gecko/click/simulation.hpp>
#include <gecko/gecko.hpp>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace lockstep_test {

using namespace std::chrono_literals;
using gecko::msgs::click::ValueType;


/// Waits until `condition` holds or `timeout` passes (polling; bounded).
inline bool eventually(const std::function<bool()>& condition, std::chrono::milliseconds timeout = 20000ms) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!condition()) {
        if (std::chrono::steady_clock::now() >= deadline) return false;
        std::this_thread::sleep_for(1ms);
    }
    return true;
}

/// One robot `arm` (joint1: Angle, joint2: Torque1D, event gripper) and a
/// `box` with a Position sensor. Its "physics": each step adds the controls to
/// the sensed angles, so the sensors show how many steps happened and with what.
struct CountingBackend : gecko::click::Backend {
    std::atomic<int> steps{0};
    std::atomic<int> applies{0};
    std::atomic<int> resets{0};
    std::atomic<int> stops{0};
    std::vector<std::chrono::steady_clock::time_point> stop_times;  // read once the server is over
    std::atomic<int> handshakes{0};
    std::atomic<int> ended_runs{0};
    std::chrono::milliseconds step_duration{0};  ///< to make a step slow (exercises re-sends)

    std::mutex mutex;  // guards what follows (written on the server thread, read by tests)
    std::vector<double> angles{0.0, 0.0};
    std::vector<double> controls{0.0, 0.0};
    bool gripper{false};
    std::string end_reason;

    gecko::msgs::click::Handshake handshake() override {
        ++handshakes;
        gecko::msgs::click::Handshake h;
        auto& arm = h.objects["arm"];
        arm.controls_in_order = {"joint1", "joint2"};
        arm.control_types_in_order = {ValueType::angle, ValueType::torque_1d};
        arm.joint_sensors_in_order = {"joint1", "joint2"};
        arm.joint_sensors = {ValueType::angle};
        arm.control_events["gripper"] = ValueType::activated;
        h.objects["box"].object_sensors = {ValueType::position};
        h.control_type = gecko::msgs::click::scene_control_type(h.objects);
        h.time_step = 0.01;
        return h;
    }
    void apply(const gecko::msgs::click::Control& control) override {
        ++applies;
        std::lock_guard<std::mutex> lock(mutex);
        auto it = control.objects.find("arm");
        if (it == control.objects.end()) return;
        const auto& values = gecko::click::control_values(it->second);
        if (!values.empty()) controls = values;
        auto g = it->second.control_events.find("gripper");
        if (g != it->second.control_events.end()) gripper = g->second;
    }
    void step() override {
        if (step_duration.count() > 0) std::this_thread::sleep_for(step_duration);  // a slow simulation
        std::lock_guard<std::mutex> lock(mutex);
        for (std::size_t i = 0; i < angles.size(); ++i) angles[i] += controls[i];
        ++steps;
    }
    gecko::msgs::click::Sensor sensors() override {
        std::lock_guard<std::mutex> lock(mutex);
        gecko::msgs::click::Sensor s;
        s.objects["arm"].angle_sensors = angles;
        s.objects["box"].object_sensors = {{ValueType::position, {1.0, 2.0, 3.0}}};
        s.simulated_time = 0.01 * steps.load();
        return s;
    }
    void reset() override {
        ++resets;
        std::lock_guard<std::mutex> lock(mutex);
        angles = {0.0, 0.0};
        controls = {0.0, 0.0};
        gripper = false;
        steps = 0;
    }
    void stop_actuators() override {
        ++stops;
        std::lock_guard<std::mutex> lock(mutex);
        stop_times.push_back(std::chrono::steady_clock::now());
        controls = {0.0, 0.0};
    }
    void ended(const std::string& reason) override {
        ++ended_runs;
        std::lock_guard<std::mutex> lock(mutex);
        end_reason = reason;
    }
};

inline gecko::Node make_node(const std::string& name) {
    gecko::NodeOptions options;
    options.key = "lockstep";
    options.name = name;
    options.discovery = false;
    return gecko::Node(options);
}

/// Links two nodes both ways (requests one way, answers the other), by hand: discovery is off.
inline void link_both(gecko::Node& a, gecko::Node& b) {
    a.connect(b.locators().front());
    b.connect(a.locators().front());
}

/// A SimulationServer named "sim" on a thread of its own, over `backend`.
/// Controllers made by controller() live on a second node, linked to the first.
struct Rig {
    gecko::Node node = make_node("sim");
    gecko::Node controller_node = make_node("ctl");
    std::unique_ptr<gecko::click::SimulationServer> server;
    std::thread thread;
    std::atomic<bool> quit{false};
    std::atomic<bool> over{false};

    explicit Rig(gecko::click::Backend& backend, gecko::click::SimulationServerOptions options = {}) {
        link_both(node, controller_node);
        server = std::make_unique<gecko::click::SimulationServer>(node, "sim", backend, options);
        thread = std::thread([this] {
            while (!quit && server->spin_once(5ms)) {
            }
            over = true;
        });
    }
    ~Rig() { stop(); }
    /// Ends the server (its thread, then the server itself: its subscriptions close).
    void stop() {
        quit = true;
        if (thread.joinable()) thread.join();
        server.reset();
    }
    Rig(const Rig&) = delete;
    Rig& operator=(const Rig&) = delete;

    /// Options of a controller of this server.
    gecko::click::ControllerOptions controller_options(const std::string& id = "") {
        gecko::click::ControllerOptions o;
        o.controller_id = id;
        o.timeout = 10000ms;
        o.connect_timeout = 10000ms;
        return o;
    }

    /// A controller of this server, on the controller node.
    gecko::click::Controller controller(gecko::click::ControllerOptions o) {
        return gecko::click::Controller(controller_node, "sim", o);
    }
    gecko::click::Controller controller(const std::string& id = "") { return controller(controller_options(id)); }

    /// A raw publisher of Request envelopes and a raw subscriber of Answer
    /// envelopes on the server's topics, to inject duplicates and late messages.
    struct RawClient {
        gecko::Publisher<gecko::click::Request> requests;
        gecko::Subscriber<gecko::click::Answer> answers;

        /// The next answer to request `id` of `controller` within `timeout`, skipping others.
        std::optional<gecko::click::Answer> answer_to(const std::string& controller, std::uint64_t id,
                                                      std::chrono::milliseconds timeout = 10000ms) {
            const auto deadline = std::chrono::steady_clock::now() + timeout;
            for (;;) {
                const auto left = deadline - std::chrono::steady_clock::now();
                if (left <= std::chrono::steady_clock::duration::zero()) return std::nullopt;
                auto a = answers.receive(left);
                if (!a) return std::nullopt;
                if (a->controller_id == controller && a->answers == id) return a;
            }
        }
        /// Publishes `r` every 20 ms until its answer comes (the subscriptions
        /// settle meanwhile); the duplicates are answered from the cache.
        std::optional<gecko::click::Answer> exchange(const gecko::click::Request& r,
                                                     std::chrono::milliseconds timeout = 10000ms) {
            const auto deadline = std::chrono::steady_clock::now() + timeout;
            while (std::chrono::steady_clock::now() < deadline) {
                requests.publish(r);
                if (auto a = answer_to(r.controller_id, r.request_id, 20ms)) return a;
            }
            return std::nullopt;
        }
        /// Drops every answer already received.
        void drain() {
            while (answers.receive(10ms)) {
            }
        }
    };
    RawClient raw_client() {
        gecko::SubscriberOptions s;
        s.depth = 1024;
        RawClient c{controller_node.publisher<gecko::click::Request>(server->topics().request),
                    controller_node.subscriber<gecko::click::Answer>(server->topics().answer, s)};
        c.requests.wait_for_subscribers(1, 10000ms);
        return c;
    }
};

/// A valid control of CountingBackend's arm.
inline gecko::msgs::click::Control arm_control(double a, double b) {
    gecko::msgs::click::Control c;
    c.objects["arm"].values = {a, b};
    return c;
}

}  // namespace lockstep_test
