// SPDX-License-Identifier: Apache-2.0
#include "line_reader.hpp"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <gecko/signals.hpp>

#include "cli.hpp"

namespace gecko::tools {

LineReader::LineReader(const std::string& path) {
    if (path == "-") {
        fd_ = STDIN_FILENO;
        name_ = "stdin";
        return;
    }
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) throw UsageError("cannot read '" + path + "': " + std::strerror(errno));
    own_fd_ = true;
    name_ = path;
}

LineReader::~LineReader() {
    if (own_fd_) ::close(fd_);
}

bool LineReader::next(std::string& line) {
    for (;;) {
        const auto nl = buffer_.find('\n');
        if (nl != std::string::npos || (eof_ && !buffer_.empty())) {
            const std::size_t end = nl == std::string::npos ? buffer_.size() : nl;
            line.assign(buffer_, 0, end);
            if (!line.empty() && line.back() == '\r') line.pop_back();
            buffer_.erase(0, nl == std::string::npos ? end : end + 1);
            ++line_number_;
            return true;
        }
        if (eof_ || !ok()) return false;
        pollfd p{fd_, POLLIN, 0};
        const int ready = ::poll(&p, 1, 200);  // a slice, so that Ctrl-C is noticed while stdin is quiet
        if (ready < 0 && errno != EINTR) return false;
        if (ready <= 0) continue;
        char chunk[65536];
        const auto got = ::read(fd_, chunk, sizeof chunk);
        if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
        if (got <= 0) {
            eof_ = true;
            continue;
        }
        buffer_.append(chunk, static_cast<std::size_t>(got));
    }
}

}  // namespace gecko::tools
