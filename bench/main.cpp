// gecko_bench: Gecko side by side with raw ZeroMQ on the same transport, in
// the same run. See docs/BENCHMARKS.md for the method and the figures.

#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <ctime>
#include <iostream>
#include <memory>
#include <string>

#include <zmq.h>

#include <gecko/log.hpp>
#include <gecko/options.hpp>

#include "common.hpp"
#include "iceoryx.hpp"

#ifndef GECKO_BENCH_BUILD_TYPE
#define GECKO_BENCH_BUILD_TYPE "unknown"
#endif

int main(int argc, char** argv) {
    bench::Options options;
    std::string only, transport;
    long long reps = 0;
    gecko::OptionParser args("gecko_bench",
                             "measures Gecko and raw ZeroMQ side by side on the same transport and prints one table per "
                             "section with the gecko/raw ratio per row (see docs/BENCHMARKS.md). GECKO_BENCH_VERBOSE=1 "
                             "also prints, per latency run, the echoing process's CPU time, minor page faults and context "
                             "switches per echo. Exits 2 if a side stalls (every receive has a timeout), 2 on bad usage");
    args.flag("--quick", options.quick, "few iterations (a smoke run, figures are rough)");
    args.text("--only", only, "SECTION", "run one section: latency, throughput, fanout, codec or session",
              [](const std::string& v) {
                  return v == "latency" || v == "throughput" || v == "fanout" || v == "codec" || v == "session"
                             ? ""
                             : "latency, throughput, fanout, codec or session";
              });
    args.text("--transport", transport, "ipc|tcp", "one transport only (latency, throughput, session)",
              [](const std::string& v) { return v == "ipc" || v == "tcp" ? "" : "ipc or tcp"; });
    args.integer("--size", options.only_size, 8, 1 << 30, "BYTES", "only the latency/throughput rows of this payload size");
    args.integer("--reps", reps, 1, 100, "N", "runs per row and side, in rotating order, pooled (default 3, --quick 1)");
    args.flag("--markdown", options.markdown, "print the tables as Markdown (for docs/BENCHMARKS.md)");
    long long send_queue = 0;
    args.integer("--send-queue", send_queue, 1, 1000000, "N",
                 "throughput: the publisher's send queue in messages, raw ZMQ_SNDHWM = gecko send_queue (default 1000, "
                 "Gecko's default)");
    bool without_same_host = false;
    args.flag("--without-shm", without_same_host,
              "latency and throughput: leave Gecko over shared memory and iceoryx out of the ipc rows' rotation");
    args.parse_or_exit(argc, argv);
    if (!only.empty()) {
        options.latency = only == "latency";
        options.throughput = only == "throughput";
        options.fanout = only == "fanout";
        options.codec = only == "codec";
        options.session = only == "session";
    }
    if (!transport.empty()) {
        options.ipc = transport == "ipc";
        options.tcp = transport == "tcp";
    }
    const bool reps_given = reps != 0;
    if (reps_given) options.reps = static_cast<int>(reps);
    if (send_queue != 0) options.send_queue = static_cast<int>(send_queue);
    if (options.quick && !reps_given) options.reps = 1;
    options.same_host = !without_same_host;

    ::signal(SIGPIPE, SIG_IGN);
    gecko::set_log_level(gecko::LogLevel::warn);
    try {
        // First, before anything forks: our own RouDi, and a supervisor process that stops it after the run.
        bench::iceoryx::start((options.latency || options.throughput || options.fanout) && options.ipc &&
                              options.same_host);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "gecko_bench: FAILED: %s\n", e.what());
        return 2;
    }

    int major, minor, patch;
    zmq_version(&major, &minor, &patch);
    char date[64];
    const std::time_t now = std::time(nullptr);
    std::strftime(date, sizeof date, "%Y-%m-%d %H:%M %Z", std::localtime(&now));
    const std::string machine = bench::describe_machine();
    const std::string build = std::string(GECKO_BENCH_BUILD_TYPE) + " build, ZeroMQ " + std::to_string(major) + "." +
                              std::to_string(minor) + "." + std::to_string(patch) +
                              (options.quick ? ", --quick (rough figures)" : "");
    if (options.markdown) {
        std::cout << "Measured " << date << " on " << machine << "; " << build << ".\n\n";
    } else {
        std::cout << "gecko_bench  " << date << "\n  " << machine << "\n  " << build << "\n\n";
    }
    std::cout << std::flush;

    try {
        // The session section counts this process's threads and sockets: with iceoryx it runs in a
        // process forked now, before this one registers with RouDi (whose runtime adds both).
        std::unique_ptr<bench::Child> session;
        if (options.session && bench::iceoryx::available()) {
            session = std::make_unique<bench::Child>([&options](bench::Child& self) {
                ::alarm(0);  // waits for its turn as long as this process lives
                for (bench::PipeMsg m;;) {
                    if (self.receive(m, bench::milliseconds(1000)) && m.kind == bench::kDone) break;
                }
                bench::run_session(options);
                std::cout << std::flush;
                return 0;
            });
        }
        bench::iceoryx::start_peer([](const bench::PipeMsg& m, bench::Child& self) {
            if (m.kind == bench::iceoryx::kFirstCommand) {
                bench::latency_iceoryx_peer(m, self);
            } else {
                bench::throughput_iceoryx_peer(m, self);  // also the fan-out rows' subscribers
            }
        }, options.fanout ? bench::kMaxFanout : 1);
        if (options.latency) bench::run_latency(options);
        if (options.throughput) bench::run_throughput(options);
        if (options.fanout) bench::run_fanout(options);
        bench::iceoryx::stop_peer();
        if (options.codec) bench::run_codec(options);
        if (session) {
            session->send(bench::PipeMsg{bench::kDone});
            session->join(bench::milliseconds(600000), "session section");
        } else if (options.session) {
            bench::run_session(options);
        }
    } catch (const std::exception& e) {
        bench::kill_children();
        std::fprintf(stderr, "gecko_bench: FAILED: %s\n", e.what());
        return 2;
    }
    return 0;
}
