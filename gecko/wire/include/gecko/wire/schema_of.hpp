// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file schema_of.hpp
/// The schema (schema.hpp) of a message type declared with
/// GECKO_MSG_FIELDS, built from its declaration at compile time: what a
/// publisher of T declares to geckocore, and what `gecko type` prints.
///
/// **Example**: `static const gecko::wire::Schema s = gecko::wire::schema_of<my_robot::Status>();`

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <gecko/bytes_to_fill.hpp>
#include <gecko/bytes_view.hpp>
#include <gecko/message.hpp>
#include <gecko/wire/schema.hpp>

namespace gecko::wire {
namespace detail {

template <class M, std::size_t I>
using field_t =
    std::remove_cv_t<std::remove_reference_t<std::tuple_element_t<I, decltype(std::declval<const M&>().gecko_fields())>>>;

// The message types a schema has collected so far (the declared one first).
struct SchemaBuilder {
    std::vector<MessageSchema> types;
    bool has(std::string_view name) const {
        for (const auto& t : types)
            if (t.type_name == name) return true;
        return false;
    }
};

template <class T>
FieldType field_type_of(SchemaBuilder& b);

template <class M, std::size_t... I>
std::vector<SchemaField> fields_of(SchemaBuilder& b, std::index_sequence<I...>) {
    std::vector<SchemaField> fields;
    (fields.push_back(SchemaField{std::string(M::gecko_field_names[I]), field_type_of<field_t<M, I>>(b)}), ...);
    return fields;
}

template <class M>
std::vector<SchemaField> fields_of(SchemaBuilder& b) {
    return fields_of<M>(b, std::make_index_sequence<M::gecko_field_names.size()>{});
}

template <class M>
void add_message(SchemaBuilder& b) {
    if (b.has(M::type_name)) return;
    const std::size_t at = b.types.size();
    b.types.push_back(MessageSchema{M::type_name, {}});  // first, so that a type naming itself stops here
    auto fields = fields_of<M>(b);
    b.types[at].fields = std::move(fields);
}

template <class T>
FieldType scalar(FieldType::Kind kind) {
    FieldType f;
    f.kind = kind;
    return f;
}

template <class T>
FieldType with_item(FieldType::Kind kind, SchemaBuilder& b, std::size_t size = 0) {
    FieldType f;
    f.kind = kind;
    f.size = size;
    f.item.push_back(field_type_of<T>(b));
    return f;
}

template <class T>
FieldType field_type_of(SchemaBuilder& b) {
    using K = FieldType::Kind;
    if constexpr (std::is_same_v<T, bool>) {
        return scalar<T>(K::boolean);
    } else if constexpr (std::is_integral_v<T>) {
        constexpr K s[] = {K::int8, K::int16, K::int32, K::int64};
        constexpr K u[] = {K::uint8, K::uint16, K::uint32, K::uint64};
        constexpr std::size_t i = sizeof(T) == 1 ? 0 : sizeof(T) == 2 ? 1 : sizeof(T) == 4 ? 2 : 3;
        return scalar<T>(std::is_signed_v<T> ? s[i] : u[i]);
    } else if constexpr (std::is_same_v<T, double>) {
        return scalar<T>(K::float64);
    } else if constexpr (std::is_same_v<T, float>) {
        return scalar<T>(K::float32);
    } else if constexpr (std::is_same_v<T, std::string>) {
        return scalar<T>(K::str);
    } else if constexpr (std::is_same_v<T, BytesView> || std::is_same_v<T, BytesToFill> ||
                         detail::is_byte_container_v<T>) {
        FieldType f = scalar<T>(K::bin);
        if constexpr (detail::is_std_array<T>::value) f.size = std::tuple_size<T>::value;
        return f;
    } else if constexpr (is_enum_v<T>) {
        constexpr const auto& table = detail::enum_table<T>;
        FieldType f = scalar<T>(K::enumeration);
        f.name = table.type;
        for (auto n : table.names) f.names.emplace_back(n);
        for (auto v : table.values) f.values.push_back(static_cast<std::int64_t>(static_cast<std::underlying_type_t<T>>(v)));
        return f;
    } else if constexpr (detail::is_std_array<T>::value) {
        return with_item<typename T::value_type>(K::array, b, std::tuple_size<T>::value);
    } else if constexpr (detail::is_vector<T>::value) {
        return with_item<typename T::value_type>(K::array, b);
    } else if constexpr (detail::is_optional<T>::value) {
        return with_item<typename T::value_type>(K::optional, b);
    } else if constexpr (detail::is_string_map<T>::value) {
        return with_item<typename T::mapped_type>(K::map, b);
    } else if constexpr (is_message_v<T>) {
        add_message<T>(b);
        FieldType f = scalar<T>(K::message);
        f.name = T::type_name;
        return f;
    } else {
        static_assert(has_fields_v<T>, "gecko: schema_of() meets a field type the codec does not know");
        FieldType f = scalar<T>(K::record);
        f.fields = fields_of<T>(b);
        return f;
    }
}

}  // namespace detail

/// The schema of message type M (a struct with `type_name` and GECKO_MSG_FIELDS).
template <class M>
Schema schema_of() {
    static_assert(is_message_v<M>, "gecko: schema_of<M>() needs a message type (type_name and GECKO_MSG_FIELDS)");
    detail::SchemaBuilder b;
    detail::add_message<M>(b);
    return Schema(std::move(b.types));
}

}  // namespace gecko::wire
