// gecko-controller: drives a Click lockstep simulation (gecko-sim) step by step.
// Every joint follows a smooth sine around its starting angle, whatever its
// control type; the gripper closes for a while; the simulation is reset once
// midway. At the end it prints the step rate and the tracking error.
// A simulation paused by its control services holds each Control; a `paused:`
// refusal (held too long) is waited out by sending the Control again.
// Run:  geckocore --key demo &   gecko-sim --key demo &
//       gecko-controller --key demo [--steps 1000 | --steps 0 (until Ctrl-C)] [--rate HZ] [--sim sim]
#include <gecko/click/controller.hpp>
#include <gecko/gecko.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using gecko::msgs::click::ValueType;

// The reference every joint follows: q(t) = start + A sin(2π f t + phase).
struct Trajectory {
    double amplitude = 0.3;  // rad
    double frequency = 0.5;  // Hz

    double angle(double start, double t, std::size_t joint) const {
        return start + amplitude * std::sin(omega() * t + static_cast<double>(joint));
    }
    double velocity(double t, std::size_t joint) const {
        return amplitude * omega() * std::cos(omega() * t + static_cast<double>(joint));
    }
    double omega() const { return 2.0 * 3.141592653589793 * frequency; }
};

// Gains for the joints the controller closes the loop on itself (PID on
// torque: the integral term carries the arm's weight).
constexpr double kp_torque = 80.0;   // N m / rad
constexpr double kd_torque = 8.0;    // N m s / rad
constexpr double ki_torque = 200.0;  // N m / (rad s)
constexpr double kp_velocity = 5.0;  // (rad/s) / rad

// The value to send for one joint, by its control type; `integral` is the
// joint's accumulated angle error (rad s).
double joint_command(ValueType type, double q_ref, double v_ref, double q, double v, double integral) {
    switch (type) {
        case ValueType::angle: return q_ref;  // the servo tracks it
        case ValueType::angular_velocity_1d: return v_ref + kp_velocity * (q_ref - q);
        case ValueType::torque_1d: return kp_torque * (q_ref - q) + kd_torque * (v_ref - v) + ki_torque * integral;
        default: return 0.0;
    }
}

// Where each control's joint sits in the Sensor arrays, which follow
// `joint_sensors_in_order`, an order of their own: matched by joint name.
std::vector<std::size_t> sensor_indices(const std::string& name, const gecko::msgs::click::HandshakeObject& object) {
    for (ValueType needed : {ValueType::angle, ValueType::angular_velocity_1d}) {
        if (std::find(object.joint_sensors.begin(), object.joint_sensors.end(), needed) == object.joint_sensors.end()) {
            throw std::runtime_error("object '" + name + "' has no " + to_string(needed) +
                                     " joint sensor, which this controller needs");
        }
    }
    std::vector<std::size_t> indices;
    for (const auto& joint : object.controls_in_order) {
        const auto& order = object.joint_sensors_in_order;
        const auto at = std::find(order.begin(), order.end(), joint);
        if (at == order.end()) throw std::runtime_error("object '" + name + "': joint '" + joint + "' has no sensor");
        indices.push_back(static_cast<std::size_t>(at - order.begin()));
    }
    return indices;
}

// The sensors now. A Reset answer instead (the simulation was reset again
// meanwhile, e.g. through its control services) changes nothing here: ask again.
gecko::msgs::click::Sensor current_sensors(gecko::click::Controller& controller) {
    for (;;) {
        auto result = controller.sensors();
        if (result.is_reset()) continue;
        return result.sensor();  // throws with the simulation's reason if it is an Error
    }
}

}  // namespace

int main(int argc, char** argv) try {
    gecko::OptionParser args("gecko-controller",
                             "handshakes with a Click lockstep simulation, tracks a sine on every joint, uses the "
                             "gripper, resets once midway, and prints the step rate and the tracking error");
    long steps = 1000;
    std::string sim = "sim";
    args.integer("--steps", steps, 0, 1000000000, "N",
                 "steps to run (default 1000); 0: until interrupted (Ctrl-C), without the midway reset");
    double rate_hz = 0.0;
    args.number("--rate", rate_hz, 0.0, 1e6, "HZ", "steps per second of wall time at most (default 0: as fast as it can)");
    args.text("--sim", sim, "NAME", "the simulation's topic prefix (default: sim)");
    long spin_us = gecko::click::default_lockstep_spin.count();
    args.integer("--spin-us", spin_us, 0, 1000000, "US", "busy-poll for each answer this long before blocking (default 50)");
    gecko::Node node(gecko::NodeOptions::from_args(argc, argv, args, "gecko-controller"));
    gecko::install_signal_handlers();

    // 1. Handshake: what can be controlled, in which order, with which types.
    gecko::click::ControllerOptions options;
    options.answer_subscriber.spin = std::chrono::microseconds(spin_us);
    gecko::click::Controller controller(node, sim, options);
    const auto& handshake = controller.handshake();
    const double dt = handshake.time_step.value_or(0.01);
    for (const auto& [name, object] : handshake.objects) {
        if (object.controls_in_order.empty()) continue;
        std::cout << "object " << name << ":";
        for (std::size_t j = 0; j < object.controls_in_order.size(); ++j)
            std::cout << ' ' << object.controls_in_order[j] << '(' << to_string(object.control_types_in_order[j]) << ')';
        std::cout << std::endl;
    }

    std::map<std::string, std::vector<std::size_t>> sensor_index;  // per object: control j -> Sensor array index
    for (const auto& [name, object] : handshake.objects)
        if (!object.controls_in_order.empty()) sensor_index[name] = sensor_indices(name, object);

    // 2. Where every joint starts (a SensorRequest does not step), in control order.
    gecko::msgs::click::Sensor sensor = current_sensors(controller);
    std::map<std::string, std::vector<double>> start;
    for (const auto& [name, indices] : sensor_index)
        for (std::size_t k : indices) start[name].push_back(sensor.objects.at(name).angle_sensors.at(k));

    // 3. The lockstep loop: one Control in, the sensors of one step out.
    const Trajectory trajectory;
    std::map<std::string, std::vector<double>> integral;  // per joint, rad s
    std::map<ValueType, std::pair<double, long>> error_by_type;  // squared error sum, samples
    long done = 0, resets = 0;
    bool reset_midway = false;
    const auto began = std::chrono::steady_clock::now();
    std::optional<gecko::Rate> pace;
    if (rate_hz > 0.0) pace.emplace(rate_hz);
    long paused_refusals = 0;
    while ((steps == 0 || done < steps) && gecko::ok()) {
        if (steps > 0 && !reset_midway && done == steps / 2) {  // back to the initial state, paused until the next Control
            controller.reset();
            reset_midway = true;
            sensor = current_sensors(controller);
            integral.clear();
            ++resets;
        }
        const double t = sensor.simulated_time.value_or(0.0) + dt;  // the time this step reaches
        auto control = controller.make_control();
        for (auto& [name, object] : control.objects) {
            const auto& announced = handshake.objects.at(name);
            const auto& measured = sensor.objects.at(name);
            auto& sum = integral[name];
            sum.resize(object.values.size(), 0.0);
            for (std::size_t j = 0; j < object.values.size(); ++j) {
                const std::size_t k = sensor_index.at(name).at(j);
                const double q_ref = trajectory.angle(start[name][j], t, j), q = measured.angle_sensors.at(k);
                sum[j] += (q_ref - q) * dt;
                object.values[j] = joint_command(announced.control_types_in_order[j], q_ref, trajectory.velocity(t, j),
                                                 q, measured.angular_velocity_sensors.at(k), sum[j]);
            }
            if (announced.control_events.count("gripper")) {
                object.control_events["gripper"] = std::fmod(t, 4.0) >= 1.0;  // closed 3 s out of 4
            }
        }

        gecko::click::StepResult result = controller.step(control);
        if (result.is_paused_refusal()) {  // paused for long: nothing was applied, wait on
            ++paused_refusals;
            continue;
        }
        if (result.is_error()) {
            std::cerr << "gecko-controller: the simulation refused a control: " << result.error().reason << std::endl;
            return 1;
        }
        if (result.is_reset()) {  // reset from the simulation side: start over from its initial state
            std::cout << "the simulation was reset" << std::endl;
            sensor = current_sensors(controller);
            integral.clear();
            ++resets;
            continue;
        }
        sensor = result.sensor();
        ++done;
        if (pace) pace->sleep();
        for (const auto& [name, object] : control.objects) {
            const auto& angles = sensor.objects.at(name).angle_sensors;
            for (std::size_t j = 0; j < object.values.size(); ++j) {
                const double e = angles.at(sensor_index.at(name).at(j)) - trajectory.angle(start[name][j], t, j);
                auto& [sum, n] = error_by_type[handshake.objects.at(name).control_types_in_order[j]];
                sum += e * e;
                ++n;
            }
        }
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();

    // 4. End the run, so that another controller may drive the simulation.
    controller.error("gecko-controller finished");
    std::cout << "done: " << done << " steps in " << seconds << " s (" << static_cast<long>(done / seconds)
              << " steps/s), " << resets << " reset" << (resets == 1 ? "" : "s") << "; tracking error (RMS):";
    for (const auto& [type, sum_n] : error_by_type)
        std::cout << ' ' << to_string(type) << ' ' << std::sqrt(sum_n.first / std::max(sum_n.second, 1L)) << " rad";
    std::cout << std::endl;
    if (paused_refusals > 0) std::cout << "paused refusals (Controls sent again): " << paused_refusals << std::endl;
    return steps == 0 || done == steps ? 0 : 1;
} catch (const std::exception& e) {
    std::cerr << "gecko-controller: " << e.what() << std::endl;
    return 1;
}
