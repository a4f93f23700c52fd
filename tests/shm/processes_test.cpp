// SPDX-License-Identifier: Apache-2.0
// Real processes on both ends of a segment, killed with -9 or exiting cleanly.

#include <catch2/catch.hpp>

#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>

#include "shm_support.hpp"
#include "support/process.hpp"

using namespace std::chrono_literals;
using namespace shmtest;
using gecko::test::Process;

namespace {

Process peer(const std::vector<std::string>& args) { return Process::spawn(GECKO_SHM_PEER, args); }

bool contains(const std::vector<std::string>& v, const std::string& x) { return std::find(v.begin(), v.end(), x) != v.end(); }

// Paces a publisher's loop on its own event fd (a subscriber's change rings it).
void pace(OutPort& out, std::chrono::milliseconds ms) {
    pollfd p{out.event_fd(), POLLIN, 0};
    ::poll(&p, 1, static_cast<int>(ms.count()));
}

}  // namespace

TEST_CASE("a subscriber killed with -9 while holding frames: its chunks come back, 100 times over", "[shm][processes]") {
    Dir dir;
    auto cfg = config(dir.path());
    cfg.check_interval = 5ms;
    auto transport = make_shm_transport(cfg);
    auto out = transport->open_out(options());
    const std::string locator = out->locators().front();
    int joins = 0, leaves = 0;
    auto count_events = [&] {
        out->drain_events([&](const PortEvent& e) { ++(e.joined ? joins : leaves); });
    };
    ShmOutInfo info;
    std::uint32_t n = 0;
    for (int kill = 1; kill <= 100; ++kill) {
        INFO("kill " << kill);
        auto sub = peer({"sub", dir.path(), locator, "8"});
        REQUIRE(sub.wait_for_line("ready", 5s));
        // Publish until it holds 8 frames in place.
        bool held = false;
        for (const auto until = std::chrono::steady_clock::now() + 10s; !held && std::chrono::steady_clock::now() < until;) {
            count_events();
            auto f = frame(channel("t"), 100, 0, ++n);
            out->send(f);
            held = sub.out().read_line(2ms).value_or("").rfind("held", 0) == 0;
        }
        INFO("subscriber output:\n" << sub.output());
        REQUIRE(held);
        REQUIRE(shm_out_info(*out, info));
        CHECK(info.chunks_free <= info.chunks - 8);
        sub.kill();
        REQUIRE(sub.wait(5s));
        // The publisher notices (its pid is gone) and takes everything back.
        for (const auto until = std::chrono::steady_clock::now() + 10s; std::chrono::steady_clock::now() < until;) {
            count_events();
            REQUIRE(shm_out_info(*out, info));
            if (info.subscribers == 0) break;
            auto f = frame(channel("t"), 100, 0, ++n);
            out->send(f);
            pace(*out, 2ms);
        }
        CHECK(info.subscribers == 0);
        CHECK(info.chunks_free == info.chunks);
    }
    count_events();
    CHECK(info.reclaimed == 100);
    CHECK(joins == 100);
    CHECK(leaves == 100);
    // The killed subscribers' doorbells went with their slots.
    CHECK(dir.entries().size() == 2);
}

TEST_CASE("a publisher killed with -9: the subscriber drops the link, the next publisher removes the segment", "[shm][processes]") {
    Dir dir;
    auto pub = peer({"pub", dir.path(), "abcdef"});
    const auto line = pub.wait_for_line("locator ", 5s);
    REQUIRE(line);
    const std::string locator = line->substr(8);
    const std::string name = locator.substr(6);
    auto transport = make_shm_transport(config(dir.path()));
    auto in = transport->open_in(options());
    in->subscribe(interest(channel("t"), 9));
    std::string why;
    REQUIRE(in->connect(locator, why));
    Frame f;
    int got = 0;
    for (int i = 0; i < 500 && got < 5; ++i) {
        in->wait(10ms, {-1, -1});
        while (in->take(f)) ++got;
    }
    REQUIRE(got >= 5);
    pub.kill();
    REQUIRE(pub.wait(5s));
    ShmInInfo info;
    for (int i = 0; i < 500; ++i) {
        in->wait(10ms, {-1, -1});
        while (in->take(f)) f.reset();
        REQUIRE(shm_in_info(*in, info));
        if (info.links == 0) break;
    }
    CHECK(info.links == 0);
    CHECK(info.links_dropped == 1);
    CHECK(info.corrupt == 0);
    bool said = false;
    for (const auto& n : info.notices) said = said || n.find("died") != std::string::npos;
    CHECK(said);
    CHECK(contains(dir.entries(), name));  // stale: nobody removed it yet
    CHECK(contains(dir.entries(), name + ".bell"));
    f.reset();
    // A successor is a new segment; its housekeeping (run by the node's
    // reactor once it is up) removes the dead one.
    auto successor = transport->open_out(options(0xabcdef01));
    CHECK(contains(dir.entries(), name));  // not on the constructor's path
    successor->tidy();
    CHECK_FALSE(contains(dir.entries(), name));
    CHECK_FALSE(contains(dir.entries(), name + ".bell"));
    REQUIRE(in->connect(successor->locators().front(), why));
    successor->drain_events([](const PortEvent&) {});
    auto g = frame(channel("t"), 64);
    successor->send(g);
    REQUIRE(in->take(f));
}

TEST_CASE("publisher and subscriber processes that exit cleanly leave nothing behind", "[shm][processes]") {
    Dir dir;
    auto pub = peer({"pub", dir.path(), "1234"});
    const auto line = pub.wait_for_line("locator ", 5s);
    REQUIRE(line);
    auto sub = peer({"sub", dir.path(), line->substr(8), "4"});
    REQUIRE(sub.wait_for_line("held 4", 10s));
    CHECK(dir.entries().size() == 3);
    sub.close_stdin();
    CHECK(sub.wait(5s) == 0);
    pub.close_stdin();
    CHECK(pub.wait(5s) == 0);
    CHECK(dir.entries().empty());
}

TEST_CASE("geckocore removes the segment and doorbell a publisher killed with -9 left behind", "[shm][processes][core]") {
    Dir dir;
    auto pub = peer({"pub", dir.path(), "abcdef"});
    const auto line = pub.wait_for_line("locator ", 5s);
    REQUIRE(line);
    const std::string name = line->substr(8 + 6);  // "locator shm://<name>"
    // A live publisher's segment next to it is left alone.
    auto transport = make_shm_transport(config(dir.path()));
    auto alive = transport->open_out(options(0x1234));
    const std::string alive_name = alive->locators().front().substr(6);

    pub.kill();
    REQUIRE(pub.wait(5s));
    REQUIRE(contains(dir.entries(), name));
    REQUIRE(contains(dir.entries(), name + ".bell"));

    gecko::test::SpawnOptions o;
    o.stderr_mode = gecko::test::Stderr::merge;  // its log: the line it says the removal with
    auto core = Process::spawn(GECKOCORE_PATH,
                               {"--key", "shmclean-" + std::to_string(::getpid()), "--no-multicast", "--door", "0",
                                "--listen", "tcp://127.0.0.1:*", "--shm-directory", dir.path()},
                               o);
    const auto said = core.wait_for_line("shared-memory file(s) that crashed processes left", 10s);
    REQUIRE(said);
    CHECK(said->find("removed 2 ") != std::string::npos);
    CHECK_FALSE(contains(dir.entries(), name));
    CHECK_FALSE(contains(dir.entries(), name + ".bell"));
    CHECK(contains(dir.entries(), alive_name));
}

TEST_CASE("with group access, another user of the group links over shared memory, and without it cannot open it",
          "[shm][processes][group]") {
    Dir dir;
    for (const bool group : {true, false}) {
        auto o = options(group ? 0x6001 : 0x6002);
        o.group_access = group;
        auto transport = make_shm_transport(config(dir.path()));
        auto out = transport->open_out(o);
        const std::string name = out->locators().front().substr(6);
        struct stat seg {}, bell {};
        REQUIRE(::stat((dir.path() + "/" + name).c_str(), &seg) == 0);
        REQUIRE(::stat((dir.path() + "/" + name + ".bell").c_str(), &bell) == 0);
        CHECK((seg.st_mode & 0777) == (group ? 0660u : 0600u));
        CHECK((bell.st_mode & 0777) == (group ? 0660u : 0600u));
        if (::geteuid() != 0) continue;  // becoming another user needs root

        // Another user (nobody) in our group, in a directory the group may use.
        REQUIRE(::chmod(dir.path().c_str(), 0770) == 0);
        gecko::test::SpawnOptions as;
        as.env = {{"GECKO_TEST_AS", "65534:" + std::to_string(::getegid())}, {"GECKO_SHM_GROUP", "1"}};
        auto sub = Process::spawn(GECKO_SHM_PEER, {"sub", dir.path(), out->locators().front(), "1"}, as);
        const auto first = sub.wait_for_line([](const std::string& l) { return l == "ready" || l.rfind("cannot connect", 0) == 0; }, 5s);
        REQUIRE(first);
        if (!group) {
            INFO(*first);
            CHECK(first->find("no permission to open") != std::string::npos);
            continue;
        }
        REQUIRE(*first == "ready");
        bool held = false;
        for (std::uint32_t i = 0; i < 500 && !held; ++i) {
            out->drain_events([](const PortEvent&) {});
            auto f = frame(channel("t"), 64, 0x5a, i);
            out->send(f);
            held = static_cast<bool>(sub.wait_for_line("held 1", 10ms));
        }
        CHECK(held);
    }
}
