// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file
/// Little-endian loads and stores for the frame header's fixed-size integers
/// (docs/PROTOCOL.md §2). Through memcpy they compile to one move on a
/// little-endian host (and a move plus a byte swap elsewhere); the byte loops
/// they replace cost eight loads, shifts and ors per field at -O2, on every
/// message.

#include <cstdint>
#include <cstring>

namespace gecko::wire {

namespace detail {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
inline std::uint32_t to_le(std::uint32_t v) noexcept { return __builtin_bswap32(v); }
inline std::uint64_t to_le(std::uint64_t v) noexcept { return __builtin_bswap64(v); }
#else
inline std::uint32_t to_le(std::uint32_t v) noexcept { return v; }
inline std::uint64_t to_le(std::uint64_t v) noexcept { return v; }
#endif
}  // namespace detail

inline std::uint32_t load_le32(const std::uint8_t* p) noexcept {
    std::uint32_t v;
    std::memcpy(&v, p, sizeof v);
    return detail::to_le(v);
}
inline std::uint64_t load_le64(const std::uint8_t* p) noexcept {
    std::uint64_t v;
    std::memcpy(&v, p, sizeof v);
    return detail::to_le(v);
}
inline void store_le32(std::uint8_t* p, std::uint32_t v) noexcept {
    v = detail::to_le(v);
    std::memcpy(p, &v, sizeof v);
}
inline void store_le64(std::uint8_t* p, std::uint64_t v) noexcept {
    v = detail::to_le(v);
    std::memcpy(p, &v, sizeof v);
}

}  // namespace gecko::wire
