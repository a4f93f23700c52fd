// The leader/follower receive path (gecko/src/node/inbound.*), driven
// directly through a port the test scripts: it can hold a thread inside a
// take(), so that each interleaving below happens every time, not by luck.

#include <catch2/catch.hpp>

#include <sys/eventfd.h>
#include <poll.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <fstream>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "gecko/wire/frame.hpp"
#include "gecko/wire/hash.hpp"
#include "node/inbound.hpp"
#include "node/notices.hpp"
#include "node/reactor.hpp"
#include "node/sink.hpp"
#include "transport/transport.hpp"

using namespace std::chrono_literals;
using namespace gecko::detail;

namespace {

constexpr gecko::wire::Channel channel = gecko::wire::channel_of("threads", "scripted");

// A valid data frame on `channel`: sequence `n`, payload {} (any type).
SharedBytes data_frame(std::uint64_t n) {
    gecko::wire::FrameHeader h;
    h.channel = channel;
    h.sequence = n;
    h.sender_id = 7;
    h.payload_size = 1;
    auto bytes = std::make_shared<std::vector<std::uint8_t>>(gecko::wire::frame_header_size + 1);
    gecko::wire::write_frame_header(bytes->data(), h);
    (*bytes)[gecko::wire::frame_header_size] = 0x80;  // an empty msgpack map
    return bytes;
}

// An in-port whose frames the test queues, and whose take() can be made to
// stop (the thread that drains it then holds the node's ports) until released.
class ScriptedPort final : public InPort {
public:
    ScriptedPort() : fd_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {}
    ~ScriptedPort() override { ::close(fd_); }

    void push(SharedBytes frame) {
        std::lock_guard<std::mutex> lock(mutex_);
        frames_.push_back(std::move(frame));
    }
    /// The `n`th take() from now (1: the next) stops until release().
    void hold_take(int n) {
        std::lock_guard<std::mutex> lock(mutex_);
        hold_at_ = n;
    }
    /// Waits (bounded) until a take() is held.
    bool wait_held() {
        std::unique_lock<std::mutex> lock(mutex_);
        return cv_.wait_for(lock, 20s, [&] { return held_; });
    }
    void release() {
        std::lock_guard<std::mutex> lock(mutex_);
        released_ = true;
        cv_.notify_all();
    }

    bool connect(const std::string&, std::string&) override { return true; }
    void disconnect(const std::string&) override {}
    void subscribe(const Interest&) override {}
    void unsubscribe(const Interest&) override {}
    bool take(Frame& out) override {
        std::unique_lock<std::mutex> lock(mutex_);
        if (hold_at_ > 0 && --hold_at_ == 0) {
            held_ = true;
            cv_.notify_all();
            cv_.wait(lock, [&] { return released_; });
            held_ = released_ = false;
        }
        if (frames_.empty()) return false;
        out = frame_of(std::move(frames_.front()));
        frames_.pop_front();
        return true;
    }
    bool ready_now() override {
        std::lock_guard<std::mutex> lock(mutex_);
        return !frames_.empty() || hold_at_ > 0;
    }
    unsigned wait(std::chrono::nanoseconds timeout, const std::array<int, 2>& also) override {
        pollfd fds[3] = {{fd_, POLLIN, 0}, {also[0], POLLIN, 0}, {also[1], POLLIN, 0}};
        const int ms = static_cast<int>(std::min<std::int64_t>((timeout.count() + 999999) / 1000000, 100));
        if (::poll(fds, 3, ms) <= 0) return 0;
        return (fds[0].revents ? 1u : 0u) | (fds[1].revents & POLLIN ? 2u : 0u) | (fds[2].revents & POLLIN ? 4u : 0u);
    }
    int event_fd() const override { return fd_; }

private:
    int fd_;
    std::mutex mutex_;
    std::condition_variable cv_;
    std::deque<SharedBytes> frames_;
    int hold_at_ = 0;
    bool held_ = false;
    bool released_ = false;
};

// An Inbound over one scripted port, with one sink on `channel`.
struct Rig {
    Notices notices{gecko::Logger("threads")};
    Reactor reactor;  // not started: Inbound only wakes it
    ScriptedPort* port = nullptr;
    std::unique_ptr<Inbound> inbound;
    Sink sink{[] {
                  SinkConfig c;
                  c.channel = channel;
                  c.depth = 16;
                  c.what = "subscriber of 'scripted'";
                  return c;
              }(),
              notices};

    Rig() {
        auto p = std::make_unique<ScriptedPort>();
        port = p.get();
        std::vector<std::unique_ptr<InPort>> ports;
        ports.push_back(std::move(p));
        inbound = std::make_unique<Inbound>(std::move(ports), std::vector<std::vector<std::string>>{{"scripted"}},
                                            notices, reactor);
        inbound->add_sink(sink, "");
    }
    ~Rig() {
        inbound->remove_sink(sink, "");
        inbound->close();
    }
};

// Whether thread `tid` of this process sleeps (blocked on a lock or a
// condition variable), from its state in /proc.
bool sleeping(long tid) {
    std::ifstream stat("/proc/self/task/" + std::to_string(tid) + "/stat");
    std::string line;
    std::getline(stat, line);
    const auto end = line.rfind(')');
    return end != std::string::npos && end + 2 < line.size() && line[end + 2] == 'S';
}

bool wait_until(const std::function<bool()>& done, std::chrono::seconds bound) {
    const auto deadline = std::chrono::steady_clock::now() + bound;
    while (!done()) {
        if (std::chrono::steady_clock::now() >= deadline) return false;
        std::this_thread::sleep_for(1ms);  // poll interval of a bounded wait
    }
    return true;
}

}  // namespace

// drain_now() waits for a holder of the ports that drains briefly (the
// reactor, a queued operation, another drain_now), but never for an
// application thread that leads a wait: that one may keep the ports until its
// deadline. Here the brief holder hands the ports straight to a leader, while
// a reader is already waiting in drain_now() to take them after it: the
// reader must return then, not once the leader's whole wait is over.
TEST_CASE("drain_now returns when an application thread takes the lead, not after its whole wait",
          "[threads][inbound]") {
    Rig rig;
    std::atomic<bool> stop{false};
    rig.port->hold_take(1);
    std::thread holder([&] {
        rig.inbound->drain_now();  // holds the ports, stopped in take()
        // Then leads a wait that lasts until the test ends it.
        (void)rig.inbound->wait([&] { return stop.load(); }, std::chrono::steady_clock::now() + 1h);
    });
    REQUIRE(rig.port->wait_held());

    std::atomic<long> reader_tid{0};
    std::atomic<bool> reader_in{false}, reader_done{false};
    std::thread reader([&] {
        reader_tid = static_cast<long>(::syscall(SYS_gettid));
        reader_in = true;
        rig.inbound->drain_now();  // waits for the holder...
        reader_done = true;
    });
    // ...asleep, behind the holder of the ports.
    CHECK(wait_until([&] { return reader_in.load() && sleeping(reader_tid.load()); }, 20s));
    rig.port->release();

    // The holder now leads its wait (or the reader drains first and the holder
    // leads after it): either way the reader is back while the wait goes on.
    const bool returned = wait_until([&] { return reader_done.load(); }, 20s);
    stop = true;
    rig.inbound->wake_all();
    holder.join();
    reader.join();
    CHECK(returned);
}

// wait() defers once to a drain in progress, so that a reader does not take
// the first frame of a burst whose rest is being queued. When its deadline
// comes during that drain, it must still say what is there: a reply queued
// with the deadline is a reply, not a timeout (ClientImpl::call throws on false).
TEST_CASE("wait returns true at its deadline when what it waits for is there, even during a drain",
          "[threads][inbound]") {
    Rig rig;
    rig.port->push(data_frame(1));
    rig.port->push(data_frame(2));
    rig.port->hold_take(2);  // the drainer routes frame 1, then stops in the middle of its drain
    std::thread drainer;
    bool first = true;
    const auto ready = [&] {
        const bool queued = !rig.sink.empty();
        if (first) {
            // This thread has looked and found nothing; now another one starts
            // a drain that queues a frame for it and is still going on.
            first = false;
            drainer = std::thread([&] { rig.inbound->drain_now(); });
            REQUIRE(rig.port->wait_held());
        }
        return queued;
    };
    const bool got = rig.inbound->wait(ready, std::chrono::steady_clock::now());  // the deadline is now
    const bool there = !rig.sink.empty();
    const bool draining = rig.inbound->draining();
    rig.port->release();
    drainer.join();
    CHECK(there);
    CHECK(draining);  // the case in point: the drain was still going on
    CHECK(got);
}
