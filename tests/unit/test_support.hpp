// Small fixtures shared by the unit tests.
#pragma once

#include <gecko/gecko.hpp>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace test {

/// A node with discovery off: unit tests give endpoints by hand.
inline gecko::Node make_node(const std::string& name) {
    gecko::NodeOptions options;
    options.key = "unit";
    options.name = name;
    options.discovery = false;
    return gecko::Node(options);
}

/// A fresh inproc endpoint name, unique within the process.
inline std::string unique_inproc(const std::string& what) {
    static std::atomic<int> counter{0};
    return "inproc://" + what + "-" + std::to_string(counter++);
}

/// Collects Gecko's log lines ("who: message") while it lives, instead of stderr.
class LogCapture {
public:
    LogCapture() {
        gecko::set_log_sink([this](gecko::LogLevel, std::string_view who, std::string_view message) {
            std::lock_guard<std::mutex> lock(mutex_);
            lines_.push_back(std::string(who) + ": " + std::string(message));
        });
    }
    ~LogCapture() { gecko::set_log_sink({}); }
    LogCapture(const LogCapture&) = delete;
    LogCapture& operator=(const LogCapture&) = delete;

    /// Lines that contain `text`.
    std::size_t count(std::string_view text) const {
        std::lock_guard<std::mutex> lock(mutex_);
        return static_cast<std::size_t>(std::count_if(lines_.begin(), lines_.end(), [&](const std::string& line) {
            return line.find(text) != std::string::npos;
        }));
    }
    std::vector<std::string> lines() const {
        std::lock_guard<std::mutex> lock(mutex_);
        return lines_;
    }

private:
    mutable std::mutex mutex_;
    std::vector<std::string> lines_;
};

}  // namespace test
