#pragma once
/// @file log.hpp
/// Levelled logging to stderr, each line prefixed with a time, level and the
/// node name: `12:03:04.512 WARN  [imu_driver] ...`. The threshold comes from
/// `GECKO_LOG` (debug, info, warn, error, off) and defaults to info.
///
/// Gecko logs from its own threads too, but never while holding one of its
/// locks, and calls the sink (set_log_sink) outside its own line lock: a sink
/// may publish the line on a Gecko topic.

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

namespace gecko {

enum class LogLevel { debug = 0, info = 1, warn = 2, error = 3, off = 4 };

/// Sets the process-wide threshold (overrides GECKO_LOG).
void set_log_level(LogLevel level) noexcept;
/// Returns the current threshold.
LogLevel log_level() noexcept;
/// Parses "debug"/"info"/"warn"/"error"/"off"; nullopt for anything else.
std::optional<LogLevel> parse_log_level(std::string_view text) noexcept;

/// Writes one line to stderr (or to the sink below) if `level` passes the
/// threshold. Thread-safe: lines from several threads never interleave.
void log(LogLevel level, std::string_view who, std::string_view message);

/// Receives every line that passes the threshold instead of stderr: route
/// Gecko's logs into your own logging. Called on the thread that logs, one line
/// at a time, with no Gecko lock held; a line the sink itself logs (directly
/// or by publishing) goes to stderr instead of back into the sink. An empty
/// sink restores stderr.
using LogSink = std::function<void(LogLevel level, std::string_view who, std::string_view message)>;
void set_log_sink(LogSink sink);

/// A logger bound to a name (a node's name, "geckocore", ...).
class Logger {
public:
    explicit Logger(std::string name = "gecko") : name_(std::move(name)) {}
    void debug(std::string_view m) const { log(LogLevel::debug, name_, m); }
    void info(std::string_view m) const { log(LogLevel::info, name_, m); }
    void warn(std::string_view m) const { log(LogLevel::warn, name_, m); }
    void error(std::string_view m) const { log(LogLevel::error, name_, m); }
    void log_at(LogLevel level, std::string_view m) const { log(level, name_, m); }
    const std::string& name() const noexcept { return name_; }

private:
    std::string name_;
};

/// Keeps a flood of one kind of line from drowning the log: the first line of
/// each *reason* (a short constant such as "malformed frame", not the line's
/// text) passes, then at most one per `period`, and the next line that passes
/// says how many were held back. flush() reports reasons that went quiet with
/// lines still held back. Thread-safe.
class LogLimiter {
public:
    using Clock = std::chrono::steady_clock;
    explicit LogLimiter(std::chrono::milliseconds period = std::chrono::seconds(10)) : period_(period) {}

    /// Whether a line of `reason` may be logged now. When it may and lines were
    /// held back since the last one, `note` gets " (N more like this in the last S s)".
    bool admit(std::string_view reason, Clock::time_point now, std::string* note = nullptr);
    /// Lines of `reason` held back since it was last let through.
    std::uint64_t held_back(std::string_view reason) const;
    /// Calls `emit(reason, held back)` for each reason whose last line is older
    /// than a period and that has lines held back, and resets it.
    void flush(Clock::time_point now, const std::function<void(const std::string& reason, std::uint64_t held)>& emit);

private:
    struct State {
        Clock::time_point last{};
        std::uint64_t held = 0;
    };
    std::chrono::milliseconds period_;
    mutable std::mutex mutex_;
    std::map<std::string, State, std::less<>> states_;
};

}  // namespace gecko
