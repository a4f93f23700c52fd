// SPDX-License-Identifier: Apache-2.0
#include "file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <gecko/error.hpp>

namespace gecko::bag::detail {

InFile::InFile(const std::string& path) : path_(path) {
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) throw Error(Errc::invalid_argument, "cannot open '" + path + "': " + std::strerror(errno));
    struct stat st{};
    if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
        ::close(fd_);
        fd_ = -1;
        throw Error(Errc::invalid_argument, "'" + path + "' is not a regular file");
    }
    size_ = static_cast<std::uint64_t>(st.st_size);
}

InFile::~InFile() {
    if (fd_ >= 0) ::close(fd_);
}

std::uint64_t InFile::refresh_size() {
    struct stat st{};
    if (::fstat(fd_, &st) == 0) size_ = static_cast<std::uint64_t>(st.st_size);
    return size_;
}

bool InFile::read(std::uint64_t offset, std::uint64_t n, std::vector<std::uint8_t>& out) const {
    if (offset > size_ || n > size_ - offset) return false;
    out.resize(static_cast<std::size_t>(n));
    std::size_t done = 0;
    while (done < n) {
        const ssize_t got = ::pread(fd_, out.data() + done, static_cast<std::size_t>(n) - done,
                                    static_cast<off_t>(offset + done));
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) return false;
        done += static_cast<std::size_t>(got);
    }
    return true;
}

OutFile::OutFile(const std::string& path) : path_(path) {
    fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd_ < 0) throw Error(Errc::invalid_argument, "cannot create '" + path + "': " + std::strerror(errno));
}

OutFile::~OutFile() { close(); }

void OutFile::write(const std::uint8_t* data, std::size_t size) {
    if (fd_ < 0) throw Error(Errc::closed, "'" + path_ + "' is closed");
    std::size_t done = 0;
    while (done < size) {
        const ssize_t n = ::write(fd_, data + done, size - done);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) throw Error(Errc::transport, "cannot write '" + path_ + "': " + std::strerror(errno));
        done += static_cast<std::size_t>(n);
    }
    position_ += size;
}

void OutFile::sync() {
    if (fd_ >= 0) ::fdatasync(fd_);
}

void OutFile::close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
}

}  // namespace gecko::bag::detail
