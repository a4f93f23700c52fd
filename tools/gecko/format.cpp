// SPDX-License-Identifier: Apache-2.0
#include "format.hpp"

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>

namespace gecko::tools {

std::size_t display_width(const std::string& s) {
    std::size_t n = 0;
    for (unsigned char c : s)
        if ((c & 0xC0) != 0x80) ++n;  // count every byte but UTF-8 continuation bytes
    return n;
}

Table::Table(std::vector<std::string> headers) : headers_(std::move(headers)) {}

void Table::add(std::vector<std::string> row) {
    row.resize(std::max(row.size(), headers_.size()));
    rows_.push_back(std::move(row));
}

std::string Table::render(const std::string& indent) const {
    std::vector<std::size_t> width(headers_.size(), 0);
    for (std::size_t c = 0; c < headers_.size(); ++c) width[c] = display_width(headers_[c]);
    for (const auto& row : rows_)
        for (std::size_t c = 0; c < row.size() && c < width.size(); ++c) width[c] = std::max(width[c], display_width(row[c]));
    auto line = [&](const std::vector<std::string>& cells) {
        std::string s = indent;
        for (std::size_t c = 0; c < cells.size(); ++c) {
            s += cells[c];
            if (c + 1 < cells.size()) s += std::string(width[c] - display_width(cells[c]) + 2, ' ');
        }
        while (!s.empty() && s.back() == ' ') s.pop_back();
        return s + "\n";
    };
    std::string out = line(headers_);
    for (const auto& row : rows_) out += line(row);
    return out;
}

std::string strprintf(const char* format, ...) {
    char buf[512];
    va_list args;
    va_start(args, format);
    const int n = std::vsnprintf(buf, sizeof buf, format, args);
    va_end(args);
    if (n < 0) return {};
    if (static_cast<std::size_t>(n) < sizeof buf) return std::string(buf, static_cast<std::size_t>(n));
    std::string big(static_cast<std::size_t>(n) + 1, '\0');
    va_start(args, format);
    std::vsnprintf(big.data(), big.size(), format, args);
    va_end(args);
    big.pop_back();
    return big;
}

namespace {
// Three significant digits at most: 1.23, 12.3, 123.
std::string three_digits(double v) {
    if (v >= 99.95 || v == 0) return strprintf("%.0f", v);  // thresholds after rounding: 99.96 -> "100"
    if (v >= 9.995) return strprintf("%.1f", v);
    return strprintf("%.2f", v);
}
}  // namespace

std::string format_hz(double hz) {
    if (hz < 0 || !std::isfinite(hz)) return "-";
    return three_digits(hz) + " Hz";
}

std::string format_bytes(double bytes) {
    if (bytes < 0 || !std::isfinite(bytes)) return "-";
    const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    while (bytes >= 1024 && u < 4) {
        bytes /= 1024;
        ++u;
    }
    if (u == 0) return strprintf("%.0f B", bytes);
    return three_digits(bytes) + " " + units[u];
}

std::string format_ns(double ns) {
    if (ns < 0 || !std::isfinite(ns)) return "-";
    if (ns < 1e3) return strprintf("%.0f ns", ns);
    if (ns < 1e6) return three_digits(ns / 1e3) + " µs";
    if (ns < 1e9) return three_digits(ns / 1e6) + " ms";
    return three_digits(ns / 1e9) + " s";
}

std::string format_age_ms(std::int64_t ms) {
    if (ms < 0) return "-";
    if (ms < 1000) return std::to_string(ms) + " ms";
    if (ms < 60000) return strprintf("%.1f s", static_cast<double>(ms) / 1000);
    if (ms < 3600000) return std::to_string(ms / 60000) + " min";
    return strprintf("%.1f h", static_cast<double>(ms) / 3600000);
}

std::string hex_id(std::uint64_t id) { return strprintf("%016llx", static_cast<unsigned long long>(id)); }

}  // namespace gecko::tools
