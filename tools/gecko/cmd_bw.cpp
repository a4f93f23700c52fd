// SPDX-License-Identifier: Apache-2.0
// gecko bw TOPIC: the bandwidth of a topic as this subscriber sees it.
#include <algorithm>
#include <cstdio>

#include "cli.hpp"
#include "commands.hpp"
#include "format.hpp"
#include "sampling.hpp"

namespace gecko::tools {

int run_bw(const Args& args) {
    Connection connection("gecko_bw");
    Sampling sampling;
    long window = 100;
    Parser parser("bw", "TOPIC [options]",
                  "Measures the bandwidth of TOPIC (bytes on the wire, after any compression) over the\n"
                  "last --window messages: bytes per second and mean, min and max message size, printed\n"
                  "every second and once more at the end. Counts messages of any type (unless --type),\n"
                  "and waits for the topic if it has no publisher yet.");
    parser.positional("TOPIC", "the topic to measure", sampling.topic);
    add_sampling_options(parser, sampling, window);
    parser.connection(connection);
    if (!parser.parse(args)) return exit_ok;
    sampling.window = static_cast<std::size_t>(window);

    sampling.report = [&](const std::deque<Sample>& w, std::uint64_t total, std::uint64_t fresh, bool final) {
        if (report_too_few(sampling.topic, w, total, fresh, final)) return;
        const char* prefix = final ? "final: " : "";
        double sum = 0, after_first = 0;
        std::size_t min = SIZE_MAX, max = 0;
        for (std::size_t i = 0; i < w.size(); ++i) {
            sum += static_cast<double>(w[i].wire_size);
            if (i > 0) after_first += static_cast<double>(w[i].wire_size);
            min = std::min(min, w[i].wire_size);
            max = std::max(max, w[i].wire_size);
        }
        const double span_s = static_cast<double>(w.back().time_ns - w.front().time_ns) / 1e9;
        const double rate = span_s > 0 ? after_first / span_s : 0;
        std::printf("%s%s: %s/s  mean %s  min %s  max %s  (last %zu of %llu messages)\n", prefix, sampling.topic.c_str(),
                    format_bytes(rate).c_str(), format_bytes(sum / static_cast<double>(w.size())).c_str(),
                    format_bytes(static_cast<double>(min)).c_str(), format_bytes(static_cast<double>(max)).c_str(),
                    w.size(), static_cast<unsigned long long>(total));
    };
    return run_sampling("bw", connection, sampling);
}

}  // namespace gecko::tools
