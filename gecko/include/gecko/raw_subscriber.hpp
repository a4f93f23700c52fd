#pragma once
/// @file raw_subscriber.hpp
/// The untyped subscriber: validates frames and hands out msgpack payloads.
/// Subscriber<T> decodes on top of it; tools use it to read any topic.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include "gecko/detail/function_ref.hpp"
#include <memory>
#include <string>
#include <vector>

#include "gecko/message_info.hpp"
#include "gecko/stats.hpp"

namespace gecko {

namespace detail {
class SubscriberCore;
}

/// How a subscriber queues. Chosen by the subscriber alone: publishers do not care.
struct SubscriberOptions {
    /// Keep the last `depth` messages; older unread ones are overwritten (and
    /// counted). 1 means latest-value-only. `receive()` refills the queue from
    /// the transport after 16 deliveries or 1 ms, whichever comes first
    /// (reading an empty socket costs a system call), so what it returns was
    /// among the newest `depth` at most 1 ms earlier; a callback subscriber
    /// refills on every wake-up; depth 1 always gets the latest.
    std::size_t depth = 16;
    /// Frames the transport may hold before the queue above (ZeroMQ's
    /// RCVHWM, per publisher); beyond it new frames are dropped and counted
    /// as sequence gaps. 0: unbounded.
    int receive_queue = 10000;
    /// Frames with a payload above this many bytes are dropped and counted.
    std::size_t max_message_size = 64u << 20;
    /// Publisher endpoints to connect to in addition to what discovery finds.
    std::vector<std::string> endpoints;
    /// Type to accept. Typed subscribers set it; empty accepts any type (tools).
    std::string type_name;

    /// Options for a latest-value-only subscriber.
    static SubscriberOptions latest_only() {
        SubscriberOptions o;
        o.depth = 1;
        return o;
    }
};

/// One accepted message as the raw layer hands it out: the payload is msgpack
/// (already decompressed) and valid only during the call that receives it.
struct RawView {
    const MessageInfo& info;
    const std::uint8_t* payload;
    std::size_t size;
};

class RawSubscriber {
public:
    /// Called with each message; throwing marks the payload undecodable (counted, logged once).
    using Visitor = detail::FunctionRef<void(const RawView&)>;

    RawSubscriber() = default;
    explicit RawSubscriber(std::shared_ptr<detail::SubscriberCore> core);
    ~RawSubscriber();
    RawSubscriber(RawSubscriber&&) noexcept;
    RawSubscriber& operator=(RawSubscriber&&) noexcept;

    /// Waits up to `timeout` for the next message and passes it to `visit`.
    /// Returns false on timeout. A message `visit` throws on is counted as a
    /// decode error and the wait goes on for the next one.
    bool receive(std::chrono::nanoseconds timeout, Visitor visit);

    /// Adds a publisher endpoint to connect to (also safe from other threads).
    void connect(const std::string& endpoint);
    void disconnect(const std::string& endpoint);
    /// Endpoints connected now.
    std::vector<std::string> connections() const;

    const std::string& topic() const;
    const std::string& type_name() const;
    std::uint64_t id() const;
    SubscriberStats stats() const;

    explicit operator bool() const noexcept { return core_ != nullptr; }

private:
    std::shared_ptr<detail::SubscriberCore> core_;
};

}  // namespace gecko
