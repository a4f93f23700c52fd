#pragma once
/// @file subscriber.hpp
/// A typed subscriber: receives message structs from every publisher of a
/// topic, by polling with a timeout or (when made with a callback) from
/// Node::spin().
///
/// **Example**:
/// ```
/// auto imu = node.subscriber<gecko::msgs::Imu>("imu");
/// if (auto msg = imu.receive(std::chrono::milliseconds(100))) use(*msg);
/// ```

#include <chrono>
#include <optional>
#include <string>
#include <utility>

#include "gecko/codec.hpp"
#include "gecko/message_view.hpp"
#include "gecko/raw_subscriber.hpp"

namespace gecko {

template <class T>
class Subscriber {
public:
    Subscriber() = default;
    explicit Subscriber(RawSubscriber raw) : raw_(std::move(raw)) {}

    /// Waits up to `timeout` for the next message. Returns it, or nothing on
    /// timeout (or shutdown). Messages that fail checks are counted in stats() and skipped.
    template <class Rep, class Period>
    std::optional<T> receive(std::chrono::duration<Rep, Period> timeout, MessageInfo* info = nullptr) {
        T message{};
        if (!receive(message, timeout, info)) return std::nullopt;
        return message;
    }

    /// As above, decoding into `out` (reuses its storage). Returns false on
    /// timeout; then `out` may hold a message that failed to decode (counted
    /// in stats().decode_errors), so read it only after `true`. A
    /// gecko::BytesView field would dangle once this returns: use receive_view().
    template <class Rep, class Period>
    bool receive(T& out, std::chrono::duration<Rep, Period> timeout, MessageInfo* info = nullptr) {
        return raw_.receive(std::chrono::duration_cast<std::chrono::nanoseconds>(timeout), [&](const RawView& view) {
            if constexpr (codec::decodes_in_place<T>::value) {
                codec::decode(view.payload, view.size, out);
            } else {
                T decoded{};  // fresh, so fields a publisher omits take their defaults
                codec::decode(view.payload, view.size, decoded);
                out = std::move(decoded);
            }
            if (info) *info = view.info;
        });
    }

    /// Waits up to `timeout` for the next message and decodes it in place:
    /// gecko::BytesView fields point into the received frame, which the
    /// returned view keeps alive (no copy of the bytes). An empty view on timeout.
    /// (receive() decodes a copy: there a BytesView field would dangle once
    /// the call returns.)
    template <class Rep, class Period>
    MessageView<T> receive_view(std::chrono::duration<Rep, Period> timeout) {
        std::shared_ptr<const void> keep;
        T message{};
        MessageInfo info;
        const bool got = raw_.receive_kept(
            std::chrono::duration_cast<std::chrono::nanoseconds>(timeout),
            [&](const RawView& view) {
                message = T{};  // fields a publisher omits take their defaults
                codec::decode(view.payload, view.size, message);
                info = view.info;
            },
            keep);
        if (!got) return {};
        return MessageView<T>(std::move(message), std::move(info), std::move(keep));
    }

    SubscriberStats stats() const { return raw_.stats(); }
    const std::string& topic() const { return raw_.topic(); }
    RawSubscriber& raw() noexcept { return raw_; }
    explicit operator bool() const noexcept { return static_cast<bool>(raw_); }

private:
    RawSubscriber raw_;
};

}  // namespace gecko
