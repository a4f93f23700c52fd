// Small fixtures shared by the unit tests.
#pragma once

#include <gecko/gecko.hpp>

#include <algorithm>
#include <chrono>
#include <thread>
#include <atomic>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace test {

/// A node with discovery off, offering `transports` ("inproc" by default:
/// the node's own subscribers hear its publishers through a link to itself;
/// "mem": the in-process queue transport). Unit tests link nodes by hand.
inline gecko::Node make_node(const std::string& name, std::vector<std::string> transports = {"inproc"}) {
    gecko::NodeOptions options;
    options.key = "unit";
    options.name = name;
    options.discovery = false;
    options.transports = std::move(transports);
    return gecko::Node(options);
}

/// Links `to` to `from`: `to`'s subscribers (and clients) hear `from`'s
/// publishers (and servers), on the first locator `from` offers.
inline void link(gecko::Node& from, gecko::Node& to) { to.connect(from.locators().front()); }
/// Links both ways (a service: requests go one way, replies the other).
inline void link_both(gecko::Node& a, gecko::Node& b) {
    link(a, b);
    link(b, a);
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
    /// Waits (bounded) until `n` lines contain `text`: Gecko writes its
    /// bad-input lines from the node's reactor, a moment after the fact.
    bool wait_for(std::string_view text, std::size_t n = 1,
                  std::chrono::milliseconds timeout = std::chrono::milliseconds(10000)) const {
        const auto deadline = std::chrono::steady_clock::now() + timeout;
        while (count(text) < n) {
            if (std::chrono::steady_clock::now() >= deadline) return false;
            std::this_thread::sleep_for(std::chrono::milliseconds(2));  // poll interval of a bounded wait
        }
        return true;
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
