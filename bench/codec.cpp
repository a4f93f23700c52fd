// Encode/decode cost per message type with realistic contents, with memcpy
// of the same byte count as a floor (not a peer: it does no encoding at all).
// Encoding and decoding go through gecko::wire, as publishers and subscribers do.

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include <gecko/buffer.hpp>
#include <gecko/bytes_view.hpp>
#include <gecko/msgs/all.hpp>
#include <gecko/wire/codec.hpp>

#include "common.hpp"

namespace bench {
namespace {

using namespace gecko::msgs;

constexpr std::int64_t kStamp = 1732252800123456789;

Imu make_imu() {
    Imu m;
    m.stamp_ns = kStamp;
    m.frame_id = "imu_link";
    m.accel = {0.0213, -0.0471, 9.8102};
    m.gyro = {0.0012, -0.0034, 0.0101};
    m.mag = {2.1e-5, -4.3e-6, 4.4e-5};
    m.orientation = {0.9998, 0.0101, -0.0152, 0.0031};
    return m;
}

Lidar make_lidar() {
    Lidar m;
    m.stamp_ns = kStamp;
    m.frame_id = "laser";
    for (int i = 0; i < 360; ++i) {
        m.angles.push_back(static_cast<float>(i * 2.0 * M_PI / 360.0));
        m.ranges.push_back(i % 37 == 0 ? INFINITY : static_cast<float>(1.5 + 3.0 * std::sin(i * 0.05)));
    }
    return m;
}

JointState make_joint_state() {
    JointState m;
    m.stamp_ns = kStamp;
    m.frame_id = "base_link";
    for (int i = 0; i < 7; ++i) {
        m.names.push_back("panda_joint" + std::to_string(i + 1));
        m.position.push_back(0.1 * i - 0.3);
        m.velocity.push_back(0.01 * i);
        m.effort.push_back(1.5 * i + 0.25);
    }
    return m;
}

Image make_image() {
    Image m;
    m.stamp_ns = kStamp;
    m.frame_id = "camera_optical";
    m.width = 640;
    m.height = 480;
    m.encoding = "rgb8";
    m.step = 640 * 3;
    m.data.resize(static_cast<std::size_t>(m.step) * m.height);
    for (std::size_t i = 0; i < m.data.size(); ++i) m.data[i] = static_cast<std::uint8_t>((i * 7) ^ (i >> 9));
    return m;
}

Odometry make_odometry() {
    Odometry m;
    m.stamp_ns = kStamp;
    m.frame_id = "odom";
    m.child_frame_id = "base_link";
    m.pose.position = {12.25, -3.5, 0.0};
    m.pose.orientation = {0.9659, 0.0, 0.0, 0.2588};
    m.twist.linear = {0.5, 0.0, 0.0};
    m.twist.angular = {0.0, 0.0, 0.12};
    return m;
}

/// gecko.msgs.Image on the wire, read without copying the pixels: `data`
/// points into the received buffer.
struct ImageView {
    static constexpr const char* type_name = "gecko.msgs.Image";
    std::int64_t stamp_ns = 0;
    std::string frame_id;
    std::uint32_t width = 0;
    std::uint32_t height = 0;
    std::string encoding;
    std::uint32_t step = 0;
    gecko::BytesView data;

    bool operator==(const ImageView& o) const {
        return stamp_ns == o.stamp_ns && frame_id == o.frame_id && width == o.width && height == o.height &&
               encoding == o.encoding && step == o.step && data == o.data;
    }
    GECKO_MSG_FIELDS(stamp_ns, frame_id, width, height, encoding, step, data)
};

ImageView make_image_view(const Image& image) {
    ImageView m;
    m.stamp_ns = image.stamp_ns;
    m.frame_id = image.frame_id;
    m.width = image.width;
    m.height = image.height;
    m.encoding = image.encoding;
    m.step = image.step;
    m.data = gecko::BytesView(image.data);
    return m;
}

Bytes make_bytes() {
    Bytes m;
    m.data.resize(1024);
    for (std::size_t i = 0; i < m.data.size(); ++i) m.data[i] = static_cast<std::uint8_t>(i * 13);
    return m;
}

/// ns per call of `f`: batches of ~1 ms until `budget` or `max_batches`, median batch.
template <class F>
double ns_per_op(F&& f, double budget_s) {
    f();  // warm caches and buffers
    std::int64_t t0 = mono_ns();
    f();
    const std::int64_t one = std::max<std::int64_t>(mono_ns() - t0, 1);
    const std::size_t batch = static_cast<std::size_t>(std::max<std::int64_t>(1, 1000000 / one));
    std::vector<double> per_op;
    const std::int64_t end = mono_ns() + static_cast<std::int64_t>(budget_s * 1e9);
    while (per_op.size() < 5 || (mono_ns() < end && per_op.size() < 2000)) {
        t0 = mono_ns();
        for (std::size_t i = 0; i < batch; ++i) f();
        per_op.push_back(static_cast<double>(mono_ns() - t0) / static_cast<double>(batch));
    }
    return percentile(per_op, 50);
}

template <class T>
std::vector<std::string> measure(const char* label, const T& message, double budget) {
    gecko::Buffer buffer;
    gecko::wire::encode(buffer, message);
    const std::size_t size = buffer.size();
    const std::vector<std::uint8_t> encoded(buffer.data(), buffer.data() + size);

    const double encode_ns = ns_per_op(
        [&] {
            buffer.clear();
            gecko::wire::encode(buffer, message);
            do_not_optimize(buffer.data());
            clobber();
        },
        budget);

    T out{};
    const double decode_ns = ns_per_op(
        [&] {
            gecko::wire::decode(encoded.data(), encoded.size(), out);
            do_not_optimize(out);
            clobber();
        },
        budget);
    if (!(out == message)) throw Stall(std::string("codec: ") + label + " did not survive a round trip");

    std::vector<std::uint8_t> copy(size);
    const double memcpy_ns = ns_per_op(
        [&] {
            std::memcpy(copy.data(), encoded.data(), size);
            do_not_optimize(copy.data());
            clobber();
        },
        budget);

    return {label, std::to_string(size), fmt(encode_ns, encode_ns < 100 ? 1 : 0),
            fmt(decode_ns, decode_ns < 100 ? 1 : 0), fmt(memcpy_ns, memcpy_ns < 100 ? 1 : 0),
            fmt(encode_ns / memcpy_ns, 1) + "×", fmt(decode_ns / memcpy_ns, 1) + "×",
            fmt(static_cast<double>(size) / decode_ns * 1e3, 0)};
}

}  // namespace

void run_codec(const Options& options) {
    const double budget = options.quick ? 0.05 : 0.4;
    Table table;
    table.title = "Encode / decode per message (ns), memcpy of the encoded size as a floor";
    table.header = {"type",           "encoded bytes",  "encode ns",      "decode ns",
                    "memcpy ns (floor)", "encode/memcpy", "decode/memcpy", "decode MB/s"};
    table.right = {false, true, true, true, true, true, true, true};
    table.rows.push_back(measure("Imu", make_imu(), budget));
    table.rows.push_back(measure("Odometry", make_odometry(), budget));
    table.rows.push_back(measure("JointState (7 joints)", make_joint_state(), budget));
    table.rows.push_back(measure("Lidar (360 points)", make_lidar(), budget));
    table.rows.push_back(measure("Bytes (1 KiB)", make_bytes(), budget));
    const Image image = make_image();
    table.rows.push_back(measure("Image (640×480 rgb8)", image, budget));
    table.rows.push_back(measure("Image, data as BytesView", make_image_view(image), budget));
    table.notes.push_back(
        "encode = gecko::wire::encode into a reused gecko::Buffer; decode = gecko::wire::decode into a reused "
        "struct; memcpy copies the encoded byte count and is a floor, not a peer (no target applies). The "
        "BytesView row decodes the pixels without copying them (the view points into the encoded buffer).");
    table.print(options.markdown);
}

}  // namespace bench
