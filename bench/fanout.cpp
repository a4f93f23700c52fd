// Fan-out: one publisher process → 1, 2, 4 and 8 subscriber processes over
// shared memory, Gecko shm next to iceoryx in the same run, in both wake
// regimes (every process free to use every CPU, and every process pinned to
// one, as `taskset -c 0` does). A camera has several consumers: what a
// publisher pays per message as they are added is the figure.
//
// The subscribers are the throughput section's (throughput_subscriber): Gecko's
// are fresh processes per run; iceoryx's are the iceoryx peer processes (one
// per subscriber, registered with RouDi once for the program), given fresh
// links per run.

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <thread>

#include "common.hpp"
#include "iceoryx.hpp"
#include "sides.hpp"

namespace bench {
namespace {

constexpr std::uint64_t kProbeTag = std::uint64_t{1} << 62;
constexpr milliseconds kSetupTimeout{10000};
constexpr int kSendHwm = 1000;  // gecko send_queue per subscriber ring, as in the throughput section
constexpr int kFanouts[] = {1, 2, 4, kMaxFanout};
constexpr int kWarmup = 64;  // large messages sent before the timed loop

struct Case {
    std::size_t size;
    std::uint64_t max_count;
    std::uint64_t quick_count;
};
const Case kCases[] = {{64, 2000000, 200000}, {1024 * 1024, 1000, 200}};

enum class Stack { gecko, iceoryx };
enum class Regime { spread, one_cpu };
const char* to_string(Stack s) { return s == Stack::gecko ? "gecko shm" : "iceoryx"; }
const char* to_string(Regime r) { return r == Regime::spread ? "spread" : "one CPU"; }

/// One run, or several summed.
struct Result {
    std::uint64_t sent = 0;
    std::int64_t send_ns = 0;
    std::uint64_t pub_cpu_us = 0;
    std::uint64_t received = 0;      ///< over every subscriber
    double per_sub_rate_sum = 0;     ///< Σ over subscribers and runs of received ÷ (last receive − first send)
    double min_sub_rate = 0;         ///< the slowest subscriber's, over the runs (0: none yet)
    std::uint64_t sub_cpu_us = 0, sub_cpu_msgs = 0;
    std::uint64_t gaps = 0, overwritten = 0, no_chunk = 0;
    int subscriber_runs = 0;         ///< subscribers × runs
};

Result run_once(Stack stack, Regime regime, int fanout, std::size_t size, std::uint64_t max_count, milliseconds duration) {
    static std::uint64_t run_id = 0;
    ++run_id;
    const bool iox = stack == Stack::iceoryx;
    const std::string what = std::string("fan-out ") + to_string(stack) + " " + fmt_size(size) + " to " +
                             std::to_string(fanout) + " (" + to_string(regime) + ")";
    const std::string endpoint = iox ? iceoryx::link_name("data", run_id) : make_endpoint(Transport::shm, "fanout");
    const cpu_set_t cpus = regime == Regime::one_cpu ? first_cpu() : initial_affinity();
    pin(::getpid(), cpus);

    std::vector<std::unique_ptr<Child>> fresh;
    std::vector<Child*> subs;
    for (int i = 0; i < fanout; ++i) {
        if (iox) {
            PipeMsg sink{iceoryx::kSink};
            sink.a = run_id;
            sink.b = size;
            iceoryx::peer(i).send(sink);
            subs.push_back(&iceoryx::peer(i));
        } else {
            fresh.push_back(std::make_unique<Child>(
                [&](Child& self) { return throughput_subscriber(Impl::gecko, endpoint, size, self); }));
            subs.push_back(fresh.back().get());
        }
    }
    for (Child* c : subs) {
        PipeMsg m;
        if (!c->receive(m, kSetupTimeout) || m.kind != kReady) throw Stall(what + ": a subscriber did not start");
        pin(c->pid(), cpus);
    }
    Result result;
    {
        SideOptions o;
        o.pub_endpoint = endpoint;
        o.send_hwm = kSendHwm;
        o.name = "bench-source";
        auto side = make_side(iox ? Impl::iceoryx : Impl::gecko, o);
        if (!side->wait_subscribers(static_cast<std::size_t>(fanout), kSetupTimeout))
            throw Stall(what + ": the subscribers never subscribed");
        // Probes until every subscriber has seen one (iceoryx says only whether there is a subscriber).
        std::vector<bool> probed(subs.size(), false);
        std::size_t seen = 0;
        const auto setup_deadline = Clock::now() + kSetupTimeout;
        for (std::uint64_t k = 0; seen < subs.size(); ++k) {
            if (Clock::now() > setup_deadline) throw Stall(what + ": not every subscriber saw a probe within 10 s");
            side->send(kProbeTag | k, 8);
            bool waited = false;  // a probe per ~2 ms: the first subscriber still unprobed is waited for
            for (std::size_t i = 0; i < subs.size(); ++i) {
                PipeMsg m;
                if (probed[i]) continue;
                const milliseconds wait(waited ? 0 : 2);
                waited = true;
                if (subs[i]->receive(m, wait)) {
                    if (m.kind != kProbe) throw Stall(what + ": unexpected message from a subscriber");
                    probed[i] = true;
                    ++seen;
                }
            }
        }
        // Warm-up: messages one byte short of the payload (subscribers count only the payload's size)
        // touch the chunks the timed loop will use, in every process: first-touch page faults (~3 ms
        // per MiB on the VM this was measured on) are not what a long-running camera stream pays.
        if (size > 4096)
            for (int w = 0; w < kWarmup; ++w) side->send(kProbeTag | (1u << 20) | static_cast<std::uint64_t>(w), size - 1);
        std::this_thread::sleep_for(milliseconds(20));  // the probes' tail drains
        const std::uint64_t cpu0 = thread_cpu_us();
        const std::int64_t t0 = mono_ns();
        const std::int64_t limit = t0 + std::chrono::duration_cast<std::chrono::nanoseconds>(duration).count();
        std::uint64_t n = 0;
        while (n < max_count) {
            side->send(++n, size);
            if (((n & 15) == 0 || size > 4096) && mono_ns() > limit) break;
        }
        const std::int64_t t1 = mono_ns();
        result.pub_cpu_us = thread_cpu_us() - cpu0;
        result.sent = n;
        result.send_ns = t1 - t0;
        result.no_chunk = side->send_failures();
        for (Child* c : subs) {
            PipeMsg done{kDone};
            done.a = n;
            c->send(done);
        }
        for (Child* c : subs) {
            PipeMsg m;
            if (!c->receive(m, milliseconds(40000)) || m.kind != kResult) throw Stall(what + ": a subscriber sent no result");
            const std::int64_t span = static_cast<std::int64_t>(m.b) - t0;
            const double rate = span > 0 ? static_cast<double>(m.a) * 1e9 / static_cast<double>(span) : 0.0;
            result.received += m.a;
            result.per_sub_rate_sum += rate;
            result.min_sub_rate = result.subscriber_runs == 0 ? rate : std::min(result.min_sub_rate, rate);
            ++result.subscriber_runs;
            result.gaps += m.c;
            result.overwritten += m.d;
            result.sub_cpu_us += m.code;
            result.sub_cpu_msgs += m.e;
        }
    }
    for (auto& f : fresh) f->join(milliseconds(10000), what);
    pin(::getpid(), initial_affinity());
    if (iox)
        for (int i = 0; i < fanout; ++i) pin(iceoryx::peer(i).pid(), initial_affinity());
    return result;
}

void add(Result& sum, const Result& r) {
    sum.min_sub_rate = sum.subscriber_runs == 0 ? r.min_sub_rate : std::min(sum.min_sub_rate, r.min_sub_rate);
    sum.sent += r.sent;
    sum.send_ns += r.send_ns;
    sum.pub_cpu_us += r.pub_cpu_us;
    sum.received += r.received;
    sum.per_sub_rate_sum += r.per_sub_rate_sum;
    sum.sub_cpu_us += r.sub_cpu_us;
    sum.sub_cpu_msgs += r.sub_cpu_msgs;
    sum.gaps += r.gaps;
    sum.overwritten += r.overwritten;
    sum.no_chunk += r.no_chunk;
    sum.subscriber_runs += r.subscriber_runs;
}

double mean_rate(const Result& r) { return r.subscriber_runs ? r.per_sub_rate_sum / r.subscriber_runs : 0.0; }
double pub_us_per_msg(const Result& r) { return r.sent ? static_cast<double>(r.pub_cpu_us) / static_cast<double>(r.sent) : NAN; }

std::string per_msg(double v) { return std::isnan(v) ? "-" : fmt(v, v < 10 ? 2 : (v < 100 ? 1 : 0)); }

}  // namespace

void run_fanout(const Options& options) {
    if (!options.ipc || !options.same_host) return;  // shared memory goes with the ipc rows
    Table table;
    table.title = "Fan-out on one host, shared memory: one publisher process → N subscriber processes, Gecko shm and "
                  "iceoryx in the same run, both wake regimes";
    table.header = {"regime", "payload", "N", "stack", "recv/s per sub (mean, slowest)", "sent/s", "lost",
                    "pub CPU µs/msg", "pub CPU vs N=1", "sub CPU µs/msg", "gecko / iceoryx recv/s", "target"};
    table.right = {false, true, true, false, true, true, false, true, true, true, true, false};
    const bool with_iceoryx = iceoryx::available() && iceoryx::peer_count() >= kMaxFanout;
    std::vector<Stack> stacks{Stack::gecko};
    if (with_iceoryx) stacks.push_back(Stack::iceoryx);
    int misses = 0;
    for (Regime regime : {Regime::spread, Regime::one_cpu}) {
        for (const Case& c : kCases) {
            if (options.only_size && c.size != options.only_size) continue;
            const std::uint64_t count = options.quick ? c.quick_count : c.max_count;
            const milliseconds duration(options.quick ? 300 : 1000);
            double pub_at_one[2] = {NAN, NAN};
            for (int fanout : kFanouts) {
                Result sum[2];
                for (int rep = 0; rep < options.reps; ++rep) {
                    // Alternating which stack goes first, run to run.
                    std::vector<Stack> order = stacks;
                    if (rep % 2) std::reverse(order.begin(), order.end());
                    for (Stack s : order) add(sum[static_cast<int>(s)], run_once(s, regime, fanout, c.size, count, duration));
                }
                for (Stack s : stacks) {
                    const Result& r = sum[static_cast<int>(s)];
                    const int k = static_cast<int>(s);
                    if (fanout == 1) pub_at_one[k] = pub_us_per_msg(r);
                    const double lost_share = r.sent ? 1.0 - static_cast<double>(r.received) /
                                                                 (static_cast<double>(r.sent) * fanout)
                                                     : 0.0;
                    std::string lost = fmt(100.0 * std::max(0.0, lost_share), 1) + " % (gaps " +
                                       fmt_count(static_cast<double>(r.gaps));
                    if (s == Stack::gecko) lost += ", overwr. " + fmt_count(static_cast<double>(r.overwritten));
                    if (s == Stack::iceoryx) lost += ", no chunk " + fmt_count(static_cast<double>(r.no_chunk));
                    lost += ")";
                    std::string versus = "", target = "";
                    if (s == Stack::gecko && with_iceoryx) {
                        const double ratio = mean_rate(r) / mean_rate(sum[1]);
                        versus = fmt(ratio, 2) + "×";
                        // The targets: 64 B ≥ 2× iceoryx delivered, 1 MiB ≥ 0.9×.
                        const double want = c.size <= 64 ? 2.0 : 0.9;
                        const bool ok = std::round(ratio * 100) >= want * 100;
                        misses += !ok;
                        target = (ok ? "ok (≥" : "MISS (≥") + fmt(want, 1) + "×)";
                    }
                    table.rows.push_back({to_string(regime), fmt_size(c.size), std::to_string(fanout), to_string(s),
                                          fmt_count(mean_rate(r)) + ", " + fmt_count(r.min_sub_rate),
                                          fmt_count(r.send_ns > 0 ? static_cast<double>(r.sent) * 1e9 /
                                                                        static_cast<double>(r.send_ns)
                                                                  : 0.0),
                                          lost, per_msg(pub_us_per_msg(r)),
                                          fmt(pub_us_per_msg(r) / pub_at_one[k], 2) + "×",
                                          per_msg(r.sub_cpu_msgs ? static_cast<double>(r.sub_cpu_us) /
                                                                       static_cast<double>(r.sub_cpu_msgs)
                                                                 : NAN),
                                          versus, target});
                }
                if (!options.markdown) {
                    std::fprintf(stderr, "  fan-out %s %s to %d: gecko %s/s per subscriber%s\n", to_string(regime),
                                 fmt_size(c.size).c_str(), fanout, fmt_count(mean_rate(sum[0])).c_str(),
                                 with_iceoryx ? (", iceoryx " + fmt_count(mean_rate(sum[1])) + "/s").c_str() : "");
                }
            }
        }
    }
    table.notes.push_back(
        "Each run: the publisher sends as fast as it can for " + std::string(options.quick ? "300 ms" : "1 s") +
        " (or the row's count), every subscriber counts what it receives; " + std::to_string(options.reps) +
        " run(s) per row, the stacks' order alternating. recv/s per sub = a subscriber's messages ÷ (its last receive − "
        "the first send), the mean over subscribers and runs, then the slowest. lost = 1 − received ÷ (sent × N). pub "
        "CPU = the publishing thread's CPU time ÷ messages sent; vs N=1 is how it grows with the subscribers (the issue "
        "asks that Gecko's grow no faster than iceoryx's). one CPU: the publisher and every subscriber pinned to the first "
        "CPU this program may use (sched_setaffinity, as taskset -c 0). Gecko: the throughput section's sides (loans, send queue " +
        std::to_string(kSendHwm) + " frames per subscriber ring). " +
        (with_iceoryx ? "iceoryx: " + std::to_string(kMaxFanout) + " peer processes, queue " +
                            std::to_string(iceoryx_queue(64)) + " (64 B) / " + std::to_string(iceoryx_queue(1 << 20)) +
                            " (1 MiB) per subscriber; " + iceoryx::roudi_note() + "."
                      : iceoryx::absent()) +
        " " + std::to_string(misses) + " row(s) miss the target.");
    table.print(options.markdown);
}

}  // namespace bench
