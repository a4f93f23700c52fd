// SPDX-License-Identifier: Apache-2.0
// The publisher's chunk pool on a heap buffer: no file, no subscriber, no
// second process. What it hands out, what it refuses and why, what it takes
// back, and the memory it holds.

#include <catch2/catch.hpp>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <set>
#include <vector>

#include "transport/shm_pool.hpp"

using namespace gecko::detail;
using shm::no_chunk;
using shm::NoChunk;
using shm::u64;

namespace {

// Records what the pool asks of the memory behind it; `full` refuses.
struct FakeBacking final : shm::Backing {
    u64 reserved = 0, released = 0;
    bool full = false;
    bool reserve(u64, u64 len) override {
        if (full) return false;
        reserved += len;
        return true;
    }
    void release(u64, u64 len) override { released += len; }
};

// A planned segment on the heap: by default 256 B × 8, 4 KiB × 4, 1 MiB × 2.
struct Heap {
    shm::Geometry geo;
    std::unique_ptr<std::uint8_t, decltype(&std::free)> memory{nullptr, &std::free};
    shm::View view;
    FakeBacking backing;

    explicit Heap(std::vector<shm::ClassConfig> classes = {{256, 8}, {4096, 4}, {1 << 20, 2}}) {
        shm::Config c;
        c.slots = 4;
        c.classes = std::move(classes);
        c.huge_count = 0;
        std::string why;
        REQUIRE(shm::plan(c, 8, 1 << 20, geo, why));
        memory.reset(static_cast<std::uint8_t*>(std::aligned_alloc(shm::page, geo.total)));
        REQUIRE(memory);
        std::memset(memory.get(), 0, geo.total);
        view.base = memory.get();
        view.geo = geo;
    }
    shm::Pool pool(u64 memory_limit = 0, u64 idle_passes = 1) {
        shm::Pool::Options o;
        o.memory_limit = memory_limit;
        o.lazy_from = 1 << 20;
        o.idle_passes = idle_passes;
        return shm::Pool(view, backing, o, geo.classes[0].offset);
    }
    void hold(u64 c, u64 owners = 1) { view.desc(c).owners.store(owners); }
    std::size_t class_of(u64 c) const { return geo.class_of(c); }
};

// No ring holds anything to take back.
u64 allocate(shm::Pool& pool, std::size_t size, NoChunk& why) {
    SendResult r;
    return pool.allocate(size, [](std::size_t, SendResult&) { return shm::Pool::TakenBack{}; }, r, why);
}

// Takes every chunk of class 0 (8 of 256 B) and holds it, in the order handed out.
std::vector<u64> hold_class_0(Heap& h, shm::Pool& pool) {
    std::vector<u64> held;
    NoChunk why = NoChunk::none;
    for (int i = 0; i < 8; ++i) {
        const u64 c = allocate(pool, 100, why);
        REQUIRE(c != no_chunk);
        REQUIRE(h.class_of(c) == 0);
        h.hold(c);
        held.push_back(c);
    }
    return held;
}

}  // namespace

TEST_CASE("pool: the smallest class that fits, and a frame larger than every chunk is refused", "[shm][pool]") {
    Heap h;
    auto pool = h.pool();
    NoChunk why = NoChunk::none;
    const u64 a = allocate(pool, 100, why);
    REQUIRE(a != no_chunk);
    CHECK(h.class_of(a) == 0);
    const u64 b = allocate(pool, 3000, why);
    REQUIRE(b != no_chunk);
    CHECK(h.class_of(b) == 1);
    CHECK(allocate(pool, (1 << 20) + 1, why) == no_chunk);
    CHECK(why == NoChunk::too_large);
}

TEST_CASE("pool: a held chunk is never handed out, and a freed one is reused first", "[shm][pool]") {
    Heap h;
    auto pool = h.pool();
    const auto held = hold_class_0(h, pool);
    CHECK(std::set<u64>(held.begin(), held.end()).size() == held.size());  // all different while held
    NoChunk why = NoChunk::none;
    // Class 0 is exhausted and no ring holds a frame: the next class.
    const u64 spill = allocate(pool, 100, why);
    REQUIRE(spill != no_chunk);
    CHECK(h.class_of(spill) == 1);
    h.hold(spill);
    // One of class 0 comes back: it is the one handed out next.
    const u64 back = held[3];
    h.hold(back, 0);
    CHECK(allocate(pool, 100, why) == back);
}

TEST_CASE("pool: a large class hands out a chunk whose pages are there before one it must back", "[shm][pool]") {
    Heap h({{256, 8}, {1 << 20, 8}});
    auto pool = h.pool();
    NoChunk why = NoChunk::none;
    std::vector<u64> taken;
    for (int i = 0; i < 6; ++i) {  // six subscribers' worth of frames held at once: six chunks backed
        const u64 c = allocate(pool, 1 << 19, why);
        REQUIRE(c != no_chunk);
        REQUIRE(h.class_of(c) == 1);
        h.hold(c);
        taken.push_back(c);
    }
    const u64 backed = h.backing.reserved;
    // All are read and released, then the last four are held again (the chunks the pool used last).
    for (const u64 c : taken) h.hold(c, 0);
    for (std::size_t i = 2; i < taken.size(); ++i) h.hold(taken[i]);
    // The next frame goes into one of the first two, whose pages are there: not into a chunk never used.
    const u64 next = allocate(pool, 1 << 19, why);
    CHECK((next == taken[0] || next == taken[1]));
    CHECK(h.backing.reserved == backed);
}

TEST_CASE("pool: an exhausted class takes its oldest queued frame back before it grows", "[shm][pool]") {
    Heap h;
    auto pool = h.pool();
    const auto held = hold_class_0(h, pool);
    NoChunk why = NoChunk::none;
    CHECK(pool.age(held[0]) < pool.age(held[7]));
    int asked = 0;
    SendResult result;
    const u64 c = pool.allocate(
        100,
        [&](std::size_t k, SendResult& r) {
            ++asked;
            CHECK(k == 0);
            if (asked == 1) return shm::Pool::TakenBack{true, no_chunk};  // lost a race: asked again
            h.hold(held[0], 0);  // the ring gives the oldest back
            ++r.dropped;
            return shm::Pool::TakenBack{true, held[0]};
        },
        result, why);
    CHECK(asked == 2);
    CHECK(c == held[0]);
    CHECK(result.dropped == 1);
}

TEST_CASE("pool: every chunk held and nothing to take back: exhausted", "[shm][pool]") {
    Heap h;
    auto pool = h.pool();
    for (u64 c = 0; c < h.geo.chunk_total; ++c) h.hold(c);
    NoChunk why = NoChunk::none;
    CHECK(allocate(pool, 100, why) == no_chunk);
    CHECK(why == NoChunk::exhausted);
    CHECK(pool.over_memory() == 0);
}

TEST_CASE("pool: no memory behind a chunk is a refused frame, not a fault", "[shm][pool]") {
    Heap h;
    auto pool = h.pool();
    h.backing.full = true;
    const u64 before = pool.resident();
    NoChunk why = NoChunk::none;
    CHECK(allocate(pool, 100, why) == no_chunk);
    CHECK(why == NoChunk::no_room);
    CHECK(pool.resident() == before);
    h.backing.full = false;
    CHECK(allocate(pool, 100, why) != no_chunk);
    CHECK(pool.resident() == before + 256 * 8);  // a small class is backed whole, once
}

TEST_CASE("pool: the memory budget gives idle pages back first, then refuses (counted)", "[shm][pool]") {
    Heap h;
    const u64 limit = h.geo.classes[0].offset + (1 << 20) + (4 << 10);
    auto pool = h.pool(limit);
    NoChunk why = NoChunk::none;
    const u64 big = allocate(pool, 1 << 20, why);
    REQUIRE(big != no_chunk);
    CHECK(h.class_of(big) == 2);
    CHECK(pool.resident() == h.geo.classes[0].offset + (1 << 20));
    h.hold(big);
    // The other 1 MiB chunk would pass the budget, and nothing idle can give pages back.
    CHECK(allocate(pool, 1 << 20, why) == no_chunk);
    CHECK(why == NoChunk::over_memory);
    CHECK(pool.over_memory() == 1);
    // Released: its pages are there, so it is the one used again, and no page is added.
    h.hold(big, 0);
    const u64 reserved = h.backing.reserved;
    CHECK(allocate(pool, 1 << 20, why) == big);
    CHECK(h.backing.reserved == reserved);
    CHECK(pool.resident() <= limit);
}

TEST_CASE("pool: large chunks left idle give their pages back", "[shm][pool]") {
    Heap h;
    auto pool = h.pool(0, 2);
    NoChunk why = NoChunk::none;
    const u64 big = allocate(pool, 300 << 10, why);
    REQUIRE(big != no_chunk);
    const u64 with = pool.resident();
    h.hold(big);
    pool.pass();
    pool.pass();
    pool.pass();
    CHECK(pool.resident() == with);  // held: kept
    h.hold(big, 0);
    pool.pass();
    pool.pass();
    CHECK(pool.resident() == with - (300 << 10));
    CHECK(h.backing.released == (300 << 10));
}

TEST_CASE("pool: at most half a class is lent, and a lent chunk is never handed out", "[shm][pool]") {
    Heap h;
    auto pool = h.pool();
    NoChunk why = NoChunk::none;
    std::vector<u64> lent;
    while (pool.may_lend(1)) {
        const u64 c = allocate(pool, 4096, why);
        REQUIRE(c != no_chunk);
        pool.lend(c);
        lent.push_back(c);
    }
    CHECK(lent.size() == 2);  // of 4
    for (u64 c : lent) CHECK_FALSE(pool.is_free(c));
    for (int i = 0; i < 10; ++i) {
        const u64 c = allocate(pool, 4096, why);
        REQUIRE(c != no_chunk);
        CHECK(std::find(lent.begin(), lent.end(), c) == lent.end());
    }
    pool.unlend(lent[0]);
    CHECK(pool.may_lend(1));
    CHECK(pool.is_free(lent[0]));
    CHECK_FALSE(pool.may_lend(7));  // no such class
}
