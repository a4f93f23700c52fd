#pragma once
/// @file log.hpp
/// Levelled logging to stderr, each line prefixed with a time, level and the
/// node name: `12:03:04.512 WARN  [imu_driver] ...`. The threshold comes from
/// `GECKO_LOG` (debug, info, warn, error, off) and defaults to info.

#include <functional>
#include <string>
#include <string_view>

namespace gecko {

enum class LogLevel { debug = 0, info = 1, warn = 2, error = 3, off = 4 };

/// Sets the process-wide threshold (overrides GECKO_LOG).
void set_log_level(LogLevel level) noexcept;
/// Returns the current threshold.
LogLevel log_level() noexcept;
/// Parses "debug"/"info"/"warn"/"error"/"off"; returns info for anything else.
LogLevel parse_log_level(std::string_view text) noexcept;

/// Writes one line to stderr (or to the sink below) if `level` passes the
/// threshold. Thread-safe: lines from several threads never interleave.
void log(LogLevel level, std::string_view who, std::string_view message);

/// Receives every line that passes the threshold instead of stderr: route
/// Gecko's logs into your own logging. Called with a lock held (one line at
/// a time): keep it short and do not log from it. An empty sink restores stderr.
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
    const std::string& name() const noexcept { return name_; }

private:
    std::string name_;
};

}  // namespace gecko
