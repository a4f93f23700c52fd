// SPDX-License-Identifier: Apache-2.0
// gecko_click_reverse_bench: what gecko-click-gateway --connect adds to a
// Click step. A Click server (this program, --serve: a REP socket answering
// each Control with one fixed Sensor of two 6-joint arms) is stepped by
//   direct   a raw Click REQ client (this process), as Click's own clients do;
//   gateway  a gecko::click::Controller (this process) -> Gecko (same host:
//            shared memory) -> gecko-click-gateway --connect -> the server.
// Both in one run, taking turns (runs alternate which goes first), over ipc
// and over tcp between the server and its client (the direct client, or the
// gateway). Per run: p50 and p99 of the step and steps/s; the table gives the
// median of the runs and gateway/direct as a ratio.
//
//   gecko_click_reverse_bench [--steps 2000] [--runs 5] [--spin-us 0] [--work-us 0]
//   (--spin-us: how long the controller and the gateway busy-poll shared
//   memory for the next answer or request before they block; --work-us: the
//   server's computation per step, 0 for an empty one)
//   taskset -c 0 gecko_click_reverse_bench     # every process on one vCPU
#include "common.hpp"

#include "click.pb.h"
#include "support/ports.hpp"
#include "support/process.hpp"

#include <gecko/click/controller.hpp>
#include <gecko/gecko.hpp>

#include <zmq.hpp>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

namespace pb = click::protobuf;
using namespace std::chrono_literals;
using bench::fmt;
using bench::mono_ns;
using bench::percentile;
using gecko::test::Process;

namespace {

constexpr int joints = 6;
const char* const arms[] = {"arm1", "arm2"};

std::string handshake_bytes() {
    pb::HandshakeMessage h;
    h.set_messagetype(pb::HandshakeMessageType);
    h.set_version(pb::CURRENT_VERSION);
    h.set_controltype(pb::Angle);
    for (const char* name : arms) {
        auto& arm = (*h.mutable_objects())[name];
        for (int j = 0; j < joints; ++j) {
            arm.add_controlsinorder("j" + std::to_string(j));
            arm.add_controltypesinorder(pb::Angle);
            arm.add_jointsensorsinorder("j" + std::to_string(j));
        }
        arm.add_jointsensors(pb::Angle);
        arm.add_jointsensors(pb::AngularVelocity1D);
    }
    h.mutable_simsettings()->set_timestep(0.001);
    return h.SerializeAsString();
}

std::string sensor_bytes() {
    pb::SensorMessage s;
    s.set_messagetype(pb::SensorMessageType);
    for (const char* name : arms) {
        auto& arm = (*s.mutable_objects())[name];
        for (int j = 0; j < joints; ++j) {
            arm.add_anglesensors(0.1 * j);
            arm.add_angularvelocitysensors(-0.1 * j);
        }
    }
    s.mutable_simvars()->set_simulatedtime(1.0);
    return s.SerializeAsString();
}

std::string control_bytes() {
    pb::ControlMessage c;
    c.set_messagetype(pb::ControlMessageType);
    for (const char* name : arms) {
        auto& arm = (*c.mutable_objects())[name];
        for (int j = 0; j < joints; ++j) arm.add_values(0.01 * j);
    }
    return c.SerializeAsString();
}

// --serve ENDPOINT WORK_US: the Click server, which computes WORK_US per
// Control (a simulation's step) before it answers. Answers until its stdin closes.
int serve(const std::string& endpoint, long work_us) {
    zmq::context_t context(1);
    zmq::socket_t rep(context, zmq::socket_type::rep);
    rep.set(zmq::sockopt::linger, 0);
    rep.bind(endpoint);
    std::cout << "serving " << rep.get(zmq::sockopt::last_endpoint) << std::endl;
    const std::string handshake = handshake_bytes(), sensor = sensor_bytes();
    pb::ResetMessage reset;
    reset.set_messagetype(pb::ResetMessageType);
    const std::string reset_bytes = reset.SerializeAsString();
    for (;;) {
        zmq::pollitem_t items[] = {{rep.handle(), 0, ZMQ_POLLIN, 0}, {nullptr, STDIN_FILENO, ZMQ_POLLIN, 0}};
        zmq::poll(items, 2, 1000ms);
        if (items[1].revents) return 0;  // the parent closed our stdin (or is gone)
        if (!(items[0].revents & ZMQ_POLLIN)) continue;
        zmq::message_t request;
        if (!rep.recv(request)) continue;
        pb::Message m;
        m.ParseFromArray(request.data(), static_cast<int>(request.size()));
        if (m.messagetype() == pb::ControlMessageType && work_us > 0) {
            const auto until = mono_ns() + work_us * 1000;
            while (mono_ns() < until) bench::clobber();  // the step's computation, on a core
        }
        const std::string& reply = m.messagetype() == pb::HandshakeInitMessageType ? handshake
                                   : m.messagetype() == pb::ResetMessageType       ? reset_bytes
                                                                                    : sensor;
        rep.send(zmq::buffer(reply), zmq::send_flags::none);
    }
}

struct RunFigures {
    double p50_us, p99_us, steps_per_s;
};

template <class Step>
RunFigures measure(int steps, Step&& step) {
    for (int i = 0; i < steps / 10; ++i) step();  // warm-up: caches, pages, the links' first frames
    std::vector<double> us;
    us.reserve(static_cast<std::size_t>(steps));
    const auto begin = mono_ns();
    for (int i = 0; i < steps; ++i) {
        const auto t0 = mono_ns();
        step();
        us.push_back(static_cast<double>(mono_ns() - t0) / 1000.0);
    }
    const double seconds = static_cast<double>(mono_ns() - begin) / 1e9;
    return {percentile(us, 50), percentile(us, 99), steps / seconds};
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

std::string run_transport(const std::string& transport, const std::string& spin_us, const std::string& work_us, int steps, int runs, const gecko::test::CoreOnLoopback& core,
                   const std::string& key) {
    const std::string self = "/proc/self/exe";
    std::string bind = transport == "ipc" ? "ipc:///tmp/gecko-click-reverse-bench-" + std::to_string(::getpid()) + ".sock"
                                          : "tcp://127.0.0.1:*";
    gecko::test::SpawnOptions quiet;
    quiet.pipe_stdin = true;
    char exe[4096];
    const auto n = ::readlink(self.c_str(), exe, sizeof exe - 1);
    if (n <= 0) throw std::runtime_error("cannot read /proc/self/exe");
    exe[n] = '\0';
    auto server = Process::spawn(exe, {"--serve", bind, work_us}, quiet);
    const auto line = server.wait_for_line("serving ", 10s);
    if (!line) throw std::runtime_error("the Click server did not start: " + server.output());
    const std::string endpoint = line->substr(line->find("serving ") + 8);

    gecko::test::SpawnOptions env;
    env.env = {{"GECKO_CORE", core.address()}, {"GECKO_NO_MULTICAST", "1"}};
    env.unset_env = {"GECKO_KEY", "GECKO_DISCOVERY", "GECKO_MULTICAST", "GECKO_INTERFACE"};
    env.stderr_mode = gecko::test::Stderr::merge;
    auto gateway = Process::spawn(GECKO_CLICK_GATEWAY_PATH,
                                  {"--key", key, "--connect", endpoint, "--watchdog-ms", "0", "--sim", "sim_" + transport,
                                   "--spin-us", spin_us},
                                  env);
    if (!gateway.wait_for_line("is simulation", 20s)) throw std::runtime_error("the gateway did not start: " + gateway.output());

    gecko::NodeOptions o;
    o.key = key;
    o.name = "bench_" + transport;
    o.core = core.address();
    o.multicast_enabled = false;
    gecko::Node node(o);
    gecko::click::ControllerOptions co;
    co.timeout = 10s;
    co.connect_timeout = 20s;
    co.answer_subscriber.spin = std::chrono::microseconds(std::stol(spin_us));
    gecko::click::Controller controller(node, "sim_" + transport, co);
    controller.handshake();
    auto control = controller.make_control();
    for (auto& [name, object] : control.objects)
        for (int j = 0; j < joints; ++j) object.values[static_cast<std::size_t>(j)] = 0.01 * j;
    gecko::click::StepResult result = controller.step(control);
    if (!result.is_sensor()) throw std::runtime_error("the gateway's first step was not a Sensor");

    zmq::context_t context(1);
    zmq::socket_t req(context, zmq::socket_type::req);
    req.set(zmq::sockopt::linger, 0);
    req.set(zmq::sockopt::rcvtimeo, 10000);
    req.connect(endpoint);
    const std::string request = control_bytes();
    auto direct_step = [&] {
        req.send(zmq::buffer(request), zmq::send_flags::none);
        zmq::message_t reply;
        if (!req.recv(reply)) throw std::runtime_error("the Click server did not answer the direct client in 10 s");
    };
    auto gateway_step = [&] {
        controller.step(control, result);
        if (!result.is_sensor()) throw std::runtime_error("a gateway step was not answered with a Sensor");
    };

    std::vector<double> d50, d99, drate, g50, g99, grate;
    for (int r = 0; r < runs; ++r) {
        RunFigures d{}, g{};
        if (r % 2 == 0) {
            d = measure(steps, direct_step);
            g = measure(steps, gateway_step);
        } else {
            g = measure(steps, gateway_step);
            d = measure(steps, direct_step);
        }
        d50.push_back(d.p50_us), d99.push_back(d.p99_us), drate.push_back(d.steps_per_s);
        g50.push_back(g.p50_us), g99.push_back(g.p99_us), grate.push_back(g.steps_per_s);
        std::printf("  run %d %s: direct p50 %s us, gateway p50 %s us (%sx)\n", r + 1, transport.c_str(),
                    fmt(d.p50_us, 1).c_str(), fmt(g.p50_us, 1).c_str(), fmt(g.p50_us / d.p50_us, 2).c_str());
    }
    const double target = transport == "ipc" ? 1.3 : 1.2;
    char row[512];
    std::snprintf(row, sizeof row, "| %s | %s / %s | %s / %s | %s | %s | %s | %sx (target <= %sx) |\n", transport.c_str(),
                fmt(median(d50), 1).c_str(), fmt(median(d99), 1).c_str(), fmt(median(g50), 1).c_str(),
                fmt(median(g99), 1).c_str(), fmt(median(g50) - median(d50), 1).c_str(),
                bench::fmt_count(median(drate)).c_str(), bench::fmt_count(median(grate)).c_str(),
                fmt(median(g50) / median(d50), 2).c_str(), fmt(target, 1).c_str());
    server.close_stdin();
    gateway.kill(SIGINT);
    gateway.wait(10s);
    server.wait(10s);
    if (transport == "ipc") bench::remove_endpoint(endpoint);
    return row;
}

}  // namespace

int main(int argc, char** argv) try {
    int steps = 2000, runs = 5;
    std::string spin_us = "0", work_us = "0";
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--serve" && i + 2 < argc) {
            const std::string endpoint = argv[++i];
            return serve(endpoint, std::atol(argv[++i]));
        }
        if (a == "--steps" && i + 1 < argc) steps = std::max(100, std::atoi(argv[++i]));
        else if (a == "--runs" && i + 1 < argc) runs = std::max(1, std::atoi(argv[++i]));
        else if (a == "--spin-us" && i + 1 < argc) spin_us = argv[++i];
        else if (a == "--work-us" && i + 1 < argc) work_us = argv[++i];
        else {
            std::fprintf(stderr, "usage: gecko_click_reverse_bench [--steps N] [--runs N] [--spin-us US] [--work-us US]\n");
            return 2;
        }
    }
    const std::string key = "click-reverse-bench-" + std::to_string(::getpid());
    const auto core = gecko::test::start_core(GECKOCORE_PATH, key);
    std::printf("gecko_click_reverse_bench: %d steps per run, %d runs alternating which path goes first, busy-poll %s us, "
                "server work %s us per step; %s\n",
                steps, runs, spin_us.c_str(), work_us.c_str(), bench::describe_machine().c_str());
    std::printf("direct: a Click REQ client -> the Click server; gateway: gecko::click::Controller -> Gecko (shm) -> "
                "gecko-click-gateway --connect -> the same server. Medians of the runs.\n\n");
    std::string rows;
    for (const char* t : {"ipc", "tcp"}) rows += run_transport(t, spin_us, work_us, steps, runs, core, key);
    std::printf("\n| server link | direct p50 / p99 (us) | gateway p50 / p99 (us) | added p50 (us) | direct steps/s | "
                "gateway steps/s | gateway / direct p50 |\n|---|---|---|---|---|---|---|\n%s", rows.c_str());
    return 0;
} catch (const std::exception& e) {
    std::fprintf(stderr, "gecko_click_reverse_bench: %s\n", e.what());
    return 1;
}
