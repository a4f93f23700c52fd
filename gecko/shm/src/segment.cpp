// SPDX-License-Identifier: Apache-2.0
#include "gecko/shm/segment.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sodium.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <type_traits>

namespace gecko::detail::shm {
namespace {

static_assert(std::is_standard_layout_v<Header>, "the header is read field by field with offsetof");
static_assert(std::is_standard_layout_v<SlotHead>);

// The layout docs/PROTOCOL.md §7.1 gives another implementation.
static_assert(offsetof(Header, magic) == 0 && offsetof(Header, version) == 8 && offsetof(Header, header_size) == 16 &&
              offsetof(Header, total_size) == 24 && offsetof(Header, owner_pid) == 32 && offsetof(Header, owner_start) == 40 &&
              offsetof(Header, owner_pidns) == 48 && offsetof(Header, owner_uid) == 56 && offsetof(Header, session) == 64 &&
              offsetof(Header, slot_count) == 72 && offsetof(Header, slot_size) == 80 && offsetof(Header, slots_offset) == 88 &&
              offsetof(Header, ring_capacity) == 96 && offsetof(Header, interest_words) == 104 &&
              offsetof(Header, chunk_total) == 112 && offsetof(Header, desc_offset) == 120 &&
              offsetof(Header, class_count) == 128 && offsetof(Header, classes) == 136 && sizeof(ClassInfo) == 32 &&
              offsetof(Header, heartbeat_ns) == 448 && offsetof(Header, closed) == 456 && offsetof(Header, changes) == 464);
static_assert(offsetof(SlotHead, state) == 0 && offsetof(SlotHead, start_time) == 8 && offsetof(SlotHead, pid_ns) == 16 &&
              offsetof(SlotHead, bell) == 24 && offsetof(SlotHead, heartbeat_ns) == 32 &&
              offsetof(SlotHead, interest_version) == 40 && offsetof(SlotHead, interest_used) == 48 &&
              offsetof(SlotHead, flags) == 56 && offsetof(SlotHead, tail) == 64 && offsetof(SlotHead, dropped) == 72 &&
              offsetof(SlotHead, head) == 128 && offsetof(SlotHead, armed) == 192 && Geometry::ring_offset() == 256);
static_assert(offsetof(ChunkDesc, owners) == 0 && offsetof(ChunkDesc, size) == 8);

constexpr u64 round_up(u64 v, u64 to) noexcept { return (v + to - 1) / to * to; }

// Limits a reader applies to every number in a header: far above any sane
// configuration, low enough that no product of two of them overflows.
constexpr u64 max_total = 1ull << 40;
constexpr u64 max_ring = 1ull << 16;
constexpr u64 max_interest_words = 1ull << 17;
constexpr u64 max_slot_size = 1ull << 24;
constexpr u64 max_chunk_size = 1ull << 32;
constexpr u64 max_chunk_count = 1ull << 16;
constexpr u64 max_chunk_total = 1ull << 20;

std::string num(u64 v) { return std::to_string(v); }

// Whether [offset, offset + len) lies within [0, total), with no sum that can wrap.
constexpr bool fits(u64 offset, u64 len, u64 total) noexcept { return offset <= total && len <= total - offset; }

// Fields of /proc/PID/stat: the state letter and the start time (field 22).
bool read_stat(std::uint32_t pid, char& state, u64& start) {
    char path[40];
    std::snprintf(path, sizeof path, "/proc/%u/stat", pid);
    const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    char buf[1024];
    const auto n = ::read(fd, buf, sizeof buf - 1);
    ::close(fd);
    if (n <= 0) return false;
    buf[n] = 0;
    // The command name (field 2) may hold spaces and parentheses: fields resume after the last ')'.
    const char* p = std::strrchr(buf, ')');
    if (!p || p[1] != ' ') return false;
    p += 2;
    state = *p;
    for (int field = 3; field < 22; ++field) {
        p = std::strchr(p, ' ');
        if (!p) return false;
        ++p;
    }
    char* end = nullptr;
    start = std::strtoull(p, &end, 10);
    return end != p;
}

}  // namespace

bool plan(const Config& config, std::size_t ring, std::size_t max_frame, Geometry& g, std::string& why) {
    g = Geometry{};
    if (config.slots < 1 || config.slots > max_slots) {
        why = "slots must be 1.." + num(max_slots);
        return false;
    }
    if (ring < 1 || ring > max_ring) {
        why = "a ring holds 1.." + num(max_ring) + " entries";
        return false;
    }
    g.slot_count = config.slots;
    g.ring_capacity = ring;
    g.interest_words = round_up(std::max<std::size_t>(config.interest_bytes, 64), 8) / 8;
    if (g.interest_words > max_interest_words) {
        why = "interest_bytes is too large";
        return false;
    }
    std::vector<ClassConfig> classes = config.classes;
    const u64 largest = classes.empty() ? 0 : classes.back().chunk_size;
    if (max_frame > largest && config.huge_count > 0) classes.push_back({round_up(max_frame, page), config.huge_count});
    if (classes.empty() || classes.size() > max_classes) {
        why = "1.." + num(max_classes) + " size classes";
        return false;
    }
    g.slot_size = round_up(g.interest_offset() + g.interest_words * 8, 64);
    g.slots_offset = header_bytes;
    g.desc_offset = g.slots_offset + g.slot_count * g.slot_size;
    g.class_count = classes.size();
    u64 prev = 0;
    for (std::size_t k = 0; k < classes.size(); ++k) {
        const u64 size = round_up(classes[k].chunk_size, 64);
        if (size < 64 || size > max_chunk_size || size <= prev || classes[k].count < 1 || classes[k].count > max_chunk_count) {
            why = "size classes must grow, of 64 B..4 GiB chunks, 1.." + num(max_chunk_count) + " of each";
            return false;
        }
        prev = size;
        g.classes[k].chunk_size = size;
        g.classes[k].count = classes[k].count;
        g.classes[k].first = g.chunk_total;
        g.chunk_total += classes[k].count;
    }
    u64 at = round_up(g.desc_offset + g.chunk_total * sizeof(ChunkDesc), page);
    for (std::size_t k = 0; k < g.class_count; ++k) {
        g.classes[k].offset = at;
        at = round_up(at + g.classes[k].chunk_size * g.classes[k].count, page);
    }
    g.total = at;
    if (g.total > max_total) {
        why = "the segment would be " + num(g.total) + " bytes";
        return false;
    }
    return true;
}

bool read_header(int fd, HeaderCopy& h) {
    alignas(64) unsigned char buf[sizeof(Header)];
    std::size_t got = 0;
    while (got < sizeof buf) {
        const auto n = ::pread(fd, buf + got, sizeof buf - got, static_cast<off_t>(got));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        got += static_cast<std::size_t>(n);
    }
    auto field = [&](std::size_t offset) {
        u64 v;
        std::memcpy(&v, buf + offset, sizeof v);
        return v;
    };
#define GECKO_SHM_FIELD(name) h.name = field(offsetof(Header, name))
    GECKO_SHM_FIELD(magic);
    GECKO_SHM_FIELD(version);
    GECKO_SHM_FIELD(header_size);
    GECKO_SHM_FIELD(total_size);
    GECKO_SHM_FIELD(owner_pid);
    GECKO_SHM_FIELD(owner_start);
    GECKO_SHM_FIELD(owner_pidns);
    GECKO_SHM_FIELD(owner_uid);
    GECKO_SHM_FIELD(session);
    GECKO_SHM_FIELD(slot_count);
    GECKO_SHM_FIELD(slot_size);
    GECKO_SHM_FIELD(slots_offset);
    GECKO_SHM_FIELD(ring_capacity);
    GECKO_SHM_FIELD(interest_words);
    GECKO_SHM_FIELD(chunk_total);
    GECKO_SHM_FIELD(desc_offset);
    GECKO_SHM_FIELD(class_count);
    GECKO_SHM_FIELD(heartbeat_ns);
    GECKO_SHM_FIELD(closed);
#undef GECKO_SHM_FIELD
    std::memcpy(h.sealed_bytes, buf + sealed_from, sizeof h.sealed_bytes);
    std::memcpy(h.seal, buf + offsetof(Header, seal), sizeof h.seal);
    for (std::size_t k = 0; k < max_classes; ++k) {
        const std::size_t base = offsetof(Header, classes) + k * sizeof(ClassInfo);
        h.classes[k].chunk_size = field(base + offsetof(ClassInfo, chunk_size));
        h.classes[k].count = field(base + offsetof(ClassInfo, count));
        h.classes[k].first = field(base + offsetof(ClassInfo, first));
        h.classes[k].offset = field(base + offsetof(ClassInfo, offset));
    }
    return true;
}

bool validate(const HeaderCopy& h, u64 file_size, Geometry& g, std::string& why) {
    g = Geometry{};
    auto fail = [&](const std::string& what) {
        why = "bad segment header: " + what;
        return false;
    };
    if (h.magic != magic) return fail("no magic number (not a Gecko segment, or not initialised)");
    if (h.version != layout_version)
        return fail("layout version " + num(h.version) + ", this build reads " + num(layout_version));
    if (h.header_size < sizeof(Header) || h.header_size > header_bytes) return fail("header size " + num(h.header_size));
    if (h.total_size > file_size || h.total_size > max_total)
        return fail("it says " + num(h.total_size) + " bytes, the file has " + num(file_size));
    if (h.slot_count < 1 || h.slot_count > max_slots) return fail("slot count " + num(h.slot_count));
    if (h.ring_capacity < 1 || h.ring_capacity > max_ring) return fail("ring capacity " + num(h.ring_capacity));
    if (h.interest_words < 1 || h.interest_words > max_interest_words) return fail("interest words " + num(h.interest_words));
    g.total = h.total_size;
    g.slot_count = h.slot_count;
    g.ring_capacity = h.ring_capacity;
    g.interest_words = h.interest_words;
    if (h.slot_size % 64 != 0 || h.slot_size < g.interest_offset() + g.interest_words * 8 || h.slot_size > max_slot_size)
        return fail("slot size " + num(h.slot_size));
    if (h.slots_offset % 64 != 0 || h.slots_offset < h.header_size) return fail("slots offset " + num(h.slots_offset));
    // Every region as `offset <= total && length <= total - offset`: an
    // offset near 2^64 must not wrap its end back inside the segment.
    // (Each length is a product of two bounded numbers: it cannot wrap.)
    if (!fits(h.slots_offset, h.slot_count * h.slot_size, g.total)) return fail("the slots end past the segment");
    const u64 slots_end = h.slots_offset + h.slot_count * h.slot_size;
    if (h.class_count < 1 || h.class_count > max_classes) return fail("class count " + num(h.class_count));
    if (h.chunk_total < 1 || h.chunk_total > max_chunk_total) return fail("chunk total " + num(h.chunk_total));
    if (h.desc_offset % 64 != 0 || h.desc_offset < slots_end) return fail("descriptor offset " + num(h.desc_offset));
    if (!fits(h.desc_offset, h.chunk_total * sizeof(ChunkDesc), g.total))
        return fail("the chunk descriptors end past the segment");
    const u64 desc_end = h.desc_offset + h.chunk_total * sizeof(ChunkDesc);
    g.slot_size = h.slot_size;
    g.slots_offset = h.slots_offset;
    g.chunk_total = h.chunk_total;
    g.desc_offset = h.desc_offset;
    g.class_count = h.class_count;
    u64 first = 0, end = desc_end, prev_size = 0;
    for (std::size_t k = 0; k < h.class_count; ++k) {
        const ClassInfo& c = h.classes[k];
        const std::string which = "class " + num(k) + ": ";
        if (c.chunk_size < 64 || c.chunk_size > max_chunk_size || c.chunk_size % 64 != 0 || c.chunk_size <= prev_size)
            return fail(which + "chunk size " + num(c.chunk_size));
        if (c.count < 1 || c.count > max_chunk_count) return fail(which + "count " + num(c.count));
        if (c.first != first) return fail(which + "first chunk " + num(c.first));
        if (c.offset % 64 != 0 || c.offset < end) return fail(which + "offset " + num(c.offset));
        if (!fits(c.offset, c.chunk_size * c.count, g.total)) return fail(which + "ends past the segment");
        const u64 class_end = c.offset + c.chunk_size * c.count;
        g.classes[k] = c;
        first += c.count;
        end = class_end;
        prev_size = c.chunk_size;
    }
    if (first != h.chunk_total) return fail("the classes hold " + num(first) + " chunks, not " + num(h.chunk_total));
    return true;
}

namespace {

void seal_of(const std::uint8_t* sealed, const std::string& name, const SealKey& key, std::uint8_t out[32]) {
    crypto_generichash_state state;
    crypto_generichash_init(&state, key.data(), key.size(), 32);
    crypto_generichash_update(&state, sealed, sealed_to - sealed_from);
    crypto_generichash_update(&state, reinterpret_cast<const unsigned char*>(name.data()), name.size());
    crypto_generichash_final(&state, out, 32);
}

}  // namespace

SealCheck check_seal(const HeaderCopy& h, const std::string& name, const SealKey& key) {
    static const std::uint8_t zero[32] = {};
    if (std::memcmp(h.seal, zero, sizeof zero) == 0) return SealCheck::unsealed;
    std::uint8_t expected[32];
    seal_of(h.sealed_bytes, name, key, expected);
    return sodium_memcmp(expected, h.seal, sizeof expected) == 0 ? SealCheck::sealed : SealCheck::other_secret;
}

void write_header(Header& h, const Geometry& g, u64 session, const std::string& name, const SealKey* seal_key) {
    h.version = layout_version;
    h.header_size = header_bytes;
    h.total_size = g.total;
    h.owner_pid = static_cast<u64>(::getpid());
    h.owner_start = own_start_time();
    h.owner_pidns = own_pid_namespace();
    h.owner_uid = ::geteuid();
    h.session = session;
    h.slot_count = g.slot_count;
    h.slot_size = g.slot_size;
    h.slots_offset = g.slots_offset;
    h.ring_capacity = g.ring_capacity;
    h.interest_words = g.interest_words;
    h.chunk_total = g.chunk_total;
    h.desc_offset = g.desc_offset;
    h.class_count = g.class_count;
    for (std::size_t k = 0; k < max_classes; ++k) h.classes[k] = g.classes[k];
    if (seal_key) seal_of(reinterpret_cast<const std::uint8_t*>(&h) + sealed_from, name, *seal_key, h.seal);
    h.heartbeat_ns.store(monotonic_ns(), std::memory_order_relaxed);
    h.closed.store(0, std::memory_order_relaxed);
    h.changes.store(0, std::memory_order_relaxed);
    h.magic.store(magic, std::memory_order_release);
}

// ---- processes --------------------------------------------------------------------------------

u64 own_start_time() {
    static const u64 start = [] {
        char state = 0;
        u64 s = 0;
        return read_stat(static_cast<std::uint32_t>(::getpid()), state, s) ? s : 0;
    }();
    // A forked child has its own start time: only cache for the process that computed it.
    static const pid_t cached_for = ::getpid();
    if (cached_for == ::getpid()) return start;
    char state = 0;
    u64 s = 0;
    return read_stat(static_cast<std::uint32_t>(::getpid()), state, s) ? s : 0;
}

u64 own_pid_namespace() {
    struct stat st {};
    return ::stat("/proc/self/ns/pid", &st) == 0 ? static_cast<u64>(st.st_ino) : 0;
}

bool process_alive(std::uint32_t pid, u64 start) {
    if (pid == 0 || pid > 0x3fffffff) return false;
    if (::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) return false;
    char state = 0;
    u64 s = 0;
    if (!read_stat(pid, state, s)) return true;  // /proc hidden: the signal check said it exists
    if (state == 'Z' || state == 'X') return false;
    return start == 0 || s == start;
}

u64 monotonic_ns() {
    timespec ts{};
    ::clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<u64>(ts.tv_sec) * 1'000'000'000ull + static_cast<u64>(ts.tv_nsec);
}

// ---- names ------------------------------------------------------------------------------------

bool valid_name(const std::string& name) {
    if (name.empty() || name.size() > 200 || name[0] == '.') return false;
    for (char c : name)
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.')) return false;
    return name.size() < 5 || name.compare(name.size() - 5, 5, ".bell") != 0;
}

std::string publisher_bell(const std::string& directory, const std::string& segment) {
    return directory + "/" + segment + ".bell";
}

std::string subscriber_bell(const std::string& directory, u64 pid_ns, std::uint32_t pid, u64 start, u64 nonce) {
    char name[96];
    std::snprintf(name, sizeof name, "/gecko-in-%llx-%u-%llu-%016llx", static_cast<unsigned long long>(pid_ns),
                  pid, static_cast<unsigned long long>(start), static_cast<unsigned long long>(nonce));
    return directory + name;
}

std::size_t remove_stale(const std::string& directory, std::chrono::milliseconds lease) {
    DIR* dir = ::opendir(directory.c_str());
    if (!dir) return 0;
    const u64 my_ns = own_pid_namespace();
    const u64 now = monotonic_ns();
    const auto lease_ns = static_cast<u64>(lease.count()) * 1'000'000ull;
    std::size_t removed = 0;
    int budget = 4096;
    std::vector<std::string> unlink_later;
    while (const dirent* e = ::readdir(dir)) {
        if (--budget < 0) break;
        const std::string name = e->d_name;
        if (name.rfind("gecko-", 0) != 0) continue;
        const std::string path = directory + "/" + name;
        struct stat st {};
        if (::lstat(path.c_str(), &st) != 0 || st.st_uid != ::geteuid()) continue;
        if (S_ISREG(st.st_mode)) {
            const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
            if (fd < 0) continue;
            HeaderCopy h;
            const bool ok = read_header(fd, h);
            ::close(fd);
            // Not a complete Gecko segment (another program's, or one being created: magic is written last).
            if (!ok || h.magic != magic || h.version != layout_version) continue;
            const bool dead = h.owner_pidns == my_ns
                                  ? !process_alive(static_cast<std::uint32_t>(h.owner_pid), h.owner_start)
                                  : (now > h.heartbeat_ns && now - h.heartbeat_ns > lease_ns);
            if (!dead) continue;
            unlink_later.push_back(path);
            unlink_later.push_back(publisher_bell(directory, name));
        } else if (S_ISFIFO(st.st_mode) && name.rfind("gecko-in-", 0) == 0) {
            unsigned long long ns = 0, start = 0, nonce = 0;
            unsigned pid = 0;
            if (std::sscanf(name.c_str(), "gecko-in-%llx-%u-%llu-%llx", &ns, &pid, &start, &nonce) != 4) continue;
            if (ns == my_ns && !process_alive(pid, start)) unlink_later.push_back(path);
        } else if (S_ISFIFO(st.st_mode) && name.size() > 5 && name.compare(name.size() - 5, 5, ".bell") == 0) {
            // A publisher's doorbell whose segment is gone (killed between the two unlinks).
            struct stat seg {};
            const std::string segment = directory + "/" + name.substr(0, name.size() - 5);
            if (::lstat(segment.c_str(), &seg) != 0 && errno == ENOENT && std::time(nullptr) - st.st_mtime > 10)
                unlink_later.push_back(path);
        }
    }
    ::closedir(dir);
    for (const auto& p : unlink_later)
        if (::unlink(p.c_str()) == 0) ++removed;
    return removed;
}

}  // namespace gecko::detail::shm
