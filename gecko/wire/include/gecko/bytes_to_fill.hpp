// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file bytes_to_fill.hpp
/// gecko::BytesToFill: a bin field whose bytes are written after encoding,
/// where they lie in the encoded message (gecko/loan.hpp).
///
/// Encoding writes the field's msgpack `bin` header and reserves `size()`
/// bytes behind it; data() then points at them. Encoded into a Loan, they
/// are in the memory the message is sent from: a camera driver or a point
/// cloud filter writes its output there, and nothing copies it again.
/// Encoded into a gecko::Buffer, the bytes are zeroed first (that buffer may
/// go out at once); other streams get zeros and data() stays null.
///
/// A struct with this field is for publishing; a subscriber reads the same
/// type name with gecko::BytesView (or std::vector<std::uint8_t>) instead.
/// Each encoding moves data(): fill the bytes after the last one.

#include <cstddef>
#include <cstdint>

namespace gecko {

class BytesToFill {
public:
    BytesToFill() noexcept = default;
    explicit BytesToFill(std::size_t size) noexcept : size_(size) {}

    std::size_t size() const noexcept { return size_; }
    /// Where the reserved bytes are since the last encoding (null before).
    std::uint8_t* data() const noexcept { return data_; }

    /// Called by the encoder (the message being encoded is const).
    void placed_at(std::uint8_t* where) const noexcept { data_ = where; }

private:
    std::size_t size_ = 0;
    mutable std::uint8_t* data_ = nullptr;
};

}  // namespace gecko
