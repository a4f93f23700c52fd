#include "gecko/log.hpp"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <mutex>

namespace gecko {
namespace {

LogLevel level_from_env() noexcept {
    const char* env = std::getenv("GECKO_LOG");
    return env ? parse_log_level(env) : LogLevel::info;
}

std::atomic<int>& threshold() noexcept {
    static std::atomic<int> value{static_cast<int>(level_from_env())};
    return value;
}

const char* level_name(LogLevel level) noexcept {
    switch (level) {
        case LogLevel::debug: return "DEBUG";
        case LogLevel::info: return "INFO ";
        case LogLevel::warn: return "WARN ";
        case LogLevel::error: return "ERROR";
        case LogLevel::off: return "OFF  ";
    }
    return "?";
}

std::mutex& line_mutex() {
    static std::mutex mutex;
    return mutex;
}

LogSink& sink() {
    static LogSink value;
    return value;
}

}  // namespace

void set_log_sink(LogSink new_sink) {
    std::lock_guard<std::mutex> lock(line_mutex());
    sink() = std::move(new_sink);
}

void set_log_level(LogLevel level) noexcept { threshold().store(static_cast<int>(level)); }

LogLevel log_level() noexcept { return static_cast<LogLevel>(threshold().load()); }

LogLevel parse_log_level(std::string_view text) noexcept {
    if (text == "debug") return LogLevel::debug;
    if (text == "warn" || text == "warning") return LogLevel::warn;
    if (text == "error") return LogLevel::error;
    if (text == "off" || text == "none") return LogLevel::off;
    return LogLevel::info;
}

void log(LogLevel level, std::string_view who, std::string_view message) {
    if (level == LogLevel::off || static_cast<int>(level) < threshold().load(std::memory_order_relaxed)) return;
    std::lock_guard<std::mutex> lock(line_mutex());
    if (sink()) {
        sink()(level, who, message);
        return;
    }
    using namespace std::chrono;
    const auto now = system_clock::now();
    const std::time_t secs = system_clock::to_time_t(now);
    const auto millis = duration_cast<milliseconds>(now.time_since_epoch()).count() % 1000;
    std::tm tm{};
    localtime_r(&secs, &tm);
    std::fprintf(stderr, "%02d:%02d:%02d.%03d %s [%.*s] %.*s\n", tm.tm_hour, tm.tm_min, tm.tm_sec,
                 static_cast<int>(millis), level_name(level), static_cast<int>(who.size()), who.data(),
                 static_cast<int>(message.size()), message.data());
}

}  // namespace gecko
