// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file bytes_view.hpp
/// gecko::BytesView: bytes owned by someone else, as {pointer, size}.
///
/// A message field of this type travels as msgpack `bin`, like
/// `std::vector<std::uint8_t>`, but decoding does not copy the bytes: the
/// view points into the buffer that was decoded. That is what a subscriber
/// of large payloads (camera frames, point clouds) wants when it only reads
/// them, or hands them on, before the next message arrives.
///
/// **Lifetime.** A decoded view is valid only while the decoded input buffer
/// is: once that buffer is freed or reused (the next message received into
/// it), the view dangles. Copy the bytes out (`to_vector()`) to keep them.
/// Encoding a view reads the bytes it points at, which must be alive then.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

namespace gecko {

/// A non-owning, read-only view of bytes. Compares by content, like
/// std::string_view.
class BytesView {
public:
    constexpr BytesView() noexcept = default;
    /// Views `size` bytes at `data` (which may be null when size is 0).
    constexpr BytesView(const std::uint8_t* data, std::size_t size) noexcept : data_(data), size_(size) {}
    /// Views the bytes of `bytes` (valid while `bytes` is alive and not resized).
    BytesView(const std::vector<std::uint8_t>& bytes) noexcept : data_(bytes.data()), size_(bytes.size()) {}  // NOLINT: implicit on purpose
    /// A temporary vector would be gone before the view is used.
    BytesView(std::vector<std::uint8_t>&&) = delete;

    constexpr const std::uint8_t* data() const noexcept { return data_; }
    constexpr std::size_t size() const noexcept { return size_; }
    constexpr bool empty() const noexcept { return size_ == 0; }
    constexpr const std::uint8_t* begin() const noexcept { return data_; }
    constexpr const std::uint8_t* end() const noexcept { return data_ + size_; }
    /// The byte at `i` (unchecked: `i < size()`).
    constexpr std::uint8_t operator[](std::size_t i) const noexcept { return data_[i]; }

    /// A copy of the bytes that outlives the viewed buffer.
    std::vector<std::uint8_t> to_vector() const { return std::vector<std::uint8_t>(begin(), end()); }

    friend bool operator==(BytesView a, BytesView b) noexcept {
        return a.size_ == b.size_ && (a.size_ == 0 || std::memcmp(a.data_, b.data_, a.size_) == 0);
    }
    friend bool operator!=(BytesView a, BytesView b) noexcept { return !(a == b); }

private:
    const std::uint8_t* data_ = nullptr;
    std::size_t size_ = 0;
};

}  // namespace gecko
