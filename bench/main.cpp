// gecko_bench: Gecko side by side with raw ZeroMQ on the same transport, in
// the same run. See docs/BENCHMARKS.md for the method and the figures.

#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <ctime>
#include <iostream>
#include <string>

#include <zmq.h>

#include <gecko/log.hpp>

#include "common.hpp"

#ifndef GECKO_BENCH_BUILD_TYPE
#define GECKO_BENCH_BUILD_TYPE "unknown"
#endif

namespace {

void usage(std::FILE* out) {
    std::fputs(
        "usage: gecko_bench [--quick] [--only latency|throughput|codec] [--transport ipc|tcp]\n"
        "                   [--size BYTES] [--reps N] [--markdown]\n"
        "\n"
        "Measures Gecko and raw ZeroMQ side by side on the same transport and prints\n"
        "one table per section with the gecko/raw ratio per row.\n"
        "\n"
        "  --quick         few iterations (a smoke run, figures are rough)\n"
        "  --only S        run one section: latency, throughput or codec\n"
        "  --transport T   only ipc or only tcp (latency and throughput)\n"
        "  --size BYTES    only the latency/throughput rows of this payload size\n"
        "  --reps N        runs per row and side, in rotating order, pooled (default 3, --quick 1)\n"
        "  --markdown      print the tables as Markdown (for docs/BENCHMARKS.md)\n"
        "\n"
        "GECKO_BENCH_VERBOSE=1 also prints, per latency run, the echoing process's\n"
        "CPU time, minor page faults and context switches per echo (on stderr).\n"
        "\n"
        "Exits 2 if a side stalls (every receive has a timeout), 1 on bad usage.\n",
        out);
}


}  // namespace

int main(int argc, char** argv) {
    bench::Options options;
    bool reps_given = false;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc) {
                std::fprintf(stderr, "gecko_bench: %s needs a value\n", arg.c_str());
                std::exit(1);
            }
            return argv[++i];
        };
        if (arg == "--quick") {
            options.quick = true;
        } else if (arg == "--markdown") {
            options.markdown = true;
        } else if (arg == "--only") {
            const std::string s = value();
            options.latency = s == "latency";
            options.throughput = s == "throughput";
            options.codec = s == "codec";
            if (!options.latency && !options.throughput && !options.codec) {
                std::fprintf(stderr, "gecko_bench: --only takes latency, throughput or codec, not '%s'\n", s.c_str());
                return 1;
            }
        } else if (arg == "--transport") {
            const std::string s = value();
            options.ipc = s == "ipc";
            options.tcp = s == "tcp";
            if (!options.ipc && !options.tcp) {
                std::fprintf(stderr, "gecko_bench: --transport takes ipc or tcp, not '%s'\n", s.c_str());
                return 1;
            }
        } else if (arg == "--size") {
            options.only_size = std::strtoull(value().c_str(), nullptr, 10);
            if (options.only_size == 0) {
                std::fprintf(stderr, "gecko_bench: --size takes a payload size in bytes (e.g. 65536)\n");
                return 1;
            }
        } else if (arg == "--reps") {
            options.reps = std::atoi(value().c_str());
            reps_given = true;
            if (options.reps < 1 || options.reps > 100) {
                std::fprintf(stderr, "gecko_bench: --reps takes 1..100\n");
                return 1;
            }
        } else if (arg == "--help" || arg == "-h") {
            usage(stdout);
            return 0;
        } else {
            std::fprintf(stderr, "gecko_bench: unknown option '%s'\n", arg.c_str());
            usage(stderr);
            return 1;
        }
    }
    if (options.quick && !reps_given) options.reps = 1;

    ::signal(SIGPIPE, SIG_IGN);
    gecko::set_log_level(gecko::LogLevel::warn);

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
        if (options.latency) bench::run_latency(options);
        if (options.throughput) bench::run_throughput(options);
        if (options.codec) bench::run_codec(options);
    } catch (const std::exception& e) {
        bench::kill_children();
        std::fprintf(stderr, "gecko_bench: FAILED: %s\n", e.what());
        return 2;
    }
    return 0;
}
