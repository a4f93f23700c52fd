// SPDX-License-Identifier: Apache-2.0
#include "gecko/click_gateway/protobuf_log.hpp"

#include <gecko/log.hpp>

#include <google/protobuf/stubs/logging.h>

#include <mutex>
#include <utility>

namespace gecko::click {

namespace {

namespace gp = ::google::protobuf;

struct Route {
    std::mutex mutex;
    std::string who;
    LogLimiter limiter;
};

Route& route() {
    static Route r;  // never destroyed before libprotobuf's last line: a function-local static outlives main's objects
    return r;
}

LogLevel level_of(gp::LogLevel level) {
    switch (level) {
        case gp::LOGLEVEL_INFO: return LogLevel::debug;
        case gp::LOGLEVEL_WARNING: return LogLevel::warn;
        default: break;
    }
    return LogLevel::error;
}

void handle(gp::LogLevel level, const char* filename, int line, const std::string& message) {
    Route& r = route();
    // The reason is the call site: one kind of line, whatever the text says.
    const std::string reason = std::string(filename != nullptr ? filename : "?") + ":" + std::to_string(line);
    std::string note;
    if (!r.limiter.admit(reason, LogLimiter::Clock::now(), &note)) return;
    std::string who;
    {
        std::lock_guard<std::mutex> lock(r.mutex);
        who = r.who;
    }
    log(level_of(level), who, "libprotobuf: " + message + note);
}

}  // namespace

void route_protobuf_log(std::string who) {
    Route& r = route();
    {
        std::lock_guard<std::mutex> lock(r.mutex);
        r.who = std::move(who);
    }
    static std::once_flag installed;
    std::call_once(installed, [] { gp::SetLogHandler(&handle); });
}

}  // namespace gecko::click
