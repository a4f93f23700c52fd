// SPDX-License-Identifier: Apache-2.0
#include "transport/shm_doorbell.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace gecko::detail::shm {

Doorbell::Doorbell(std::string path, unsigned mode) : path_(std::move(path)) {
    if (::mkfifo(path_.c_str(), static_cast<mode_t>(mode)) != 0) {
        error_ = errno;
        why_ = "cannot create the doorbell " + path_ + ": " + std::strerror(error_);
        return;
    }
    fd_ = ::open(path_.c_str(), O_RDWR | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW);
    if (fd_ >= 0) ::fchmod(fd_, static_cast<mode_t>(mode));  // past the umask
    if (fd_ < 0) {
        error_ = errno;
        why_ = "cannot open the doorbell " + path_ + ": " + std::strerror(error_);
        ::unlink(path_.c_str());
    }
}

Doorbell::~Doorbell() {
    if (fd_ < 0) return;
    ::close(fd_);
    ::unlink(path_.c_str());
}

std::size_t Doorbell::drain() noexcept {
    if (fd_ < 0) return 0;
    char buf[256];
    std::size_t total = 0;
    for (int budget = 64; budget > 0; --budget) {
        const auto n = ::read(fd_, buf, sizeof buf);
        if (n > 0) total += static_cast<std::size_t>(n);
        if (n < static_cast<ssize_t>(sizeof buf) && !(n < 0 && errno == EINTR)) break;
    }
    return total;
}

int open_bell(const std::string& path) noexcept {
    // Read-write, not write-only: the ringer is then a reader too, so a write
    // after the owner closed its end neither raises SIGPIPE nor fails with
    // EPIPE (bytes pile up to the FIFO's capacity, then EAGAIN: harmless).
    const int fd = ::open(path.c_str(), O_RDWR | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) return -1;
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISFIFO(st.st_mode)) {
        ::close(fd);
        return -1;
    }
    return fd;
}

void ring(int fd) noexcept {
    if (fd < 0) return;
    const char one = 1;
    for (int tries = 0; tries < 3; ++tries)
        if (::write(fd, &one, 1) == 1 || errno != EINTR) return;
}

}  // namespace gecko::detail::shm
