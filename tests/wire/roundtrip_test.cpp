// Every gecko.msgs type (and the lockstep envelopes) survives a round trip
// through gecko::wire, into a fresh object and over an object that held
// another value, and re-encodes to the same bytes.

#include <catch2/catch.hpp>

#include <gecko/buffer.hpp>
#include <gecko/wire/codec.hpp>

#include <cstdint>
#include <type_traits>
#include <vector>

#include "samples.hpp"

namespace {

using Bytes = std::vector<std::uint8_t>;
namespace m = gecko::msgs;
namespace mc = gecko::msgs::click;

template <class T>
Bytes wire(const T& msg) {
    gecko::Buffer out;
    gecko::wire::encode(out, msg);
    return Bytes(out.data(), out.data() + out.size());
}

template <class T, class = void>
struct has_equality : std::false_type {};
template <class T>
struct has_equality<T, std::void_t<decltype(std::declval<const T&>() == std::declval<const T&>())>> : std::true_type {};

}  // namespace

TEMPLATE_TEST_CASE("every gecko.msgs type survives a round trip through gecko::wire", "[wire][roundtrip]",  //
                   m::Point2, m::Vector3, m::Quaternion, m::Pose, m::Twist, m::Wrench, m::Imu, m::Lidar,
                   m::JointState, m::Image, m::Odometry, m::String, m::Float64, m::Int64, m::Bytes, m::Empty,
                   mc::HandshakeInit, mc::SensorRequest, mc::Control, mc::Handshake, mc::Sensor, mc::Reset, mc::Error,
                   gecko::click::Request, gecko::click::Answer) {
    STATIC_REQUIRE(gecko::wire::is_message_v<TestType>);
    const TestType in = samples::sample<TestType>();
    const Bytes bytes = wire(in);
    const Bytes defaults = wire(TestType{});
    if constexpr (!std::is_same_v<TestType, m::Empty>) REQUIRE(bytes != defaults);  // the sample is not the default

    SECTION("into a fresh object") {
        const TestType out = gecko::wire::decode<TestType>(bytes.data(), bytes.size());
        if constexpr (has_equality<TestType>::value) CHECK(out == in);
        CHECK(wire(out) == bytes);
    }
    SECTION("over an object that held another value") {
        TestType out = in;
        gecko::wire::decode(defaults.data(), defaults.size(), out);
        CHECK(wire(out) == defaults);
        gecko::wire::decode(bytes.data(), bytes.size(), out);
        if constexpr (has_equality<TestType>::value) CHECK(out == in);
        CHECK(wire(out) == bytes);
    }
    SECTION("through msgpack-c: msgpack::pack and object.as<T>()") {
        msgpack::sbuffer packed;
        msgpack::pack(packed, in);
        CHECK(Bytes(packed.data(), packed.data() + packed.size()) == bytes);
        const msgpack::object_handle oh = msgpack::unpack(packed.data(), packed.size());
        CHECK(wire(oh.get().as<TestType>()) == bytes);
        msgpack::zone zone;
        const msgpack::object tree(in, zone);
        CHECK(wire(tree.as<TestType>()) == bytes);
    }
}
