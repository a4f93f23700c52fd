#pragma once
/// @file buffer.hpp
/// A growable byte buffer that msgpack can write into (`write(const char*, size_t)`).
/// Publishers encode straight into it behind a reserved frame header, so a
/// message is assembled once and, when large, handed to the transport
/// without another copy.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace gecko {

class Buffer {
public:
    Buffer() = default;
    ~Buffer() { std::free(data_); }
    Buffer(Buffer&& other) noexcept : data_(other.data_), size_(other.size_), capacity_(other.capacity_) {
        other.data_ = nullptr;
        other.size_ = other.capacity_ = 0;
    }
    Buffer& operator=(Buffer&& other) noexcept;
    Buffer(const Buffer&) = delete;
    Buffer& operator=(const Buffer&) = delete;

    /// Appends bytes (the msgpack buffer concept). Inline: the encoder calls
    /// it once per small value, and the common case is a memcpy.
    void write(const char* bytes, std::size_t n) {
        if (n == 0) return;  // memcpy from a null pointer is undefined, even for 0 bytes
        if (n > capacity_ - size_) grow(size_ + n);
        std::memcpy(data_ + size_, bytes, n);
        size_ += n;
    }
    /// Grows the size by `n` and returns where those (uninitialised) bytes start.
    [[gnu::always_inline]] std::uint8_t* extend(std::size_t n) {
        if (n > capacity_ - size_) grow(size_ + n);
        std::uint8_t* at = data_ + size_;
        size_ += n;
        return at;
    }
    /// Sets the size; new bytes are uninitialised.
    void resize(std::size_t n);
    void reserve(std::size_t n);
    void clear() noexcept { size_ = 0; }

    std::uint8_t* data() noexcept { return data_; }
    const std::uint8_t* data() const noexcept { return data_; }
    std::size_t size() const noexcept { return size_; }
    std::size_t capacity() const noexcept { return capacity_; }

    /// Gives up ownership of the memory (allocated with malloc; free it with
    /// std::free). The buffer is empty afterwards.
    std::uint8_t* release() noexcept;

private:
    void grow(std::size_t n);  // reserve(n), out of line

    std::uint8_t* data_ = nullptr;
    std::size_t size_ = 0;
    std::size_t capacity_ = 0;
};

}  // namespace gecko
