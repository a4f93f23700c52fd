// SPDX-License-Identifier: Apache-2.0
#pragma once
// A received frame, whatever transport brought it: its bytes stay where the
// transport put them (a ZeroMQ message, a shared buffer, a shared-memory slot)
// until the last Frame referring to them is destroyed. Move-only; share()
// makes a second owner of the same bytes (two subscribers of one topic in one
// node) without copying them.
//
// The transport's own handle lives inside the Frame (up to 64 bytes, no
// allocation), driven by a small table of functions the transport provides:
// nothing here knows which transport it is.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>

namespace gecko::detail {

class Frame {
public:
    static constexpr std::size_t storage_size = 64;

    /// What a transport tells a Frame about its handle type.
    struct Ops {
        const std::uint8_t* (*data)(const void* handle) noexcept;
        std::size_t (*size)(const void* handle) noexcept;
        /// Move-construct at `to`, leaving `from` destroyable. Null: the handle
        /// is trivially relocatable (its bytes may be copied and the source
        /// forgotten, never destroyed), which saves two calls per move.
        void (*move)(void* from, void* to) noexcept;
        void (*destroy)(void* handle) noexcept;
        bool (*share)(const void* handle, void* to) noexcept;  ///< construct a second owner at `to`; false: cannot
    };

    Frame() noexcept = default;
    Frame(Frame&& other) noexcept { take(other); }
    Frame& operator=(Frame&& other) noexcept {
        if (this != &other) {
            reset();
            take(other);
        }
        return *this;
    }
    Frame(const Frame&) = delete;
    Frame& operator=(const Frame&) = delete;
    ~Frame() { reset(); }

    /// Makes a Frame that owns `handle` (moved in), described by `ops`.
    template <class Handle>
    static Frame adopt(Handle&& handle, const Ops& ops) noexcept {
        using H = std::decay_t<Handle>;
        static_assert(sizeof(H) <= storage_size && alignof(H) <= alignof(std::max_align_t),
                      "a transport's frame handle must fit in Frame::storage_size bytes");
        static_assert(std::is_nothrow_move_constructible_v<H>);
        Frame f;
        new (f.storage_) H(std::forward<Handle>(handle));
        f.ops_ = &ops;
        return f;
    }

    const std::uint8_t* data() const noexcept { return ops_ ? ops_->data(storage_) : nullptr; }
    std::size_t size() const noexcept { return ops_ ? ops_->size(storage_) : 0; }
    bool empty() const noexcept { return ops_ == nullptr; }

    /// A second owner of the same bytes; an empty Frame if the transport cannot share.
    Frame share() const noexcept {
        Frame f;
        if (ops_ && ops_->share(storage_, f.storage_)) f.ops_ = ops_;
        return f;
    }

    /// Gives the bytes back to the transport now.
    void reset() noexcept {
        if (ops_) ops_->destroy(storage_);
        ops_ = nullptr;
    }

private:
    void take(Frame& other) noexcept {
        if (other.ops_ && other.ops_->move) {
            other.ops_->move(other.storage_, storage_);
            other.ops_->destroy(other.storage_);
        } else if (other.ops_) {
            std::memcpy(storage_, other.storage_, storage_size);
        }
        ops_ = std::exchange(other.ops_, nullptr);
    }

    alignas(std::max_align_t) unsigned char storage_[storage_size];
    const Ops* ops_ = nullptr;
};

/// Bytes on the heap that several Frames may own together (in-process queues
/// share one copy among their peers; shared memory copies a frame out when
/// its reader holds too many chunks).
using SharedBytes = std::shared_ptr<const std::vector<std::uint8_t>>;

namespace frame_detail {
inline const std::uint8_t* bytes_data(const void* h) noexcept { return (*static_cast<const SharedBytes*>(h))->data(); }
inline std::size_t bytes_size(const void* h) noexcept { return (*static_cast<const SharedBytes*>(h))->size(); }
inline void bytes_move(void* from, void* to) noexcept { new (to) SharedBytes(std::move(*static_cast<SharedBytes*>(from))); }
inline void bytes_destroy(void* h) noexcept { static_cast<SharedBytes*>(h)->~SharedBytes(); }
inline bool bytes_share(const void* h, void* to) noexcept {
    new (to) SharedBytes(*static_cast<const SharedBytes*>(h));
    return true;
}
inline const Frame::Ops shared_bytes_ops{bytes_data, bytes_size, bytes_move, bytes_destroy, bytes_share};
}  // namespace frame_detail

/// A Frame owning (a share of) `bytes`.
inline Frame frame_of(SharedBytes bytes) noexcept { return Frame::adopt(std::move(bytes), frame_detail::shared_bytes_ops); }

}  // namespace gecko::detail
