// SPDX-License-Identifier: Apache-2.0
// Local processes against shared memory (issue 25, items 1-5): truncating a
// live segment, another user's segment, names taken before a port makes
// them, a stray owners bit. Hostile steps are real processes or threads,
// written with the project's own code. Tests that need another user run as
// root (they become `nobody`); elsewhere they say why they are skipped.

#include <catch2/catch.hpp>

#include <gecko/gecko.hpp>
#include <gecko/msgs/std.hpp>

#include <fcntl.h>
#include <sys/inotify.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <thread>

#include "rig.hpp"
#include "shm_support.hpp"
#include "support/ports.hpp"
#include "support/process.hpp"

using namespace std::chrono_literals;
using namespace shmtest;
using gecko::test::Process;

namespace {

// Runs `body` in a child process: its exit code, or 128 + the signal that
// ended it (a SIGBUS must fail the test, not end the test run).
int in_child(const std::function<int()>& body) {
    const pid_t pid = ::fork();
    if (pid == 0) {
        int code = 99;
        try {
            code = body();
        } catch (...) {
        }
        std::_Exit(code);
    }
    int st = 0;
    ::waitpid(pid, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

// Sends until the subscriber takes a frame (bounded): true if it did.
bool carries(Rig& r, std::chrono::milliseconds bound = 10s) {
    const auto until = std::chrono::steady_clock::now() + bound;
    for (std::uint32_t i = 0; std::chrono::steady_clock::now() < until; ++i) {
        r.out->events_pending();
        auto f = frame(r.a, 100, 0x33, i);
        r.out->send(f);
        Frame got;
        if (r.in->take(got)) return true;
        r.in->wait(1ms, {-1, -1});
    }
    return false;
}

// A node process's environment: discovery through `core` only, over shm and ipc.
gecko::test::SpawnOptions node_env(const gecko::test::CoreOnLoopback& core, const std::string& key) {
    gecko::test::SpawnOptions env;
    env.env = {{"GECKO_CORE", core.address()}, {"GECKO_NO_MULTICAST", "1"}, {"GECKO_KEY", key}, {"GECKO_TRANSPORTS", "shm,ipc"}};
    env.unset_env = {"GECKO_DISCOVERY", "GECKO_MULTICAST", "GECKO_INTERFACE"};
    return env;
}

bool has_notice(const std::vector<std::string>& notices, const std::string& text) {
    for (const auto& n : notices)
        if (n.find(text) != std::string::npos) return true;
    return false;
}

}  // namespace

// ---- 1. truncation ------------------------------------------------------------------------------

TEST_CASE("a segment cut short under both ports: neither process dies, the link is dropped", "[shm][hostile]") {
    for (const off_t to : {off_t{4096}, off_t{0}}) {
        INFO("truncated to " << to << " bytes");
        const int code = in_child([to] {
            Rig p;
            p.connect();
            auto f = frame(p.a, 100, 0x5a, 1);
            p.out->send(f);
            Frame held;
            if (!p.in->take(held)) return 10;
            if (::truncate(p.path().c_str(), to) != 0) return 11;
            // Each side touches the mapping before its next size check: the
            // application reads a frame it holds, the publisher writes a frame.
            unsigned sum = 0;
            for (std::size_t k = 0; k < held.size(); ++k) sum += held.data()[k];
            auto g = frame(p.a, 3000, 0x5b, 2);
            p.out->send(g);
            Frame next;
            p.in->take(next);
            p.in->wait(30ms, {-1, -1});
            p.in->take(next);
            ShmInInfo in;
            shm_in_info(*p.in, in);
            if (in.links != 0) return 12;  // dropped once it looked
            ShmOutInfo out;
            shm_out_info(*p.out, out);
            if (!out.closed) return 13;
            return sum == ~0u ? 14 : 0;
        });
        CHECK(code == 0);
    }
}

TEST_CASE("truncating a live segment kills neither the publisher nor a receive() or callback subscriber",
          "[shm][hostile][processes]") {
    const std::string key = "shmt-" + std::to_string(::getpid());
    const auto core = gecko::test::start_core(GECKOCORE_PATH, key);
    const auto env = node_env(core, key);
    auto receiver = Process::spawn(GECKO_SHM_PEER, {"node-listen", "receive"}, env);
    auto callback = Process::spawn(GECKO_SHM_PEER, {"node-listen", "callback"}, env);
    REQUIRE(receiver.wait_for_line("ready", 10s));
    REQUIRE(callback.wait_for_line("ready", 10s));
    auto pub = Process::spawn(GECKO_SHM_PEER, {"node-stream"}, env);
    const auto shm = pub.wait_for_line("locator shm://", 10s);
    REQUIRE(shm);
    const std::string path = "/dev/shm/" + shm->substr(std::string("locator shm://").size());
    INFO("publisher:\n" << pub.output() << "receive():\n" << receiver.output() << "callback:\n" << callback.output());
    REQUIRE(receiver.wait_for_line("got", 15s));
    REQUIRE(callback.wait_for_line("got", 15s));
    REQUIRE(::truncate(path.c_str(), 4096) == 0);
    std::this_thread::sleep_for(300ms);  // what they do meanwhile is the test: any touch of a cut page
    REQUIRE(::truncate(path.c_str(), 0) == 0);
    std::this_thread::sleep_for(300ms);
    CHECK(pub.running());
    CHECK(receiver.running());
    CHECK(callback.running());
    for (auto* p : {&pub, &receiver, &callback}) {
        p->close_stdin();
        CHECK(p->wait(10s) == 0);
    }
}

// ---- 2. another user's segment --------------------------------------------------------------

TEST_CASE("a segment others may write is not mapped", "[shm][hostile]") {
    Dir dir;
    const auto cfg = config(dir.path());
    Segment seg(cfg, "gecko-open-to-all");
    REQUIRE(::fchmod(seg.fd(), 0666) == 0);
    auto transport = make_shm_transport(cfg);
    auto in = transport->open_in(options());
    std::string why;
    CHECK_FALSE(in->connect(seg.locator(), why));
    INFO(why);
    CHECK(why.find("writable by every user") != std::string::npos);
    REQUIRE(::fchmod(seg.fd(), 0600) == 0);
    CHECK(in->connect(seg.locator(), why));  // the same segment, private: linked
}

TEST_CASE("another user's segment is not mapped, even by root", "[shm][hostile][processes]") {
    if (::geteuid() != 0) {
        WARN("skipped: becoming another user (nobody) needs root, and this runs as uid " << ::geteuid());
        return;
    }
    Dir dir;
    REQUIRE(::chmod(dir.path().c_str(), 01777) == 0);  // where nobody may create a file
    gecko::test::SpawnOptions as;
    as.env = {{"GECKO_TEST_AS", "65534:65534"}};
    auto hostile = Process::spawn(GECKO_SHM_PEER, {"hostile-seg", dir.path(), "gecko-nobodys"}, as);
    const auto ready = hostile.wait_for_line("ready", 10s);
    INFO("hostile process:\n" << hostile.output());
    REQUIRE(ready);  // loudly: root that cannot become nobody is a broken test machine
    struct stat st {};
    REQUIRE(::stat((dir.path() + "/gecko-nobodys").c_str(), &st) == 0);
    REQUIRE(st.st_uid == 65534u);
    auto transport = make_shm_transport(config(dir.path()));
    auto in = transport->open_in(options());
    std::string why;
    CHECK_FALSE(in->connect("shm://gecko-nobodys", why));
    INFO(why);
    CHECK(why.find("belongs to uid 65534") != std::string::npos);
}

// ---- 3. names taken first -------------------------------------------------------------------

TEST_CASE("a taken segment or doorbell name never throws out of a port or a Node", "[shm][hostile]") {
    Dir dir;
    const auto cfg = config(dir.path());
    auto transport = make_shm_transport(cfg);
    SECTION("the doorbell of the name a session would have had is squatted: the port takes another name") {
        auto o = options(0xabcdef);
        const std::string old_name = dir.path() + "/gecko-0000000000abcdef";
        REQUIRE(::mkfifo((old_name + ".bell").c_str(), 0600) == 0);
        auto out = transport->open_out(o);
        REQUIRE(out->locators().size() == 1);
        auto second = transport->open_out(o);  // the same session again: another name
        REQUIRE(second->locators().size() == 1);
        CHECK(second->locators() != out->locators());
    }
    SECTION("an exact name taken (file, FIFO, symlink): no shm locator, said once") {
        for (const char* kind : {"file", "fifo", "symlink", "bell"}) {
            INFO(kind);
            const std::string name = std::string("taken-") + kind;
            const std::string path = dir.path() + "/" + name;
            if (std::string(kind) == "file") REQUIRE(::close(::open(path.c_str(), O_CREAT | O_WRONLY, 0600)) == 0);
            if (std::string(kind) == "fifo") REQUIRE(::mkfifo(path.c_str(), 0600) == 0);
            if (std::string(kind) == "symlink") REQUIRE(::symlink("/dev/null", path.c_str()) == 0);
            if (std::string(kind) == "bell") REQUIRE(::mkfifo((path + ".bell").c_str(), 0600) == 0);
            auto o = options();
            o.listen = {"shm://" + name};
            std::vector<std::string> said;
            o.notice = [&](gecko::LogLevel, const std::string&, const std::string& m) { said.push_back(m); };
            std::unique_ptr<OutPort> out;
            REQUIRE_NOTHROW(out = transport->open_out(o));
            CHECK(out->locators().empty());
            CHECK(said.size() == 1);
            CHECK(has_notice(said, "offers no shm locator"));
            auto f = frame(channel("a"), 64);
            CHECK_FALSE(out->send(f).sent);
            out->events_pending();
            out->drain_events([](const PortEvent&) {});
        }
    }
    SECTION("a Node whose exact shm name is taken starts, and offers what else it has") {
        const std::string name = "gecko-taken-" + std::to_string(::getpid());
        REQUIRE(::mkfifo(("/dev/shm/" + name + ".bell").c_str(), 0600) == 0);
        gecko::NodeOptions no;
        no.name = "squatted";
        no.key = "shmt-" + std::to_string(::getpid());
        no.discovery = false;
        no.transports = {"shm", "ipc"};
        no.listen = {"shm://" + name};
        std::optional<gecko::Node> node;
        CHECK_NOTHROW(node.emplace(no));
        if (node)
            for (const auto& l : node->locators()) CHECK(l.rfind("shm://", 0) != 0);
        ::unlink(("/dev/shm/" + name + ".bell").c_str());
    }
}

TEST_CASE("a process that squats every doorbell as its segment appears never aborts a publisher", "[shm][hostile]") {
    // The attack of the issue: an inotify watch on the directory creates
    // "<segment>.bell" for every segment the moment it appears.
    Dir dir;
    const int watch = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    REQUIRE(watch >= 0);
    REQUIRE(::inotify_add_watch(watch, dir.path().c_str(), IN_CREATE) >= 0);
    std::atomic<bool> stop{false};
    std::atomic<int> squatted{0};
    std::thread squatter([&] {
        alignas(inotify_event) char buf[4096];
        while (!stop) {
            const auto n = ::read(watch, buf, sizeof buf);
            if (n <= 0) {
                std::this_thread::yield();
                continue;
            }
            for (char* p = buf; p < buf + n;) {
                const auto* e = reinterpret_cast<const inotify_event*>(p);
                const std::string name = e->len ? e->name : "";
                if (name.rfind("gecko-", 0) == 0 && name.find(".bell") == std::string::npos &&
                    name.rfind("gecko-in-", 0) != 0 && ::mkfifo((dir.path() + "/" + name + ".bell").c_str(), 0600) == 0)
                    ++squatted;
                p += sizeof(inotify_event) + e->len;
            }
        }
    });
    auto transport = make_shm_transport(config(dir.path()));
    for (int i = 0; i < 20; ++i) {
        auto o = options(0x1000 + static_cast<std::uint64_t>(i));
        std::vector<std::string> said;
        o.notice = [&](gecko::LogLevel, const std::string&, const std::string& m) { said.push_back(m); };
        std::unique_ptr<OutPort> out;
        REQUIRE_NOTHROW(out = transport->open_out(o));
        if (out->locators().empty()) CHECK(has_notice(said, "offers no shm locator"));
    }
    // On a loaded machine the squatter may not have read its events yet: they stay queued.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (squatted == 0 && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
    stop = true;
    squatter.join();
    ::close(watch);
    CHECK(squatted > 0);  // the attack ran
}

// ---- 5. a stray owners bit ----------------------------------------------------------------

TEST_CASE("owners bits of slots nobody holds are cleared: a publisher goes on delivering", "[shm][hostile]") {
    Rig p;
    p.connect();
    REQUIRE(carries(p));
    {
        // Another process sets the bit of a free slot (3) in every chunk.
        const int fd = ::open(p.path().c_str(), O_RDWR);
        REQUIRE(fd >= 0);
        shm::HeaderCopy h;
        REQUIRE(shm::read_header(fd, h));
        void* base = ::mmap(nullptr, h.total_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        REQUIRE(base != MAP_FAILED);
        auto* desc = reinterpret_cast<shm::ChunkDesc*>(static_cast<std::uint8_t*>(base) + h.desc_offset);
        for (std::uint64_t c = 0; c < h.chunk_total; ++c) desc[c].owners.fetch_or(std::uint64_t{1} << 3);
        ::munmap(base, h.total_size);
        ::close(fd);
    }
    // Frames go out again once the publisher has looked (housekeeping: 20 ms here).
    for (int i = 0; i < 20; ++i) {
        INFO("frame " << i);
        REQUIRE(carries(p));
    }
    ShmOutInfo info;
    REQUIRE(shm_out_info(*p.out, info));
    CHECK(info.strays > 0);
    CHECK(has_notice(info.notices, "given back"));
}

// ---- 4. a dropped link -----------------------------------------------------------------------

TEST_CASE("a link dropped for garbage in its slot goes to ipc at once, and back to shm later", "[shm][hostile][processes]") {
    const std::string key = "shmt4-" + std::to_string(::getpid());
    const auto core = gecko::test::start_core(GECKOCORE_PATH, key);
    const auto env = node_env(core, key);
    auto listener = Process::spawn(GECKO_SHM_PEER, {"node-listen", "receive"}, env);
    REQUIRE(listener.wait_for_line("ready", 10s));
    auto pub = Process::spawn(GECKO_SHM_PEER, {"node-stream"}, env);
    const auto shm = pub.wait_for_line("locator shm://", 10s);
    REQUIRE(shm);
    const std::string path = "/dev/shm/" + shm->substr(std::string("locator shm://").size());
    INFO("publisher:\n" << pub.output() << "listener:\n" << listener.output());
    REQUIRE(listener.wait_for_line("got", 15s));

    const int fd = ::open(path.c_str(), O_RDWR);
    REQUIRE(fd >= 0);
    shm::HeaderCopy h;
    REQUIRE(shm::read_header(fd, h));
    auto* base = static_cast<std::uint8_t*>(::mmap(nullptr, h.total_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
    REQUIRE(base != MAP_FAILED);
    // The listener's slot, active, holding its pid.
    auto listener_slot = [&]() -> shm::SlotHead* {
        for (std::uint64_t i = 0; i < h.slot_count; ++i) {
            auto* s = reinterpret_cast<shm::SlotHead*>(base + h.slots_offset + i * h.slot_size);
            const auto w = s->state.load();
            if (shm::state_of(w) == shm::slot_active && shm::pid_of(w) == static_cast<std::uint32_t>(listener.pid())) return s;
        }
        return nullptr;
    };
    shm::SlotHead* slot = nullptr;
    for (const auto until = std::chrono::steady_clock::now() + 10s; !slot && std::chrono::steady_clock::now() < until;)
        if (!(slot = listener_slot())) std::this_thread::sleep_for(10ms);
    REQUIRE(slot);
    // Garbage in its ring indices (a head past the tail): the subscriber drops the link.
    slot->head.store(slot->tail.load() + 1000000);
    // Messages keep coming (over ipc) within a bound, not after a heartbeat or a restart.
    long last = 0;
    while (const auto l = listener.read_line(0ms)) last = l->rfind("got ", 0) == 0 ? std::stol(l->substr(4)) : last;
    const auto after = listener.wait_for_line(
        [&](const std::string& l) { return l.rfind("got ", 0) == 0 && std::stol(l.substr(4)) >= last + 100; }, 10s);
    CHECK(after);
    // And shared memory is tried again later: the listener holds a slot again.
    slot = nullptr;
    for (const auto until = std::chrono::steady_clock::now() + 20s; !slot && std::chrono::steady_clock::now() < until;)
        if (!(slot = listener_slot())) std::this_thread::sleep_for(20ms);
    CHECK(slot);
    ::munmap(base, h.total_size);
    ::close(fd);
    listener.close_stdin();
    pub.close_stdin();
    CHECK(listener.wait(10s) == 0);
    CHECK(pub.wait(10s) == 0);
}
