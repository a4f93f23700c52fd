// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file codec.hpp
/// How a message becomes msgpack and back: the `GECKO_MSG_FIELDS` macro that
/// every message type uses, and `encode` / `decode`.
///
/// **Wire form.** A message is a msgpack map from field name (the C++ member
/// name, as `str`) to value; nested messages are maps too; byte vectors are
/// `bin`; `double` is always float64 and `float` always float32 (msgpack-c
/// 4.x would otherwise write 1.0 as the integer 1 and lose -0.0, and Python
/// or browser readers would see an int).
///
/// **Schema evolution.** Decoding looks keys up by name: a key the reader does
/// not know is skipped, a field the writer did not send gets the type's
/// default value (the one from its default member initializer), whatever the
/// output object held before. So fields can be added to a type without
/// breaking older readers or writers, as long as each field has a default.
///
/// **Why not MSGPACK_DEFINE_MAP.** It decodes a map by first copying every key
/// into a `std::map<std::string, object>`, which allocates per field per
/// message. `GECKO_MSG_FIELDS` walks the map in place, trying the position
/// after the previous match first, so a map written in declaration order is
/// matched in one pass without allocating. Measured with msgpack-cxx 4.1.3,
/// g++ -O2: an Imu (211 B) decodes in ~0.5 us against ~1.5 us, a 12-joint
/// JointState in ~0.7 us against ~1.1 us.

#include <gecko/msgs/traits.hpp>

#include <msgpack.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace gecko::msgs {

/// Thrown by decode when a field holds the wrong msgpack type (a string
/// where a number belongs, an array where a nested message belongs, ...).
/// It is a msgpack::type_error, so code catching that still works; what()
/// names the message type and the field path, e.g.
/// "gecko.msgs.Imu: field 'accel.x' has the wrong msgpack type (str)".
class FieldTypeError : public msgpack::type_error {
public:
    FieldTypeError(std::string path, std::string got) : path_(std::move(path)), got_(std::move(got)) {
        rebuild("");
    }

    /// Dotted path of the offending field ("accel.x"); empty for the message itself.
    const std::string& path() const noexcept { return path_; }
    const char* what() const noexcept override { return what_.c_str(); }

    /// Prefixes the path with an enclosing field and renames the message type
    /// (used while the error climbs out of nested messages).
    void nest(std::string_view field, const char* type_name) {
        path_ = std::string(field) + (path_.empty() ? "" : ".") + path_;
        rebuild(type_name);
    }
    void set_type_name(const char* type_name) { rebuild(type_name); }

private:
    void rebuild(const char* type_name) {
        what_ = std::string(type_name ? type_name : "");
        if (!what_.empty()) what_ += ": ";
        if (path_.empty()) {
            what_ += "expected a map (a message), got " + got_;
        } else {
            what_ += "field '" + path_ + "' has the wrong msgpack type (" + got_ + ")";
        }
    }

    std::string path_;
    std::string got_;
    std::string what_;
};

namespace detail {

// ---- field names, split at compile time from the macro's #__VA_ARGS__ ----

constexpr bool is_space(char c) noexcept { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

/// Number of names in a stringized field list: "a, b, c" -> 3, "" -> 0.
constexpr std::size_t count_names(std::string_view list) noexcept {
    std::size_t commas = 0;
    bool any = false;
    for (char c : list) {
        if (c == ',') {
            ++commas;
        } else if (!is_space(c)) {
            any = true;
        }
    }
    return any ? commas + 1 : 0;
}

/// Splits "a, b, c" into {"a", "b", "c"} (views into the literal).
template <std::size_t N>
constexpr std::array<std::string_view, N> split_names(std::string_view list) noexcept {
    std::array<std::string_view, N> out{};
    std::size_t start = 0;
    for (std::size_t i = 0; i < N; ++i) {
        std::size_t end = list.find(',', start);
        if (end == std::string_view::npos) end = list.size();
        std::size_t b = start;
        std::size_t e = end;
        while (b < e && is_space(list[b])) ++b;
        while (e > b && is_space(list[e - 1])) --e;
        out[i] = list.substr(b, e - b);
        start = end + 1;
    }
    return out;
}

template <std::size_t N>
constexpr bool valid_names(const std::array<std::string_view, N>& names) noexcept {
    for (std::size_t i = 0; i < N; ++i) {
        if (names[i].empty()) return false;
        for (std::size_t j = 0; j < i; ++j) {
            if (names[i] == names[j]) return false;
        }
    }
    return true;
}

template <class T>
constexpr const char* type_name_or_null() noexcept {
    if constexpr (is_message_v<T>) {
        return T::type_name;
    } else {
        return nullptr;
    }
}

inline const char* msgpack_type_name(msgpack::type::object_type type) noexcept {
    switch (type) {
        case msgpack::type::NIL: return "nil";
        case msgpack::type::BOOLEAN: return "bool";
        case msgpack::type::POSITIVE_INTEGER: return "positive int";
        case msgpack::type::NEGATIVE_INTEGER: return "negative int";
        case msgpack::type::FLOAT32: return "float32";
        case msgpack::type::FLOAT64: return "float64";
        case msgpack::type::STR: return "str";
        case msgpack::type::BIN: return "bin";
        case msgpack::type::ARRAY: return "array";
        case msgpack::type::MAP: return "map";
        case msgpack::type::EXT: return "ext";
    }
    return "unknown";
}

// ---- encoding ----

template <class T>
struct is_float_vector : std::false_type {};
template <class A>
struct is_float_vector<std::vector<double, A>> : std::true_type {};
template <class A>
struct is_float_vector<std::vector<float, A>> : std::true_type {};

/// Appends raw bytes through the packer (pack_str_body is msgpack-c's plain append).
template <class Packer>
void append_raw(Packer& pk, const char* bytes, std::size_t n) {
    pk.pack_str_body(bytes, static_cast<std::uint32_t>(n));
}

/// Writes the msgpack float64 (0xcb) or float32 (0xca) encoding of `v` into `out`;
/// returns the number of bytes written (9 or 5).
template <class F>
std::size_t store_float(char* out, F v) noexcept {
    if constexpr (sizeof(F) == 8) {
        std::uint64_t bits;
        std::memcpy(&bits, &v, 8);
        out[0] = static_cast<char>(0xcb);
        for (int i = 0; i < 8; ++i) out[1 + i] = static_cast<char>(bits >> (56 - 8 * i));
        return 9;
    } else {
        std::uint32_t bits;
        std::memcpy(&bits, &v, 4);
        out[0] = static_cast<char>(0xca);
        for (int i = 0; i < 4; ++i) out[1 + i] = static_cast<char>(bits >> (24 - 8 * i));
        return 5;
    }
}

/// Packs one field value; floating-point values keep their float type on the wire.
template <class Packer, class V>
void pack_value(Packer& pk, const V& v) {
    if constexpr (std::is_same_v<V, double> || std::is_same_v<V, float>) {
        char buf[9];
        append_raw(pk, buf, store_float(buf, v));
    } else if constexpr (is_float_vector<V>::value) {
        pk.pack_array(static_cast<std::uint32_t>(v.size()));
        char buf[64 * 9];  // batch appends: one write per 64 elements
        std::size_t used = 0;
        for (const auto& x : v) {
            used += store_float(buf + used, x);
            if (used > sizeof(buf) - 9) {
                append_raw(pk, buf, used);
                used = 0;
            }
        }
        if (used != 0) append_raw(pk, buf, used);
    } else {
        pk.pack(v);
    }
}

template <class Packer, class T, std::size_t... I>
void pack_message(Packer& pk, const T& msg, std::index_sequence<I...>) {
    pk.pack_map(static_cast<std::uint32_t>(sizeof...(I)));
    [[maybe_unused]] const auto fields = msg.gecko_fields();
    ((pk.pack_str(static_cast<std::uint32_t>(T::gecko_field_names[I].size())),
      pk.pack_str_body(T::gecko_field_names[I].data(), static_cast<std::uint32_t>(T::gecko_field_names[I].size())),
      pack_value(pk, std::get<I>(fields))),
     ...);
}

// ---- decoding ----

/// Finds `key` among the map's keys, starting at `cursor` and wrapping around;
/// on a hit, moves the cursor past it. Keys that are not str never match.
inline const msgpack::object* find_value(const msgpack::object_map& map, std::uint32_t& cursor,
                                         std::string_view key) noexcept {
    const std::uint32_t n = map.size;
    std::uint32_t i = cursor < n ? cursor : 0;
    for (std::uint32_t tried = 0; tried < n; ++tried) {
        const msgpack::object& k = map.ptr[i].key;
        if (k.type == msgpack::type::STR && k.via.str.size == key.size() &&
            std::memcmp(k.via.str.ptr, key.data(), key.size()) == 0) {
            cursor = i + 1;
            return &map.ptr[i].val;
        }
        if (++i == n) i = 0;
    }
    return nullptr;
}

/// A default-constructed T, built once: the source of values for absent fields.
template <class T>
const T& default_instance() {
    static const T instance{};
    return instance;
}

template <std::size_t I, class T, class Fields>
void unpack_field(const msgpack::object_map& map, std::uint32_t& cursor, Fields& fields) {
    if (const msgpack::object* value = find_value(map, cursor, T::gecko_field_names[I])) {
        try {
            value->convert(std::get<I>(fields));
        } catch (FieldTypeError& e) {
            e.nest(T::gecko_field_names[I], type_name_or_null<T>());
            throw;
        } catch (const msgpack::type_error&) {
            FieldTypeError e(std::string(T::gecko_field_names[I]), msgpack_type_name(value->type));
            e.set_type_name(type_name_or_null<T>());
            throw e;
        }
    } else {
        std::get<I>(fields) = std::get<I>(default_instance<T>().gecko_fields());
    }
}

template <class T, std::size_t... I>
void unpack_message(const msgpack::object& o, T& msg, std::index_sequence<I...>) {
    if (o.type != msgpack::type::MAP) {
        FieldTypeError e("", msgpack_type_name(o.type));
        e.set_type_name(type_name_or_null<T>());
        throw e;
    }
    [[maybe_unused]] auto fields = msg.gecko_fields();
    [[maybe_unused]] std::uint32_t cursor = 0;
    (unpack_field<I, T>(o.via.map, cursor, fields), ...);
}

template <class T, std::size_t... I>
void object_message(msgpack::object& o, msgpack::zone& z, const T& msg, std::index_sequence<I...>) {
    constexpr std::size_t n = sizeof...(I);
    o.type = msgpack::type::MAP;
    o.via.map.size = static_cast<std::uint32_t>(n);
    o.via.map.ptr = nullptr;
    if constexpr (n != 0) {
        auto* kv = static_cast<msgpack::object_kv*>(
            z.allocate_align(sizeof(msgpack::object_kv) * n, MSGPACK_ZONE_ALIGNOF(msgpack::object_kv)));
        const auto fields = msg.gecko_fields();
        ((kv[I].key.type = msgpack::type::STR,
          kv[I].key.via.str.ptr = T::gecko_field_names[I].data(),  // a string literal: lives forever
          kv[I].key.via.str.size = static_cast<std::uint32_t>(T::gecko_field_names[I].size()),
          kv[I].val = msgpack::object(std::get<I>(fields), z)),
         ...);
        o.via.map.ptr = kv;
    }
}

/// Tells msgpack::unpack to reference str/bin/ext bodies in the input
/// instead of copying them into the zone; decode copies them once, into the
/// message's own std::string / std::vector, before returning.
inline bool reference_input(msgpack::type::object_type, std::size_t, void*) noexcept { return true; }

/// Bounds derived from the input size, so that a short malicious buffer
/// announcing a 4-billion-element array cannot make unpack allocate gigabytes:
/// every element takes at least one byte (a map entry two).
inline msgpack::unpack_limit limits_for(std::size_t size, std::size_t max_depth) noexcept {
    return msgpack::unpack_limit(size, size / 2, size, size, size, max_depth);
}

/// Empties a zone when leaving scope (also on exceptions).
struct ZoneClearer {
    msgpack::zone& zone;
    ~ZoneClearer() { zone.clear(); }
};

}  // namespace detail

/// Maximum nesting depth decode accepts (maps and arrays inside each other).
inline constexpr std::size_t max_decode_depth = 64;

/// Packs `msg` into an existing packer.
template <class Stream, class T>
void encode(msgpack::packer<Stream>& packer, const T& msg) {
    packer.pack(msg);
}

/// Appends the msgpack encoding of `msg` to `out`, any msgpack buffer
/// (a type with `write(const char*, std::size_t)`: msgpack::sbuffer, gecko::Buffer, ...).
template <class Stream, class T>
void encode(Stream& out, const T& msg) {
    msgpack::packer<Stream> packer(out);
    packer.pack(msg);
}

/// Returns the msgpack encoding of `msg` in a new buffer.
template <class T>
msgpack::sbuffer encode(const T& msg) {
    msgpack::sbuffer out;
    encode(out, msg);
    return out;
}

/// Decodes exactly one message from `data[0, size)` into `out`.
///
/// Every field of `out` is overwritten: from the input when its key is
/// present, with the type's default when it is absent. Existing capacity of
/// `out`'s strings and vectors is reused. `zone` is scratch memory for the
/// parse tree; it is emptied before returning, and reusing one across calls
/// saves an allocation per message. `out` never refers to `data` or `zone`
/// afterwards (str and bin are copied into `out`'s own containers).
///
/// Throws: msgpack::unpack_error (truncated or malformed input, trailing
/// bytes, sizes or nesting beyond what the input can hold) or
/// gecko::msgs::FieldTypeError, a msgpack::type_error (a field of the wrong
/// type). `out` is left valid but unspecified when it throws.
template <class T>
void decode(const void* data, std::size_t size, T& out, msgpack::zone& zone) {
    detail::ZoneClearer clear_on_exit{zone};
    const char* bytes = static_cast<const char*>(data);
    std::size_t offset = 0;
    const msgpack::object obj = msgpack::unpack(zone, bytes, size, offset, &detail::reference_input, nullptr,
                                                detail::limits_for(size, max_decode_depth));
    if (offset != size) {
        throw msgpack::unpack_error("gecko::msgs::decode: " + std::to_string(size - offset) +
                                    " trailing bytes after the message");
    }
    obj.convert(out);
}

/// As above, with a per-thread scratch zone.
template <class T>
void decode(const void* data, std::size_t size, T& out) {
    thread_local msgpack::zone zone;
    decode(data, size, out, zone);
}

/// Returns the message decoded from `data[0, size)`. Throws as decode(data, size, out).
template <class T>
T decode(const void* data, std::size_t size) {
    T out{};
    decode(data, size, out);
    return out;
}

}  // namespace gecko::msgs

/// Declares a message's fields, in order, for msgpack (put it last in the
/// struct, after the fields). Generates msgpack_pack, msgpack_unpack and
/// msgpack_object (see the top of this file for the wire form and the
/// schema-evolution rules), plus `gecko_field_names` (a constexpr array of
/// the names) and `gecko_fields()` (a tuple of references), which tools can
/// use to walk any message. Works at namespace or class scope, not in a
/// function-local struct (those cannot have static members).
///
/// **Example**:
///
///     struct Vector3 {
///         static constexpr const char* type_name = "gecko.msgs.Vector3";
///         double x = 0.0, y = 0.0, z = 0.0;
///         GECKO_MSG_FIELDS(x, y, z)
///     };
#define GECKO_MSG_FIELDS(...)                                                                            \
    static constexpr auto gecko_field_names =                                                            \
        ::gecko::msgs::detail::split_names<::gecko::msgs::detail::count_names(#__VA_ARGS__)>(#__VA_ARGS__); \
    static_assert(::gecko::msgs::detail::valid_names(gecko_field_names),                                 \
                  "GECKO_MSG_FIELDS: list each member once, by its plain name");                          \
    auto gecko_fields() noexcept { return std::tie(__VA_ARGS__); }                                        \
    auto gecko_fields() const noexcept { return std::tie(__VA_ARGS__); }                                  \
    template <typename GeckoPacker>                                                                      \
    void msgpack_pack(GeckoPacker& gecko_packer) const {                                                 \
        ::gecko::msgs::detail::pack_message(gecko_packer, *this,                                         \
                                            std::make_index_sequence<gecko_field_names.size()>{});       \
    }                                                                                                    \
    void msgpack_unpack(const ::msgpack::object& gecko_object) {                                         \
        ::gecko::msgs::detail::unpack_message(gecko_object, *this,                                       \
                                              std::make_index_sequence<gecko_field_names.size()>{});     \
    }                                                                                                    \
    void msgpack_object(::msgpack::object* gecko_object, ::msgpack::zone& gecko_zone) const {            \
        ::gecko::msgs::detail::object_message(*gecko_object, gecko_zone, *this,                          \
                                              std::make_index_sequence<gecko_field_names.size()>{});     \
    }
