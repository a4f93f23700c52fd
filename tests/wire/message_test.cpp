// The message codec (gecko/message.hpp, gecko/wire/codec.hpp): every field
// type, schema evolution both ways, the number / str / bin / nil rules,
// keys, enums, BytesView, bounds, and the error messages.

#include <catch2/catch.hpp>

#include <gecko/buffer.hpp>
#include <gecko/msgs/all.hpp>
#include <gecko/wire/codec.hpp>

#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace wt {

enum class Mode : std::uint8_t { idle = 0, driving = 3, docked = 7 };
GECKO_MSG_ENUM(Mode, idle, driving, docked)

enum class Colour { red, green };
GECKO_MSG_ENUM_NAMED(Colour, (red, "Red"), (green, "GREEN"))

/// Nested only: no type_name.
struct Inner {
    std::int32_t a = 0;
    std::string s;
    bool operator==(const Inner& o) const { return a == o.a && s == o.s; }
    GECKO_MSG_FIELDS(a, s)
};

struct Everything {
    static constexpr const char* type_name = "test.Everything";
    bool flag = false;
    std::int8_t i8 = 0;
    std::uint8_t u8 = 0;
    std::int16_t i16 = 0;
    std::uint16_t u16 = 0;
    std::int32_t i32 = 0;
    std::uint32_t u32 = 0;
    std::int64_t i64 = 0;
    std::uint64_t u64 = 0;
    float f32 = 0;
    double f64 = 0;
    std::string text;
    std::vector<std::uint8_t> blob;
    std::array<std::uint8_t, 4> tag{};
    std::vector<std::int32_t> ints;
    std::vector<std::string> words;
    std::vector<Inner> inners;
    std::vector<bool> bits;
    std::array<double, 3> xyz{};
    std::optional<double> maybe;
    std::optional<Inner> maybe_inner;
    std::map<std::string, Inner> by_name;
    std::map<std::string, std::vector<double>> series;
    Mode mode = Mode::idle;
    std::vector<Colour> colours;
    Inner inner;

    bool operator==(const Everything& o) const {
        return std::tie(flag, i8, u8, i16, u16, i32, u32, i64, u64, f32, f64, text, blob, tag, ints, words, inners,
                        bits, xyz, maybe, maybe_inner, by_name, series, mode, colours, inner) ==
               std::tie(o.flag, o.i8, o.u8, o.i16, o.u16, o.i32, o.u32, o.i64, o.u64, o.f32, o.f64, o.text, o.blob,
                        o.tag, o.ints, o.words, o.inners, o.bits, o.xyz, o.maybe, o.maybe_inner, o.by_name, o.series,
                        o.mode, o.colours, o.inner);
    }
    GECKO_MSG_FIELDS(flag, i8, u8, i16, u16, i32, u32, i64, u64, f32, f64, text, blob, tag, ints, words, inners, bits,
                     xyz, maybe, maybe_inner, by_name, series, mode, colours, inner)
};

// Two versions of one type, for schema evolution.
struct PoseV1 {
    static constexpr const char* type_name = "test.Pose";
    double x = 0, y = 0;
    GECKO_MSG_FIELDS(x, y)
};
struct PoseV2 {
    static constexpr const char* type_name = "test.Pose";
    double x = 0, y = 0;
    double theta = -1.0;               // new, with a non-zero default to tell "default" from "zeroed"
    std::vector<std::string> labels;   // new
    GECKO_MSG_FIELDS(x, y, theta, labels)
};

struct WithView {
    static constexpr const char* type_name = "test.WithView";
    std::string name;
    gecko::BytesView payload;
    GECKO_MSG_FIELDS(name, payload)
};

struct WithRoom {  // test.WithView, its payload filled after encoding
    static constexpr const char* type_name = "test.WithView";
    std::string name;
    gecko::BytesToFill payload;
    GECKO_MSG_FIELDS(name, payload)
};

struct WithBlob {
    static constexpr const char* type_name = "test.WithView";  // the same wire form as WithView
    std::string name;
    std::vector<std::uint8_t> payload;
    GECKO_MSG_FIELDS(name, payload)
};

/// A field name too long for a fixstr (32 bytes or more): keyed the general way.
struct LongName {
    static constexpr const char* type_name = "test.LongName";
    double a_field_name_of_more_than_thirty_two_bytes = 0;
    double b = 0;
    bool operator==(const LongName& o) const {
        return a_field_name_of_more_than_thirty_two_bytes == o.a_field_name_of_more_than_thirty_two_bytes && b == o.b;
    }
    GECKO_MSG_FIELDS(a_field_name_of_more_than_thirty_two_bytes, b)
};

/// A recursive type: nesting is bounded by the input, so the decoder must bound it.
struct Tree {
    static constexpr const char* type_name = "test.Tree";
    std::vector<Tree> children;
    GECKO_MSG_FIELDS(children)
};

}  // namespace wt


namespace {

using Bytes = std::vector<std::uint8_t>;
using Packer = msgpack::packer<msgpack::sbuffer>;
using gecko::wire::DecodeError;

template <class T>
Bytes wire(const T& msg) {
    gecko::Buffer out;
    gecko::wire::encode(out, msg);
    return Bytes(out.data(), out.data() + out.size());
}

/// msgpack-c's packer writes an integral float as an int: these write the float.
void float32(Packer& pk, float f) {
    std::uint32_t bits;
    std::memcpy(&bits, &f, 4);
    const char b[5] = {static_cast<char>(0xca), static_cast<char>(bits >> 24), static_cast<char>(bits >> 16),
                       static_cast<char>(bits >> 8), static_cast<char>(bits)};
    pk.pack_str_body(b, 5);
}
void float64(Packer& pk, double d) {
    std::uint64_t bits;
    std::memcpy(&bits, &d, 8);
    char b[9] = {static_cast<char>(0xcb)};
    for (int i = 0; i < 8; ++i) b[1 + i] = static_cast<char>(bits >> (56 - 8 * i));
    pk.pack_str_body(b, 9);
}

Bytes packed(const std::function<void(Packer&)>& write) {
    msgpack::sbuffer out;
    Packer pk(out);
    write(pk);
    return Bytes(out.data(), out.data() + out.size());
}

/// A one-entry map {key: value written by `value`}.
Bytes map1(const std::string& key, const std::function<void(Packer&)>& value) {
    return packed([&](Packer& pk) {
        pk.pack_map(1);
        pk.pack(key);
        value(pk);
    });
}

template <class T>
T decoded(const Bytes& b) {
    return gecko::wire::decode<T>(b.data(), b.size());
}

/// what() of the DecodeError decoding `b` into a T throws.
template <class T>
std::string error_of(const Bytes& b) {
    try {
        (void)decoded<T>(b);
    } catch (const DecodeError& e) {
        CHECK(e.code() == gecko::Errc::decode);
        return e.what();
    }
    FAIL("no DecodeError");
    return "";
}

wt::Everything rich() {
    wt::Everything e;
    e.flag = true;
    e.i8 = -128;
    e.u8 = 255;
    e.i16 = -30000;
    e.u16 = 60000;
    e.i32 = -2000000000;
    e.u32 = 4000000000u;
    e.i64 = std::numeric_limits<std::int64_t>::min();
    e.u64 = std::numeric_limits<std::uint64_t>::max();
    e.f32 = -0.0f;
    e.f64 = 1e300;
    e.text = std::string(40, 't');
    e.blob = {0, 1, 2, 255};
    e.tag = {9, 8, 7, 6};
    e.ints = {1, -1, 100000};
    e.words = {"alpha", "", "gamma"};
    e.inners = {{1, "one"}, {2, "two"}};
    e.bits = {true, false, true};
    e.xyz = {1.0, 2.0, 3.5};
    e.maybe = 2.0;
    e.maybe_inner = wt::Inner{3, "three"};
    e.by_name = {{"a", {4, "four"}}, {"b", {5, "five"}}};
    e.series = {{"s", {0.5, 1.5}}};
    e.mode = wt::Mode::docked;
    e.colours = {wt::Colour::green, wt::Colour::red};
    e.inner = {6, "six"};
    return e;
}

}  // namespace

TEST_CASE("every supported field type survives a round trip", "[wire][message]") {
    const wt::Everything in = rich();
    const Bytes bytes = wire(in);
    CHECK(decoded<wt::Everything>(bytes) == in);
    CHECK(std::signbit(decoded<wt::Everything>(bytes).f32));

    wt::Everything empties = in;  // and every field's empty / default form
    empties.maybe.reset();
    empties.maybe_inner.reset();
    empties.ints.clear();
    empties.by_name.clear();
    empties.text.clear();
    CHECK(decoded<wt::Everything>(wire(empties)) == empties);
    CHECK(decoded<wt::Everything>(wire(wt::Everything{})) == wt::Everything{});
}

TEST_CASE("the wire form of each field type", "[wire][message]") {
    const Bytes b = wire(rich());
    const msgpack::object_handle oh = msgpack::unpack(reinterpret_cast<const char*>(b.data()), b.size());
    const auto fields = oh.get().as<std::map<std::string, msgpack::object>>();
    CHECK(fields.at("flag").type == msgpack::type::BOOLEAN);
    CHECK(fields.at("u64").type == msgpack::type::POSITIVE_INTEGER);
    CHECK(fields.at("f32").type == msgpack::type::FLOAT32);
    CHECK(fields.at("f64").type == msgpack::type::FLOAT64);
    CHECK(fields.at("text").type == msgpack::type::STR);
    CHECK(fields.at("blob").type == msgpack::type::BIN);
    CHECK(fields.at("tag").type == msgpack::type::BIN);  // std::array<std::uint8_t, N> too
    CHECK(fields.at("xyz").type == msgpack::type::ARRAY);
    CHECK(fields.at("xyz").via.array.ptr[0].type == msgpack::type::FLOAT64);  // 1.0 stays a float
    CHECK(fields.at("maybe").type == msgpack::type::FLOAT64);                  // 2.0 too
    CHECK(fields.at("by_name").type == msgpack::type::MAP);
    CHECK(fields.at("mode").as<std::string>() == "docked");
    CHECK(fields.at("colours").as<std::vector<std::string>>() == std::vector<std::string>{"GREEN", "Red"});
    CHECK(fields.at("inner").type == msgpack::type::MAP);
    CHECK(wire(wt::Everything{})[0] == 0xde);  // 26 fields: a map16, keys in declaration order
}

// ---- schema evolution ----

TEST_CASE("a newer reader gives a field the older writer did not send its default", "[wire][message][evolution]") {
    const Bytes v1 = wire(wt::PoseV1{1.5, 2.5});
    wt::PoseV2 v2;
    v2.theta = 9.0;                  // a stale value from a previous message must not survive
    v2.labels = {"stale"};
    gecko::wire::decode(v1.data(), v1.size(), v2);
    CHECK(v2.x == 1.5);
    CHECK(v2.y == 2.5);
    CHECK(v2.theta == -1.0);
    CHECK(v2.labels.empty());

    const char empty_map[] = {static_cast<char>(0x80)};
    gecko::wire::decode(reinterpret_cast<const std::uint8_t*>(empty_map), 1, v2);
    CHECK(v2.x == 0.0);
    CHECK(v2.theta == -1.0);
}

TEST_CASE("an older reader skips the fields it does not know, whatever they hold", "[wire][message][evolution]") {
    wt::PoseV2 v2;
    v2.x = 3.0;
    v2.theta = 0.25;
    v2.labels = {"a", "b"};
    const wt::PoseV1 v1 = decoded<wt::PoseV1>(wire(v2));
    CHECK(v1.x == 3.0);

    const Bytes foreign = packed([](Packer& pk) {
        pk.pack_map(4);
        pk.pack(std::string("colour"));
        pk.pack_map(1);
        pk.pack(std::string("nested"));
        pk.pack(std::vector<std::vector<int>>{{1, 2}, {3}});
        pk.pack(std::string("y"));
        pk.pack(7.0);
        pk.pack(std::string("ext"));
        pk.pack_ext(2, 5);
        pk.pack_ext_body("ab", 2);
        pk.pack(std::string("x_"));  // a near miss
        pk.pack(std::string("not x"));
    });
    const wt::PoseV1 p = decoded<wt::PoseV1>(foreign);
    CHECK(p.x == 0.0);
    CHECK(p.y == 7.0);
}

TEST_CASE("keys match by name in any order", "[wire][message][evolution]") {
    const Bytes b = packed([](Packer& pk) {
        pk.pack_map(3);
        pk.pack(std::string("z"));
        pk.pack(3.5);
        pk.pack(std::string("x"));
        pk.pack(1.5);
        pk.pack(std::string("y"));
        pk.pack(2);  // an int where a double belongs: Python writes 2, not 2.0
    });
    CHECK(decoded<gecko::msgs::Vector3>(b) == gecko::msgs::Vector3{1.5, 2.0, 3.5});
}

// The decoder reads keys in declaration order while they come so (as Gecko
// writes them), and the general way from where the order breaks.
TEST_CASE("keys that leave the declared order part-way are read by name from there", "[wire][message][keys]") {
    const auto three = [](const char* k1, double v1, const char* k2, double v2, const char* k3, double v3) {
        return packed([=](Packer& pk) {
            pk.pack_map(3);
            pk.pack(std::string(k1));
            pk.pack(v1);
            pk.pack(std::string(k2));
            pk.pack(v2);
            pk.pack(std::string(k3));
            pk.pack(v3);
        });
    };
    CHECK(decoded<gecko::msgs::Vector3>(three("x", 1.5, "z", 3.5, "y", 2.5)) == gecko::msgs::Vector3{1.5, 2.5, 3.5});
    CHECK(decoded<gecko::msgs::Vector3>(three("y", 2.5, "x", 1.5, "z", 3.5)) == gecko::msgs::Vector3{1.5, 2.5, 3.5});

    // In order, then an unknown key where the last field belongs: that field is absent (its default).
    gecko::msgs::Vector3 out{9.0, 9.0, 9.0};
    const Bytes unknown = three("x", 1.5, "y", 2.5, "w", 7.0);
    gecko::wire::decode(unknown.data(), unknown.size(), out);
    CHECK(out == gecko::msgs::Vector3{1.5, 2.5, 0.0});

    // Every field in order, then more entries: an unknown one is skipped, a repeated one refused.
    const auto four = [](const char* extra) {
        return packed([=](Packer& pk) {
            pk.pack_map(4);
            for (const char* k : {"x", "y", "z", extra}) {
                pk.pack(std::string(k));
                pk.pack(1.0);
            }
        });
    };
    CHECK(decoded<gecko::msgs::Vector3>(four("w")) == gecko::msgs::Vector3{1.0, 1.0, 1.0});
    CHECK(error_of<gecko::msgs::Vector3>(four("y")) == "gecko.msgs.Vector3: field 'y' appears twice in the map");

    // A key that only starts like the expected one is another key.
    CHECK(decoded<gecko::msgs::Vector3>(three("x", 1.0, "yy", 5.0, "z", 3.0)) == gecko::msgs::Vector3{1.0, 0.0, 3.0});

    // A name too long for a fixstr, written by Gecko, read back.
    const wt::LongName l{4.5, -1.0};
    CHECK(decoded<wt::LongName>(wire(l)) == l);
    CHECK(wire(l)[1] == 0xd9);  // str8: the long name's header
}

TEST_CASE("decoding in place keeps the output's memory", "[wire][message]") {
    wt::Everything in = rich();
    in.text = std::string(100, 'x');
    in.ints.assign(1000, 7);
    const Bytes bytes = wire(in);
    wt::Everything out;
    gecko::wire::decode(bytes.data(), bytes.size(), out);
    const char* text = out.text.data();
    const std::int32_t* ints = out.ints.data();
    const wt::Inner* a = &out.by_name.at("a");
    const std::string* first_word = &out.words[0];

    in.text[0] = 'y';
    in.ints[0] = 8;
    in.by_name["a"].a = 44;
    const Bytes again = wire(in);
    gecko::wire::decode(again.data(), again.size(), out);
    CHECK(out == in);
    CHECK(out.text.data() == text);
    CHECK(out.ints.data() == ints);
    CHECK(&out.by_name.at("a") == a);  // the map node was reused
    CHECK(&out.words[0] == first_word);
}

TEST_CASE("a map decoded in place keeps the nodes of keys that come again, and only the keys given", "[wire][message]") {
    wt::Everything e;
    const auto with_keys = [](std::vector<std::string> keys) {
        wt::Everything in;
        for (const auto& k : keys) in.by_name[k] = wt::Inner{static_cast<std::int32_t>(k.size()), k};
        return wire(in);
    };
    const auto decode_into = [&e](const Bytes& b) { gecko::wire::decode(b.data(), b.size(), e); };
    const auto keys = [&e] {
        std::vector<std::string> out;
        for (const auto& [k, v] : e.by_name) {
            CHECK(v.s == k);  // each value read into its own key's node
            out.push_back(k);
        }
        return out;
    };
    decode_into(with_keys({"a", "b", "c"}));
    const wt::Inner* a = &e.by_name.at("a");
    const wt::Inner* c = &e.by_name.at("c");
    decode_into(with_keys({"a", "c"}));  // one fewer: b goes
    CHECK(keys() == std::vector<std::string>{"a", "c"});
    CHECK(&e.by_name.at("a") == a);
    CHECK(&e.by_name.at("c") == c);
    decode_into(with_keys({"a", "bb", "c"}));  // a new key between two old ones
    CHECK(keys() == std::vector<std::string>{"a", "bb", "c"});
    CHECK(&e.by_name.at("a") == a);
    CHECK(&e.by_name.at("c") == c);
    decode_into(with_keys({"c", "d"}));  // the first old key gone
    CHECK(keys() == std::vector<std::string>{"c", "d"});
    CHECK(&e.by_name.at("c") == c);
    decode_into(with_keys({}));
    CHECK(e.by_name.empty());
}

// ---- numbers ----

TEST_CASE("an integer field takes only a msgpack int that fits", "[wire][message][numbers]") {
    CHECK(decoded<gecko::msgs::Int64>(map1("data", [](Packer& pk) { pk.pack(-3); })).data == -3);
    CHECK(error_of<gecko::msgs::Int64>(map1("data", [](Packer& pk) { pk.pack_double(1.5); })) ==
          "gecko.msgs.Int64: field 'data' has msgpack type float64, expected an integer");
    CHECK(error_of<gecko::msgs::Int64>(map1("data", [](Packer& pk) { float32(pk, 2.0f); })) ==
          "gecko.msgs.Int64: field 'data' has msgpack type float32, expected an integer");
    CHECK(error_of<gecko::msgs::Int64>(map1("data", [](Packer& pk) { pk.pack(std::numeric_limits<std::uint64_t>::max()); })) ==
          "gecko.msgs.Int64: field 'data' holds 18446744073709551615, out of range for int64");
    CHECK(error_of<gecko::msgs::Image>(map1("width", [](Packer& pk) { pk.pack(-1); })) ==
          "gecko.msgs.Image: field 'width' holds -1, out of range for uint32");
    CHECK(error_of<wt::Everything>(map1("u8", [](Packer& pk) { pk.pack(256); })) ==
          "test.Everything: field 'u8' holds 256, out of range for uint8");
    CHECK(error_of<wt::Everything>(map1("flag", [](Packer& pk) { pk.pack(1); })) ==
          "test.Everything: field 'flag' has msgpack type int, expected a bool");
}

TEST_CASE("a float field takes any msgpack int or float", "[wire][message][numbers]") {
    CHECK(decoded<gecko::msgs::Float64>(map1("data", [](Packer& pk) { pk.pack(-7); })).data == -7.0);
    CHECK(decoded<gecko::msgs::Float64>(map1("data", [](Packer& pk) { pk.pack(std::numeric_limits<std::uint64_t>::max()); })).data ==
          18446744073709551615.0);
    CHECK(decoded<gecko::msgs::Float64>(map1("data", [](Packer& pk) { pk.pack_float(0.5f); })).data == 0.5);
    wt::Everything e = decoded<wt::Everything>(map1("f32", [](Packer& pk) { pk.pack_double(0.1); }));
    CHECK(e.f32 == 0.1f);
    CHECK(error_of<gecko::msgs::Float64>(map1("data", [](Packer& pk) { pk.pack(std::string("1.5")); })) ==
          "gecko.msgs.Float64: field 'data' has msgpack type str, expected a number");
    CHECK(error_of<gecko::msgs::Float64>(map1("data", [](Packer& pk) { pk.pack(true); })) ==
          "gecko.msgs.Float64: field 'data' has msgpack type bool, expected a number");
}

// ---- str, bin, nil ----

TEST_CASE("str and bin are not interchangeable", "[wire][message]") {
    CHECK(error_of<gecko::msgs::Bytes>(map1("data", [](Packer& pk) { pk.pack(std::string("text")); })) ==
          "gecko.msgs.Bytes: field 'data' has msgpack type str, expected a bin");
    CHECK(error_of<gecko::msgs::String>(map1("data", [](Packer& pk) { pk.pack(std::vector<std::uint8_t>{1}); })) ==
          "gecko.msgs.String: field 'data' has msgpack type bin, expected a str");
    CHECK(error_of<gecko::msgs::Bytes>(map1("data", [](Packer& pk) { pk.pack(std::vector<int>{1, 2}); })) ==
          "gecko.msgs.Bytes: field 'data' has msgpack type array, expected a bin");
    CHECK(error_of<wt::Everything>(map1("tag", [](Packer& pk) { pk.pack(std::vector<std::uint8_t>{1, 2}); })) ==
          "test.Everything: field 'tag' is a bin of 2 bytes, expected 4");
}

TEST_CASE("nil is a value only where the field is std::optional", "[wire][message]") {
    wt::Everything e = rich();
    const Bytes nils = packed([](Packer& pk) {
        pk.pack_map(2);
        pk.pack(std::string("maybe"));
        pk.pack_nil();
        pk.pack(std::string("maybe_inner"));
        pk.pack_nil();
    });
    gecko::wire::decode(nils.data(), nils.size(), e);
    CHECK_FALSE(e.maybe);
    CHECK_FALSE(e.maybe_inner);
    CHECK(error_of<gecko::msgs::Float64>(map1("data", [](Packer& pk) { pk.pack_nil(); })) ==
          "gecko.msgs.Float64: field 'data' has msgpack type nil, expected a number");
    CHECK(error_of<gecko::msgs::Pose>(map1("position", [](Packer& pk) { pk.pack_nil(); })) ==
          "gecko.msgs.Pose: field 'position' has msgpack type nil, expected a map (a message)");
    CHECK(error_of<gecko::msgs::String>(map1("data", [](Packer& pk) { pk.pack_nil(); })) ==
          "gecko.msgs.String: field 'data' has msgpack type nil, expected a str");
}

TEST_CASE("a std::array takes exactly its number of elements", "[wire][message]") {
    CHECK(error_of<wt::Everything>(map1("xyz", [](Packer& pk) { pk.pack(std::vector<double>{1, 2}); })) ==
          "test.Everything: field 'xyz' is an array of 2 elements, expected 3");
    CHECK(error_of<wt::Everything>(map1("xyz", [](Packer& pk) { pk.pack(std::vector<double>{1, 2, 3, 4}); })) ==
          "test.Everything: field 'xyz' is an array of 4 elements, expected 3");
}

// ---- keys ----

TEST_CASE("a message's keys are str field names", "[wire][message][keys]") {
    const Bytes int_key = packed([](Packer& pk) {
        pk.pack_map(1);
        pk.pack(42);
        pk.pack(std::string("x"));
    });
    CHECK(error_of<gecko::msgs::Vector3>(int_key) ==
          "gecko.msgs.Vector3: the message has a map key of msgpack type int, expected str field names");
    const Bytes nested = map1("position", [](Packer& pk) {
        pk.pack_map(1);
        pk.pack_nil();
        pk.pack(1.0);
    });
    CHECK(error_of<gecko::msgs::Pose>(nested) ==
          "gecko.msgs.Pose: field 'position' has a map key of msgpack type nil, expected str field names");
    const Bytes map_key = map1("by_name", [](Packer& pk) {
        pk.pack_map(1);
        pk.pack(1);
        pk.pack_map(0);
    });
    CHECK(error_of<wt::Everything>(map_key) ==
          "test.Everything: field 'by_name' has a map key of msgpack type int, expected str keys");
}

TEST_CASE("a key given twice is an error, not a silent choice", "[wire][message][keys]") {
    const Bytes twice = packed([](Packer& pk) {
        pk.pack_map(2);
        pk.pack(std::string("data"));
        pk.pack(1.0);
        pk.pack(std::string("data"));
        pk.pack(2.0);
    });
    CHECK(error_of<gecko::msgs::Float64>(twice) == "gecko.msgs.Float64: field 'data' appears twice in the map");
    const Bytes map_twice = map1("by_name", [](Packer& pk) {
        pk.pack_map(2);
        pk.pack(std::string("k"));
        pk.pack_map(0);
        pk.pack(std::string("k"));
        pk.pack_map(0);
    });
    CHECK(error_of<wt::Everything>(map_twice) == "test.Everything: field 'by_name.k' appears twice in the map");
}

// ---- enums ----

TEST_CASE("GECKO_MSG_ENUM: an enum travels as its name", "[wire][message][enum]") {
    STATIC_REQUIRE(gecko::wire::is_enum_v<wt::Mode>);
    STATIC_REQUIRE_FALSE(gecko::wire::is_enum_v<std::byte>);
    STATIC_REQUIRE(gecko::wire::enum_name(wt::Mode::driving) == "driving");
    STATIC_REQUIRE(gecko::wire::enum_name(wt::Colour::green) == "GREEN");
    STATIC_REQUIRE(gecko::wire::enum_from_name<wt::Colour>("Red") == wt::Colour::red);
    STATIC_REQUIRE_FALSE(gecko::wire::enum_from_name<wt::Colour>("red"));
    CHECK(gecko::wire::enum_name(static_cast<wt::Mode>(1)).empty());

    CHECK(decoded<wt::Everything>(map1("mode", [](Packer& pk) { pk.pack(std::string("driving")); })).mode ==
          wt::Mode::driving);
    // The number of a listed enumerator is accepted too (as in protobuf's JSON mapping).
    CHECK(decoded<wt::Everything>(map1("mode", [](Packer& pk) { pk.pack(7); })).mode == wt::Mode::docked);
}

TEST_CASE("GECKO_MSG_ENUM: unknown names and numbers are decode errors", "[wire][message][enum]") {
    CHECK(error_of<wt::Everything>(map1("mode", [](Packer& pk) { pk.pack(std::string("flying")); })) ==
          "test.Everything: field 'mode' is \"flying\", not a name of Mode (idle, driving, docked)");
    CHECK(error_of<wt::Everything>(map1("mode", [](Packer& pk) { pk.pack(std::string("Driving")); })) ==
          "test.Everything: field 'mode' is \"Driving\", not a name of Mode (idle, driving, docked)");
    CHECK(error_of<wt::Everything>(map1("mode", [](Packer& pk) { pk.pack(1); })) ==
          "test.Everything: field 'mode' is 1, not the number of a Mode enumerator");
    CHECK(error_of<wt::Everything>(map1("mode", [](Packer& pk) { float64(pk, 3.0); })) ==
          "test.Everything: field 'mode' has msgpack type float64, expected a str (a name of Mode)");
    CHECK(error_of<wt::Everything>(map1("colours", [](Packer& pk) {
              pk.pack_array(2);
              pk.pack(std::string("Red"));
              pk.pack(std::string("Blue\x01"));
          })) == "test.Everything: field 'colours[1]' is \"Blue?\", not a name of Colour (Red, GREEN)");
}

TEST_CASE("GECKO_MSG_ENUM: encoding a value that has no name throws", "[wire][message][enum]") {
    wt::Everything e;
    e.mode = static_cast<wt::Mode>(5);
    gecko::Buffer out;
    try {
        gecko::wire::encode(out, e);
        FAIL("no exception");
    } catch (const gecko::Error& error) {
        CHECK(error.code() == gecko::Errc::invalid_argument);
        CHECK_THAT(error.what(), Catch::Contains("enum Mode has no GECKO_MSG_ENUM name for value 5"));
    }
}

TEST_CASE("GECKO_MSG_ENUM enums work with msgpack-c directly", "[wire][message][enum]") {
    msgpack::sbuffer b;
    msgpack::pack(b, std::vector<wt::Mode>{wt::Mode::idle, wt::Mode::docked});
    const msgpack::object_handle oh = msgpack::unpack(b.data(), b.size());
    CHECK(oh.get().as<std::vector<std::string>>() == std::vector<std::string>{"idle", "docked"});
    CHECK(oh.get().as<std::vector<wt::Mode>>() == std::vector<wt::Mode>{wt::Mode::idle, wt::Mode::docked});
    msgpack::zone zone;
    CHECK(msgpack::object(wt::Colour::green, zone).as<std::string>() == "GREEN");
    CHECK_THROWS_AS(msgpack::object(std::string("purple"), zone).as<wt::Colour>(), msgpack::type_error);
}

// ---- BytesView ----

TEST_CASE("a BytesView field points into the decoded input, without a copy", "[wire][message][view]") {
    wt::WithBlob blob;
    blob.name = "frame";
    blob.payload.assign(5000, 0x5a);
    const Bytes bytes = wire(blob);

    const wt::WithView view = decoded<wt::WithView>(bytes);
    CHECK(view.name == "frame");
    REQUIRE(view.payload.size() == 5000);
    CHECK(view.payload.data() > bytes.data());
    CHECK(view.payload.data() + view.payload.size() == bytes.data() + bytes.size());  // the last field
    CHECK(view.payload == gecko::BytesView(blob.payload));
    CHECK(view.payload.to_vector() == blob.payload);

    CHECK(wire(view) == bytes);  // encodes as bin, like a byte vector
    CHECK(error_of<wt::WithView>(map1("payload", [](Packer& pk) { pk.pack(std::string("s")); })) ==
          "test.WithView: field 'payload' has msgpack type str, expected a bin");
    CHECK(decoded<wt::WithView>(wire(wt::WithView{})).payload.empty());
}

TEST_CASE("a BytesToFill field reserves its bytes in place, zeroed in a Buffer", "[wire][message][fill]") {
    wt::WithRoom room{"frame", gecko::BytesToFill(5000)};
    gecko::Buffer out;
    out.write("junk", 4);  // encoding appends
    gecko::wire::encode(out, room);
    REQUIRE(room.payload.data() != nullptr);
    CHECK(room.payload.data() + 5000 == out.data() + out.size());  // the last field, inside the buffer
    CHECK(room.payload.data()[0] == 0);
    CHECK(room.payload.data()[4999] == 0);
    std::memset(room.payload.data(), 0x5a, 5000);  // filled after encoding

    // The same bytes as a BytesView message holding that content.
    wt::WithBlob blob;
    blob.name = "frame";
    blob.payload.assign(5000, 0x5a);
    CHECK(Bytes(out.data() + 4, out.data() + out.size()) == wire(blob));

    // A stream that cannot reserve (msgpack-c's sbuffer) gets zeros, and no pointer.
    msgpack::sbuffer sb;
    gecko::wire::encode(sb, room);
    CHECK(room.payload.data() == nullptr);
    blob.payload.assign(5000, 0);
    CHECK(Bytes(sb.data(), sb.data() + sb.size()) == wire(blob));
}

// ---- bounds ----

TEST_CASE("nesting deeper than 64 is an error, also in a recursive type", "[wire][message][depth]") {
    auto tree = [](int depth) {
        wt::Tree root;
        wt::Tree* at = &root;
        for (int i = 1; i < depth; ++i) {
            at->children.emplace_back();
            at = &at->children.back();
        }
        return root;
    };
    // Each level is a map and an array: 32 levels is 64 containers.
    CHECK_NOTHROW(decoded<wt::Tree>(wire(tree(32))));
    CHECK_THAT(error_of<wt::Tree>(wire(tree(33))), Catch::EndsWith("nests arrays and maps more than 64 deep"));
    CHECK_THAT(error_of<wt::Tree>(wire(tree(33))), Catch::StartsWith("test.Tree: field 'children[0].children[0]."));

    Bytes deep = {0x81, 0xa1, 'q'};  // an unknown field holding [[[[...]]]]
    deep.insert(deep.end(), 1000, 0x91);
    deep.push_back(0xc0);
    CHECK(error_of<gecko::msgs::Vector3>(deep) == "gecko.msgs.Vector3: the message nests arrays and maps more than 64 deep");
}

TEST_CASE("a length beyond the input is an error before anything is allocated", "[wire][message][bounds]") {
    CHECK(error_of<gecko::msgs::JointState>({0x81, 0xa8, 'p', 'o', 's', 'i', 't', 'i', 'o', 'n', 0xdd, 0xff, 0xff,
                                             0xff, 0xff}) ==
          "gecko.msgs.JointState: field 'position' is an array of 4294967295 elements, more than the 0 bytes left in "
          "the input can hold");
    CHECK(error_of<gecko::msgs::Bytes>({0x81, 0xa4, 'd', 'a', 't', 'a', 0xc6, 0x7f, 0xff, 0xff, 0xff, 0x00}) ==
          "gecko.msgs.Bytes: field 'data' is cut short: a bin of 2147483647 bytes, only 1 left in the input");
    CHECK(error_of<gecko::msgs::Imu>({0xdf, 0xff, 0xff, 0xff, 0xff}) ==
          "gecko.msgs.Imu: the message is a map of 4294967295 entries, more than the 0 bytes left in the input can "
          "hold");
}

TEST_CASE("input cut anywhere is a DecodeError, never a crash", "[wire][message][bounds]") {
    const Bytes bytes = wire(rich());
    for (std::size_t cut = 0; cut < bytes.size(); ++cut) {
        CAPTURE(cut);
        wt::Everything out;
        CHECK_THROWS_AS(gecko::wire::decode(bytes.data(), cut, out), DecodeError);
    }
}

TEST_CASE("exactly one message: trailing bytes are an error", "[wire][message][bounds]") {
    Bytes bytes = wire(gecko::msgs::Float64{2.5});
    bytes.push_back(0xc0);
    CHECK(error_of<gecko::msgs::Float64>(bytes) ==
          "gecko.msgs.Float64: the message is followed by 1 byte of trailing data");
    CHECK(error_of<gecko::msgs::Float64>({}) ==
          "gecko.msgs.Float64: the message is cut short: the input ends where a value should start");
    CHECK(error_of<gecko::msgs::Vector3>({0x93, 0x01, 0x02, 0x03}) ==
          "gecko.msgs.Vector3: the message has msgpack type array, expected a map (a message)");
}

// ---- error paths ----

TEST_CASE("a field error names the message type and the dotted field path", "[wire][message][errors]") {
    const Bytes accel_x = map1("accel", [](Packer& pk) {
        pk.pack_map(1);
        pk.pack(std::string("x"));
        pk.pack(std::string("fast"));
    });
    try {
        (void)decoded<gecko::msgs::Imu>(accel_x);
        FAIL("no exception");
    } catch (const gecko::Error& e) {  // every decode error is a gecko::Error
        CHECK(e.code() == gecko::Errc::decode);
        CHECK(std::string(e.what()) == "gecko.msgs.Imu: field 'accel.x' has msgpack type str, expected a number");
        const auto& d = dynamic_cast<const DecodeError&>(e);
        CHECK(d.type_name() == "gecko.msgs.Imu");
        CHECK(d.path() == "accel.x");
        CHECK(d.detail() == "has msgpack type str, expected a number");
    }
    CHECK(error_of<gecko::msgs::JointState>(map1("position", [](Packer& pk) {
              pk.pack_array(2);
              pk.pack(1.0);
              pk.pack(std::string("two"));
          })) == "gecko.msgs.JointState: field 'position[1]' has msgpack type str, expected a number");
    CHECK(error_of<wt::Everything>(map1("by_name", [](Packer& pk) {
              pk.pack_map(1);
              pk.pack(std::string("robot1"));
              pk.pack_map(1);
              pk.pack(std::string("s"));
              pk.pack(5);
          })) == "test.Everything: field 'by_name.robot1.s' has msgpack type int, expected a str");
    CHECK(error_of<wt::Everything>(map1("inners", [](Packer& pk) {
              pk.pack_array(1);
              pk.pack_map(1);
              pk.pack(std::string("a"));
              pk.pack(1.5);
          })) == "test.Everything: field 'inners[0].a' has msgpack type float64, expected an integer");
}

// ---- msgpack-c's object tree ----

TEST_CASE("object.as<T>() decodes with the same rules and throws a msgpack::type_error", "[wire][message][msgpack-c]") {
    const Bytes bad = map1("data", [](Packer& pk) { pk.pack(std::string("text")); });
    const msgpack::object_handle oh = msgpack::unpack(reinterpret_cast<const char*>(bad.data()), bad.size());
    try {
        (void)oh.get().as<gecko::msgs::Bytes>();
        FAIL("no exception");
    } catch (const msgpack::type_error& e) {
        CHECK(std::string(e.what()) == "gecko.msgs.Bytes: field 'data' has msgpack type str, expected a bin");
    }
    // Floats survive the tree: -0.0 keeps its sign, 2.0 stays a float.
    const wt::Everything in = rich();
    msgpack::zone zone;
    const msgpack::object tree(in, zone);
    CHECK(tree.as<wt::Everything>() == in);
    CHECK(std::signbit(tree.as<wt::Everything>().f32));
    // Nested-only types convert too (no type_name in the message).
    const msgpack::object inner(wt::Inner{1, "x"}, zone);
    CHECK(inner.as<wt::Inner>() == wt::Inner{1, "x"});
}
