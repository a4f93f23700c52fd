// gecko::wire::Reader: every msgpack format, the number rules, and bounds:
// nothing read past the end, no length trusted, nesting limited.

#include <catch2/catch.hpp>

#include <gecko/wire/reader.hpp>

#include <msgpack.hpp>

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

namespace {

using Bytes = std::vector<std::uint8_t>;
using gecko::wire::DecodeError;
using gecko::wire::Reader;
using gecko::wire::Type;

/// A reader of `b`, which must outlive it.
Reader reader(const Bytes& b) { return Reader(b.data(), b.size()); }

template <class Int>
Int int_of(const Bytes& b) {
    Reader r = reader(b);
    const Int v = r.read_int<Int>();
    CHECK(r.at_end());
    return v;
}

template <class Float>
Float float_of(const Bytes& b) {
    Reader r = reader(b);
    const Float v = r.read_float<Float>();
    CHECK(r.at_end());
    return v;
}

/// The detail of the DecodeError `f` throws (fails the test if it throws none).
template <class F>
std::string error_of(F&& f) {
    try {
        f();
    } catch (const DecodeError& e) {
        CHECK(e.code() == gecko::Errc::decode);
        return e.detail();
    }
    FAIL("no DecodeError");
    return "";
}

Bytes packed(const std::function<void(msgpack::packer<msgpack::sbuffer>&)>& write) {
    msgpack::sbuffer out;
    msgpack::packer<msgpack::sbuffer> pk(out);
    write(pk);
    return Bytes(out.data(), out.data() + out.size());
}

}  // namespace

TEST_CASE("every msgpack int format reads", "[wire][reader]") {
    CHECK(int_of<std::int64_t>({0x00}) == 0);
    CHECK(int_of<std::int64_t>({0x7f}) == 127);
    CHECK(int_of<std::int64_t>({0xff}) == -1);
    CHECK(int_of<std::int64_t>({0xe0}) == -32);
    CHECK(int_of<std::int64_t>({0xcc, 0xff}) == 255);
    CHECK(int_of<std::int64_t>({0xcd, 0x01, 0x00}) == 256);
    CHECK(int_of<std::int64_t>({0xce, 0x01, 0x02, 0x03, 0x04}) == 0x01020304);
    CHECK(int_of<std::uint64_t>({0xcf, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}) ==
          std::numeric_limits<std::uint64_t>::max());
    CHECK(int_of<std::int64_t>({0xd0, 0x80}) == -128);
    CHECK(int_of<std::int64_t>({0xd1, 0xff, 0x00}) == -256);
    CHECK(int_of<std::int64_t>({0xd2, 0x80, 0x00, 0x00, 0x00}) == std::numeric_limits<std::int32_t>::min());
    CHECK(int_of<std::int64_t>({0xd3, 0x80, 0, 0, 0, 0, 0, 0, 0}) == std::numeric_limits<std::int64_t>::min());
    CHECK(int_of<std::uint8_t>({0xd0, 0x05}) == 5);  // a signed format holding a non-negative value
}

TEST_CASE("an int read checks the target's range", "[wire][reader][numbers]") {
    CHECK(int_of<std::uint8_t>({0xcc, 0xff}) == 255);
    CHECK(int_of<std::int8_t>({0xd0, 0x80}) == -128);
    CHECK(error_of([] { int_of<std::int8_t>({0xcc, 0xff}); }) == "holds 255, out of range for int8");
    CHECK(error_of([] { int_of<std::uint8_t>({0xcd, 0x01, 0x2c}); }) == "holds 300, out of range for uint8");
    CHECK(error_of([] { int_of<std::uint32_t>({0xff}); }) == "holds -1, out of range for uint32");
    CHECK(error_of([] { int_of<std::int16_t>({0xd2, 0xff, 0xff, 0x00, 0x00}); }) == "holds -65536, out of range for int16");
    CHECK(error_of([] { int_of<std::int64_t>({0xcf, 0x80, 0, 0, 0, 0, 0, 0, 0}); }) ==
          "holds 9223372036854775808, out of range for int64");
}

TEST_CASE("an int read refuses floats, even integral ones: 1.5 never becomes 1", "[wire][reader][numbers]") {
    CHECK(error_of([] { int_of<std::int64_t>({0xcb, 0x3f, 0xf8, 0, 0, 0, 0, 0, 0}); }) ==
          "has msgpack type float64, expected an integer");
    CHECK(error_of([] { int_of<std::int64_t>({0xcb, 0x40, 0x00, 0, 0, 0, 0, 0, 0}); }) ==  // 2.0
          "has msgpack type float64, expected an integer");
    CHECK(error_of([] { int_of<std::int32_t>({0xca, 0x3f, 0x80, 0x00, 0x00}); }) ==
          "has msgpack type float32, expected an integer");
    CHECK(error_of([] { int_of<std::int32_t>({0xc3}); }) == "has msgpack type bool, expected an integer");
    CHECK(error_of([] { int_of<std::int32_t>({0xa1, 'x'}); }) == "has msgpack type str, expected an integer");
}

TEST_CASE("a float read accepts every msgpack number", "[wire][reader][numbers]") {
    CHECK(float_of<double>({0xcb, 0x3f, 0xf8, 0, 0, 0, 0, 0, 0}) == 1.5);
    CHECK(float_of<double>({0xca, 0x3f, 0xc0, 0x00, 0x00}) == 1.5);  // float32 widens exactly
    CHECK(float_of<float>({0xca, 0x3f, 0xc0, 0x00, 0x00}) == 1.5f);
    CHECK(float_of<float>({0xcb, 0x3f, 0xb9, 0x99, 0x99, 0x99, 0x99, 0x99, 0x9a}) == 0.1f);  // rounds
    CHECK(float_of<double>({0x02}) == 2.0);  // Python writes 2, not 2.0
    CHECK(float_of<double>({0xff}) == -1.0);
    CHECK(float_of<double>({0xd3, 0x80, 0, 0, 0, 0, 0, 0, 0}) == -9223372036854775808.0);
    CHECK(float_of<double>({0xcf, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}) == 18446744073709551615.0);
    CHECK(std::isinf(float_of<double>({0xca, 0x7f, 0x80, 0x00, 0x00})));
    CHECK(std::isnan(float_of<double>({0xcb, 0x7f, 0xf8, 0, 0, 0, 0, 0, 0})));
    CHECK(std::signbit(float_of<double>({0xcb, 0x80, 0, 0, 0, 0, 0, 0, 0})));
    CHECK(error_of([] { float_of<double>({0xc0}); }) == "has msgpack type nil, expected a number");
    CHECK(error_of([] { float_of<double>({0xa1, '1'}); }) == "has msgpack type str, expected a number");
}

TEST_CASE("bool and nil", "[wire][reader]") {
    const Bytes b = {0xc2, 0xc3, 0xc0, 0x00};
    Reader r = reader(b);
    CHECK_FALSE(r.read_bool());
    CHECK(r.read_bool());
    CHECK(r.try_read_nil());
    CHECK_FALSE(r.try_read_nil());  // 0x00 is an int: not consumed
    CHECK(r.read_int<int>() == 0);
    CHECK(r.at_end());
    CHECK(error_of([] { reader({0x01}).read_bool(); }) == "has msgpack type int, expected a bool");
}

TEST_CASE("str and bin are different types, read as views into the input", "[wire][reader]") {
    const Bytes fixstr = {0xa3, 'a', 'b', 'c'};
    Reader r = reader(fixstr);
    const std::string_view s = r.read_str();
    CHECK(s == "abc");
    CHECK(reinterpret_cast<const std::uint8_t*>(s.data()) == fixstr.data() + 1);

    CHECK(reader({0xd9, 0x02, 'h', 'i'}).read_str() == "hi");
    CHECK(reader({0xda, 0x00, 0x01, 'x'}).read_str() == "x");
    CHECK(reader({0xdb, 0x00, 0x00, 0x00, 0x00}).read_str().empty());

    const Bytes bin = {0xc4, 0x02, 0x10, 0x20};
    Reader rb = reader(bin);
    const gecko::BytesView v = rb.read_bin();
    CHECK(v.size() == 2);
    CHECK(v.data() == bin.data() + 2);
    CHECK(reader({0xc5, 0x00, 0x01, 0x7f}).read_bin().size() == 1);
    CHECK(reader({0xc6, 0x00, 0x00, 0x00, 0x00}).read_bin().empty());

    CHECK(error_of([&] { reader(bin).read_str(); }) == "has msgpack type bin, expected a str");
    CHECK(error_of([&] { reader(fixstr).read_bin(); }) == "has msgpack type str, expected a bin");
    std::string_view out;
    Reader other = reader(bin);
    CHECK_FALSE(other.try_read_str(out));
    CHECK(other.offset() == 0);  // nothing consumed
}

TEST_CASE("array and map headers", "[wire][reader]") {
    CHECK(reader({0x92, 0x01, 0x02}).read_array() == 2);
    CHECK(reader({0xdc, 0x00, 0x01, 0xc0}).read_array() == 1);
    CHECK(reader({0xdd, 0x00, 0x00, 0x00, 0x00}).read_array() == 0);
    CHECK(reader({0x81, 0xa1, 'k', 0xc0}).read_map() == 1);
    CHECK(reader({0xde, 0x00, 0x00}).read_map() == 0);
    CHECK(reader({0xdf, 0x00, 0x00, 0x00, 0x00}).read_map() == 0);
    CHECK(error_of([] { reader({0x91, 0x01}).read_map(); }) == "has msgpack type array, expected a map");
    CHECK(error_of([] { reader({0x90}).read_map("a map (a message)"); }) ==
          "has msgpack type array, expected a map (a message)");
}

TEST_CASE("no length is trusted: it must fit in what is left of the input", "[wire][reader][bounds]") {
    SECTION("a str or bin longer than the input") {
        CHECK(error_of([] { reader({0xdb, 0xff, 0xff, 0xff, 0xff, 'a'}).read_str(); }) ==
              "is cut short: a str of 4294967295 bytes, only 1 left in the input");
        CHECK(error_of([] { reader({0xa5, 'a', 'b'}).read_str(); }) == "is cut short: a str of 5 bytes, only 2 left in the input");
        CHECK(error_of([] { reader({0xc6, 0x7f, 0xff, 0xff, 0xff, 0x00}).read_bin(); }) ==
              "is cut short: a bin of 2147483647 bytes, only 1 left in the input");
    }
    SECTION("an array claiming more elements than there are bytes, before anything is reserved") {
        CHECK(error_of([] { reader({0xdd, 0xff, 0xff, 0xff, 0xff}).read_array(); }) ==
              "is an array of 4294967295 elements, more than the 0 bytes left in the input can hold");
        CHECK(error_of([] { reader({0x93, 0xc0, 0xc0}).read_array(); }).rfind("is an array of 3 elements", 0) == 0);
        CHECK(reader({0x93, 0xc0, 0xc0, 0xc0}).read_array() == 3);  // exactly enough
    }
    SECTION("a map needs two bytes per entry") {
        CHECK(error_of([] { reader({0xdf, 0xff, 0xff, 0xff, 0xff, 0, 0}).read_map(); }) ==
              "is a map of 4294967295 entries, more than the 2 bytes left in the input can hold");
        CHECK_THROWS_AS(reader({0x82, 0xa1, 'a', 0x01}).read_map(), DecodeError);
        CHECK(reader({0x82, 0x01, 0x01, 0x01, 0x01}).read_map() == 2);
    }
    SECTION("every header and number cut short") {
        for (const Bytes& b : std::vector<Bytes>{{0xcc}, {0xcd, 0x00}, {0xce, 0, 0, 0}, {0xcf, 0, 0, 0, 0, 0, 0, 0},
                                                 {0xd0}, {0xd1, 0}, {0xd2, 0, 0}, {0xd3, 0}, {0xca, 0, 0, 0},
                                                 {0xcb, 0, 0, 0, 0, 0, 0, 0}, {0xd9}, {0xda, 0}, {0xdb, 0, 0, 0},
                                                 {0xc4}, {0xc5, 0}, {0xc6, 0, 0, 0}, {0xdc, 0}, {0xdd, 0, 0, 0},
                                                 {0xde, 0}, {0xdf, 0, 0, 0}, {0xd4, 0}, {0xd8, 0, 0}, {0xc7, 1},
                                                 {0xc7, 2, 0, 1}, {0xc8, 0}, {0xc9, 0, 0, 0, 0}, {}}) {
            CAPTURE(b);
            CHECK_THAT(error_of([&] { reader(b).skip(); }), Catch::StartsWith("is cut short"));
        }
        CHECK(error_of([] { reader({0xcb, 0x3f}).read_float<double>(); }) ==
              "is cut short: a float64 needs 9 bytes, only 2 left in the input");
        CHECK(error_of([] { reader({}).read_int<int>(); }) == "is cut short: the input ends where a value should start");
    }
}

TEST_CASE("byte 0xc1 is never valid msgpack", "[wire][reader]") {
    CHECK(error_of([] { reader({0xc1}).skip(); }) == "starts with byte 0xc1, which msgpack never uses");
    CHECK(error_of([] { reader({0xc1}).read_int<int>(); }) == "starts with byte 0xc1, which msgpack never uses");
    CHECK(error_of([] { reader({0xc1}).peek(); }) == "starts with byte 0xc1, which msgpack never uses");
}

TEST_CASE("peek names the type of the next value without consuming it", "[wire][reader]") {
    const std::vector<std::pair<Bytes, Type>> cases = {
        {{0xc0}, Type::nil},   {{0xc3}, Type::boolean}, {{0x05}, Type::integer}, {{0xe5}, Type::integer},
        {{0xd3}, Type::integer}, {{0xca}, Type::float32}, {{0xcb}, Type::float64}, {{0xa0}, Type::str},
        {{0xd9}, Type::str},   {{0xc4}, Type::bin},     {{0x90}, Type::array},   {{0xdd}, Type::array},
        {{0x80}, Type::map},   {{0xde}, Type::map},     {{0xd4}, Type::ext},     {{0xc9}, Type::ext}};
    for (const auto& [bytes, type] : cases) {
        CAPTURE(bytes);
        Reader r = reader(bytes);
        CHECK(r.peek() == type);
        CHECK(r.offset() == 0);
    }
    CHECK(std::string(gecko::wire::to_string(Type::float64)) == "float64");
}

TEST_CASE("skip steps over a value of any type, nested ones included", "[wire][reader][skip]") {
    const Bytes all = packed([](auto& pk) {
        pk.pack_array(21);
        pk.pack_nil();
        pk.pack(true);
        pk.pack(false);
        pk.pack(5);
        pk.pack(-5);
        pk.pack(200);
        pk.pack(-200);
        pk.pack(70000);
        pk.pack(std::numeric_limits<std::int64_t>::min());
        pk.pack_float(1.5f);
        pk.pack_double(2.5);
        pk.pack(std::string("short"));
        pk.pack(std::string(300, 'x'));  // str16
        pk.pack(std::vector<std::uint8_t>(70000, 1));  // bin32
        pk.pack_ext(1, 7);  // fixext 1
        pk.pack_ext_body("a", 1);
        pk.pack_ext(16, 7);  // fixext 16
        pk.pack_ext_body("0123456789abcdef", 16);
        pk.pack_ext(3, -1);  // ext 8
        pk.pack_ext_body("abc", 3);
        pk.pack_ext(300, 2);  // ext 16
        pk.pack_ext_body(std::string(300, 'e').data(), 300);
        pk.pack_ext(70000, 2);  // ext 32
        pk.pack_ext_body(std::string(70000, 'e').data(), 70000);
        pk.pack_map(2);
        pk.pack(1);
        pk.pack_array(0);
        pk.pack(std::string("k"));
        pk.pack_map(1);
        pk.pack_nil();
        pk.pack_nil();
        pk.pack_array(20);  // array16
        for (int i = 0; i < 20; ++i) pk.pack(i);
    });
    Bytes twice = all;
    twice.insert(twice.end(), all.begin(), all.end());
    Reader r = reader(twice);
    r.skip();
    CHECK(r.offset() == all.size());
    r.skip();
    CHECK(r.at_end());
    r.expect_end();

    std::size_t failures = 0;  // cut anywhere: an error, never a read past the end
    for (std::size_t cut = 0; cut < all.size(); ++cut) {
        Reader part(all.data(), cut);
        try {
            part.skip();
        } catch (const DecodeError&) {
            ++failures;
        }
    }
    CHECK(failures == all.size());
}

TEST_CASE("ext: a type code and its bytes, as a view into the input", "[wire][reader]") {
    const Bytes all = packed([](auto& pk) {
        for (const std::uint32_t size : {1u, 2u, 4u, 8u, 16u, 3u, 300u, 70000u}) {  // fixext 1-16, ext 8/16/32
            pk.pack_ext(size, static_cast<std::int8_t>(-static_cast<int>(size % 100)));
            pk.pack_ext_body(std::string(size, 'e').data(), size);
        }
    });
    Reader r = reader(all);
    for (const std::uint32_t size : {1u, 2u, 4u, 8u, 16u, 3u, 300u, 70000u}) {
        CAPTURE(size);
        const auto ext = r.read_ext();
        CHECK(ext.type == -static_cast<int>(size % 100));
        CHECK(ext.data.size() == size);
        CHECK(ext.data[size - 1] == 'e');
    }
    CHECK(r.at_end());
    CHECK(error_of([] { reader({0xc7, 0x05, 0x01, 'a'}).read_ext(); }) == "is cut short: an ext of 5 bytes, only 1 left in the input");
    CHECK(error_of([] { reader({0xd6, 0x01, 'a'}).read_ext(); }) == "is cut short: an ext of 4 bytes, only 1 left in the input");
    CHECK(error_of([] { reader({0xc8, 0x00}).read_ext(); }) == "is cut short: an ext header needs 4 bytes, only 2 left in the input");
    CHECK(error_of([] { reader({0xa1, 'a'}).read_ext(); }) == "has msgpack type str, expected an ext");
}

TEST_CASE("read_raw skips a value and gives its bytes", "[wire][reader][skip]") {
    const Bytes b = {0x92, 0xa1, 'a', 0x81, 0x01, 0xc0, 0x07};
    Reader r = reader(b);
    const auto first = r.read_raw();
    CHECK(first.data() == b.data());
    CHECK(first.size() == 6);
    CHECK(r.read_raw() == gecko::BytesView(b.data() + 6, 1));
    CHECK(r.at_end());
    CHECK_THROWS_AS(reader({0x92, 0x01}).read_raw(), DecodeError);
}

TEST_CASE("arrays and maps nest at most max_depth deep, also when skipped", "[wire][reader][depth]") {
    STATIC_REQUIRE(Reader::max_depth == 64);
    auto nested = [](std::size_t depth, std::uint8_t container) {
        Bytes b(depth, container);
        b.push_back(0xc0);
        return b;
    };
    CHECK_NOTHROW(reader(nested(64, 0x91)).skip());
    CHECK(error_of([&] { reader(nested(65, 0x91)).skip(); }) == "nests arrays and maps more than 64 deep");
    CHECK(error_of([&] { reader(nested(100000, 0x91)).skip(); }) == "nests arrays and maps more than 64 deep");
    Bytes maps;
    for (int i = 0; i < 65; ++i) maps.insert(maps.end(), {0x81, 0xc0});
    maps.push_back(0xc0);
    CHECK(error_of([&] { reader(maps).skip(); }) == "nests arrays and maps more than 64 deep");

    Bytes flat = nested(64, 0x91);
    Reader r = reader(flat);
    {
        Reader::Nesting outer(r);  // a level held by the caller counts
        CHECK_THROWS_AS(r.skip(), DecodeError);
    }
}

TEST_CASE("bytes left after a value are an error when asked", "[wire][reader]") {
    const Bytes b = {0x01, 0x02, 0x03};
    Reader r = reader(b);
    CHECK(r.read_int<int>() == 1);
    CHECK(r.remaining() == 2);
    CHECK(error_of([&] { r.expect_end(); }) == "is followed by 2 bytes of trailing data");
}

TEST_CASE("a DecodeError reads as a sentence and is a gecko::Error", "[wire][reader][errors]") {
    DecodeError e("has msgpack type str, expected a number");
    CHECK(std::string(e.what()) == "the message has msgpack type str, expected a number");
    e.nest_field("x");
    e.nest_index(2);
    e.nest_field("points");
    e.set_type_name("test.Cloud");
    CHECK(e.path() == "points[2].x");
    CHECK(std::string(e.what()) == "test.Cloud: field 'points[2].x' has msgpack type str, expected a number");
    e.nest_field(std::string("bad\nkey") + std::string(100, 'k'));
    CHECK_THAT(e.path(), Catch::StartsWith("bad?key") && Catch::Contains("....points[2].x"));
    const gecko::Error& base = e;
    CHECK(base.code() == gecko::Errc::decode);
    CHECK(std::string(base.what()) == e.what());
}
