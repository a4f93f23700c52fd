// SPDX-License-Identifier: Apache-2.0
#pragma once
// Where a receiving entity inflates a compressed payload. Its storage is
// bounded by the declared payload size (which the entity's
// max_message_size bounds), and a large payload is inflated into a mapping of
// its own rather than the heap: a growing vector on the heap took 1.5 times
// the payload while it grew, and what glibc then kept of it stayed with the
// process for good (+34 MiB after 40 zip bombs). A mapping is reused for the
// next payload; release() gives its pages back to the system.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "gecko/wire/frame.hpp"

namespace gecko::detail {

class Inflated {
public:
    /// Payloads up to this size (+1) are inflated on the heap, larger ones into a mapping.
    static constexpr std::size_t heap_limit = 256u << 10;

    Inflated() = default;
    ~Inflated();
    Inflated(const Inflated&) = delete;
    Inflated& operator=(const Inflated&) = delete;

    /// Inflates `frame`'s compressed body (wire::inflate_body's checks).
    /// Throws std::bad_alloc if the storage cannot be had.
    wire::FrameError inflate(const wire::FrameView& frame);
    const std::uint8_t* data() const noexcept { return data_; }
    std::size_t size() const noexcept { return size_; }
    /// Done with the payload: the pages of a mapping beyond the first
    /// `keep` bytes go back to the system (the mapping stays, for the next one).
    void release(std::size_t keep = heap_limit);

    /// Releases `inflated` when it goes out of scope.
    class Releasing {
    public:
        explicit Releasing(Inflated& inflated) noexcept : inflated_(inflated) {}
        ~Releasing() { inflated_.release(); }
        Releasing(const Releasing&) = delete;
        Releasing& operator=(const Releasing&) = delete;

    private:
        Inflated& inflated_;
    };

private:
    std::vector<std::uint8_t> heap_;
    std::uint8_t* mapped_ = nullptr;
    std::size_t mapped_size_ = 0;
    std::size_t touched_ = 0;  // bytes of the mapping written since the last release
    const std::uint8_t* data_ = nullptr;
    std::size_t size_ = 0;
};

}  // namespace gecko::detail
