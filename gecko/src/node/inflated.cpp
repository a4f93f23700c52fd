// SPDX-License-Identifier: Apache-2.0
#include "node/inflated.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <new>

namespace gecko::detail {
namespace {

std::size_t page_rounded(std::size_t n) {
    static const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
    return (n + page - 1) / page * page;
}

}  // namespace

Inflated::~Inflated() {
    if (mapped_) ::munmap(mapped_, mapped_size_);
}

wire::FrameError Inflated::inflate(const wire::FrameView& frame) {
    const std::size_t need = std::size_t{frame.header.payload_size} + 1;  // +1: to see an overrun
    std::uint8_t* out = nullptr;
    std::size_t capacity = 0;
    if (need <= heap_limit) {
        if (heap_.size() < need) heap_.resize(need);
        out = heap_.data();
        capacity = heap_.size();
    } else {
        if (mapped_size_ < need) {
            if (mapped_) ::munmap(mapped_, mapped_size_);
            mapped_ = nullptr;
            mapped_size_ = 0;
            touched_ = 0;
            // Reserved, not resident: pages become memory as the stream writes them.
            const std::size_t size = page_rounded(need);
            void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
            if (p == MAP_FAILED) throw std::bad_alloc();
            mapped_ = static_cast<std::uint8_t*>(p);
            mapped_size_ = size;
        }
        out = mapped_;
        capacity = mapped_size_;
    }
    std::size_t produced = 0;
    const auto error = wire::inflate_body(frame, out, capacity, produced);
    if (out == mapped_ && produced > touched_) touched_ = produced;
    data_ = out;
    size_ = error == wire::FrameError::none ? produced : 0;
    return error;
}

void Inflated::release(std::size_t keep) {
    data_ = nullptr;
    size_ = 0;
    const std::size_t kept = page_rounded(keep);
    if (!mapped_ || touched_ <= kept) return;
    // The pages read zero again when next touched.
    ::madvise(mapped_ + kept, page_rounded(touched_) - kept, MADV_DONTNEED);
    touched_ = kept;
}

}  // namespace gecko::detail
