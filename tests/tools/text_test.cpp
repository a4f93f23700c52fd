// SPDX-License-Identifier: Apache-2.0
// msgpack -> indented text, as `gecko echo` and `gecko call` print messages.
#include <catch2/catch.hpp>

#include <gecko/wire/json.hpp>
#include <gecko/wire/value.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "text.hpp"

using gecko::wire::json_to_msgpack;

namespace {

std::string text_of(const std::vector<std::uint8_t>& bytes, gecko::tools::TextOptions options = {}) {
    return gecko::tools::to_text(gecko::wire::Value::parse(bytes.data(), bytes.size()), options);
}

std::string repeated(const std::string& text, std::size_t times) {
    std::string out;
    for (std::size_t i = 0; i < times; ++i) out += text;
    return out;
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
    // [float32 0.1, float64 NaN, float64 +infinity, float32 -1.5]
    const std::vector<std::uint8_t> bytes = {0x94, 0xca, 0x3d, 0xcc, 0xcc, 0xcd, 0xcb, 0x7f, 0xf8, 0, 0, 0, 0, 0, 0,
                                             0xcb, 0x7f, 0xf0, 0, 0, 0, 0, 0, 0, 0xca, 0xbf, 0xc0, 0x00, 0x00};
    CHECK(text_of(bytes) == "[0.1, nan, inf, -1.5]\n");
}

TEST_CASE("text mode: bin as a short summary", "[text]") {
    // {"small": bin 00 01 02 ff, "large": bin of 1000 bytes 0xab}, from its JSON form.
    const auto bytes = json_to_msgpack(R"({"small": {"$bin": "AAEC/w=="}, "large": {"$bin": ")" +
                                       repeated("q6ur", 333) + "qw==\"}}");
    CHECK(text_of(bytes) == "small: <4 bytes: 00 01 02 ff>\nlarge: <1000 bytes: ab ab ab ab ab ab ab ab ...>\n");
}

TEST_CASE("text mode: non-string map keys and ext values", "[text]") {
    // {1: "one", "ext": fixext 2 of type 5}
    const std::vector<std::uint8_t> bytes = {0x82, 0x01, 0xa3, 'o', 'n', 'e', 0xa3, 'e', 'x', 't', 0xd5, 0x05, 0x01, 0x02};
    CHECK(text_of(bytes) == "1: one\next: <ext 5, 2 bytes>\n");
}

TEST_CASE("text mode: keys and strings a terminal would obey are quoted with escapes", "[text]") {
    // {"k\u009b1m": "v\u009b1m"}: a C1 CSI (U+009B) in a key and in a value.
    const std::vector<std::uint8_t> bytes = {0x81, 0xa5, 'k', 0xc2, 0x9b, '1', 'm', 0xa5, 'v', 0xc2, 0x9b, '1', 'm'};
    CHECK(text_of(bytes) == "\"k\\u009b1m\": \"v\\u009b1m\"\n");
}
