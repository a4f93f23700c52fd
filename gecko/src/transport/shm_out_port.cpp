// SPDX-License-Identifier: Apache-2.0
// The shm out-port: the publisher. It creates and owns one segment and its
// doorbell, copies each frame into a chunk the pool gives (shm_pool.hpp) and
// queues it for the slots that want it (shm_slots.hpp). Concurrency: the
// port is used by one thread at a time (the node's lock per OutPort); what
// it shares with subscribers follows the rules in shm_transport.hpp.

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <optional>

#include "gecko/error.hpp"
#include "gecko/wire/frame.hpp"
#include "transport/shm_doorbell.hpp"
#include "transport/shm_pool.hpp"
#include "transport/shm_ports.hpp"
#include "transport/shm_slots.hpp"
#include "transport/shm_transport.hpp"

namespace gecko::detail {
namespace {

using shm::Geometry;
using shm::ms_ns;
using shm::no_chunk;
using shm::u64;

std::string hex(u64 v) {
    char s[17];
    std::snprintf(s, sizeof s, "%016llx", static_cast<unsigned long long>(v));
    return s;
}

// The memory behind a segment in tmpfs.
class FileBacking final : public shm::Backing {
public:
    explicit FileBacking(const shm::Mapping& map) : map_(map) {}
    bool reserve(u64 offset, u64 len) override {
        if (::fallocate(map_.fd, 0, static_cast<off_t>(offset), static_cast<off_t>(len)) == 0) return true;
        return errno == EOPNOTSUPP || errno == ENOSYS;  // not tmpfs: pages come on first touch
    }
    void release(u64 offset, u64 len) override {
        ::fallocate(map_.fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(offset), static_cast<off_t>(len));
    }

private:
    const shm::Mapping& map_;
};

class ShmOutPort final : public OutPort {
public:
    ShmOutPort(const shm::Config& config, const PortOptions& o)
        : config_(config), notices_(o.notice), mode_(o.group_access ? 0660 : 0600) {
        const std::size_t ring = config.ring ? config.ring
                                             : static_cast<std::size_t>(std::clamp(o.send_queue, 16, 4096));
        std::string why;
        if (!shm::plan(config, ring, o.max_message_size + wire::frame_header_size, view_.geo, why))
            throw Error(Errc::invalid_argument, "shared-memory transport: " + why);
        // The segment: "gecko-<session>-<random>", or the name an exact locator asks for.
        std::string exact;
        for (const auto& l : o.listen)
            if (scheme_of(l) == "shm") {
                exact = l.substr(6);
                if (!shm::valid_name(exact))
                    throw Error(Errc::invalid_argument, "shared-memory locator '" + l + "': not a valid segment name");
            }
        // What another process does to names in the directory (takes one
        // first, squats a doorbell) denies shared memory at worst, never the
        // node: it says why once and offers no shm locator (peers use ipc).
        if (!create(o.session, exact, why)) {
            closed_ = true;
            notices_.add(LogLevel::warn, "shm unavailable",
                         "shared memory: this node offers no shm locator (" + why + "); peers on this host link over ipc");
            return;
        }
        const Geometry& g = view_.geo;
        shm::Pool::Options pool;
        pool.memory_limit = o.memory;
        pool.lazy_from = config_.lazy_from;
        pool.idle_passes = std::max<u64>(
            1, static_cast<u64>(config_.release_after.count() / std::max<long long>(1, config_.check_interval.count())));
        pool_.emplace(view_, backing_, pool, g.classes[0].offset);
        slots_.emplace(view_, config_, notices_, name_);
        // Sealed under the key's secret when it has one (docs/SECURITY.md §8); its magic last: now readers may map it.
        shm::write_header(view_.header(), g, o.session, name_, o.segment_key.get());
        locator_ = "shm://" + name_;
        next_housekeeping_ = shm::monotonic_ns() + static_cast<u64>(config_.check_interval.count()) * ms_ns;
    }

    ~ShmOutPort() override {
        if (!slots_) return;  // shared memory was never set up
        // Not into a segment someone truncated (the guard would take the writes).
        struct stat st {};
        if (::fstat(map_->fd, &st) == 0 && static_cast<u64>(st.st_size) >= view_.geo.total) {
            shm::Header& h = view_.header();
            h.closed.store(1, std::memory_order_release);
            h.changes.fetch_add(1, std::memory_order_acq_rel);
        }
        // Every subscriber wakes up and sees `closed` (it unmaps when its Frames are gone).
        slots_->wake_all();
        cleanup();
    }

    std::vector<std::string> locators() const override {
        if (locator_.empty()) return {};
        return {locator_};
    }

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
            slots_->lost(targets, result);
            result.missed += static_cast<std::size_t>(__builtin_popcountll(targets));
            return result;
        }
        std::memcpy(view_.payload(c), frame.data(), size);
        deliver(c, size, targets, result);
        return result;
    }

    // A loan is a free chunk the publisher writes into; only the publisher
    // allocates, so marking it in the pool (owners stays 0 in the segment)
    // keeps it from being handed out twice. At most half of a class is lent
    // at once: sends always find chunks.
    bool lend(std::size_t capacity, FrameLoan& out) override {
        if (closed_ || capacity < wire::frame_header_size) return false;
        const Geometry& g = view_.geo;
        if (!pool_->may_lend(g.class_for(capacity))) return false;
        SendResult taken;
        const u64 c = allocate(capacity, taken, false);
        loan_dropped_ += taken.dropped;
        if (c == no_chunk) return false;
        pool_->lend(c);
        out.data = view_.payload(c);
        out.capacity = g.classes[g.class_of(c)].chunk_size;
        out.token = c;
        out.keep = map_;
        return true;
    }

    SendResult send_loan(FrameLoan& loan, std::size_t size) override {
        const u64 c = loan.token;
        if (!mine(loan)) return SendResult{false, 0};
        pool_->unlend(c);
        SendResult result;
        result.dropped = std::exchange(loan_dropped_, 0);
        u64 targets = 0;
        if (size < 8 || size > loan.capacity || !targets_of(wire::load_channel(view_.payload(c)), targets))
            return SendResult{false, result.dropped};
        if (targets == 0) return result;  // the chunk is free again
        pool_->restamp(c);                // its age counts from now
        deliver(c, size, targets, result);
        return result;
    }

    void return_loan(FrameLoan& loan) override {
        if (mine(loan)) pool_->unlend(loan.token);
    }

    void drain_events(FunctionRef<void(const PortEvent&)> on) override {
        if (!slots_) return;
        if (bell_) bell_->drain();
        events_pending();
        for (const auto& e : slots_->take_events()) on(e);
    }

    bool events_pending() override {
        if (!slots_) return false;
        if (closed_) return slots_->events_pending();
        housekeeping();
        if (!closed_ && slots_->changed()) refresh(false);
        return slots_->events_pending();
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
            if (pool_->is_free(c)) ++out.chunks_free;
        out.subscribers = slots_->occupied();
        out.dropped = slots_->dropped();
        out.reclaimed = slots_->reclaimed();
        out.corrupt = slots_->corrupt();
        out.strays = slots_->strays();
        out.memory = pool_->resident();
        out.memory_limit = pool_->memory_limit();
        out.over_memory = pool_->over_memory();
    }

private:
    // Creates the segment and its doorbell under a fresh unpredictable name
    // (exactly `exact` if given), sized, backed and mapped. Names are taken
    // with O_EXCL and mkfifo, which never open what someone else made; a
    // name found taken is tried again under another, a few times. False
    // (nothing left behind) with why.
    bool create(u64 session, const std::string& exact, std::string& why) {
        const Geometry& g = view_.geo;
        for (int attempt = 0; attempt < 16; ++attempt) {
            name_ = !exact.empty() ? exact : "gecko-" + hex(session) + "-" + hex(shm::random_u64()).substr(8);
            path_ = config_.directory + "/" + name_;
            map_->fd = ::open(path_.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode_);
            if (map_->fd < 0) {
                why = "cannot create the segment " + path_ + ": " + std::strerror(errno);
                if (errno == EEXIST && exact.empty()) continue;
                return false;
            }
            created_ = true;
            ::fchmod(map_->fd, mode_);  // exactly, whatever the umask
            if (::ftruncate(map_->fd, static_cast<off_t>(g.total)) != 0) return failed("cannot size", why);
            // The header, slots and descriptors get their memory now: a full
            // /dev/shm is an error here, not a SIGBUS later. Chunks get theirs
            // when first used (Pool).
            if (!backing_.reserve(0, g.classes[0].offset)) return failed("no room for", why);
            if (!map_->map(g.total)) return failed("cannot map", why);
            view_.base = static_cast<std::uint8_t*>(map_->base);
            bell_ = std::make_unique<shm::Doorbell>(shm::publisher_bell(config_.directory, name_), mode_);
            if (bell_->fd() >= 0) return true;
            why = bell_->why();
            const bool taken = bell_->error() == EEXIST;
            discard();
            if (!taken || !exact.empty()) return false;
        }
        why += " (every name tried was taken)";
        return false;
    }

    // Undoes create() after `what` failed; false with why.
    bool failed(const char* what, std::string& why) {
        why = std::string(what) + " the segment " + path_ + ": " + std::strerror(errno);
        discard();
        return false;
    }

    // Removes and unmaps what create() made so far.
    void discard() {
        cleanup();
        map_->reset();
        view_.base = nullptr;
    }

    void cleanup() {
        if (created_) {
            ::unlink(path_.c_str());
            created_ = false;
        }
        bell_.reset();  // unlinks its FIFO
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

    void refresh(bool liveness) {
        if (intact()) slots_->refresh(liveness);
    }

    // Every check_interval: heartbeat, liveness of subscribers, size of the
    // segment, chunks held by no live slot, and memory given back for idle
    // large chunks.
    void housekeeping() {
        const u64 now = shm::monotonic_ns();
        if (now < next_housekeeping_) return;
        next_housekeeping_ = now + static_cast<u64>(config_.check_interval.count()) * ms_ns;
        if (!intact()) return;
        view_.header().heartbeat_ns.store(now, std::memory_order_relaxed);
        slots_->refresh(true);
        slots_->clear_strays();
        pool_->pass();
    }

    // Who gets a frame on `channel` (0: nobody). False if the port is closed.
    bool targets_of(wire::Channel channel, u64& targets) {
        if (closed_) return false;
        if (slots_->changed()) refresh(false);
        if ((++sends_ & 63u) == 0) housekeeping();
        if (closed_) return false;
        targets = slots_->targets(channel);
        return true;
    }

    // Queues chunk c (its first `size` bytes are the frame) for every target and wakes the sleepers.
    void deliver(u64 c, std::size_t size, u64 targets, SendResult& result) {
        shm::ChunkDesc& d = view_.desc(c);
        d.size.store(size, std::memory_order_relaxed);
        d.owners.store(targets, std::memory_order_release);
        for (std::size_t i = 0; i < view_.geo.slot_count; ++i)
            if (targets & shm::bit(i)) slots_->push(i, c, result);
        for (std::size_t i = 0; i < view_.geo.slot_count; ++i)
            if (targets & shm::bit(i)) slots_->wake(i);
        slots_->reclaim_corrupt();
    }

    bool mine(const FrameLoan& loan) const { return pool_ && loan.keep == map_ && pool_->lent(loan.token); }

    // A chunk from the pool; no_chunk (said once per kind, unless !say) if none.
    u64 allocate(std::size_t size, SendResult& result, bool say = true) {
        shm::NoChunk why = shm::NoChunk::none;
        const u64 c = pool_->allocate(
            size, [&](std::size_t k, SendResult& r) { return slots_->take_back(k, *pool_, r); }, result, why);
        if (c != no_chunk) return c;
        const std::string frame = "a " + std::to_string(size) + "-byte frame";
        switch (why) {
            case shm::NoChunk::no_room:
                notices_.add(LogLevel::warn, "shm full", "shared memory " + name_ + ": no room left in " + config_.directory +
                                                             " for " + frame + ": frames are dropped");
                break;
            case shm::NoChunk::too_large:
                if (say)
                    notices_.add(LogLevel::warn, "shm frame too large",
                                 "shared memory " + name_ + ": " + frame + " is larger than its largest chunk (" +
                                     std::to_string(view_.geo.largest()) + " bytes): dropped");
                break;
            case shm::NoChunk::over_memory:
                if (say)
                    notices_.add(LogLevel::warn, "shm memory",
                                 "shared memory " + name_ + ": " + frame + " would take the segment past " +
                                     std::to_string(pool_->memory_limit() >> 10) +
                                     " KiB (NodeOptions::shared_memory_size, GECKO_SHM_SIZE) while subscribers hold the "
                                     "rest: the frame is dropped; give it more");
                break;
            case shm::NoChunk::exhausted:
                if (say)
                    notices_.add(LogLevel::warn, "shm pool exhausted",
                                 "shared memory " + name_ + ": every chunk for " + frame +
                                     " is held by subscribers: the frame is dropped");
                break;
            case shm::NoChunk::none:
                break;
        }
        return no_chunk;
    }

    shm::Config config_;
    shm::Notices notices_;
    mode_t mode_;
    std::shared_ptr<shm::Mapping> map_ = std::make_shared<shm::Mapping>();  // shared with loans: mapped while one lives
    FileBacking backing_{*map_};
    shm::View view_;
    std::string path_, name_, locator_;
    bool created_ = false;
    bool closed_ = false;
    std::unique_ptr<shm::Doorbell> bell_;
    std::optional<shm::Pool> pool_;
    std::optional<shm::Slots> slots_;
    std::size_t loan_dropped_ = 0;  // frames taken back to make a loan: told at the next send
    u64 next_housekeeping_ = 0;
    unsigned sends_ = 0;
};

}  // namespace

std::unique_ptr<OutPort> make_shm_out_port(const shm::Config& config, const PortOptions& options) {
    return std::make_unique<ShmOutPort>(config, options);
}

bool shm_out_info(OutPort& port, ShmOutInfo& out) {
    auto* p = dynamic_cast<ShmOutPort*>(&port);
    if (!p) return false;
    p->info(out);
    return true;
}

}  // namespace gecko::detail
