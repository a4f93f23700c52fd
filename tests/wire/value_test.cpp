// SPDX-License-Identifier: Apache-2.0
// gecko::wire::Value: a msgpack value checked whole once, then looked at in
// place. The inputs are written by msgpack-c, an independent implementation.

#include <catch2/catch.hpp>

#include <gecko/wire/value.hpp>

#include <msgpack.hpp>

#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

namespace {

using Bytes = std::vector<std::uint8_t>;
using gecko::wire::DecodeError;
using gecko::wire::Type;
using gecko::wire::Value;

Bytes packed(const std::function<void(msgpack::packer<msgpack::sbuffer>&)>& write) {
    msgpack::sbuffer out;
    msgpack::packer<msgpack::sbuffer> pk(out);
    write(pk);
    return Bytes(out.data(), out.data() + out.size());
}

Value parsed(const Bytes& b) { return Value::parse(b.data(), b.size()); }

/// The detail of the DecodeError Value::parse throws for `b`.
std::string error_of(const Bytes& b) {
    try {
        (void)parsed(b);
    } catch (const DecodeError& e) {
        return e.detail();
    }
    FAIL("no DecodeError");
    return "";
}

}  // namespace

TEST_CASE("a Value's accessors answer for their own type and are empty for any other", "[wire][value]") {
    const Bytes b = packed([](auto& pk) {
        pk.pack_map(9);
        pk.pack(std::string("s"));
        pk.pack(std::string("text"));
        pk.pack(std::string("u"));
        pk.pack(std::numeric_limits<std::uint64_t>::max());
        pk.pack(std::string("i"));
        pk.pack(-7);
        pk.pack(std::string("f"));
        pk.pack_double(2.5);
        pk.pack(std::string("b"));
        pk.pack(true);
        pk.pack(std::string("n"));
        pk.pack_nil();
        pk.pack(std::string("bin"));
        pk.pack(std::vector<std::uint8_t>{1, 2, 3});
        pk.pack(std::string("ext"));
        pk.pack_ext(2, -3);
        pk.pack_ext_body("xy", 2);
        pk.pack(std::string("list"));
        pk.pack(std::vector<int>{1, 2, 3});
    });
    const Value v = parsed(b);
    CHECK(v.type() == Type::map);
    CHECK(v.count() == 9);
    CHECK(v.bytes() == gecko::BytesView(b));

    CHECK(v.find("s")->as_str() == "text");
    CHECK_FALSE(v.find("s")->as_uint());
    CHECK(v.find("u")->as_uint() == std::numeric_limits<std::uint64_t>::max());
    CHECK_FALSE(v.find("u")->as_int());  // above INT64_MAX
    CHECK(v.find("u")->as_number() == static_cast<double>(std::numeric_limits<std::uint64_t>::max()));
    CHECK(v.find("i")->as_int() == -7);
    CHECK_FALSE(v.find("i")->as_uint());
    CHECK(v.find("f")->as_number() == 2.5);
    CHECK_FALSE(v.find("f")->as_int());  // a float is never an int
    CHECK(v.find("b")->as_bool() == true);
    CHECK_FALSE(v.find("b")->as_uint());
    CHECK(v.find("n")->is_nil());
    CHECK_FALSE(v.find("n")->as_str());
    CHECK(v.find("bin")->as_bin()->to_vector() == Bytes{1, 2, 3});
    CHECK_FALSE(v.find("bin")->as_str());  // bin is not str
    const auto ext = v.find("ext")->as_ext();
    REQUIRE(ext);
    CHECK(ext->type == -3);
    CHECK(ext->data.size() == 2);
    CHECK_FALSE(v.find("missing"));
    CHECK_FALSE(v.find("s")->find("s"));  // not a map
    CHECK(v.find("s")->count() == 0);
    CHECK(v.find("s")->items().empty());

    CHECK(Value().is_nil());
    CHECK(Value().type() == Type::nil);
}

TEST_CASE("an int is an int whatever format carries it", "[wire][value]") {
    // msgpack-c writes non-negative values unsigned; other writers may not.
    CHECK(parsed({0xd0, 0x05}).as_uint() == 5u);                    // int8 5
    CHECK(parsed({0xd3, 0, 0, 0, 0, 0, 0, 0, 9}).as_uint() == 9u);  // int64 9
    CHECK_FALSE(parsed({0xd0, 0xff}).as_uint());                    // int8 -1
    CHECK(parsed({0xd0, 0xff}).as_int() == -1);
    CHECK(parsed({0xcf, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}).as_int() == std::numeric_limits<std::int64_t>::max());
    CHECK(parsed({0xca, 0x3f, 0xc0, 0x00, 0x00}).as_number() == 1.5);  // float32
}

TEST_CASE("items and entries walk arrays and maps in order, nested values as Values", "[wire][value]") {
    const Bytes b = packed([](auto& pk) {
        pk.pack_array(3);
        pk.pack(std::string("a"));
        pk.pack_map(2);
        pk.pack(std::string("x"));
        pk.pack(std::vector<int>{7, 8});
        pk.pack(1);  // a key that is not a str
        pk.pack(std::string("one"));
        pk.pack_array(0);
    });
    const Value v = parsed(b);
    std::vector<Type> types;
    for (const Value& item : v.items()) types.push_back(item.type());
    CHECK(types == std::vector<Type>{Type::str, Type::map, Type::array});
    CHECK(v.items().size() == 3);
    CHECK(v.entries().empty());  // an array has no entries

    const Value map = *v.item(1);
    std::vector<std::string> keys;
    for (const auto& [key, value] : map.entries()) keys.push_back(key.as_str() ? std::string(*key.as_str()) : "#" + std::to_string(*key.as_uint()));
    CHECK(keys == std::vector<std::string>{"x", "#1"});
    const auto x = map.find("x");
    REQUIRE(x);
    CHECK(x->item(1)->as_uint() == 8u);
    CHECK_FALSE(x->item(2));
    CHECK(x->bytes().to_vector() == Bytes{0x92, 0x07, 0x08});
    CHECK_FALSE(v.item(3));
    CHECK(v.item(2)->count() == 0);
}

TEST_CASE("a Value is checked whole when made: malformed input never becomes one", "[wire][value][bounds]") {
    const Bytes good = packed([](auto& pk) {
        pk.pack_map(2);
        pk.pack(std::string("list"));
        pk.pack(std::vector<std::string>{"a", "bb", "ccc"});
        pk.pack(std::string("n"));
        pk.pack(70000);
    });
    for (std::size_t cut = 0; cut < good.size(); ++cut) {
        CAPTURE(cut);
        const Bytes part(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(cut));
        CHECK_THAT(error_of(part), Catch::StartsWith("is cut short") || Catch::Contains("left in the input can hold"));
    }
    Bytes trailing = good;
    trailing.push_back(0xc0);
    CHECK(error_of(trailing) == "is followed by 1 byte of trailing data");
    CHECK(error_of({0xdd, 0xff, 0xff, 0xff, 0xff}) ==
          "is an array of 4294967295 elements, more than the 0 bytes left in the input can hold");
    CHECK(error_of({0x81, 0xa1, 'k', 0xc1}) == "starts with byte 0xc1, which msgpack never uses");
    Bytes deep(65, 0x91);
    deep.push_back(0xc0);
    CHECK(error_of(deep) == "nests arrays and maps more than 64 deep");
    deep.erase(deep.begin());
    CHECK(parsed(deep).item(0)->item(0)->type() == Type::array);  // 64 deep is fine, and so are its parts

    // Read from a Reader: the next value only, whatever follows.
    const Bytes two = {0x92, 0x01, 0x02, 0xa1, 'z'};
    gecko::wire::Reader r(two.data(), two.size());
    CHECK(Value::read(r).count() == 2);
    CHECK(Value::read(r).as_str() == "z");
    CHECK(r.at_end());
}

TEST_CASE("a map with a key twice is refused at any depth as typed reading refuses it", "[wire][value][duplicates]") {
    // What() names the path to the key, as the typed decoder does.
    const auto what_of = [](const Bytes& b) -> std::string {
        try {
            (void)parsed(b);
        } catch (const DecodeError& e) {
            return e.what();
        }
        return "accepted";
    };
    CHECK(what_of({0x82, 0xa1, 'a', 0x01, 0xa1, 'a', 0x02}) == "field 'a' appears twice in the map");
    // The same str written in two widths (fixstr, str8) is the same key.
    CHECK(what_of({0x82, 0xa1, 'a', 0x01, 0xd9, 0x01, 'a', 0x02}) == "field 'a' appears twice in the map");
    // Integers by value, whatever their width: 1 and uint16 1; -1 and int8 -1.
    CHECK(what_of({0x82, 0x01, 0xc0, 0xcd, 0x00, 0x01, 0xc0}) == "field '1' appears twice in the map");
    CHECK(what_of({0x82, 0xff, 0xc0, 0xd0, 0xff, 0xc0}) == "field '-1' appears twice in the map");
    CHECK(what_of({0x82, 0xc4, 0x01, 'b', 0x01, 0xc4, 0x01, 'b', 0x02}) == "the message has the same bin key twice");
    // Nested: in a map within an array within a map, the path says where.
    CHECK(what_of({0x81, 0xa1, 'x', 0x91, 0x82, 0xa1, 'k', 0x01, 0xa1, 'k', 0x02}) ==
          "field 'x[0].k' appears twice in the map");
    // A map used as a key is checked too.
    CHECK(what_of({0x81, 0x82, 0x01, 0x01, 0x01, 0x02, 0xc0}) == "field '1' appears twice in the map");
    // Keys that only look alike are different keys: str "1" and int 1, 1 and 1.0, str and bin.
    CHECK(what_of({0x84, 0xa1, '1', 0x01, 0x01, 0x02, 0xcb, 0x3f, 0xf0, 0, 0, 0, 0, 0, 0, 0x03, 0xc4, 0x01, '1', 0x04}) ==
          "accepted");

    // A large map (its keys sorted rather than compared pairwise): distinct
    // keys pass, one repeated key anywhere among them is found.
    const auto big = [](int n, int repeat) {
        return packed([&](auto& pk) {
            pk.pack_map(static_cast<std::uint32_t>(n));
            for (int i = 0; i < n; ++i) {
                pk.pack("key" + std::to_string(i == n - 1 && repeat >= 0 ? repeat : i));
                pk.pack(i);
            }
        });
    };
    CHECK(what_of(big(1000, -1)) == "accepted");
    CHECK(what_of(big(1000, 3)) == "field 'key3' appears twice in the map");
    CHECK(what_of(big(17, 0)) == "field 'key0' appears twice in the map");
    CHECK(what_of(big(16, 0)) == "field 'key0' appears twice in the map");

    // Read from a Reader too: the value read is checked, not what follows it.
    const Bytes two = {0x82, 0x01, 0x02, 0x01, 0x03, 0xa1, 'z'};
    gecko::wire::Reader r(two.data(), two.size());
    CHECK_THROWS_AS(Value::read(r), DecodeError);
}
