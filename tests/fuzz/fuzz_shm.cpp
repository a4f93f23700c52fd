// libFuzzer target for the shared-memory reader: the subscriber's side of a
// segment (docs/PROTOCOL.md §7.1) that a hostile publisher lays out. The
// input is a program for that publisher:
//
//   byte 0            0: the next bytes (a 2-byte length) are the segment
//                     file, as is; else a small planned segment (slots, ring,
//                     classes from bytes 1-3)
//   then operations   a byte each, with arguments: write any word of the
//                     segment, queue a chunk for the reader's slot, move
//                     head or tail, (re)connect, take frames (keeping some
//                     as views), subscribe, wait, disconnect
//
// The reader must validate, claim a slot, take and deliver frames or drop
// the link, and never touch memory outside its mapping: every frame it hands
// out lies inside one chunk of the mapping (or is a copy no larger than a
// chunk), every geometry validate() accepts lies inside the file, and the
// sanitizers see no error. The segment is a file in a private temporary
// directory (tmpfs when /dev/shm is there), at most 1 MiB. Some inputs meet
// a secured reader (docs/SECURITY.md §8): planned segments are then sealed;
// raw ones of odd length almost always stop at its seal check.

#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "gecko/wire/announcement.hpp"
#include "gecko/wire/hash.hpp"
#include "transport/shm_ports.hpp"
#include "transport/shm_transport.hpp"

namespace {

using namespace gecko::detail;
using shm::u64;

constexpr std::size_t max_segment = 1 << 20;

[[noreturn]] void fail(const char* what) {
    std::fprintf(stderr, "fuzz_shm: %s\n", what);
    std::abort();
}

// The private directory, removed at exit (its path kept where no destructor runs before that).
const std::string& directory() {
    static char path[64];
    static const std::string* dir = [] {
        std::snprintf(path, sizeof path, "%s/geckofuzz-XXXXXX", std::filesystem::is_directory("/dev/shm") ? "/dev/shm" : "/tmp");
        if (!::mkdtemp(path)) fail("mkdtemp failed");
        std::atexit([] {
            std::error_code ignored;
            std::filesystem::remove_all(path, ignored);
        });
        return new std::string(path);
    }();
    return *dir;
}

// Reads the input from the front; zeros once it runs out.
struct Input {
    const std::uint8_t* p;
    std::size_t left;
    bool more() const { return left > 0; }
    std::uint8_t byte() {
        if (!left) return 0;
        --left;
        return *p++;
    }
    u64 word(int bytes) {
        u64 v = 0;
        for (int i = 0; i < bytes; ++i) v |= u64{byte()} << (8 * i);
        return v;
    }
};

// Every geometry validate() accepts lies inside the file (checked without wrapping).
void check_geometry(const shm::Geometry& g, u64 file_size) {
    __extension__ typedef unsigned __int128 u128;
    auto inside = [&](u128 offset, u128 len) { return offset <= g.total && len <= g.total - offset; };
    if (g.total > file_size) fail("validate accepted a segment larger than its file");
    if (!inside(g.slots_offset, u128{g.slot_count} * g.slot_size)) fail("validate accepted slots outside the segment");
    if (u128{g.interest_offset()} + u128{g.interest_words} * 8 > g.slot_size) fail("interest words outside the slot");
    if (!inside(g.desc_offset, u128{g.chunk_total} * sizeof(shm::ChunkDesc))) fail("descriptors outside the segment");
    for (u64 k = 0; k < g.class_count; ++k)
        if (!inside(g.classes[k].offset, u128{g.classes[k].chunk_size} * g.classes[k].count))
            fail("a class outside the segment");
}

struct Segment {
    std::string name, path;
    int fd = -1;
    std::uint8_t* base = nullptr;
    std::size_t size = 0;
    shm::Geometry geo;  // as planned (planned mode)
    bool planned = false;

    ~Segment() {
        if (base) ::munmap(base, size);
        if (fd >= 0) ::close(fd);
        if (!path.empty()) ::unlink(path.c_str());
    }
    u64 load(u64 offset) const {
        return offset + 8 <= size ? reinterpret_cast<std::atomic<u64>*>(base + offset)->load(std::memory_order_relaxed) : 0;
    }
    void store(u64 offset, u64 v) const {
        if (offset + 8 <= size) reinterpret_cast<std::atomic<u64>*>(base + offset)->store(v, std::memory_order_relaxed);
    }
};

bool make_file(Segment& s, std::size_t size) {
    static unsigned counter = 0;
    s.name = "gecko-fuzz-" + std::to_string(::getpid()) + "-" + std::to_string(++counter);
    s.path = directory() + "/" + s.name;
    s.fd = ::open(s.path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (s.fd < 0 || ::ftruncate(s.fd, static_cast<off_t>(size)) != 0) fail("cannot make the segment file");
    s.size = size;
    if (size == 0) return true;
    void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, s.fd, 0);
    if (p == MAP_FAILED) fail("cannot map the segment file");
    s.base = static_cast<std::uint8_t*>(p);
    return true;
}

shm::Config config() {
    shm::Config c;
    c.directory = directory();
    c.check_interval = std::chrono::milliseconds(0);  // every look checks the publisher
    c.size_check_interval = std::chrono::microseconds(0);
    c.held_wait = std::chrono::milliseconds(0);
    c.held_divisor = 2;
    c.wait_from = 128;
    return c;
}

Interest interest_of(std::uint8_t n) {
    gecko::wire::Announcement a;
    a.channel = gecko::wire::channel_of("k", "t" + std::to_string(n % 4));
    a.wildcard = (n & 0x80) != 0;
    a.id = 1 + n;
    a.topic = "t";
    a.node = std::string(n % 64, 'n');
    return Interest{a.channel, a.wildcard, gecko::wire::encode_announcement(a)};
}

// The reader's slot, if it holds one: the first active slot with our pid.
std::size_t our_slot(const Segment& s, const shm::Geometry& g) {
    for (std::size_t i = 0; i < g.slot_count; ++i) {
        const u64 w = s.load(g.slots_offset + i * g.slot_size);
        if (shm::state_of(w) == shm::slot_active && shm::pid_of(w) == static_cast<std::uint32_t>(::getpid())) return i;
    }
    return g.slot_count;
}

// A frame the reader handed out: inside one chunk of its mapping, or a copy no larger than a chunk.
void check_frame(const Frame& f, InPort& in, const shm::Geometry& g) {
    if (f.size() < 8) fail("a frame shorter than a channel");
    ShmInInfo info;
    shm_in_info(in, info);
    const std::uint8_t* d = f.data();
    for (const auto& [base, size] : info.mappings) {
        if (d < base || d >= base + size) continue;
        const auto at = static_cast<u64>(d - base);
        if (f.size() > size - at) fail("a frame runs past the mapping");
        // Its chunk, by the geometry the reader validated (ours when planned).
        for (u64 k = 0; k < g.class_count; ++k) {
            const auto& c = g.classes[k];
            if (at < c.offset || at >= c.offset + c.chunk_size * c.count) continue;
            if ((at - c.offset) % c.chunk_size != 0 || f.size() > c.chunk_size) fail("a frame runs past its chunk");
            return;
        }
        fail("a frame outside every chunk");
    }
    if (f.size() > g.largest()) fail("a copied frame larger than any chunk");
}

// The key a secured reader checks seals with (docs/SECURITY.md §8).
const std::shared_ptr<const shm::SealKey>& fuzz_seal_key() {
    static const auto key = std::make_shared<const shm::SealKey>(shm::SealKey{{0x5e, 0xa1}});
    return key;
}

void run(Input& in_bytes, Segment& seg, shm::Geometry g, bool secured) {
    PortOptions o;
    o.node = "fuzz";
    o.max_message_size = 64 << 10;
    if (secured) o.segment_key = fuzz_seal_key();
    std::unique_ptr<InPort> port;
    try {
        port = make_shm_in_port(config(), o);
    } catch (const std::exception&) {
        fail("cannot open an in-port");
    }
    port->subscribe(interest_of(0));
    const std::string locator = "shm://" + seg.name;
    std::vector<Frame> kept;
    bool linked = false;
    auto connect = [&] {
        std::string why;
        linked = port->connect(locator, why);
        if (!linked) return;
        // What the reader accepted, read back as it did: it must lie inside the file.
        shm::HeaderCopy h;
        shm::Geometry checked;
        if (shm::read_header(seg.fd, h) && shm::validate(h, seg.size, checked, why)) {
            check_geometry(checked, seg.size);
            g = checked;
        }
    };
    if (!seg.planned) {
        connect();  // the raw bytes as they are
    }
    for (int ops = 0; in_bytes.more() && ops < 256; ++ops) {
        const std::uint8_t op = in_bytes.byte();
        const std::size_t slot = g.slot_count ? our_slot(seg, g) : 0;
        const bool have_slot = g.slot_count && slot < g.slot_count;
        const u64 slot_at = g.slots_offset + slot * g.slot_size;
        switch (op % 12) {
            case 0: {  // any word of the segment
                const u64 at = in_bytes.word(3) % std::max<u64>(1, seg.size / 8) * 8;
                seg.store(at, in_bytes.word(8));
                break;
            }
            case 1: {  // queue a chunk (any index) for our slot, as a publisher
                const u64 c = in_bytes.word(1) % (g.chunk_total + 2);
                const u64 size = in_bytes.word(2);
                if (!have_slot) break;
                if (c < g.chunk_total) {
                    const u64 at = g.payload_offset(c);
                    const u64 room = g.classes[g.class_of(c)].chunk_size;
                    std::memset(seg.base + at, 0x47, room);
                    const auto ch = interest_of(0).channel;
                    if (room >= 8) std::memcpy(seg.base + at, &ch, 8);
                    seg.store(g.desc_offset + c * 64 + 8, size % (room + 16));
                    seg.store(g.desc_offset + c * 64, u64{1} << slot);
                }
                const u64 tail = seg.load(slot_at + 64);
                seg.store(slot_at + 256 + tail % g.ring_capacity * 8, c);
                seg.store(slot_at + 64, tail + 1);
                break;
            }
            case 2:  // head or tail anywhere
                if (have_slot) seg.store(slot_at + (in_bytes.byte() & 1 ? 128 : 64), in_bytes.word(2));
                break;
            case 3:
                if (!linked) connect();
                break;
            case 4:
            case 5: {  // take frames, keeping some as views
                const int n = 1 + in_bytes.byte() % 16;
                for (int k = 0; k < n; ++k) {
                    Frame f;
                    if (!port->take(f)) break;
                    check_frame(f, *port, g);
                    if (op & 0x10) kept.push_back(std::move(f));
                }
                break;
            }
            case 6:
                kept.clear();
                break;
            case 7:
                port->subscribe(interest_of(in_bytes.byte()));
                break;
            case 8:
                port->wait(std::chrono::nanoseconds(0), {-1, -1});
                port->ready_now();
                port->prepare_wait();
                break;
            case 9:
                port->disconnect(locator);
                linked = false;
                break;
            case 10:  // a chunk's size, or owners, as the reader reads them
                if (g.chunk_total) {
                    const u64 at = g.desc_offset + in_bytes.word(1) % g.chunk_total * 64 + (op & 0x10 ? 8 : 0);
                    seg.store(at, in_bytes.word(4));
                }
                break;
            default:  // the slot's state word
                if (have_slot) seg.store(slot_at, in_bytes.word(8));
                break;
        }
    }
    for (const auto& f : kept) check_frame(f, *port, g);
    kept.clear();
    port.reset();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    Input in{data, size};
    Segment seg;
    shm::Geometry g;
    if (in.byte() == 0) {
        // The file is the next (2-byte length) bytes as they are, owned by
        // this process (so that the reader finds its publisher alive); the
        // rest are operations.
        const std::size_t n = std::min<std::size_t>(in.word(2), in.left);
        make_file(seg, n);
        if (n) std::memcpy(seg.base, in.p, n);
        in.p += n;
        in.left -= n;
        seg.store(offsetof(shm::Header, owner_pid), static_cast<u64>(::getpid()));
        seg.store(offsetof(shm::Header, owner_start), shm::own_start_time());
        seg.store(offsetof(shm::Header, owner_pidns), shm::own_pid_namespace());
        run(in, seg, g, n & 1);  // the geometry is whatever the reader validates; odd sizes: its seal too
        return 0;
    }
    shm::Config c = config();
    c.slots = 1 + in.byte() % 4;
    const std::size_t ring = 1 + in.byte() % 16;
    const std::uint8_t classes = in.byte();
    c.classes.clear();
    for (std::size_t k = 0; k <= classes % 3; ++k) c.classes.push_back({std::size_t{64} << (2 * k + (classes >> 4) % 3), 1 + ((classes >> 2) & 3) + k});
    c.huge_count = 0;
    c.interest_bytes = 64 << (classes >> 6);
    std::string why;
    if (!shm::plan(c, ring, 64, g, why) || g.total > max_segment) return 0;
    make_file(seg, g.total);
    seg.geo = g;
    seg.planned = true;
    const bool secured = classes & 0x02;  // a sealed segment and a reader that checks seals
    shm::write_header(*reinterpret_cast<shm::Header*>(seg.base), g, 1, seg.name, secured ? fuzz_seal_key().get() : nullptr);
    run(in, seg, g, secured);
    return 0;
}
