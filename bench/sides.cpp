#include "sides.hpp"

#include "iceoryx.hpp"

#include <cstring>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include <zmq.hpp>

#include <gecko/gecko.hpp>
#include <gecko/msgs/std.hpp>
#include <gecko/net/zap_handler.hpp>
#include <gecko/net/zmq_socket.hpp>
#include <gecko/security/key_security.hpp>

namespace bench {
namespace {

std::uint64_t read_tag(const void* data, std::size_t size) {
    std::uint64_t tag = 0;
    if (size >= sizeof tag) std::memcpy(&tag, data, sizeof tag);
    return tag;
}

// gecko.msgs.Bytes with its bytes read in place (a BytesView): the typed
// layer's way to large payloads (MessageView keeps the frame, no copy out).
struct BytesRef {
    static constexpr const char* type_name = gecko::msgs::Bytes::type_name;
    gecko::BytesView data;
    GECKO_MSG_FIELDS(data)
};

// gecko.msgs.Bytes with its bytes written in place, in a loan.
struct BytesOut {
    static constexpr const char* type_name = gecko::msgs::Bytes::type_name;
    gecko::BytesToFill data;
    GECKO_MSG_FIELDS(data)
};

// Plain ZeroMQ. With a secret for the benchmark's key (GECKO_SECRET_FILE) it
// is CurveZMQ with the same ZAP admission Gecko's links use: the baseline
// for what the crypto itself costs (bench/security/security_bench.py).
class RawSide final : public Side {
public:
    explicit RawSide(const SideOptions& o) : context_(std::make_shared<zmq::context_t>(1)) {
        const auto security = gecko::security::KeySecurity::find("gecko-bench");
        if (security.secured()) zap_.emplace(context_, *security.curve(), "raw side");
        gecko::net::SocketOptions so;
        so.curve = security.curve();
        if (!o.pub_endpoint.empty()) {
            so.send_queue = o.send_hwm;
            so.curve_role = gecko::net::CurveRole::server;
            pub_ = gecko::net::make_socket(*context_, zmq::socket_type::pub, so);
            pub_.bind(o.pub_endpoint);
        }
        if (!o.sub_endpoint.empty()) {
            so.receive_queue = o.recv_hwm;
            so.curve_role = gecko::net::CurveRole::client;
            sub_ = gecko::net::make_socket(*context_, zmq::socket_type::sub, so);
            sub_.set(zmq::sockopt::subscribe, "");
            sub_.connect(o.sub_endpoint);
        }
    }

    bool wait_subscribers(std::size_t, milliseconds) override { return true; }

    void send(std::uint64_t tag, std::size_t size) override {
        if (buffer_.size() < size) buffer_.resize(size, 0xA5);
        std::memcpy(buffer_.data(), &tag, sizeof tag);
        zmq::message_t message(buffer_.data(), size);  // the copy zmq_send would make
        (void)pub_.send(message, zmq::send_flags::dontwait);
    }

    bool receive(milliseconds timeout) override {
        if (timeout.count() != timeout_ms_) {
            timeout_ms_ = static_cast<int>(timeout.count());
            sub_.set(zmq::sockopt::rcvtimeo, timeout_ms_);
        }
        return sub_.recv(in_).has_value();
    }

    std::uint64_t tag() const override { return read_tag(in_.data(), in_.size()); }
    std::size_t size() const override { return in_.size(); }

    void echo() override {
        zmq::message_t message(in_.data(), in_.size());
        (void)pub_.send(message, zmq::send_flags::dontwait);
    }

private:
    std::shared_ptr<zmq::context_t> context_;
    std::optional<gecko::net::ZapAdmission> zap_;  // outlives the sockets: declared before them
    zmq::socket_t pub_;
    zmq::socket_t sub_;
    zmq::message_t in_;
    std::vector<std::uint8_t> buffer_;
    int timeout_ms_ = -2;
};

// A node that binds exactly the side's publishing endpoint and links to the
// other process's: the same sockets, queues and endpoints as the raw side.
gecko::NodeOptions node_options(const SideOptions& s) {
    gecko::NodeOptions o;
    o.key = "gecko-bench";
    o.name = s.name;
    o.discovery = false;
    o.transports = {};
    if (!s.pub_endpoint.empty()) o.listen = {s.pub_endpoint};
    if (!s.sub_endpoint.empty()) o.peers = {s.sub_endpoint};
    // A subscriber alone over shared memory still needs the transport that reads it.
    if (s.pub_endpoint.empty() && s.sub_endpoint.rfind("shm://", 0) == 0) o.transports = {"shm"};
    o.send_queue = s.send_hwm;
    o.receive_queue = s.recv_hwm;
    // Sized for the work, as the iceoryx rows' RouDi is (bench/iceoryx.cpp: ~112 MiB of
    // mempools): 1 MiB and 4 MiB frames in flight to a subscriber that keeps up to 1000.
    o.shared_memory_size = 128u << 20;
    return o;
}

// Over shared memory (shm:// endpoints) it sends loans: the bytes are copied
// once, into the chunk the subscriber reads (iceoryx's loan-copy-publish).
class GeckoSide final : public Side {
public:
    explicit GeckoSide(const SideOptions& o) : node_(node_options(o)), loan_(o.pub_endpoint.rfind("shm://", 0) == 0) {
        if (!o.pub_endpoint.empty()) pub_ = node_.publisher<BytesRef>(topic_for(o.pub_endpoint));
        if (!o.sub_endpoint.empty()) {
            gecko::SubscriberOptions so;
            so.depth = o.depth;
            sub_ = node_.subscriber<BytesRef>(topic_for(o.sub_endpoint), so);
        }
    }

    bool wait_subscribers(std::size_t count, milliseconds timeout) override {
        return pub_.wait_for_subscribers(count, timeout);
    }

    void send(std::uint64_t tag, std::size_t size) override {
        std::vector<std::uint8_t>& bytes = outgoing(size);
        std::memcpy(bytes.data(), &tag, sizeof tag);
        if (loan_) return send_loan(bytes.data(), size);
        pub_.publish(BytesRef{gecko::BytesView(bytes)});
    }

    // In place: the bytes are read where they arrived, as the raw side reads its zmq::message_t.
    bool receive(milliseconds timeout) override { return static_cast<bool>(in_ = sub_.receive_view(timeout)); }

    std::uint64_t tag() const override { return read_tag(in_->data.data(), in_->data.size()); }
    std::size_t size() const override { return in_->data.size(); }
    void echo() override {
        if (loan_) return send_loan(in_->data.data(), in_->data.size());
        pub_.publish(*in_);
    }
    std::uint64_t drops() const override { return sub_.stats().drops; }
    std::uint64_t overwritten() const override { return sub_.stats().overwritten; }

private:
    void send_loan(const std::uint8_t* bytes, std::size_t size) {
        BytesOut out{gecko::BytesToFill(size)};
        auto loan = pub_.raw().loan(size + 16);  // + the map, key and bin headers (11 bytes at most)
        loan.encode(out);
        std::memcpy(out.data.data(), bytes, size);
        pub_.raw().publish(std::move(loan));
    }

    // Topic names do not matter without discovery; one per endpoint keeps them apart.
    static std::string topic_for(const std::string& endpoint) { return "bench/" + endpoint.substr(endpoint.rfind('/') + 1); }

    std::vector<std::uint8_t>& outgoing(std::size_t size) {
        for (auto& bytes : outgoing_) {
            if (bytes.size() == size) return bytes;
        }
        outgoing_.emplace_back(size, std::uint8_t{0xA5});
        return outgoing_.back();
    }

    gecko::Node node_;
    gecko::Publisher<BytesRef> pub_;
    gecko::Subscriber<BytesRef> sub_;
    gecko::MessageView<BytesRef> in_;
    std::vector<std::vector<std::uint8_t>> outgoing_;
    bool loan_ = false;
};

class GeckoRawSide final : public Side {
public:
    explicit GeckoRawSide(const SideOptions& o) : node_(node_options(o)) {
        const std::string type = gecko::msgs::Bytes::type_name;
        if (!o.pub_endpoint.empty()) pub_ = node_.raw_publisher(topic_for(o.pub_endpoint), type);
        if (!o.sub_endpoint.empty()) {
            gecko::SubscriberOptions so;
            so.depth = o.depth;
            so.type_name = type;
            sub_ = node_.raw_subscriber(topic_for(o.sub_endpoint), so);
        }
    }

    bool wait_subscribers(std::size_t count, milliseconds timeout) override {
        return pub_.wait_for_subscribers(count, timeout);
    }

    void send(std::uint64_t tag, std::size_t size) override {
        Encoded& e = outgoing(size);
        std::memcpy(e.bytes.data() + e.data_offset, &tag, sizeof tag);
        pub_.publish(e.bytes.data(), e.bytes.size());
    }

    bool receive(milliseconds timeout) override { return receive_impl(timeout, false); }
    bool receive_and_echo(milliseconds timeout) override { return receive_impl(timeout, true); }
    void echo() override { throw Stall("gecko raw layer: echo() outside receive_and_echo()"); }
    std::uint64_t tag() const override { return tag_; }
    std::size_t size() const override { return size_; }
    std::uint64_t drops() const override { return sub_.stats().drops; }
    std::uint64_t overwritten() const override { return sub_.stats().overwritten; }

private:
    struct Encoded {
        std::size_t size;
        std::vector<std::uint8_t> bytes;
        std::size_t data_offset;
    };

    static std::string topic_for(const std::string& endpoint) { return "bench/" + endpoint.substr(endpoint.rfind('/') + 1); }

    // A msgpack Bytes is {"data": bin}: fixmap(1), fixstr "data", bin8/16/32 header, bytes.
    static bool locate_data(const std::uint8_t* p, std::size_t n, std::size_t& offset, std::size_t& size) {
        if (n < 8 || p[0] != 0x81 || p[1] != 0xa4 || std::memcmp(p + 2, "data", 4) != 0) return false;
        std::size_t header = 0, length = 0;
        switch (p[6]) {
            case 0xc4: header = 2; length = p[7]; break;
            case 0xc5: header = 3; length = n >= 9 ? (std::size_t{p[7]} << 8 | p[8]) : 0; break;
            case 0xc6:
                header = 5;
                length = n >= 11 ? (std::size_t{p[7]} << 24 | std::size_t{p[8]} << 16 | std::size_t{p[9]} << 8 | p[10]) : 0;
                break;
            default: return false;
        }
        if (6 + header + length != n) return false;
        offset = 6 + header;
        size = length;
        return true;
    }

    bool receive_impl(milliseconds timeout, bool echo) {
        return sub_.receive(std::chrono::duration_cast<std::chrono::nanoseconds>(timeout), [&](const gecko::RawView& v) {
            std::size_t offset = 0, size = 0;
            if (!locate_data(v.payload, v.size, offset, size)) throw Stall("gecko raw layer: not a Bytes payload");
            tag_ = read_tag(v.payload + offset, size);
            size_ = size;
            if (echo) pub_.publish(v.payload, v.size);
        });
    }

    Encoded& outgoing(std::size_t size) {
        for (auto& e : outgoing_) {
            if (e.size == size) return e;
        }
        gecko::msgs::Bytes m;
        m.data.assign(size, 0xA5);
        gecko::Buffer buffer;
        gecko::codec::encode(buffer, m);
        Encoded e{size, std::vector<std::uint8_t>(buffer.data(), buffer.data() + buffer.size()), 0};
        std::size_t found = 0;
        if (!locate_data(e.bytes.data(), e.bytes.size(), e.data_offset, found) || found != size) {
            throw Stall("gecko raw layer: unexpected msgpack layout of Bytes");
        }
        outgoing_.push_back(std::move(e));
        return outgoing_.back();
    }

    gecko::Node node_;
    gecko::RawPublisher pub_;
    gecko::RawSubscriber sub_;
    std::uint64_t tag_ = 0;
    std::size_t size_ = 0;
    std::vector<Encoded> outgoing_;
};

}  // namespace

std::unique_ptr<Side> make_side(Impl impl, const SideOptions& options) {
    switch (impl) {
        case Impl::raw: return std::make_unique<RawSide>(options);
        case Impl::gecko: return std::make_unique<GeckoSide>(options);
        case Impl::gecko_raw: return std::make_unique<GeckoRawSide>(options);
        case Impl::iceoryx: return iceoryx::make_side(options);
    }
    return nullptr;
}

}  // namespace bench
