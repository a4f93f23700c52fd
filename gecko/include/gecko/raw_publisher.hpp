#pragma once
/// @file raw_publisher.hpp
/// The untyped publisher: sends frames whose payload is already msgpack.
/// Publisher<T> is a thin template over it; tools, bridges and other
/// languages' bindings use it directly.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gecko/buffer.hpp"
#include "gecko/loan.hpp"
#include "gecko/stats.hpp"

namespace gecko {

namespace detail {
class PublisherImpl;
}

/// How a publisher sends. Every field has a default that suits a sensor topic.
struct PublisherOptions {
    /// Payloads larger than this many bytes are zlib-compressed. Empty: never.
    std::optional<std::size_t> compress_above;
    /// zlib level, 1 (fastest) to 9 (smallest).
    int compression_level = 1;
    /// Keep the last message and give it to every subscriber that joins later
    /// (ROS's latched topics, DDS's transient-local durability): a robot's
    /// description, a map, a mode, read by pages and controllers that start late.
    bool latched = false;
};

/// A subscriber connected to a publisher, as it announced itself.
struct SubscriberInfo {
    std::uint64_t id = 0;       ///< its entity id (RawSubscriber::id())
    std::string node;           ///< its node's name
    std::uint64_t session = 0;  ///< its node's session
    std::string type;           ///< the type it expects ("" or "*": any)
    std::size_t depth = 0;      ///< its keep-last-N depth
};

class RawPublisher {
public:
    RawPublisher() = default;  ///< an empty handle; assign one from Node::raw_publisher()
    explicit RawPublisher(std::shared_ptr<detail::PublisherImpl> impl);
    ~RawPublisher();
    RawPublisher(RawPublisher&&) noexcept;
    RawPublisher& operator=(RawPublisher&&) noexcept;

    /// Publishes a payload that is already msgpack. Thread-safe.
    /// @throws gecko::Error (Errc::closed) once the Node is destroyed.
    void publish(const void* msgpack_payload, std::size_t size);

    /// Publishes `buffer`, whose first frame_header_room() bytes are reserved
    /// for the frame header and the rest is the payload. Consumes the buffer:
    /// it may be emptied (its memory handed to the transport). Thread-safe.
    /// @throws gecko::Error (Errc::closed) once the Node is destroyed.
    void publish_frame(Buffer& buffer);

    /// Lends memory for a payload of up to `payload_capacity` bytes, to be
    /// written in place and published with publish(Loan&&) (gecko/loan.hpp).
    /// Thread-safe; never blocks.
    /// @throws gecko::Error (Errc::closed) once the Node is destroyed.
    Loan loan(std::size_t payload_capacity);
    /// Publishes what was written into `loan` (msgpack), from where it is.
    /// @throws gecko::Error (Errc::invalid_argument) for an empty loan or
    /// another publisher's; (Errc::closed) once the Node is destroyed.
    void publish(Loan&& loan);

    /// The room publish_frame() wants before the payload (48 bytes).
    static std::size_t frame_header_room() noexcept;

    const std::string& topic() const;
    const std::string& type_name() const;
    std::uint64_t id() const;
    /// Subscribers connected now (any type; stats() tells the mismatched ones).
    std::size_t subscriber_count() const;
    /// Who they are, as each announced itself (a recorder listening to the
    /// whole key included). A subscriber whose link closes, cleanly or not,
    /// leaves this list as soon as the transport notices.
    std::vector<SubscriberInfo> subscribers() const;
    /// Waits until at least `count` subscribers are connected: a message
    /// published after it returns true reaches them. False on timeout.
    bool wait_for_subscribers(std::size_t count, std::chrono::milliseconds timeout);
    PublisherStats stats() const;

    explicit operator bool() const noexcept { return impl_ != nullptr; }
    /// The implementation (tests, gecko/testing.hpp).
    detail::PublisherImpl* impl() const noexcept { return impl_.get(); }

private:
    std::shared_ptr<detail::PublisherImpl> impl_;
};

}  // namespace gecko
