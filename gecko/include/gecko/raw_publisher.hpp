#pragma once
/// @file raw_publisher.hpp
/// The untyped publisher: sends frames whose payload is already msgpack.
/// Publisher<T> is a thin template over it; tools, bridges and other
/// languages' bindings use it directly.

#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gecko/buffer.hpp"
#include "gecko/stats.hpp"

namespace gecko {

namespace detail {
class PublisherCore;
}

/// How a publisher sends. Every field has a default that suits a sensor topic.
struct PublisherOptions {
    /// Endpoints to bind ("tcp://127.0.0.1:*", "ipc:///tmp/x.sock", "inproc://imu").
    /// Empty: chosen automatically (an ipc socket for this host and a tcp port
    /// for others), which is what discovery advertises.
    std::vector<std::string> endpoints;
    /// Payloads larger than this many bytes are zlib-compressed. Empty: never.
    std::optional<std::size_t> compress_above;
    /// zlib level, 1 (fastest) to 9 (smallest).
    int compression_level = 1;
    /// Messages queued per subscriber before new ones are dropped (ZeroMQ send HWM).
    int send_queue = 1000;
    /// How long messages still queued when the publisher closes may keep being
    /// written out, in the background, until the last Node of the process is
    /// destroyed (which waits for them). 0: dropped at once. A one-shot
    /// publisher (a command-line tool) wants a second or so.
    std::chrono::milliseconds linger{0};
};

class RawPublisher {
public:
    RawPublisher() = default;  ///< an empty handle; assign one from Node::raw_publisher()
    explicit RawPublisher(std::shared_ptr<detail::PublisherCore> core);
    ~RawPublisher();
    RawPublisher(RawPublisher&&) noexcept;
    RawPublisher& operator=(RawPublisher&&) noexcept;

    /// Publishes a payload that is already msgpack. Thread-safe.
    void publish(const void* msgpack_payload, std::size_t size);

    /// Publishes `buffer`, whose first `header_room` bytes are reserved for the
    /// frame header (frame_header_size(type_name())) and the rest is the
    /// payload. The buffer may be emptied (its memory handed to the transport).
    void publish_frame(Buffer& buffer);

    /// Sends the frame pre-built by a caller as is (tools and tests; no checks).
    void publish_raw_bytes(const void* bytes, std::size_t size);

    const std::string& topic() const;
    const std::string& type_name() const;
    std::uint64_t id() const;
    /// The endpoints actually bound (ports resolved).
    std::vector<std::string> endpoints() const;
    /// Subscribers connected now.
    std::size_t subscriber_count();
    /// Waits until at least `count` subscribers are connected. Returns false on timeout.
    bool wait_for_subscribers(std::size_t count, std::chrono::milliseconds timeout);
    PublisherStats stats();

    explicit operator bool() const noexcept { return core_ != nullptr; }

private:
    std::shared_ptr<detail::PublisherCore> core_;
};

}  // namespace gecko
