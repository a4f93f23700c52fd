// The message types (gecko/msgs/*.hpp) and the gecko::msgs codec names
// (codec.hpp, forwarders to gecko::wire): round trips, the self-describing
// wire form, compatibility with plain msgpack-c, bad input. The codec's own
// rules (numbers, str/bin, keys, enums, bounds, golden bytes) are tested in
// tests/wire.

#include <catch2/catch.hpp>

#include <gecko/msgs/all.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <set>
#include <type_traits>
#include <string>
#include <vector>

namespace msgs = gecko::msgs;

namespace {

// ---- non-default samples of every type ----

msgs::Point2 sample(msgs::Point2*) { return {1.5, -2.25}; }
msgs::Vector3 sample(msgs::Vector3*) { return {0.1, -0.2, 9.81}; }
msgs::Quaternion sample(msgs::Quaternion*) { return {0.5, 0.5, -0.5, 0.5}; }
msgs::Pose sample(msgs::Pose*) { return {{1.0, 2.0, 3.0}, {0.0, 1.0, 0.0, 0.0}}; }
msgs::Twist sample(msgs::Twist*) { return {{0.5, 0.0, 0.0}, {0.0, 0.0, -0.3}}; }
msgs::Wrench sample(msgs::Wrench*) { return {{10.0, 0.0, -9.5}, {0.1, 0.2, 0.3}}; }

msgs::Imu sample(msgs::Imu*) {
    msgs::Imu m;
    m.stamp_ns = 1700000000123456789;
    m.frame_id = "imu_link";
    m.accel = {0.11, -0.02, 9.81};
    m.gyro = {0.01, 0.02, -0.03};
    m.mag = {2.1e-5, 3.3e-6, -4.2e-5};
    m.orientation = {0.99, 0.01, 0.02, 0.03};
    return m;
}

msgs::Lidar sample(msgs::Lidar*) {
    msgs::Lidar m;
    m.stamp_ns = -42;  // negative stamps (before the epoch / sim start) are legal
    m.frame_id = "laser";
    for (int i = 0; i < 360; ++i) {
        m.angles.push_back(static_cast<float>(i) * 0.0174533f);
        m.ranges.push_back(i % 7 == 0 ? std::numeric_limits<float>::infinity() : 0.5f + static_cast<float>(i) * 0.01f);
    }
    return m;
}

msgs::JointState sample(msgs::JointState*) {
    msgs::JointState m;
    m.stamp_ns = 123;
    m.frame_id = "base";
    m.names = {"hip", "knee", "ankle"};
    m.position = {0.1, -1.2, 0.7};
    m.velocity = {0.0, 0.5, -0.5};
    m.effort = {1.5, 20.0, -3.25};
    return m;
}

msgs::Image sample(msgs::Image*) {
    msgs::Image m;
    m.stamp_ns = 99;
    m.frame_id = "camera";
    m.width = 4;
    m.height = 3;
    m.encoding = "rgb8";
    m.step = 12;
    for (int i = 0; i < 36; ++i) m.data.push_back(static_cast<std::uint8_t>(i * 7));
    return m;
}

msgs::Odometry sample(msgs::Odometry*) {
    msgs::Odometry m;
    m.stamp_ns = 5;
    m.frame_id = "odom";
    m.child_frame_id = "base_link";
    m.pose = {{1.0, 2.0, 0.0}, {0.7071, 0.0, 0.0, 0.7071}};
    m.twist = {{0.3, 0.0, 0.0}, {0.0, 0.0, 0.1}};
    return m;
}

msgs::String sample(msgs::String*) { return {"héllo, gecko"}; }
msgs::Float64 sample(msgs::Float64*) { return {-3.5}; }
msgs::Int64 sample(msgs::Int64*) { return {std::numeric_limits<std::int64_t>::min()}; }
msgs::Bytes sample(msgs::Bytes*) { return {{0x00, 0xff, 0x10, 0x80}}; }
msgs::Empty sample(msgs::Empty*) { return {}; }

template <class T>
T sample() {
    return sample(static_cast<T*>(nullptr));
}

std::vector<char> encode_to_vector(const msgpack::sbuffer& b) { return std::vector<char>(b.data(), b.data() + b.size()); }

template <class T>
std::vector<char> wire(const T& msg) {
    return encode_to_vector(msgs::encode(msg));
}

/// Keys of a msgpack map, in wire order.
std::vector<std::string> keys_of(const msgpack::object& o) {
    REQUIRE(o.type == msgpack::type::MAP);
    std::vector<std::string> keys;
    for (std::uint32_t i = 0; i < o.via.map.size; ++i) {
        REQUIRE(o.via.map.ptr[i].key.type == msgpack::type::STR);
        keys.push_back(o.via.map.ptr[i].key.as<std::string>());
    }
    return keys;
}

const msgpack::object& value_of(const msgpack::object& map, const std::string& key) {
    for (std::uint32_t i = 0; i < map.via.map.size; ++i) {
        if (map.via.map.ptr[i].key.as<std::string>() == key) return map.via.map.ptr[i].val;
    }
    FAIL("no key " << key);
    throw;  // not reached
}

// The same shape declared the msgpack-c way, to check wire compatibility with plain msgpack-c users.
struct PlainVector3 {
    double x = 0, y = 0, z = 0;
    MSGPACK_DEFINE_MAP(x, y, z)
};

}  // namespace

#define GECKO_ALL_MSG_TYPES                                                                                    \
    msgs::Point2, msgs::Vector3, msgs::Quaternion, msgs::Pose, msgs::Twist, msgs::Wrench, msgs::Imu, msgs::Lidar, \
        msgs::JointState, msgs::Image, msgs::Odometry, msgs::String, msgs::Float64, msgs::Int64, msgs::Bytes,   \
        msgs::Empty

TEMPLATE_TEST_CASE("every message type survives a msgpack round trip", "[msgs][codec]", GECKO_ALL_MSG_TYPES) {
    const TestType in = sample<TestType>();
    if constexpr (!std::is_same_v<TestType, msgs::Empty>) {
        REQUIRE(in != TestType{});  // the sample really exercises non-default values
    }
    const std::vector<char> bytes = wire(in);

    SECTION("into a fresh object") {
        TestType out = msgs::decode<TestType>(bytes.data(), bytes.size());
        CHECK(out == in);
        CHECK_FALSE(out != in);
    }
    SECTION("into an object that held another value") {
        TestType out = in;
        const std::vector<char> defaults = wire(TestType{});
        msgs::decode(defaults.data(), defaults.size(), out);
        CHECK(out == TestType{});
        msgs::decode(bytes.data(), bytes.size(), out);
        CHECK(out == in);
    }
    SECTION("through msgpack::object (msgpack_object and msgpack_unpack)") {
        msgpack::zone zone;
        const msgpack::object obj(in, zone);
        CHECK(obj.as<TestType>() == in);
    }
    SECTION("through plain msgpack-c unpack and convert") {
        const msgpack::object_handle oh = msgpack::unpack(bytes.data(), bytes.size());
        CHECK(oh.get().as<TestType>() == in);
    }
}

TEMPLATE_TEST_CASE("every message type puts its member names on the wire as map keys", "[msgs][codec]",
                   GECKO_ALL_MSG_TYPES) {
    const std::vector<char> bytes = wire(sample<TestType>());
    const msgpack::object_handle oh = msgpack::unpack(bytes.data(), bytes.size());
    std::vector<std::string> expected;
    for (auto name : TestType::gecko_field_names) expected.emplace_back(name);
    CHECK(keys_of(oh.get()) == expected);
}

TEST_CASE("an Imu is a map of named fields with nested maps for vectors", "[msgs][codec]") {
    const std::vector<char> bytes = wire(sample<msgs::Imu>());
    const msgpack::object_handle oh = msgpack::unpack(bytes.data(), bytes.size());
    const msgpack::object& root = oh.get();

    CHECK(keys_of(root) == std::vector<std::string>{"stamp_ns", "frame_id", "accel", "gyro", "mag", "orientation"});
    CHECK(keys_of(value_of(root, "accel")) == std::vector<std::string>{"x", "y", "z"});
    CHECK(keys_of(value_of(root, "orientation")) == std::vector<std::string>{"w", "x", "y", "z"});
    CHECK(value_of(root, "frame_id").as<std::string>() == "imu_link");
    CHECK(value_of(value_of(root, "accel"), "z").as<double>() == 9.81);
}

TEST_CASE("each field of an Imu takes part in ==", "[msgs]") {
    const msgs::Imu a = sample<msgs::Imu>();
    msgs::Imu b = a;
    REQUIRE(a == b);
    SECTION("stamp_ns") { b.stamp_ns += 1; }
    SECTION("frame_id") { b.frame_id += "x"; }
    SECTION("accel") { b.accel.x += 1; }
    SECTION("gyro") { b.gyro.y += 1; }
    SECTION("mag") { b.mag.z += 1; }
    SECTION("orientation") { b.orientation.w += 1; }
    CHECK(a != b);
    CHECK_FALSE(a == b);
}

TEST_CASE("a Quaternion defaults to the identity rotation", "[msgs]") {
    const msgs::Quaternion q;
    CHECK(q.w == 1.0);
    CHECK(q.x == 0.0);
    CHECK(q.y == 0.0);
    CHECK(q.z == 0.0);
    CHECK(msgs::Imu{}.orientation == q);
}

TEST_CASE("message types are recognised and carry stable gecko.msgs names", "[msgs][traits]") {
    STATIC_REQUIRE(msgs::is_message_v<msgs::Imu>);
    STATIC_REQUIRE(msgs::is_message_v<msgs::Empty>);
    STATIC_REQUIRE_FALSE(msgs::is_message_v<int>);
    STATIC_REQUIRE_FALSE(msgs::is_message_v<PlainVector3>);
    CHECK(std::string(msgs::type_name_of<msgs::Imu>()) == "gecko.msgs.Imu");
    CHECK(std::string(msgs::type_name_of<msgs::Bytes>()) == "gecko.msgs.Bytes");

    const std::vector<std::string> names = {
        msgs::type_name_of<msgs::Point2>(),   msgs::type_name_of<msgs::Vector3>(), msgs::type_name_of<msgs::Quaternion>(),
        msgs::type_name_of<msgs::Pose>(),     msgs::type_name_of<msgs::Twist>(),   msgs::type_name_of<msgs::Wrench>(),
        msgs::type_name_of<msgs::Imu>(),      msgs::type_name_of<msgs::Lidar>(),   msgs::type_name_of<msgs::JointState>(),
        msgs::type_name_of<msgs::Image>(),    msgs::type_name_of<msgs::Odometry>(), msgs::type_name_of<msgs::String>(),
        msgs::type_name_of<msgs::Float64>(),  msgs::type_name_of<msgs::Int64>(),   msgs::type_name_of<msgs::Bytes>(),
        msgs::type_name_of<msgs::Empty>()};
    CHECK(std::set<std::string>(names.begin(), names.end()).size() == names.size());
    for (const auto& n : names) CHECK(n.rfind("gecko.msgs.", 0) == 0);
}

// ---- schema evolution through the gecko::msgs names ----

TEST_CASE("an Imu without mag (an older writer) decodes with mag at its default", "[msgs][codec][evolution]") {
    msgpack::sbuffer buf;
    msgpack::packer<msgpack::sbuffer> pk(buf);
    pk.pack_map(2);
    pk.pack(std::string("frame_id"));
    pk.pack(std::string("imu"));
    pk.pack(std::string("future_field"));  // a newer writer's field: skipped
    pk.pack(std::vector<int>{1, 2, 3});

    msgs::Imu imu = sample<msgs::Imu>();  // stale values must not survive
    msgs::decode(buf.data(), buf.size(), imu);
    CHECK(imu.frame_id == "imu");
    CHECK(imu.mag == msgs::Vector3{});
    CHECK(imu.orientation == msgs::Quaternion{});
    CHECK(imu.stamp_ns == 0);
}

TEST_CASE("an empty map decodes to the type's defaults, overwriting what was there", "[msgs][codec][evolution]") {
    const char empty_map[] = {static_cast<char>(0x80)};
    msgs::Imu imu = sample<msgs::Imu>();
    msgs::decode(empty_map, sizeof empty_map, imu);
    CHECK(imu == msgs::Imu{});
    CHECK(imu.orientation.w == 1.0);
}

TEST_CASE("messages are wire-compatible with MSGPACK_DEFINE_MAP types", "[msgs][codec]") {
    const msgs::Vector3 ours{1.25, -2.5, 4.0};
    const std::vector<char> bytes = wire(ours);
    const PlainVector3 theirs = msgpack::unpack(bytes.data(), bytes.size()).get().as<PlainVector3>();
    CHECK(theirs.x == 1.25);
    CHECK(theirs.y == -2.5);
    CHECK(theirs.z == 4.0);

    msgpack::sbuffer back;
    msgpack::pack(back, PlainVector3{7.5, 8.5, 9.5});
    CHECK(msgs::decode<msgs::Vector3>(back.data(), back.size()) == msgs::Vector3{7.5, 8.5, 9.5});
}

TEST_CASE("encode into a msgpack-c packer writes the same bytes", "[msgs][codec]") {
    msgpack::sbuffer buf;
    msgpack::packer<msgpack::sbuffer> pk(buf);
    msgs::encode(pk, sample<msgs::Imu>());
    CHECK(encode_to_vector(buf) == wire(sample<msgs::Imu>()));
}

// ---- number and byte encodings ----

TEST_CASE("byte vectors travel as msgpack bin", "[msgs][codec]") {
    const msgs::Bytes b{{0x01, 0x02, 0xff}};
    const std::vector<char> bytes = wire(b);
    // fixmap(1), fixstr "data", bin8 of length 3, the bytes
    const std::vector<unsigned char> expected = {0x81, 0xa4, 'd', 'a', 't', 'a', 0xc4, 0x03, 0x01, 0x02, 0xff};
    CHECK(std::vector<unsigned char>(bytes.begin(), bytes.end()) == expected);

    const std::vector<char> image = wire(sample<msgs::Image>());
    const msgpack::object_handle ih = msgpack::unpack(image.data(), image.size());
    CHECK(value_of(ih.get(), "data").type == msgpack::type::BIN);
}

TEST_CASE("a decoded byte payload owns its memory, not the input buffer's", "[msgs][codec]") {
    msgs::Bytes in;
    in.data.resize(1 << 20);
    for (std::size_t i = 0; i < in.data.size(); ++i) in.data[i] = static_cast<std::uint8_t>(i * 31);
    const msgpack::sbuffer encoded = msgs::encode(in);

    auto input = std::make_unique<char[]>(encoded.size());
    std::memcpy(input.get(), encoded.data(), encoded.size());
    msgs::Bytes out;
    msgs::decode(input.get(), encoded.size(), out);
    std::memset(input.get(), 0, encoded.size());  // scribble over the input, then free it
    input.reset();

    CHECK(out == in);
}

TEST_CASE("floating-point fields stay floats on the wire, even when integral", "[msgs][codec]") {
    // msgpack-c 4.x would write 1.0 as the integer 1 and -0.0 as 0.
    const std::vector<char> one = wire(msgs::Float64{1.0});
    CHECK(static_cast<unsigned char>(one[6]) == 0xcb);  // after fixmap(1) + fixstr "data"
    CHECK(one.size() == 6 + 9);

    const std::vector<char> neg_zero = wire(msgs::Float64{-0.0});
    CHECK(std::signbit(msgs::decode<msgs::Float64>(neg_zero.data(), neg_zero.size()).data));

    const auto nan = wire(msgs::Float64{std::numeric_limits<double>::quiet_NaN()});
    CHECK(std::isnan(msgs::decode<msgs::Float64>(nan.data(), nan.size()).data));

    msgs::Lidar scan;
    scan.ranges = {1.0f, 2.0f};
    const std::vector<char> bytes = wire(scan);
    const msgpack::object_handle oh = msgpack::unpack(bytes.data(), bytes.size());
    const msgpack::object& ranges = value_of(oh.get(), "ranges");
    REQUIRE(ranges.type == msgpack::type::ARRAY);
    REQUIRE(ranges.via.array.size == 2);
    CHECK(ranges.via.array.ptr[0].type == msgpack::type::FLOAT32);
    CHECK(ranges.via.array.ptr[1].type == msgpack::type::FLOAT32);

    const std::vector<char> seven = wire(msgs::Int64{7});
    const msgpack::object_handle ih = msgpack::unpack(seven.data(), seven.size());
    CHECK(value_of(ih.get(), "data").type == msgpack::type::POSITIVE_INTEGER);
}

TEST_CASE("large float arrays round trip exactly", "[msgs][codec]") {
    msgs::JointState js;
    for (int i = 0; i < 1000; ++i) {
        js.names.push_back("j" + std::to_string(i));
        js.position.push_back(i * 0.001 - 0.5);
        js.velocity.push_back(-i * 1e-9);
        js.effort.push_back(i);
    }
    const std::vector<char> bytes = wire(js);
    CHECK(msgs::decode<msgs::JointState>(bytes.data(), bytes.size()) == js);
}

// ---- bad input: one error type, gecko::Error with Errc::decode ----

TEST_CASE("a field of the wrong msgpack type is a decode error naming the field", "[msgs][codec][bad_input]") {
    msgpack::sbuffer buf;
    msgpack::packer<msgpack::sbuffer> pk(buf);
    auto error_of = [&](auto* type) {
        using T = std::remove_pointer_t<decltype(type)>;
        try {
            (void)msgs::decode<T>(buf.data(), buf.size());
        } catch (const gecko::Error& e) {
            CHECK(e.code() == gecko::Errc::decode);
            return std::string(e.what());
        }
        FAIL("no exception");
        return std::string();
    };

    SECTION("a number where a string belongs") {
        pk.pack_map(1);
        pk.pack(std::string("frame_id"));
        pk.pack(12);
        CHECK(error_of(static_cast<msgs::Imu*>(nullptr)) ==
              "gecko.msgs.Imu: field 'frame_id' has msgpack type int, expected a str");
    }
    SECTION("a string deep inside a nested message") {
        pk.pack_map(1);
        pk.pack(std::string("accel"));
        pk.pack_map(1);
        pk.pack(std::string("x"));
        pk.pack(std::string("fast"));
        CHECK(error_of(static_cast<msgs::Imu*>(nullptr)) ==
              "gecko.msgs.Imu: field 'accel.x' has msgpack type str, expected a number");
    }
    SECTION("a number where a nested message belongs") {
        pk.pack_map(1);
        pk.pack(std::string("pose"));
        pk.pack(1.5);
        CHECK(error_of(static_cast<msgs::Odometry*>(nullptr)) ==
              "gecko.msgs.Odometry: field 'pose' has msgpack type float64, expected a map (a message)");
    }
    SECTION("a float where an integer belongs") {
        pk.pack_map(1);
        pk.pack(std::string("stamp_ns"));
        pk.pack(1.5);
        CHECK(error_of(static_cast<msgs::Imu*>(nullptr)) ==
              "gecko.msgs.Imu: field 'stamp_ns' has msgpack type float64, expected an integer");
    }
    SECTION("an integer too large for the field") {
        pk.pack_map(1);
        pk.pack(std::string("stamp_ns"));
        pk.pack(std::numeric_limits<std::uint64_t>::max());
        CHECK(error_of(static_cast<msgs::Imu*>(nullptr)) ==
              "gecko.msgs.Imu: field 'stamp_ns' holds 18446744073709551615, out of range for int64");
    }
    SECTION("a string inside a float array") {
        pk.pack_map(1);
        pk.pack(std::string("position"));
        pk.pack_array(2);
        pk.pack(1.0);
        pk.pack(std::string("two"));
        CHECK(error_of(static_cast<msgs::JointState*>(nullptr)) ==
              "gecko.msgs.JointState: field 'position[1]' has msgpack type str, expected a number");
    }
    SECTION("a str where bin belongs") {
        pk.pack_map(1);
        pk.pack(std::string("data"));
        pk.pack(std::string("text"));
        CHECK(error_of(static_cast<msgs::Bytes*>(nullptr)) ==
              "gecko.msgs.Bytes: field 'data' has msgpack type str, expected a bin");
    }
    SECTION("an array where the message's map belongs") {
        pk.pack(std::vector<double>{1.0, 2.0, 3.0});
        CHECK(error_of(static_cast<msgs::Vector3*>(nullptr)) ==
              "gecko.msgs.Vector3: the message has msgpack type array, expected a map (a message)");
    }
    SECTION("nil where a number belongs") {
        pk.pack_map(1);
        pk.pack(std::string("data"));
        pk.pack_nil();
        CHECK(error_of(static_cast<msgs::Float64*>(nullptr)) ==
              "gecko.msgs.Float64: field 'data' has msgpack type nil, expected a number");
    }
}

TEST_CASE("truncated msgpack throws at every cut, never crashes", "[msgs][codec][bad_input]") {
    const std::vector<char> bytes = wire(sample<msgs::Odometry>());
    for (std::size_t cut = 0; cut < bytes.size(); ++cut) {
        INFO("cut at " << cut << " of " << bytes.size());
        msgs::Odometry out;
        CHECK_THROWS_AS(msgs::decode(bytes.data(), cut, out), gecko::wire::DecodeError);
    }
}

TEST_CASE("malformed msgpack is a decode error", "[msgs][codec][bad_input]") {
    auto decode_bytes = [](std::vector<unsigned char> b) {
        msgs::Imu out;
        msgs::decode(b.data(), b.size(), out);
    };
    SECTION("trailing bytes after the message") {
        std::vector<char> bytes = wire(msgs::Float64{2.5});
        bytes.push_back(0x00);
        CHECK_THROWS_WITH(msgs::decode<msgs::Float64>(bytes.data(), bytes.size()),
                          "gecko.msgs.Float64: the message is followed by 1 byte of trailing data");
    }
    SECTION("a byte that is never valid msgpack") {
        CHECK_THROWS_WITH(decode_bytes({0xc1}), "gecko.msgs.Imu: the message starts with byte 0xc1, which msgpack never uses");
    }
    SECTION("a map claiming four billion entries in five bytes") {
        CHECK_THROWS_AS(decode_bytes({0xdf, 0xff, 0xff, 0xff, 0xff}), gecko::wire::DecodeError);
    }
    SECTION("an array claiming four billion elements in five bytes") {
        CHECK_THROWS_AS(decode_bytes({0x81, 0xa4, 'd', 'a', 't', 'a', 0xdd, 0xff, 0xff, 0xff, 0xff}),
                        gecko::wire::DecodeError);
    }
    SECTION("a bin claiming more bytes than there are") {
        CHECK_THROWS_AS(decode_bytes({0x81, 0xa4, 'd', 'a', 't', 'a', 0xc6, 0x7f, 0xff, 0xff, 0xff, 0x00}),
                        gecko::wire::DecodeError);
    }
    SECTION("nesting deeper than max_decode_depth") {
        std::vector<unsigned char> deep = {0x81, 0xa4, 'd', 'a', 't', 'a'};
        deep.insert(deep.end(), 1000, 0x91);  // [[[[...]]]]
        deep.push_back(0xc0);
        CHECK_THROWS_AS(decode_bytes(deep), gecko::wire::DecodeError);
        STATIC_REQUIRE(msgs::max_decode_depth == 64);
    }
    SECTION("no bytes at all") { CHECK_THROWS_AS(decode_bytes({}), gecko::wire::DecodeError); }
}
