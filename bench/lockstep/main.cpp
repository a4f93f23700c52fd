// SPDX-License-Identifier: Apache-2.0
// gecko_lockstep_bench: the Click lockstep round trip (one Control in, the
// Sensor of one step out), Gecko next to raw ZeroMQ REQ/REP in the same run.
//
// Stacks, each on ipc and on tcp loopback:
//   raw      ZeroMQ REQ (this process) -> REP (sim process): a request of the
//            Click Control's size, a reply of the Click Sensor's size.
//   gecko    gecko::click::Controller (this process) <-> SimulationServer (sim
//            process) over the paired topics, discovery off, explicit endpoints.
//   gateway  a Click client (REQ, protobuf; this process) -> gecko-click-gateway's
//            Gateway (gateway process) -> SimulationServer (sim process); both
//            hops on the row's transport.
// and, when built with iceoryx (bench/iceoryx.hpp), over its shared memory:
//   iceoryx WaitSet / busy-poll  untyped publisher/subscriber pairs of the raw
//            rows' byte sizes between this process and the iceoryx peer
//            process, blocking on WaitSets or spinning on take()
//            (iceoryx_side.hpp).
// The simulation's backend does no physics: it returns a prebuilt Sensor, so the
// figures are the protocol's cost. All stacks run at once, in three processes,
// and the round trips alternate between them in a rotating order, so that
// every stack sees the same machine (a shared VM drifts by 2-3x within minutes).
//
// To say where the time goes, it also measures in this process, before the
// runs: the codec cost per step (msgpack envelopes, Click protobuf) and the CPU
// time per step of Gecko and of raw REQ/REP with both ends over inproc://.
//
// Usage: gecko_lockstep_bench [--quick] [--markdown] [--reps N] [--rounds N] [--alone]
// --alone runs each shared-memory stack alone instead, in both wake regimes
// (alone.hpp).
// Every receive has a timeout; a stall ends the run with exit code 2.
// GECKO_BENCH_DEBUG=1 turns Gecko's log on (debug level).
#include "alone.hpp"
#include "costs.hpp"
#include "lockstep.hpp"
#include "iceoryx.hpp"
#include "iceoryx_side.hpp"
#include "gecko/click_gateway/gateway.hpp"
#include "gecko/click_gateway/translate.hpp"

#include "click.pb.h"

#include <gecko/click/controller.hpp>
#include <gecko/click/simulation.hpp>
#include <gecko/codec.hpp>
#include <gecko/wire/assign.hpp>
#include <gecko/gecko.hpp>

#include <zmq.hpp>

#include <signal.h>
#include <sys/resource.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace {

using namespace lockstep;

constexpr double kTarget = 1.30;            // gecko p50 <= 1.3 x raw p50


// ---- stacks ---------------------------------------------------------------------

enum class Path { raw, gecko, gateway, iceoryx_waitset, iceoryx_busy, gecko_spin };
const char* to_string(Path p) {
    switch (p) {
        case Path::raw: return "raw ZeroMQ REQ/REP";
        case Path::gecko: return "gecko Controller <-> Simulation";
        case Path::gateway: return "Click client -> gateway -> Simulation";
        case Path::iceoryx_waitset: return "iceoryx WaitSet";
        case Path::iceoryx_busy: return "iceoryx busy-poll";
        case Path::gecko_spin: return "gecko Controller <-> Simulation, spin";
    }
    return "?";
}
bool is_iceoryx(Path p) { return p == Path::iceoryx_waitset || p == Path::iceoryx_busy; }

struct Stack {
    Path path;
    Transport transport;
};
// The rotation's stacks (the iceoryx ones, last, only when iceoryx runs), then
// the spin stack, run on its own after the rotation: a node that spins keeps
// a vCPU busy, which would slow the other stacks of the rotation.
constexpr int kStacks = 10;
constexpr Stack kOrder[kStacks] = {{Path::raw, Transport::ipc},     {Path::gecko, Transport::ipc},
                                   {Path::gateway, Transport::ipc}, {Path::raw, Transport::tcp},
                                   {Path::gecko, Transport::tcp},   {Path::gateway, Transport::tcp},
                                   {Path::gecko, Transport::shm},
                                   {Path::iceoryx_waitset, Transport::shm}, {Path::iceoryx_busy, Transport::shm},
                                   {Path::gecko_spin, Transport::shm}};
constexpr int kSpinStack = 9;

/// The stacks of the rotation: 9 with iceoryx, 7 without.
int stacks() { return iceoryx::available() ? kStacks - 1 : kStacks - 3; }

/// The stacks of a run: the rotation's and the spin stack.
std::vector<int> all_stacks() {
    std::vector<int> v;
    for (int k = 0; k < stacks(); ++k) v.push_back(k);
    v.push_back(kSpinStack);
    return v;
}

/// The stack that carries round trip `j`: rotates every cycle so that each
/// stack follows each other one equally often.
int stack_of(std::uint64_t j) { return rotating_stack(j, stacks()); }

using Endpoints = std::array<StackEndpoints, kStacks>;

Endpoints make_endpoints() {
    Endpoints e;
    for (int k : all_stacks()) {
        if (is_iceoryx(kOrder[k].path)) continue;  // named by iceoryx_side.cpp
        const Transport t = kOrder[k].transport;
        const Path path = kOrder[k].path == Path::gecko_spin ? Path::gecko : kOrder[k].path;
        const std::string tag = std::string(path == Path::raw ? "raw" : path == Path::gecko ? "gecko" : "gw") +
                                (kOrder[k].path == Path::gecko_spin ? "-spin" : "");
        if (kOrder[k].path != Path::gecko) e[k].rep = make_endpoint(t, tag + "-rep");
        if (kOrder[k].path != Path::raw) {
            e[k].request = make_endpoint(t, tag + "-request");
            e[k].answer = make_endpoint(t, tag + "-answer");
        }
    }
    return e;
}

// The simulation process: a SimulationServer per gecko and gateway stack, a
// raw REP per raw stack, each on a thread of its own.
int sim_process(const Endpoints& e, const Scene& scene, Child& self) {
    std::atomic<bool> stop{false};
    struct Sim {
        gecko::Node node;
        BenchBackend backend;
        std::unique_ptr<gecko::click::SimulationServer> server;
    };
    std::vector<std::unique_ptr<Sim>> sims;
    zmq::context_t raw_context(1);
    std::vector<zmq::socket_t> reps;
    for (int k : all_stacks()) {
        if (is_iceoryx(kOrder[k].path)) continue;  // answered by the iceoryx peer process
        if (kOrder[k].path == Path::raw) {
            zmq::socket_t rep(raw_context, zmq::socket_type::rep);
            rep.set(zmq::sockopt::linger, 0);
            rep.set(zmq::sockopt::rcvtimeo, 100);  // to see `stop`
            rep.bind(e[k].rep);
            reps.push_back(std::move(rep));
            continue;
        }
        const auto spin = kOrder[k].path == Path::gecko_spin ? kSpin : std::chrono::microseconds(0);
        auto sim = std::make_unique<Sim>(Sim{bench_node("bench-sim", e[k].answer, e[k].request, spin), BenchBackend(scene), nullptr});
        gecko::click::SimulationServerOptions o;
        o.request_subscriber.spin = spin;  // the rotation's rows block (the Click default spins 50 µs)
        sim->server = std::make_unique<gecko::click::SimulationServer>(sim->node, "sim", sim->backend, o);
        sims.push_back(std::move(sim));
    }
    std::vector<std::thread> threads;
    std::atomic<int> failures{0};
    for (auto& sim : sims) {
        threads.emplace_back([&stop, &failures, server = sim->server.get()] {
            try {
                while (!stop && server->spin_once(milliseconds(10))) {
                }
            } catch (const std::exception& ex) {
                std::fprintf(stderr, "gecko_lockstep_bench (sim): %s\n", ex.what());
                ++failures;
            }
        });
    }
    for (auto& rep : reps) {
        threads.emplace_back([&stop, &failures, &rep, &scene] {
            try {
                while (!stop) {
                    zmq::message_t request;
                    if (!rep.recv(request)) continue;
                    // As a raw application would: build the reply from its own bytes.
                    rep.send(zmq::buffer(scene.click_sensor_bytes), zmq::send_flags::none);
                }
            } catch (const std::exception& ex) {
                std::fprintf(stderr, "gecko_lockstep_bench (raw REP): %s\n", ex.what());
                ++failures;
            }
        });
    }
    self.send(PipeMsg{kReady});
    wait_done(self);
    stop = true;
    for (auto& t : threads) t.join();
    return failures == 0 ? 0 : 2;
}

// The gateway process: one Gateway (and Node) per gateway stack, each on a thread.
int gateway_process(const Endpoints& e, Child& self) {
    std::atomic<bool> stop{false};
    std::vector<std::unique_ptr<gecko::Node>> nodes;
    std::vector<std::unique_ptr<gecko::click::Gateway>> gateways;
    for (int k = 0; k < kStacks; ++k) {
        if (kOrder[k].path != Path::gateway) continue;
        nodes.push_back(std::make_unique<gecko::Node>(bench_node("bench-gateway", e[k].request, e[k].answer)));
        gecko::click::GatewayOptions o;
        o.bind = e[k].rep;
        o.controller.timeout = kStepTimeout;
        o.controller.connect_timeout = kSetupTimeout;
        gateways.push_back(std::make_unique<gecko::click::Gateway>(*nodes.back(), o));
    }
    std::vector<std::thread> threads;
    std::atomic<int> failures{0};
    for (auto& g : gateways) {
        threads.emplace_back([&stop, &failures, gateway = g.get()] {
            try {
                gateway->run([&stop] { return !stop.load(); });
            } catch (const std::exception& ex) {
                std::fprintf(stderr, "gecko_lockstep_bench (gateway): %s\n", ex.what());
                ++failures;
            }
        });
    }
    self.send(PipeMsg{kReady});
    wait_done(self);
    stop = true;
    for (auto& t : threads) t.join();
    for (auto& g : gateways) {
        if (g->stats().error_replies != 0) {
            std::fprintf(stderr, "gecko_lockstep_bench (gateway): %llu ErrorMessage replies\n",
                         static_cast<unsigned long long>(g->stats().error_replies));
            ++failures;
        }
    }
    return failures == 0 ? 0 : 2;
}

class ClickClient : public Client {
public:
    ClickClient(zmq::context_t& context, const StackEndpoints& e, const Scene& scene)
        : socket_(req_socket(context, e.rep)), control_(scene.click_control) {
        values_ = &control_.mutable_objects()->begin()->second;
        // Handshake (also waits for the gateway to find the simulation).
        pb::HandshakeInitMessage init;
        init.set_version(pb::CURRENT_VERSION);
        if (!socket_.send(zmq::buffer(init.SerializeAsString()), zmq::send_flags::none))
            throw Stall("gateway: cannot send the HandshakeInit");
        zmq::message_t reply;
        if (!socket_.recv(reply)) throw Stall("gateway: no Handshake within 10 s");
        pb::Message m;
        if (!m.ParseFromArray(reply.data(), static_cast<int>(reply.size())) || m.messagetype() != pb::HandshakeMessageType)
            throw Stall("gateway: the HandshakeInit was not answered with a Handshake");
        socket_.set(zmq::sockopt::rcvtimeo, static_cast<int>(kStepTimeout.count()));
    }
    double step(std::uint64_t i) override {
        values_->set_values(0, 1e-3 * static_cast<double>(i % 1000));
        const std::int64_t t0 = mono_ns();
        control_.SerializeToString(&bytes_);
        if (!socket_.send(zmq::buffer(bytes_), zmq::send_flags::none)) throw Stall("gateway: send timed out");
        zmq::message_t reply;
        if (!socket_.recv(reply)) throw Stall("gateway: no answer to a Control within 5 s");
        const bool parsed = sensor_.ParseFromArray(reply.data(), static_cast<int>(reply.size()));
        const std::int64_t t1 = mono_ns();
        if (!parsed || sensor_.messagetype() != pb::SensorMessageType) {
            pb::ErrorMessage e;
            e.ParseFromArray(reply.data(), static_cast<int>(reply.size()));
            throw Stall("gateway: a Control was not answered with a Sensor: " + e.errormessage());
        }
        do_not_optimize(sensor_.simvars().simulatedtime());
        return static_cast<double>(t1 - t0) / 1000.0;
    }

private:
    zmq::socket_t socket_;
    pb::ControlMessage control_;
    pb::ControlMessage::Object* values_ = nullptr;
    pb::SensorMessage sensor_;
    std::string bytes_;
};
/// An iceoryx stack of the run: one of the two wakes of lockstep_iceoryx::Run.
class IceoryxClient : public Client {
public:
    IceoryxClient(lockstep_iceoryx::Run& run, lockstep_iceoryx::Wake wake) : run_(run), wake_(wake) {}
    double step(std::uint64_t i) override { return run_.step(wake_, i); }

private:
    lockstep_iceoryx::Run& run_;
    lockstep_iceoryx::Wake wake_;
};

using Samples = std::array<std::vector<double>, kStacks>;

/// One run: fresh processes, every stack set up, `rounds` measured round trips per stack.
/// (The iceoryx peer process lives for the whole program; its links are fresh per run.)
Samples run_once(const Scene& scene, int rounds) {
    static std::uint64_t run_id = 0;
    ++run_id;
    const Endpoints e = make_endpoints();
    EndpointCleanup cleanup;
    Child sim([&](Child& self) { return sim_process(e, scene, self); });
    Child gateway([&](Child& self) { return gateway_process(e, self); });
    for (const auto& s : e)  // after the forks: the children must not unlink anything
        for (const auto* ep : {&s.rep, &s.request, &s.answer})
            if (!ep->empty()) cleanup.endpoints.push_back(*ep);
    PipeMsg m;
    if (!sim.receive(m, kSetupTimeout) || m.kind != kReady) throw Stall("the simulation process did not start");
    if (!gateway.receive(m, kSetupTimeout) || m.kind != kReady) throw Stall("the gateway process did not start");

    Samples samples;
    {
        zmq::context_t context(1);
        std::unique_ptr<lockstep_iceoryx::Run> iceoryx_run;
        if (iceoryx::available()) {
            lockstep_iceoryx::Layout layout;
            layout.stacks = stacks();
            for (int k = 0; k < stacks(); ++k) {
                if (kOrder[k].path == Path::iceoryx_waitset) layout.waitset = k;
                if (kOrder[k].path == Path::iceoryx_busy) layout.busy_poll = k;
            }
            layout.request = scene.click_control_bytes.size();
            layout.reply = scene.click_sensor_bytes.size();
            iceoryx_run = std::make_unique<lockstep_iceoryx::Run>(layout, run_id);
        }
        std::array<std::unique_ptr<Client>, kStacks> clients;
        for (int k = 0; k < stacks(); ++k) {
            switch (kOrder[k].path) {
                case Path::raw: clients[k] = std::make_unique<RawClient>(context, e[k], scene); break;
                case Path::gecko: clients[k] = std::make_unique<GeckoClient>(e[k], scene); break;
                case Path::gateway: clients[k] = std::make_unique<ClickClient>(context, e[k], scene); break;
                case Path::iceoryx_waitset:
                    clients[k] = std::make_unique<IceoryxClient>(*iceoryx_run, lockstep_iceoryx::Wake::waitset);
                    break;
                case Path::iceoryx_busy:
                    clients[k] = std::make_unique<IceoryxClient>(*iceoryx_run, lockstep_iceoryx::Wake::busy_poll);
                    break;
                case Path::gecko_spin: break;  // after the rotation
            }
        }
        // The spin stack's node exists from here (the simulation links to its
        // request segment now, not on a retry after the rotation); it spins
        // only while it waits for an answer, after the rotation.
        GeckoClient spinning(e[kSpinStack], scene, kSpin);
        const int warmup = std::max(20, rounds / 20);
        std::uint64_t j = 0;
        for (int i = 0; i < warmup + rounds; ++i) {
            for (int n = 0; n < stacks(); ++n, ++j) {
                const int k = stack_of(j);
                const double us = clients[k]->step(j);
                if (i >= warmup) samples[k].push_back(us);
            }
        }
        if (iceoryx_run) iceoryx_run->finish(j);
        // The spin stack alone, back to back: both ends spin up to kSpin before
        // they block, and the next request comes within it.
        for (int i = 0; i < warmup + rounds; ++i, ++j) {
            const double us = spinning.step(j);
            if (i >= warmup) samples[kSpinStack].push_back(us);
        }
    }
    sim.send(PipeMsg{kDone});
    gateway.send(PipeMsg{kDone});
    sim.join(milliseconds(10000), "simulation process");
    gateway.join(milliseconds(10000), "gateway process");
    return samples;
}

// ---- the report ---------------------------------------------------------------------

struct LockstepOptions {
    bool quick = false;
    bool markdown = false;
    int reps = 3;
    int rounds = 2000;
};



std::string ratio(double v) { return fmt(v, 2) + "×"; }

void report(const LockstepOptions& options, const Scene& scene, const Costs& costs, Samples& pooled,
            const std::vector<Samples>& runs) {
    Table table;
    table.title = "Lockstep round trip: Control (~200 B) → Sensor of one step (~900 B), µs";
    table.header = {"path", "transport", "bytes req → ans", "steps", "p50", "p90", "p99", "steps/s",
                    "p50 vs raw", "per run", "target ≤" + fmt(kTarget, 1) + "× raw (p50)"};
    table.right = {false, false, true, true, true, true, true, true, true, true, false};
    int misses = 0;
    // shm: the iceoryx rows, next to (and compared with) the ipc rows.
    for (Transport t : {Transport::ipc, Transport::shm, Transport::tcp}) {
        const Transport base = t == Transport::shm ? Transport::ipc : t;  // the raw and gecko rows compared with
        int raw_k = -1;
        for (int k = 0; k < kStacks; ++k)
            if (kOrder[k].transport == base && kOrder[k].path == Path::raw) raw_k = k;
        auto p50_of = [&](Path path) {
            for (int k = 0; k < kStacks; ++k) {
                if (kOrder[k].transport == base && kOrder[k].path == path) {
                    std::vector<double> v = pooled[k];
                    return percentile(v, 50);
                }
            }
            return static_cast<double>(NAN);
        };
        const double raw_p50 = p50_of(Path::raw);
        const double gecko_p50 = p50_of(Path::gecko);
        std::vector<Path> paths = t == Transport::shm ? std::vector<Path>{Path::gecko, Path::iceoryx_waitset, Path::gecko_spin,
                                                                          Path::iceoryx_busy}
                                                      : std::vector<Path>{Path::raw, Path::gecko, Path::gateway};
        if (t == Transport::shm && !iceoryx::available()) paths = {Path::gecko, Path::gecko_spin};
        auto shm_p50 = [&](Path path) {
            for (int k : all_stacks())
                if (kOrder[k].transport == Transport::shm && kOrder[k].path == path) {
                    std::vector<double> v = pooled[k];
                    return percentile(v, 50);
                }
            return static_cast<double>(NAN);
        };
        const double shm_gecko_p50 = [&] {
            for (int k = 0; k < stacks(); ++k)
                if (kOrder[k].transport == Transport::shm && kOrder[k].path == Path::gecko) {
                    std::vector<double> v = pooled[k];
                    return percentile(v, 50);
                }
            return static_cast<double>(NAN);
        }();
        for (Path p : paths) {
            int k = 0;
            while (!(kOrder[k].transport == t && kOrder[k].path == p)) ++k;
            std::vector<double>& v = pooled[k];
            double sum = 0;
            for (double x : v) sum += x;
            const double p50 = percentile(v, 50), p90 = percentile(v, 90), p99 = percentile(v, 99);
            const double steps_per_s = v.empty() ? NAN : 1e6 * static_cast<double>(v.size()) / sum;
            double lo = INFINITY, hi = -INFINITY;
            for (const Samples& run : runs) {
                std::vector<double> a = run[k], b = run[raw_k];
                const double r = percentile(a, 50) / percentile(b, 50);
                lo = std::min(lo, r);
                hi = std::max(hi, r);
            }
            std::string bytes, verdict;
            const double r = p50 / raw_p50;
            switch (p) {
                case Path::raw:
                    bytes = std::to_string(scene.click_control_bytes.size()) + " → " +
                            std::to_string(scene.click_sensor_bytes.size());
                    verdict = "baseline";
                    break;
                case Path::gecko: {
                    bytes = std::to_string(scene.gecko_request_bytes) + " → " + std::to_string(scene.gecko_answer_bytes);
                    const double extra = p50 - raw_p50;
                    if (t == Transport::shm) {  // issue 11: against iceoryx, not ZeroMQ
                        verdict = "shared memory (issue 11 targets: p50 ≤ 10 µs, ≤ 0.6× iceoryx WaitSet)";
                        break;
                    }
                    verdict = r <= kTarget ? "ok"
                                           : "miss: +" + fmt(extra, 0) + " µs/step; msgpack encode/decode of the Request "
                                             "and Answer envelopes is " +
                                                 fmt(costs.gecko_codec_us(), 0) +
                                                 " µs of it (in-process), the rest Controller and SimulationServer "
                                                 "work on the critical path (spine cycle, answer cache copy) and "
                                                 "wake-ups: see the CPU note";
                    break;
                }
                case Path::gateway:
                    bytes = std::to_string(scene.click_control_bytes.size()) + " → " +
                            std::to_string(scene.click_sensor_bytes.size());
                    verdict = r <= kTarget ? "ok"
                                           : "miss by design: two round trips in series (Click REQ/REP to the gateway, "
                                             "then the gecko row's), raw + gecko p50 = " +
                                                 fmt(raw_p50 + gecko_p50, 0) + " µs, plus Click protobuf " +
                                                 fmt(costs.gateway_codec_us, 0) + " µs and a third process";
                    break;
                case Path::gecko_spin:
                    bytes = std::to_string(scene.gecko_request_bytes) + " → " + std::to_string(scene.gecko_answer_bytes);
                    verdict = "not in the rotation: back to back after it, both nodes spin " +
                              std::to_string(kSpin.count()) + " µs before they block (NodeOptions::spin); issue 11 "
                              "target ≤ 1.2× iceoryx busy-poll. Its transport alone (raw frames of these sizes, "
                              "RawPublisher/RawSubscriber, same spin, after the runs): p50 " +
                              fmt(costs.frames_spin_p50_us, 2) + ", p99 " + fmt(costs.frames_spin_p99_us, 2) + " µs";
                    break;
                case Path::iceoryx_waitset:
                case Path::iceoryx_busy:
                    bytes = std::to_string(scene.click_control_bytes.size()) + " → " +
                            std::to_string(scene.click_sensor_bytes.size());
                    verdict = std::string("peer (no target): ") +
                              (p == Path::iceoryx_waitset ? "both ends block on a WaitSet" : "both ends spin on take()") +
                              "; gecko shm" + (p == Path::iceoryx_waitset ? "" : " spin") + " p50 = " +
                              ratio((p == Path::iceoryx_waitset ? shm_gecko_p50 : shm_p50(Path::gecko_spin)) / p50) +
                              ", gecko ipc = " + ratio(gecko_p50 / p50) + " this";
                    break;
            }
            if (p != Path::raw && !is_iceoryx(p) && t != Transport::shm && r > kTarget) ++misses;
            table.rows.push_back({to_string(p), to_string(t), bytes, std::to_string(v.size()), fmt(p50, 1), fmt(p90, 1),
                                  fmt(p99, 1), fmt(steps_per_s, 0), p == Path::raw ? "1.00×" : ratio(r),
                                  p == Path::raw ? "" : fmt(lo, 2) + "–" + fmt(hi, 2), verdict});
        }
    }
    table.notes.push_back(
        "Round trip = from before the client encodes its Control to after it has decoded the Sensor; steps/s = "
        "steps ÷ their summed round trips (one client, lockstep). Pooled over " +
        std::to_string(runs.size()) +
        " run(s) of fresh processes: this process (clients), a simulation process (SimulationServer per stack, raw "
        "REP), a gateway process" + std::string(iceoryx::available() ? ", the iceoryx peer process (one for the whole program)" : "") +
        "; within a run the " + std::to_string(stacks()) + " stacks alternate per round trip in a rotating order. p50 vs "
        "raw: against the raw row of the same transport (ipc for shm).");
    if (iceoryx::available()) {
        table.notes.push_back(
            "iceoryx rows: " + iceoryx::roudi_note() +
            ". A request is a loaned chunk of the raw request's size, filled by a copy from the client's buffer and "
            "published; the responder takes it and publishes a reply chunk of the Sensor's size, copied from its own "
            "bytes; the client waits for it and releases it. WaitSet: both ends block on a WaitSet (a condition "
            "variable from RouDi). busy-poll: both ends spin on take(); the responder spins only for its own round "
            "trips (armed over a pipe, outside the timed span), so that it does not take a vCPU from the other "
            "stacks.");
    }
    table.notes.push_back(
        "bytes: raw sends the Click Control's and Sensor's protobuf sizes; gecko's are the msgpack Request and "
        "Answer envelopes (each frame also carries Gecko's header and the type name); the gateway row's are Click's "
        "on the client side and gecko's between gateway and simulation. The simulation does no physics (a prebuilt "
        "Sensor). In-process codec cost per step: msgpack envelopes " +
        fmt(costs.gecko_codec_us(), 1) + " µs (" + costs.gecko_codec_parts() + "); Click protobuf (client encode/parse + gateway decode/encode) " +
        fmt(costs.gateway_codec_us, 1) + " µs. CPU time per step with both ends in one process over inproc (all threads, median of 8 blocks; noisy on a shared VM): gecko " +
        fmt(costs.inproc_gecko_cpu_us, 1) + " µs, raw REQ/REP " + fmt(costs.inproc_raw_cpu_us, 1) + " µs.");
    table.notes.push_back(std::to_string(misses) + " row(s) miss the target." +
                          (options.quick ? " --quick: rough figures." : ""));
    table.print(options.markdown);
}

}  // namespace

int main(int argc, char** argv) {
    LockstepOptions options;
    long long reps = 0, rounds = 0, profile = 0;
    gecko::OptionParser args(
        "gecko_lockstep_bench",
        "the Click lockstep round trip (a ~200 B Control in, a ~900 B Sensor out), on ipc and tcp loopback: "
        "gecko::click::Controller <-> SimulationServer, a Click client through the gateway, and raw ZeroMQ REQ/REP "
        "of the same byte sizes, interleaved in one run. Prints p50/p90/p99 and steps/s per row and the gecko/raw "
        "ratio. Exits 2 if a side stalls (every receive has a timeout) or on bad usage");
    args.flag("--quick", options.quick, "300 round trips per stack, one run (a smoke run, rough figures)");
    args.flag("--markdown", options.markdown, "print the table as Markdown");
    args.integer("--reps", reps, 1, 20, "N", "runs (fresh processes each), pooled (default 3, --quick 1)");
    args.integer("--rounds", rounds, 10, 100000, "N", "measured round trips per stack and run (default 2000)");
    args.integer("--profile", profile, 1, 10000000, "STEPS",
                 "only run STEPS gecko steps in this process over inproc and print the CPU time per step (for perf)");
    bool alone = false;
    args.flag("--alone", alone,
              "instead of the rotation: each shared-memory stack alone (only its two processes alive), spread over "
              "the CPUs and pinned to one, next to a raw futex ping-pong floor (default 5 runs; alone.hpp)");
    std::string only;
    args.text("--only", only, "STACK", "with --alone: only the stacks whose name contains STACK (e.g. \"gecko shm, blocking\", for perf)");
    bool codec_only = false;
    args.flag("--codec", codec_only, "only measure the envelopes' encode and decode per step, in this process");
    args.parse_or_exit(argc, argv);
    const bool reps_given = reps != 0, rounds_given = rounds != 0;
    if (reps_given) options.reps = static_cast<int>(reps);
    if (rounds_given) options.rounds = static_cast<int>(rounds);
    if (options.quick) {
        if (!reps_given) options.reps = 1;
        if (!rounds_given) options.rounds = 300;
    }

    ::signal(SIGPIPE, SIG_IGN);
    gecko::set_log_level(std::getenv("GECKO_BENCH_DEBUG") ? gecko::LogLevel::debug : gecko::LogLevel::warn);
    try {
        // First, before anything forks: our own RouDi, and a supervisor process that stops it after the run.
        iceoryx::start(profile == 0 && !codec_only);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "gecko_lockstep_bench: FAILED: %s\n", e.what());
        return 2;
    }

    int major, minor, patch;
    zmq_version(&major, &minor, &patch);
    char date[64];
    const std::time_t now = std::time(nullptr);
    std::strftime(date, sizeof date, "%Y-%m-%d %H:%M %Z", std::localtime(&now));
    const std::string machine = describe_machine();
    const std::string build = std::string(GECKO_BENCH_BUILD_TYPE) + " build, ZeroMQ " + std::to_string(major) + "." +
                              std::to_string(minor) + "." + std::to_string(patch) +
                              (options.quick ? ", --quick (rough figures)" : "");
    if (options.markdown)
        std::cout << "Measured " << date << " on " << machine << "; " << build << ".\n\n";
    else
        std::cout << "gecko_lockstep_bench  " << date << "\n  " << machine << "\n  " << build << "\n\n";
    std::cout << std::flush;

    try {
        const Scene scene = make_scene();
        if (profile) {
            profile_inproc(scene, static_cast<int>(profile));
            return 0;
        }
        if (alone) {
            AloneOptions a;
            a.reps = reps_given ? options.reps : options.quick ? 1 : 5;
            a.rounds = options.rounds;
            a.markdown = options.markdown;
            a.quick = options.quick;
            a.only = only;
            if (iceoryx::available()) iceoryx::start_peer(lockstep_iceoryx::serve);
            run_alone(scene, a);
            if (iceoryx::available()) iceoryx::stop_peer();
            return 0;
        }
        Costs costs = measure_costs(scene);
        if (codec_only) {
            std::cout << "msgpack envelopes per step: " << fmt(costs.gecko_codec_us(), 2) << " µs ("
                      << costs.gecko_codec_parts() << ")\n";
            return 0;
        }
        measure_inproc(scene, options.quick ? 300 : 2000, costs);
        // Now that nothing runs in this process any more: the iceoryx responder, then our iceoryx runtime.
        iceoryx::start_peer(lockstep_iceoryx::serve);
        std::vector<Samples> runs;
        Samples pooled;
        for (int r = 0; r < options.reps; ++r) {
            runs.push_back(run_once(scene, options.rounds));
            for (int k = 0; k < kStacks; ++k)
                pooled[k].insert(pooled[k].end(), runs.back()[k].begin(), runs.back()[k].end());
        }
        iceoryx::stop_peer();
        measure_frames_spin(scene, options.rounds, costs);
        report(options, scene, costs, pooled, runs);
    } catch (const std::exception& e) {
        kill_children();
        std::fprintf(stderr, "gecko_lockstep_bench: FAILED: %s\n", e.what());
        return 2;
    }
    return 0;
}
