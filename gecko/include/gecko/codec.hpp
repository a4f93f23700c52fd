#pragma once
/// @file codec.hpp
/// Typed encode and decode of message structs with msgpack, for the node
/// runtime. Both forward to gecko::wire (gecko/wire/codec.hpp), the one
/// bounded decoder; any struct with a `static constexpr const char*
/// type_name` and GECKO_MSG_FIELDS (gecko/message.hpp) is a message.

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <type_traits>

#include "gecko/buffer.hpp"
#include "gecko/error.hpp"
#include "gecko/message.hpp"
#include "gecko/wire/codec.hpp"

namespace gecko {

/// The stable wire name of a message type ("gecko.msgs.Imu").
template <class T>
constexpr std::string_view type_name_of() noexcept {
    static_assert(wire::is_message_v<T>,
                  "gecko: a message type needs `static constexpr const char* type_name = \"pkg.Name\";` and "
                  "GECKO_MSG_FIELDS(field, ...) (see gecko/message.hpp)");
    if constexpr (wire::is_message_v<T>) {
        return T::type_name;
    } else {
        return {};
    }
}

namespace codec {

/// True for GECKO_MSG_FIELDS types: their decode gives every field missing
/// from the data its default, so decoding over an old value is safe (and
/// keeps the old value's vector and string capacity).
template <class T, class = void>
struct decodes_in_place : std::false_type {};
template <class T>
struct decodes_in_place<T, std::void_t<decltype(T::gecko_field_names)>> : std::true_type {};

/// Appends the msgpack encoding of `message` to `out` (gecko::wire::encode).
template <class T>
void encode(Buffer& out, const T& message) {
    wire::encode(out, message);
}

/// Decodes exactly `size` bytes of msgpack into `out` (gecko::wire::decode):
/// unknown fields are skipped, missing ones take the type's default.
/// @throws gecko::Error (Errc::decode; a gecko::wire::DecodeError) on
/// malformed data, trailing bytes or a field of the wrong msgpack type.
template <class T>
void decode(const std::uint8_t* data, std::size_t size, T& out) {
    wire::decode(data, size, out);
}

}  // namespace codec
}  // namespace gecko
