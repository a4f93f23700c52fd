// SPDX-License-Identifier: Apache-2.0
#pragma once
// Doorbells of the shm transport: a named FIFO per port, next to the segment.
// The owner opens it read-write and non-blocking (so it never blocks and
// never sees end-of-file) and polls its fd; anyone who knows the name opens
// it write-only and writes one byte to wake the owner. A byte is written only
// when the sleeper said it sleeps (an "armed" flag in the segment), so a busy
// pair makes no system call at all.

#include <cstddef>
#include <string>

namespace gecko::detail::shm {

/// The receiving end: creates the FIFO, removes it when destroyed.
class Doorbell {
public:
    /// mkfifo(path, mode) and open it; on failure fd() is -1 and why() says
    /// why. mkfifo never opens what another process made: a name taken by
    /// anyone (a FIFO, a file, a symlink) is a failure with error() EEXIST.
    /// `mode`: 0600 the user; 0660 the group too.
    explicit Doorbell(std::string path, unsigned mode = 0600);
    ~Doorbell();
    Doorbell(const Doorbell&) = delete;
    Doorbell& operator=(const Doorbell&) = delete;

    int fd() const noexcept { return fd_; }
    const std::string& path() const noexcept { return path_; }
    const std::string& why() const noexcept { return why_; }
    /// The errno of the failure (EEXIST: the name is taken), 0 if none.
    int error() const noexcept { return error_; }
    /// Reads every pending byte (never blocks): an edge-triggered poller sees
    /// the next ring. Returns how many it read.
    std::size_t drain() noexcept;

private:
    std::string path_;
    std::string why_;
    int error_ = 0;
    int fd_ = -1;
};

/// Opens another port's doorbell for ringing; -1 if it is not there (or not a FIFO).
int open_bell(const std::string& path) noexcept;
/// Writes one byte (a full FIFO is already readable: nothing lost).
void ring(int fd) noexcept;

}  // namespace gecko::detail::shm
