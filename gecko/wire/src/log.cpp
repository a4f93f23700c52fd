#include "gecko/log.hpp"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <memory>

namespace gecko {
namespace {

LogLevel level_from_env() noexcept {
    const char* env = std::getenv("GECKO_LOG");
    if (!env || !*env) return LogLevel::info;
    if (const auto level = parse_log_level(env)) return *level;
    std::fprintf(stderr, "gecko: GECKO_LOG='%s' is not one of debug, info, warn, error, off; using info\n", env);
    return LogLevel::info;
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

// Guards the sink pointer and stderr lines; never held while a sink runs.
std::mutex& line_mutex() {
    static std::mutex mutex;
    return mutex;
}

std::shared_ptr<const LogSink>& sink() {
    static std::shared_ptr<const LogSink> value;
    return value;
}

thread_local bool in_sink = false;  // a sink that logs: its lines go to stderr

void write_stderr(LogLevel level, std::string_view who, std::string_view message) {
    using namespace std::chrono;
    const auto now = system_clock::now();
    const std::time_t secs = system_clock::to_time_t(now);
    const auto millis = duration_cast<milliseconds>(now.time_since_epoch()).count() % 1000;
    std::tm tm{};
    localtime_r(&secs, &tm);
    std::lock_guard<std::mutex> lock(line_mutex());
    std::fprintf(stderr, "%02d:%02d:%02d.%03d %s [%.*s] %.*s\n", tm.tm_hour, tm.tm_min, tm.tm_sec,
                 static_cast<int>(millis), level_name(level), static_cast<int>(who.size()), who.data(),
                 static_cast<int>(message.size()), message.data());
}

}  // namespace

void set_log_sink(LogSink new_sink) {
    auto shared = new_sink ? std::make_shared<const LogSink>(std::move(new_sink)) : nullptr;
    std::lock_guard<std::mutex> lock(line_mutex());
    sink() = std::move(shared);
}

void set_log_level(LogLevel level) noexcept { threshold().store(static_cast<int>(level)); }

LogLevel log_level() noexcept { return static_cast<LogLevel>(threshold().load()); }

std::optional<LogLevel> parse_log_level(std::string_view text) noexcept {
    if (text == "debug") return LogLevel::debug;
    if (text == "info") return LogLevel::info;
    if (text == "warn" || text == "warning") return LogLevel::warn;
    if (text == "error") return LogLevel::error;
    if (text == "off" || text == "none") return LogLevel::off;
    return std::nullopt;
}

void log(LogLevel level, std::string_view who, std::string_view message) {
    if (level == LogLevel::off || static_cast<int>(level) < threshold().load(std::memory_order_relaxed)) return;
    std::shared_ptr<const LogSink> current;
    if (!in_sink) {
        std::lock_guard<std::mutex> lock(line_mutex());
        current = sink();
    }
    if (!current) {
        write_stderr(level, who, message);
        return;
    }
    in_sink = true;
    try {
        (*current)(level, who, message);
    } catch (...) {
        in_sink = false;
        write_stderr(LogLevel::error, "gecko", "the log sink threw; this line was lost to it");
        write_stderr(level, who, message);
        return;
    }
    in_sink = false;
}

bool LogLimiter::admit(std::string_view reason, Clock::time_point now, std::string* note) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = states_.find(reason);
    if (it == states_.end()) it = states_.emplace(std::string(reason), State{}).first;
    State& s = it->second;
    if (s.last != Clock::time_point{} && now - s.last < period_) {
        ++s.held;
        return false;
    }
    if (note) {
        note->clear();
        if (s.held > 0) {
            const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(now - s.last).count();
            *note = " (" + std::to_string(s.held) + " more like this in the last " + std::to_string(seconds) + " s)";
        }
    }
    s.held = 0;
    s.last = now;
    return true;
}

std::uint64_t LogLimiter::held_back(std::string_view reason) const {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto it = states_.find(reason);
    return it == states_.end() ? 0 : it->second.held;
}

void LogLimiter::flush(Clock::time_point now, const std::function<void(const std::string&, std::uint64_t)>& emit) {
    std::vector<std::pair<std::string, std::uint64_t>> due;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        for (auto& [reason, s] : states_) {
            if (s.held > 0 && now - s.last >= period_) {
                due.emplace_back(reason, s.held);
                s.held = 0;
                s.last = now;
            }
        }
    }
    for (const auto& [reason, held] : due) emit(reason, held);
}

}  // namespace gecko
