// A key-wide sink (gecko/src/node/sink.*) driven directly: what it does with
// frames of a topic the key's directory has just dropped. The directory drops
// a topic as soon as its last publisher leaves, while that publisher's last
// frames may still be on their way to a subscriber that is behind.

#include <catch2/catch.hpp>

#include <cstdint>
#include <memory>
#include <vector>

#include "gecko/directory.hpp"
#include "gecko/wire/frame.hpp"
#include "gecko/wire/hash.hpp"
#include "node/notices.hpp"
#include "node/sink.hpp"
#include "transport/frame.hpp"

using namespace gecko::detail;

namespace {

constexpr std::uint64_t publisher_id = 42;
constexpr gecko::wire::Channel odom = gecko::wire::channel_of("sink", "odom");
constexpr std::int64_t second = 1'000'000'000;

Frame data_frame(std::uint64_t sequence) {
    gecko::wire::FrameHeader h;
    h.channel = odom;
    h.sequence = sequence;
    h.sender_id = publisher_id;
    h.payload_size = 1;
    auto bytes = std::make_shared<std::vector<std::uint8_t>>(gecko::wire::frame_header_size + 1);
    gecko::wire::write_frame_header(bytes->data(), h);
    (*bytes)[gecko::wire::frame_header_size] = 0x80;  // an empty msgpack map
    return frame_of(std::move(bytes));
}

std::shared_ptr<const gecko::ChannelInfo> odom_info() {
    auto info = std::make_shared<gecko::ChannelInfo>();
    info->topic = "odom";
    info->channel = odom;
    info->type_name = "gecko.msgs.Odometry";
    info->publishers.push_back(gecko::PublisherInfo{});
    info->publishers.back().id = publisher_id;
    return info;
}

SinkConfig key_wide() {
    SinkConfig c;
    c.wildcard = true;
    c.resolving = true;
    c.depth = 100;
    c.what = "key-wide subscriber";
    return c;
}

// Offers frames first..last at `at_ns`.
void offer(Sink& sink, std::uint64_t first, std::uint64_t last, std::int64_t at_ns) {
    for (std::uint64_t s = first; s <= last; ++s) {
        Frame f = data_frame(s);
        sink.offer(f, at_ns, true);
    }
}

std::vector<std::string> drain(Sink& sink) {
    std::vector<std::string> topics;
    Delivery d;
    while (sink.pop(d)) topics.push_back(d.channel ? d.channel->topic + "#" + std::to_string(d.view.header.sequence) : "?");
    return topics;
}

}  // namespace

TEST_CASE("a key-wide sink takes a dropped topic's late frames as that topic's, and counts what they miss",
          "[sink]") {
    Notices notices{gecko::Logger("sink")};
    Sink sink(key_wide(), notices);
    sink.name_channel(odom_info(), true);
    offer(sink, 1, 3, 1 * second);
    // The topic's last publisher left; its frames 4..5 and 7 were still on the way (6 was lost).
    sink.unlist_publisher(publisher_id, 2 * second);
    sink.unname_channel(odom, 2 * second);
    offer(sink, 4, 5, 3 * second);
    offer(sink, 7, 7, 3 * second);
    sink.expire_held(3 * second);  // nothing is held: every frame was named
    CHECK(drain(sink) == std::vector<std::string>{"odom#1", "odom#2", "odom#3", "odom#4", "odom#5", "odom#7"});
    const auto stats = sink.stats();
    CHECK(stats.unlisted == 0);
    CHECK(stats.received == 6);
    CHECK(stats.drops == 1);
}

TEST_CASE("a key-wide sink forgets a dropped topic and a departed publisher once they have been silent long enough",
          "[sink]") {
    Notices notices{gecko::Logger("sink")};
    Sink sink(key_wide(), notices);
    sink.name_channel(odom_info(), true);
    offer(sink, 1, 2, 1 * second);
    sink.unlist_publisher(publisher_id, 2 * second);
    sink.unname_channel(odom, 2 * second);
    const auto departed = [&] { return sink.stats().publishers.at(publisher_id).departed; };
    sink.forget_departed(2 * second);  // not yet: dropped at 2 s, not before
    CHECK_FALSE(departed());
    offer(sink, 3, 3, 3 * second);
    sink.forget_departed(3 * second);  // it sent at 3 s: still not
    CHECK_FALSE(departed());
    sink.forget_departed(4 * second);
    CHECK(departed());  // forgotten: its counts are kept among the departed
    CHECK(sink.stats().publishers.at(publisher_id).received == 3);
    // The channel is unknown again: its frames wait for the directory to name it, then are unlisted.
    offer(sink, 4, 4, 5 * second);
    sink.expire_held(6 * second);
    CHECK(sink.stats().unlisted == 1);
    // Named again (a new publisher of the topic): taken as before.
    sink.name_channel(odom_info(), true);
    offer(sink, 5, 5, 7 * second);
    CHECK(drain(sink) == std::vector<std::string>{"odom#1", "odom#2", "odom#3", "odom#5"});
}
