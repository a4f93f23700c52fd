#pragma once
/// @file codec.hpp
/// Typed encode and decode of message structs with msgpack. Any struct with a
/// `static constexpr const char* type_name` and msgpack field definitions
/// (see msgs/) is a message.

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <type_traits>

#include <msgpack.hpp>

#include "gecko/buffer.hpp"
#include "gecko/error.hpp"

namespace gecko {

/// The stable wire name of a message type ("gecko.msgs.Imu").
template <class T>
constexpr std::string_view type_name_of() noexcept {
    return T::type_name;
}

namespace codec {

/// True for GECKO_MSG_FIELDS types: their decode gives every field missing
/// from the data its default, so decoding over an old value is safe (and
/// keeps the old value's vector and string capacity).
template <class T, class = void>
struct decodes_in_place : std::false_type {};
template <class T>
struct decodes_in_place<T, std::void_t<decltype(T::gecko_field_names)>> : std::true_type {};

/// Appends the msgpack encoding of `message` to `out`.
template <class T>
void encode(Buffer& out, const T& message) {
    msgpack::packer<Buffer> packer(out);
    packer.pack(message);
}

/// Decodes exactly `size` bytes of msgpack into `out`. Unknown fields are
/// ignored. Fields missing from the data take the type's default with
/// GECKO_MSG_FIELDS types (keep what `out` held with MSGPACK_DEFINE_MAP ones,
/// which is why subscribers decode into a fresh value).
/// @throws gecko::Error (Errc::decode) on malformed data, trailing bytes or a
/// field of the wrong msgpack type.
template <class T>
void decode(const std::uint8_t* data, std::size_t size, T& out) {
    // Reused per thread: decoding allocates nothing once the zone has grown.
    thread_local msgpack::zone zone;
    // Strings and byte arrays reference the input instead of being copied twice.
    auto reference_all = [](msgpack::type::object_type, std::size_t, void*) { return true; };
    // Bound every length by the input size, so a forged header cannot make
    // the decoder reserve more than the frame could hold.
    const msgpack::unpack_limit limit(size, size, size, size, size, 64);
    std::size_t offset = 0;
    try {
        msgpack::object object = msgpack::unpack(zone, reinterpret_cast<const char*>(data), size, offset,
                                                  reference_all, nullptr, limit);
        if (offset != size) throw Error(Errc::decode, "trailing bytes after the msgpack object");
        object.convert(out);
    } catch (const Error&) {
        zone.clear();
        throw;
    } catch (const std::exception& e) {
        zone.clear();
        throw Error(Errc::decode, std::string("msgpack: ") + e.what());
    }
    zone.clear();
}

}  // namespace codec
}  // namespace gecko
