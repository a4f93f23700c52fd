// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file packer.hpp
/// gecko::wire::Packer: writes msgpack into a gecko::Buffer (or any stream
/// with `write` and `extend`, such as a gecko::Loan), byte for byte
/// what msgpack-c's packer writes (the smallest form of each header), with
/// the bytes stored in place instead of one out-of-line append per header
/// (floats excepted: pack_float32 and pack_float64 keep their width).
/// The message encoder (gecko::wire::encode) uses it for Buffers; other
/// streams keep msgpack-c's packer. Same member names as msgpack-c's, so the
/// encoder's templates take either.

#include <cstdint>
#include <cstring>
#include <string_view>
#include <type_traits>

#include "gecko/buffer.hpp"

namespace gecko::wire {

/// Copies `n` < 32 bytes with a few fixed-size moves, overlapping where `n`
/// is not a power of two: a library memcpy call costs more than the few bytes
/// of a field name or an enumerator.
inline void copy_short(std::uint8_t* to, const char* from, std::size_t n) noexcept {
    if (n >= 16) {
        std::memcpy(to, from, 16);
        std::memcpy(to + n - 16, from + n - 16, 16);
    } else if (n >= 8) {
        std::memcpy(to, from, 8);
        std::memcpy(to + n - 8, from + n - 8, 8);
    } else if (n >= 4) {
        std::memcpy(to, from, 4);
        std::memcpy(to + n - 4, from + n - 4, 4);
    } else {
        for (std::size_t i = 0; i < n; ++i) to[i] = static_cast<std::uint8_t>(from[i]);
    }
}

template <class Stream>
class BasicPacker {
public:
    using Packer = BasicPacker;
    explicit BasicPacker(Stream& out) noexcept : out_(out) {}

    Packer& pack_nil() { return byte(0xc0); }
    Packer& pack_true() { return byte(0xc3); }
    Packer& pack_false() { return byte(0xc2); }

    template <class Int, std::enable_if_t<std::is_integral_v<Int> && !std::is_same_v<Int, bool>, int> = 0>
    Packer& pack(Int v) {
        if constexpr (std::is_signed_v<Int>) {
            if (v < 0) return negative(static_cast<std::int64_t>(v));
        }
        return positive(static_cast<std::uint64_t>(v));
    }

    /// A float32 or float64, always as that float, even when integral (where
    /// msgpack-c's pack_float and pack_double write 1.0 as the int 1).
    Packer& pack_float32(float v) {
        std::uint32_t bits;
        std::memcpy(&bits, &v, sizeof bits);
        return head<4>(0xca, bits);
    }
    Packer& pack_float64(double v) {
        std::uint64_t bits;
        std::memcpy(&bits, &v, sizeof bits);
        return head<8>(0xcb, bits);
    }

    /// A str: header and bytes. A short one (a field name, a map key, an
    /// enumerator) is one `extend` and a few moves, inline.
    [[gnu::always_inline]] Packer& pack(std::string_view text) {
        const std::size_t n = text.size();
        if (n < 32) {
            std::uint8_t* p = out_.extend(1 + n);
            p[0] = static_cast<std::uint8_t>(0xa0 | n);
            copy_short(p + 1, text.data(), n);
            return *this;
        }
        return pack_long(text);
    }

    /// Room for `n` bytes written in place (floats of an array, stored as they are converted).
    std::uint8_t* room(std::size_t n) { return out_.extend(n); }

    Packer& pack_str(std::uint32_t n) {
        if (n < 32) return byte(static_cast<std::uint8_t>(0xa0 | n));
        if (n < 256) return head8(0xd9, n);
        if (n < 65536) return head16(0xda, n);
        return head32(0xdb, n);
    }
    Packer& pack_str_body(const char* bytes, std::uint32_t n) { return raw(bytes, n); }
    Packer& pack_bin(std::uint32_t n) {
        if (n < 256) return head8(0xc4, n);
        if (n < 65536) return head16(0xc5, n);
        return head32(0xc6, n);
    }
    Packer& pack_bin_body(const char* bytes, std::uint32_t n) { return raw(bytes, n); }
    /// A bin header and room for its `n` bytes, returned to be filled in
    /// place (zeroed in a Buffer, which may be sent before anyone fills it).
    std::uint8_t* reserve_bin(std::uint32_t n) {
        pack_bin(n);
        std::uint8_t* at = out_.extend(n);
        if constexpr (std::is_same_v<Stream, Buffer>) {
            if (n != 0) std::memset(at, 0, n);
        }
        return at;
    }
    Packer& pack_array(std::uint32_t n) {
        if (n < 16) return byte(static_cast<std::uint8_t>(0x90 | n));
        if (n < 65536) return head16(0xdc, n);
        return head32(0xdd, n);
    }
    Packer& pack_map(std::uint32_t n) {
        if (n < 16) return byte(static_cast<std::uint8_t>(0x80 | n));
        if (n < 65536) return head16(0xde, n);
        return head32(0xdf, n);
    }

private:
    // A str of 32 bytes or more (< 4 GiB: the caller checked).
    [[gnu::noinline]] Packer& pack_long(std::string_view text) {
        pack_str(static_cast<std::uint32_t>(text.size()));
        return raw(text.data(), text.size());
    }
    Packer& raw(const char* bytes, std::size_t n) {
        out_.write(bytes, n);
        return *this;
    }
    Packer& byte(std::uint8_t b) {
        *out_.extend(1) = b;
        return *this;
    }
    // A header byte, then `n` in `size` bytes, big-endian.
    template <int size>
    Packer& head(std::uint8_t h, std::uint64_t n) {
        std::uint8_t* p = out_.extend(1 + size);
        p[0] = h;
        for (int i = 0; i < size; ++i) p[1 + i] = static_cast<std::uint8_t>(n >> (8 * (size - 1 - i)));
        return *this;
    }
    Packer& head8(std::uint8_t h, std::uint64_t n) { return head<1>(h, n); }
    Packer& head16(std::uint8_t h, std::uint64_t n) { return head<2>(h, n); }
    Packer& head32(std::uint8_t h, std::uint64_t n) { return head<4>(h, n); }

    // msgpack-c's forms: a non-negative value, signed or not, as the smallest unsigned form.
    Packer& positive(std::uint64_t v) {
        if (v < 128) return byte(static_cast<std::uint8_t>(v));
        if (v < 256) return head<1>(0xcc, v);
        if (v < 65536) return head<2>(0xcd, v);
        if (v < 4294967296ull) return head<4>(0xce, v);
        return head<8>(0xcf, v);
    }
    Packer& negative(std::int64_t v) {
        if (v >= -32) return byte(static_cast<std::uint8_t>(v));
        const auto u = static_cast<std::uint64_t>(v);
        if (v >= -128) return head<1>(0xd0, u);
        if (v >= -32768) return head<2>(0xd1, u);
        if (v >= -2147483648ll) return head<4>(0xd2, u);
        return head<8>(0xd3, u);
    }

    Stream& out_;
};

using Packer = BasicPacker<Buffer>;

}  // namespace gecko::wire
