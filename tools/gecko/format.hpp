// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file format.hpp
/// Aligned tables and human-readable figures for the `gecko` tool's output.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace gecko::tools {

/// Columns padded to their widest cell (UTF-8 aware), two spaces apart; the
/// last column is not padded. Rows with fewer cells than headers leave the rest blank.
class Table {
public:
    explicit Table(std::vector<std::string> headers);
    void add(std::vector<std::string> row);
    std::size_t rows() const noexcept { return rows_.size(); }
    /// Header line, then one line per row, each ending with '\n'.
    std::string render(const std::string& indent = "") const;

private:
    std::vector<std::string> headers_;
    std::vector<std::vector<std::string>> rows_;
};

/// Number of characters a terminal shows for UTF-8 text (code points).
std::size_t display_width(const std::string& s);

/// "100 Hz", "12.5 Hz", "0.20 Hz"; "-" when negative (unknown).
std::string format_hz(double hz);
/// "512 B", "12.3 KiB", "1.50 MiB", "2.00 GiB".
std::string format_bytes(double bytes);
/// A duration in nanoseconds: "850 ns", "12.4 µs", "3.21 ms", "1.50 s"; "-" when negative (unknown).
std::string format_ns(double ns);
/// "120 ms", "3.4 s", "2 min" for how long ago something happened; "-" when negative.
std::string format_age_ms(std::int64_t ms);
/// printf into a std::string.
std::string strprintf(const char* format, ...) __attribute__((format(printf, 1, 2)));
/// 16 lowercase hex digits.
std::string hex_id(std::uint64_t id);

}  // namespace gecko::tools
