// SPDX-License-Identifier: Apache-2.0
// Fixtures shared by the shm tests and their peer program: a private
// directory for segments and doorbells (on tmpfs, like /dev/shm), a small
// segment configuration, frames and interests.
#pragma once

#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "gecko/buffer.hpp"
#include "gecko/wire/announcement.hpp"
#include "gecko/wire/frame.hpp"
#include "transport/shm_transport.hpp"

namespace shmtest {

using namespace gecko::detail;
namespace wire = gecko::wire;

/// A fresh directory in /dev/shm (tmpfs, like the real thing), removed with
/// its content when destroyed. Its name does not start with "gecko-".
class Dir {
public:
    Dir() {
        std::string pattern = "/dev/shm/geckotest-XXXXXX";
        if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
        path_ = pattern;
    }
    ~Dir() {
        std::error_code ignored;
        std::filesystem::remove_all(path_, ignored);
    }
    Dir(const Dir&) = delete;
    Dir& operator=(const Dir&) = delete;
    const std::string& path() const noexcept { return path_; }
    /// The names in the directory, sorted.
    std::vector<std::string> entries() const {
        std::vector<std::string> out;
        if (DIR* d = ::opendir(path_.c_str())) {
            while (const dirent* e = ::readdir(d))
                if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) out.emplace_back(e->d_name);
            ::closedir(d);
        }
        std::sort(out.begin(), out.end());
        return out;
    }

private:
    std::string path_;
};

/// A small segment: 4 slots, rings of 8, two classes (256 B x 32, 4 KiB x 8),
/// quick checks.
inline shm::Config config(const std::string& directory) {
    shm::Config c;
    c.directory = directory;
    c.slots = 4;
    c.ring = 8;
    c.classes = {{256, 32}, {4096, 8}};
    c.huge_count = 1;
    c.held_divisor = 2;
    c.check_interval = std::chrono::milliseconds(20);
    c.size_check_interval = std::chrono::microseconds(0);
    c.lease = std::chrono::milliseconds(1000);
    return c;
}

inline PortOptions options(std::uint64_t session = 0x5eed, std::size_t max_message_size = 64 << 10) {
    PortOptions o;
    o.node = "shmtest";
    o.session = session;
    o.key = "k";
    o.max_message_size = max_message_size;
    return o;
}

inline wire::Channel channel(const std::string& topic, const std::string& key = "k") { return wire::channel_of(key, topic); }

/// A frame on `channel` of `size` bytes (at least 8): the channel, then `fill`, then a counter.
inline gecko::Buffer frame(wire::Channel ch, std::size_t size, std::uint8_t fill = 0xab, std::uint32_t counter = 0) {
    gecko::Buffer b;
    std::uint8_t* p = b.extend(std::max<std::size_t>(size, 16));
    std::memset(p, fill, std::max<std::size_t>(size, 16));
    wire::store_channel(p, ch);
    std::memcpy(p + 8, &counter, sizeof counter);
    return b;
}

inline std::uint32_t counter_of(const std::uint8_t* data) {
    std::uint32_t c;
    std::memcpy(&c, data + 8, sizeof c);
    return c;
}

/// A subscriber's interest in `ch`, announced as entity `id`.
inline Interest interest(wire::Channel ch, std::uint64_t id, bool wildcard = false) {
    wire::Announcement a;
    a.channel = ch;
    a.wildcard = wildcard;
    a.id = id;
    a.topic = "t";
    a.type = "*";
    a.node = "shmtest";
    return Interest{ch, wildcard, wire::encode_announcement(a)};
}

/// A segment laid out by the test itself, which then plays its publisher
/// (and may be as hostile as it likes): planned from `cfg`, its header
/// written with this process as the owner, nothing else done. No doorbell.
class Segment {
public:
    Segment(const shm::Config& cfg, const std::string& name, std::size_t ring = 8, std::size_t max_frame = 64 << 10)
        : name_(name), path_(cfg.directory + "/" + name) {
        std::string why;
        if (!shm::plan(cfg, ring, max_frame, view_.geo, why)) throw std::runtime_error(why);
        fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (fd_ < 0 || ::ftruncate(fd_, static_cast<off_t>(view_.geo.total)) != 0) throw std::runtime_error("cannot make " + path_);
        void* p = ::mmap(nullptr, view_.geo.total, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
        if (p == MAP_FAILED) throw std::runtime_error("cannot map " + path_);
        view_.base = static_cast<std::uint8_t*>(p);
        shm::write_header(view_.header(), view_.geo, 0x5e9);
    }
    ~Segment() {
        ::munmap(view_.base, view_.geo.total);
        ::close(fd_);
        ::unlink(path_.c_str());
    }
    Segment(const Segment&) = delete;
    Segment& operator=(const Segment&) = delete;

    std::string locator() const { return "shm://" + name_; }
    const std::string& path() const noexcept { return path_; }
    int fd() const noexcept { return fd_; }
    const shm::Geometry& geo() const noexcept { return view_.geo; }
    shm::Header& header() const { return view_.header(); }
    shm::SlotHead& slot(std::size_t i) const {
        return *reinterpret_cast<shm::SlotHead*>(view_.base + view_.geo.slots_offset + i * view_.geo.slot_size);
    }
    std::atomic<std::uint64_t>* ring(std::size_t i) const {
        return reinterpret_cast<std::atomic<std::uint64_t>*>(view_.base + view_.geo.slots_offset + i * view_.geo.slot_size +
                                                             shm::Geometry::ring_offset());
    }
    shm::ChunkDesc& desc(std::uint64_t c) const { return reinterpret_cast<shm::ChunkDesc*>(view_.base + view_.geo.desc_offset)[c]; }
    std::uint8_t* payload(std::uint64_t c) const { return view_.base + view_.geo.payload_offset(c); }

    /// Queues chunk c (its first `size` bytes: `frame`) for slot i, as a publisher does.
    void queue(std::size_t i, std::uint64_t c, const gecko::Buffer& frame) {
        std::memcpy(payload(c), frame.data(), frame.size());
        desc(c).size.store(frame.size(), std::memory_order_relaxed);
        desc(c).owners.store(std::uint64_t{1} << i, std::memory_order_release);
        const std::uint64_t t = slot(i).tail.load();
        ring(i)[t % view_.geo.ring_capacity].store(c, std::memory_order_relaxed);
        slot(i).tail.store(t + 1);
    }
    /// Frees slot i whatever is in it (a publisher's reclaim, minus the bookkeeping).
    void free_slot(std::size_t i) {
        auto& s = slot(i);
        s.head.store(0);
        s.tail.store(0);
        s.state.store(shm::make_state(0, shm::generation_of(s.state.load()), shm::slot_free));
    }

private:
    struct Layout {
        std::uint8_t* base = nullptr;
        shm::Geometry geo;
        shm::Header& header() const { return *reinterpret_cast<shm::Header*>(base); }
    };
    std::string name_, path_;
    int fd_ = -1;
    Layout view_;
};

}  // namespace shmtest
