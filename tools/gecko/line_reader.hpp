// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file line_reader.hpp
/// A file or stdin, line by line, as `gecko pub TOPIC -` and `--file` read
/// JSON lines: lines are handed out as they arrive (a pipe from a live
/// program works), and Ctrl-C is seen while waiting for one.

#include <cstddef>
#include <string>

namespace gecko::tools {

class LineReader {
public:
    /// `path` "-" is stdin.
    /// @throws UsageError if the file cannot be opened.
    explicit LineReader(const std::string& path);
    ~LineReader();
    LineReader(const LineReader&) = delete;
    LineReader& operator=(const LineReader&) = delete;

    /// The next line, without its "\n" (or "\r\n"). False at the end of the
    /// input, on a read error, or once gecko::ok() turns false (Ctrl-C).
    bool next(std::string& line);
    /// The number of the line next() returned last (from 1).
    std::size_t line_number() const noexcept { return line_number_; }
    /// "stdin" or the file's path, for messages.
    const std::string& name() const noexcept { return name_; }

private:
    int fd_ = -1;
    bool own_fd_ = false;
    bool eof_ = false;
    std::string name_;
    std::string buffer_;
    std::size_t line_number_ = 0;
};

}  // namespace gecko::tools
