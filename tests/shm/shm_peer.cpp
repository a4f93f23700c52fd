// SPDX-License-Identifier: Apache-2.0
// gecko_shm_peer: the other process of the shm tests. One line per event on
// stdout, so a test can await it; every loop is bounded (30 s) and ends when
// stdin closes.
//   sub DIR LOCATOR HOLD   an InPort that takes frames and keeps the last HOLD
//                          as Frames: "ready", "held HOLD" once it holds them
//                          (with GECKO_SHM_GROUP set, it has group access)
//   pub DIR SESSION        an OutPort that sends a frame every millisecond to
//                          whoever subscribes: "locator shm://...", "joined"
//   node-pub N             a Node (GECKO_* environment) publishing N strings on
//                          "greetings" once a subscriber is there: "published N"
//   node-sub N             a Node receiving N strings: "recv TEXT", "done"
//   node-stream            a Node publishing a string on "greetings" every 2 ms
//                          until stdin closes: "locator L" for each of its locators
//   node-listen HOW        a Node receiving "greetings" by `receive` or `callback`
//                          until stdin closes: "ready", then "got N" every 10
//   hostile-seg DIR NAME   lays out segment NAME in DIR as this user, mode 0666
//                          (a publisher a victim should not trust): "ready"
// Run as root with GECKO_TEST_AS=UID:GID, it first becomes that user and group
// (another user sharing the publisher's group).
#include <gecko/gecko.hpp>
#include <gecko/msgs/std.hpp>

#include <grp.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <atomic>
#include <cstdlib>
#include <deque>
#include <string>

#include "shm_support.hpp"

using namespace std::chrono_literals;

namespace {

void say(const std::string& line) {
    std::printf("%s\n", line.c_str());
    std::fflush(stdout);
}

// True once stdin is closed (the test is done with us).
bool stdin_closed(int timeout_ms = 0) {
    pollfd p{0, POLLIN, 0};
    if (::poll(&p, 1, timeout_ms) <= 0) return false;
    char buf[64];
    return ::read(0, buf, sizeof buf) <= 0;
}

int sub(const std::string& dir, const std::string& locator, std::size_t hold) {
    auto transport = gecko::detail::make_shm_transport(shmtest::config(dir));
    auto o = shmtest::options(static_cast<std::uint64_t>(::getpid()));
    o.group_access = std::getenv("GECKO_SHM_GROUP") != nullptr;  // trusts segments of its group's users
    auto in = transport->open_in(o);
    in->subscribe(shmtest::interest(shmtest::channel("t"), static_cast<std::uint64_t>(::getpid())));
    std::string why;
    if (!in->connect(locator, why)) {
        say("cannot connect: " + why);
        return 1;
    }
    say("ready");
    std::deque<gecko::detail::Frame> kept;
    bool said = false;
    std::size_t notices = 0;
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    while (std::chrono::steady_clock::now() < deadline) {
        const unsigned fired = in->wait(100ms, {0, -1});
        if ((fired & 2u) && stdin_closed()) return 0;
        gecko::detail::Frame f;
        while (in->take(f)) {
            kept.push_back(std::move(f));
            while (kept.size() > hold) kept.pop_front();
        }
        gecko::detail::ShmInInfo info;
        gecko::detail::shm_in_info(*in, info);
        for (; notices < info.notices.size(); ++notices) say("notice " + info.notices[notices]);
        if (!said && kept.size() == hold) {
            say("held " + std::to_string(hold));
            said = true;
        }
    }
    return 0;
}

int pub(const std::string& dir, std::uint64_t session) {
    auto transport = gecko::detail::make_shm_transport(shmtest::config(dir));
    auto out = transport->open_out(shmtest::options(session));
    say("locator " + out->locators().front());
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    std::uint32_t n = 0;
    while (std::chrono::steady_clock::now() < deadline && !stdin_closed(1)) {
        out->drain_events([](const gecko::detail::PortEvent& e) {
            if (e.joined) say("joined");
        });
        auto f = shmtest::frame(shmtest::channel("t"), 100, 0x11, ++n);
        out->send(f);
    }
    return 0;
}

int node_pub(long count) {
    auto options = gecko::NodeOptions::from_env();
    options.name = "shm_pub";
    gecko::Node node(options);
    auto pub = node.publisher<gecko::msgs::String>("greetings");
    if (!pub.wait_for_subscribers(1, 20s)) {
        say("no subscriber");
        return 1;
    }
    for (long i = 1; i <= count; ++i) pub.publish(gecko::msgs::String{"hello " + std::to_string(i)});
    say("published " + std::to_string(count));
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    while (std::chrono::steady_clock::now() < deadline && !stdin_closed(100)) {
    }
    return 0;
}

int node_sub(long count) {
    auto options = gecko::NodeOptions::from_env();
    options.name = "shm_sub";
    gecko::Node node(options);
    gecko::SubscriberOptions so;
    so.depth = 1000;
    auto sub = node.subscriber<gecko::msgs::String>("greetings", so);
    say("ready " + node.locators().front());
    long got = 0;
    const auto deadline = std::chrono::steady_clock::now() + 20s;
    while (got < count && std::chrono::steady_clock::now() < deadline) {
        auto msg = sub.receive(100ms);
        if (!msg) continue;
        ++got;
        say("recv " + msg->data);
    }
    say(got == count ? "done" : "timed out");
    return got == count ? 0 : 1;
}

int node_stream() {
    auto options = gecko::NodeOptions::from_env();
    options.name = "shm_stream";
    gecko::Node node(options);
    auto pub = node.publisher<gecko::msgs::String>("greetings");
    for (const auto& l : node.locators()) say("locator " + l);
    const auto deadline = std::chrono::steady_clock::now() + 60s;
    for (long i = 1; std::chrono::steady_clock::now() < deadline && !stdin_closed(2); ++i)
        pub.publish(gecko::msgs::String{"hello " + std::to_string(i)});
    return 0;
}

int node_listen(const std::string& how) {
    auto options = gecko::NodeOptions::from_env();
    options.name = "shm_listen_" + how;
    gecko::Node node(options);
    std::atomic<long> got{0};
    auto tell = [&got] {
        if (++got % 10 == 0) say("got " + std::to_string(got.load()));
    };
    const auto deadline = std::chrono::steady_clock::now() + 60s;
    if (how == "callback") {
        auto sub = node.subscriber<gecko::msgs::String>("greetings", [&](const gecko::msgs::String&) { tell(); });
        say("ready");
        while (std::chrono::steady_clock::now() < deadline && !stdin_closed()) node.spin_once(20ms);
        return 0;
    }
    auto sub = node.subscriber<gecko::msgs::String>("greetings");
    say("ready");
    while (std::chrono::steady_clock::now() < deadline && !stdin_closed()) {
        if (sub.receive(20ms)) tell();
    }
    return 0;
}

int hostile_segment(const std::string& dir, const std::string& name) {
    shmtest::Segment seg(shmtest::config(dir), name);
    ::fchmod(seg.fd(), 0666);
    say("ready");
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    while (std::chrono::steady_clock::now() < deadline && !stdin_closed(100)) {
    }
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    if (const char* as = std::getenv("GECKO_TEST_AS")) {
        unsigned uid = 0, gid = 0;
        if (std::sscanf(as, "%u:%u", &uid, &gid) != 2 || ::setgroups(0, nullptr) != 0 || ::setgid(gid) != 0 ||
            ::setuid(uid) != 0) {
            std::fprintf(stderr, "gecko_shm_peer: cannot become %s\n", as);
            return 2;
        }
    }
    const std::string role = argc > 1 ? argv[1] : "";
    if (role == "sub" && argc == 5) return sub(argv[2], argv[3], std::strtoul(argv[4], nullptr, 10));
    if (role == "pub" && argc == 4) return pub(argv[2], std::strtoull(argv[3], nullptr, 16));
    if (role == "node-pub" && argc == 3) return node_pub(std::strtol(argv[2], nullptr, 10));
    if (role == "node-sub" && argc == 3) return node_sub(std::strtol(argv[2], nullptr, 10));
    if (role == "node-stream" && argc == 2) return node_stream();
    if (role == "node-listen" && argc == 3) return node_listen(argv[2]);
    if (role == "hostile-seg" && argc == 4) return hostile_segment(argv[2], argv[3]);
    std::fprintf(stderr, "usage: gecko_shm_peer sub DIR LOCATOR HOLD | pub DIR SESSION | node-pub N | node-sub N | "
                         "node-stream | node-listen receive|callback | hostile-seg DIR NAME\n");
    return 2;
}
