// SPDX-License-Identifier: Apache-2.0
// shm::validate() as a property: for any header it accepts, every slot (its
// ring and interest words), every chunk descriptor and every chunk lies
// inside the segment. Headers are planned ones with fields replaced by
// values chosen to wrap 64-bit arithmetic, sit on the edges, or be random.

#include <catch2/catch.hpp>

#include <sys/mman.h>
#include <unistd.h>

#include <random>
#include <string>
#include <vector>

#include "gecko/shm/segment.hpp"

using namespace gecko::detail;
using shm::u64;
__extension__ typedef unsigned __int128 u128;  // sums that cannot wrap

namespace {

// The header a publisher writes for `g`, read back as a reader reads it.
shm::HeaderCopy header_of(const shm::Geometry& g) {
    const int fd = ::memfd_create("gecko-header", MFD_CLOEXEC);
    REQUIRE(fd >= 0);
    REQUIRE(::ftruncate(fd, shm::header_bytes) == 0);
    void* p = ::mmap(nullptr, shm::header_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    REQUIRE(p != MAP_FAILED);
    shm::write_header(*static_cast<shm::Header*>(p), g, 1);
    shm::HeaderCopy h;
    const bool read = shm::read_header(fd, h);
    ::munmap(p, shm::header_bytes);
    ::close(fd);
    REQUIRE(read);
    return h;
}

shm::Geometry planned(std::size_t slots, std::size_t ring, std::vector<shm::ClassConfig> classes) {
    shm::Config c;
    c.slots = slots;
    c.classes = std::move(classes);
    c.huge_count = 0;
    shm::Geometry g;
    std::string why;
    REQUIRE(shm::plan(c, ring, 1024, g, why));
    return g;
}

// Whether [offset, offset + len) lies in [0, total), without wrapping.
bool inside(u128 offset, u128 len, u64 total) { return offset <= total && len <= total - offset; }

// The property. Every address a reader computes from `g`, computed here in 128 bits.
void check_inside(const shm::Geometry& g, u64 file_size) {
    REQUIRE(g.total <= file_size);
    const u64 total = g.total;
    CHECK(inside(0, sizeof(shm::Header), total));
    for (u64 i = 0; i < g.slot_count; ++i) {
        const u128 slot = u128{g.slots_offset} + u128{i} * g.slot_size;
        INFO("slot " << i);
        REQUIRE(inside(slot, g.slot_size, total));
        REQUIRE(u128{shm::Geometry::ring_offset()} + u128{g.ring_capacity} * 8 <= g.slot_size);
        REQUIRE(u128{g.interest_offset()} + u128{g.interest_words} * 8 <= g.slot_size);
    }
    REQUIRE(inside(g.desc_offset, u128{g.chunk_total} * sizeof(shm::ChunkDesc), total));
    u64 chunks = 0;
    for (u64 k = 0; k < g.class_count; ++k) {
        const auto& c = g.classes[k];
        INFO("class " << k);
        REQUIRE(inside(c.offset, u128{c.chunk_size} * c.count, total));
        // Its first and last chunk, as the reader addresses them.
        REQUIRE(g.class_of(c.first) == k);
        REQUIRE(g.class_of(c.first + c.count - 1) == k);
        REQUIRE(inside(g.payload_offset(c.first), c.chunk_size, total));
        REQUIRE(inside(g.payload_offset(c.first + c.count - 1), c.chunk_size, total));
        chunks += c.count;
    }
    REQUIRE(chunks == g.chunk_total);
}

}  // namespace

TEST_CASE("validate refuses offsets that wrap around 2^64", "[shm][segment]") {
    const auto g = planned(4, 8, {{256, 32}, {4096, 8}});
    struct Case {
        const char* field;
        u64 shm::HeaderCopy::*member;
    };
    const Case cases[] = {{"slots offset", &shm::HeaderCopy::slots_offset},
                          {"descriptor offset", &shm::HeaderCopy::desc_offset}};
    for (const auto& c : cases) {
        for (u64 v : {~u64{0} - 63, ~u64{0} - 4095, u64{1} << 63}) {
            auto h = header_of(g);
            h.*(c.member) = v;
            shm::Geometry out;
            std::string why;
            INFO(c.field << " = " << v);
            CHECK_FALSE(shm::validate(h, g.total, out, why));
        }
    }
    for (std::size_t k = 0; k < 2; ++k)
        for (u64 v : {~u64{0} - 4095, ~u64{0} - 63 - (u64{31} << 8)}) {
            auto h = header_of(g);
            h.classes[k].offset = v;
            shm::Geometry out;
            std::string why;
            INFO("class " << k << " offset = " << v);
            CHECK_FALSE(shm::validate(h, g.total, out, why));
        }
}

TEST_CASE("validate: whatever it accepts lies inside the segment", "[shm][segment]") {
    const std::vector<shm::Geometry> bases = {planned(4, 8, {{256, 32}, {4096, 8}}), planned(1, 1, {{64, 1}}),
                                              planned(64, 64, {{1152, 16}, {20 << 10, 4}, {260 << 10, 2}})};
    std::vector<shm::HeaderCopy> headers;
    for (const auto& g : bases) headers.push_back(header_of(g));
    std::mt19937_64 rng(2024);
    // Values that make sums and products wrap, sit on an edge, or mean nothing.
    auto pick = [&](u64 original, u64 total) -> u64 {
        switch (rng() % 9) {
            case 0: return ~u64{0} - 64 * (rng() % 70) + 1;  // 2^64 - 64·n: aligned, wraps
            case 1: return u64{1} << (rng() % 64);
            case 2: return original + 64 * (rng() % 9) - 64 * 4;
            case 3: return total - 64 * (rng() % 65);
            case 4: return total + 64 * (rng() % 3);
            case 5: return rng();
            case 6: return rng() % 64;
            case 7: return (rng() % (total / 64 + 1)) * 64;
            default: return original;
        }
    };
    int accepted = 0;
    for (int round = 0; round < 50000; ++round) {
        const auto& g = bases[static_cast<std::size_t>(round) % bases.size()];
        auto h = headers[static_cast<std::size_t>(round) % bases.size()];
        std::vector<u64*> fields = {&h.total_size,   &h.slot_count,  &h.slot_size,   &h.slots_offset, &h.ring_capacity,
                                    &h.interest_words, &h.chunk_total, &h.desc_offset, &h.class_count};
        for (auto& c : h.classes) {
            fields.push_back(&c.chunk_size);
            fields.push_back(&c.count);
            fields.push_back(&c.first);
            fields.push_back(&c.offset);
        }
        const int changes = 1 + static_cast<int>(rng() % 3);
        for (int n = 0; n < changes; ++n) {
            u64* f = fields[rng() % fields.size()];
            *f = pick(*f, g.total);
        }
        const u64 file_size = rng() % 4 == 0 ? h.total_size + 4096 * (rng() % 4) : g.total;
        shm::Geometry out;
        std::string why;
        if (!shm::validate(h, file_size, out, why)) continue;
        ++accepted;
        check_inside(out, file_size);
    }
    CHECK(accepted > 500);   // the property was tested, not only refusals
}
