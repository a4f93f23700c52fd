// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file assign.hpp
/// `gecko::wire::assign(dst, src)`: `dst` becomes equal to `src`, keeping
/// `dst`'s memory wherever the two have the same shape.
///
/// `dst = src` on a message with maps of structs allocates anew every time:
/// std::map reuses its nodes but destroys and copy-constructs the values in
/// them, so every vector and map inside is allocated again. A loop that
/// refreshes one message per step (a simulation writing its sensors, a
/// controller copying its control into the request it sends) uses assign()
/// instead and allocates nothing once the shapes have settled.
///
/// ```cpp
/// gecko::wire::assign(request.control, control);  // same keys, same sizes: no allocation
/// ```
///
/// Maps are walked key by key when both have the same keys (else copied
/// whole); vectors and arrays of structs element by element; optionals and
/// fields of GECKO_MSG_FIELDS structs recursively; anything else by `=`.
/// A struct's members that GECKO_MSG_FIELDS does not list are not copied
/// (they are not part of the message either).

#include <algorithm>
#include <cstddef>
#include <tuple>
#include <utility>

#include <gecko/message.hpp>

namespace gecko::wire {

template <class T>
void assign(T& dst, const T& src);

namespace detail {

template <class Map>
bool same_keys(const Map& a, const Map& b) {
    return a.size() == b.size() &&
           std::equal(a.begin(), a.end(), b.begin(), [](const auto& x, const auto& y) { return x.first == y.first; });
}

template <class Dst, class Src, std::size_t... I>
void assign_fields(Dst&& dst, const Src& src, std::index_sequence<I...>) {
    (::gecko::wire::assign(std::get<I>(dst), std::get<I>(src)), ...);
}

}  // namespace detail

template <class T>
void assign(T& dst, const T& src) {
    if (&dst == &src) return;
    if constexpr (detail::is_string_map<T>::value) {
        if (!detail::same_keys(dst, src)) {
            dst = src;
            return;
        }
        auto d = dst.begin();
        for (auto s = src.begin(); s != src.end(); ++s, ++d) assign(d->second, s->second);
    } else if constexpr (detail::is_vector<T>::value || detail::is_std_array<T>::value) {
        using E = typename T::value_type;
        if constexpr (std::is_trivially_copyable_v<E>) {
            dst = src;  // vector's operator= keeps its capacity
        } else {
            if constexpr (detail::is_vector<T>::value) dst.resize(src.size());
            for (std::size_t i = 0; i < src.size(); ++i) assign(dst[i], src[i]);
        }
    } else if constexpr (detail::is_optional<T>::value) {
        if (!src) {
            dst.reset();
        } else if (dst) {
            assign(*dst, *src);
        } else {
            dst = src;
        }
    } else if constexpr (has_fields_v<T>) {
        auto to = dst.gecko_fields();
        const auto from = src.gecko_fields();
        detail::assign_fields(to, from, std::make_index_sequence<std::tuple_size_v<decltype(from)>>{});
    } else {
        dst = src;
    }
}

}  // namespace gecko::wire
