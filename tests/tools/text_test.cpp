// SPDX-License-Identifier: Apache-2.0
// msgpack -> indented text, as `gecko echo` and `gecko call` print messages.
#include <catch2/catch.hpp>

#include <gecko/wire/json.hpp>
#include <gecko/wire/value.hpp>

#include <msgpack.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "support/msgpack_writer.hpp"
#include "text.hpp"

using gecko::test::MsgpackWriter;
using gecko::wire::json_to_msgpack;

namespace {

std::string text_of(const std::vector<std::uint8_t>& bytes, gecko::tools::TextOptions options = {}) {
    return gecko::tools::to_text(gecko::wire::Value::parse(bytes.data(), bytes.size()), options);
}

}  // namespace

TEST_CASE("text mode: fields as key: value, nested maps indented, arrays inline or as items", "[text]") {
    const auto bytes = json_to_msgpack(
        R"({"stamp_ns": 12, "frame_id": "imu_link", "accel": {"x": 0.5, "y": 0.0}, "ranges": [1.5, 2.0],)"
        R"( "joints": [{"name": "hip", "position": -0.25}, {"name": "knee"}], "note": "a: b", "empty": {}, "yes": "true"})");
    CHECK(text_of(bytes) ==
          "stamp_ns: 12\n"
          "frame_id: imu_link\n"
          "accel:\n"
          "  x: 0.5\n"
          "  y: 0.0\n"
          "ranges: [1.5, 2.0]\n"
          "joints:\n"
          "  - name: hip\n"
          "    position: -0.25\n"
          "  - name: knee\n"
          "note: \"a: b\"\n"
          "empty: {}\n"
          "yes: \"true\"\n");
    gecko::tools::TextOptions cut;
    cut.max_array = 3;
    CHECK(text_of(json_to_msgpack("[1, 2, 3, 4, 5]"), cut) == "[1, 2, 3, ... +2 more]\n");
    CHECK(text_of(json_to_msgpack("[[1, 2], [3]]")) == "- [1, 2]\n- [3]\n");
    CHECK(text_of(json_to_msgpack(R"("12")")) == "\"12\"\n");  // a string that reads as a number is quoted
}

TEST_CASE("text mode: floats as their shortest text, nan and infinities by name", "[text]") {
    MsgpackWriter w;
    w.array(4);
    w.float32(0.1f);
    w.float64(std::numeric_limits<double>::quiet_NaN());
    w.float64(HUGE_VAL);
    w.float32(-1.5f);
    CHECK(text_of(w.bytes()) == "[0.1, nan, inf, -1.5]\n");
}

TEST_CASE("text mode: bin as a short summary", "[text]") {
    MsgpackWriter w;
    w.map(2);
    w.string("small");
    const std::uint8_t four[] = {0, 1, 2, 255};
    w.binary(four, 4);
    w.string("large");
    std::vector<std::uint8_t> big(1000, 0xab);
    w.binary(big.data(), big.size());
    CHECK(text_of(w.bytes()) == "small: <4 bytes: 00 01 02 ff>\nlarge: <1000 bytes: ab ab ab ab ab ab ab ab ...>\n");
}

TEST_CASE("text mode: non-string map keys and ext values", "[text]") {
    msgpack::sbuffer buffer;
    msgpack::packer<msgpack::sbuffer> pk(buffer);
    pk.pack_map(2);
    pk.pack_int(1);
    pk.pack(std::string("one"));
    pk.pack(std::string("ext"));
    pk.pack_ext(2, 5);
    pk.pack_ext_body("\x01\x02", 2);
    const std::vector<std::uint8_t> bytes(buffer.data(), buffer.data() + buffer.size());
    CHECK(text_of(bytes) == "1: one\next: <ext 5, 2 bytes>\n");
}
