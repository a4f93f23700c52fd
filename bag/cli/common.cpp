// SPDX-License-Identifier: Apache-2.0
#include "common.hpp"

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <ctime>

namespace gecko::bag::cli {

std::optional<int> parse(OptionParser& parser, const std::vector<std::string>& args) {
    std::vector<const char*> argv{parser.program().c_str()};
    for (const auto& a : args) argv.push_back(a.c_str());
    switch (parser.parse(static_cast<int>(argv.size()), argv.data())) {
        case OptionParser::Outcome::help:
            std::fputs(parser.help().c_str(), stdout);
            return exit_ok;
        case OptionParser::Outcome::usage_error:
            std::fprintf(stderr, "%s: %s\nTry '%s --help'.\n", parser.program().c_str(), parser.error().c_str(),
                         parser.program().c_str());
            return exit_usage;
        case OptionParser::Outcome::ok: break;
    }
    return std::nullopt;
}

namespace {
// A non-negative number and the unit after it.
bool number_and_unit(const std::string& text, double& value, std::string& unit) {
    if (text.empty()) return false;
    std::size_t used = 0;
    try {
        value = std::stod(text, &used);
    } catch (const std::exception&) {
        return false;
    }
    unit = text.substr(used);
    return std::isfinite(value) && value >= 0;
}
}  // namespace

std::string parse_size(const std::string& text, std::uint64_t& out) {
    double v = 0;
    std::string unit;
    if (!number_and_unit(text, v, unit)) return "'" + text + "' is not a size (e.g. 512M, 1G, 1048576)";
    double scale = 1;
    if (unit == "" || unit == "B") scale = 1;
    else if (unit == "k" || unit == "K" || unit == "KiB" || unit == "kB") scale = 1024.0;
    else if (unit == "M" || unit == "MiB" || unit == "MB") scale = 1024.0 * 1024;
    else if (unit == "G" || unit == "GiB" || unit == "GB") scale = 1024.0 * 1024 * 1024;
    else return "'" + text + "': unknown unit '" + unit + "' (k, M, G)";
    out = static_cast<std::uint64_t>(v * scale);
    return "";
}

std::string parse_duration(const std::string& text, std::chrono::nanoseconds& out) {
    double v = 0;
    std::string unit;
    if (!number_and_unit(text, v, unit)) return "'" + text + "' is not a duration (e.g. 30s, 5m, 1h, 250ms, 1.5)";
    double seconds = v;
    if (unit == "" || unit == "s") seconds = v;
    else if (unit == "ms") seconds = v / 1000;
    else if (unit == "us") seconds = v / 1e6;
    else if (unit == "m" || unit == "min") seconds = v * 60;
    else if (unit == "h") seconds = v * 3600;
    else return "'" + text + "': unknown unit '" + unit + "' (ms, s, m, h)";
    if (seconds > 1e9) return "'" + text + "' is too long";
    out = std::chrono::nanoseconds(static_cast<std::int64_t>(seconds * 1e9));
    return "";
}

std::string format_bytes(double b) {
    char buf[64];
    if (b < 1024) std::snprintf(buf, sizeof buf, "%.0f B", b);
    else if (b < 1024.0 * 1024) std::snprintf(buf, sizeof buf, "%.1f KiB", b / 1024);
    else if (b < 1024.0 * 1024 * 1024) std::snprintf(buf, sizeof buf, "%.1f MiB", b / 1024 / 1024);
    else std::snprintf(buf, sizeof buf, "%.2f GiB", b / 1024 / 1024 / 1024);
    return buf;
}

std::string format_seconds(double s) {
    char buf[64];
    if (s < 60) std::snprintf(buf, sizeof buf, "%.3f s", s);
    else if (s < 3600) std::snprintf(buf, sizeof buf, "%d min %.1f s", static_cast<int>(s / 60), std::fmod(s, 60.0));
    else std::snprintf(buf, sizeof buf, "%d h %d min", static_cast<int>(s / 3600), static_cast<int>(std::fmod(s, 3600.0) / 60));
    return buf;
}

std::string format_rate(double r) {
    char buf[64];
    if (r >= 1000) std::snprintf(buf, sizeof buf, "%.2f kHz", r / 1000);
    else std::snprintf(buf, sizeof buf, "%.1f Hz", r);
    return buf;
}

std::string format_time(std::uint64_t ns) {
    const std::time_t secs = static_cast<std::time_t>(ns / 1000000000ull);
    std::tm tm{};
    ::gmtime_r(&secs, &tm);
    char buf[64];
    const std::size_t n = std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
    std::snprintf(buf + n, sizeof buf - n, ".%03u UTC", static_cast<unsigned>((ns / 1000000ull) % 1000));
    return buf;
}

ProgressLine::ProgressLine() : enabled_(::isatty(STDERR_FILENO) == 1) {}

bool ProgressLine::due() const noexcept {
    return enabled_ && (!shown_ || std::chrono::steady_clock::now() - last_ >= std::chrono::milliseconds(200));
}

void ProgressLine::show(const std::string& text, bool force) {
    if (!enabled_ || (!force && !due())) return;
    last_ = std::chrono::steady_clock::now();
    shown_ = true;
    std::fprintf(stderr, "\r\033[K%s", text.c_str());
    std::fflush(stderr);
}

void ProgressLine::finish() {
    if (enabled_ && shown_) std::fputc('\n', stderr);
    shown_ = false;
}

}  // namespace gecko::bag::cli
