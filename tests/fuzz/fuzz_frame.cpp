// libFuzzer target for everything a node or geckocore parses from the
// network: the data frame header (v2), zlib inflation, the message payload
// into every message family, control frames, subscriber announcements,
// discovery messages (with the registrations, directory entries and schemas
// they carry), and a payload checked against a schema. Whatever the bytes,
// each decoder must return an error or a value: never crash, hang or
// over-allocate. A discovery datagram is also checked for a seal
// (docs/SECURITY.md §6), and the input's bytes sealed into an announcement
// reach the checks a forger cannot (time window, replay memory).
#include <gecko/message.hpp>
#include <gecko/net/datagram_seal.hpp>
#include <gecko/msgs/all.hpp>
#include <gecko/wire/announcement.hpp>
#include <gecko/wire/control.hpp>
#include <gecko/wire/discovery.hpp>
#include <gecko/wire/frame.hpp>
#include <gecko/wire/schema.hpp>
#include <gecko/wire/schema_of.hpp>

#include <cstdint>
#include <cstring>
#include <memory>
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

const std::shared_ptr<const gecko::net::DatagramKey>& fuzz_key() {
    static const auto key = [] {
        // docs/SECURITY.md §3's subkey 3 of the secret 0, 1, ..., 31: the seed sealed_announce.bin is authentic.
        static const char hex[] = "1a48fac296161c7c96cae0fb8371d0be5998cf7d139acf0c91bb94f6f28acf47";
        auto k = std::make_shared<gecko::net::DatagramKey>();
        for (std::size_t i = 0; i < k->mac_key.size(); ++i)
            k->mac_key[i] = static_cast<std::uint8_t>(std::stoi(std::string(hex + 2 * i, 2), nullptr, 16));
        k->fingerprint = "b7bab9d6740a8a76";
        return std::shared_ptr<const gecko::net::DatagramKey>(k);
    }();
    return key;
}

// The datagram as a reader of a secured key checks it, then the input's
// bytes sealed into an announcement and checked at a time they choose.
void check_seals(const std::uint8_t* data, std::size_t size, const gecko::discovery::Message& m) {
    static gecko::net::DatagramGuard guard(fuzz_key());  // its replay memory lives across inputs, as a node's does
    constexpr std::int64_t now = 1800000000000;
    (void)guard.check(reinterpret_cast<const char*>(data), size, m, now);
    if (size < 18) return;
    std::int64_t ts = 0, skew = 0;
    std::uint64_t nonce = 0;
    std::memcpy(&ts, data, 8);
    std::memcpy(&nonce, data + 8, 8);
    skew = static_cast<std::int16_t>(data[16] | (data[17] << 8)) * 1000;
    gecko::discovery::Writer w("announce", 1 + gecko::net::sealed_fields);
    w.kv("key", std::string(reinterpret_cast<const char*>(data + 18), std::min<std::size_t>(size - 18, 256)));
    gecko::net::seal(w, *fuzz_key(), ts, nonce);
    if (const auto sealed = gecko::discovery::Message::parse(w.data(), w.size(), nullptr))
        (void)guard.check(w.data(), w.size(), *sealed, (ts < 0 ? 0 : ts) + skew);
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
        check_seals(data, size, *m);
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
