// SPDX-License-Identifier: Apache-2.0
#include "costs.hpp"

#include "gecko/click_gateway/translate.hpp"
#include <gecko/codec.hpp>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <thread>

namespace lockstep {

namespace {

/// Median ns of `f` over batches of ~1 ms for ~0.2 s.
template <class F>
double ns_per_call(F&& f) {
    for (int i = 0; i < 100; ++i) f();  // warm-up
    int batch = 1;
    for (;;) {
        const auto t0 = mono_ns();
        for (int i = 0; i < batch; ++i) f();
        if (mono_ns() - t0 > 1000000 || batch > (1 << 20)) break;
        batch *= 2;
    }
    std::vector<double> per;
    const auto end = mono_ns() + 200000000;
    while (mono_ns() < end || per.size() < 5) {
        const auto t0 = mono_ns();
        for (int i = 0; i < batch; ++i) f();
        per.push_back(static_cast<double>(mono_ns() - t0) / batch);
    }
    return percentile(per, 50);
}

}  // namespace

Costs measure_costs(const Scene& scene) {
    gecko::click::Request request;
    request.controller_id = "bench-controller-0123abcd";
    request.request_id = 1;
    request.kind = gecko::click::RequestKind::control;
    request.control = scene.control;
    gecko::click::Answer answer;
    answer.controller_id = request.controller_id;
    answer.kind = gecko::click::AnswerKind::sensor;
    answer.simulation = "sim";
    answer.sensor = scene.sensor;
    Costs costs{};
    gecko::Buffer buffer;
    const auto parts = [&](const auto& message, auto& decoded, double& encode_us, double& decode_us) {
        encode_us = ns_per_call([&] {
                        buffer.clear();
                        gecko::codec::encode(buffer, message);
                        do_not_optimize(buffer.size());
                    }) /
                    1000.0;
        decode_us = ns_per_call([&] {
                        gecko::codec::decode(buffer.data(), buffer.size(), decoded);
                        do_not_optimize(decoded.controller_id.size());
                    }) /
                    1000.0;
    };
    gecko::click::Request request_in;
    gecko::click::Answer answer_in;
    parts(request, request_in, costs.request_encode_us, costs.request_decode_us);
    parts(answer, answer_in, costs.answer_encode_us, costs.answer_decode_us);
    pb::ControlMessage control = scene.click_control;
    pb::SensorMessage sensor;
    std::string bytes;
    const double click_ns = ns_per_call([&] {
        control.SerializeToString(&bytes);                     // the client
        auto decoded = gecko::click::decode(bytes);            // the gateway
        auto encoded = gecko::click::encode(scene.sensor);     // the gateway
        sensor.ParseFromString(std::get<std::string>(encoded));  // the client
        do_not_optimize(decoded.index());
    });
    costs.gateway_codec_us = click_ns / 1000.0;
    return costs;
}

/// The spin stack's transport alone, for the note under the table: frames
/// of the envelopes' sizes through Gecko's untyped layer (RawPublisher,
/// RawSubscriber: no codec, no lockstep protocol) over shared memory, to an
/// echo process, both ends spinning kSpin. The spin row minus this is what
/// the Click step itself costs (its codec and bookkeeping).
void measure_frames_spin(const Scene& scene, int rounds, Costs& costs) {
    const std::string request = make_endpoint(Transport::shm, "frames-request");
    const std::string answer = make_endpoint(Transport::shm, "frames-answer");
    // Bytes the untyped layer passes through as they are: a msgpack bin that,
    // header included (2, 3 or 5 bytes), is each envelope's size.
    const auto payload = [](std::size_t size) {
        const std::size_t body = size <= 257 ? size - 2 : size <= 65538 ? size - 3 : size - 5;
        gecko::Buffer b;
        gecko::wire::Packer(b).pack_bin(static_cast<std::uint32_t>(body));
        b.resize(b.size() + body);
        return std::vector<std::uint8_t>(b.data(), b.data() + b.size());
    };
    const auto request_bytes = payload(scene.gecko_request_bytes), answer_bytes = payload(scene.gecko_answer_bytes);
    const int total = rounds + std::max(20, rounds / 20);
    // Echoes until the parent says done (however many requests its warm-up took).
    Child echo([&](Child& self) {
        gecko::Node node = bench_node("bench-frames-echo", answer, request, kSpin);
        auto sub = node.raw_subscriber("frames-request");
        auto pub = node.raw_publisher("frames-answer", "gecko.bench.Frame");
        self.send(PipeMsg{kReady});
        if (!pub.wait_for_subscribers(1, kSetupTimeout)) return 1;
        const auto deadline = Clock::now() + milliseconds(110000);
        for (PipeMsg m; Clock::now() < deadline;) {
            if (sub.receive(std::chrono::milliseconds(10), [](const gecko::RawView&) {})) {
                pub.publish(answer_bytes.data(), answer_bytes.size());
            } else if (self.receive(m, milliseconds(0)) && m.kind == kDone) {
                return 0;
            }
        }
        return 1;
    });
    PipeMsg m;
    if (!echo.receive(m, kSetupTimeout) || m.kind != kReady) throw Stall("the frames echo process did not start");
    std::vector<double> rtt;
    {
        gecko::Node node = bench_node("bench-frames", request, answer, kSpin);
        auto pub = node.raw_publisher("frames-request", "gecko.bench.Frame");
        auto sub = node.raw_subscriber("frames-answer");
        if (!pub.wait_for_subscribers(1, kSetupTimeout)) throw Stall("frames: the echo never subscribed");
        // Until the echo's answers come (its publisher may not have our subscription yet).
        for (int tries = 0;; ++tries) {
            pub.publish(request_bytes.data(), request_bytes.size());
            if (sub.receive(std::chrono::milliseconds(100), [](const gecko::RawView&) {})) break;
            if (tries == 100) throw Stall("frames: no echo within 10 s");
        }
        // An echo of an earlier try still on its way would pair every later
        // request with the answer before it: take them all first.
        for (int extra = 0; extra < 200 && sub.receive(std::chrono::milliseconds(20), [](const gecko::RawView&) {}); ++extra) {
        }
        for (int i = 1; i < total; ++i) {
            const std::int64_t t0 = mono_ns();
            pub.publish(request_bytes.data(), request_bytes.size());
            if (!sub.receive(kStepTimeout, [](const gecko::RawView&) {})) throw Stall("frames: an echo did not come");
            if (i > total - rounds) rtt.push_back(static_cast<double>(mono_ns() - t0) / 1000.0);
        }
    }
    echo.send(PipeMsg{kDone});
    echo.join(milliseconds(10000), "frames echo process");
    costs.frames_spin_p50_us = percentile(rtt, 50);
    costs.frames_spin_p99_us = percentile(rtt, 99);
}

/// Both ends in this process over inproc:// (a thread each, no kernel socket
/// I/O): the CPU time one step costs with Gecko and with raw REQ/REP, all
/// threads counted. CPU time, not wall time: on a shared VM the wall time of two
/// threads waking each other swings by 3x from run to run, the CPU time does not.
/// Everything is torn down before returning (the runs fork afterwards).
void measure_inproc(const Scene& scene, int rounds, Costs& costs) {
    std::atomic<bool> stop{false};
    std::vector<double> gecko_cpu, raw_cpu;  // per block, µs per step
    {
        gecko::Node sim_node = bench_node("bench-sim");
        gecko::Node ctl_node = bench_node("bench-controller");
        sim_node.connect(ctl_node.locators().front());
        ctl_node.connect(sim_node.locators().front());
        BenchBackend backend(scene);
        gecko::click::SimulationServerOptions so;
        gecko::click::SimulationServer server(sim_node, "sim", backend, so);
        std::thread sim_thread([&] {
            while (!stop && server.spin_once(milliseconds(10))) {
            }
        });
        zmq::context_t context(1);
        zmq::socket_t rep(context, zmq::socket_type::rep);
        rep.set(zmq::sockopt::linger, 0);
        rep.set(zmq::sockopt::rcvtimeo, 100);
        rep.bind("inproc://lockstep-bench-rep");
        std::thread rep_thread([&] {
            while (!stop) {
                zmq::message_t request;
                if (!rep.recv(request)) continue;
                rep.send(zmq::buffer(scene.click_sensor_bytes), zmq::send_flags::none);
            }
        });
        try {
            StackEndpoints e;
            e.request = "inproc://lockstep-bench-request";
            e.answer = "inproc://lockstep-bench-answer";
            e.rep = "inproc://lockstep-bench-rep";
            GeckoClient gecko_client(ctl_node, scene);
            RawClient raw_client(context, e, scene);
            for (int i = 0; i < 50; ++i) gecko_client.step(i), raw_client.step(i);  // warm-up
            // Blocks in alternating order, so that both see the same drift.
            const int blocks = 8, per_block = std::max(10, rounds / blocks);
            std::uint64_t j = 0;
            for (int b = 0; b < 2 * blocks; ++b) {
                const bool gecko_turn = (b % 4 == 0 || b % 4 == 3);
                const double t0 = process_cpu_us();
                for (int i = 0; i < per_block; ++i, ++j) gecko_turn ? gecko_client.step(j) : raw_client.step(j);
                (gecko_turn ? gecko_cpu : raw_cpu).push_back((process_cpu_us() - t0) / per_block);
            }
        } catch (...) {
            stop = true;
            sim_thread.join();
            rep_thread.join();
            throw;
        }
        stop = true;
        sim_thread.join();
        rep_thread.join();
    }
    // The median block: a burst of load on this shared machine inflates a block or two.
    costs.inproc_gecko_cpu_us = percentile(gecko_cpu, 50);
    costs.inproc_raw_cpu_us = percentile(raw_cpu, 50);
}

/// --profile: only Gecko's steps, both ends in this process over inproc, so
/// that `perf record gecko_lockstep_bench --profile 50000` shows Gecko alone.
void profile_inproc(const Scene& scene, int steps) {
    std::atomic<bool> stop{false};
    gecko::Node sim_node = bench_node("bench-sim");
    gecko::Node ctl_node = bench_node("bench-controller");
    sim_node.connect(ctl_node.locators().front());
    ctl_node.connect(sim_node.locators().front());
    BenchBackend backend(scene);
    gecko::click::SimulationServer server(sim_node, "sim", backend, gecko::click::SimulationServerOptions{});
    std::thread sim_thread([&] {
        while (!stop && server.spin_once(milliseconds(10))) {
        }
    });
    {
        GeckoClient client(ctl_node, scene);
        for (int i = 0; i < 100; ++i) client.step(static_cast<std::uint64_t>(i));
        const double t0 = process_cpu_us();
        const std::int64_t w0 = mono_ns();
        for (int i = 0; i < steps; ++i) client.step(static_cast<std::uint64_t>(i));
        std::printf("%d gecko steps over inproc: %.2f us CPU per step (all threads), %.2f us wall per step\n", steps,
                    (process_cpu_us() - t0) / steps, static_cast<double>(mono_ns() - w0) / 1000.0 / steps);
    }
    stop = true;
    sim_thread.join();
}

}  // namespace lockstep
