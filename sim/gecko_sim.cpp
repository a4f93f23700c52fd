// gecko-sim: the demo simulator (planar arms, grippers, a box) driven in lockstep
// by a Click controller over Gecko topics, and publishing its joint states.
// Run:  geckocore --key demo &
//       gecko-sim --key demo [--scene FILE | --robots robot1,robot2 --joints 2 --control-types angle,torque]
//                 [--watchdog-ms 1000] [--sim sim] [--exit-on-error] [--paused] [--paused-hold-ms 3000]
//       gecko-controller --key demo            (and: gecko echo --key demo sim/joint_states)
// Type `reset` (a simulation-side reset) or `status` on its stdin. Control
// services: gecko call --key demo sim/control/pause '{}' (start, resume, stop,
// pause, reset, status); status on topic sim/status.
#include <gecko/click/simulation.hpp>
#include <gecko/gecko.hpp>

#include "sim_backend.hpp"

#include <poll.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

std::vector<std::string> split(const std::string& text, char sep) {
    std::vector<std::string> out;
    std::stringstream s(text);
    for (std::string item; std::getline(s, item, sep);)
        if (!item.empty()) out.push_back(item);
    return out;
}

struct Args {
    std::string scene_file;
    std::vector<std::string> robots;
    unsigned joints = 2;
    std::vector<std::string> control_types{"angle"};
    long watchdog_ms = 1000;
    std::string sim = "sim";
    bool exit_on_error = false;
    long spin_us = gecko::click::default_lockstep_spin.count();
    bool paused = false;
    long paused_hold_ms = 3000;
};

// The program's own options on the one parser; the node's are added by NodeOptions::from_args.
void declare(gecko::OptionParser& p, Args& a) {
    p.text("--scene", a.scene_file, "FILE", "the scene to simulate (default: the demo scene)");
    p.custom("--robots", "NAME,NAME", "generate a scene of these robots, side by side", [&a](const std::string& v) {
        a.robots = split(v, ',');
        return a.robots.empty() ? std::string("no robot named") : std::string();
    });
    p.integer("--joints", a.joints, 1, 64, "N", "joints per generated robot (default 2)");
    p.custom("--control-types", "TYPE,TYPE", "control types of the generated joints, cycled (angle, angular_velocity, torque)",
             [&a](const std::string& v) {
                 a.control_types = split(v, ',');
                 return a.control_types.empty() ? std::string("needs at least one type") : std::string();
             });
    p.integer("--watchdog-ms", a.watchdog_ms, 0, 3600 * 1000, "MS",
              "once running, stop the actuators when no Control comes for this long; the next Control is "
              "answered with an Error saying so, the one after starts the simulation again (default 1000, 0: never)");
    p.text("--sim", a.sim, "NAME", "the simulation's topic prefix (default: sim)",
           [](const std::string& v) { return v.empty() ? std::string("empty") : std::string(); });
    p.flag("--exit-on-error", a.exit_on_error, "exit when the controller reports an error");
    p.flag("--paused", a.paused, "start paused: nothing steps until the service SIM/control/start or resume");
    p.integer("--paused-hold-ms", a.paused_hold_ms, 0, 3600 * 1000, "MS",
              "while paused, hold a Control this long, then answer it with a 'paused:' Error (default 3000, 0: until "
              "resumed)");
    p.integer("--spin-us", a.spin_us, 0, 1000000, "US",
              "busy-poll shared memory this long for the next request before blocking (default 50)");
}

// A scene of identical arms side by side (along y), each with `joints` joints
// whose control types cycle through `types`, and one box.
gecko::sim::SceneConfig generated_scene(const Args& a) {
    gecko::sim::SceneConfig scene;
    for (std::size_t r = 0; r < a.robots.size(); ++r) {
        gecko::sim::RobotConfig robot;
        robot.name = a.robots[r];
        robot.base = {0.0, static_cast<double>(r), 0.5};
        for (unsigned j = 0; j < a.joints; ++j) {
            gecko::sim::JointConfig joint;
            joint.name = "joint" + std::to_string(j + 1);
            const std::string& type = a.control_types[j % a.control_types.size()];
            const auto control = gecko::sim::control_type_from_string(type);
            if (!control) {
                throw gecko::Error(gecko::Errc::invalid_argument,
                                   "--control-types: unknown type '" + type + "' (angle, angular_velocity, torque)");
            }
            joint.control = *control;
            joint.length = 0.5 * std::pow(0.8, j);
            joint.mass = 2.0 * std::pow(0.6, j);
            robot.joints.push_back(joint);
        }
        scene.robots.push_back(robot);
    }
    scene.boxes.push_back(gecko::sim::BoxConfig{});
    scene.validate();
    return scene;
}

gecko::sim::SceneConfig load_scene(const Args& a) {
    if (!a.scene_file.empty()) {
        std::ifstream file(a.scene_file);
        if (!file) throw gecko::Error(gecko::Errc::invalid_argument, "cannot read scene file '" + a.scene_file + "'");
        std::stringstream text;
        text << file.rdbuf();
        return gecko::sim::parse_scene(text.str(), a.scene_file);
    }
    if (!a.robots.empty()) return generated_scene(a);
    return gecko::sim::SceneConfig::demo();
}

// A line typed on stdin, if one is ready (never blocks). Reads the descriptor
// itself: several lines arriving in one write are all returned, one per call.
bool read_command(std::string& line) {
    static std::string pending;  // read, not yet returned
    static bool closed = false;
    for (;;) {
        const auto newline = pending.find('\n');
        if (newline != std::string::npos) {
            line = pending.substr(0, newline);
            pending.erase(0, newline + 1);
            return true;
        }
        if (closed) {
            if (pending.empty()) return false;
            line = std::move(pending);
            pending.clear();
            return true;
        }
        pollfd p{STDIN_FILENO, POLLIN, 0};
        if (::poll(&p, 1, 0) <= 0 || !(p.revents & (POLLIN | POLLHUP))) return false;
        char buffer[512];
        const ssize_t n = ::read(STDIN_FILENO, buffer, sizeof buffer);
        if (n <= 0) {
            closed = true;
        } else {
            pending.append(buffer, static_cast<std::size_t>(n));
        }
    }
}

void print_status(const gecko::click::SimulationStatus& s, double sim_time) {
    std::cout << "status: state=" << gecko::spine::to_string(s.state) << " controller="
              << (s.controller.empty() ? "-" : s.controller) << " running=" << s.running << " paused=" << s.paused << " steps=" << s.steps
              << " time=" << sim_time << " watchdog_trips=" << s.watchdog_trips
              << " duplicates=" << s.duplicate_requests << " refused=" << s.refused_requests
              << (s.stop_cause.empty() ? "" : " stop_cause=\"" + s.stop_cause + "\"") << std::endl;
}

}  // namespace

int main(int argc, char** argv) try {
    Args args;
    gecko::OptionParser parser("gecko-sim",
                               "serves a deterministic arm simulation in Click lockstep on topics SIM/click/request "
                               "and SIM/click/answer");
    declare(parser, args);
    gecko::Node node(gecko::NodeOptions::from_args(argc, argv, parser, "gecko-sim"));
    gecko::install_signal_handlers();
    gecko::sim::ClickBackend backend(load_scene(args));

    gecko::click::SimulationServerOptions options;
    options.watchdog = std::chrono::milliseconds(args.watchdog_ms);
    options.exit_on_error = args.exit_on_error;
    options.request_subscriber.spin = std::chrono::microseconds(args.spin_us);
    options.start_paused = args.paused;
    options.paused_control_hold = std::chrono::milliseconds(args.paused_hold_ms);
    gecko::click::SimulationServer server(node, args.sim, backend, options);
    auto joint_states = node.publisher<gecko::msgs::JointState>(args.sim + "/joint_states");

    std::cout << "gecko-sim: simulation '" << args.sim << "' under key '" << node.key() << "', topics "
              << server.topics().request << " and " << server.topics().answer << ", joint states on " << args.sim
              << "/joint_states, control services " << args.sim << "/control/{start,resume,stop,pause,reset,status}, status on "
              << args.sim << "/status" << std::endl;
    for (const auto& robot : backend.simulation().scene().robots) {
        std::cout << "  robot " << robot.name << ":";
        for (const auto& joint : robot.joints) std::cout << ' ' << joint.name << '(' << gecko::sim::to_string(joint.control) << ')';
        std::cout << (robot.gripper ? " + gripper" : "") << std::endl;
    }
    std::cout << "ready" << std::endl;

    std::uint64_t published_steps = ~std::uint64_t{0};
    double published_time = -1.0;
    std::string command;
    while (server.spin_once(std::chrono::milliseconds(10))) {
        const auto& sim = backend.simulation();
        if (sim.steps() != published_steps || sim.time() != published_time) {  // stepped, or reset
            auto js = backend.joint_state();
            js.stamp_ns = gecko::now_ns();
            joint_states.publish(js);
            published_steps = sim.steps();
            published_time = sim.time();
        }
        if (read_command(command)) {
            if (command == "reset") server.request_reset();
            else if (command == "status") print_status(server.status(), sim.time());
            else if (!command.empty()) std::cout << "commands: reset, status" << std::endl;
        }
    }
    print_status(server.status(), backend.simulation().time());
    std::cout << "gecko-sim: stopped" << std::endl;
    return 0;
} catch (const std::exception& e) {
    std::cerr << "gecko-sim: " << e.what() << std::endl;
    return 1;
}
