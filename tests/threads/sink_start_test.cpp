// A sink (gecko/src/node/sink.*) told by a publisher where its stream began
// (control "start", PROTOCOL.md §6): a link that drops its oldest frames can
// lose a publisher's first messages to a subscriber that is behind, and
// without "start" the subscriber takes the first it receives for the start of
// its stream, as if it had joined mid-stream: those losses went uncounted.

#include <catch2/catch.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "gecko/buffer.hpp"
#include "gecko/wire/control.hpp"
#include "gecko/wire/frame.hpp"
#include "gecko/wire/hash.hpp"
#include "node/notices.hpp"
#include "node/sink.hpp"
#include "transport/frame.hpp"

using namespace gecko::detail;

namespace {

constexpr std::uint64_t publisher_id = 42;
constexpr std::uint64_t subscriber_id = 7;
constexpr gecko::wire::Channel topic = gecko::wire::channel_of("start", "scan");

Frame frame(std::uint64_t sequence, std::uint8_t flags = 0) {
    gecko::wire::FrameHeader h;
    h.channel = topic;
    h.sequence = sequence;
    h.sender_id = publisher_id;
    h.flags = flags;
    h.payload_size = 1;
    auto bytes = std::make_shared<std::vector<std::uint8_t>>(gecko::wire::frame_header_size + 1);
    gecko::wire::write_frame_header(bytes->data(), h);
    (*bytes)[gecko::wire::frame_header_size] = 0x80;  // an empty msgpack map
    return frame_of(std::move(bytes));
}

// A control frame of the publisher: "start" goes to one subscriber's directed channel, the others to the topic.
Frame control(const char* type, std::uint64_t last, gecko::wire::Channel channel) {
    gecko::Buffer b;
    b.resize(gecko::wire::frame_header_size);
    gecko::wire::encode_control(gecko::wire::Control{type, last}, b);
    gecko::wire::FrameHeader h;
    h.channel = channel;
    h.flags = gecko::wire::frame_flags::control;
    h.sequence = last;
    h.sender_id = publisher_id;
    h.payload_size = static_cast<std::uint32_t>(b.size() - gecko::wire::frame_header_size);
    gecko::wire::write_frame_header(b.data(), h);
    return frame_of(std::make_shared<std::vector<std::uint8_t>>(b.data(), b.data() + b.size()));
}

Frame start(std::uint64_t after, std::uint64_t to = subscriber_id) {
    return control("start", after, gecko::wire::directed_channel("start", to));
}

SinkConfig subscriber() {
    SinkConfig c;
    c.channel = topic;
    c.directed = gecko::wire::directed_channel("start", subscriber_id);
    c.depth = 100;
    c.what = "subscriber of 'scan'";
    return c;
}

void offer(Sink& sink, Frame f) { sink.offer(f, 0, true); }

void offer(Sink& sink, std::uint64_t first, std::uint64_t last) {
    for (std::uint64_t s = first; s <= last; ++s) offer(sink, frame(s));
}

}  // namespace

TEST_CASE("a sink that received a publisher's messages from 6 on counts 1..5 lost once told its stream began at 0",
          "[sink][start]") {
    Notices notices{gecko::Logger("sink")};
    Sink sink(subscriber(), notices);
    offer(sink, 6, 10);  // the link dropped 1..5, and the "start" sent before them
    CHECK(sink.stats().drops == 0);  // taken for a subscriber that joined mid-stream, so far
    offer(sink, start(0));
    CHECK(sink.stats().drops == 5);
    offer(sink, start(0));  // said again (at the end, or twice through a key-wide route): counted once
    offer(sink, control("end", 10, topic));
    const auto s = sink.stats();
    CHECK(s.received == 5);
    CHECK(s.drops == 5);
    CHECK(s.epochs == 0);
}

TEST_CASE("a sink told its start before any message counts gaps from there, even if nothing after it arrives",
          "[sink][start]") {
    Notices notices{gecko::Logger("sink")};
    Sink sink(subscriber(), notices);
    offer(sink, start(3));  // it joined after message 3
    offer(sink, 6, 7);
    CHECK(sink.stats().drops == 2);  // 4, 5
    offer(sink, control("end", 9, topic));
    CHECK(sink.stats().drops == 4);  // and 8, 9

    Sink other(subscriber(), notices);
    offer(other, start(3));
    offer(other, control("end", 9, topic));  // every one of 4..9 was lost
    CHECK(other.stats().drops == 6);
    CHECK(other.stats().received == 0);
}

TEST_CASE("a start that says the subscriber joined before its first message changes nothing", "[sink][start]") {
    Notices notices{gecko::Logger("sink")};
    Sink sink(subscriber(), notices);
    offer(sink, 6, 8);
    offer(sink, start(5));  // it joined just before 6: nothing was lost
    offer(sink, start(7));  // a later one is ignored: the first said it
    const auto s = sink.stats();
    CHECK(s.received == 3);
    CHECK(s.drops == 0);
    CHECK(s.epochs == 0);
}

TEST_CASE("the message at a subscriber's start, still on its way when the start is told, is no new epoch",
          "[sink][start]") {
    Notices notices{gecko::Logger("sink")};
    Sink sink(subscriber(), notices);
    offer(sink, start(5));
    offer(sink, frame(5));  // in flight as the publisher saw the subscriber join
    offer(sink, 6, 7);
    auto s = sink.stats();
    CHECK(s.received == 3);
    CHECK(s.drops == 0);
    CHECK(s.epochs == 0);
    // A latched value replayed to it and held back (a key-wide sink waits for its topic's name) is taken too.
    Sink late(subscriber(), notices);
    offer(late, start(4));
    offer(late, frame(3, gecko::wire::frame_flags::latched));
    CHECK(late.stats().received == 1);
}

TEST_CASE("a start directed at another subscriber, or from a publisher that started over, counts nothing",
          "[sink][start]") {
    Notices notices{gecko::Logger("sink")};
    Sink sink(subscriber(), notices);
    offer(sink, 6, 8);
    offer(sink, start(0, subscriber_id + 1));  // a key-wide sink of this node sees every directed frame of its key
    CHECK(sink.stats().drops == 0);
    offer(sink, 1, 2);  // the publisher started over: an epoch
    offer(sink, start(0));
    const auto s = sink.stats();
    CHECK(s.epochs == 1);
    CHECK(s.drops == 0);
}

TEST_CASE("a sink reports the start a publisher told and keeps its counts once it closed", "[sink][start]") {
    Notices notices{gecko::Logger("sink")};
    Sink sink(subscriber(), notices);
    offer(sink, 6, 10);
    CHECK_FALSE(sink.stats().publishers.at(publisher_id).start_known);  // not told yet: a reader must wait for it
    offer(sink, start(2));
    offer(sink, control("end", 12, topic));
    // Gone, yet still readable: what it sent before our stream (2), received (5) and lost (3..5, 11..12).
    const auto p = sink.stats().publishers.at(publisher_id);
    CHECK(p.departed);
    CHECK(p.start_known);
    CHECK(p.start == 2);
    CHECK(p.received == 5);
    CHECK(p.drops == 5);
    CHECK(p.last_sequence == 12);
}
