// SPDX-License-Identifier: Apache-2.0
#include "alone.hpp"

#include "iceoryx.hpp"
#include "iceoryx_side.hpp"

#include <linux/futex.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <thread>

namespace lockstep {

namespace {

enum class Pairing { gecko_blocking, gecko_spin, iceoryx_waitset, iceoryx_busy, futex };
enum class Regime { spread, one_cpu };

const char* to_string(Pairing p) {
    switch (p) {
        case Pairing::gecko_blocking: return "gecko shm, blocking";
        case Pairing::gecko_spin: return "gecko shm, spin";
        case Pairing::iceoryx_waitset: return "iceoryx WaitSet";
        case Pairing::iceoryx_busy: return "iceoryx busy-poll";
        case Pairing::futex: return "raw futex ping-pong (floor)";
    }
    return "?";
}

std::vector<Pairing> pairings() {
    std::vector<Pairing> v{Pairing::gecko_blocking, Pairing::gecko_spin};
    if (iceoryx::available()) v.insert(v.end(), {Pairing::iceoryx_waitset, Pairing::iceoryx_busy});
    v.push_back(Pairing::futex);
    return v;
}

/// One pairing's run: round trips (µs) and, per measured step, both processes' cost.
struct Measured {
    std::vector<double> rtt;
    double cpu_us = NAN, scheduled = NAN;
};

/// Warms up, then times `rounds` steps of `step`, with the cost of `pids` over them.
template <class Step>
Measured measure(int rounds, const std::vector<pid_t>& pids, Step&& step) {
    const int warmup = std::max(20, rounds / 20);
    std::uint64_t j = 0;
    for (int i = 0; i < warmup; ++i) step(j++);
    Measured m;
    m.rtt.reserve(static_cast<std::size_t>(rounds));
    const Usage before = usage_of(pids);
    for (int i = 0; i < rounds; ++i) m.rtt.push_back(step(j++));
    const Usage after = usage_of(pids);
    m.cpu_us = (after.cpu_ns - before.cpu_ns) / 1000.0 / rounds;
    m.scheduled = (after.scheduled - before.scheduled) / rounds;
    return m;
}

// ---- the floor: a futex ping-pong over a shared mapping ------------------------------

struct FutexShared {
    alignas(64) std::atomic<std::uint32_t> request{0};
    alignas(64) std::atomic<std::uint32_t> reply{0};
    alignas(64) std::uint8_t request_bytes[4096];
    alignas(64) std::uint8_t reply_bytes[4096];
};
static_assert(std::atomic<std::uint32_t>::is_always_lock_free);
constexpr std::uint32_t kFutexStop = 0xffffffffu;

// Shared between processes: no FUTEX_PRIVATE_FLAG.
long futex(std::atomic<std::uint32_t>& word, int op, std::uint32_t value, const timespec* timeout) {
    return ::syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&word), op, value, timeout, nullptr, 0);
}

/// Sleeps until `word` holds something other than `old`; false after `bound`.
bool wait_change(std::atomic<std::uint32_t>& word, std::uint32_t old, milliseconds bound, std::uint32_t& now) {
    const auto deadline = Clock::now() + bound;
    const timespec slice{0, 100 * 1000 * 1000};
    while ((now = word.load(std::memory_order_acquire)) == old) {
        if (Clock::now() > deadline) return false;
        futex(word, FUTEX_WAIT, old, &slice);
    }
    return true;
}

Measured futex_pairing(const Scene& scene, int rounds, const std::vector<pid_t>& self) {
    const std::size_t request_size = scene.click_control_bytes.size(), reply_size = scene.click_sensor_bytes.size();
    if (request_size > 4096 || reply_size > 4096) throw Stall("futex: the scene's messages do not fit its buffers");
    void* mem = ::mmap(nullptr, sizeof(FutexShared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED) throw Stall("futex: cannot map shared memory");
    auto* shared = new (mem) FutexShared;
    Measured m;
    {
        Child responder([&](Child& self_child) {
            self_child.send(PipeMsg{kReady});
            std::vector<std::uint8_t> in(request_size);
            for (std::uint32_t last = 0;;) {
                std::uint32_t r = 0;
                if (!wait_change(shared->request, last, milliseconds(110000), r)) return 1;
                if (r == kFutexStop) return 0;
                std::memcpy(in.data(), shared->request_bytes, request_size);
                std::memcpy(shared->reply_bytes, scene.click_sensor_bytes.data(), reply_size);
                shared->reply.store(r, std::memory_order_release);
                futex(shared->reply, FUTEX_WAKE, 1, nullptr);
                last = r;
            }
        });
        PipeMsg ready;
        if (!responder.receive(ready, kSetupTimeout) || ready.kind != kReady) throw Stall("futex: no responder");
        std::vector<pid_t> pids = self;
        pids.push_back(responder.pid());
        std::vector<std::uint8_t> out(reply_size);
        m = measure(rounds, pids, [&](std::uint64_t j) {
            const auto seq = static_cast<std::uint32_t>(j + 1);
            const std::int64_t t0 = mono_ns();
            std::memcpy(shared->request_bytes, scene.click_control_bytes.data(), request_size);
            shared->request.store(seq, std::memory_order_release);
            futex(shared->request, FUTEX_WAKE, 1, nullptr);
            for (std::uint32_t now = shared->reply.load(std::memory_order_acquire); now != seq;) {
                if (!wait_change(shared->reply, now, kStepTimeout, now)) throw Stall("futex: no reply within 5 s");
            }
            std::memcpy(out.data(), shared->reply_bytes, reply_size);
            const std::int64_t t1 = mono_ns();
            do_not_optimize(out[0]);
            return static_cast<double>(t1 - t0) / 1000.0;
        });
        shared->request.store(kFutexStop, std::memory_order_release);
        futex(shared->request, FUTEX_WAKE, 1, nullptr);
        responder.join(milliseconds(10000), "futex responder");
    }
    ::munmap(mem, sizeof(FutexShared));
    return m;
}

// ---- Gecko: Controller <-> SimulationServer, alone -----------------------------------

Measured gecko_pairing(const Scene& scene, int rounds, std::chrono::microseconds spin, const std::vector<pid_t>& self) {
    StackEndpoints e;
    e.request = make_endpoint(Transport::shm, "alone-request");
    e.answer = make_endpoint(Transport::shm, "alone-answer");
    Child sim([&](Child& child) {
        std::atomic<bool> stop{false};
        gecko::Node node = bench_node("bench-sim", e.answer, e.request, spin);
        BenchBackend backend(scene);
        gecko::click::SimulationServerOptions o;
        o.request_subscriber.spin = spin;
        gecko::click::SimulationServer server(node, "sim", backend, o);
        std::atomic<int> failed{0};
        std::thread serving([&] {
            try {
                while (!stop && server.spin_once(milliseconds(10))) {
                }
            } catch (const std::exception& ex) {
                std::fprintf(stderr, "gecko_lockstep_bench --alone (sim): %s\n", ex.what());
                failed = 1;
            }
        });
        child.send(PipeMsg{kReady});
        try {
            wait_done(child);
        } catch (const Stall&) {
            failed = 1;
        }
        stop = true;
        serving.join();
        return failed.load() ? 2 : 0;
    });
    PipeMsg ready;
    if (!sim.receive(ready, kSetupTimeout) || ready.kind != kReady) throw Stall("gecko --alone: no simulation process");
    std::vector<pid_t> pids = self;
    pids.push_back(sim.pid());
    Measured m;
    {
        GeckoClient client(e, scene, spin);
        m = measure(rounds, pids, [&](std::uint64_t j) { return client.step(j); });
    }
    sim.send(PipeMsg{kDone});
    sim.join(milliseconds(10000), "simulation process");
    return m;
}

// ---- iceoryx: its WaitSet or busy-poll stack, alone -----------------------------------

Measured iceoryx_pairing(const Scene& scene, int rounds, lockstep_iceoryx::Wake wake, const std::vector<pid_t>& self) {
    static std::uint64_t id = 1000000;  // apart from the rotation's run ids
    lockstep_iceoryx::Layout layout;
    layout.stacks = 1;
    (wake == lockstep_iceoryx::Wake::waitset ? layout.waitset : layout.busy_poll) = 0;
    layout.request = scene.click_control_bytes.size();
    layout.reply = scene.click_sensor_bytes.size();
    lockstep_iceoryx::Run run(layout, ++id);
    std::vector<pid_t> pids = self;
    pids.push_back(iceoryx::peer().pid());
    std::uint64_t last = 0;
    Measured m = measure(rounds, pids, [&](std::uint64_t j) {
        last = j;
        return run.step(wake, j);
    });
    run.finish(last + 1);
    return m;
}

// ---- the report ------------------------------------------------------------------------

struct Key {
    Regime regime;
    Pairing pairing;
    bool operator<(const Key& o) const {
        return std::make_pair(regime, pairing) < std::make_pair(o.regime, o.pairing);
    }
};

struct Pooled {
    std::vector<double> rtt, run_p50, cpu_us, scheduled;
};

std::string x(double v) { return std::isfinite(v) ? fmt(v, 2) + "×" : "-"; }

void report(const AloneOptions& options, std::map<Key, Pooled>& pooled, int cpus_spread, int cpu_pinned) {
    Table table;
    table.title = "Lockstep round trip over shared memory, each stack alone (Control ~200 B → Sensor ~900 B), µs";
    table.header = {"regime", "stack", "steps", "p50", "p90", "p99", "p50 per run", "CPU µs / step",
                    "scheduled in / step", "p50 vs iceoryx (target)", "p50 ÷ futex floor"};
    table.right = {false, false, true, true, true, true, true, true, true, false, true};
    int misses = 0, checked = 0;
    for (Regime regime : {Regime::spread, Regime::one_cpu}) {
        auto p50 = [&](Pairing p) {
            auto it = pooled.find(Key{regime, p});
            if (it == pooled.end() || it->second.rtt.empty()) return static_cast<double>(NAN);
            std::vector<double> v = it->second.rtt;
            return percentile(v, 50);
        };
        const double floor = p50(Pairing::futex);
        for (Pairing p : pairings()) {
            if (!pooled.count(Key{regime, p})) continue;
            Pooled& s = pooled[Key{regime, p}];
            if (s.rtt.empty()) continue;
            const double mid = percentile(s.rtt, 50);
            std::string vs = "-";
            auto versus = [&](Pairing peer, double target) {
                const double r = mid / p50(peer);
                if (!std::isfinite(r)) return std::string("-");
                ++checked;
                const bool met = r <= target;
                misses += !met;
                return x(r) + " (≤ " + fmt(target, 1) + "×: " + (met ? "met" : "MISS") + ")";
            };
            if (p == Pairing::gecko_blocking) vs = versus(Pairing::iceoryx_waitset, 0.8);
            if (p == Pairing::gecko_spin) vs = versus(Pairing::iceoryx_busy, 1.1);
            const auto [lo, hi] = std::minmax_element(s.run_p50.begin(), s.run_p50.end());
            table.rows.push_back({regime == Regime::spread ? "spread over " + std::to_string(cpus_spread) + " CPUs"
                                                           : "one CPU (" + std::to_string(cpu_pinned) + ")",
                                  to_string(p), std::to_string(s.rtt.size()), fmt(mid, 1), fmt(percentile(s.rtt, 90), 1),
                                  fmt(percentile(s.rtt, 99), 1), fmt(*lo, 1) + "–" + fmt(*hi, 1),
                                  fmt(percentile(s.cpu_us, 50), 1), fmt(percentile(s.scheduled, 50), 2), vs,
                                  x(mid / floor)});
        }
    }
    table.notes.push_back(
        "Each stack alone: only this process and its peer (Gecko: a SimulationServer process, fresh per pairing; "
        "iceoryx: the iceoryx peer process, its RouDi idle beside it; futex: a forked responder) do anything while "
        "it runs. Every run visits every stack in both regimes, in an order that rotates from run to run; rows pool " +
        std::to_string(options.reps) + " run(s) of " + std::to_string(options.rounds) + " measured steps each.");
    table.notes.push_back(
        "Regimes: spread = every process may run on every CPU this program may; one CPU = every thread of both "
        "processes pinned to one CPU (sched_setaffinity, as taskset does). A spinning stack pinned to one CPU "
        "spins while the other end cannot run: its figures there say what spinning costs when there is no second CPU.");
    table.notes.push_back(
        "CPU µs / step and scheduled in / step: the two processes' threads summed, from /proc/PID/task/*/schedstat "
        "(time on a CPU; times a thread was switched in), median over runs. They transfer between machines better "
        "than a time does.");
    table.notes.push_back(
        "Floor: a futex ping-pong over a shared mapping; the request's and the reply's bytes copied in and out; each "
        "side sleeps in FUTEX_WAIT and wakes the other with FUTEX_WAKE; no framing, no codec, no bookkeeping.");
    table.notes.push_back(std::to_string(misses) + " of " + std::to_string(checked) + " target(s) missed." +
                          (options.quick ? " --quick: rough figures." : ""));
    table.print(options.markdown);
}

}  // namespace

void run_alone(const Scene& scene, const AloneOptions& options) {
    const cpu_set_t spread = initial_affinity();
    const cpu_set_t one = first_cpu();
    std::vector<Pairing> list = pairings();
    if (!options.only.empty())
        list.erase(std::remove_if(list.begin(), list.end(),
                                  [&](Pairing p) { return std::string(to_string(p)).find(options.only) == std::string::npos; }),
                   list.end());
    if (list.empty()) throw Stall("--only '" + options.only + "' names no stack of --alone");
    std::vector<std::pair<Regime, Pairing>> order;
    for (Regime r : {Regime::spread, Regime::one_cpu})
        for (Pairing p : list) order.emplace_back(r, p);
    std::map<Key, Pooled> pooled;
    const std::vector<pid_t> self{::getpid()};
    const bool peer = iceoryx::available();
    for (int run = 0; run < options.reps; ++run) {
        for (std::size_t n = 0; n < order.size(); ++n) {
            const auto [regime, pairing] = order[(n + static_cast<std::size_t>(run) * 3) % order.size()];
            const cpu_set_t& cpus = regime == Regime::one_cpu ? one : spread;
            pin(::getpid(), cpus);
            if (peer) pin(iceoryx::peer().pid(), cpus);
            Measured m;
            switch (pairing) {
                case Pairing::gecko_blocking:
                    m = gecko_pairing(scene, options.rounds, std::chrono::microseconds(0), self);
                    break;
                case Pairing::gecko_spin: m = gecko_pairing(scene, options.rounds, kSpin, self); break;
                case Pairing::iceoryx_waitset:
                    m = iceoryx_pairing(scene, options.rounds, lockstep_iceoryx::Wake::waitset, self);
                    break;
                case Pairing::iceoryx_busy:
                    m = iceoryx_pairing(scene, options.rounds, lockstep_iceoryx::Wake::busy_poll, self);
                    break;
                case Pairing::futex: m = futex_pairing(scene, options.rounds, self); break;
            }
            Pooled& s = pooled[Key{regime, pairing}];
            s.rtt.insert(s.rtt.end(), m.rtt.begin(), m.rtt.end());
            s.run_p50.push_back(percentile(m.rtt, 50));
            s.cpu_us.push_back(m.cpu_us);
            s.scheduled.push_back(m.scheduled);
        }
        std::fprintf(stderr, "gecko_lockstep_bench --alone: run %d of %d done\n", run + 1, options.reps);
    }
    pin(::getpid(), spread);
    if (peer) pin(iceoryx::peer().pid(), spread);
    report(options, pooled, CPU_COUNT(&spread), first_allowed_cpu());
}

}  // namespace lockstep
