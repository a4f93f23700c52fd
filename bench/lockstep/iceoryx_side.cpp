// gecko_lockstep_bench's iceoryx rows: see iceoryx_side.hpp.
#include "iceoryx_side.hpp"

#include <array>
#include <string>
#include <thread>

#include "iceoryx.hpp"
#include "sides.hpp"

namespace lockstep_iceoryx {
namespace {

using namespace bench;

constexpr std::uint32_t kRunCommand = iceoryx::kFirstCommand;  // a = id, b..e: the Layout
constexpr std::uint32_t kArm = iceoryx::kFirstCommand + 1;      // parent → peer: spin for the next round trip
constexpr std::uint32_t kStart = iceoryx::kFirstCommand + 2;    // parent → peer and back: probing is over
constexpr std::uint64_t kStopTag = ~std::uint64_t{0};
constexpr std::uint64_t kArmedTag = kStopTag - 1;
constexpr std::uint64_t kProbeBit = std::uint64_t{1} << 62;
constexpr milliseconds kSetupTimeout{10000};
constexpr milliseconds kStepTimeout{5000};     // a round trip slower than this is a stall
constexpr milliseconds kIdleTimeout{15000};    // the responder's wait for its next round trip

constexpr int kWakes = 2;
constexpr Wake kWakeOf[kWakes] = {Wake::waitset, Wake::busy_poll};
const char* name_of(Wake w) { return w == Wake::waitset ? "waitset" : "busy"; }

using Sides = std::array<std::unique_ptr<Side>, kWakes>;

/// The requests go to "lockstep-<wake>-request-<id>", the replies come back on "...-reply-<id>".
Sides make_sides(std::uint64_t id, bool responder) {
    Sides sides;
    for (int w = 0; w < kWakes; ++w) {
        const std::string base = std::string("lockstep-") + name_of(kWakeOf[w]);
        SideOptions o;
        const std::string request = iceoryx::link_name(base + "-request", id);
        const std::string reply = iceoryx::link_name(base + "-reply", id);
        o.pub_endpoint = responder ? reply : request;
        o.sub_endpoint = responder ? request : reply;
        o.busy_poll = kWakeOf[w] == Wake::busy_poll;
        o.queue_capacity = 16;
        sides[w] = iceoryx::make_side(o);
    }
    return sides;
}

PipeMsg encode(const Layout& l, std::uint64_t id) {
    PipeMsg m{kRunCommand};
    m.a = id;
    m.b = static_cast<std::uint64_t>(l.stacks);
    m.c = static_cast<std::uint64_t>(l.waitset);
    m.d = static_cast<std::uint64_t>(l.busy_poll);
    m.e = static_cast<std::uint64_t>(l.request) << 32 | static_cast<std::uint64_t>(l.reply);
    return m;
}

Layout decode(const PipeMsg& m) {
    Layout l;
    l.stacks = static_cast<int>(m.b);
    l.waitset = static_cast<int>(m.c);
    l.busy_poll = static_cast<int>(m.d);
    l.request = static_cast<std::size_t>(m.e >> 32);
    l.reply = static_cast<std::size_t>(m.e & 0xFFFFFFFFu);
    return l;
}

/// The iceoryx stack that round trip `j` lands on, or -1 (another path's).
int wake_of(const Layout& l, std::uint64_t j) {
    const int k = rotating_stack(j, l.stacks);
    return k == l.waitset ? 0 : k == l.busy_poll ? 1 : -1;
}

}  // namespace

void serve(const PipeMsg& command, Child& self) {
    if (command.kind != kRunCommand) throw Stall("iceoryx peer: unknown command " + std::to_string(command.kind));
    const Layout layout = decode(command);
    {
        Sides sides = make_sides(command.a, true);
        self.send(PipeMsg{kReady});
        // Phase 1: answer probes on either stack until the parent says go.
        const auto deadline = Clock::now() + 2 * kSetupTimeout;
        for (bool started = false; !started;) {
            for (auto& side : sides) {
                if (side->receive(milliseconds(0))) side->send(side->tag(), 8);
            }
            PipeMsg m;
            if (self.receive(m, milliseconds(0)) && m.kind == kStart) started = true;
            if (Clock::now() > deadline) throw Stall("iceoryx responder: the requester never started");
            if (!started) std::this_thread::sleep_for(std::chrono::microseconds(200));
        }
        self.send(PipeMsg{kStart});
        // Phase 2: the rotation, waiting for each round trip of our own stacks.
        for (std::uint64_t j = 0;; ++j) {
            const int w = wake_of(layout, j);
            if (w < 0) continue;
            Side& side = *sides[w];
            if (kWakeOf[w] == Wake::busy_poll) {
                PipeMsg m;
                if (!self.receive(m, kIdleTimeout) || m.kind != kArm) {
                    throw Stall("iceoryx responder: not armed for a busy-poll round trip within 15 s");
                }
                side.send(kArmedTag, 8);  // spinning from now on
            }
            if (!side.receive(kIdleTimeout)) throw Stall("iceoryx responder: no request for 15 s (requester stalled)");
            if (side.tag() == kStopTag) break;
            side.send(side.tag(), layout.reply);  // the reply: a fresh chunk of the Sensor's size
        }
    }
    self.send(PipeMsg{kResult});
}

struct Run::Impl {
    Layout layout;
    Sides sides;
    std::uint64_t id = 0;
};

Run::Run(const Layout& layout, std::uint64_t id) : impl_(std::make_unique<Impl>()) {
    impl_->layout = layout;
    impl_->id = id;
    Child& peer = iceoryx::peer();
    peer.send(encode(layout, id));
    PipeMsg m;
    if (!peer.receive(m, kSetupTimeout) || m.kind != kReady) throw Stall("iceoryx responder did not set up its run");
    impl_->sides = make_sides(id, false);
    for (int w = 0; w < kWakes; ++w) {
        Side& side = *impl_->sides[w];
        const std::string who = std::string("iceoryx ") + name_of(kWakeOf[w]);
        if (!side.wait_subscribers(1, kSetupTimeout)) throw Stall(who + ": the responder never subscribed");
        // The responder's reply publisher may not reach us yet: probe until a round trip works.
        const auto deadline = Clock::now() + kSetupTimeout;
        for (std::uint64_t p = 0;; ++p) {
            if (Clock::now() > deadline) throw Stall(who + ": no answer to probes within 10 s");
            side.send(kProbeBit | p, 8);
            if (side.receive(milliseconds(20)) && (side.tag() & kProbeBit)) break;
        }
    }
    for (int quiet = 0, i = 0; quiet < kWakes && i < 500; ++i) {  // late probe answers
        quiet = 0;
        for (auto& side : impl_->sides) quiet += !side->receive(milliseconds(20));
    }
    peer.send(PipeMsg{kStart});
    if (!peer.receive(m, kSetupTimeout) || m.kind != kStart) throw Stall("iceoryx responder did not start the lockstep");
}

Run::~Run() = default;

double Run::step(Wake wake, std::uint64_t j) {
    Side& side = *impl_->sides[wake == Wake::waitset ? 0 : 1];
    auto await = [&](std::uint64_t tag, const char* what) {
        do {
            if (!side.receive(kStepTimeout)) {
                throw Stall(std::string("iceoryx ") + name_of(wake) + ": no " + what + " within 5 s (round trip " +
                            std::to_string(j) + ")");
            }
        } while (side.tag() != tag);
    };
    if (wake == Wake::busy_poll) {
        iceoryx::peer().send(PipeMsg{kArm});
        await(kArmedTag, "sign that the responder spins");
    }
    const std::uint64_t tag = j + 1;
    const std::int64_t t0 = mono_ns();
    side.send(tag, impl_->layout.request);
    await(tag, "reply");
    const std::int64_t t1 = mono_ns();
    if (side.size() != impl_->layout.reply) throw Stall("iceoryx: a reply of the wrong size");
    if (side.send_failures() != 0) throw Stall("iceoryx: no free chunk for a request (mempool exhausted)");
    return static_cast<double>(t1 - t0) / 1000.0;
}

void Run::finish(std::uint64_t j) {
    int w = -1;
    for (std::uint64_t n = j; w < 0; ++n) w = wake_of(impl_->layout, n);
    Side& side = *impl_->sides[w];
    if (kWakeOf[w] == Wake::busy_poll) {
        iceoryx::peer().send(PipeMsg{kArm});
        const auto deadline = Clock::now() + kStepTimeout;
        while (!(side.receive(milliseconds(100)) && side.tag() == kArmedTag)) {
            if (Clock::now() > deadline) throw Stall("iceoryx busy: the responder was not armed for the stop");
        }
    }
    side.send(kStopTag, 8);
    PipeMsg m;
    if (!iceoryx::peer().receive(m, kSetupTimeout) || m.kind != kResult) {
        throw Stall("iceoryx responder did not end its run");
    }
}

}  // namespace lockstep_iceoryx
