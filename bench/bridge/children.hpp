// SPDX-License-Identifier: Apache-2.0
#pragma once
// Child processes of the bridge benchmark (geckocore, gecko-bridge, the
// forwarder): started with a pipe on stdout, a line awaited with a
// deadline, their CPU time and memory read from /proc, ended with SIGTERM.
#include <sys/types.h>

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace bench_bridge {

class Child {
public:
    Child(const std::string& path, const std::vector<std::string>& args, const std::map<std::string, std::string>& env);
    ~Child();
    Child(const Child&) = delete;
    Child& operator=(const Child&) = delete;
    /// The first line containing `needle` within `timeout`, or nothing.
    std::optional<std::string> wait_for(const std::string& needle, std::chrono::milliseconds timeout);
    pid_t pid() const { return pid_; }
    /// User + system CPU seconds so far.
    double cpu_seconds() const;
    /// Resident memory now, and its peak, in bytes.
    std::size_t rss() const;
    std::size_t peak_rss() const;
    void stop();

private:
    pid_t pid_ = -1;
    int out_ = -1;
    std::string buffer_;
};

/// The port at the end of "...:PORT/" or "...:PORT," in `line`, after `after`.
int port_in(const std::string& line, const std::string& after);

}  // namespace bench_bridge
