// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file sampling.hpp
/// What `gecko hz` and `gecko bw` share: subscribe to any topic, keep the
/// arrival time and size of the last N messages, report every second and
/// once more at the end.

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <string>

#include "cli.hpp"

namespace gecko::tools {

struct Sample {
    std::int64_t time_ns;   ///< when the subscriber took it from the transport (wall clock)
    std::size_t wire_size;  ///< bytes on the wire
};

struct Sampling {
    std::string topic;
    std::string type;                       ///< empty: any type
    long count = 0;                         ///< stop after this many messages (0: no limit)
    std::chrono::milliseconds duration{0};  ///< stop after this long (0: no limit)
    std::size_t window = 100;               ///< samples kept for the figures
    /// Called every second and once at the end (`final`), with the window and
    /// the number of messages received in all and since the previous call.
    std::function<void(const std::deque<Sample>& window, std::uint64_t total, std::uint64_t fresh, bool final)> report;
};

/// Adds --count, --duration, --window and --type to `parser`.
void add_sampling_options(Parser& parser, Sampling& sampling, long& window);

/// For a report: prints why there is nothing to measure yet ("no message
/// yet", "no new message in the last second", "one message so far") and
/// returns true, or returns false when the window holds enough to measure.
bool report_too_few(const std::string& topic, const std::deque<Sample>& window, std::uint64_t total,
                    std::uint64_t fresh, bool final);

/// Subscribes and samples until count, duration or Ctrl-C. Returns the exit code.
int run_sampling(const std::string& command, Connection& connection, Sampling& sampling);

}  // namespace gecko::tools
