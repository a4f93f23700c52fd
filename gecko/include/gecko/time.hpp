#pragma once
/// @file time.hpp
/// Clocks and a loop-rate helper.

#include <chrono>
#include <cstdint>

namespace gecko {

/// Wall-clock time in nanoseconds since the Unix epoch. This is what message
/// headers carry, so that latency can be computed across processes and hosts.
std::int64_t now_ns() noexcept;

/// Monotonic time in nanoseconds (for measuring intervals).
std::int64_t steady_ns() noexcept;

/// Keeps a loop at a fixed frequency without drift: each deadline is the
/// previous deadline plus the period, not "now plus the period". If a cycle
/// overruns by more than a whole period, the schedule restarts from now
/// rather than bursting to catch up.
///
/// **Example**:
/// ```
/// gecko::Rate rate(100.0);  // Hz
/// while (gecko::ok()) { work(); rate.sleep(); }
/// ```
class Rate {
public:
    explicit Rate(double hz);
    /// Sleeps until the next deadline. Returns false if the deadline had
    /// already passed (the cycle overran).
    bool sleep();
    /// Restarts the schedule from now.
    void reset();
    std::chrono::nanoseconds period() const noexcept { return period_; }
    /// Number of cycles that overran since construction.
    std::uint64_t overruns() const noexcept { return overruns_; }

private:
    std::chrono::nanoseconds period_;
    std::chrono::steady_clock::time_point next_;
    std::uint64_t overruns_ = 0;
};

}  // namespace gecko
