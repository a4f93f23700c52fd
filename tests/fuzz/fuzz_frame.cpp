// libFuzzer target for everything a node or geckocore parses from the
// network: the data frame header (v2), zlib inflation, the message payload
// into every message family, control frames, subscriber announcements,
// discovery messages (with the registrations, directory entries and schemas
// they carry), and a payload checked against a schema. Whatever the bytes,
// each decoder must return an error or a value: never crash, hang or
// over-allocate.
#include <gecko/message.hpp>
#include <gecko/msgs/all.hpp>
#include <gecko/wire/announcement.hpp>
#include <gecko/wire/control.hpp>
#include <gecko/wire/discovery.hpp>
#include <gecko/wire/frame.hpp>
#include <gecko/wire/schema.hpp>
#include <gecko/wire/schema_of.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace {

template <class T>
void try_decode(const std::uint8_t* data, std::size_t size) {
    T out{};
    try {
        gecko::wire::decode(data, size, out);
    } catch (const gecko::Error&) {
        // Expected for most inputs: reported as a decode error.
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    namespace wire = gecko::wire;
    wire::FrameView view;
    const auto error = wire::parse_frame(data, size, 1 << 20, view);
    const std::uint8_t* payload = data;
    std::size_t payload_size = size;
    std::vector<std::uint8_t> inflated;
    if (error == wire::FrameError::none) {
        payload = view.body;
        payload_size = view.body_size;
        if (view.header.compressed()) {
            if (wire::inflate_body(view, inflated) != wire::FrameError::none) return 0;
            payload = inflated.data();
            payload_size = inflated.size();
        }
        if (view.header.flags & wire::frame_flags::control) (void)wire::parse_control(payload, payload_size);
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
    (void)wire::parse_control(data, size);
    (void)wire::parse_announcement(std::string_view(reinterpret_cast<const char*>(data), size));
    std::string why;
    if (const auto m = gecko::discovery::Message::parse(reinterpret_cast<const char*>(data), size, &why)) {
        // What geckocore and nodes read out of a discovery message.
        (void)gecko::discovery::read_registration(m->root());
        if (const auto channels = gecko::discovery::find(m->root(), "channels"))
            for (const wire::Value& item : channels->items()) (void)gecko::discovery::read_channel_entry(item);
        if (const auto schema = gecko::discovery::find(m->root(), "schema")) {
            try {
                const auto s = wire::Schema::decode(*schema);
                for (const auto& t : s.types()) (void)s.check(t.type_name, payload, payload_size, wire::Schema::Check::strict);
            } catch (const gecko::Error&) {
                // Expected for most inputs.
            }
        }
    }
    try {
        (void)wire::Schema::decode(data, size);
    } catch (const gecko::Error&) {
    }
    // A schema a publisher declared, checking whatever a peer sent.
    static const wire::Schema odometry = wire::schema_of<gecko::msgs::Odometry>();
    (void)odometry.check("gecko.msgs.Odometry", payload, payload_size, wire::Schema::Check::as_receiver);
    return 0;
}
