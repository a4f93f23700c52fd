// libFuzzer target for the one msgpack decoder (gecko/wire/reader.hpp and
// gecko/message.hpp): any bytes, decoded into several message types.
//
// Whatever the bytes, decoding must return a value or throw a
// gecko::wire::DecodeError: never crash, read out of bounds, recurse without
// bound or allocate more than the input describes. Two more properties are
// checked, and abort() when broken:
// - what decodes has a wire form that decodes again to the same bytes
//   (encode -> decode -> encode is stable);
// - decoding into an object that held an earlier message (the in-place path,
//   which reuses strings, vectors and map nodes) gives the same result as
//   decoding into a fresh one.
#include <gecko/buffer.hpp>
#include <gecko/click/lockstep_msgs.hpp>
#include <gecko/msgs/all.hpp>
#include <gecko/msgs/click.hpp>
#include <gecko/wire/codec.hpp>
#include <gecko/wire/reader.hpp>

#include <array>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace fuzz {

enum class Mode : std::int8_t { low = -1, mid = 0, high = 1 };
GECKO_MSG_ENUM(Mode, low, mid, high)

struct Inner {
    std::uint16_t n = 0;
    std::string s;
    GECKO_MSG_FIELDS(n, s)
};

/// One field of every supported kind.
struct Everything {
    static constexpr const char* type_name = "fuzz.Everything";
    bool b = false;
    std::int8_t i8 = 0;
    std::uint32_t u32 = 0;
    std::int64_t i64 = 0;
    std::uint64_t u64 = 0;
    float f = 0;
    double d = 0;
    std::string s;
    std::vector<std::uint8_t> bytes;
    gecko::BytesView view;
    std::array<std::uint8_t, 4> tag{};
    std::vector<bool> bits;
    std::array<double, 3> xyz{};
    std::vector<Inner> inners;
    std::optional<Inner> maybe;
    std::map<std::string, std::vector<Inner>> groups;
    Mode mode = Mode::mid;
    std::vector<Mode> modes;
    GECKO_MSG_FIELDS(b, i8, u32, i64, u64, f, d, s, bytes, view, tag, bits, xyz, inners, maybe, groups, mode, modes)
};

/// Recursive: only the decoder's depth limit bounds it.
struct Tree {
    static constexpr const char* type_name = "fuzz.Tree";
    std::vector<Tree> children;
    std::optional<std::string> label;
    GECKO_MSG_FIELDS(children, label)
};

template <class T>
void encode_into(gecko::Buffer& out, const T& message) {
    out.clear();
    gecko::wire::encode(out, message);
}

template <class T>
void check(const std::uint8_t* data, std::size_t size) {
    T fresh{};
    bool decoded = true;
    try {
        gecko::wire::decode(data, size, fresh);
    } catch (const gecko::wire::DecodeError&) {
        decoded = false;
    }

    static T reused{};  // whatever earlier inputs left in it
    bool decoded_in_place = true;
    try {
        gecko::wire::decode(data, size, reused);
    } catch (const gecko::wire::DecodeError&) {
        decoded_in_place = false;
    }
    if (decoded != decoded_in_place) std::abort();
    if (!decoded) return;

    static gecko::Buffer first, second, third;
    encode_into(first, fresh);
    encode_into(third, reused);
    T again{};
    gecko::wire::decode(first.data(), first.size(), again);  // a wire form must decode: throwing aborts
    encode_into(second, again);
    if (first.size() != second.size() || std::memcmp(first.data(), second.data(), first.size()) != 0) std::abort();
    if (first.size() != third.size() || std::memcmp(first.data(), third.data(), first.size()) != 0) std::abort();
}

}  // namespace fuzz

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    {
        gecko::wire::Reader reader(data, size);
        try {
            reader.skip();
        } catch (const gecko::wire::DecodeError&) {
        }
    }
    fuzz::check<fuzz::Everything>(data, size);
    fuzz::check<fuzz::Tree>(data, size);
    fuzz::check<gecko::msgs::Imu>(data, size);
    fuzz::check<gecko::msgs::Lidar>(data, size);
    fuzz::check<gecko::msgs::JointState>(data, size);
    fuzz::check<gecko::msgs::Image>(data, size);
    fuzz::check<gecko::msgs::Odometry>(data, size);
    fuzz::check<gecko::msgs::Bytes>(data, size);
    fuzz::check<gecko::msgs::click::Handshake>(data, size);
    fuzz::check<gecko::msgs::click::Sensor>(data, size);
    fuzz::check<gecko::msgs::click::Control>(data, size);
    fuzz::check<gecko::click::Request>(data, size);
    fuzz::check<gecko::click::Answer>(data, size);
    return 0;
}
