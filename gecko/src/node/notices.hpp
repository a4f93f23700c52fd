// SPDX-License-Identifier: Apache-2.0
#pragma once
// What a node has to say about bad input and faults, queued by whichever
// thread noticed (possibly holding one of Gecko's locks) and written out
// later by the reactor, with no lock held and at most one line per reason per
// period (the rest counted into the next line: a flood of hostile frames
// writes a few lines, not one per frame).

#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "gecko/log.hpp"

namespace gecko::detail {

class Notices {
public:
    explicit Notices(Logger logger) : logger_(std::move(logger)) {}

    /// Queues a line. `reason` keys the rate limit: a short constant naming the
    /// kind of event and who it concerns ("subscriber of 'imu': malformed"), not the text.
    void add(LogLevel level, std::string reason, std::string message);
    /// Writes what is queued. Call with no Gecko lock held.
    void flush();
    /// Called after add() queues a line (the reactor wakes up to flush it).
    void on_added(std::function<void()> wake) { wake_ = std::move(wake); }

private:
    struct Line {
        LogLevel level;
        std::string reason;
        std::string message;
    };
    Logger logger_;
    LogLimiter limiter_;
    std::mutex mutex_;
    std::vector<Line> lines_;
    std::function<void()> wake_;
};

}  // namespace gecko::detail
