// SPDX-License-Identifier: Apache-2.0
#pragma once
// What the bag commands share: parsing with gecko::OptionParser from the
// tool's argument vector, sizes and durations as typed, numbers as shown,
// and the progress line of a terminal.

#include <gecko/options.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gecko::bag::cli {

constexpr int exit_ok = 0;
constexpr int exit_failure = 1;
constexpr int exit_usage = 2;

/// Parses `args` (without the program name). Returns an exit code when the
/// command is done (--help printed: 0; a usage error printed: 2), else nullopt.
std::optional<int> parse(OptionParser& parser, const std::vector<std::string>& args);

/// "64M", "1G", "500k", "1048576" (bytes; k, M, G are powers of 1024). "" if fine, else why not.
std::string parse_size(const std::string& text, std::uint64_t& out);
/// "10s", "5m", "1h", "250ms", "1.5" (seconds). "" if fine, else why not.
std::string parse_duration(const std::string& text, std::chrono::nanoseconds& out);

std::string format_bytes(double bytes);      ///< "12.3 MiB"
std::string format_seconds(double seconds);  ///< "12.345 s", "2 min 3.0 s"
std::string format_rate(double per_second);  ///< "1.00 kHz", "30.0 Hz"
/// "2026-01-02 03:04:05.678 UTC" for ns since the Unix epoch.
std::string format_time(std::uint64_t unix_ns);

/// A line redrawn in place on a terminal (stderr), said at most every 200 ms; nothing elsewhere.
class ProgressLine {
public:
    ProgressLine();
    bool enabled() const noexcept { return enabled_; }
    /// Whether show() would show a line now: callers build it only then, not per message.
    bool due() const noexcept;
    /// Shows `text` if the last showing was long enough ago (or `force`).
    void show(const std::string& text, bool force = false);
    /// Ends the line (a newline) if anything was shown.
    void finish();

private:
    bool enabled_ = false;
    bool shown_ = false;
    std::chrono::steady_clock::time_point last_{};
};

}  // namespace gecko::bag::cli
