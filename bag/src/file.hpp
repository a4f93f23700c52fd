// SPDX-License-Identifier: Apache-2.0
#pragma once
// Files as the bag reads and writes them: positioned reads that are bounded
// by the file's real size, and appends that say which file failed and why.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace gecko::bag::detail {

class InFile {
public:
    /// @throws gecko::Error (Errc::invalid_argument) if it cannot be opened.
    explicit InFile(const std::string& path);
    ~InFile();
    InFile(const InFile&) = delete;
    InFile& operator=(const InFile&) = delete;

    std::uint64_t size() const noexcept { return size_; }
    /// Looks again at the file's size (it may be growing: a recording).
    std::uint64_t refresh_size();
    /// Reads exactly `n` bytes at `offset` into `out` (resized). False if the
    /// file ends first; never allocates more than the file has from `offset`.
    bool read(std::uint64_t offset, std::uint64_t n, std::vector<std::uint8_t>& out) const;
    const std::string& path() const noexcept { return path_; }

private:
    std::string path_;
    int fd_ = -1;
    std::uint64_t size_ = 0;
};

class OutFile {
public:
    /// Creates (or truncates) `path`. @throws gecko::Error (Errc::invalid_argument).
    explicit OutFile(const std::string& path);
    ~OutFile();
    OutFile(const OutFile&) = delete;
    OutFile& operator=(const OutFile&) = delete;

    /// Appends all of it. @throws gecko::Error (Errc::transport) naming the file and errno (disk full...).
    void write(const std::uint8_t* data, std::size_t size);
    void write(const std::vector<std::uint8_t>& b) { write(b.data(), b.size()); }
    /// fdatasync: what was written survives a power loss.
    void sync();
    void close();
    std::uint64_t position() const noexcept { return position_; }
    const std::string& path() const noexcept { return path_; }

private:
    std::string path_;
    int fd_ = -1;
    std::uint64_t position_ = 0;
};

}  // namespace gecko::bag::detail
