// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file codec.hpp
/// The gecko::msgs names for the message codec, kept for code written
/// against them: GECKO_MSG_FIELDS and GECKO_MSG_ENUM come from
/// gecko/message.hpp, and encode / decode forward to gecko::wire
/// (gecko/wire/codec.hpp), which new code should call directly.

#include <gecko/message.hpp>
#include <gecko/msgs/traits.hpp>
#include <gecko/wire/codec.hpp>
#include <gecko/wire/reader.hpp>

#include <msgpack.hpp>

#include <cstddef>
#include <cstdint>

namespace gecko::msgs {

/// Maximum nesting depth decode accepts (maps and arrays inside each other).
inline constexpr std::size_t max_decode_depth = wire::Reader::max_depth;

/// Packs `msg` into an existing msgpack-c packer.
template <class Stream, class T>
void encode(msgpack::packer<Stream>& packer, const T& msg) {
    static_assert(wire::is_message_v<T>,
                  "gecko::msgs::encode: T is not a message; it needs `static constexpr const char* type_name = "
                  "\"...\";` and GECKO_MSG_FIELDS(...) (gecko/message.hpp)");
    if constexpr (wire::is_message_v<T>) wire::detail::pack_message(packer, msg);
}

/// Appends the msgpack encoding of `msg` to `out` (see gecko::wire::encode).
template <class Stream, class T>
void encode(Stream& out, const T& msg) {
    wire::encode(out, msg);
}

/// Returns the msgpack encoding of `msg` in a new buffer.
template <class T>
msgpack::sbuffer encode(const T& msg) {
    msgpack::sbuffer out;
    wire::encode(out, msg);
    return out;
}

/// Decodes exactly one message from `data[0, size)` into `out` (see gecko::wire::decode).
/// @throws gecko::wire::DecodeError (a gecko::Error, Errc::decode).
template <class T>
void decode(const void* data, std::size_t size, T& out) {
    wire::decode(static_cast<const std::uint8_t*>(data), size, out);
}

/// Returns the message decoded from `data[0, size)`.
/// @throws gecko::wire::DecodeError (a gecko::Error, Errc::decode).
template <class T>
T decode(const void* data, std::size_t size) {
    return wire::decode<T>(static_cast<const std::uint8_t*>(data), size);
}

}  // namespace gecko::msgs
