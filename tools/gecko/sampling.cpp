// SPDX-License-Identifier: Apache-2.0
#include "sampling.hpp"

#include <cstdio>

#include <gecko/node.hpp>
#include <gecko/signals.hpp>

#include "query.hpp"

namespace gecko::tools {

void add_sampling_options(Parser& parser, Sampling& sampling, long& window) {
    parser.option("--count", "N", "stop after N messages", sampling.count, 1, 1L << 40)
        .option("--duration", "DURATION", "stop after this long, e.g. 10 or 10s or 500ms",
                [&sampling](const std::string& v) { sampling.duration = parse_duration(v, "--duration"); })
        .option("--window", "N", "compute over the last N messages (default 100)", window, 2, 1000000)
        .option("--type", "NAME", "count only messages of this type (default: any type)", sampling.type);
}

int run_sampling(const std::string& command, Connection& connection, Sampling& s) {
    install_signal_handlers();
    const auto start = std::chrono::steady_clock::now();
    if (connection.node.discovery) glance_at_topic(connection, command, s.topic);  // says if it waits, and for what

    Node node(connection.node);
    SubscriberOptions options;
    options.type_name = s.type;  // empty: any type, announced as "*" (PROTOCOL.md §4)
    options.depth = 10000;  // only the arrival time matters; do not lose any to a slow printer
    auto subscriber = node.raw_subscriber(s.topic, options);

    std::deque<Sample> window;
    std::uint64_t total = 0, fresh = 0;
    auto next_report = std::chrono::steady_clock::now() + std::chrono::seconds(1);
    auto done = [&] {
        if (s.count > 0 && total >= static_cast<std::uint64_t>(s.count)) return true;
        return s.duration.count() > 0 && std::chrono::steady_clock::now() - start >= s.duration;
    };
    while (ok() && !done()) {
        auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(next_report - std::chrono::steady_clock::now());
        if (s.duration.count() > 0)
            wait = std::min(wait, std::chrono::duration_cast<std::chrono::milliseconds>(start + s.duration - std::chrono::steady_clock::now()));
        subscriber.receive(std::max(wait, std::chrono::milliseconds(0)), [&](const RawView& view) {
            window.push_back(Sample{view.info.receive_time_ns, view.info.wire_size});
            if (window.size() > s.window) window.pop_front();
            ++total;
            ++fresh;
        });
        if (std::chrono::steady_clock::now() >= next_report) {
            s.report(window, total, fresh, false);
            fresh = 0;
            next_report += std::chrono::seconds(1);
        }
    }
    s.report(window, total, fresh, true);
    return exit_ok;
}

bool report_too_few(const std::string& topic, const std::deque<Sample>& window, std::uint64_t total,
                    std::uint64_t fresh, bool final) {
    if (window.size() >= 2 && (fresh > 0 || final)) return false;
    std::printf("%s%s: %s\n", final ? "final: " : "", topic.c_str(),
                total == 0 ? "no message yet" : fresh == 0 ? "no new message in the last second" : "one message so far");
    return true;
}

}  // namespace gecko::tools
