#include "gecko/buffer.hpp"

#include <cstring>
#include <new>

namespace gecko {

Buffer& Buffer::operator=(Buffer&& other) noexcept {
    if (this != &other) {
        std::free(data_);
        data_ = other.data_;
        size_ = other.size_;
        capacity_ = other.capacity_;
        other.data_ = nullptr;
        other.size_ = other.capacity_ = 0;
    }
    return *this;
}

void Buffer::reserve(std::size_t n) {
    if (n > capacity_) grow(n);
}

void Buffer::grow(std::size_t n) {
    // Doubling keeps appends amortised; a single large request gets exactly
    // what it asks for (a 1 MiB frame must not cost a 2 MiB allocation).
    std::size_t grown = capacity_ * 2 > n ? capacity_ * 2 : n;
    if (grown < 256) grown = 256;
    auto* bigger = static_cast<std::uint8_t*>(std::realloc(data_, grown));
    if (!bigger) throw std::bad_alloc();
    data_ = bigger;
    capacity_ = grown;
}

void Buffer::resize(std::size_t n) {
    reserve(n);
    size_ = n;
}

std::uint8_t* Buffer::release() noexcept {
    std::uint8_t* out = data_;
    data_ = nullptr;
    size_ = capacity_ = 0;
    return out;
}

}  // namespace gecko
