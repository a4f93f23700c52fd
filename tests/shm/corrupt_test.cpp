// SPDX-License-Identifier: Apache-2.0
// Segments with garbage in them, or cut short: the reader refuses them or
// drops the link with an error and a counter; nothing crashes or reads out
// of bounds (the sanitizer build runs these too).

#include <catch2/catch.hpp>

#include <fcntl.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstddef>
#include <random>
#include <thread>

#include "rig.hpp"
#include "shm_support.hpp"

using namespace std::chrono_literals;
using namespace shmtest;

namespace {

// A segment opened by hand, as a hostile process would.
struct Raw {
    int fd = -1;
    std::uint8_t* base = nullptr;
    std::size_t size = 0;
    shm::Geometry geo;

    explicit Raw(const std::string& path) {
        fd = ::open(path.c_str(), O_RDWR);
        REQUIRE(fd >= 0);
        struct stat st {};
        REQUIRE(::fstat(fd, &st) == 0);
        size = static_cast<std::size_t>(st.st_size);
        shm::HeaderCopy h;
        REQUIRE(shm::read_header(fd, h));
        std::string why;
        REQUIRE(shm::validate(h, size, geo, why));
        void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        REQUIRE(p != MAP_FAILED);
        base = static_cast<std::uint8_t*>(p);
    }
    ~Raw() {
        if (base) ::munmap(base, size);
        if (fd >= 0) ::close(fd);
    }
    Raw(const Raw&) = delete;
    Raw& operator=(const Raw&) = delete;

    void put(std::size_t offset, std::uint64_t value) { REQUIRE(::pwrite(fd, &value, 8, static_cast<off_t>(offset)) == 8); }
    shm::SlotHead& slot(std::size_t i) { return *reinterpret_cast<shm::SlotHead*>(base + geo.slots_offset + i * geo.slot_size); }
    std::atomic<std::uint64_t>* ring(std::size_t i) {
        return reinterpret_cast<std::atomic<std::uint64_t>*>(base + geo.slots_offset + i * geo.slot_size + shm::Geometry::ring_offset());
    }
    shm::ChunkDesc& desc(std::uint64_t c) { return reinterpret_cast<shm::ChunkDesc*>(base + geo.desc_offset)[c]; }
    shm::Header& header() { return *reinterpret_cast<shm::Header*>(base); }
};


}  // namespace

TEST_CASE("connect refuses a segment whose header does not add up", "[shm][corrupt]") {
    struct Case {
        std::size_t offset;
        std::uint64_t value;
        const char* says;
    };
    const std::vector<Case> cases = {
        {offsetof(shm::Header, magic), 0x1234, "no magic"},
        {offsetof(shm::Header, version), 99, "layout version"},
        {offsetof(shm::Header, total_size), 1ull << 39, "bytes, the file has"},
        {offsetof(shm::Header, slot_count), 1000, "slot count"},
        {offsetof(shm::Header, slot_count), 0, "slot count"},
        {offsetof(shm::Header, ring_capacity), ~0ull, "ring capacity"},
        {offsetof(shm::Header, slot_size), 64, "slot size"},
        {offsetof(shm::Header, slots_offset), 8, "slots offset"},
        {offsetof(shm::Header, slots_offset), 1ull << 38, "slots"},
        {offsetof(shm::Header, chunk_total), 5, "chunks"},
        {offsetof(shm::Header, desc_offset), 4096, "descriptor offset"},
        {offsetof(shm::Header, class_count), 9, "class count"},
        {offsetof(shm::Header, classes) + offsetof(shm::ClassInfo, chunk_size), 1ull << 40, "chunk size"},
        {offsetof(shm::Header, classes) + offsetof(shm::ClassInfo, offset), 1ull << 38, "class 0"},
        {offsetof(shm::Header, classes) + sizeof(shm::ClassInfo) + offsetof(shm::ClassInfo, count), 1ull << 20, "count"},
        {offsetof(shm::Header, closed), 1, "closed"},
    };
    for (const auto& c : cases) {
        Rig r;
        {
            Raw raw(r.path());
            raw.put(c.offset, c.value);
        }
        std::string why;
        INFO("field at " << c.offset << " = " << c.value);
        CHECK_FALSE(r.in->connect(r.locator(), why));
        INFO("why: " << why);
        CHECK(why.find(c.says) != std::string::npos);
    }
    // Cut short, or random bytes.
    Rig r;
    REQUIRE(::truncate(r.path().c_str(), 100) == 0);
    std::string why;
    CHECK_FALSE(r.in->connect(r.locator(), why));
    CHECK(why.find("shorter than a segment header") != std::string::npos);
    const std::string junk = r.dir.path() + "/gecko-junk";
    {
        std::mt19937_64 rng(7);
        std::vector<std::uint64_t> bytes(8192);
        for (auto& b : bytes) b = rng();
        const int fd = ::open(junk.c_str(), O_CREAT | O_WRONLY, 0600);
        REQUIRE(::write(fd, bytes.data(), bytes.size() * 8) == static_cast<ssize_t>(bytes.size() * 8));
        ::close(fd);
    }
    CHECK_FALSE(r.in->connect("shm://gecko-junk", why));
    CHECK(why.find("bad segment header") != std::string::npos);
}

TEST_CASE("a segment truncated under a subscriber: the link is dropped with an error, nothing faults", "[shm][corrupt]") {
    Rig r;
    r.connect();
    auto f = frame(r.a, 100);
    r.out->send(f);
    REQUIRE(::truncate(r.path().c_str(), 4096) == 0);  // the header only
    Frame got;
    CHECK_FALSE(r.in->take(got));
    const auto in = r.in_info();
    CHECK(in.links == 0);
    CHECK(in.links_dropped == 1);
    CHECK(in.corrupt == 1);
    CHECK(r.notice_has("truncated"));
    // The publisher notices before it touches the slots again, and stops
    // sending into it. (Until it looks, a write of its own would fault: a
    // same-user process that truncates a publisher's segment can crash it.)
    const auto info = r.out_info();
    CHECK(info.closed);
    CHECK(r.out->events_pending() == false);
    auto g = frame(r.a, 100);
    CHECK_FALSE(r.out->send(g).sent);
    bool said = false;
    for (const auto& n : r.out_info().notices) said = said || n.find("truncated") != std::string::npos;
    CHECK(said);
    r.out.reset();  // must not write into the cut-off mapping (a fault would end the test run)
}

TEST_CASE("garbage in the ring or a chunk descriptor drops the link, counted", "[shm][corrupt]") {
    SECTION("ring indices out of range") {
        Rig r;
        r.connect();
        {
            Raw raw(r.path());
            raw.slot(0).tail.store(1000000);
        }
        Frame got;
        CHECK_FALSE(r.in->take(got));
        CHECK(r.in_info().corrupt == 1);
        CHECK(r.notice_has("ring indices"));
    }
    SECTION("a queue entry naming a chunk that does not exist") {
        Rig r;
        r.connect();
        {
            Raw raw(r.path());
            raw.ring(0)[0].store(999999);
            raw.slot(0).tail.store(1);
        }
        Frame got;
        CHECK_FALSE(r.in->take(got));
        CHECK(r.in_info().corrupt == 1);
        CHECK(r.notice_has("names chunk"));
    }
    SECTION("a chunk whose size is larger than the chunk") {
        Rig r;
        r.connect();
        auto f = frame(r.a, 100);
        r.out->send(f);
        {
            Raw raw(r.path());
            const auto c = raw.ring(0)[0].load();
            raw.desc(c).size.store(1ull << 30);
        }
        Frame got;
        CHECK_FALSE(r.in->take(got));
        CHECK(r.in_info().corrupt == 1);
    }
}

TEST_CASE("garbage a subscriber writes into its slot: the publisher frees the slot, counted", "[shm][corrupt]") {
    SECTION("a garbage state word in a slot") {
        Rig r;
        {
            Raw raw(r.path());
            raw.slot(2).state.store(0xdeadbeef77);
            raw.header().changes.fetch_add(1);
        }
        r.out->events_pending();
        CHECK(r.out_info().corrupt == 1);
        CHECK(r.out_info().subscribers == 0);
    }
    SECTION("interests that do not parse") {
        Rig r;
        r.connect();
        {
            Raw raw(r.path());
            auto& s = raw.slot(0);
            s.interest_used.store(1ull << 40);
            s.interest_version.fetch_add(2);
            raw.header().changes.fetch_add(1);
        }
        std::vector<PortEvent> events;
        r.out->drain_events([&](const PortEvent& e) { events.push_back(e); });
        CHECK(r.out_info().corrupt == 1);
        REQUIRE(events.size() == 1);
        CHECK_FALSE(events[0].joined);  // its subscriber is reported gone
        // The subscriber notices its slot was taken back.
        Frame got;
        for (int i = 0; i < 3; ++i) r.in->take(got);
        CHECK(r.in_info().links == 0);
    }
}

TEST_CASE("random garbage over slots and descriptors never crashes either side", "[shm][corrupt]") {
    std::mt19937_64 rng(11);
    for (int round = 0; round < 30; ++round) {
        Rig r;
        r.connect();
        for (std::uint32_t i = 0; i < 5; ++i) {
            auto f = frame(r.a, 100 + i * 500, 0, i);
            r.out->send(f);
        }
        {
            Raw raw(r.path());
            const std::size_t from = raw.geo.slots_offset, to = raw.geo.classes[0].offset;
            // Some random words somewhere in the slots and descriptors.
            for (int k = 0; k < 1 + round; ++k) {
                const std::size_t at = from + (rng() % ((to - from) / 8)) * 8;
                reinterpret_cast<std::atomic<std::uint64_t>*>(raw.base + at)->store(rng() >> (rng() % 64));
            }
            raw.header().changes.fetch_add(1);
        }
        Frame got;
        std::vector<Frame> kept;
        for (int k = 0; k < 20; ++k) {
            if (r.in->take(got)) kept.push_back(std::move(got));
            r.out->events_pending();
            auto f = frame(r.a, 200);
            r.out->send(f);
            r.in->wait(0ms, {-1, -1});
        }
        for (const auto& k : kept) CHECK(k.size() >= 8);
    }
}

TEST_CASE("a chunk's size is read once: a writer changing it after the check never widens a frame", "[shm][corrupt]") {
    // A hostile publisher: it queues one small chunk again and again while
    // another of its threads flips that chunk's size between a size that
    // fits and one ten times the chunk (still under max_message_size).
    // Whatever the subscriber takes must lie inside the chunk; a size read
    // past the check would hand out a frame running over the next chunks.
    Dir dir;
    const auto cfg = config(dir.path());
    Segment seg(cfg, "gecko-hostile");
    auto transport = make_shm_transport(cfg);
    auto in = transport->open_in(options());
    const wire::Channel ch = channel("a");
    in->subscribe(interest(ch, 1));
    const std::uint64_t chunk = 0;
    const std::uint64_t room = seg.geo().classes[0].chunk_size;
    const gecko::Buffer f = frame(ch, 100);
    std::atomic<bool> stop{false};
    std::thread flipper([&] {
        auto& size = seg.desc(chunk).size;
        while (!stop.load(std::memory_order_relaxed)) {
            size.store(f.size(), std::memory_order_relaxed);
            size.store(room * 10, std::memory_order_relaxed);
        }
    });
    std::size_t taken = 0, widened = 0, refused = 0;
    const auto until = std::chrono::steady_clock::now() + 10s;
    while (taken < 3000 && std::chrono::steady_clock::now() < until) {
        std::string why;
        REQUIRE(in->connect(seg.locator(), why));
        std::size_t slot = 0;
        while (shm::state_of(seg.slot(slot).state.load()) != shm::slot_active) ++slot;
        for (;;) {
            seg.queue(slot, chunk, f);
            Frame got;
            if (!in->take(got)) break;  // the link was dropped: a size out of range seen at the check
            ++taken;
            if (got.size() > room) ++widened;
        }
        ++refused;
        in->disconnect(seg.locator());
        seg.free_slot(slot);
    }
    stop = true;
    flipper.join();
    INFO(taken << " frames taken, " << refused << " links dropped");
    CHECK(taken > 100);
    CHECK(widened == 0);
}
