// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file codec.hpp
/// A message to msgpack bytes and back: gecko::wire::encode and
/// gecko::wire::decode, for any message type (gecko/message.hpp).
///
/// Publishers, subscribers and services call these; call them yourself to
/// store messages, or to test a type's wire form.
///
/// **Example**:
///
///     gecko::Buffer bytes;
///     gecko::wire::encode(bytes, imu);
///     auto back = gecko::wire::decode<gecko::msgs::Imu>(bytes.data(), bytes.size());

#include <gecko/message.hpp>
#include <gecko/wire/packer.hpp>
#include <gecko/wire/reader.hpp>

#include <msgpack.hpp>

#include <cstddef>
#include <cstdint>

namespace gecko::wire {

template <class Stream, class = void>
struct has_extend : std::false_type {};
template <class Stream>
struct has_extend<Stream, std::void_t<decltype(std::declval<Stream&>().extend(std::size_t{}))>> : std::true_type {};

/// Appends the msgpack encoding of `message` to `out`: any buffer with
/// `write(const char*, std::size_t)` (gecko::Buffer, msgpack::sbuffer, ...).
/// @throws gecko::Error (Errc::invalid_argument) for a value that has no wire
/// form: an enum value GECKO_MSG_ENUM does not list, a container of 2^32
/// elements or more. Whatever `out` throws.
template <class Stream, class T>
void encode(Stream& out, const T& message) {
    static_assert(is_message_v<T>,
                  "gecko::wire::encode: T is not a message; it needs `static constexpr const char* type_name = "
                  "\"...\";` and GECKO_MSG_FIELDS(...) (gecko/message.hpp)");
    if constexpr (is_message_v<T>) {
        if constexpr (has_extend<Stream>::value) {
            BasicPacker<Stream> packer(out);  // stores in place: a publisher's frame or loan
            detail::pack_message(packer, message);
        } else {
            msgpack::packer<Stream> packer(out);
            detail::pack_message(packer, message);
        }
    }
}

/// Decodes exactly one message from `data[0, size)` into `out`.
///
/// Every field of `out` is overwritten: from the input when its key is
/// present, with the type's default when it is absent; strings, vectors and
/// maps keep their memory. gecko::BytesView fields point into `data` and are
/// valid only while it is. See gecko/message.hpp for the rules.
/// @throws DecodeError (a gecko::Error, Errc::decode) on malformed or
/// truncated msgpack, a field of the wrong type, nesting deeper than
/// Reader::max_depth, or bytes left after the message. `out` is then valid
/// but holds an unspecified mix of old and new values.
template <class T>
void decode(const std::uint8_t* data, std::size_t size, T& out) {
    static_assert(is_message_v<T>,
                  "gecko::wire::decode: T is not a message; it needs `static constexpr const char* type_name = "
                  "\"...\";` and GECKO_MSG_FIELDS(...) (gecko/message.hpp)");
    if constexpr (is_message_v<T>) {
        Reader reader(data, size);
        try {
            detail::read_message(reader, out);
            reader.expect_end();
        } catch (DecodeError& e) {
            e.set_type_name(T::type_name);
            throw;
        }
    }
}

/// Returns the message decoded from `data[0, size)`.
/// @throws DecodeError as decode(data, size, out).
template <class T>
T decode(const std::uint8_t* data, std::size_t size) {
    T out{};
    decode(data, size, out);
    return out;
}

}  // namespace gecko::wire
