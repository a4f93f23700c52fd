#pragma once
/// @file raw_subscriber.hpp
/// The untyped subscriber: validates frames and hands out msgpack payloads.
/// Subscriber<T> decodes on top of it; tools use it to read any topic.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "gecko/detail/function_ref.hpp"
#include "gecko/message_info.hpp"
#include "gecko/stats.hpp"

namespace gecko {

namespace detail {
class SubscriberImpl;
}

/// How a subscriber queues. Chosen by the subscriber alone: publishers do not care.
struct SubscriberOptions {
    /// Keep the last `depth` messages; older unread ones are overwritten (and
    /// counted as `overwritten`). 1 means latest-value-only. The queue is kept
    /// fresh even while the application does not read (the node drains its
    /// links at least every ~10 ms), so what receive() returns is among the
    /// newest `depth` as of at most 1 ms before the call, not a transport
    /// backlog.
    std::size_t depth = 16;
    /// Frames with a payload above this many bytes are dropped and counted
    /// (the node's own limit, NodeOptions::max_message_size, applies first).
    std::size_t max_message_size = 64u << 20;
    /// Publishers whose sequence numbers are tracked at most; beyond it the
    /// least recently heard is forgotten (and counted).
    std::size_t max_publishers = 1024;
    /// Type to accept. Typed subscribers set it; empty accepts any type (tools).
    std::string type_name;
    /// How long a waiting receive() busy-polls the node's shared-memory links
    /// before it blocks (unset: the node's NodeOptions::spin, GECKO_SPIN_US, which
    /// a port that spins by itself keeps doing after this one).
    /// A thread that did not block needs no wake-up: for a reply expected
    /// within microseconds (a lockstep answer) that is most of the round trip.
    std::optional<std::chrono::microseconds> spin;

    /// Options for a latest-value-only subscriber.
    static SubscriberOptions latest_only() {
        SubscriberOptions o;
        o.depth = 1;
        return o;
    }
};

/// One accepted message as the raw layer hands it out: the payload is msgpack
/// (already inflated) and valid only during the call that receives it.
struct RawView {
    const MessageInfo& info;
    const std::uint8_t* payload;
    std::size_t size;
};

class RawSubscriber {
public:
    /// Called with each message; throwing gecko::Error (Errc::decode) marks the
    /// payload undecodable (counted, logged once); any other exception counts
    /// as a callback error.
    using Visitor = detail::FunctionRef<void(const RawView&)>;

    RawSubscriber() = default;
    explicit RawSubscriber(std::shared_ptr<detail::SubscriberImpl> impl);
    ~RawSubscriber();
    RawSubscriber(RawSubscriber&&) noexcept;
    RawSubscriber& operator=(RawSubscriber&&) noexcept;

    /// Waits up to `timeout` for the next message and passes it to `visit`, on
    /// this thread. Returns false on timeout, at once when shutdown is
    /// requested (ok() turns false) or the Node is gone. A message `visit`
    /// fails on is counted and the wait goes on for the next one.
    /// Thread-safe: several threads may receive from one subscriber.
    /// @throws gecko::Error (Errc::invalid_argument) for a callback subscriber (its messages go to spin()).
    bool receive(std::chrono::nanoseconds timeout, Visitor visit);
    /// As receive(), but the payload `visit` sees stays valid after the call
    /// for as long as `keep` (set before `visit` runs) is held: no copy, the
    /// received frame itself is kept. Subscriber<T>::receive_view builds on it.
    bool receive_kept(std::chrono::nanoseconds timeout, Visitor visit, std::shared_ptr<const void>& keep);

    const std::string& topic() const;
    const std::string& type_name() const;
    std::uint64_t id() const;
    SubscriberStats stats() const;

    explicit operator bool() const noexcept { return impl_ != nullptr; }
    detail::SubscriberImpl* impl() const noexcept { return impl_.get(); }

private:
    std::shared_ptr<detail::SubscriberImpl> impl_;
};

}  // namespace gecko
