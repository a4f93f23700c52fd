// SPDX-License-Identifier: Apache-2.0
// gecko/wire/json.hpp: msgpack <-> JSON, as `gecko echo --json` and `gecko pub` use them.
// msgpack-c, an independent implementation, checks what JSON -> msgpack writes.
#include <catch2/catch.hpp>

#include <gecko/wire/base64.hpp>
#include <gecko/wire/json.hpp>

#include <msgpack.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "gecko/error.hpp"
#include "support/msgpack_writer.hpp"

using gecko::test::MsgpackWriter;
using gecko::wire::json_to_msgpack;

namespace {

std::string json_of(const std::vector<std::uint8_t>& bytes) { return gecko::wire::msgpack_to_json(bytes.data(), bytes.size()); }

// Every kind of value, nested: the message the round-trip tests start from.
std::vector<std::uint8_t> everything() {
    MsgpackWriter w;
    w.map(14);
    w.string("text");
    w.string(u8"héllo ✓ 日本語 🦎");
    w.string("small");
    w.integer(7);
    w.string("negative");
    w.integer(-5);
    w.string("int64_min");
    w.integer(std::numeric_limits<std::int64_t>::min());
    w.string("uint64_max");
    w.unsigned_integer(std::numeric_limits<std::uint64_t>::max());
    w.string("pi");
    w.float64(3.141592653589793);
    w.string("integral_float");
    w.float64(1.0);
    w.string("negative_float");
    w.float64(-0.000123);
    w.string("tiny");
    w.float64(5e-310);  // subnormal
    w.string("bytes");
    const std::uint8_t raw[] = {0x00, 0x01, 0x7f, 0x80, 0xfe, 0xff};
    w.binary(raw, sizeof raw);
    w.string("flags");
    w.array(3);
    w.boolean(true);
    w.boolean(false);
    w.nil();
    w.string("nested");
    w.map(2);
    w.string("vector");
    w.map(3);
    w.string("x");
    w.float64(0.1);
    w.string("y");
    w.float64(-2.5);
    w.string("z");
    w.float64(9.81);
    w.string("points");
    w.array(2);
    w.map(1);
    w.string("id");
    w.integer(1);
    w.array(2);
    w.integer(-300);
    w.string("");
    w.string("empty_map");
    w.map(0);
    w.string("empty_array");
    w.array(0);
    return w.take();
}

}  // namespace

TEST_CASE("msgpack -> JSON -> msgpack keeps every value, byte for byte", "[wire][json]") {
    const auto original = everything();
    const std::string json = json_of(original);
    const auto back = json_to_msgpack(json);
    CHECK(json_of(back) == json);
    REQUIRE(back == original);
}

TEST_CASE("JSON -> msgpack -> JSON gives the same compact text", "[wire][json]") {
    const std::string json =
        R"({"a":1,"b":-2,"c":1.5,"d":"x","e":[true,false,null],"f":{"g":{"h":[]}},"i":{},"j":18446744073709551615,)"
        R"("k":-9223372036854775808,"l":1e+100,"m":"\"quoted\" back\\slash\nnew line"})";
    CHECK(json_of(json_to_msgpack(json)) == json);
}

TEST_CASE("JSON integers stay integers, other numbers become float64", "[wire][json]") {
    const auto bytes = json_to_msgpack(R"({"i": 3, "n": -3, "f": 3.0, "e": 1e3, "big": 12345678901})");
    const auto handle = msgpack::unpack(reinterpret_cast<const char*>(bytes.data()), bytes.size());
    const auto& map = handle.get().via.map;
    REQUIRE(map.size == 5);
    CHECK(map.ptr[0].val.type == msgpack::type::POSITIVE_INTEGER);
    CHECK(map.ptr[1].val.type == msgpack::type::NEGATIVE_INTEGER);
    CHECK(map.ptr[2].val.type == msgpack::type::FLOAT64);
    CHECK(map.ptr[3].val.type == msgpack::type::FLOAT64);
    CHECK(map.ptr[4].val.type == msgpack::type::POSITIVE_INTEGER);
    CHECK(map.ptr[4].val.via.u64 == 12345678901u);
    // float64 even when integral: 0xcb and 8 bytes, not the integer 3.
    const std::vector<std::uint8_t> three = json_to_msgpack("3.0");
    CHECK(three == std::vector<std::uint8_t>{0xcb, 0x40, 0x08, 0, 0, 0, 0, 0, 0});
    // Field order is kept (objects are not sorted).
    CHECK(json_of(json_to_msgpack(R"({"z":1,"a":2,"m":3})")) == R"({"z":1,"a":2,"m":3})");
}

TEST_CASE("floats are printed as the shortest text that reads back the same", "[wire][json]") {
    using gecko::wire::format_float;
    CHECK(format_float(0.1) == "0.1");
    CHECK(format_float(1.0) == "1.0");
    CHECK(format_float(-2.5) == "-2.5");
    CHECK(format_float(9.81) == "9.81");
    CHECK(format_float(1e20) == "1e+20");
    CHECK(format_float(3.141592653589793) == "3.141592653589793");
    CHECK(format_float(static_cast<double>(0.1f), true) == "0.1");  // float32: 9 digits at most
    CHECK(format_float(std::nan(""), false) == "nan");
    CHECK(format_float(-HUGE_VAL) == "-inf");
    CHECK(format_float(3.141592653589793, false, 6) == "3.14159");  // text mode caps the digits
    CHECK(format_float(1e-7) == "1e-07");
    CHECK(format_float(123456.0) == "123456.0");
    CHECK(format_float(1234567890123456789.0) == "1.2345678901234568e+18");

    MsgpackWriter w;
    w.array(4);
    w.float32(0.1f);
    w.float64(std::numeric_limits<double>::quiet_NaN());
    w.float64(HUGE_VAL);
    w.float32(-1.5f);
    CHECK(json_of(w.bytes()) == "[0.1,null,null,-1.5]");  // JSON has no NaN nor infinity
}

// What format_float writes is what the plain search writes: %.*g with 1, 2,
// ... digits until the text reads back as the value.
static std::string format_float_by_search(double v, bool single, int max_digits) {
    const int limit = std::max(1, std::min(max_digits, single ? 9 : 17));
    char buf[40];
    for (int digits = 1; digits <= limit; ++digits) {
        std::snprintf(buf, sizeof buf, "%.*g", digits, v);
        const double back = std::strtod(buf, nullptr);
        if (single ? static_cast<float>(back) == static_cast<float>(v) : back == v) break;
    }
    std::string s = buf;
    if (s.find_first_of(".eninf") == std::string::npos) s += ".0";
    return s;
}

TEST_CASE("floats: the shortest text is the one %.*g finds digit by digit", "[wire][json]") {
    using gecko::wire::format_float;
    std::uint64_t state = 0x9E3779B97F4A7C15u;
    auto next = [&] {  // splitmix64: any bit pattern, so every exponent and mantissa shape
        std::uint64_t z = (state += 0x9E3779B97F4A7C15u);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
        return z ^ (z >> 31);
    };
    int checked = 0;
    for (int i = 0; i < 20000; ++i) {
        const std::uint64_t bits = next();
        double d;
        std::memcpy(&d, &bits, sizeof d);
        float f;
        const auto low = static_cast<std::uint32_t>(bits);
        std::memcpy(&f, &low, sizeof f);
        const double sums = static_cast<double>(i) * 0.001 + 9.81;  // what a sensor's readings look like
        for (const double v : {d, sums}) {
            if (!std::isfinite(v)) continue;
            REQUIRE(format_float(v) == format_float_by_search(v, false, 17));
            REQUIRE(format_float(v, false, 6) == format_float_by_search(v, false, 6));
            ++checked;
        }
        if (std::isfinite(f)) {
            REQUIRE(format_float(static_cast<double>(f), true) == format_float_by_search(static_cast<double>(f), true, 17));
            ++checked;
        }
    }
    CHECK(checked > 50000);
}

TEST_CASE("strings: unicode passes, control characters are escaped, invalid UTF-8 is replaced", "[wire][json]") {
    MsgpackWriter w;
    w.array(3);
    w.string(u8"é✓🦎");
    w.string(std::string("tab\tbell\x07", 9));
    w.string("bad \xff\xc3 end");
    CHECK(json_of(w.bytes()) == u8"[\"é✓🦎\",\"tab\\tbell\\u0007\",\"bad \uFFFD\uFFFD end\"]");
    // \u escapes in JSON input become UTF-8, surrogate pairs included.
    const auto bytes = json_to_msgpack(R"(["\u00e9", "\ud83e\udd8e"])");
    CHECK(json_of(bytes) == u8"[\"é\",\"🦎\"]");
}

TEST_CASE("bin is {\"$bin\": base64} in JSON", "[wire][json]") {
    MsgpackWriter w;
    w.map(2);
    w.string("small");
    const std::uint8_t four[] = {0, 1, 2, 255};
    w.binary(four, 4);
    w.string("large");
    std::vector<std::uint8_t> big(1000, 0xab);
    w.binary(big.data(), big.size());
    const std::string json = json_of(w.bytes());
    CHECK(json.rfind(R"({"small":{"$bin":"AAEC/w=="},"large":{"$bin":"q6ur)", 0) == 0);
    CHECK(json_to_msgpack(json) == w.bytes());
    CHECK_THROWS_AS(json_to_msgpack(R"({"$bin": "not base64!"})"), gecko::Error);
    // An empty bin is still bin (0xc4 0x00).
    CHECK(json_to_msgpack(R"({"$bin": ""})") == std::vector<std::uint8_t>{0xc4, 0x00});
}

TEST_CASE("non-string map keys and ext values have a JSON form", "[wire][json]") {
    msgpack::sbuffer buffer;
    msgpack::packer<msgpack::sbuffer> pk(buffer);
    pk.pack_map(2);
    pk.pack_int(1);
    pk.pack(std::string("one"));
    pk.pack(std::string("ext"));
    pk.pack_ext(2, 5);
    pk.pack_ext_body("\x01\x02", 2);
    const std::vector<std::uint8_t> bytes(buffer.data(), buffer.data() + buffer.size());
    CHECK(json_of(bytes) == R"({"1":"one","ext":{"$ext":5,"$data":"AQI="}})");
}

TEST_CASE("msgpack with a key twice in a map is refused and not printed as JSON with a duplicate member",
          "[wire][json][duplicates]") {
    // {"data": 1, "data": 2}: what `gecko echo --json` once printed as is.
    const std::uint8_t twice[] = {0x82, 0xa4, 'd', 'a', 't', 'a', 0x01, 0xa4, 'd', 'a', 't', 'a', 0x02};
    try {
        gecko::wire::msgpack_to_json(twice, sizeof twice);
        FAIL("a map with a key twice was printed");
    } catch (const gecko::Error& e) {
        CHECK(e.code() == gecko::Errc::decode);
        CHECK(std::string(e.what()) == "field 'data' appears twice in the map");
    }
}

TEST_CASE("keys within keys cannot make the JSON grow exponentially", "[wire][json][bounds]") {
    // {{{...{1: 2}...}: 2}: 2}: a map whose key is a map whose key is a map ...,
    // 60 levels: each level would double the escapes of the one inside.
    std::vector<std::uint8_t> bytes;
    for (int i = 0; i < 60; ++i) bytes.push_back(0x81);
    bytes.push_back(0x01);
    for (int i = 0; i < 60; ++i) bytes.push_back(0x02);
    const std::string json = json_of(bytes);
    CHECK(json.size() < 100);
    CHECK(json == R"({"{\"{...}\":2}":2})");
    // One level keeps the key's whole JSON text.
    CHECK(json_of({0x81, 0x81, 0x01, 0x02, 0x03}) == R"({"{\"1\":2}":3})");
    CHECK(json_of({0x81, 0x92, 0x01, 0xa1, 'x', 0x03}) == R"({"[1,\"x\"]":3})");
}

TEST_CASE("malformed input is an error naming the problem, never a crash", "[wire][json]") {
    auto bytes = everything();
    bytes.pop_back();
    try {
        json_of(bytes);
        FAIL("truncated msgpack was accepted");
    } catch (const gecko::Error& e) {
        CHECK(e.code() == gecko::Errc::decode);
    }
    const std::uint8_t trailing[] = {0x01, 0x02};
    CHECK_THROWS_AS(gecko::wire::msgpack_to_json(trailing, sizeof trailing), gecko::Error);
    // A forged length far beyond the input is refused without allocating it.
    const std::uint8_t forged[] = {0xdd, 0x7f, 0xff, 0xff, 0xff};
    CHECK_THROWS_AS(gecko::wire::msgpack_to_json(forged, sizeof forged), gecko::Error);

    try {
        json_to_msgpack("{\"a\": }");
        FAIL("bad JSON was accepted");
    } catch (const gecko::Error& e) {
        CHECK(e.code() == gecko::Errc::invalid_argument);
        CHECK_THAT(e.what(), Catch::Contains("line 1, column 7"));
    }
    CHECK_THROWS_AS(json_to_msgpack(""), gecko::Error);
    CHECK_THROWS_AS(json_to_msgpack("{} trailing"), gecko::Error);
}

TEST_CASE("base64 matches RFC 4648 test vectors", "[wire][json]") {
    using gecko::wire::base64_decode;
    using gecko::wire::base64_encode;
    const std::pair<const char*, const char*> vectors[] = {{"", ""},         {"f", "Zg=="},         {"fo", "Zm8="},
                                                           {"foo", "Zm9v"},  {"foob", "Zm9vYg=="},  {"fooba", "Zm9vYmE="},
                                                           {"foobar", "Zm9vYmFy"}};
    for (const auto& [plain, encoded] : vectors) {
        const std::string p = plain;
        CHECK(base64_encode(reinterpret_cast<const std::uint8_t*>(p.data()), p.size()) == encoded);
        std::vector<std::uint8_t> out;
        REQUIRE(base64_decode(encoded, out));
        CHECK(std::string(out.begin(), out.end()) == p);
    }
    std::vector<std::uint8_t> out;
    CHECK_FALSE(base64_decode("Zm9v!", out));
    CHECK_FALSE(base64_decode("Zm9", out));
    CHECK_FALSE(base64_decode("Zg==Zg==", out));
}
