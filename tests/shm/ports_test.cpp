// SPDX-License-Identifier: Apache-2.0
// The shm ports driven directly, in one process: what a node asks of them.

#include <catch2/catch.hpp>

#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstddef>
#include <cstring>
#include <deque>
#include <functional>
#include <thread>
#include <vector>

#include <gecko/node.hpp>

#include "port_pair.hpp"
#include "shm_support.hpp"

using namespace std::chrono_literals;
using namespace shmtest;

TEST_CASE("a frame sent on a subscribed channel is taken in place, others are not", "[shm][ports]") {
    Pair p;
    const auto a = channel("a"), b = channel("b");
    p.in->subscribe(interest(a, 1));
    p.connect();
    CHECK(p.locator().rfind("shm://gecko-", 0) == 0);
    auto events = p.events();
    REQUIRE(events.size() == 1);
    CHECK(events[0].joined);
    CHECK(events[0].who.id == 1);
    CHECK(events[0].who.channel == a);

    auto fa = frame(a, 100, 0x42, 7);
    auto fb = frame(b, 100, 0x43, 8);
    const auto ra = p.out->send(fa);
    const auto rb = p.out->send(fb);
    CHECK(ra.sent);
    CHECK(ra.dropped == 0);
    CHECK(rb.sent);
    CHECK(p.in->ready_now());
    Frame f;
    REQUIRE(p.in->take(f));
    CHECK(f.size() == 100);
    CHECK(wire::load_channel(f.data()) == a);
    CHECK(counter_of(f.data()) == 7);
    CHECK(f.data()[50] == 0x42);
    CHECK(p.inside_mapping(f.data()));  // zero copy
    CHECK_FALSE(p.in->take(f));
    CHECK_FALSE(p.in->ready_now());

    // A shared Frame keeps the chunk until both owners are gone.
    REQUIRE(p.in->take(f) == false);
    auto fa2 = frame(a, 100, 0x44, 9);
    p.out->send(fa2);
    REQUIRE(p.in->take(f));
    Frame second = f.share();
    REQUIRE_FALSE(second.empty());
    CHECK(second.data() == f.data());
    const auto total = p.out_info().chunks;
    f.reset();
    CHECK(p.out_info().chunks_free == total - 1);
    second.reset();
    CHECK(p.out_info().chunks_free == total);
}

TEST_CASE("a wildcard interest gets every channel of its key", "[shm][ports]") {
    Pair p;
    p.in->subscribe(interest(channel("x", "k"), 5, true));
    p.connect();
    p.events();
    for (const auto& [topic, key] : std::vector<std::pair<std::string, std::string>>{{"x", "k"}, {"y", "k"}, {"x", "other"}}) {
        auto f = frame(channel(topic, key), 64);
        p.out->send(f);
    }
    auto frames = p.take_all();
    REQUIRE(frames.size() == 2);
    CHECK(wire::load_channel(frames[0].data()) == channel("x", "k"));
    CHECK(wire::load_channel(frames[1].data()) == channel("y", "k"));
}

TEST_CASE("subscribers joining and leaving are reported with their announcements", "[shm][ports]") {
    Pair p;
    const auto a = channel("a"), b = channel("b");
    p.connect();
    CHECK(p.events().empty());  // connected, nothing subscribed
    p.in->subscribe(interest(a, 1));
    p.in->subscribe(Interest{channel("#directed"), false, {}});  // no announcement: no event
    CHECK(p.out->events_pending());
    auto ev = p.events();
    REQUIRE(ev.size() == 1);
    CHECK((ev[0].joined && ev[0].who.id == 1));
    p.in->subscribe(interest(b, 2));
    ev = p.events();
    REQUIRE(ev.size() == 1);
    CHECK((ev[0].joined && ev[0].who.id == 2 && ev[0].who.channel == b));
    p.in->unsubscribe(interest(a, 1));
    ev = p.events();
    REQUIRE(ev.size() == 1);
    CHECK((!ev[0].joined && ev[0].who.id == 1));
    CHECK_FALSE(p.out->events_pending());

    // The directed channel still delivers.
    auto d = frame(channel("#directed"), 32);
    p.out->send(d);
    CHECK(p.take_all().size() == 1);

    // Leaving reports what was still subscribed; the slot comes back.
    p.in->disconnect(p.locator());
    ev = p.events();
    REQUIRE(ev.size() == 1);
    CHECK((!ev[0].joined && ev[0].who.id == 2));
    CHECK(p.out_info().subscribers == 0);

    // A second InPort, destroyed: its leave is reported too.
    auto other = p.transport->open_in(options());
    other->subscribe(interest(a, 3));
    std::string why;
    REQUIRE(other->connect(p.locator(), why));
    ev = p.events();
    REQUIRE(ev.size() == 1);
    CHECK((ev[0].joined && ev[0].who.id == 3));
    other.reset();
    ev = p.events();
    REQUIRE(ev.size() == 1);
    CHECK((!ev[0].joined && ev[0].who.id == 3));
    CHECK(p.out_info().subscribers == 0);
}

TEST_CASE("a full ring loses its oldest frames, counted: sent = taken + dropped", "[shm][ports]") {
    Pair p;  // rings of 8
    const auto a = channel("a");
    p.in->subscribe(interest(a, 1));
    p.connect();
    p.events();
    std::size_t dropped = 0;
    const std::uint32_t sent = 100;
    for (std::uint32_t i = 1; i <= sent; ++i) {
        auto f = frame(a, 64, 0, i);
        const auto r = p.out->send(f);
        CHECK(r.sent);
        dropped += r.dropped;
    }
    auto frames = p.take_all();
    CHECK(frames.size() + dropped == sent);
    CHECK(frames.size() == 8);
    // The newest survive, in order.
    for (std::size_t k = 0; k < frames.size(); ++k) CHECK(counter_of(frames[k].data()) == sent - 7 + k);
    CHECK(p.out_info().dropped == dropped);
    frames.clear();
    CHECK(p.out_info().chunks_free == p.out_info().chunks);
}

TEST_CASE("an exhausted pool takes back the oldest queued frames and never blocks", "[shm][ports]") {
    // 16 small chunks, rings of 64: the pool runs out before the ring.
    Pair p([](shm::Config& c) {
        c.ring = 64;
        c.classes = {{256, 16}, {4096, 4}};
        c.huge_count = 0;
        c.held_divisor = 1;
    });
    const auto a = channel("a");
    p.in->subscribe(interest(a, 1));
    p.connect();
    p.events();
    std::size_t dropped = 0;
    for (std::uint32_t i = 1; i <= 40; ++i) {
        auto f = frame(a, 100, 0, i);
        dropped += p.out->send(f).dropped;
    }
    CHECK(dropped == 24);
    auto frames = p.take_all();
    REQUIRE(frames.size() == 16);
    for (std::size_t k = 0; k < 16; ++k) CHECK(counter_of(frames[k].data()) == 25 + k);

    // Every small chunk held as a Frame: the next frames go to the larger class...
    for (std::uint32_t i = 41; i <= 44; ++i) {
        auto f = frame(a, 100, 0, i);
        CHECK(p.out->send(f).dropped == 0);
    }
    auto more = p.take_all();
    REQUIRE(more.size() == 4);
    CHECK(p.out_info().chunks_free == 0);
    // ...and with everything held, a frame is dropped, counted, without blocking.
    auto f = frame(a, 100, 0, 45);
    const auto r = p.out->send(f);
    CHECK(r.sent);
    CHECK(r.dropped == 1);
    Frame none;
    CHECK_FALSE(p.in->take(none));
    frames.clear();
    more.clear();
    CHECK(p.out_info().chunks_free == p.out_info().chunks);
}

TEST_CASE("a publisher ahead of its subscriber on a large class reuses what the subscriber frees, and counts the rest",
          "[shm][ports]") {
    // 256 chunks, rings of 1024: the pool runs out first, and the publisher's
    // look for a free chunk is bounded once the class is exhausted.
    Pair p([](shm::Config& c) {
        c.ring = 1024;
        c.classes = {{256, 256}};
        c.huge_count = 0;
        c.held_divisor = 1;
    });
    const auto a = channel("a");
    p.in->subscribe(interest(a, 1));
    p.connect();
    p.events();
    std::uint32_t next = 1;
    std::size_t dropped = 0;
    for (; next <= 256; ++next) {
        auto f = frame(a, 100, 0, next);
        dropped += p.out->send(f).dropped;
    }
    CHECK(dropped == 0);
    // In step: the subscriber reads the oldest and lets it go, the publisher
    // sends one more. Nothing is lost: each send finds the chunk just freed.
    std::uint32_t expect = 1;
    for (int i = 0; i < 2000; ++i, ++next) {
        Frame f;
        REQUIRE(p.in->take(f));
        CHECK(counter_of(f.data()) == expect++);
        f.reset();
        auto g = frame(a, 100, 0, next);
        dropped += p.out->send(g).dropped;
    }
    CHECK(dropped == 0);
    // Far ahead: every frame beyond the pool takes back the oldest queued one, counted.
    for (int i = 0; i < 1000; ++i, ++next) {
        auto f = frame(a, 100, 0, next);
        dropped += p.out->send(f).dropped;
    }
    CHECK(dropped == 1000);
    auto frames = p.take_all();
    REQUIRE(frames.size() == 256);
    for (std::size_t k = 0; k < frames.size(); ++k) CHECK(counter_of(frames[k].data()) == next - 256 + k);
}

TEST_CASE("past its share of held chunks, the next frame waits in the ring until one is released", "[shm][ports]") {
    // 32 small chunks, held_divisor 2: 16 held in place at most.
    Pair p([](shm::Config& c) {
        c.held_wait = std::chrono::milliseconds(60000);
        c.wait_from = 0;  // every class (by default only large ones wait; small frames are copied)
    });
    const auto a = channel("a");
    p.subscribe_linked(a);
    auto held = p.send_and_hold(a, 1, 16);
    for (const auto& f : held) CHECK(p.inside_mapping(f.data()));
    auto f17 = frame(a, 64, 0, 17);
    p.out->send(f17);
    Frame got;
    CHECK_FALSE(p.in->take(got));    // our share is held: it waits in the ring...
    CHECK_FALSE(p.in->ready_now());  // ...and nobody is told to take it
    CHECK(p.in_info().copied == 0);
    held.erase(held.begin());        // one released
    CHECK(p.in->ready_now());
    REQUIRE(p.in->take(got));        // in place, not copied
    CHECK(counter_of(got.data()) == 17);
    CHECK(p.inside_mapping(got.data()));
    CHECK(p.in_info().copied == 0);
    got.reset();
    held.clear();
    CHECK(p.out_info().chunks_free == p.out_info().chunks);
}

TEST_CASE("a frame that waited held_wait for a share still held is copied, and the link goes on", "[shm][ports]") {
    Pair p([](shm::Config& c) {
        c.held_wait = std::chrono::milliseconds(5);
        c.wait_from = 0;
    });
    const auto a = channel("a");
    p.subscribe_linked(a);
    auto held = p.send_and_hold(a, 1, 16);
    auto f17 = frame(a, 64, 0, 17);
    p.out->send(f17);
    Frame got;
    CHECK_FALSE(p.in->take(got));  // waits from now...
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // ...for held_wait to pass (a policy bound, no event)
    CHECK(p.in->ready_now());
    REQUIRE(p.in->take(got));
    CHECK(counter_of(got.data()) == 17);
    CHECK_FALSE(p.inside_mapping(got.data()));  // a copy: the 16 views stay valid
    CHECK(p.in_info().copied == 1);
}

TEST_CASE("past its share of held small chunks, a subscriber gets copies and the chunks come back at once",
          "[shm][ports]") {
    Pair p;  // small chunks: copied at once (below Config::wait_from)
    const auto a = channel("a");
    p.subscribe_linked(a);
    auto held = p.send_and_hold(a, 1, 20);
    for (std::size_t i = 0; i < held.size(); ++i) CHECK(p.inside_mapping(held[i].data()) == (i < 16));
    CHECK(p.in_info().copied == 4);
    CHECK(p.out_info().chunks_free == p.out_info().chunks - 16);
    held.clear();
    CHECK(p.out_info().chunks_free == p.out_info().chunks);
}

TEST_CASE("frames above the largest class go through the huge class, and above max_message_size they are dropped", "[shm][ports]") {
    Pair p({}, options(0x5eed, 100 << 10));  // largest class 4 KiB; huge chunks for 100 KiB frames
    const auto a = channel("a");
    p.in->subscribe(interest(a, 1));
    p.connect();
    p.events();
    auto big = frame(a, 60 << 10, 0x77, 1);
    const auto r = p.out->send(big);
    CHECK(r.sent);
    CHECK(r.dropped == 0);
    Frame f;
    REQUIRE(p.in->take(f));
    REQUIRE(f.size() == (60u << 10));
    CHECK(f.data()[(60 << 10) - 1] == 0x77);
    CHECK(counter_of(f.data()) == 1);
    CHECK(p.inside_mapping(f.data()));
    // One huge chunk, held: the next huge frame is dropped (counted), not blocked on.
    auto big2 = frame(a, 60 << 10, 0x78, 2);
    CHECK(p.out->send(big2).dropped == 1);
    f.reset();
    auto big3 = frame(a, 60 << 10, 0x79, 3);
    CHECK(p.out->send(big3).dropped == 0);
    REQUIRE(p.in->take(f));
    CHECK(counter_of(f.data()) == 3);
    f.reset();
    auto huge = frame(a, 200 << 10, 0x7a, 4);
    CHECK(p.out->send(huge).dropped == 1);
    CHECK_FALSE(p.in->take(f));
    CHECK(p.out_info().chunks_free == p.out_info().chunks);
}

TEST_CASE("a clean close leaves nothing in the directory, and subscribers drop the link", "[shm][ports]") {
    Pair p;
    p.in->subscribe(interest(channel("a"), 1));
    p.connect();
    p.events();
    CHECK(p.dir.entries().size() == 3);  // segment, its doorbell, the subscriber's doorbell
    auto fa = frame(channel("a"), 64, 0x5a);
    p.out->send(fa);
    Frame f;
    REQUIRE(p.in->take(f));
    p.out.reset();
    CHECK(p.dir.entries().size() == 1);  // the subscriber's doorbell
    // The frame taken before stays readable; the link goes at the next look.
    CHECK(f.data()[40] == 0x5a);
    Frame g;
    CHECK_FALSE(p.in->take(g));
    CHECK_FALSE(p.in->take(g));
    CHECK(p.in_info().links == 0);
    CHECK(p.in_info().links_dropped == 1);
    CHECK(p.in_info().corrupt == 0);
    f.reset();
    p.in.reset();
    CHECK(p.dir.entries().empty());
}

TEST_CASE("connect refuses what is not a usable segment, with a reason", "[shm][ports]") {
    Pair p;
    std::string why;
    CHECK_FALSE(p.in->connect("shm://gecko-nobody", why));
    CHECK(why.find("no shared-memory segment") != std::string::npos);
    CHECK_FALSE(p.in->connect("shm://../../etc/passwd", why));
    CHECK(why.find("not a shared-memory segment name") != std::string::npos);
    CHECK_FALSE(p.in->connect("ipc:///tmp/x", why));
    // Four slots: the fifth subscriber is refused.
    std::vector<std::unique_ptr<InPort>> ins;
    for (int i = 0; i < 4; ++i) {
        ins.push_back(p.transport->open_in(options()));
        REQUIRE(ins.back()->connect(p.locator(), why));
    }
    CHECK_FALSE(p.in->connect(p.locator(), why));
    CHECK(why.find("slots") != std::string::npos);
    ins.pop_back();
    p.events();  // the publisher frees the slot it left
    CHECK(p.in->connect(p.locator(), why));
}

TEST_CASE("a publisher and a subscriber thread race on a small ring: every frame is taken or counted, in order", "[shm][ports][threads]") {
    Pair p([](shm::Config& c) {
        c.ring = 4;
        c.classes = {{256, 12}, {4096, 4}};
        c.huge_count = 0;
        c.held_divisor = 4;  // 3 held in place, the rest copied
    });
    const auto a = channel("a");
    p.in->subscribe(interest(a, 1));
    p.connect();
    p.events();
    constexpr std::uint32_t sent = 30000;
    std::atomic<bool> done{false};
    std::uint64_t taken = 0, out_of_order = 0, damaged = 0;
    std::thread subscriber([&] {
        std::deque<Frame> kept;
        std::uint32_t last = 0;
        const auto until = std::chrono::steady_clock::now() + 20s;
        while (last < sent && std::chrono::steady_clock::now() < until) {
            Frame f;
            if (!p.in->take(f)) {
                p.in->wait(50ms, {-1, -1});
                continue;
            }
            const std::uint32_t c = counter_of(f.data());
            ++taken;
            if (c <= last) ++out_of_order;
            if (f.size() != 64 + c % 128 || f.data()[f.size() - 1] != static_cast<std::uint8_t>(c)) ++damaged;
            last = c;
            kept.push_back(std::move(f));
            if (kept.size() > 5) kept.pop_front();
        }
        done = true;
    });
    std::uint64_t dropped = 0;
    for (std::uint32_t i = 1; i <= sent; ++i) {
        auto f = frame(a, 64 + i % 128, static_cast<std::uint8_t>(i), i);
        dropped += p.out->send(f).dropped;
        if (i % 1000 == 0) p.out->events_pending();
    }
    subscriber.join();
    std::string notices;
    for (const auto& n : p.in_info().notices) notices += "subscriber: " + n + "\n";
    for (const auto& n : p.out_info().notices) notices += "publisher: " + n + "\n";
    INFO(notices);
    CHECK(done);
    CHECK(out_of_order == 0);
    CHECK(damaged == 0);
    CHECK(taken + dropped == sent);
    CHECK(taken > 0);
    CHECK(p.in_info().links == 1);
    CHECK(p.out_info().chunks_free == p.out_info().chunks);
}

TEST_CASE("an idle large chunk gives its memory back, and an exact listen locator names the segment", "[shm][ports]") {
    auto o = options(0x5eed, 200 << 10);
    o.listen = {"shm://my-segment"};
    Pair p(
        [](shm::Config& c) {
            c.lazy_from = 64 << 10;  // the huge class (~200 KiB chunks) is lazy
            c.release_after = 60ms;
        },
        o);
    CHECK(p.locator() == "shm://my-segment");
    p.in->subscribe(interest(channel("a"), 1));
    p.connect();
    p.events();
    const std::string path = p.dir.path() + "/my-segment";
    auto blocks = [&] {
        struct stat st {};
        REQUIRE(::stat(path.c_str(), &st) == 0);
        return static_cast<long long>(st.st_blocks) * 512;
    };
    const auto before = blocks();
    auto big = frame(channel("a"), 150 << 10, 0x33);
    p.out->send(big);
    Frame f;
    REQUIRE(p.in->take(f));
    CHECK(blocks() >= before + (150 << 10));
    f.reset();
    // The publisher's housekeeping (every check_interval) punches the hole.
    bool given_back = false;
    for (const auto until = std::chrono::steady_clock::now() + 5s; !given_back && std::chrono::steady_clock::now() < until;) {
        pollfd pf{p.out->event_fd(), POLLIN, 0};
        ::poll(&pf, 1, 5);
        p.out->events_pending();
        given_back = blocks() < before + (150 << 10);
    }
    CHECK(given_back);
    // And the chunk works again afterwards.
    auto again = frame(channel("a"), 150 << 10, 0x34, 2);
    p.out->send(again);
    REQUIRE(p.in->take(f));
    CHECK(f.data()[(150 << 10) - 1] == 0x34);
}

TEST_CASE("a subscriber in another pid namespace is judged by its lease, not its pid", "[shm][ports]") {
    Pair p([](shm::Config& c) { c.lease = std::chrono::milliseconds(100); });
    p.in->subscribe(interest(channel("a"), 1));
    p.connect();
    p.events();
    // Pretend it runs in another pid namespace (its pid means nothing here), and stays silent.
    {
        const int fd = ::open((p.dir.path() + "/" + p.locator().substr(6)).c_str(), O_RDWR);
        REQUIRE(fd >= 0);
        shm::HeaderCopy h;
        REQUIRE(shm::read_header(fd, h));
        const std::uint64_t other_ns = 12345;
        REQUIRE(::pwrite(fd, &other_ns, 8, static_cast<off_t>(h.slots_offset + offsetof(shm::SlotHead, pid_ns))) == 8);
        ::close(fd);
    }
    bool reclaimed = false;
    std::vector<PortEvent> events;
    for (const auto until = std::chrono::steady_clock::now() + 5s; !reclaimed && std::chrono::steady_clock::now() < until;) {
        pollfd pf{p.out->event_fd(), POLLIN, 0};
        ::poll(&pf, 1, 5);
        p.out->drain_events([&](const PortEvent& e) { events.push_back(e); });
        reclaimed = p.out_info().subscribers == 0;
    }
    CHECK(reclaimed);
    REQUIRE(events.size() == 1);
    CHECK_FALSE(events[0].joined);
}

TEST_CASE("a loan is written in place and queued without a copy, and an unsent one comes back", "[shm][ports][loans]") {
    Pair p;
    const auto a = channel("a");
    p.in->subscribe(interest(a, 1));
    p.connect();
    p.events();
    const auto total = p.out_info().chunks;

    FrameLoan loan;
    REQUIRE(p.out->lend(200, loan));
    CHECK(loan.capacity >= 200);
    REQUIRE(loan.keep);
    CHECK(p.out_info().chunks_free == total - 1);  // lent: nobody else gets it
    std::memset(loan.data, 0x5a, 200);
    wire::store_channel(loan.data, a);
    const auto r = p.out->send_loan(loan, 200);
    CHECK(r.sent);
    Frame f;
    REQUIRE(p.in->take(f));
    CHECK(f.size() == 200);
    CHECK(wire::load_channel(f.data()) == a);
    CHECK(f.data()[199] == 0x5a);
    CHECK(p.inside_mapping(f.data()));
    f.reset();
    CHECK(p.out_info().chunks_free == total);

    // A loan given back, and one that is not this port's, change nothing.
    FrameLoan unused;
    REQUIRE(p.out->lend(3000, unused));
    CHECK(p.out_info().chunks_free == total - 1);
    p.out->return_loan(unused);
    CHECK(p.out_info().chunks_free == total);
    FrameLoan forged = unused;
    forged.keep = std::make_shared<int>(0);
    CHECK_FALSE(p.out->send_loan(forged, 100).sent);
    CHECK_FALSE(p.in->take(f));
}

TEST_CASE("loans take at most half of a class, and sends never reuse a lent chunk", "[shm][ports][loans]") {
    Pair p;  // 256 B x 32, 4 KiB x 8, one huge chunk
    const auto a = channel("a");
    p.in->subscribe(interest(a, 1));
    p.connect();
    p.events();

    std::vector<FrameLoan> loans;
    for (int i = 0; i < 10; ++i) {
        FrameLoan l;
        if (!p.out->lend(4000, l)) break;
        std::memset(l.data, 0x11 + i, 4000);
        loans.push_back(std::move(l));
    }
    CHECK(loans.size() == 4);  // 8 chunks of 4 KiB: half may be lent

    // Frames of that class go on, dropping the subscriber's oldest (ring of 8,
    // nobody taking), and never land in a lent chunk.
    std::uint64_t dropped = 0;
    for (std::uint32_t i = 0; i < 40; ++i) {
        auto fr = frame(a, 4000, 0x77, i);
        const auto r = p.out->send(fr);
        CHECK(r.sent);
        dropped += r.dropped;
    }
    CHECK(dropped > 0);
    for (std::size_t i = 0; i < loans.size(); ++i) {
        CHECK(loans[i].data[0] == 0x11 + i);
        CHECK(loans[i].data[3999] == 0x11 + i);
    }
    auto frames = p.take_all();
    CHECK_FALSE(frames.empty());
    CHECK(counter_of(frames.back().data()) == 39);
    frames.clear();
    for (auto& l : loans) p.out->return_loan(l);
    CHECK(p.out_info().chunks_free == p.out_info().chunks);
}

TEST_CASE("a loan outlives its port: its memory stays mapped until it is gone", "[shm][ports][loans]") {
    Pair p;
    FrameLoan loan;
    REQUIRE(p.out->lend(1000, loan));
    p.out.reset();  // the node closed
    std::memset(loan.data, 0x33, 1000);  // still writable (ASan/segfault otherwise)
    CHECK(loan.data[999] == 0x33);
}

TEST_CASE("a segment's memory stays within PortOptions::memory: pages are reused, given back, then the oldest frames go, counted",
          "[shm][ports][memory]") {
    auto o = options(0x5eed, 4 << 20);
    o.memory = 2 << 20;
    Pair p(
        [](shm::Config& c) {
            c.ring = 64;
            c.classes = {{256, 32}, {4096, 8}, {(1 << 20) + 4096, 8}};  // 8 MiB of 1 MiB chunks: more than the limit
            c.huge_count = 0;
            c.held_divisor = 1;
        },
        o);
    const std::string path = p.dir.path() + "/" + p.out_info().name;
    auto blocks = [&] {
        struct stat st {};
        REQUIRE(::stat(path.c_str(), &st) == 0);
        return static_cast<std::size_t>(st.st_blocks) * 512;
    };
    const auto a = channel("a");
    p.subscribe_linked(a);
    CHECK(p.out_info().memory_limit == std::size_t(2 << 20));

    // A subscriber that reads nothing: 300 KiB frames queue up until the limit,
    // then the oldest queued ones are taken back (counted) and their pages reused.
    std::size_t dropped = 0;
    const std::uint32_t sent = 20;
    for (std::uint32_t i = 1; i <= sent; ++i) {
        auto f = frame(a, 300 << 10, 0x11, i);
        const auto r = p.out->send(f);
        CHECK(r.sent);
        dropped += r.dropped;
        CHECK(p.out_info().memory <= std::size_t(2 << 20));
        CHECK(blocks() <= std::size_t(2 << 20));
    }
    CHECK(dropped > 0);
    CHECK(p.out_info().over_memory == 0);  // nothing dropped that a queued frame could make room for
    auto frames = p.take_all();
    CHECK(frames.size() + dropped == sent);
    REQUIRE_FALSE(frames.empty());
    for (std::size_t k = 0; k < frames.size(); ++k) CHECK(counter_of(frames[k].data()) == sent - frames.size() + 1 + k);

    // Every chunk with pages held by the subscriber: a frame that needs more is
    // dropped, counted, and said, without blocking.
    auto f = frame(a, 300 << 10, 0x22, 100);
    const auto r = p.out->send(f);
    CHECK(r.sent);
    CHECK(r.dropped == 1);
    CHECK(p.out_info().over_memory == 1);
    bool said = false;
    for (const auto& line : p.out_info().notices) said = said || line.find("NodeOptions::shared_memory_size") != std::string::npos;
    CHECK(said);
    CHECK(blocks() <= std::size_t(2 << 20));

    // Released, the frames' chunks take new frames again; a smaller class's
    // first frame gets its pages from idle large chunks given back.
    frames.clear();
    auto g = frame(a, 300 << 10, 0x33, 101);
    CHECK(p.out->send(g).dropped == 0);
    Frame got;
    REQUIRE(p.in->take(got));
    CHECK(counter_of(got.data()) == 101);
    got.reset();
    for (std::uint32_t i = 0; i < 8; ++i) {
        auto small = frame(a, 3000, 0x44, 200 + i);
        CHECK(p.out->send(small).dropped == 0);
        REQUIRE(p.in->take(got));
        CHECK(counter_of(got.data()) == 200 + i);
        got.reset();
    }
    CHECK(p.out_info().memory <= std::size_t(2 << 20));
    CHECK(blocks() <= std::size_t(2 << 20));
}

TEST_CASE("a node's default shared memory is at most 8 MiB", "[shm][ports][memory]") {
    CHECK(gecko::NodeOptions{}.shared_memory_size <= std::size_t(8 << 20));
    CHECK(PortOptions{}.memory <= std::size_t(8 << 20));
}
