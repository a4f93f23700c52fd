// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file traits.hpp
/// Compile-time facts about message types: is a type a message, and what is
/// its stable wire name. Needs no msgpack header.

#include <type_traits>

namespace gecko::msgs {

/// True when `T` declares `static constexpr const char* type_name`, the
/// stable name ("gecko.msgs.Imu") that publishers put in every frame and
/// subscribers check.
template <class T, class = void>
struct is_message : std::false_type {};

template <class T>
struct is_message<T, std::void_t<decltype(T::type_name)>>
    : std::bool_constant<std::is_convertible_v<decltype(T::type_name), const char*>> {};

template <class T>
inline constexpr bool is_message_v = is_message<T>::value;

/// Returns the stable wire name of message type `T`, e.g. "gecko.msgs.Imu".
template <class T>
constexpr const char* type_name_of() {
    static_assert(is_message_v<T>,
                  "gecko: T is not a message type (it needs `static constexpr const char* type_name`)");
    return T::type_name;
}

}  // namespace gecko::msgs
