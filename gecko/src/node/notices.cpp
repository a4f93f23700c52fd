// SPDX-License-Identifier: Apache-2.0
#include "node/notices.hpp"

namespace gecko::detail {

void Notices::add(LogLevel level, std::string reason, std::string message) {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        if (lines_.size() >= 256) return;  // the limiter would hold them back anyway
        lines_.push_back(Line{level, std::move(reason), std::move(message)});
    }
    if (wake_) wake_();
}

void Notices::flush() {
    std::vector<Line> lines;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        lines.swap(lines_);
    }
    const auto now = LogLimiter::Clock::now();
    for (const auto& line : lines) {
        std::string note;
        if (limiter_.admit(line.reason, now, &note)) logger_.log_at(line.level, line.message + note);
    }
    limiter_.flush(now, [&](const std::string& reason, std::uint64_t held) {
        logger_.info(std::to_string(held) + " more '" + reason + "' lines held back (counted in the stats)");
    });
}

}  // namespace gecko::detail
