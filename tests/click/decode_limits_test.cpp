// SPDX-License-Identifier: Apache-2.0
// What decoding a Click frame may build (DecodeLimits): frames are checked on
// the wire before protobuf builds anything, so fields Click does not have,
// more elements than the budget and more objects than the handshake are
// refused with a reason; and libprotobuf's own log lines go through Gecko's
// rate-limited log. The gateway's memory under the same attacks is measured
// in hostile_test.cpp.
#include "gecko/click_gateway/protobuf_log.hpp"
#include "gecko/click_gateway/translate.hpp"

#include "click.pb.h"

#include <gecko/log.hpp>

#include <catch2/catch.hpp>

#include <string>
#include <vector>

namespace mc = gecko::msgs::click;
namespace pb = click::protobuf;
using gecko::click::DecodeError;
using gecko::click::DecodeLimits;

namespace {

std::string refusal(const std::string& bytes, const DecodeLimits& limits = {}) {
    const gecko::click::Decoded d = gecko::click::decode(bytes, mc::Direction::request, limits);
    INFO("decoded as " << gecko::click::kind_name(d));
    REQUIRE(std::holds_alternative<DecodeError>(d));
    return std::get<DecodeError>(d).reason;
}

pb::ControlMessage control_of(int robots, int values_each) {
    pb::ControlMessage m;
    m.set_messagetype(pb::ControlMessageType);
    for (int r = 0; r < robots; ++r) {
        auto& object = (*m.mutable_objects())["robot" + std::to_string(r)];
        for (int v = 0; v < values_each; ++v) object.add_values(0.5);
    }
    return m;
}

}  // namespace

TEST_CASE("fields Click does not have are refused on the wire, named by their path", "[click][limits]") {
    // A ControlMessage, then a million unknown varint fields (15 = 0): protobuf would keep each.
    std::string bytes = "\x08\x02";
    for (int i = 0; i < 1000000; ++i) bytes += std::string("\x78\x00", 2);
    CHECK_THAT(refusal(bytes), Catch::Contains("ControlMessage: field 15 (varint) is not in the Click schema"));

    // Inside a map entry the path names the entry's key.
    pb::ControlMessage m = control_of(1, 1);
    auto& object = (*m.mutable_objects())["robot0"];
    object.GetReflection()->MutableUnknownFields(&object)->AddFixed32(9, 7);
    CHECK_THAT(refusal(m.SerializeAsString()),
               Catch::Contains("ControlMessage.objects['robot0'].value: field 9 (fixed32) is not in the Click schema"));

    // A known field with another wire type, and a messageType that is not a varint.
    CHECK_THAT(refusal(std::string("\x08\x02\x12\x01", 4) + "x"), Catch::Contains("objects") || Catch::Contains("malformed"));
    CHECK_THAT(refusal(std::string("\x08\x02\x15\x00\x00\x00\x00", 7)),
               Catch::Contains("field 2 (objects) has the wrong wire type (fixed32)"));
}

TEST_CASE("a frame of more elements than the budget is refused before it is built", "[click][limits]") {
    DecodeLimits limits;
    limits.max_elements = 1000;
    // 10 robots of 10 values: 1 + 10 * (entry, key, value, values) + 100 numbers, well under 1000.
    CHECK(std::holds_alternative<mc::Control>(
        gecko::click::decode(control_of(10, 10).SerializeAsString(), mc::Direction::request, limits)));
    // 100 robots of 10 values: over 1000.
    CHECK_THAT(refusal(control_of(100, 10).SerializeAsString(), limits),
               Catch::Contains("more than 1000 fields and numbers"));
    // Packed numbers count one each: 2000 values in one object.
    CHECK_THAT(refusal(control_of(1, 2000).SerializeAsString(), limits), Catch::Contains("values"));
    // The default budget lets a large but honest scene through.
    CHECK(std::holds_alternative<mc::Control>(gecko::click::decode(control_of(100, 10).SerializeAsString())));
}

TEST_CASE("a Control naming more objects than the handshake is refused, with both counts", "[click][limits]") {
    DecodeLimits limits;
    limits.max_control_objects = 3;
    CHECK(std::holds_alternative<mc::Control>(
        gecko::click::decode(control_of(3, 2).SerializeAsString(), mc::Direction::request, limits)));
    CHECK_THAT(refusal(control_of(4, 2).SerializeAsString(), limits),
               Catch::Contains("4 objects, more than the 3 of the handshake"));
    // Counted on the wire, before the element budget: the reason says how many.
    limits.max_elements = 100;
    CHECK_THAT(refusal(control_of(5000, 0).SerializeAsString(), limits), Catch::Contains("5000 objects"));
}

TEST_CASE("a string longer than max_string_bytes is refused, and the reason does not quote it", "[click][limits]") {
    DecodeLimits limits;
    limits.max_string_bytes = 64;
    pb::ControlMessage m;
    m.set_messagetype(pb::ControlMessageType);
    (*m.mutable_objects())[std::string(65, 'a')].add_values(1.0);
    const std::string reason = refusal(m.SerializeAsString(), limits);
    CHECK_THAT(reason, Catch::Contains("a string of 65 bytes, more than the 64"));
    CHECK(reason.size() < 200);
    (*m.mutable_objects()).clear();
    (*m.mutable_objects())[std::string(64, 'a')].add_values(1.0);
    CHECK(std::holds_alternative<mc::Control>(gecko::click::decode(m.SerializeAsString(), mc::Direction::request, limits)));
}

TEST_CASE("a string that is not UTF-8 is refused on the wire, and libprotobuf writes no line for it",
          "[click][limits][log]") {
    std::vector<std::string> lines;
    gecko::set_log_sink([&](gecko::LogLevel, std::string_view who, std::string_view message) {
        lines.push_back(std::string(who) + ": " + std::string(message));
    });
    pb::ControlMessage m = control_of(1, 1);
    std::string bytes = m.SerializeAsString();
    bytes[bytes.find("robot0")] = '\xff';
    for (int i = 0; i < 100; ++i) CHECK_THAT(refusal(bytes), Catch::Contains("not valid UTF-8"));
    gecko::set_log_sink({});
    CHECK(lines.empty());
}

TEST_CASE("libprotobuf's log lines go through Gecko's log, rate-limited per call site", "[click][limits][log]") {
    std::vector<std::string> lines;
    gecko::set_log_sink([&](gecko::LogLevel, std::string_view who, std::string_view message) {
        lines.push_back(std::string(who) + ": " + std::string(message));
    });
    gecko::click::route_protobuf_log("click-test");
    // Parsed by protobuf itself (not by decode()), a string that is not UTF-8 makes
    // libprotobuf log an ERROR line each time.
    pb::ControlMessage m = control_of(1, 1);
    std::string bytes = m.SerializeAsString();
    bytes[bytes.find("robot0")] = '\xff';
    for (int i = 0; i < 1000; ++i) {
        pb::ControlMessage parsed;
        CHECK_FALSE(parsed.ParseFromString(bytes));
    }
    gecko::set_log_sink({});
    INFO("lines: " << lines.size());
    REQUIRE(!lines.empty());
    CHECK(lines.size() <= 2);  // the first, and perhaps one more if 10 s passed
    CHECK_THAT(lines.front(), Catch::StartsWith("click-test: libprotobuf: ") && Catch::Contains("UTF-8"));
}
