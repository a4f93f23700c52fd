// SPDX-License-Identifier: Apache-2.0
// gecko_fault_victim: the node that tests/faults attacks, in a process of its
// own so that its CPU time, memory and log lines are its own to measure.
//
//   gecko_fault_victim sub   --topic T [--depth N] [--max-publishers N] [--report-ms MS]
//   gecko_fault_victim serve --service S
//   gecko_fault_victim pub   --topic T [--rate HZ] [--size BYTES]
//   gecko_fault_victim client --service S --timeout-ms MS     (one call, then "call ..." and exit)
//   plus the node's own flags (--key K --core ADDR --no-discovery --no-multicast ...).
//
// It prints "ready id=ID LOCATOR..." once its entity exists, then reads
// commands on stdin, one a line, and answers each with one line:
//   connect LOC   -> "connected"            (Node::connect: a link discovery did not make)
//   stats         -> "stats key=value ..."  (the entity's counters and the process's figures)
//   quit          -> exits 0
// `sub` receives gecko.msgs.Bytes on a thread of its own all along; with
// --report-ms it also prints a stats line by itself every MS milliseconds
// (tests that cannot talk to its stdin, such as the netns script).
#include <gecko/gecko.hpp>
#include <gecko/msgs/std.hpp>

#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

struct Args {
    std::string role, topic = "victim", service = "victim";
    long depth = 16, max_publishers = 1024, report_ms = 0, timeout_ms = 5000, size = 8;
    double rate = 200;
};

Args parse(int argc, char** argv) {
    Args a;
    if (argc > 1) a.role = argv[1];
    for (int i = 2; i + 1 < argc; ++i) {
        const std::string k = argv[i];
        if (k == "--topic") a.topic = argv[++i];
        else if (k == "--service") a.service = argv[++i];
        else if (k == "--depth") a.depth = std::atol(argv[++i]);
        else if (k == "--max-publishers") a.max_publishers = std::atol(argv[++i]);
        else if (k == "--report-ms") a.report_ms = std::atol(argv[++i]);
        else if (k == "--timeout-ms") a.timeout_ms = std::atol(argv[++i]);
        else if (k == "--rate") a.rate = std::atof(argv[++i]);
        else if (k == "--size") a.size = std::atol(argv[++i]);
    }
    return a;
}

std::mutex out_mutex;
void say(const std::string& line) {
    std::lock_guard<std::mutex> lock(out_mutex);
    std::fputs((line + "\n").c_str(), stdout);
    std::fflush(stdout);
}

// This process's CPU time, resident and peak resident memory.
std::string process_figures() {
    rusage ru{};
    ::getrusage(RUSAGE_SELF, &ru);
    const long cpu_ms = (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000 + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1000;
    long rss = 0, hwm = 0;
    std::ifstream status("/proc/self/status");
    for (std::string line; std::getline(status, line);) {
        if (line.rfind("VmRSS:", 0) == 0) rss = std::atol(line.c_str() + 6);
        if (line.rfind("VmHWM:", 0) == 0) hwm = std::atol(line.c_str() + 6);
    }
    return "cpu_ms=" + std::to_string(cpu_ms) + " rss_kb=" + std::to_string(rss) + " hwm_kb=" + std::to_string(hwm);
}

std::string u(std::uint64_t v) { return std::to_string(v); }

std::string subscriber_stats(const gecko::SubscriberStats& s, std::int64_t max_gap_ms, std::uint64_t last_value) {
    return "stats received=" + u(s.received) + " delivered=" + u(s.delivered) + " drops=" + u(s.drops) +
           " overwritten=" + u(s.overwritten) + " epochs=" + u(s.epochs) + " decode_errors=" + u(s.decode_errors) +
           " oversized=" + u(s.oversized) + " malformed=" + u(s.malformed) + " type_mismatches=" + u(s.type_mismatches) +
           " forgotten=" + u(s.publishers_forgotten) + " publishers=" + u(s.publishers.size()) +
           " max_gap_ms=" + std::to_string(max_gap_ms) + " last=" + u(last_value) + " " + process_figures();
}

// Reads commands until "quit" or end of input; `stats` says the entity's line.
template <class Stats, class Connect>
int serve_commands(Stats stats, Connect connect) {
    for (std::string line; std::getline(std::cin, line);) {
        if (line == "quit") return 0;
        if (line == "stats") {
            say(stats());
        } else if (line.rfind("connect ", 0) == 0) {
            connect(line.substr(8));
            say("connected");
        } else {
            say("unknown command '" + line + "'");
        }
    }
    return 0;
}

int run_sub(gecko::Node& node, const Args& a) {
    gecko::SubscriberOptions so;
    so.depth = static_cast<std::size_t>(a.depth);
    so.max_publishers = static_cast<std::size_t>(a.max_publishers);
    auto sub = node.subscriber<gecko::msgs::Bytes>(a.topic, so);
    std::string ready = "ready id=" + u(sub.raw().id());
    for (const auto& l : node.locators()) ready += " " + l;
    say(ready);

    // Receives all along; the longest silence between two messages (after the
    // first) is what a partition test looks at.
    std::atomic<bool> stop{false};
    std::atomic<std::int64_t> max_gap_ms{0};
    std::atomic<std::uint64_t> last_value{0};
    std::thread reader([&] {
        Clock::time_point last{};
        while (!stop && gecko::ok()) {
            auto m = sub.receive(std::chrono::milliseconds(50));
            if (!m) continue;
            const auto now = Clock::now();
            if (last != Clock::time_point{}) {
                const auto gap = std::chrono::duration_cast<std::chrono::milliseconds>(now - last).count();
                if (gap > max_gap_ms) max_gap_ms = gap;
            }
            last = now;
            std::uint64_t v = 0;
            for (std::size_t i = 0; i < m->data.size() && i < 8; ++i) v |= std::uint64_t{m->data[i]} << (8 * i);
            last_value = v;
        }
    });
    std::thread reporter;
    if (a.report_ms > 0)
        reporter = std::thread([&] {
            while (!stop && gecko::ok()) {
                std::this_thread::sleep_for(std::chrono::milliseconds(a.report_ms));  // the report's period, not a wait for an event
                say(subscriber_stats(sub.stats(), max_gap_ms, last_value));
            }
        });
    const int rc = serve_commands([&] { return subscriber_stats(sub.stats(), max_gap_ms, last_value); },
                                  [&](const std::string& l) { node.connect(l); });
    stop = true;
    reader.join();
    if (reporter.joinable()) reporter.join();
    return rc;
}

int run_serve(gecko::Node& node, const Args& a) {
    auto server = node.service<gecko::msgs::Bytes, gecko::msgs::Bytes>(
        a.service, [](const gecko::msgs::Bytes& request) { return request; });
    std::string ready = "ready id=" + u(server.raw().id());
    for (const auto& l : node.locators()) ready += " " + l;
    say(ready);
    node.spin_in_background();
    return serve_commands(
        [&] { return "stats requests=" + u(server.requests()) + " rejected=" + u(server.rejected()) + " " + process_figures(); },
        [&](const std::string& l) { node.connect(l); });
}

int run_pub(gecko::Node& node, const Args& a) {
    auto pub = node.publisher<gecko::msgs::Bytes>(a.topic);
    std::string ready = "ready id=" + u(pub.raw().id());
    for (const auto& l : node.locators()) ready += " " + l;
    say(ready);
    std::atomic<bool> stop{false};
    std::thread writer([&] {
        gecko::Rate rate(a.rate);
        // The message's first 8 bytes are its number; the rest is filler.
        gecko::msgs::Bytes m;
        m.data.assign(static_cast<std::size_t>(std::max(8L, a.size)), 0x5a);
        for (std::uint64_t i = 1; !stop && gecko::ok(); ++i) {
            for (int b = 0; b < 8; ++b) m.data[static_cast<std::size_t>(b)] = static_cast<std::uint8_t>(i >> (8 * b));
            pub.publish(m);
            rate.sleep();
        }
    });
    const int rc = serve_commands(
        [&] {
            const auto s = pub.stats();
            return "stats sent=" + u(s.messages) + " dropped=" + u(s.dropped) + " subscribers=" + u(s.subscribers) + " " +
                   process_figures();
        },
                                  [&](const std::string& l) { node.connect(l); });
    stop = true;
    writer.join();
    return rc;
}

int run_client(gecko::Node& node, const Args& a) {
    auto client = node.client<gecko::msgs::Bytes, gecko::msgs::Bytes>(a.service);
    say("ready id=0");
    const auto start = Clock::now();
    std::string outcome = "ok";
    try {
        (void)client.call(gecko::msgs::Bytes{}, std::chrono::milliseconds(a.timeout_ms));
    } catch (const gecko::Error& e) {
        outcome = std::string(gecko::to_string(e.code()));
    }
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
    say("call " + outcome + " ms=" + std::to_string(ms));
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    gecko::install_signal_handlers();
    const Args a = parse(argc, argv);
    // The node's own flags go to from_args(); ours (the role and its options) do not.
    std::vector<const char*> node_args{argv[0]};
    for (int i = 2; i < argc; ++i) {
        const std::string k = argv[i];
        const bool ours = k == "--topic" || k == "--service" || k == "--depth" || k == "--max-publishers" ||
                          k == "--report-ms" || k == "--timeout-ms" || k == "--rate" || k == "--size";
        if (ours && i + 1 < argc) {
            ++i;
            continue;
        }
        node_args.push_back(argv[i]);
    }
    auto options = gecko::NodeOptions::from_args(static_cast<int>(node_args.size()), node_args.data(), "victim_" + a.role);
    try {
        gecko::Node node(options);
        if (a.role == "sub") return run_sub(node, a);
        if (a.role == "serve") return run_serve(node, a);
        if (a.role == "pub") return run_pub(node, a);
        if (a.role == "client") return run_client(node, a);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "gecko_fault_victim: %s\n", e.what());
        return 1;
    }
    std::fprintf(stderr, "usage: gecko_fault_victim sub|serve|pub|client [options]\n");
    return 2;
}
