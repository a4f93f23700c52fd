#pragma once
/// @file message_view.hpp
/// gecko::MessageView<T>: a received message that reads its frame in place.
///
/// Fields of type gecko::BytesView point into the received bytes instead of
/// being copied out, and stay valid for as long as the MessageView (or a
/// copy of it) is alive: the frame is kept, not copied. This is the read side
/// of large payloads (camera frames, point clouds, maps).
///
/// **Example**:
/// ```
/// struct ImageRef {  // gecko.msgs.Image, its pixels read in place
///     static constexpr const char* type_name = "gecko.msgs.Image";
///     std::uint32_t width = 0, height = 0;
///     gecko::BytesView data;
///     GECKO_MSG_FIELDS(width, height, data)
/// };
/// auto camera = node.subscriber<ImageRef>("camera");
/// if (auto image = camera.receive_view(100ms)) show(image->data.data(), image->data.size());
/// ```

#include <memory>
#include <utility>

#include "gecko/message_info.hpp"

namespace gecko {

/// Empty (false) when nothing arrived in time; otherwise reads like a pointer to T.
template <class T>
class MessageView {
public:
    MessageView() = default;
    MessageView(T message, MessageInfo info, std::shared_ptr<const void> keep)
        : message_(std::move(message)), info_(std::move(info)), keep_(std::move(keep)), valid_(true) {}

    explicit operator bool() const noexcept { return valid_; }
    const T& operator*() const noexcept { return message_; }
    const T* operator->() const noexcept { return &message_; }
    const T& message() const noexcept { return message_; }
    const MessageInfo& info() const noexcept { return info_; }

private:
    T message_;
    MessageInfo info_;
    std::shared_ptr<const void> keep_;  // the received bytes message_'s views point into
    bool valid_ = false;
};

}  // namespace gecko
