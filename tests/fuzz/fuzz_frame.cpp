// libFuzzer target for the receive path: frame header parsing, zlib inflation
// and msgpack decoding into every message family. Whatever the bytes, the
// decoder must return an error or a value: never crash, hang or over-allocate.
#include <gecko/codec.hpp>
#include <gecko/frame.hpp>
#include <gecko/msgs/all.hpp>

#include <cstdint>
#include <vector>

namespace {

template <class T>
void try_decode(const std::uint8_t* data, std::size_t size) {
    T out{};
    try {
        gecko::codec::decode(data, size, out);
    } catch (const gecko::Error&) {
        // Expected for most inputs: reported as a decode error.
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    gecko::FrameView view;
    const auto error = gecko::parse_frame(data, size, 1 << 20, view);
    const std::uint8_t* payload = data;
    std::size_t payload_size = size;
    std::vector<std::uint8_t> inflated;
    if (error == gecko::FrameError::none) {
        payload = view.body;
        payload_size = view.body_size;
        if (view.header.compressed()) {
            if (gecko::inflate_body(view, inflated) != gecko::FrameError::none) return 0;
            payload = inflated.data();
            payload_size = inflated.size();
        }
    }
    // Frames that fail the header check still exercise the payload decoders.
    try_decode<gecko::msgs::Imu>(payload, payload_size);
    try_decode<gecko::msgs::Lidar>(payload, payload_size);
    try_decode<gecko::msgs::JointState>(payload, payload_size);
    try_decode<gecko::msgs::Image>(payload, payload_size);
    try_decode<gecko::msgs::Odometry>(payload, payload_size);
    try_decode<gecko::msgs::Twist>(payload, payload_size);
    try_decode<gecko::msgs::String>(payload, payload_size);
    try_decode<gecko::msgs::Bytes>(payload, payload_size);
    return 0;
}
