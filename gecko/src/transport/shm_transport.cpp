// SPDX-License-Identifier: Apache-2.0
// Shared memory behind the seam (shm_transport.hpp). The segment's layout and
// its validation are in shm_segment.*, the doorbells in shm_doorbell.*; this
// file is the two ports.
//
// Concurrency, in one place:
// - A ring is single-producer (the publisher writes entries and `tail`) with
//   two consumers of its head: the subscriber takes the oldest entry, and the
//   publisher takes it back when the ring is full or the pool is exhausted.
//   Both claim position h with a CAS of `head` from h to h+1 (head only grows,
//   so there is no ABA); whoever wins owns the entry's reference. An entry is
//   read before the CAS and used only if the CAS succeeds: if the publisher
//   had reused that ring cell, head would already be past h.
// - A chunk's `owners` mask is set once by the publisher before the chunk is
//   queued; every holder clears its bit once (fetch_and, release). The
//   publisher allocates only chunks whose mask it reads as 0 (acquire), so a
//   subscriber's reads of a chunk happen before the publisher rewrites it.
//   This replaces a free list: only the publisher allocates (a round-robin
//   scan that finds the oldest chunk first), and there is no list a killed
//   process could leave half-linked, so neither a tagged lock-free list nor a
//   robust mutex is needed.
// - Wake-up (Dekker): the subscriber stores armed=1 then reads the rings; the
//   publisher stores tail then reads armed, all sequentially consistent: one
//   of them sees the other, so a frame is never left unannounced to a sleeper.
// - Interests are a seqlock (version odd while written), copied word by word
//   with relaxed atomic loads and used only if the version did not change.

#include "transport/shm_transport.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <random>

#include "gecko/error.hpp"
#include "cpu_relax.hpp"
#include "gecko/wire/frame.hpp"
#include "transport/shm_doorbell.hpp"

namespace gecko::detail {
namespace {

using shm::ChunkDesc;
using shm::Geometry;
using shm::Header;
using shm::SlotHead;
using shm::u64;

constexpr u64 no_chunk = ~u64{0};
constexpr std::size_t kept_notices = 16;
constexpr u64 ms_ns = 1'000'000;
constexpr u64 kPoolTakeBack = 2;  // queued frames an exhausted pool takes back at once (2: +14 % at 64 B; 32: worse)

inline u64 bit(std::size_t slot) noexcept { return u64{1} << slot; }

std::string hex(u64 v) {
    char s[17];
    std::snprintf(s, sizeof s, "%016llx", static_cast<unsigned long long>(v));
    return s;
}

u64 random_nonce() {
    static std::mt19937_64 rng{std::random_device{}() ^ (static_cast<u64>(::getpid()) << 32) ^ shm::monotonic_ns()};
    return rng();
}

// Addresses in one mapped segment, from its (planned or validated) geometry.
struct View {
    std::uint8_t* base = nullptr;
    Geometry geo;

    Header& header() const noexcept { return *reinterpret_cast<Header*>(base); }
    std::uint8_t* slot_base(std::size_t i) const noexcept { return base + geo.slots_offset + i * geo.slot_size; }
    SlotHead& slot(std::size_t i) const noexcept { return *reinterpret_cast<SlotHead*>(slot_base(i)); }
    std::atomic<u64>* ring(std::size_t i) const noexcept {
        return reinterpret_cast<std::atomic<u64>*>(slot_base(i) + Geometry::ring_offset());
    }
    std::atomic<u64>* interests(std::size_t i) const noexcept {
        return reinterpret_cast<std::atomic<u64>*>(slot_base(i) + geo.interest_offset());
    }
    ChunkDesc& desc(u64 c) const noexcept { return reinterpret_cast<ChunkDesc*>(base + geo.desc_offset)[c]; }
    std::uint8_t* payload(u64 c) const noexcept { return base + geo.payload_offset(c); }
};

// The last few notices, and the node's sink for them.
class PortNotices {
public:
    explicit PortNotices(std::function<void(LogLevel, const std::string&, const std::string&)> sink) : sink_(std::move(sink)) {}
    void add(LogLevel level, const std::string& reason, const std::string& message) {
        if (lines_.size() >= kept_notices) lines_.erase(lines_.begin());
        lines_.push_back(message);
        if (sink_) sink_(level, reason, message);
    }
    const std::vector<std::string>& lines() const noexcept { return lines_; }

private:
    std::function<void(LogLevel, const std::string&, const std::string&)> sink_;
    std::vector<std::string> lines_;
};

bool same_interest(const Interest& a, const Interest& b) {
    return a.channel == b.channel && a.wildcard == b.wildcard && a.announcement == b.announcement;
}

// ---- interests in a slot --------------------------------------------------------------------
//
// Records of words: [channel] [flags | announcement length << 32] [announcement
// bytes, 8 per word, zero padded]. `interest_used` says how many words count.

// Subscriber side. False if they did not all fit (the slot is marked to get everything).
bool write_interests(const View& v, std::size_t i, const std::vector<Interest>& interests) {
    SlotHead& s = v.slot(i);
    std::atomic<u64>* w = v.interests(i);
    const u64 capacity = v.geo.interest_words;
    u64 version = s.interest_version.load(std::memory_order_relaxed);
    version += version & 1;  // even: not being written
    s.interest_version.store(version + 1, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_release);
    u64 at = 0;
    bool overflow = false;
    for (const auto& interest : interests) {
        const u64 len = std::min<u64>(interest.announcement.size(), wire::max_announcement_size);
        const u64 words = 2 + (len + 7) / 8;
        if (at + words > capacity) {
            overflow = true;
            break;
        }
        w[at].store(interest.channel, std::memory_order_relaxed);
        w[at + 1].store((interest.wildcard ? shm::interest_wildcard : 0) | (len << 32), std::memory_order_relaxed);
        for (u64 j = 0; j * 8 < len; ++j) {
            u64 x = 0;
            std::memcpy(&x, interest.announcement.data() + j * 8, std::min<u64>(8, len - j * 8));
            w[at + 2 + j].store(x, std::memory_order_relaxed);
        }
        at += words;
    }
    s.interest_used.store(at, std::memory_order_relaxed);
    s.flags.store(overflow ? shm::slot_overflow : 0, std::memory_order_relaxed);
    s.interest_version.store(version + 2, std::memory_order_release);
    return !overflow;
}

enum class Read { ok, busy, corrupt };

// Publisher side: what a subscriber wrote, checked word by word.
Read read_interests(const View& v, std::size_t i, std::vector<Interest>& out, bool& overflow, u64& version) {
    SlotHead& s = v.slot(i);
    const std::atomic<u64>* w = v.interests(i);
    const u64 capacity = v.geo.interest_words;
    std::vector<u64> words;
    for (int attempt = 0; attempt < 8; ++attempt) {
        const u64 v1 = s.interest_version.load(std::memory_order_acquire);
        if (v1 & 1) {
            cpu_relax();
            continue;
        }
        const u64 used = s.interest_used.load(std::memory_order_relaxed);
        const u64 flags = s.flags.load(std::memory_order_relaxed);
        words.resize(std::min(used, capacity));
        for (std::size_t k = 0; k < words.size(); ++k) words[k] = w[k].load(std::memory_order_relaxed);
        std::atomic_thread_fence(std::memory_order_acquire);
        if (s.interest_version.load(std::memory_order_relaxed) != v1) continue;
        if (used > capacity) return Read::corrupt;
        out.clear();
        for (u64 at = 0; at < used;) {
            if (used - at < 2) return Read::corrupt;
            const u64 len = words[at + 1] >> 32;
            if (len > wire::max_announcement_size || (words[at + 1] & 0xffffffffu & ~shm::interest_wildcard) != 0)
                return Read::corrupt;
            const u64 n = (len + 7) / 8;
            if (used - at - 2 < n) return Read::corrupt;
            Interest interest;
            interest.channel = words[at];
            interest.wildcard = (words[at + 1] & shm::interest_wildcard) != 0;
            interest.announcement.resize(len);
            for (u64 j = 0; j < n; ++j)
                std::memcpy(interest.announcement.data() + j * 8, &words[at + 2 + j], std::min<u64>(8, len - j * 8));
            out.push_back(std::move(interest));
            at += 2 + n;
        }
        overflow = (flags & shm::slot_overflow) != 0;
        version = v1;
        return Read::ok;
    }
    return Read::busy;
}

// ---- owning a mapping ---------------------------------------------------------------------

struct Mapping {
    int fd = -1;
    void* base = MAP_FAILED;
    std::size_t size = 0;
    Mapping() = default;
    Mapping(const Mapping&) = delete;
    Mapping& operator=(const Mapping&) = delete;
    ~Mapping() {
        if (base != MAP_FAILED) ::munmap(base, size);
        if (fd >= 0) ::close(fd);
    }
};

// ================================================================================================
// The publisher
// ================================================================================================

class ShmOutPort final : public OutPort {
public:
    ShmOutPort(const shm::Config& config, const PortOptions& o)
        : config_(config), notices_(o.notice), mode_(o.group_access ? 0660 : 0600), memory_limit_(o.memory) {
        const std::size_t ring = config.ring ? config.ring
                                             : static_cast<std::size_t>(std::clamp(o.send_queue, 16, 4096));
        std::string why;
        if (!shm::plan(config, ring, o.max_message_size + wire::frame_header_size, view_.geo, why))
            throw Error(Errc::invalid_argument, "shared-memory transport: " + why);
        const Geometry& g = view_.geo;

        // The segment: "gecko-<session>", or the name an exact locator asks for.
        std::string name = "gecko-" + hex(o.session);
        bool exact = false;
        for (const auto& l : o.listen)
            if (scheme_of(l) == "shm") {
                name = l.substr(6);
                exact = true;
                if (!shm::valid_name(name))
                    throw Error(Errc::invalid_argument, "shared-memory locator '" + l + "': not a valid segment name");
            }
        const std::string base_name = name;
        for (int n = 1;; ++n) {
            path_ = config.directory + "/" + name;
            map_->fd = ::open(path_.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode_);
            if (map_->fd >= 0 || errno != EEXIST || exact || n > 64) break;
            name = base_name + "-" + std::to_string(n);
        }
        if (map_->fd < 0)
            throw Error(Errc::transport, "cannot create the shared-memory segment " + path_ + ": " + std::strerror(errno));
        created_ = true;
        name_ = name;
        ::fchmod(map_->fd, mode_);  // exactly, whatever the umask
        map_->size = g.total;
        if (::ftruncate(map_->fd, static_cast<off_t>(g.total)) != 0) fail("cannot size");
        // The header, slots and descriptors get their memory now: a full
        // /dev/shm is an error here, not a SIGBUS later. Chunks get theirs when
        // first used (back()).
        if (!reserve(0, g.classes[0].offset)) fail("no room for");
        resident_ = g.classes[0].offset;
        map_->base = ::mmap(nullptr, g.total, PROT_READ | PROT_WRITE, MAP_SHARED, map_->fd, 0);
        if (map_->base == MAP_FAILED) fail("cannot map");
        view_.base = static_cast<std::uint8_t*>(map_->base);
        bell_ = std::make_unique<shm::Doorbell>(shm::publisher_bell(config.directory, name_), mode_);
        if (bell_->fd() < 0) {
            const std::string reason = bell_->why();
            bell_.reset();
            cleanup();
            throw Error(Errc::transport, "shared-memory transport: " + reason);
        }
        backed_.assign(g.chunk_total, 0);
        used_pass_.assign(g.chunk_total, 0);
        loaned_.assign(g.chunk_total, 0);
        seq_.assign(g.chunk_total, 0);
        cursor_.assign(g.class_count, 0);
        class_backed_.assign(g.class_count, 0);
        my_ns_ = shm::own_pid_namespace();
        shm::write_header(view_.header(), g, o.session);
        locator_ = "shm://" + name_;
        next_housekeeping_ = shm::monotonic_ns() + static_cast<u64>(config_.check_interval.count()) * ms_ns;
    }

    ~ShmOutPort() override {
        // Not into a segment someone truncated (the writes would fault).
        struct stat st {};
        if (::fstat(map_->fd, &st) == 0 && static_cast<u64>(st.st_size) >= view_.geo.total) {
            Header& h = view_.header();
            h.closed.store(1, std::memory_order_release);
            h.changes.fetch_add(1, std::memory_order_acq_rel);
        }
        // Every subscriber wakes up and sees `closed` (it unmaps when its Frames are gone).
        for (auto& p : peers_) {
            shm::ring(p.bell);
            if (p.bell >= 0) ::close(p.bell);
        }
        cleanup();
    }

    std::vector<std::string> locators() const override { return {locator_}; }

    bool takes_memory() const override { return false; }  // send() copies

    SendResult send(Buffer& frame) override {
        const std::size_t size = frame.size();
        if (size < 8) return SendResult{false, 0};
        SendResult result;
        u64 targets = 0;
        if (!targets_of(wire::load_channel(frame.data()), targets)) return SendResult{false, 0};
        if (targets == 0) return result;
        const u64 c = allocate(size, result);
        if (c == no_chunk) {
            lost(targets, result);
            return result;
        }
        std::memcpy(view_.payload(c), frame.data(), size);
        deliver(c, size, targets, result);
        return result;
    }

    // A loan is a free chunk the publisher writes into; only the publisher
    // allocates, so marking it here (owners stays 0 in the segment) keeps it
    // from being handed out twice. At most half of a class is lent at once:
    // sends always find chunks.
    bool lend(std::size_t capacity, FrameLoan& out) override {
        if (closed_ || capacity < wire::frame_header_size) return false;
        const Geometry& g = view_.geo;
        const std::size_t k = g.class_for(capacity);
        if (k == g.class_count || loans_[k] >= std::max<u64>(1, g.classes[k].count / 2)) return false;
        SendResult taken;
        const u64 c = allocate(capacity, taken, false);
        loan_dropped_ += taken.dropped;
        if (c == no_chunk) return false;
        loaned_[c] = 1;
        ++loans_[g.class_of(c)];
        out.data = view_.payload(c);
        out.capacity = g.classes[g.class_of(c)].chunk_size;
        out.token = c;
        out.keep = map_;
        return true;
    }

    SendResult send_loan(FrameLoan& loan, std::size_t size) override {
        const u64 c = loan.token;
        if (!mine(loan)) return SendResult{false, 0};
        unlend(c);
        SendResult result;
        result.dropped = std::exchange(loan_dropped_, 0);
        u64 targets = 0;
        if (size < 8 || size > loan.capacity || !targets_of(wire::load_channel(view_.payload(c)), targets))
            return SendResult{false, result.dropped};
        if (targets == 0) return result;  // the chunk is free again
        seq_[c] = ++seq_counter_;         // its age counts from now
        deliver(c, size, targets, result);
        return result;
    }

    void return_loan(FrameLoan& loan) override {
        if (mine(loan)) unlend(loan.token);
    }

    void drain_events(FunctionRef<void(const PortEvent&)> on) override {
        if (bell_) bell_->drain();
        events_pending();
        std::vector<PortEvent> events;
        events.swap(events_);
        for (const auto& e : events) on(e);
    }

    bool events_pending() override {
        if (closed_) return !events_.empty();
        housekeeping();
        if (!closed_ && view_.header().changes.load(std::memory_order_acquire) != seen_changes_) refresh(false);
        return !events_.empty();
    }

    int event_fd() const override { return bell_ ? bell_->fd() : -1; }
    void tidy() override { shm::remove_stale(config_.directory, config_.lease); }

    void info(ShmOutInfo& out) {
        out.name = name_;
        out.notices = notices_.lines();
        out.closed = !intact();
        if (out.closed) return;
        out.chunks = view_.geo.chunk_total;
        out.chunks_free = 0;
        for (u64 c = 0; c < view_.geo.chunk_total; ++c)
            if (is_free(c)) ++out.chunks_free;
        out.subscribers = 0;
        for (std::size_t i = 0; i < view_.geo.slot_count; ++i)
            if (shm::state_of(view_.slot(i).state.load(std::memory_order_acquire)) != shm::slot_free) ++out.subscribers;
        out.dropped = dropped_;
        out.reclaimed = reclaimed_;
        out.corrupt = corrupt_;
        out.memory = resident_;
        out.memory_limit = memory_limit_;
        out.over_memory = over_memory_;
    }

private:
    // What the publisher knows of one slot (never re-read from shared memory
    // without a check).
    struct Peer {
        u64 word = 0;        // the state word it was seen active with (0: none)
        bool active = false; // frames are queued for it
        u64 version = ~u64{0};
        std::vector<Interest> interests;
        std::vector<wire::Channel> exact;  // sorted
        std::vector<std::uint32_t> keys;   // wildcard key parts
        bool everything = false;           // its interests overflowed the slot
        int bell = -1;
        u64 tail = 0;
        // Its head as last read: while tail - head_seen < capacity there is
        // room, without reading the line the subscriber moves on every take.
        u64 head_seen = 0;
        u64 next_alive_check = 0;

        bool wants(wire::Channel c) const {
            if (everything) return true;
            if (std::binary_search(exact.begin(), exact.end(), c)) return true;
            for (auto k : keys)
                if (k == wire::key_part(c)) return true;
            return false;
        }
    };

    [[noreturn]] void fail(const char* what) {
        const std::string reason = std::strerror(errno);
        cleanup();
        throw Error(Errc::transport, std::string("shared-memory transport: ") + what + " the segment " + path_ + ": " + reason);
    }

    void cleanup() {
        if (created_) {
            ::unlink(path_.c_str());
            created_ = false;
        }
        bell_.reset();  // unlinks its FIFO
    }

    // Gives [offset, offset+len) of the segment memory now; false if /dev/shm is full.
    bool reserve(u64 offset, u64 len) {
        if (::fallocate(map_->fd, 0, static_cast<off_t>(offset), static_cast<off_t>(len)) == 0) return true;
        return errno == EOPNOTSUPP || errno == ENOSYS;  // not tmpfs: pages come on first touch
    }

    // ---- slots ------------------------------------------------------------------------------

    void report(bool joined, const Interest& i) {
        if (i.announcement.empty()) return;
        auto who = wire::parse_announcement(i.announcement);
        if (!who) return;
        events_.push_back(PortEvent{joined, std::move(*who)});
    }

    void set_interests(Peer& p, std::vector<Interest> interests, bool everything) {
        // Joins and leaves, as a multiset difference of the announcements.
        std::vector<bool> kept(p.interests.size(), false);
        for (const auto& n : interests) {
            bool found = false;
            for (std::size_t k = 0; k < p.interests.size() && !found; ++k)
                if (!kept[k] && same_interest(p.interests[k], n)) found = kept[k] = true;
            if (!found) report(true, n);
        }
        for (std::size_t k = 0; k < p.interests.size(); ++k)
            if (!kept[k]) report(false, p.interests[k]);
        p.interests = std::move(interests);
        p.exact.clear();
        p.keys.clear();
        for (const auto& i : p.interests) {
            if (i.wildcard) p.keys.push_back(wire::key_part(i.channel));
            else p.exact.push_back(i.channel);
        }
        std::sort(p.exact.begin(), p.exact.end());
        p.everything = everything;
    }

    void update_interests(std::size_t i) {
        std::vector<Interest> interests;
        bool overflow = false;
        u64 version = 0;
        switch (read_interests(view_, i, interests, overflow, version)) {
            case Read::ok:
                peers_[i].version = version;
                set_interests(peers_[i], std::move(interests), overflow);
                break;
            case Read::busy:
                seen_changes_ = ~u64{0};  // look again next time
                break;
            case Read::corrupt:
                ++corrupt_;
                reclaim(i, "its subscriber wrote unreadable interests");
                break;
        }
    }

    void join(std::size_t i, u64 word) {
        SlotHead& s = view_.slot(i);
        Peer& p = peers_[i];
        if (p.bell >= 0) ::close(p.bell);
        p = Peer{};
        p.word = word;
        p.tail = s.tail.load(std::memory_order_relaxed);
        const u64 head = s.head.load(std::memory_order_acquire);
        if (head > p.tail || p.tail - head > view_.geo.ring_capacity) {
            ++corrupt_;
            reclaim(i, "its ring indices are out of range");
            return;
        }
        p.head_seen = head;
        p.active = true;
        p.bell = shm::open_bell(bell_path(i));
        update_interests(i);
    }

    std::string bell_path(std::size_t i) const {
        SlotHead& s = view_.slot(i);
        return shm::subscriber_bell(config_.directory, s.pid_ns.load(std::memory_order_relaxed),
                                    shm::pid_of(s.state.load(std::memory_order_relaxed)),
                                    s.start_time.load(std::memory_order_relaxed), s.bell.load(std::memory_order_relaxed));
    }

    void leave_all(Peer& p) {
        if (p.active)
            for (const auto& i : p.interests) report(false, i);
        p.active = false;
        p.interests.clear();
        p.exact.clear();
        p.keys.clear();
        p.everything = false;
    }

    // Takes back every queued entry (the subscriber left: not counted as drops).
    void steal_all(std::size_t i) {
        SlotHead& s = view_.slot(i);
        std::atomic<u64>* ring = view_.ring(i);
        const u64 cap = view_.geo.ring_capacity;
        const u64 tail = peers_[i].tail;
        u64 h = s.head.load(std::memory_order_acquire);
        for (u64 guard = 0; h < tail && tail - h <= cap && guard <= cap; ++guard)
            if (s.head.compare_exchange_strong(h, h + 1, std::memory_order_acq_rel, std::memory_order_acquire))
                release(ring[h % cap].load(std::memory_order_relaxed), i);
    }

    // Frees slot i whatever its subscriber did: every chunk it held comes back.
    void reclaim(std::size_t i, const char* why, bool dead = false) {
        SlotHead& s = view_.slot(i);
        Peer& p = peers_[i];
        const u64 word = s.state.load(std::memory_order_acquire);
        leave_all(p);
        if (dead) ::unlink(bell_path(i).c_str());  // its doorbell: nobody else will remove it
        const u64 b = bit(i);
        for (u64 c = 0; c < view_.geo.chunk_total; ++c) {
            auto& owners = view_.desc(c).owners;
            if (owners.load(std::memory_order_relaxed) & b) owners.fetch_and(~b, std::memory_order_acq_rel);
        }
        s.head.store(0, std::memory_order_relaxed);
        s.tail.store(0, std::memory_order_relaxed);
        s.armed.store(0, std::memory_order_relaxed);
        s.dropped.store(0, std::memory_order_relaxed);
        s.interest_used.store(0, std::memory_order_relaxed);
        s.interest_version.store(0, std::memory_order_relaxed);
        s.flags.store(0, std::memory_order_relaxed);
        s.start_time.store(0, std::memory_order_relaxed);
        s.pid_ns.store(0, std::memory_order_relaxed);
        s.bell.store(0, std::memory_order_relaxed);
        s.heartbeat_ns.store(0, std::memory_order_relaxed);
        s.state.store(shm::make_state(0, shm::generation_of(word), shm::slot_free), std::memory_order_release);
        if (p.bell >= 0) ::close(p.bell);
        p = Peer{};
        if (why) {
            ++reclaimed_;
            notices_.add(LogLevel::info, "shm subscriber reclaimed",
                         "shared memory " + name_ + ": freed subscriber slot " + std::to_string(i) + " (pid " +
                             std::to_string(shm::pid_of(word)) + "): " + why);
        }
        rebuild_active();
    }

    void reclaim_corrupt() {
        const u64 slots = std::exchange(corrupt_slots_, 0);
        for (std::size_t i = 0; i < view_.geo.slot_count; ++i)
            if (slots & bit(i)) {
                ++corrupt_;
                reclaim(i, "its ring indices are out of range");
            }
    }

    bool alive(std::size_t i, u64 now) {
        SlotHead& s = view_.slot(i);
        const u64 ns = s.pid_ns.load(std::memory_order_relaxed);
        if (ns == 0 || ns == my_ns_)
            return shm::process_alive(shm::pid_of(s.state.load(std::memory_order_relaxed)),
                                      s.start_time.load(std::memory_order_relaxed));
        // Another pid namespace: its pid means nothing here; its lease does.
        const u64 beat = s.heartbeat_ns.load(std::memory_order_relaxed);
        return now <= beat || now - beat < static_cast<u64>(config_.lease.count()) * ms_ns;
    }

    // At most every 10 ms per slot (a full ring is looked at on every send).
    bool alive_now(std::size_t i) {
        const u64 now = shm::monotonic_ns();
        Peer& p = peers_[i];
        if (now < p.next_alive_check) return true;
        p.next_alive_check = now + 10 * ms_ns;
        return alive(i, now);
    }

    bool ring_full(std::size_t i) const {
        return peers_[i].tail - view_.slot(i).head.load(std::memory_order_relaxed) >= view_.geo.ring_capacity;
    }

    // Whether the segment still has its size. Someone else (same user) cutting
    // it short would make our next write fault: checked whenever the slots are
    // re-read (a subscriber changed something) and at every housekeeping, not
    // on every send (a system call). Truncated: the port closes.
    bool intact() {
        if (closed_) return false;
        struct stat st {};
        if (::fstat(map_->fd, &st) != 0 || static_cast<u64>(st.st_size) >= view_.geo.total) return true;
        closed_ = true;
        notices_.add(LogLevel::error, "shm segment truncated",
                     "shared memory " + name_ + " was truncated to " + std::to_string(st.st_size) + " bytes by someone " +
                         "else: this port sends nothing more over shared memory");
        return false;
    }

    // Reads every slot's state; with `liveness`, also checks that its process runs.
    void refresh(bool liveness) {
        if (!intact()) return;
        seen_changes_ = view_.header().changes.load(std::memory_order_acquire);
        const u64 now = liveness ? shm::monotonic_ns() : 0;
        for (std::size_t i = 0; i < view_.geo.slot_count; ++i) {
            SlotHead& s = view_.slot(i);
            Peer& p = peers_[i];
            const u64 word = s.state.load(std::memory_order_acquire);
            switch (shm::state_of(word)) {
                case shm::slot_free:
                    if (p.word != 0) {
                        leave_all(p);
                        if (p.bell >= 0) ::close(p.bell);
                        p = Peer{};
                    }
                    break;
                case shm::slot_claiming:
                    if (liveness && !alive(i, now)) reclaim(i, "its subscriber died while connecting", true);
                    break;
                case shm::slot_active:
                    if (p.word != word) {
                        leave_all(p);
                        join(i, word);
                    } else if (s.interest_version.load(std::memory_order_acquire) != p.version) {
                        update_interests(i);
                    }
                    if (liveness && peers_[i].word != 0) {
                        if (!alive(i, now)) reclaim(i, "its subscriber died", true);
                        else if (peers_[i].bell < 0) peers_[i].bell = shm::open_bell(bell_path(i));
                    }
                    break;
                case shm::slot_leaving:
                    if (p.active) {
                        leave_all(p);
                        steal_all(i);
                    }
                    p.word = word;
                    if (liveness && !alive(i, now)) reclaim(i, "its subscriber died", true);
                    break;
                case shm::slot_departed:
                    if (p.active) leave_all(p);
                    reclaim(i, nullptr);
                    break;
                default:
                    ++corrupt_;
                    reclaim(i, "its state word is garbage");
                    break;
            }
        }
        rebuild_active();
    }

    void rebuild_active() {
        active_.clear();
        for (std::size_t i = 0; i < view_.geo.slot_count; ++i)
            if (peers_[i].active) active_.push_back(i);
    }

    // Every check_interval: heartbeat, liveness of subscribers, size of the
    // segment, and memory given back for idle large chunks.
    void housekeeping() {
        const u64 now = shm::monotonic_ns();
        if (now < next_housekeeping_) return;
        next_housekeeping_ = now + static_cast<u64>(config_.check_interval.count()) * ms_ns;
        if (!intact()) return;
        view_.header().heartbeat_ns.store(now, std::memory_order_relaxed);
        refresh(true);
        // Large chunks unused for release_after give their memory back (a
        // hole punched); one in use every few passes keeps its pages.
        ++pass_;
        const u64 idle_passes = std::max<u64>(
            1, static_cast<u64>(config_.release_after.count() / std::max<long long>(1, config_.check_interval.count())));
        for (u64 c = 0; c < view_.geo.chunk_total; ++c) {
            if (!backed_[c] || view_.geo.classes[view_.geo.class_of(c)].chunk_size < config_.lazy_from) continue;
            if (pass_ - used_pass_[c] < idle_passes || !is_free(c)) continue;
            give_back(c);
        }
    }

    // Punches chunk c's pages out of the segment: their memory goes back to the system.
    void give_back(u64 c) {
        ::fallocate(map_->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(view_.geo.payload_offset(c)),
                    static_cast<off_t>(backed_[c]));
        resident_ -= backed_[c];
        backed_[c] = 0;
    }

    // ---- chunks -----------------------------------------------------------------------------

    // Who gets a frame on `channel` (0: nobody). A full ring may belong to a
    // dead subscriber: looked at before taking frames from it. False if the
    // port is closed.
    bool targets_of(wire::Channel channel, u64& targets) {
        if (closed_) return false;
        if (view_.header().changes.load(std::memory_order_acquire) != seen_changes_) refresh(false);
        if ((++sends_ & 63u) == 0) housekeeping();
        if (closed_) return false;
        targets = 0;
        for (std::size_t i : active_)
            if (peers_[i].wants(channel)) targets |= bit(i);
        if (targets == 0) return true;
        u64 dead = 0;
        for (std::size_t i : active_)
            if ((targets & bit(i)) && ring_full(i) && !alive_now(i)) dead |= bit(i);
        if (dead != 0) {
            for (std::size_t i = 0; i < view_.geo.slot_count; ++i)
                if (dead & bit(i)) reclaim(i, "its subscriber died", true);
            targets &= ~dead;
        }
        return true;
    }

    // Queues chunk c (its first `size` bytes are the frame) for every target and wakes the sleepers.
    void deliver(u64 c, std::size_t size, u64 targets, SendResult& result) {
        ChunkDesc& d = view_.desc(c);
        d.size.store(size, std::memory_order_relaxed);
        d.owners.store(targets, std::memory_order_release);
        for (std::size_t i = 0; i < view_.geo.slot_count; ++i)
            if (targets & bit(i)) push(i, c, result);
        for (std::size_t i = 0; i < view_.geo.slot_count; ++i)
            if (targets & bit(i)) wake(i);
        if (corrupt_slots_) reclaim_corrupt();
    }

    // No chunk for a frame: every target loses it, counted.
    void lost(u64 targets, SendResult& result) {
        for (std::size_t i = 0; i < view_.geo.slot_count; ++i)
            if (targets & bit(i)) view_.slot(i).dropped.fetch_add(1, std::memory_order_relaxed);
        const auto n = static_cast<std::size_t>(__builtin_popcountll(targets));
        result.dropped += n;
        dropped_ += n;
    }

    bool mine(const FrameLoan& loan) const {
        return loan.keep == map_ && loan.token < view_.geo.chunk_total && loaned_[loan.token];
    }

    void unlend(u64 c) {
        loaned_[c] = 0;
        --loans_[view_.geo.class_of(c)];
    }

    void release(u64 c, std::size_t i) {
        if (c < view_.geo.chunk_total) view_.desc(c).owners.fetch_and(~bit(i), std::memory_order_acq_rel);
    }

    // Makes sure the pages of chunk c that a `size`-byte frame uses exist
    // (fallocate) before the publisher writes them: a full /dev/shm is a
    // dropped frame, never a SIGBUS. A huge chunk is backed only as far as used.
    bool back(u64 c, std::size_t size) {
        const std::size_t k = view_.geo.class_of(c);
        const auto& cl = view_.geo.classes[k];
        if (cl.chunk_size < shm::page) {
            if (class_backed_[k]) return true;
            if (!reserve(cl.offset, cl.chunk_size * cl.count)) return false;
            class_backed_[k] = 1;
            resident_ += cl.chunk_size * cl.count;
            return true;
        }
        const u64 need = backing(c, size);
        if (backed_[c] >= need) return true;
        if (!reserve(view_.geo.payload_offset(c) + backed_[c], need - backed_[c])) return false;
        resident_ += need - backed_[c];
        backed_[c] = need;
        return true;
    }

    // The bytes of chunk c a `size`-byte frame needs memory behind (whole pages).
    u64 backing(u64 c, std::size_t size) const {
        const auto& cl = view_.geo.classes[view_.geo.class_of(c)];
        if (cl.chunk_size < shm::page) return class_backed_[view_.geo.class_of(c)] ? 0 : cl.chunk_size * cl.count;
        return std::min<u64>(cl.chunk_size, (size + shm::page - 1) / shm::page * shm::page);
    }

    // Whether chunk c can take a `size`-byte frame within PortOptions::memory.
    bool within_memory(u64 c, std::size_t size) const {
        if (memory_limit_ == 0) return true;
        const u64 need = backing(c, size);  // backed_ of a small class's chunk is 0: its whole class, or 0 once there
        return resident_ + (need > backed_[c] ? need - backed_[c] : 0) <= memory_limit_;
    }

    // Chunk c for a `size`-byte frame if that stays within PortOptions::memory;
    // else a free chunk of its class whose pages are there already; else c once
    // idle chunks (free, not lent) have given their pages back, least recently
    // used first. no_chunk if none of that makes room.
    u64 within_memory_or_other(u64 c, std::size_t size) {
        if (within_memory(c, size)) return c;
        const auto& cl = view_.geo.classes[view_.geo.class_of(c)];
        for (u64 d = cl.first; d < cl.first + cl.count; ++d)
            if (d != c && backed_[d] >= backing(d, size) && is_free(d)) return d;
        while (!within_memory(c, size)) {
            u64 oldest = no_chunk;
            for (u64 d = 0; d < view_.geo.chunk_total; ++d)
                if (d != c && backed_[d] && is_free(d) && (oldest == no_chunk || used_pass_[d] < used_pass_[oldest])) oldest = d;
            if (oldest == no_chunk) return no_chunk;
            give_back(oldest);
        }
        return c;
    }

    bool is_free(u64 c) const { return !loaned_[c] && view_.desc(c).owners.load(std::memory_order_acquire) == 0; }

    u64 take_chunk(u64 c, std::size_t size) {
        if (!back(c, size)) {
            notices_.add(LogLevel::warn, "shm full", "shared memory " + name_ + ": no room left in " + config_.directory +
                                                         " for a " + std::to_string(size) + "-byte frame: frames are dropped");
            return no_chunk;
        }
        seq_[c] = ++seq_counter_;
        used_pass_[c] = pass_;
        const std::size_t k = view_.geo.class_of(c);
        recent_[k][recent_at_[k]++ % recent_[k].size()] = c;
        return c;
    }

    // A free chunk of class k: one of the last few used first (their pages
    // are mapped and warm in both processes), else the next in turn.
    u64 find_free(std::size_t k) {
        const auto& cl = view_.geo.classes[k];
        for (std::size_t n = 1; n <= recent_[k].size() && n <= recent_at_[k]; ++n) {
            const u64 c = recent_[k][(recent_at_[k] - n) % recent_[k].size()];
            if (is_free(c)) return c;
        }
        // A class whose last look found every chunk queued or held (a
        // subscriber behind): look at the next 16 chunks only (each look
        // further on), and at the whole class again every 32nd time.
        // Scanning all of it on every frame, only to take back the oldest
        // queued one anyway, was most of a publisher's time while its
        // subscriber fell behind.
        const u64 budget = starved_[k] % 32 != 0 ? std::min<u64>(cl.count, 16) : cl.count;
        for (u64 n = 0; n < budget; ++n) {
            const u64 idx = (cursor_[k] + n) % cl.count;
            if (is_free(cl.first + idx)) {
                cursor_[k] = idx + 1;
                starved_[k] = 0;
                return cl.first + idx;
            }
        }
        if (budget < cl.count) cursor_[k] = (cursor_[k] + budget) % cl.count;  // the next look goes further
        ++starved_[k];
        return no_chunk;
    }

    // A free chunk for `size` bytes: the smallest class that fits; when it is
    // exhausted, the oldest queued frames of that class are taken back
    // (counted as drops for their subscribers); then a larger class.
    u64 allocate(std::size_t size, SendResult& result, bool say = true) {
        const Geometry& g = view_.geo;
        const std::size_t k = g.class_for(size);
        if (k == g.class_count) {
            if (say)
                notices_.add(LogLevel::warn, "shm frame too large",
                             "shared memory " + name_ + ": a " + std::to_string(size) +
                                 "-byte frame is larger than its largest chunk (" + std::to_string(g.largest()) +
                                 " bytes): dropped");
            return no_chunk;
        }
        if (u64 c = find_free(k); c != no_chunk) {
            c = within_memory_or_other(c, size);
            if (c != no_chunk) return take_chunk(c, size);
        }
        const u64 cap = g.ring_capacity;
        for (u64 guard = 0; guard < g.slot_count * cap; ++guard) {
            std::size_t best = g.slot_count;
            u64 best_seq = ~u64{0}, best_head = 0;
            for (std::size_t i : active_) {
                const u64 h = view_.slot(i).head.load(std::memory_order_acquire);
                if (h >= peers_[i].tail || peers_[i].tail - h > cap) continue;
                const u64 e = view_.ring(i)[h % cap].load(std::memory_order_relaxed);
                if (e >= g.chunk_total || g.class_of(e) != k || seq_[e] >= best_seq) continue;
                best = i;
                best_seq = seq_[e];
                best_head = h;
            }
            if (best == g.slot_count) break;
            SlotHead& s = view_.slot(best);
            u64 h = best_head;
            // A few at once: the head is the subscriber's line, and a
            // publisher ahead of it would otherwise take it on every frame.
            const u64 n = std::min<u64>(kPoolTakeBack, peers_[best].tail - best_head);
            if (!s.head.compare_exchange_strong(h, h + n, std::memory_order_acq_rel, std::memory_order_acquire)) continue;
            u64 first = no_chunk;
            for (u64 j = 0; j < n; ++j) {
                const u64 e = view_.ring(best)[(best_head + j) % cap].load(std::memory_order_relaxed);
                if (e >= g.chunk_total) continue;
                release(e, best);
                if (first == no_chunk) first = e;
            }
            s.dropped.fetch_add(n, std::memory_order_relaxed);
            result.dropped += n;
            dropped_ += n;
            if (first != no_chunk && view_.desc(first).owners.load(std::memory_order_acquire) == 0) {
                if (const u64 c = within_memory_or_other(first, size); c != no_chunk) return take_chunk(c, size);
            }
        }
        for (std::size_t larger = k + 1; larger < g.class_count; ++larger)
            if (u64 c = find_free(larger); c != no_chunk && (c = within_memory_or_other(c, size)) != no_chunk)
                return take_chunk(c, size);
        if (memory_limit_ && resident_ + backing(g.classes[k].first, size) > memory_limit_) {
            ++over_memory_;
            if (say)
                notices_.add(LogLevel::warn, "shm memory",
                             "shared memory " + name_ + ": a " + std::to_string(size) + "-byte frame would take the segment past " +
                                 std::to_string(memory_limit_ >> 10) + " KiB (NodeOptions::shared_memory_size, "
                                 "GECKO_SHM_SIZE) while subscribers hold the rest: the frame is dropped; give it more");
            return no_chunk;
        }
        if (say)
            notices_.add(LogLevel::warn, "shm pool exhausted",
                         "shared memory " + name_ + ": every chunk for a " + std::to_string(size) +
                             "-byte frame is held by subscribers: the frame is dropped");
        return no_chunk;
    }

    // Queues chunk c for slot i; a full ring loses its oldest entry.
    void push(std::size_t i, u64 c, SendResult& result) {
        SlotHead& s = view_.slot(i);
        Peer& p = peers_[i];
        std::atomic<u64>* ring = view_.ring(i);
        const u64 cap = view_.geo.ring_capacity;
        const u64 t = p.tail;
        u64 h = t - p.head_seen < cap ? p.head_seen : s.head.load(std::memory_order_acquire);
        for (u64 guard = 0;; ++guard) {
            if (h > t || t - h > cap || guard > cap) {
                corrupt_slots_ |= bit(i);
                release(c, i);
                return;
            }
            if (t - h < cap) break;
            // Full: the oldest eighth of the ring goes at once (one move of the
            // head the subscriber also moves, not one per frame sent while it
            // stays behind). Only the publisher writes entries: reading them
            // around the CAS is safe.
            const u64 n = std::max<u64>(1, cap / 8);
            if (s.head.compare_exchange_weak(h, h + n, std::memory_order_acq_rel, std::memory_order_acquire)) {
                for (u64 k = 0; k < n; ++k) release(ring[(h + k) % cap].load(std::memory_order_relaxed), i);
                s.dropped.fetch_add(n, std::memory_order_relaxed);
                result.dropped += n;
                dropped_ += n;
                h += n;
            }
        }
        ring[t % cap].store(c, std::memory_order_relaxed);
        s.tail.store(t + 1, std::memory_order_seq_cst);
        p.tail = t + 1;
        p.head_seen = h;
    }

    // Rings slot i's doorbell if its subscriber said it sleeps.
    void wake(std::size_t i) {
        auto& armed = view_.slot(i).armed;
        if (armed.load(std::memory_order_seq_cst) != 0 && armed.exchange(0, std::memory_order_seq_cst) != 0)
            shm::ring(peers_[i].bell);
    }

    shm::Config config_;
    PortNotices notices_;
    mode_t mode_;
    std::shared_ptr<Mapping> map_ = std::make_shared<Mapping>();  // shared with loans: mapped while one lives
    View view_;
    std::string path_, name_, locator_;
    bool created_ = false;
    bool closed_ = false;
    std::unique_ptr<shm::Doorbell> bell_;
    std::array<Peer, shm::max_slots> peers_;
    std::vector<std::size_t> active_;
    std::vector<PortEvent> events_;
    u64 seen_changes_ = ~u64{0};
    u64 corrupt_slots_ = 0;
    std::size_t memory_limit_;                   // PortOptions::memory: the most resident_ may be (0: no bound)
    u64 resident_ = 0;                           // bytes of the segment with memory behind them
    u64 over_memory_ = 0;                        // frames dropped for memory_limit_
    std::vector<u64> backed_;                    // per chunk: bytes with memory behind them (from its start)
    std::vector<std::uint8_t> class_backed_;     // per class of small chunks: all backed at once
    std::vector<u64> used_pass_;                 // per chunk: the housekeeping pass it was last taken in
    u64 pass_ = 0;
    std::array<std::array<u64, 4>, shm::max_classes> recent_{};  // per class: the last chunks taken
    std::array<std::size_t, shm::max_classes> recent_at_{};
    std::array<std::uint32_t, shm::max_classes> starved_{};  // looks in a row that found a class exhausted
    std::vector<std::uint8_t> loaned_;           // per chunk: lent to the publisher, owners still 0
    std::array<u64, shm::max_classes> loans_{};  // per class: chunks lent now
    std::size_t loan_dropped_ = 0;               // frames taken back to make a loan: told at the next send
    std::vector<u64> seq_;
    std::vector<u64> cursor_;
    u64 seq_counter_ = 0;
    u64 my_ns_ = 0;
    u64 next_housekeeping_ = 0;
    unsigned sends_ = 0;
    u64 dropped_ = 0, reclaimed_ = 0, corrupt_ = 0;
};

// ================================================================================================
// The subscriber
// ================================================================================================

// One connection of an InPort to one publisher's segment. Reference counted:
// the InPort holds one reference while connected, every Frame taken from it
// one more; the mapping lives until the last is gone.
struct Link {
    std::atomic<long> refs{1};
    std::atomic<bool> detached{false};  // do not touch the segment any more (truncated, or slot taken back)
    std::string locator, name;
    Mapping map;
    View view;
    std::size_t slot = 0;
    u64 bit = 0;
    u64 word = 0;  // our state word
    // The ring's tail as last read: while our head is below it, entries are
    // there without reading the tail again (the publisher's line, written on
    // every send: one cache miss per frame saved while a backlog lasts).
    u64 tail_seen = 0;
    int publisher_bell = -1;
    std::unique_ptr<std::atomic<std::uint32_t>[]> local;  // per chunk: this process's Frames on it
    std::array<std::atomic<std::uint32_t>, shm::max_classes> held{};
    std::array<std::uint32_t, shm::max_classes> held_limit{};
    std::uint32_t owner_pid = 0;
    u64 owner_start = 0;
    bool same_ns = true;
    bool armed_by_us = false;
    // Classes whose frames wait in the ring for our share (chunks of
    // Config::wait_from or more): bit k for class k.
    std::uint32_t waiting_classes = 0;
    // The class of the frame at our ring's head while we hold our share of
    // that class (-1: none): it waits in the ring, since `blocked_since`.
    int blocked_class = -1;
    std::chrono::steady_clock::time_point blocked_since{};

    ~Link() {
        if (!detached.load(std::memory_order_acquire) && map.base != MAP_FAILED) {
            SlotHead& s = view.slot(slot);
            u64 expected = word;
            if (shm::state_of(word) == shm::slot_leaving &&
                s.state.compare_exchange_strong(expected, shm::make_state(shm::pid_of(word), shm::generation_of(word), shm::slot_departed),
                                                std::memory_order_acq_rel)) {
                view.header().changes.fetch_add(1, std::memory_order_acq_rel);
                shm::ring(publisher_bell);
            }
        }
        if (publisher_bell >= 0) ::close(publisher_bell);
    }
};

void unref(Link* l) noexcept {
    if (l->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete l;
}

// A Frame's handle on a chunk: zero copy.
struct ChunkHandle {
    Link* link;
    const std::uint8_t* data;
    std::size_t size;
    u64 chunk;
};

void release_chunk(Link& l, u64 c) noexcept {
    if (l.local[c].fetch_sub(1, std::memory_order_acq_rel) != 1) return;
    l.held[l.view.geo.class_of(c)].fetch_sub(1, std::memory_order_relaxed);
    if (!l.detached.load(std::memory_order_acquire)) l.view.desc(c).owners.fetch_and(~l.bit, std::memory_order_acq_rel);
}

const std::uint8_t* chunk_data(const void* h) noexcept { return static_cast<const ChunkHandle*>(h)->data; }
std::size_t chunk_size(const void* h) noexcept { return static_cast<const ChunkHandle*>(h)->size; }
void chunk_move(void* from, void* to) noexcept {
    auto* f = static_cast<ChunkHandle*>(from);
    new (to) ChunkHandle(*f);
    f->link = nullptr;
}
void chunk_destroy(void* h) noexcept {
    auto* handle = static_cast<ChunkHandle*>(h);
    if (!handle->link) return;
    release_chunk(*handle->link, handle->chunk);
    unref(handle->link);
    handle->link = nullptr;
}
bool chunk_share(const void* h, void* to) noexcept {
    const auto* handle = static_cast<const ChunkHandle*>(h);
    if (!handle->link) return false;
    handle->link->local[handle->chunk].fetch_add(1, std::memory_order_relaxed);
    handle->link->refs.fetch_add(1, std::memory_order_relaxed);
    new (to) ChunkHandle(*handle);
    return true;
}
const Frame::Ops chunk_frame_ops{chunk_data, chunk_size, chunk_move, chunk_destroy, chunk_share};


class ShmInPort final : public InPort {
public:
    ShmInPort(const shm::Config& config, const PortOptions& o)
        : config_(config), notices_(o.notice), spin_(o.spin),
          max_frame_(o.max_message_size + wire::frame_header_size) {
        pid_ = static_cast<std::uint32_t>(::getpid());
        start_ = shm::own_start_time();
        ns_ = shm::own_pid_namespace();
        nonce_ = random_nonce();
        bell_ = std::make_unique<shm::Doorbell>(shm::subscriber_bell(config.directory, ns_, pid_, start_, nonce_),
                                                o.group_access ? 0660 : 0600);
        if (bell_->fd() < 0) throw Error(Errc::transport, "shared-memory transport: " + bell_->why());
    }

    ~ShmInPort() override {
        for (Link* l : links_) leave(*l);
    }

    bool may_open_later(const std::string& locator) const override {
        if (scheme_of(locator) != "shm" || !shm::valid_name(locator.substr(6))) return false;
        struct stat st {};
        return ::stat((config_.directory + "/" + locator.substr(6)).c_str(), &st) != 0 && errno == ENOENT;
    }

    bool connect(const std::string& locator, std::string& why) override {
        if (scheme_of(locator) != "shm") {
            why = "not a shared-memory locator";
            return false;
        }
        const std::string name = locator.substr(6);
        if (!shm::valid_name(name)) {
            why = "'" + name + "' is not a shared-memory segment name";
            return false;
        }
        for (Link* l : links_)
            if (l->locator == locator) return true;
        auto link = std::unique_ptr<Link, void (*)(Link*)>(new Link, [](Link* l) { unref(l); });
        link->detached = true;  // until the slot is ours
        link->locator = locator;
        link->name = name;
        const std::string path = config_.directory + "/" + name;
        link->map.fd = ::open(path.c_str(), O_RDWR | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
        if (link->map.fd < 0) {
            const int e = errno;
            why = e == ENOENT ? "no shared-memory segment " + path + " (its publisher is gone, or runs in another container)"
                  : e == EACCES ? "no permission to open " + path +
                                      " (another user's segment; users who share a group link over shared memory when "
                                      "the publishing node sets GECKO_SHM_GROUP=1)"
                                : "cannot open " + path + ": " + std::strerror(e);
            return false;
        }
        struct stat st {};
        if (::fstat(link->map.fd, &st) != 0 || !S_ISREG(st.st_mode)) {
            why = path + " is not a shared-memory segment";
            return false;
        }
        shm::HeaderCopy h;
        if (!shm::read_header(link->map.fd, h)) {
            why = path + " is shorter than a segment header (" + std::to_string(st.st_size) + " bytes)";
            return false;
        }
        if (!shm::validate(h, static_cast<u64>(st.st_size), link->view.geo, why)) {
            why = path + ": " + why;
            return false;
        }
        if (h.closed) {
            why = "its publisher closed " + path;
            return false;
        }
        link->owner_pid = static_cast<std::uint32_t>(h.owner_pid);
        link->owner_start = h.owner_start;
        link->same_ns = h.owner_pidns == ns_;
        if (!publisher_alive(*link, h.heartbeat_ns)) {
            why = "the publisher of " + path + " (pid " + std::to_string(h.owner_pid) + ") is dead";
            return false;
        }
        link->map.size = link->view.geo.total;
        link->map.base = ::mmap(nullptr, link->map.size, PROT_READ | PROT_WRITE, MAP_SHARED, link->map.fd, 0);
        if (link->map.base == MAP_FAILED) {
            why = "cannot map " + path + ": " + std::strerror(errno);
            return false;
        }
        link->view.base = static_cast<std::uint8_t*>(link->map.base);
        const View& v = link->view;
        // Claim a free slot: the CAS writes our pid with the state, so a slot
        // whose claimer dies at once can be told from a free one.
        std::size_t slot = v.geo.slot_count;
        u64 word = 0;
        for (std::size_t i = 0; i < v.geo.slot_count && slot == v.geo.slot_count; ++i) {
            u64 w = v.slot(i).state.load(std::memory_order_acquire);
            if (shm::state_of(w) != shm::slot_free) continue;
            word = shm::make_state(pid_, shm::generation_of(w) + 1, shm::slot_claiming);
            if (v.slot(i).state.compare_exchange_strong(w, word, std::memory_order_acq_rel)) slot = i;
        }
        if (slot == v.geo.slot_count) {
            why = "all " + std::to_string(v.geo.slot_count) + " subscriber slots of " + path + " are taken";
            return false;
        }
        SlotHead& s = v.slot(slot);
        link->slot = slot;
        link->bit = bit(slot);
        s.start_time.store(start_, std::memory_order_relaxed);
        s.pid_ns.store(ns_, std::memory_order_relaxed);
        s.bell.store(nonce_, std::memory_order_relaxed);
        s.heartbeat_ns.store(shm::monotonic_ns(), std::memory_order_relaxed);
        s.armed.store(0, std::memory_order_relaxed);
        const u64 head = s.head.load(std::memory_order_acquire), tail = s.tail.load(std::memory_order_acquire);
        if (head != tail) {
            // A freed slot is empty: this one is not. Give it back for the publisher to clean.
            s.state.store(shm::make_state(pid_, shm::generation_of(word), shm::slot_departed), std::memory_order_release);
            why = path + ": slot " + std::to_string(slot) + " is free but not empty (corrupt segment)";
            return false;
        }
        if (!write_interests(v, slot, interests_)) overflow_notice(*link);
        link->local = std::make_unique<std::atomic<std::uint32_t>[]>(v.geo.chunk_total);
        for (std::size_t k = 0; k < v.geo.class_count; ++k) {
            link->held_limit[k] = static_cast<std::uint32_t>(
                std::max<u64>(1, v.geo.classes[k].count / std::max<std::size_t>(1, config_.held_divisor)));
            if (v.geo.classes[k].chunk_size >= config_.wait_from) link->waiting_classes |= 1u << k;
        }
        link->word = shm::make_state(pid_, shm::generation_of(word), shm::slot_active);
        s.state.store(link->word, std::memory_order_release);
        link->detached = false;
        link->publisher_bell = shm::open_bell(shm::publisher_bell(config_.directory, name));
        v.header().changes.fetch_add(1, std::memory_order_acq_rel);
        shm::ring(link->publisher_bell);
        links_.push_back(link.release());
        check_due_ = true;
        return true;
    }

    void disconnect(const std::string& locator) override {
        for (std::size_t k = 0; k < links_.size(); ++k)
            if (links_[k]->locator == locator) {
                Link* l = links_[k];
                links_.erase(links_.begin() + static_cast<std::ptrdiff_t>(k));
                leave(*l);
                return;
            }
    }

    void subscribe(const Interest& i) override {
        interests_.push_back(i);
        publish_interests();
    }

    void unsubscribe(const Interest& i) override {
        const auto it = std::find_if(interests_.begin(), interests_.end(), [&](const Interest& x) { return same_interest(x, i); });
        if (it == interests_.end()) return;
        interests_.erase(it);
        publish_interests();
    }

    bool take(Frame& out) override {
        if (links_.empty()) return false;
        if (check_due_) {
            check_due_ = false;
            check_links(false);
        }
        if (take_any(out)) return true;
        // Nothing. The doorbell is armed by whoever then sleeps (wait(),
        // prepare_wait()), not here: a caller that busy-polls next never
        // writes `armed`, so the publisher's look at it stays a cache hit
        // (a miss on every frame of a lockstep step otherwise). A doorbell
        // that woke us is emptied, so that ready_now() says false again.
        drain_if_rung();
        check_due_ = true;
        return false;
    }

    // Frames queued, or a doorbell byte that a take() must clear: a publisher
    // took our arm (it rang, or is ringing) after we had already found its
    // frame. Said "maybe" so that the node calls take(), which drains the FIFO
    // and arms again; otherwise a node polling event_fd() directly would wake
    // on that stale byte forever.
    bool ready_now() override {
        if (bytes_possible_) return true;
        for (Link* l : links_) {
            const SlotHead& s = l->view.slot(l->slot);
            if (s.head.load(std::memory_order_relaxed) != s.tail.load(std::memory_order_acquire) && !waits_for_share(*l))
                return true;
            if (l->armed_by_us && s.armed.load(std::memory_order_relaxed) == 0) return true;
        }
        return false;
    }

    // Only the rings (wait() arms right after: the byte is cleared there).
    bool frames_queued() const {
        for (Link* l : links_) {
            const SlotHead& s = l->view.slot(l->slot);
            if (s.head.load(std::memory_order_relaxed) != s.tail.load(std::memory_order_acquire) && !waits_for_share(*l))
                return true;
        }
        return false;
    }

    void begin_spin() override { disarm(); }  // busy-polled: publishers need not ring
    std::optional<bool> frames_waiting() override { return frames_queued(); }

    unsigned wait(std::chrono::nanoseconds timeout, const std::array<int, 2>& also) override {
        if (frames_queued()) return 1;
        check_links(false);
        if (spin_.count() > 0 && !links_.empty()) {
            // Busy-poll the rings for a while; no doorbell rung meanwhile.
            disarm();
            const auto until = std::chrono::steady_clock::now() + std::min<std::chrono::nanoseconds>(spin_, timeout);
            for (unsigned n = 0;; ++n) {
                if (frames_queued()) return 1;
                cpu_relax();
                if ((n & 63u) == 63u && std::chrono::steady_clock::now() >= until) break;
            }
        }
        arm();
        if (frames_queued()) return 1;
        check_due_ = true;
        const auto deadline = std::chrono::steady_clock::now() + timeout;
        for (;;) {
            const auto left = std::chrono::duration_cast<std::chrono::nanoseconds>(deadline - std::chrono::steady_clock::now());
            auto ms = left.count() <= 0 ? 0 : static_cast<long long>((left.count() + 999999) / 1000000);
            // Look at the publishers now and then (a dead one never rings).
            if (!links_.empty()) ms = std::min<long long>(ms, config_.check_interval.count());
            // A frame waiting for our share of its class is copied after held_wait.
            for (Link* l : links_)
                if (l->blocked_class >= 0) ms = std::min<long long>(ms, config_.held_wait.count() + 1);
            pollfd p[3] = {{bell_->fd(), POLLIN, 0}, {also[0], POLLIN, 0}, {also[1], POLLIN, 0}};
            const int n = ::poll(p, 3, static_cast<int>(ms));
            if (n < 0) return 0;  // EINTR: the caller re-checks its state and deadline
            if (n > 0) {
                unsigned fired = 0;
                for (unsigned i = 0; i < 3; ++i)
                    if (p[i].revents & (POLLIN | POLLERR | POLLHUP)) fired |= 1u << i;
                if (fired & 1u) bell_->drain();
                return fired;
            }
            if (left.count() <= 0 || std::chrono::steady_clock::now() >= deadline) return 0;
            check_links(false);
            arm();
            if (frames_queued()) return 1;
        }
    }

    int event_fd() const override { return bell_->fd(); }

    // The doorbell rings only for an armed subscriber: arm, then look once more.
    bool prepare_wait() override {
        if (frames_queued()) return false;
        check_links(false);
        // A byte a publisher wrote after our last drain (it took our arm, we
        // saw that and drained before its write) would wake the caller's poll
        // at once, every time: the FIFO is emptied before each sleep (a read
        // that finds nothing, ~1 µs, next to a sleep's wake-up of ~50).
        bell_->drain();
        arm();
        return !frames_queued();
    }

    void info(ShmInInfo& out) const {
        out.links = links_.size();
        out.links_dropped = links_dropped_;
        out.corrupt = corrupt_;
        out.copied = copied_;
        out.oversized = oversized_;
        out.mappings.clear();
        for (Link* l : links_) out.mappings.emplace_back(l->view.base, l->map.size);
        out.notices = notices_.lines();
    }

private:
    enum class Pop { got, empty, bad };

    bool publisher_alive(const Link& l, u64 heartbeat) const {
        if (l.same_ns) return shm::process_alive(l.owner_pid, l.owner_start);
        const u64 now = shm::monotonic_ns();
        return now <= heartbeat || now - heartbeat < static_cast<u64>(config_.lease.count()) * ms_ns;
    }

    void overflow_notice(const Link& l) {
        notices_.add(LogLevel::warn, "shm interests overflow",
                     "shared memory " + l.name + ": this node's " + std::to_string(interests_.size()) +
                         " subscriptions do not fit in a slot; the publisher sends it everything, and some "
                         "subscribers may go unannounced");
    }

    void publish_interests() {
        for (Link* l : links_) {
            if (!write_interests(l->view, l->slot, interests_)) overflow_notice(*l);
            l->view.header().changes.fetch_add(1, std::memory_order_acq_rel);
            shm::ring(l->publisher_bell);
        }
    }

    // Gives the slot up: the publisher stops queueing, and frees the slot once
    // every Frame taken from it is gone.
    void leave(Link& l) {
        if (!l.detached.load(std::memory_order_acquire)) {
            SlotHead& s = l.view.slot(l.slot);
            u64 expected = l.word;
            const u64 leaving = shm::make_state(pid_, shm::generation_of(l.word), shm::slot_leaving);
            if (s.state.compare_exchange_strong(expected, leaving, std::memory_order_acq_rel)) {
                l.word = leaving;
                s.armed.store(0, std::memory_order_relaxed);
                l.view.header().changes.fetch_add(1, std::memory_order_acq_rel);
                shm::ring(l.publisher_bell);
            } else {
                l.detached = true;  // the publisher took the slot back: it is not ours to touch
            }
        }
        unref(&l);
    }

    void drop(std::size_t k, LogLevel level, const std::string& why, bool corrupt, bool touch) {
        Link* l = links_[k];
        links_.erase(links_.begin() + static_cast<std::ptrdiff_t>(k));
        ++links_dropped_;
        if (corrupt) ++corrupt_;
        notices_.add(level, corrupt ? "shm link corrupt" : "shm link dropped",
                     "shared-memory link to " + l->locator + " dropped: " + why);
        if (!touch) l->detached = true;
        leave(*l);
    }

    // The publisher's health, and the segment's: closed, dead, truncated, garbage.
    void check_links(bool force) {
        const u64 now = shm::monotonic_ns();
        const bool size_due = force || now >= next_size_check_;
        const bool live_due = force || now >= next_live_check_;
        if (!size_due && !live_due) return;
        if (size_due) next_size_check_ = now + static_cast<u64>(config_.size_check_interval.count()) * 1000;
        if (live_due) next_live_check_ = now + static_cast<u64>(config_.check_interval.count()) * ms_ns;
        for (std::size_t k = links_.size(); k-- > 0;) {
            Link& l = *links_[k];
            struct stat st {};
            if (::fstat(l.map.fd, &st) != 0 || static_cast<u64>(st.st_size) < l.map.size) {
                drop(k, LogLevel::error,
                     "the segment was truncated to " + std::to_string(st.st_size) + " bytes (it had " + std::to_string(l.map.size) + ")",
                     true, false);
                continue;
            }
            const Header& h = l.view.header();
            if (h.magic.load(std::memory_order_relaxed) != shm::magic) {
                drop(k, LogLevel::error, "its header was overwritten (no magic number)", true, false);
                continue;
            }
            if (h.closed.load(std::memory_order_acquire)) {
                // What it queued before closing is still ours to read (the
                // mapping outlives the name): the link goes once it is empty.
                SlotHead& s = l.view.slot(l.slot);
                if (s.head.load(std::memory_order_acquire) != s.tail.load(std::memory_order_acquire)) {
                    continue;
                }
                drop(k, LogLevel::info, "its publisher closed it", false, true);
                continue;
            }
            if (!live_due) continue;
            SlotHead& s = l.view.slot(l.slot);
            if (s.state.load(std::memory_order_acquire) != l.word) {
                drop(k, LogLevel::warn, "the publisher took this subscriber's slot back", false, false);
                continue;
            }
            if (!publisher_alive(l, h.heartbeat_ns.load(std::memory_order_relaxed))) {
                drop(k, LogLevel::warn, "its publisher (pid " + std::to_string(l.owner_pid) + ") died", false, true);
                continue;
            }
            s.heartbeat_ns.store(now, std::memory_order_relaxed);
        }
    }

    // A publisher that cleared a flag we had set wrote (or is writing) a byte
    // into our doorbell: empty it (a byte still on its way is emptied by the
    // next prepare_wait(), or wakes a wait() once).
    void drain_if_rung() {
        bool rung = false;
        for (Link* l : links_) {
            if (l->armed_by_us && l->view.slot(l->slot).armed.load(std::memory_order_relaxed) == 0) {
                l->armed_by_us = false;
                rung = true;
            }
        }
        if (rung || bytes_possible_) bell_->drain();
        bytes_possible_ = false;
    }

    void arm() {
        drain_if_rung();
        for (Link* l : links_) {
            l->view.slot(l->slot).armed.store(1, std::memory_order_seq_cst);
            l->armed_by_us = true;
        }
        // Our stores of `armed` before our next reads of `tail` (the publisher
        // stores `tail` before it reads `armed`): one of us sees the other.
        std::atomic_thread_fence(std::memory_order_seq_cst);
    }

    void disarm() {
        for (Link* l : links_) {
            if (l->view.slot(l->slot).armed.exchange(0, std::memory_order_seq_cst) == 0 && l->armed_by_us) bytes_possible_ = true;
            l->armed_by_us = false;
        }
    }

    bool take_any(Frame& out) {
        for (int restart = 0; restart < 4 && !links_.empty(); ++restart) {
            const std::size_t n = links_.size();
            bool dropped = false;
            for (std::size_t k = 0; k < n && !dropped; ++k) {
                const std::size_t at = (next_ + k) % n;
                Link& l = *links_[at];
                for (int budget = 0; budget < 64; ++budget) {
                    if (leave_in_ring(l)) break;
                    u64 c = no_chunk;
                    std::string why;
                    const Pop r = pop(l, c, why);
                    if (r == Pop::empty) break;
                    if (r == Pop::bad) {
                        drop(at, LogLevel::error, why, true, true);
                        dropped = true;
                        break;
                    }
                    if (deliver(l, c, out, why)) {
                        next_ = (at + 1) % n;
                        return true;
                    }
                    if (!why.empty()) {
                        drop(at, LogLevel::error, why, true, true);
                        dropped = true;
                        break;
                    }
                }
            }
            if (!dropped) return false;
        }
        return false;
    }

    // While this process holds its share of the (large) class of the frame at
    // the ring's head, that frame stays in the ring (the publisher may take it
    // back, counted): a subscriber's queue then never copies a large frame out
    // of shared memory because it drained the ring faster than it reads. After
    // held_wait (views held for long), the frame is taken and copied instead.
    static bool waits_for(const Link& l, std::size_t k) {
        return (l.waiting_classes >> k & 1u) != 0 && l.held[k].load(std::memory_order_relaxed) >= l.held_limit[k];
    }

    bool leave_in_ring(Link& l) {
        const View& v = l.view;
        bool any = false;
        for (std::uint32_t m = l.waiting_classes; m != 0 && !any; m &= m - 1)
            any = waits_for(l, static_cast<std::size_t>(__builtin_ctz(m)));
        int k = -1;
        if (any) {  // only then is the ring's head worth a look
            const SlotHead& s = v.slot(l.slot);
            const u64 h = s.head.load(std::memory_order_acquire);
            if (h != s.tail.load(std::memory_order_acquire)) {
                const u64 e = v.ring(l.slot)[h % v.geo.ring_capacity].load(std::memory_order_relaxed);
                if (e < v.geo.chunk_total && waits_for(l, v.geo.class_of(e))) k = static_cast<int>(v.geo.class_of(e));
            }
        }
        if (k < 0) {
            l.blocked_class = -1;
            return false;
        }
        const auto now = std::chrono::steady_clock::now();
        if (l.blocked_class != k) {
            l.blocked_class = k;
            l.blocked_since = now;
        }
        return now - l.blocked_since < config_.held_wait;
    }

    // True while the frame at the link's head waits for our share of its class.
    bool waits_for_share(const Link& l) const {
        return l.blocked_class >= 0 && waits_for(l, static_cast<std::size_t>(l.blocked_class)) &&
               std::chrono::steady_clock::now() - l.blocked_since < config_.held_wait;
    }

    // Takes the oldest entry of the link's ring; every number read is checked.
    Pop pop(Link& l, u64& chunk, std::string& why) {
        const View& v = l.view;
        SlotHead& s = v.slot(l.slot);
        std::atomic<u64>* ring = v.ring(l.slot);
        const u64 cap = v.geo.ring_capacity;
        u64 h = s.head.load(std::memory_order_acquire);
        for (int attempt = 0; attempt < 64; ++attempt) {
            // The tail only grows: below the one seen last, an entry is there.
            const u64 t = h < l.tail_seen ? l.tail_seen : (l.tail_seen = s.tail.load(std::memory_order_acquire));
            if (h == t) return Pop::empty;
            // tail >= head and tail - head <= capacity hold at every instant;
            // but `h` may be older than `t` (the publisher took entries back
            // and queued more meanwhile): only a head unchanged around the
            // read of the tail proves a violation.
            if (t > h && t - h > cap) {
                const u64 again = s.head.load(std::memory_order_acquire);
                if (again != h) {
                    h = again;
                    continue;
                }
            }
            if (t < h || t - h > cap) {
                why = "ring indices out of range (head " + std::to_string(h) + ", tail " + std::to_string(t) + ")";
                return Pop::bad;
            }
            const u64 e = ring[h % cap].load(std::memory_order_relaxed);
            if (e < v.geo.chunk_total) {
                // The publisher has just written both: their misses overlap.
                __builtin_prefetch(&v.desc(e));
                __builtin_prefetch(v.payload(e));
            }
            if (!s.head.compare_exchange_strong(h, h + 1, std::memory_order_acq_rel, std::memory_order_acquire)) continue;
            if (e >= v.geo.chunk_total) {
                why = "a queue entry names chunk " + std::to_string(e) + " of " + std::to_string(v.geo.chunk_total);
                return Pop::bad;
            }
            ChunkDesc& d = v.desc(e);
            const u64 size = d.size.load(std::memory_order_relaxed);
            const u64 room = v.geo.classes[v.geo.class_of(e)].chunk_size;
            if (size < 8 || size > room || (d.owners.load(std::memory_order_relaxed) & l.bit) == 0) {
                d.owners.fetch_and(~l.bit, std::memory_order_acq_rel);
                why = "chunk " + std::to_string(e) + " says " + std::to_string(size) + " bytes in " + std::to_string(room) +
                      (size < 8 || size > room ? "" : ", and is not ours");
                return Pop::bad;
            }
            chunk = e;
            return Pop::got;
        }
        return Pop::empty;  // contended with the publisher taking entries back: look again later
    }

    // Makes a Frame of a taken chunk: in place, or copied when this process
    // already holds its share of the chunk's class. False: dropped (why set if the link is bad).
    bool deliver(Link& l, u64 c, Frame& out, std::string& why) {
        const View& v = l.view;
        const std::size_t k = v.geo.class_of(c);
        const std::size_t size = v.desc(c).size.load(std::memory_order_relaxed);
        const std::uint8_t* data = v.payload(c);
        if (size > max_frame_) {
            v.desc(c).owners.fetch_and(~l.bit, std::memory_order_acq_rel);
            ++oversized_;
            return false;
        }
        if (l.local[c].load(std::memory_order_acquire) != 0) {
            why = "chunk " + std::to_string(c) + " was queued again while this subscriber still holds it";
            return false;
        }
        if (l.held[k].load(std::memory_order_relaxed) >= l.held_limit[k]) {
            SharedBytes bytes = std::make_shared<const std::vector<std::uint8_t>>(data, data + size);
            v.desc(c).owners.fetch_and(~l.bit, std::memory_order_acq_rel);
            ++copied_;
            out = frame_of(std::move(bytes));  // a copy out of shared memory (too many chunks held)
            return true;
        }
        l.local[c].store(1, std::memory_order_relaxed);
        l.held[k].fetch_add(1, std::memory_order_relaxed);
        l.refs.fetch_add(1, std::memory_order_relaxed);
        out = Frame::adopt(ChunkHandle{&l, data, size, c}, chunk_frame_ops);
        return true;
    }

    shm::Config config_;
    PortNotices notices_;
    std::chrono::microseconds spin_;
    std::size_t max_frame_;
    std::uint32_t pid_ = 0;
    u64 start_ = 0, ns_ = 0, nonce_ = 0;
    std::unique_ptr<shm::Doorbell> bell_;
    std::vector<Link*> links_;
    std::vector<Interest> interests_;
    std::size_t next_ = 0;
    bool check_due_ = true;
    bool bytes_possible_ = false;
    u64 next_size_check_ = 0, next_live_check_ = 0;
    u64 links_dropped_ = 0, corrupt_ = 0, copied_ = 0, oversized_ = 0;
};

class ShmTransport final : public Transport {
public:
    explicit ShmTransport(shm::Config config) : config_(std::move(config)) {}
    std::vector<std::string> schemes() const override { return {"shm"}; }
    std::unique_ptr<OutPort> open_out(const PortOptions& o) override { return std::make_unique<ShmOutPort>(config_, o); }
    std::unique_ptr<InPort> open_in(const PortOptions& o) override { return std::make_unique<ShmInPort>(config_, o); }

private:
    shm::Config config_;
};

}  // namespace

std::unique_ptr<Transport> make_shm_transport(shm::Config config) { return std::make_unique<ShmTransport>(std::move(config)); }

bool shm_out_info(OutPort& port, ShmOutInfo& out) {
    auto* p = dynamic_cast<ShmOutPort*>(&port);
    if (!p) return false;
    p->info(out);
    return true;
}

bool shm_in_info(InPort& port, ShmInInfo& out) {
    auto* p = dynamic_cast<ShmInPort*>(&port);
    if (!p) return false;
    p->info(out);
    return true;
}

}  // namespace gecko::detail
