// Bad input: every kind of broken frame is dropped and counted under its own
// reason, said once (then held back and counted), and good messages sent
// afterwards still arrive.

#include <catch2/catch.hpp>

#include <gecko/gecko.hpp>
#include <gecko/msgs/std.hpp>
#include <gecko/testing.hpp>
#include <gecko/wire/frame.hpp>

#include <chrono>
#include <algorithm>
#include <cstring>
#include <vector>

#include "test_support.hpp"

using namespace std::chrono_literals;
using gecko::msgs::Int64;

namespace {

const gecko::wire::Channel numbers = gecko::wire::channel_of("unit", "numbers");

struct Fixture {
    gecko::Node node = test::make_node("bad-input");
    gecko::Publisher<Int64> good;
    gecko::Subscriber<Int64> sub;

    explicit Fixture(std::size_t max_message_size = 1 << 20) {
        good = node.publisher<Int64>("numbers");
        gecko::SubscriberOptions so;
        so.depth = 64;
        so.max_message_size = max_message_size;
        sub = node.subscriber<Int64>("numbers", so);
        REQUIRE(good.wait_for_subscribers(1, 10s));
    }

    void inject(const std::vector<std::uint8_t>& bytes) { gecko::testing::send_raw(node, bytes.data(), bytes.size()); }

    // After the bad frame, a good one must still come through.
    void expect_good_message_still_arrives() {
        good.publish(Int64{4242});
        for (;;) {
            auto msg = sub.receive(10s);
            REQUIRE(msg);
            if (msg->data == 4242) break;  // hand-built frames that were accepted came first
        }
    }
};

// A valid frame on "numbers" of `type` around `payload`.
std::vector<std::uint8_t> frame(const std::string& type, const std::vector<std::uint8_t>& payload,
                                std::uint8_t flags = 0, std::uint8_t version = gecko::wire::frame_version,
                                std::uint64_t sequence = 1) {
    std::vector<std::uint8_t> out(gecko::wire::frame_header_size);
    gecko::wire::FrameHeader h;
    h.channel = numbers;
    h.flags = flags;
    h.sequence = sequence;
    h.sender_id = 99;
    h.type_hash = gecko::wire::type_hash(type);
    h.payload_size = static_cast<std::uint32_t>(payload.size());
    gecko::wire::write_frame_header(out.data(), h);
    out[10] = version;
    out.resize(gecko::wire::frame_header_size + payload.size());
    std::copy(payload.begin(), payload.end(), out.begin() + gecko::wire::frame_header_size);
    return out;
}

// Bytes on the "numbers" channel that are not a frame.
std::vector<std::uint8_t> on_channel(const std::vector<std::uint8_t>& rest) {
    std::vector<std::uint8_t> out(8 + rest.size());
    gecko::wire::store_channel(out.data(), numbers);
    std::copy(rest.begin(), rest.end(), out.begin() + 8);
    return out;
}

const std::vector<std::uint8_t> int_payload = {0x81, 0xa4, 'd', 'a', 't', 'a', 0x07};  // {"data": 7}

}  // namespace

TEST_CASE("a well-formed hand-built frame is accepted", "[bad_input]") {
    Fixture f;
    f.inject(frame("gecko.msgs.Int64", int_payload));
    auto msg = f.sub.receive(10s);
    REQUIRE(msg);
    CHECK(msg->data == 7);
}

TEST_CASE("a truncated frame is dropped and counted as malformed", "[bad_input]") {
    Fixture f;
    auto bytes = frame("gecko.msgs.Int64", int_payload);
    bytes.resize(20);
    f.inject(bytes);
    auto cut_payload = frame("gecko.msgs.Int64", int_payload);
    cut_payload.pop_back();
    f.inject(cut_payload);
    f.expect_good_message_still_arrives();
    CHECK(f.sub.stats().malformed == 2);
}

TEST_CASE("garbage that is not a Gecko frame is dropped and counted", "[bad_input]") {
    Fixture f;
    f.inject(on_channel({'h', 'e', 'l', 'l', 'o', ' ', 'w', 'o', 'r', 'l', 'd'}));
    f.inject(on_channel({0x00}));
    f.inject({0x00});  // too short to name a channel: no subscriber's business
    f.expect_good_message_still_arrives();
    CHECK(f.sub.stats().malformed == 2);
}

TEST_CASE("a frame of an unsupported version is dropped and counted", "[bad_input]") {
    Fixture f;
    f.inject(frame("gecko.msgs.Int64", int_payload, 0, 1));
    f.inject(frame("gecko.msgs.Int64", int_payload, 0, 3));
    f.expect_good_message_still_arrives();
    CHECK(f.sub.stats().unsupported_version == 2);
}

TEST_CASE("a frame with unknown flags is dropped", "[bad_input]") {
    Fixture f;
    f.inject(frame("gecko.msgs.Int64", int_payload, 0x80));
    f.expect_good_message_still_arrives();
    CHECK(f.sub.stats().malformed == 1);
}

TEST_CASE("garbage msgpack in a valid frame is a decode error, not a crash", "[bad_input]") {
    Fixture f;
    f.inject(frame("gecko.msgs.Int64", {0xc1, 0xff, 0x00}, 0, 2, 1));           // 0xc1 is never used in msgpack
    f.inject(frame("gecko.msgs.Int64", {0x81, 0xa4, 'd', 'a', 't'}, 0, 2, 2));  // truncated msgpack
    f.inject(frame("gecko.msgs.Int64", {0x81, 0xa4, 'd', 'a', 't', 'a', 0xa1, 'x'}, 0, 2, 3));  // data is a string
    f.inject(frame("gecko.msgs.Int64", {0xdd, 0xff, 0xff, 0xff, 0xff}, 0, 2, 4));  // array claiming 4 G elements
    f.expect_good_message_still_arrives();
    CHECK(f.sub.stats().decode_errors == 4);
}

TEST_CASE("an oversized message is dropped and counted", "[bad_input]") {
    Fixture f(1024);
    auto big_pub = f.node.publisher<gecko::msgs::Bytes>("blob");
    gecko::SubscriberOptions so;
    so.max_message_size = 1024;
    auto big_sub = f.node.subscriber<gecko::msgs::Bytes>("blob", so);
    REQUIRE(big_pub.wait_for_subscribers(1, 10s));
    gecko::msgs::Bytes big;
    big.data.assign(4096, 1);
    big_pub.publish(big);
    gecko::msgs::Bytes small;
    small.data.assign(10, 2);
    big_pub.publish(small);
    auto got = big_sub.receive(10s);
    REQUIRE(got);
    CHECK(*got == small);
    CHECK(big_sub.stats().oversized == 1);
}

TEST_CASE("a compressed frame whose declared size exceeds the maximum is refused before inflating", "[bad_input]") {
    Fixture f(1024);
    std::vector<std::uint8_t> payload(100, 0);
    auto bytes = frame("gecko.msgs.Int64", payload, gecko::wire::frame_flags::compressed);
    // Claim 1 GiB uncompressed: a zip bomb must not allocate it.
    const std::uint32_t huge = 1u << 30;
    std::memcpy(bytes.data() + 12, &huge, 4);
    f.inject(bytes);
    f.expect_good_message_still_arrives();
    CHECK(f.sub.stats().oversized == 1);
}

TEST_CASE("a corrupt compressed payload is dropped and counted", "[bad_input]") {
    Fixture f;
    std::vector<std::uint8_t> not_zlib = {1, 2, 3, 4, 5, 6, 7, 8};
    auto bytes = frame("gecko.msgs.Int64", not_zlib, gecko::wire::frame_flags::compressed);
    const std::uint32_t size = 7;
    std::memcpy(bytes.data() + 12, &size, 4);
    f.inject(bytes);
    f.expect_good_message_still_arrives();
    CHECK(f.sub.stats().decode_errors == 1);
}

TEST_CASE("a subscriber takes only data frames: requests, replies and errors on its topic are malformed",
          "[bad_input]") {
    test::LogCapture log;
    Fixture f;
    namespace flags = gecko::wire::frame_flags;
    f.inject(frame("gecko.msgs.Int64", int_payload, flags::request, 2, 1));
    f.inject(frame("gecko.msgs.Int64", int_payload, flags::reply, 2, 2));
    f.inject(frame("gecko.msgs.Int64", int_payload, flags::reply | flags::error, 2, 3));
    f.inject(frame("gecko.msgs.Int64", int_payload, flags::error, 2, 4));
    f.inject(frame("gecko.msgs.Int64", int_payload, flags::latched, 2, 5));  // data: taken
    auto latched = f.sub.receive(10s);
    REQUIRE(latched);
    CHECK(latched->data == 7);
    f.expect_good_message_still_arrives();
    const auto stats = f.sub.stats();
    CHECK(stats.malformed == 4);
    CHECK(stats.delivered == 2);  // the latched value and the good one, nothing else
    CHECK(log.wait_for("dropped a frame on subscriber of 'numbers' that is not a data frame (flags 8)"));
}

TEST_CASE("a decode error says 'could not decode a message:' and the decoder's words, whoever threw it",
          "[bad_input]") {
    test::LogCapture log;
    auto node = test::make_node("raw-decode");
    gecko::SubscriberOptions so;
    so.type_name = "gecko.msgs.Int64";
    auto raw = node.raw_subscriber("numbers", so, [](const gecko::RawView&) {
        throw gecko::Error(gecko::Errc::decode, "not the bytes I wanted");
    });
    auto pub = node.publisher<Int64>("numbers");
    REQUIRE(pub.wait_for_subscribers(1, 10s));
    pub.publish(Int64{1});
    const auto deadline = std::chrono::steady_clock::now() + 20s;
    while (raw.stats().decode_errors == 0 && std::chrono::steady_clock::now() < deadline) node.spin_once(100ms);
    CHECK(raw.stats().decode_errors == 1);
    CHECK(log.wait_for("subscriber of 'numbers' could not decode a message: not the bytes I wanted (further ones"));
}

TEST_CASE("a frame of an unknown type is counted as a type mismatch", "[bad_input]") {
    Fixture f;
    f.inject(frame("vendor.Unknown", int_payload));
    f.expect_good_message_still_arrives();
    CHECK(f.sub.stats().type_mismatches == 1);
}

TEST_CASE("sequence gaps are counted as drops per publisher", "[bad_input]") {
    Fixture f;
    f.inject(frame("gecko.msgs.Int64", int_payload, 0, 2, 1));
    f.inject(frame("gecko.msgs.Int64", int_payload, 0, 2, 5));  // sequence 5 after 1: 3 lost
    REQUIRE(f.sub.receive(10s));
    REQUIRE(f.sub.receive(10s));
    const auto stats = f.sub.stats();
    CHECK(stats.drops == 3);
    REQUIRE(stats.publishers.count(99) == 1);
    CHECK(stats.publishers.at(99).drops == 3);
    CHECK(stats.publishers.at(99).received == 2);
}

TEST_CASE("a sequence that jumps backwards or beyond any plausible loss is a new epoch, never drops", "[bad_input]") {
    Fixture f;
    f.inject(frame("gecko.msgs.Int64", int_payload, 0, 2, 1));
    f.inject(frame("gecko.msgs.Int64", int_payload, 0, 2, ~std::uint64_t{0}));  // 2^64 - 1: a forgery
    f.inject(frame("gecko.msgs.Int64", int_payload, 0, 2, 5));                  // backwards: a restart
    f.inject(frame("gecko.msgs.Int64", int_payload, 0, 2, 6));
    for (int i = 0; i < 4; ++i) REQUIRE(f.sub.receive(10s));
    const auto stats = f.sub.stats();
    CHECK(stats.drops == 0);
    CHECK(stats.epochs == 2);
    CHECK(stats.received == 4);
}

TEST_CASE("per-publisher state is capped: a flood of sender ids is forgotten, not kept", "[bad_input]") {
    gecko::Node node = test::make_node("many-senders");
    gecko::SubscriberOptions so;
    so.max_publishers = 16;
    so.depth = 1;
    auto sub = node.subscriber<Int64>("numbers", so);
    auto pub = node.publisher<Int64>("numbers");
    REQUIRE(pub.wait_for_subscribers(1, 10s));
    for (std::uint64_t sender = 1; sender <= 1000; ++sender) {
        auto bytes = frame("gecko.msgs.Int64", int_payload);
        std::memcpy(bytes.data() + 24, &sender, 8);
        gecko::testing::send_raw(node, bytes.data(), bytes.size());
    }
    pub.publish(Int64{1});
    const auto deadline = std::chrono::steady_clock::now() + 20s;
    while (sub.stats().received < 1001 && std::chrono::steady_clock::now() < deadline) sub.receive(50ms);
    const auto stats = sub.stats();
    CHECK(stats.received == 1001);
    CHECK(stats.publishers.size() <= 16);
    // The real publisher's "start" (as the subscriber joined) made its state first: forgotten, then made again.
    CHECK(stats.publishers_forgotten == 1002 - 16);
}

TEST_CASE("each kind of bad input is logged once, with its reason and what to act on", "[bad_input]") {
    test::LogCapture log;
    Fixture f(1024);
    for (int i = 0; i < 3; ++i) {
        auto cut = frame("gecko.msgs.Int64", int_payload);
        cut.resize(20);
        f.inject(cut);                                                                 // truncated
        f.inject(on_channel({'h', 'e', 'l', 'l', 'o'}));                               // not a Gecko frame
        f.inject(frame("gecko.msgs.Int64", int_payload, 0, 9));                        // version 9
        f.inject(frame("gecko.msgs.Int64", {0xc1}, 0, 2, 10 + static_cast<std::uint64_t>(i)));  // garbage msgpack
        f.inject(frame("vendor.Unknown", int_payload));                                // a type nobody here reads
        f.inject(frame("gecko.msgs.Int64", std::vector<std::uint8_t>(2000, 0)));       // above 1024 bytes
    }
    f.expect_good_message_still_arrives();
    CHECK(log.wait_for("could not decode a message: gecko.msgs.Int64: "));
    CHECK(log.wait_for("larger than the configured maximum"));
    INFO([&] {
        std::string all;
        for (const auto& line : log.lines()) all += line + "\n";
        return all;
    }());
    CHECK(log.count("truncated frame") == 1);
    CHECK(log.count("not a Gecko frame") == 1);
    CHECK(log.count("unsupported frame version") == 1);
    CHECK(log.count("version 9, this build reads version 2") == 1);
    CHECK(log.count("could not decode a message: gecko.msgs.Int64: ") == 1);
    CHECK(log.count("expects gecko.msgs.Int64 but publisher") == 1);
    CHECK(log.count("larger than the configured maximum") == 1);
    CHECK(log.count("SubscriberOptions::max_message_size = 1024") == 1);
    const auto stats = f.sub.stats();
    CHECK(stats.malformed == 6);
    CHECK(stats.unsupported_version == 3);
    CHECK(stats.decode_errors == 3);
    CHECK(stats.type_mismatches == 3);
    CHECK(stats.oversized == 3);
}
