#pragma once
/// @file publisher.hpp
/// A typed publisher: publishes plain message structs on one topic.
///
/// **Example**:
/// ```
/// auto imu = node.publisher<gecko::msgs::Imu>("imu");
/// imu.wait_for_subscribers(1, std::chrono::seconds(1));  // optional: nobody hears what is sent before
/// imu.publish(reading);
/// ```
///
/// A message published while no subscriber is connected reaches nobody: it is
/// counted (stats().unheard, in `gecko list --json`), and a subscriber that
/// joins later gets it only from a latched publisher (PublisherOptions::latched).

#include <string>
#include <utility>

#include "gecko/codec.hpp"
#include "gecko/raw_publisher.hpp"

namespace gecko {

template <class T>
class Publisher {
public:
    Publisher() = default;
    explicit Publisher(RawPublisher raw) : raw_(std::move(raw)) {}

    /// Encodes and sends `message` to every subscriber of the topic. Never
    /// blocks: a subscriber that cannot keep up misses messages (it counts
    /// them as drops). Thread-safe.
    /// @throws gecko::Error (Errc::closed) once the Node is destroyed.
    void publish(const T& message) {
        thread_local Buffer buffer;  // reused: no allocation per message once grown
        thread_local std::size_t last_size = 0;
        // A large frame is handed to the transport without a copy, which takes the
        // buffer's memory: reserve the last frame's size at once, not by doubling.
        buffer.reserve(last_size);
        buffer.resize(RawPublisher::frame_header_room());
        codec::encode(buffer, message);
        last_size = buffer.size();
        raw_.publish_frame(buffer);
    }

    /// Lends memory for one message of up to `payload_capacity` encoded
    /// bytes: encode a T into it (Loan::encode), fill its gecko::BytesToFill
    /// fields in place, then publish(std::move(loan)). Over shared memory
    /// nothing is copied on the way to the subscribers (gecko/loan.hpp).
    Loan loan(std::size_t payload_capacity) { return raw_.loan(payload_capacity); }
    /// Publishes a loan (its payload: a T, encoded). Thread-safe.
    void publish(Loan&& loan) { raw_.publish(std::move(loan)); }

    /// Subscribers connected now.
    std::size_t subscriber_count() const { return raw_.subscriber_count(); }
    /// Who listens now (RawPublisher::subscribers()).
    std::vector<SubscriberInfo> subscribers() const { return raw_.subscribers(); }
    /// Waits until at least `count` subscribers are connected; false on timeout.
    bool wait_for_subscribers(std::size_t count, std::chrono::milliseconds timeout) {
        return raw_.wait_for_subscribers(count, timeout);
    }
    PublisherStats stats() const { return raw_.stats(); }
    const std::string& topic() const { return raw_.topic(); }
    RawPublisher& raw() noexcept { return raw_; }
    explicit operator bool() const noexcept { return static_cast<bool>(raw_); }

private:
    RawPublisher raw_;
};

}  // namespace gecko
