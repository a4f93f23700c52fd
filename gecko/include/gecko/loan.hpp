#pragma once
/// @file loan.hpp
/// gecko::Loan: a message written in place, in the memory it is sent from.
///
/// A publisher lends memory for one message: over shared memory, a chunk of
/// the segment its subscribers read from; otherwise a buffer that is handed
/// to the transport as it is. Encode into it (msgpack-encode straight into
/// shared memory), or reserve a byte field and fill it in place (a camera
/// frame, a point cloud), then publish it: no copy between the encoder and
/// the subscriber on the same host.
///
/// **Example** (pixels written in place):
/// ```
/// struct ImageOut {  // gecko.msgs.Image, its pixels filled after encoding
///     static constexpr const char* type_name = "gecko.msgs.Image";
///     std::uint32_t width = 0, height = 0;
///     std::string encoding;
///     gecko::BytesToFill data;
///     GECKO_MSG_FIELDS(width, height, encoding, data)
/// };
/// auto camera = node.publisher<ImageOut>("camera");
/// ImageOut image{640, 480, "rgb8", gecko::BytesToFill(640 * 480 * 3)};
/// auto loan = camera.loan(image.data.size() + 64);  // room for the message
/// loan.encode(image);                               // the small fields; the pixels' room is reserved
/// grab_frame(image.data.data(), image.data.size());  // written where subscribers will read them
/// camera.publish(std::move(loan));
/// ```
///
/// A loan has a fixed capacity: writing past it throws. An unpublished loan
/// gives its memory back when destroyed. A publisher lends a bounded share of
/// its shared memory; past it (or with no shared-memory subscriber possible)
/// a loan is ordinary memory, and publishing it works the same.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>

#include "gecko/buffer.hpp"
#include "gecko/wire/codec.hpp"
#include "gecko/wire/frame.hpp"

namespace gecko {

namespace detail {
class PublisherImpl;
}

class Loan {
public:
    Loan() = default;  ///< empty: take one from Publisher::loan()
    ~Loan();           ///< an unpublished loan goes back to its publisher
    Loan(Loan&& other) noexcept;
    Loan& operator=(Loan&& other) noexcept;
    Loan(const Loan&) = delete;
    Loan& operator=(const Loan&) = delete;

    /// Appends bytes: msgpack's buffer concept, so encoders write into the loan.
    /// @throws gecko::Error (Errc::invalid_argument) past capacity().
    void write(const char* bytes, std::size_t n) {
        if (n != 0) std::memcpy(extend(n), bytes, n);
    }
    /// Grows the payload by `n` uninitialised bytes and returns where they
    /// start: fill them in place.
    /// @throws gecko::Error (Errc::invalid_argument) past capacity().
    std::uint8_t* extend(std::size_t n) {
        if (n > capacity_ - size_) overflow(n);
        std::uint8_t* at = payload() + size_;
        size_ += n;
        return at;
    }
    /// Encodes `message` (gecko/message.hpp) after what is already written.
    template <class T>
    void encode(const T& message) {
        wire::encode(*this, message);
    }

    std::uint8_t* data() noexcept { return payload(); }  ///< the payload's first byte
    const std::uint8_t* data() const noexcept { return frame_ ? frame_ + header_room : nullptr; }
    std::size_t size() const noexcept { return size_; }          ///< payload bytes written
    std::size_t capacity() const noexcept { return capacity_; }  ///< payload bytes it can hold
    void clear() noexcept { size_ = 0; }
    /// True if the loan is in shared memory (subscribers on this host read it where it was written).
    bool in_shared_memory() const noexcept { return keep_ != nullptr; }
    /// True from Publisher::loan() until published.
    explicit operator bool() const noexcept { return frame_ != nullptr; }

private:
    friend class detail::PublisherImpl;
    static constexpr std::size_t header_room = wire::frame_header_size;

    std::uint8_t* payload() noexcept { return frame_ ? frame_ + header_room : nullptr; }
    [[noreturn]] void overflow(std::size_t n) const;
    void give_back() noexcept;  // to the port that lent it
    void forget() noexcept;     // empty, without giving anything back

    std::shared_ptr<detail::PublisherImpl> owner_;
    std::uint8_t* frame_ = nullptr;  // the frame's first byte: header room, then the payload
    std::size_t size_ = 0;
    std::size_t capacity_ = 0;
    // Shared memory: the port that lent it and its handle; ordinary memory: heap_.
    std::shared_ptr<void> keep_;
    std::uint64_t token_ = 0;
    std::size_t port_ = 0;
    std::size_t lent_capacity_ = 0;
    Buffer heap_;
};

}  // namespace gecko
