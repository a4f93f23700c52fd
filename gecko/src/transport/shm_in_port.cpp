// SPDX-License-Identifier: Apache-2.0
// The shm in-port: the subscriber. One Link per publisher's segment it
// maps: a claimed slot, its ring, and the Frames taken from it, which point
// into the mapping (zero copy) until they are destroyed.
//
// Concurrency: the port is used by one thread at a time (the node's inbound
// leader), but Frames are released on any thread: a Link's reference count,
// its per-chunk counts of Frames held and its `detached` flag are atomics.
// With the publisher it follows the rules in shm_transport.hpp; every number
// it reads from the segment is bound-checked before use, and a size is read
// once (the value checked is the value used).

#include <fcntl.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>

#include "cpu_relax.hpp"
#include "gecko/error.hpp"
#include "gecko/wire/frame.hpp"
#include "transport/shm_doorbell.hpp"
#include "transport/shm_interests.hpp"
#include "transport/shm_ports.hpp"
#include "transport/shm_transport.hpp"
#include "transport/shm_trust.hpp"
#include "transport/shm_view.hpp"

namespace gecko::detail {
namespace {

using shm::bit;
using shm::ms_ns;
using shm::no_chunk;
using shm::SlotHead;
using shm::u64;
using shm::View;

// One connection of an InPort to one publisher's segment. Reference counted:
// the InPort holds one reference while connected, every Frame taken from it
// one more; the mapping lives until the last is gone.
struct Link {
    std::atomic<long> refs{1};
    std::atomic<bool> detached{false};  // do not touch the segment any more (truncated, or slot taken back)
    std::string locator, name;
    shm::Mapping map;
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
          max_frame_(o.max_message_size + wire::frame_header_size), group_access_(o.group_access),
          segment_key_(o.segment_key), accepted_segment_key_(o.accepted_segment_key) {
        pid_ = static_cast<std::uint32_t>(::getpid());
        start_ = shm::own_start_time();
        ns_ = shm::own_pid_namespace();
        // A doorbell name found taken (by anyone) is tried again under
        // another nonce. Without one the port links nothing (connect() says
        // why, the node uses ipc); it never throws.
        for (int attempt = 0; attempt < 8; ++attempt) {
            nonce_ = shm::random_u64();
            bell_ = std::make_unique<shm::Doorbell>(shm::subscriber_bell(config.directory, ns_, pid_, start_, nonce_),
                                                    group_access_ ? 0660 : 0600);
            if (bell_->fd() >= 0 || bell_->error() != EEXIST) break;
        }
        if (bell_->fd() < 0) unusable_ = "this node cannot read shared memory: " + bell_->why();
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
        if (!unusable_.empty()) {
            why = unusable_;
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
        if (!shm::may_map(st, path, group_access_, why)) return false;
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
        if (h.owner_uid != st.st_uid) {
            why = path + " says its owner is uid " + std::to_string(h.owner_uid) + ", the file's is " + std::to_string(st.st_uid);
            return false;
        }
        // Refused links fall back to the ipc or tcp candidates, which CurveZMQ authenticates.
        if (segment_key_ && !shm::sealed_with(h, name, path, *segment_key_, accepted_segment_key_.get(), why)) {
            ++unsealed_;
            return false;
        }
        link->owner_pid = static_cast<std::uint32_t>(h.owner_pid);
        link->owner_start = h.owner_start;
        link->same_ns = h.owner_pidns == ns_;
        if (!publisher_alive(*link, h.heartbeat_ns)) {
            why = "the publisher of " + path + " (pid " + std::to_string(h.owner_pid) + ") is dead";
            return false;
        }
        if (!link->map.map(link->view.geo.total)) {
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
        if (!shm::write_interests(v, slot, interests_)) overflow_notice(*link);
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

    bool has_dropped() const override { return has_dropped_.load(std::memory_order_acquire); }

    std::vector<std::string> take_dropped() override {
        has_dropped_.store(false, std::memory_order_relaxed);
        return std::exchange(dropped_, {});
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
        const auto it = std::find_if(interests_.begin(), interests_.end(), [&](const Interest& x) { return shm::same_interest(x, i); });
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
        looked_ = true;
        if (take_any(out)) {
            took_ = true;
            return true;
        }
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
        before_sleep();
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
                if (fired & 1u) drain_bell();
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
        before_sleep();
        arm();
        return !frames_queued();
    }

    void info(ShmInInfo& out) const {
        out.links = links_.size();
        out.unsealed = unsealed_;
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
            if (!shm::write_interests(l->view, l->slot, interests_)) overflow_notice(*l);
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

    // `publisher_gone`: it closed or died, so no other locator of it would
    // serve either (discovery retires the link); otherwise the node falls back
    // to its next locator (take_dropped).
    void drop(std::size_t k, LogLevel level, const std::string& why, bool corrupt, bool touch, bool publisher_gone = false) {
        Link* l = links_[k];
        links_.erase(links_.begin() + static_cast<std::ptrdiff_t>(k));
        ++links_dropped_;
        if (!publisher_gone) {
            dropped_.push_back(l->locator);
            has_dropped_.store(true, std::memory_order_release);
        }
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
            const shm::Header& h = l.view.header();
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
                drop(k, LogLevel::debug, "its publisher closed it", false, true, true);  // an ordinary exit
                continue;
            }
            if (!live_due) continue;
            SlotHead& s = l.view.slot(l.slot);
            if (s.state.load(std::memory_order_acquire) != l.word) {
                drop(k, LogLevel::warn, "the publisher took this subscriber's slot back", false, false);
                continue;
            }
            if (!publisher_alive(l, h.heartbeat_ns.load(std::memory_order_relaxed))) {
                drop(k, LogLevel::warn, "its publisher (pid " + std::to_string(l.owner_pid) + ") died", false, true, true);
                continue;
            }
            s.heartbeat_ns.store(now, std::memory_order_relaxed);
        }
    }

    // Doorbell bytes are counted, so that the FIFO is read only when a byte
    // is owed: a publisher writes exactly one after it takes our arm (armed
    // 1 -> 0). Each taken arm we see owes one byte; each byte read pays one,
    // also one read before its arm was seen taken (a woken poll reads first),
    // so a sleeper woken by its doorbell makes one read per wake-up, not the
    // three (two finding nothing) it made when every arm and every sleep
    // emptied the FIFO.
    //
    // A byte nobody owes (a link dropped with its arm taken, a byte read as
    // another's) would wake a poll at once, every time: when take() was
    // called since the last sleep and found nothing, the next sleep first
    // empties the FIFO whatever the count. So a mistake costs one spurious
    // wake-up, never a lost one, nor a poll that fires forever.
    void drain_bell() {
        owed_ -= static_cast<std::int64_t>(bell_->drain());
    }

    void drain_if_rung() {
        for (Link* l : links_) {
            if (l->armed_by_us && l->view.slot(l->slot).armed.load(std::memory_order_relaxed) == 0) {
                l->armed_by_us = false;
                ++owed_;
            }
        }
        if (owed_ > 0) drain_bell();
        bytes_possible_ = false;
    }

    void before_sleep() {
        if (looked_ && !took_) {
            bell_->drain();
            owed_ = 0;
        }
        looked_ = took_ = false;
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
            if (l->view.slot(l->slot).armed.exchange(0, std::memory_order_seq_cst) == 0 && l->armed_by_us) {
                bytes_possible_ = true;
                ++owed_;
            }
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
                    std::size_t size = 0;
                    std::string why;
                    const Pop r = pop(l, c, size, why);
                    if (r == Pop::empty) break;
                    if (r == Pop::bad) {
                        drop(at, LogLevel::error, why, true, true);
                        dropped = true;
                        break;
                    }
                    if (deliver(l, c, size, out, why)) {
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

    // Takes the oldest entry of the link's ring; every number read is
    // checked. `size` is the frame's size as read once and checked against
    // its chunk: the only one used (the publisher may rewrite it any time).
    Pop pop(Link& l, u64& chunk, std::size_t& size, std::string& why) {
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
            shm::ChunkDesc& d = v.desc(e);
            const u64 said = d.size.load(std::memory_order_relaxed);
            const u64 room = v.geo.classes[v.geo.class_of(e)].chunk_size;
            if (said < 8 || said > room || (d.owners.load(std::memory_order_relaxed) & l.bit) == 0) {
                d.owners.fetch_and(~l.bit, std::memory_order_acq_rel);
                why = "chunk " + std::to_string(e) + " says " + std::to_string(said) + " bytes in " + std::to_string(room) +
                      (said < 8 || said > room ? "" : ", and is not ours");
                return Pop::bad;
            }
            chunk = e;
            size = static_cast<std::size_t>(said);
            return Pop::got;
        }
        return Pop::empty;  // contended with the publisher taking entries back: look again later
    }

    // Makes a Frame of the first `size` bytes of a taken chunk (pop() checked
    // both): in place, or copied when this process already holds its share
    // of the chunk's class. False: dropped (why set if the link is bad).
    bool deliver(Link& l, u64 c, std::size_t size, Frame& out, std::string& why) {
        const View& v = l.view;
        const std::size_t k = v.geo.class_of(c);
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
    shm::Notices notices_;
    std::chrono::microseconds spin_;
    std::size_t max_frame_;
    std::uint32_t pid_ = 0;
    u64 start_ = 0, ns_ = 0, nonce_ = 0;
    bool group_access_ = false;
    std::shared_ptr<const shm::SealKey> segment_key_;  // set in a secured key
    std::shared_ptr<const shm::SealKey> accepted_segment_key_;  // set during a rotation
    std::string unusable_;  // why this port links nothing (no doorbell)
    std::vector<std::string> dropped_;      // links dropped since take_dropped()
    std::atomic<bool> has_dropped_{false};  // read by the node's reactor thread
    std::unique_ptr<shm::Doorbell> bell_;
    std::vector<Link*> links_;
    std::vector<Interest> interests_;
    std::size_t next_ = 0;
    bool check_due_ = true;
    bool bytes_possible_ = false;
    std::int64_t owed_ = 0;           // doorbell bytes owed (drain_bell): arms seen taken minus bytes read
    bool looked_ = false, took_ = false;  // take() called, and found a frame, since before_sleep()
    u64 next_size_check_ = 0, next_live_check_ = 0;
    u64 links_dropped_ = 0, corrupt_ = 0, copied_ = 0, oversized_ = 0, unsealed_ = 0;
};

}  // namespace

std::unique_ptr<InPort> make_shm_in_port(const shm::Config& config, const PortOptions& options) {
    return std::make_unique<ShmInPort>(config, options);
}

bool shm_in_info(InPort& port, ShmInInfo& out) {
    auto* p = dynamic_cast<ShmInPort*>(&port);
    if (!p) return false;
    p->info(out);
    return true;
}

}  // namespace gecko::detail
