// SPDX-License-Identifier: Apache-2.0
// gecko hz TOPIC: the rate of a topic as this subscriber sees it.
#include <cmath>
#include <cstdio>

#include "cli.hpp"
#include "commands.hpp"
#include "format.hpp"
#include "sampling.hpp"

namespace gecko::tools {

int run_hz(const Args& args) {
    Connection connection("gecko_hz");
    Sampling sampling;
    long window = 100;
    Parser parser("hz", "TOPIC [options]",
                  "Measures the message rate of TOPIC from the arrival times of the last --window\n"
                  "messages: rate, mean, min and max period and its standard deviation, printed every\n"
                  "second and once more at the end. Counts messages of any type (unless --type), and\n"
                  "waits for the topic if it has no publisher yet.");
    parser.positional("TOPIC", "the topic to measure", sampling.topic);
    add_sampling_options(parser, sampling, window);
    parser.connection(connection);
    if (!parser.parse(args)) return exit_ok;
    sampling.window = static_cast<std::size_t>(window);

    sampling.report = [&](const std::deque<Sample>& w, std::uint64_t total, std::uint64_t fresh, bool final) {
        if (report_too_few(sampling.topic, w, total, fresh, final)) return;
        const char* prefix = final ? "final: " : "";
        double sum = 0, min = HUGE_VAL, max = 0;
        for (std::size_t i = 1; i < w.size(); ++i) {
            const double period = static_cast<double>(w[i].time_ns - w[i - 1].time_ns);
            sum += period;
            min = std::min(min, period);
            max = std::max(max, period);
        }
        const double n = static_cast<double>(w.size() - 1);
        const double mean = sum / n;
        double var = 0;
        for (std::size_t i = 1; i < w.size(); ++i) {
            const double d = static_cast<double>(w[i].time_ns - w[i - 1].time_ns) - mean;
            var += d * d;
        }
        const double stddev = std::sqrt(var / n);
        std::printf("%s%s: %.2f Hz  period mean %s  min %s  max %s  std dev %s  (last %zu of %llu messages)\n", prefix,
                    sampling.topic.c_str(), mean > 0 ? 1e9 / mean : 0.0, format_ns(mean).c_str(), format_ns(min).c_str(),
                    format_ns(max).c_str(), format_ns(stddev).c_str(), w.size(), static_cast<unsigned long long>(total));
    };
    return run_sampling("hz", connection, sampling);
}

}  // namespace gecko::tools
