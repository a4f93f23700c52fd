// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file message.hpp
/// How to declare a message: `GECKO_MSG_FIELDS` for structs, `GECKO_MSG_ENUM`
/// for enums, and what each field type becomes on the wire.
///
/// **Example**:
///
///     enum class Mode : std::uint8_t { idle, driving, docked };
///     GECKO_MSG_ENUM(Mode, idle, driving, docked)     // at namespace scope
///
///     struct Status {
///         static constexpr const char* type_name = "my_robot.Status";  // stable, dotted
///         std::int64_t stamp_ns = 0;
///         Mode mode = Mode::idle;
///         std::vector<double> battery_cells;
///         GECKO_MSG_FIELDS(stamp_ns, mode, battery_cells)  // last in the struct
///     };
///
/// Encode and decode with gecko/wire/codec.hpp (`gecko::wire::encode`,
/// `gecko::wire::decode`); publishers and subscribers do it for you.
///
/// **Wire form** (docs/PROTOCOL.md §3). A message is a msgpack map from field
/// name (the C++ member name, as `str`) to value, in declaration order:
///
/// | C++ field type                          | msgpack |
/// | --------------------------------------- | ------- |
/// | `bool`                                  | true / false |
/// | any integer type                        | int, smallest form (as msgpack-c writes it) |
/// | `double` / `float`                      | float64 / float32, always (even 1.0, even -0.0) |
/// | `std::string`                           | str |
/// | `std::vector<std::uint8_t>`, `std::array<std::uint8_t, N>`, `gecko::BytesView` | bin |
/// | `gecko::BytesToFill` (publishing only: bytes written after encoding, in place) | bin |
/// | `std::vector<T>`, `std::array<T, N>`    | array |
/// | `std::optional<T>`                      | nil when empty, else the value |
/// | `std::map<std::string, T>`              | map with str keys |
/// | a struct with GECKO_MSG_FIELDS          | map (nested message; needs no type_name) |
/// | an enum declared with GECKO_MSG_ENUM    | str: the enumerator's name |
///
/// Encoding goes through msgpack-c's packer, so `msgpack::pack(buffer, msg)`
/// works and writes the same bytes as gecko::wire::encode.
///
/// **Decoding** (the one decoder, gecko/wire/reader.hpp, straight from the bytes):
/// - keys are matched by name; unknown keys are skipped (an older reader of
///   a newer writer); a field whose key is absent gets the value of a
///   default-constructed message (a newer reader of an older writer), whatever
///   the output held before;
/// - a float field accepts any msgpack int or float; an integer field only an
///   int that fits (a float there, even 2.0, is an error); str is not bin and
///   bin is not str; nil only where the field is std::optional;
/// - a message map's keys must be str, and a field may appear only once;
/// - an enum accepts one of its names, or the number of one of its
///   enumerators (as protobuf's JSON mapping does), nothing else;
/// - a std::array needs exactly N elements;
/// - fields are decoded in place: strings, vectors and map nodes of the
///   output keep their memory, so decoding into the same object again
///   allocates only when something grows. A map written in declaration
///   order with every field (as Gecko writes it) is matched key by key
///   against names encoded at compile time; from the first key that breaks
///   that order, keys are looked up by name, first at the position after
///   the previous match. A std::map field whose keys come as last time is
///   read into its nodes in place.
///
/// Every decode error is a gecko::wire::DecodeError (a gecko::Error with
/// Errc::decode) naming the message type and the field path:
/// "gecko.msgs.Imu: field 'accel.x' has msgpack type str, expected a number".

#include <gecko/bytes_to_fill.hpp>
#include <gecko/bytes_view.hpp>
#include <gecko/error.hpp>
#include <gecko/wire/reader.hpp>

#include <msgpack.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace gecko::wire {

// ===========================================================================
// Traits
// ===========================================================================

namespace detail {
template <class T, class = void>
struct has_type_name : std::false_type {};
template <class T>
struct has_type_name<T, std::void_t<decltype(T::type_name)>>
    : std::bool_constant<std::is_convertible_v<decltype(T::type_name), const char*>> {};
}  // namespace detail

/// True for structs that declare their fields with GECKO_MSG_FIELDS (a
/// message, or a struct nested in one).
template <class T, class = void>
struct has_fields : std::false_type {};
template <class T>
struct has_fields<T, std::void_t<decltype(T::gecko_field_names)>> : std::true_type {};
template <class T>
inline constexpr bool has_fields_v = has_fields<T>::value;

/// True for message types: `static constexpr const char* type_name` (the
/// stable name every frame carries, "gecko.msgs.Imu") plus GECKO_MSG_FIELDS.
template <class T>
inline constexpr bool is_message_v = detail::has_type_name<T>::value && has_fields_v<T>;

/// The names and values GECKO_MSG_ENUM declared for enum `E`.
template <class E, std::size_t N>
struct EnumNames {
    std::string_view type;                  ///< the enum's C++ name, for error messages
    std::array<E, N> values;                ///< in declaration order
    std::array<std::string_view, N> names;  ///< wire names; views of string literals (NUL-terminated)
};

namespace detail {
template <class E, class = void>
struct is_msg_enum : std::false_type {};
// gecko_msg_enum is found by argument-dependent lookup, in the enum's namespace.
template <class E>
struct is_msg_enum<E, std::enable_if_t<std::is_enum_v<E>, std::void_t<decltype(gecko_msg_enum(E{}))>>>
    : std::true_type {};

template <class E>
inline constexpr auto enum_table = gecko_msg_enum(E{});

template <class E, std::size_t N>
constexpr bool valid_enum_names(const EnumNames<E, N>& t) noexcept {
    for (std::size_t i = 0; i < N; ++i) {
        if (t.names[i].empty()) return false;
        for (std::size_t j = 0; j < i; ++j) {
            if (t.names[i] == t.names[j] || t.values[i] == t.values[j]) return false;
        }
    }
    return true;
}
}  // namespace detail

/// True for enums declared with GECKO_MSG_ENUM.
template <class E>
inline constexpr bool is_enum_v = detail::is_msg_enum<E>::value;

/// The wire name of `value` ("driving"); empty if `value` is none of the
/// declared enumerators. The view's data() is a NUL-terminated literal.
template <class E>
constexpr std::string_view enum_name(E value) noexcept {
    static_assert(is_enum_v<E>, "gecko::wire::enum_name: declare the enum with GECKO_MSG_ENUM");
    constexpr const auto& table = detail::enum_table<E>;
    for (std::size_t i = 0; i < table.values.size(); ++i) {
        if (table.values[i] == value) return table.names[i];
    }
    return {};
}

/// The enumerator whose wire name is `name` (case-sensitive), or nullopt.
template <class E>
constexpr std::optional<E> enum_from_name(std::string_view name) noexcept {
    static_assert(is_enum_v<E>, "gecko::wire::enum_from_name: declare the enum with GECKO_MSG_ENUM");
    constexpr const auto& table = detail::enum_table<E>;
    for (std::size_t i = 0; i < table.names.size(); ++i) {
        if (table.names[i] == name) return table.values[i];
    }
    return std::nullopt;
}

/// Thrown by msgpack-c's `object.as<T>()` / `convert()` for a message type
/// that does not decode: a msgpack::type_error, which msgpack-c callers
/// catch, with the decoder's message (see DecodeError).
class ConvertError : public msgpack::type_error {
public:
    explicit ConvertError(std::string message) : message_(std::move(message)) {}
    const char* what() const noexcept override { return message_.c_str(); }

private:
    std::string message_;
};

namespace detail {

// ===========================================================================
// Field names, split at compile time from GECKO_MSG_FIELDS' #__VA_ARGS__
// ===========================================================================

constexpr bool is_space(char c) noexcept { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

/// Number of names in a stringized list: "a, b, c" -> 3, "" -> 0.
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

/// A field name as msgpack writes it, a fixstr: its header byte, then its
/// bytes. Written and matched with a size known at compile time, so that a
/// key is a few fixed-size moves or compares instead of a loop (names of 32
/// bytes or more, which need a longer header, take the general path).
template <class T, std::size_t I>
struct wire_key {
    static constexpr std::string_view name = T::gecko_field_names[I];
    static constexpr bool fixstr = name.size() < 32;
    static constexpr std::size_t size = name.size() + 1;

    static constexpr std::array<std::uint8_t, size> encode() noexcept {
        std::array<std::uint8_t, size> out{};
        out[0] = static_cast<std::uint8_t>(0xa0 | (name.size() & 0x1f));
        for (std::size_t i = 0; i < name.size(); ++i) out[i + 1] = static_cast<std::uint8_t>(name[i]);
        return out;
    }
    static constexpr std::array<std::uint8_t, size> bytes = encode();
};

// ===========================================================================
// Field type families
// ===========================================================================

template <class T>
struct is_vector : std::false_type {};
template <class U, class A>
struct is_vector<std::vector<U, A>> : std::true_type {};

template <class T>
struct is_std_array : std::false_type {};
template <class U, std::size_t N>
struct is_std_array<std::array<U, N>> : std::true_type {};

template <class T>
struct is_optional : std::false_type {};
template <class U>
struct is_optional<std::optional<U>> : std::true_type {};

template <class T>
struct is_string_map : std::false_type {};
template <class U, class C, class A>
struct is_string_map<std::map<std::string, U, C, A>> : std::true_type {};

template <class T>
inline constexpr bool is_float_v = std::is_same_v<T, float> || std::is_same_v<T, double>;

/// Containers of bytes travel as bin, not as arrays of ints.
template <class T>
struct is_byte_container : std::false_type {};
template <class A>
struct is_byte_container<std::vector<std::uint8_t, A>> : std::true_type {};
template <std::size_t N>
struct is_byte_container<std::array<std::uint8_t, N>> : std::true_type {};
template <class T>
inline constexpr bool is_byte_container_v = is_byte_container<T>::value;

/// Arrays of floats are encoded in batches.
template <class T>
struct is_float_container : std::false_type {};
template <class F, class A>
struct is_float_container<std::vector<F, A>> : std::bool_constant<is_float_v<F>> {};
template <class F, std::size_t N>
struct is_float_container<std::array<F, N>> : std::bool_constant<is_float_v<F>> {};

template <class T>
inline constexpr bool dependent_false_v = false;

template <class T>
constexpr const char* type_name_or_empty() noexcept {
    if constexpr (has_type_name<T>::value) {
        return T::type_name;
    } else {
        return "";
    }
}

// ===========================================================================
// Encoding (through msgpack-c's packer)
// ===========================================================================

[[noreturn, gnu::cold, gnu::noinline]] inline void fail_wire_size() {
    throw Error(Errc::invalid_argument, "gecko: a container of more than 2^32-1 elements cannot be encoded");
}

/// msgpack sizes are 32-bit.
inline std::uint32_t wire_size(std::size_t n) {
    if (n > 0xffffffffu) fail_wire_size();
    return static_cast<std::uint32_t>(n);
}

/// Packers that write a whole str at once and give room to write in place
/// (gecko::wire::BasicPacker; msgpack-c's packer does neither).
template <class Packer, class = void>
struct has_room : std::false_type {};
template <class Packer>
struct has_room<Packer, std::void_t<decltype(std::declval<Packer&>().room(std::size_t{}))>> : std::true_type {};

/// Appends raw bytes through the packer (pack_str_body is msgpack-c's plain append).
template <class Packer>
void append_raw(Packer& pk, const char* bytes, std::size_t n) {
    pk.pack_str_body(bytes, static_cast<std::uint32_t>(n));
}

/// Writes the float64 (0xcb) or float32 (0xca) encoding of `v`; returns 9 or 5.
/// (msgpack-c 4.x would write an integral value as an int and lose -0.0.)
template <class F>
std::size_t store_float(char* out, F v) noexcept {
    // Big-endian on the wire: one byte swap and one store per value.
    if constexpr (sizeof(F) == 8) {
        std::uint64_t bits;
        std::memcpy(&bits, &v, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
        bits = __builtin_bswap64(bits);
#endif
        out[0] = static_cast<char>(0xcb);
        std::memcpy(out + 1, &bits, 8);
        return 9;
    } else {
        std::uint32_t bits;
        std::memcpy(&bits, &v, 4);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
        bits = __builtin_bswap32(bits);
#endif
        out[0] = static_cast<char>(0xca);
        std::memcpy(out + 1, &bits, 4);
        return 5;
    }
}

// An empty body is not written at all: its pointer may be null (an empty
// vector or BytesView), and buffers memcpy from it.
template <class Packer>
[[gnu::always_inline]] inline void pack_str(Packer& pk, std::string_view s) {
    if constexpr (has_room<Packer>::value) {
        if (s.size() >= 32) (void)wire_size(s.size());  // throws beyond 4 GiB
        pk.pack(s);
        return;
    }
    pk.pack_str(wire_size(s.size()));
    if (!s.empty()) pk.pack_str_body(s.data(), static_cast<std::uint32_t>(s.size()));
}

template <class Packer>
void pack_bin(Packer& pk, const std::uint8_t* data, std::size_t size) {
    pk.pack_bin(wire_size(size));
    if (size != 0) pk.pack_bin_body(reinterpret_cast<const char*>(data), static_cast<std::uint32_t>(size));
}

template <class Packer, class = void>
struct can_reserve : std::false_type {};
template <class Packer>
struct can_reserve<Packer, std::void_t<decltype(std::declval<Packer&>().reserve_bin(std::uint32_t{}))>> : std::true_type {};

// A BytesToFill: its bin header, then room for its bytes, reserved in place
// where the packer can (gecko::wire::Packer), zeros otherwise.
template <class Packer>
void pack_room(Packer& pk, const BytesToFill& v) {
    if constexpr (can_reserve<Packer>::value) {
        v.placed_at(pk.reserve_bin(wire_size(v.size())));
    } else {
        pk.pack_bin(wire_size(v.size()));
        static const char zeros[4096] = {};
        for (std::size_t left = v.size(); left != 0;) {
            const std::size_t n = left < sizeof zeros ? left : sizeof zeros;
            pk.pack_bin_body(zeros, static_cast<std::uint32_t>(n));
            left -= n;
        }
        v.placed_at(nullptr);
    }
}

template <class Packer, class E>
void pack_enum(Packer& pk, E value) {
    const std::string_view name = enum_name(value);
    if (name.empty()) {
        throw Error(Errc::invalid_argument,
                    "gecko: enum " + std::string(enum_table<E>.type) + " has no GECKO_MSG_ENUM name for value " +
                        std::to_string(static_cast<long long>(value)));
    }
    pack_str(pk, name);
}

template <class Packer, class T>
void pack_message(Packer& pk, const T& msg);

/// Packs one field value.
template <class Packer, class V>
void pack_value(Packer& pk, const V& v) {
    if constexpr (std::is_same_v<V, bool>) {
        if (v) pk.pack_true();
        else pk.pack_false();
    } else if constexpr (std::is_integral_v<V>) {
        pk.pack(v);
    } else if constexpr (is_float_v<V>) {
        char buf[9];
        append_raw(pk, buf, store_float(buf, v));
    } else if constexpr (is_msg_enum<V>::value) {
        pack_enum(pk, v);
    } else if constexpr (std::is_enum_v<V>) {
        static_assert(dependent_false_v<V>, "gecko: declare this enum with GECKO_MSG_ENUM or GECKO_MSG_ENUM_NAMED to use it in a message");
    } else if constexpr (std::is_same_v<V, std::string>) {
        pack_str(pk, v);
    } else if constexpr (std::is_same_v<V, BytesView> || is_byte_container_v<V>) {
        pack_bin(pk, v.data(), v.size());
    } else if constexpr (std::is_same_v<V, BytesToFill>) {
        pack_room(pk, v);
    } else if constexpr (is_float_container<V>::value && has_room<Packer>::value) {
        pk.pack_array(wire_size(v.size()));
        constexpr std::size_t each = sizeof(typename V::value_type) == 8 ? 9 : 5;
        char* out = reinterpret_cast<char*>(pk.room(v.size() * each));
        for (const auto x : v) out += store_float(out, x);
    } else if constexpr (is_float_container<V>::value) {
        pk.pack_array(wire_size(v.size()));
        char buf[64 * 9];  // batch appends: one write per 64 elements
        std::size_t used = 0;
        for (const auto x : v) {
            used += store_float(buf + used, x);
            if (used > sizeof(buf) - 9) {
                append_raw(pk, buf, used);
                used = 0;
            }
        }
        if (used != 0) append_raw(pk, buf, used);
    } else if constexpr (is_vector<V>::value || is_std_array<V>::value) {
        pk.pack_array(wire_size(v.size()));
        for (const auto& x : v) pack_value(pk, static_cast<const typename V::value_type&>(x));
    } else if constexpr (is_optional<V>::value) {
        if (v) pack_value(pk, *v);
        else pk.pack_nil();
    } else if constexpr (is_string_map<V>::value) {
        pk.pack_map(wire_size(v.size()));
        for (const auto& [key, value] : v) {
            pack_str(pk, key);
            pack_value(pk, value);
        }
    } else if constexpr (has_fields_v<V>) {
        pack_message(pk, v);
    } else {
        static_assert(dependent_false_v<V>,
                      "gecko: unsupported message field type; use bool, an integer, float, double, std::string, "
                      "std::vector<std::uint8_t>, gecko::BytesView, std::vector, std::array, std::optional, "
                      "std::map<std::string, T>, a GECKO_MSG_FIELDS struct or a GECKO_MSG_ENUM enum");
    }
}

template <class T, std::size_t I, class Packer>
void pack_key(Packer& pk) {
    using Key = wire_key<T, I>;
    if constexpr (has_room<Packer>::value && Key::fixstr) {
        std::memcpy(pk.room(Key::size), Key::bytes.data(), Key::size);
    } else {
        pack_str(pk, Key::name);
    }
}

template <class Packer, class T, std::size_t... I>
void pack_fields(Packer& pk, const T& msg, std::index_sequence<I...>) {
    pk.pack_map(static_cast<std::uint32_t>(sizeof...(I)));
    [[maybe_unused]] const auto fields = msg.gecko_fields();
    ((pack_key<T, I>(pk), pack_value(pk, std::get<I>(fields))), ...);
}

/// Packs a GECKO_MSG_FIELDS struct as a map of its fields.
template <class Packer, class T>
void pack_message(Packer& pk, const T& msg) {
    pack_fields(pk, msg, std::make_index_sequence<T::gecko_field_names.size()>{});
}

// ===========================================================================
// Decoding (through gecko::wire::Reader)
// ===========================================================================

/// `text` quoted for an error message: printable ASCII, at most 64 characters.
std::string quote(std::string_view text);

/// A default-constructed T, built once: the source of values for absent fields.
template <class T>
const T& default_instance() {
    static const T instance{};
    return instance;
}

template <class T>
void read_message(Reader& r, T& msg);

[[noreturn]] void fail_key(Reader& r, const char* expected);
/// Throws "`key`: appears twice in the map".
[[noreturn]] void fail_twice(std::string_view key);

/// `a == b` for short strings: field names are a few bytes long, and a
/// library memcmp call per key was most of the cost of decoding an Imu.
inline bool same_name(std::string_view a, std::string_view b) noexcept {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i) {
        if (a[i] != b[i]) return false;
    }
    return true;
}

template <class E>
void read_enum(Reader& r, E& v) {
    constexpr const auto& table = enum_table<E>;
    std::string_view name;
    if (r.try_read_str(name)) {
        for (std::size_t i = 0; i < table.names.size(); ++i) {
            if (same_name(table.names[i], name)) {
                v = table.values[i];
                return;
            }
        }
        std::string known;
        for (const auto n : table.names) known += (known.empty() ? "" : ", ") + std::string(n);
        throw DecodeError("is " + quote(name) + ", not a name of " + std::string(table.type) + " (" + known + ")");
    }
    if (r.peek() != Type::integer) {
        throw DecodeError(std::string("has msgpack type ") + to_string(r.peek()) + ", expected a str (a name of " +
                          std::string(table.type) + ")");
    }
    const auto number = r.read_int<std::int64_t>();
    for (const E value : table.values) {
        if (static_cast<std::int64_t>(static_cast<std::underlying_type_t<E>>(value)) == number) {
            v = value;
            return;
        }
    }
    throw DecodeError("is " + std::to_string(number) + ", not the number of a " + std::string(table.type) +
                      " enumerator");
}

template <class V>
void read_value(Reader& r, V& v);

template <class V>
void read_elements(Reader& r, V& v, std::uint32_t count) {
    Reader::Nesting level(r);
    std::size_t i = 0;
    if constexpr (is_float_container<V>::value) {
        i = r.read_float_run(v.data(), count);  // all of them, when written by Gecko
    }
    try {
        for (; i < count; ++i) {
            if constexpr (std::is_same_v<typename V::value_type, bool>) {
                v[i] = r.read_bool();  // std::vector<bool> hands out proxies, not bool&
            } else {
                read_value(r, v[i]);
            }
        }
    } catch (DecodeError& e) {
        e.nest_index(i);
        throw;
    }
}

// read_value, with `name` (a field or a map key) put in front of the path of
// any error from inside it.
template <class V>
void read_value_named(Reader& r, V& v, std::string_view name) {
    try {
        read_value(r, v);
    } catch (DecodeError& e) {
        e.nest_field(name);
        throw;
    }
}

template <class V>
void read_string_map(Reader& r, V& v) {
    const std::uint32_t count = r.read_map();
    Reader::Nesting level(r);
    // The keys of last time usually come again, in the same (sorted) order:
    // while they do, each value is read in place, into its node.
    auto same = v.begin();
    std::uint32_t i = 0;
    std::string_view key;
    for (; i < count; ++i) {
        if (!r.try_read_str(key)) fail_key(r, "str keys");
        if (same == v.end() || !same_name(same->first, key)) break;
        read_value_named(r, same->second, key);
        ++same;
    }
    if (i == count) {
        v.erase(same, v.end());
        return;
    }
    // From the first other key: the nodes not matched yet (and their values'
    // memory) are reused for keys that come again, others are made.
    V old;
    while (same != v.end()) old.insert(old.end(), v.extract(same++));
    auto reuse = old.begin();
    for (bool have_key = true; i < count; ++i, have_key = false) {
        if (!have_key && !r.try_read_str(key)) fail_key(r, "str keys");
        // The next old key is usually this one: no ordered comparison then.
        if (reuse != old.end() && !same_name(reuse->first, key))
            while (reuse != old.end() && reuse->first.compare(key) < 0) ++reuse;
        typename V::iterator at;
        bool inserted = false;
        if (reuse != old.end() && same_name(reuse->first, key)) {
            auto result = v.insert(old.extract(reuse++));
            at = result.position;
            inserted = result.inserted;
        } else {
            std::tie(at, inserted) = v.try_emplace(std::string(key));
        }
        if (!inserted) fail_twice(key);
        read_value_named(r, at->second, key);
    }
}

/// Reads one field value into `v`, reusing its memory.
template <class V>
void read_value(Reader& r, V& v) {
    if constexpr (std::is_same_v<V, bool>) {
        v = r.read_bool();
    } else if constexpr (std::is_integral_v<V>) {
        v = r.read_int<V>();
    } else if constexpr (is_float_v<V>) {
        v = r.read_float<V>();
    } else if constexpr (is_msg_enum<V>::value) {
        read_enum(r, v);
    } else if constexpr (std::is_enum_v<V>) {
        static_assert(dependent_false_v<V>, "gecko: declare this enum with GECKO_MSG_ENUM or GECKO_MSG_ENUM_NAMED to use it in a message");
    } else if constexpr (std::is_same_v<V, std::string>) {
        const std::string_view s = r.read_str();
        v.assign(s.data(), s.size());
    } else if constexpr (std::is_same_v<V, BytesView>) {
        v = r.read_bin();
    } else if constexpr (std::is_same_v<V, BytesToFill>) {
        static_assert(dependent_false_v<V>,
                      "gecko: gecko::BytesToFill is for publishing; a subscriber reads the field as gecko::BytesView "
                      "or std::vector<std::uint8_t>");
    } else if constexpr (is_byte_container_v<V> && is_vector<V>::value) {
        const BytesView bytes = r.read_bin();
        v.assign(bytes.begin(), bytes.end());
    } else if constexpr (is_byte_container_v<V>) {
        const BytesView bytes = r.read_bin();
        if (bytes.size() != v.size()) {
            throw DecodeError("is a bin of " + std::to_string(bytes.size()) + " bytes, expected " +
                              std::to_string(v.size()));
        }
        if (!bytes.empty()) std::memcpy(v.data(), bytes.data(), bytes.size());
    } else if constexpr (is_vector<V>::value) {
        const std::uint32_t count = r.read_array();
        v.resize(count);
        read_elements(r, v, count);
    } else if constexpr (is_std_array<V>::value) {
        const std::uint32_t count = r.read_array();
        if (count != v.size()) {
            throw DecodeError("is an array of " + std::to_string(count) + " elements, expected " +
                              std::to_string(v.size()));
        }
        read_elements(r, v, count);
    } else if constexpr (is_optional<V>::value) {
        if (r.try_read_nil()) {
            v.reset();
        } else {
            if (!v) v.emplace();
            read_value(r, *v);
        }
    } else if constexpr (is_string_map<V>::value) {
        read_string_map(r, v);
    } else if constexpr (has_fields_v<V>) {
        read_message(r, v);
    } else {
        static_assert(dependent_false_v<V>,
                      "gecko: unsupported message field type; use bool, an integer, float, double, std::string, "
                      "std::vector<std::uint8_t>, gecko::BytesView, std::vector, std::array, std::optional, "
                      "std::map<std::string, T>, a GECKO_MSG_FIELDS struct or a GECKO_MSG_ENUM enum");
    }
}

/// Index of the field named `key`, trying `cursor` first; N if none.
template <class T>
std::size_t find_field(std::string_view key, std::size_t cursor) noexcept {
    constexpr auto& names = T::gecko_field_names;
    if (cursor < names.size() && same_name(names[cursor], key)) return cursor;
    for (std::size_t i = 0; i < names.size(); ++i) {
        if (same_name(names[i], key)) return i;
    }
    return names.size();
}

template <class Fields, std::size_t... I>
void read_field_at(Reader& r, Fields& fields, std::size_t index, std::index_sequence<I...>) {
    (void)((index == I ? (read_value(r, std::get<I>(fields)), true) : false) || ...);
}

template <class T, class Fields, std::size_t N, std::size_t... I>
void reset_absent(Fields& fields, const std::array<bool, N>& seen, std::index_sequence<I...>) {
    ((seen[I] ? void() : void(std::get<I>(fields) = std::get<I>(default_instance<T>().gecko_fields()))), ...);
}

// Field I, if the next key is its name: read, true; else false, nothing consumed.
template <class T, std::size_t I, class Fields>
bool read_field_if_next(Reader& r, Fields& fields) {
    using Key = wire_key<T, I>;
    if constexpr (!Key::fixstr) {
        return false;
    } else {
        if (!r.try_read_exactly(Key::bytes)) return false;
        read_value_named(r, std::get<I>(fields), Key::name);
        return true;
    }
}

// Reads fields in declaration order while the keys follow it; returns how
// many it read (N when the map is the way Gecko writes it).
template <class T, class Fields, std::size_t... I>
std::size_t read_fields_in_order(Reader& r, Fields& fields, std::index_sequence<I...>) {
    std::size_t done = 0;
    (void)((read_field_if_next<T, I>(r, fields) && (++done, true)) && ...);
    return done;
}

/// Reads a map into a GECKO_MSG_FIELDS struct, in place (see the top of this file).
template <class T>
void read_message(Reader& r, T& msg) {
    constexpr std::size_t n = T::gecko_field_names.size();
    const std::uint32_t count = r.read_map("a map (a message)");
    Reader::Nesting level(r);
    auto fields = msg.gecko_fields();
    // Gecko writes every field, in order: each key is then matched against
    // the one expected with compares of a size known at compile time, and no
    // field is absent. Whatever does not follow that order goes the general
    // way below, from where the order broke.
    std::size_t in_order = 0;
    if (count >= n) {
        in_order = read_fields_in_order<T>(r, fields, std::make_index_sequence<n>{});
        if (in_order == n && count == n) return;
    }
    std::array<bool, n> seen{};
    for (std::size_t k = 0; k < in_order; ++k) seen[k] = true;
    std::size_t cursor = in_order;
    for (std::uint32_t i = static_cast<std::uint32_t>(in_order); i < count; ++i) {
        std::string_view key;
        if (!r.try_read_str(key)) fail_key(r, "str field names");
        const std::size_t index = find_field<T>(key, cursor);
        if (index == n) {
            r.skip();
            continue;
        }
        if (seen[index]) fail_twice(T::gecko_field_names[index]);
        seen[index] = true;
        cursor = index + 1;
        try {
            read_field_at(r, fields, index, std::make_index_sequence<n>{});
        } catch (DecodeError& e) {
            e.nest_field(T::gecko_field_names[index]);
            throw;
        }
    }
    reset_absent<T>(fields, seen, std::make_index_sequence<n>{});
}

// ===========================================================================
// msgpack-c's object tree (msgpack_object, msgpack_unpack)
// ===========================================================================

/// Writes `o` as msgpack to `out`, floats as floats (msgpack-c's own packer
/// would write an integral float64 as an int and lose -0.0).
/// @throws ConvertError if `o` nests deeper than Reader::max_depth.
void repack_object(const msgpack::object& o, msgpack::sbuffer& out);

/// `msgpack::object(message, zone)`: the message encoded, then parsed into
/// `zone` (strings and bytes copied), so the tree is exactly the wire form.
template <class T>
void object_message(msgpack::object& o, msgpack::zone& zone, const T& msg) {
    msgpack::sbuffer bytes;
    msgpack::packer<msgpack::sbuffer> pk(bytes);
    pack_message(pk, msg);
    std::size_t offset = 0;
    o = msgpack::unpack(zone, bytes.data(), bytes.size(), offset);
}

template <class V, int Depth = 8>
constexpr bool contains_view() noexcept;

template <class T, int Depth, std::size_t... I>
constexpr bool fields_contain_view(std::index_sequence<I...>) noexcept {
    using Fields = decltype(std::declval<T&>().gecko_fields());
    return (contains_view<std::remove_reference_t<std::tuple_element_t<I, Fields>>, Depth - 1>() || ...);
}

/// Whether a BytesView hides in V (looked for 8 levels deep, so that a
/// recursive message type does not recurse forever).
template <class V, int Depth>
constexpr bool contains_view() noexcept {
    if constexpr (Depth <= 0) {
        return false;
    } else if constexpr (std::is_same_v<V, BytesView>) {
        return true;
    } else if constexpr (is_vector<V>::value || is_std_array<V>::value || is_optional<V>::value) {
        return contains_view<typename V::value_type, Depth - 1>();
    } else if constexpr (is_string_map<V>::value) {
        return contains_view<typename V::mapped_type, Depth - 1>();
    } else if constexpr (has_fields_v<V>) {
        return fields_contain_view<V, Depth>(std::make_index_sequence<V::gecko_field_names.size()>{});
    } else {
        return false;
    }
}

/// `object.as<T>()`: the tree is written back to msgpack and read by the one
/// decoder, so the rules are the same (at the cost of a copy).
template <class Delay, class T>
void unpack_object(const msgpack::object& o, T& out) {
    static_assert(!contains_view<T>() || dependent_false_v<Delay>,
                  "gecko: a message with a gecko::BytesView field cannot be converted from a msgpack::object (its "
                  "bytes would dangle); decode it with gecko::wire::decode");
    msgpack::sbuffer bytes;
    repack_object(o, bytes);
    Reader r(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
    try {
        read_message(r, out);
    } catch (DecodeError& e) {
        e.set_type_name(type_name_or_empty<T>());
        throw ConvertError(e.what());
    }
}

}  // namespace detail
}  // namespace gecko::wire

// ===========================================================================
// msgpack-c adaptors for GECKO_MSG_ENUM enums, for code that packs or
// converts one directly with msgpack-c (fields of messages do not need them).
// ===========================================================================
namespace msgpack {
MSGPACK_API_VERSION_NAMESPACE(MSGPACK_DEFAULT_API_NS) {
namespace adaptor {

template <class E>
struct pack<E, std::enable_if_t<::gecko::wire::is_enum_v<E>>> {
    template <class Stream>
    msgpack::packer<Stream>& operator()(msgpack::packer<Stream>& pk, E v) const {
        ::gecko::wire::detail::pack_enum(pk, v);
        return pk;
    }
};

template <class E>
struct object<E, std::enable_if_t<::gecko::wire::is_enum_v<E>>> {
    void operator()(msgpack::object& o, E v) const {
        const std::string_view name = ::gecko::wire::enum_name(v);  // a literal: no zone needed
        o.type = msgpack::type::STR;
        o.via.str.ptr = name.data();
        o.via.str.size = static_cast<std::uint32_t>(name.size());
    }
};

template <class E>
struct object_with_zone<E, std::enable_if_t<::gecko::wire::is_enum_v<E>>> {
    void operator()(msgpack::object::with_zone& o, E v) const { object<E>()(o, v); }
};

template <class E>
struct convert<E, std::enable_if_t<::gecko::wire::is_enum_v<E>>> {
    const msgpack::object& operator()(const msgpack::object& o, E& v) const {
        std::optional<E> parsed;
        if (o.type == msgpack::type::STR) {
            parsed = ::gecko::wire::enum_from_name<E>(std::string_view(o.via.str.ptr, o.via.str.size));
        } else if (o.type == msgpack::type::POSITIVE_INTEGER || o.type == msgpack::type::NEGATIVE_INTEGER) {
            for (const E value : ::gecko::wire::detail::enum_table<E>.values) {
                const auto number = static_cast<std::int64_t>(static_cast<std::underlying_type_t<E>>(value));
                if (o.type == msgpack::type::POSITIVE_INTEGER ? number >= 0 && static_cast<std::uint64_t>(number) == o.via.u64
                                                              : number == o.via.i64) {
                    parsed = value;
                }
            }
        }
        if (!parsed) throw msgpack::type_error();
        v = *parsed;
        return o;
    }
};

}  // namespace adaptor
}  // MSGPACK_API_VERSION_NAMESPACE(MSGPACK_DEFAULT_API_NS)
}  // namespace msgpack

// ===========================================================================
// The macros
// ===========================================================================

/// Declares a message's fields, in order (put it last in the struct, after
/// the fields). Generates:
/// - `gecko_field_names`: a constexpr std::array of the names;
/// - `gecko_fields()`: a std::tuple of references to the fields, which
///   tools use to walk any message;
/// - msgpack-c's hooks (`msgpack_pack`, `msgpack_unpack`, `msgpack_object`),
///   so msgpack::pack and `object.as<T>()` work too, with the same rules.
///
/// Works at namespace or class scope, not in a function-local struct (those
/// cannot have member templates). A struct with GECKO_MSG_FIELDS but no
/// `type_name` can be a field of a message, not a message of its own.
#define GECKO_MSG_FIELDS(...)                                                                             \
    static constexpr auto gecko_field_names =                                                             \
        ::gecko::wire::detail::split_names<::gecko::wire::detail::count_names(#__VA_ARGS__)>(#__VA_ARGS__); \
    static_assert(::gecko::wire::detail::valid_names(gecko_field_names),                                  \
                  "GECKO_MSG_FIELDS: list each member once, by its plain name");                           \
    auto gecko_fields() noexcept { return std::tie(__VA_ARGS__); }                                         \
    auto gecko_fields() const noexcept { return std::tie(__VA_ARGS__); }                                   \
    template <typename GeckoPacker>                                                                       \
    void msgpack_pack(GeckoPacker& gecko_packer) const {                                                  \
        ::gecko::wire::detail::pack_message(gecko_packer, *this);                                         \
    }                                                                                                     \
    template <typename GeckoDelay = void>                                                                 \
    void msgpack_unpack(const ::msgpack::object& gecko_object) {                                          \
        ::gecko::wire::detail::unpack_object<GeckoDelay>(gecko_object, *this);                            \
    }                                                                                                     \
    void msgpack_object(::msgpack::object* gecko_object, ::msgpack::zone& gecko_zone) const {             \
        ::gecko::wire::detail::object_message(*gecko_object, gecko_zone, *this);                          \
    }

/// Makes enum `Type` travel as the name of its value (a msgpack str), so
/// that JSON tools show `"mode": "driving"` rather than `"mode": 1`. List
/// the enumerators; their C++ names are the wire names. Put it at namespace
/// scope, in the enum's namespace, right after the enum (up to 64 values).
/// Decoding accepts a name, or the number of a listed enumerator; anything
/// else is a decode error. Encoding a value that is not listed throws
/// gecko::Error (Errc::invalid_argument).
///
///     enum class Direction : std::uint8_t { request, answer };
///     GECKO_MSG_ENUM(Direction, request, answer)    // "request", "answer"
#define GECKO_MSG_ENUM(Type, ...)                                                                       \
    constexpr auto gecko_msg_enum(Type) noexcept {                                                      \
        constexpr ::gecko::wire::EnumNames<Type, GECKO_WIRE_COUNT(__VA_ARGS__)> gecko_table{               \
            #Type, {{GECKO_WIRE_FOR_EACH(GECKO_WIRE_ENUM_VALUE, Type, __VA_ARGS__)}},                    \
            {{GECKO_WIRE_FOR_EACH(GECKO_WIRE_ENUM_NAME, Type, __VA_ARGS__)}}};                           \
        static_assert(::gecko::wire::detail::valid_enum_names(gecko_table),                            \
                      "GECKO_MSG_ENUM(" #Type ", ...): list each enumerator once");                      \
        return gecko_table;                                                                             \
    }

/// As GECKO_MSG_ENUM, with wire names of your choosing, for enums whose
/// spelling on the wire is fixed elsewhere (Click's "AngularVelocity1D" for
/// `angular_velocity_1d`). Each entry is `(enumerator, "WireName")`:
///
///     GECKO_MSG_ENUM_NAMED(ValueType, (angle, "Angle"), (angular_velocity_1d, "AngularVelocity1D"))
#define GECKO_MSG_ENUM_NAMED(Type, ...)                                                                 \
    constexpr auto gecko_msg_enum(Type) noexcept {                                                      \
        constexpr ::gecko::wire::EnumNames<Type, GECKO_WIRE_COUNT(__VA_ARGS__)> gecko_table{               \
            #Type, {{GECKO_WIRE_FOR_EACH(GECKO_WIRE_NAMED_VALUE, Type, __VA_ARGS__)}},                   \
            {{GECKO_WIRE_FOR_EACH(GECKO_WIRE_NAMED_NAME, Type, __VA_ARGS__)}}};                          \
        static_assert(::gecko::wire::detail::valid_enum_names(gecko_table),                            \
                      "GECKO_MSG_ENUM_NAMED(" #Type ", ...): list each enumerator and each name once");  \
        return gecko_table;                                                                             \
    }

// ---- preprocessor plumbing for the enum macros (not for direct use) ----

#define GECKO_WIRE_ENUM_VALUE(t, x) t::x
#define GECKO_WIRE_ENUM_NAME(t, x) ::std::string_view(#x)
#define GECKO_WIRE_UNPAREN(...) __VA_ARGS__
#define GECKO_WIRE_NAMED_VALUE(t, pair) GECKO_WIRE_NAMED_VALUE_I(t, GECKO_WIRE_UNPAREN pair)
#define GECKO_WIRE_NAMED_VALUE_I(t, ...) GECKO_WIRE_NAMED_VALUE_II(t, __VA_ARGS__)
#define GECKO_WIRE_NAMED_VALUE_II(t, x, name) t::x
#define GECKO_WIRE_NAMED_NAME(t, pair) GECKO_WIRE_NAMED_NAME_I(t, GECKO_WIRE_UNPAREN pair)
#define GECKO_WIRE_NAMED_NAME_I(t, ...) GECKO_WIRE_NAMED_NAME_II(t, __VA_ARGS__)
#define GECKO_WIRE_NAMED_NAME_II(t, x, name) ::std::string_view(name)

// GECKO_WIRE_FOR_EACH(m, t, a, b, c) -> m(t, a), m(t, b), m(t, c); up to 64 items.
#define GECKO_WIRE_CAT(a, b) GECKO_WIRE_CAT_I(a, b)
#define GECKO_WIRE_CAT_I(a, b) a##b
#define GECKO_WIRE_COUNT(...) GECKO_WIRE_COUNT_I(__VA_ARGS__, 64, 63, 62, 61, 60, 59, 58, 57, 56, 55, 54, 53, 52, 51, 50, 49, 48, 47, 46, 45, 44, 43, 42, 41, 40, 39, 38, 37, 36, 35, 34, 33, 32, 31, 30, 29, 28, 27, 26, 25, 24, 23, 22, 21, 20, 19, 18, 17, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0)
#define GECKO_WIRE_COUNT_I(_1, _2, _3, _4, _5, _6, _7, _8, _9, _10, _11, _12, _13, _14, _15, _16, _17, _18, _19, _20, _21, _22, _23, _24, _25, _26, _27, _28, _29, _30, _31, _32, _33, _34, _35, _36, _37, _38, _39, _40, _41, _42, _43, _44, _45, _46, _47, _48, _49, _50, _51, _52, _53, _54, _55, _56, _57, _58, _59, _60, _61, _62, _63, _64, N, ...) N
#define GECKO_WIRE_FOR_EACH(m, t, ...) GECKO_WIRE_CAT(GECKO_WIRE_FE_, GECKO_WIRE_COUNT(__VA_ARGS__))(m, t, __VA_ARGS__)
#define GECKO_WIRE_FE_1(m, t, x) m(t, x)
#define GECKO_WIRE_FE_2(m, t, x, ...) m(t, x), GECKO_WIRE_FE_1(m, t, __VA_ARGS__)
#define GECKO_WIRE_FE_3(m, t, x, ...) m(t, x), GECKO_WIRE_FE_2(m, t, __VA_ARGS__)
#define GECKO_WIRE_FE_4(m, t, x, ...) m(t, x), GECKO_WIRE_FE_3(m, t, __VA_ARGS__)
#define GECKO_WIRE_FE_5(m, t, x, ...) m(t, x), GECKO_WIRE_FE_4(m, t, __VA_ARGS__)
#define GECKO_WIRE_FE_6(m, t, x, ...) m(t, x), GECKO_WIRE_FE_5(m, t, __VA_ARGS__)
#define GECKO_WIRE_FE_7(m, t, x, ...) m(t, x), GECKO_WIRE_FE_6(m, t, __VA_ARGS__)
#define GECKO_WIRE_FE_8(m, t, x, ...) m(t, x), GECKO_WIRE_FE_7(m, t, __VA_ARGS__)
#define GECKO_WIRE_FE_9(m, t, x, ...) m(t, x), GECKO_WIRE_FE_8(m, t, __VA_ARGS__)
#define GECKO_WIRE_FE_10(m, t, x, ...) m(t, x), GECKO_WIRE_FE_9(m, t, __VA_ARGS__)
#define GECKO_WIRE_FE_11(m, t, x, ...) m(t, x), GECKO_WIRE_FE_10(m, t, __VA_ARGS__)
#define GECKO_WIRE_FE_12(m, t, x, ...) m(t, x), GECKO_WIRE_FE_11(m, t, __VA_ARGS__)
#define GECKO_WIRE_FE_13(m, t, x, ...) m(t, x), GECKO_WIRE_FE_12(m, t, __VA_ARGS__)
#define GECKO_WIRE_FE_14(m, t, x, ...) m(t, x), GECKO_WIRE_FE_13(m, t, __VA_ARGS__)
#define GECKO_WIRE_FE_15(m, t, x, ...) m(t, x), GECKO_WIRE_FE_14(m, t, __VA_ARGS__)
#define GECKO_WIRE_FE_16(m, t, x, ...) m(t, x), GECKO_WIRE_FE_15(m, t, __VA_ARGS__)
#define GECKO_WIRE_FE_17(m, t, x, ...) m(t, x), GECKO_WIRE_FE_16(m, t, __VA_ARGS__)
#define GECKO_WIRE_FE_18(m, t, x, ...) m(t, x), GECKO_WIRE_FE_17(m, t, __VA_ARGS__)
#define GECKO_WIRE_FE_19(m, t, x, ...) m(t, x), GECKO_WIRE_FE_18(m, t, __VA_ARGS__)
#define GECKO_WIRE_FE_20(m, t, x, ...) m(t, x), GECKO_WIRE_FE_19(m, t, __VA_ARGS__)
#define GECKO_WIRE_FE_21(m, t, x, ...) m(t, x), GECKO_WIRE_FE_20(m, t, __VA_ARGS__)
#define GECKO_WIRE_FE_22(m, t, x, ...) m(t, x), GECKO_WIRE_FE_21(m, t, __VA_ARGS__)
#define GECKO_WIRE_FE_23(m, t, x, ...) m(t, x), GECKO_WIRE_FE_22(m, t, __VA_ARGS__)
#define GECKO_WIRE_FE_24(m, t, x, ...) m(t, x), GECKO_WIRE_FE_23(m, t, __VA_ARGS__)
#define GECKO_WIRE_FE_25(m, t, x, ...) m(t, x), GECKO_WIRE_FE_24(m, t, __VA_ARGS__)
#define GECKO_WIRE_FE_26(m, t, x, ...) m(t, x), GECKO_WIRE_FE_25(m, t, __VA_ARGS__)
#define GECKO_WIRE_FE_27(m, t, x, ...) m(t, x), GECKO_WIRE_FE_26(m, t, __VA_ARGS__)
#define GECKO_WIRE_FE_28(m, t, x, ...) m(t, x), GECKO_WIRE_FE_27(m, t, __VA_ARGS__)
#define GECKO_WIRE_FE_29(m, t, x, ...) m(t, x), GECKO_WIRE_FE_28(m, t, __VA_ARGS__)
#define GECKO_WIRE_FE_30(m, t, x, ...) m(t, x), GECKO_WIRE_FE_29(m, t, __VA_ARGS__)
#define GECKO_WIRE_FE_31(m, t, x, ...) m(t, x), GECKO_WIRE_FE_30(m, t, __VA_ARGS__)
#define GECKO_WIRE_FE_32(m, t, x, ...) m(t, x), GECKO_WIRE_FE_31(m, t, __VA_ARGS__)
#define GECKO_WIRE_FE_33(m, t, x, ...) m(t, x), GECKO_WIRE_FE_32(m, t, __VA_ARGS__)
#define GECKO_WIRE_FE_34(m, t, x, ...) m(t, x), GECKO_WIRE_FE_33(m, t, __VA_ARGS__)
#define GECKO_WIRE_FE_35(m, t, x, ...) m(t, x), GECKO_WIRE_FE_34(m, t, __VA_ARGS__)
#define GECKO_WIRE_FE_36(m, t, x, ...) m(t, x), GECKO_WIRE_FE_35(m, t, __VA_ARGS__)
#define GECKO_WIRE_FE_37(m, t, x, ...) m(t, x), GECKO_WIRE_FE_36(m, t, __VA_ARGS__)
#define GECKO_WIRE_FE_38(m, t, x, ...) m(t, x), GECKO_WIRE_FE_37(m, t, __VA_ARGS__)
#define GECKO_WIRE_FE_39(m, t, x, ...) m(t, x), GECKO_WIRE_FE_38(m, t, __VA_ARGS__)
#define GECKO_WIRE_FE_40(m, t, x, ...) m(t, x), GECKO_WIRE_FE_39(m, t, __VA_ARGS__)
#define GECKO_WIRE_FE_41(m, t, x, ...) m(t, x), GECKO_WIRE_FE_40(m, t, __VA_ARGS__)
#define GECKO_WIRE_FE_42(m, t, x, ...) m(t, x), GECKO_WIRE_FE_41(m, t, __VA_ARGS__)
#define GECKO_WIRE_FE_43(m, t, x, ...) m(t, x), GECKO_WIRE_FE_42(m, t, __VA_ARGS__)
#define GECKO_WIRE_FE_44(m, t, x, ...) m(t, x), GECKO_WIRE_FE_43(m, t, __VA_ARGS__)
#define GECKO_WIRE_FE_45(m, t, x, ...) m(t, x), GECKO_WIRE_FE_44(m, t, __VA_ARGS__)
#define GECKO_WIRE_FE_46(m, t, x, ...) m(t, x), GECKO_WIRE_FE_45(m, t, __VA_ARGS__)
#define GECKO_WIRE_FE_47(m, t, x, ...) m(t, x), GECKO_WIRE_FE_46(m, t, __VA_ARGS__)
#define GECKO_WIRE_FE_48(m, t, x, ...) m(t, x), GECKO_WIRE_FE_47(m, t, __VA_ARGS__)
#define GECKO_WIRE_FE_49(m, t, x, ...) m(t, x), GECKO_WIRE_FE_48(m, t, __VA_ARGS__)
#define GECKO_WIRE_FE_50(m, t, x, ...) m(t, x), GECKO_WIRE_FE_49(m, t, __VA_ARGS__)
#define GECKO_WIRE_FE_51(m, t, x, ...) m(t, x), GECKO_WIRE_FE_50(m, t, __VA_ARGS__)
#define GECKO_WIRE_FE_52(m, t, x, ...) m(t, x), GECKO_WIRE_FE_51(m, t, __VA_ARGS__)
#define GECKO_WIRE_FE_53(m, t, x, ...) m(t, x), GECKO_WIRE_FE_52(m, t, __VA_ARGS__)
#define GECKO_WIRE_FE_54(m, t, x, ...) m(t, x), GECKO_WIRE_FE_53(m, t, __VA_ARGS__)
#define GECKO_WIRE_FE_55(m, t, x, ...) m(t, x), GECKO_WIRE_FE_54(m, t, __VA_ARGS__)
#define GECKO_WIRE_FE_56(m, t, x, ...) m(t, x), GECKO_WIRE_FE_55(m, t, __VA_ARGS__)
#define GECKO_WIRE_FE_57(m, t, x, ...) m(t, x), GECKO_WIRE_FE_56(m, t, __VA_ARGS__)
#define GECKO_WIRE_FE_58(m, t, x, ...) m(t, x), GECKO_WIRE_FE_57(m, t, __VA_ARGS__)
#define GECKO_WIRE_FE_59(m, t, x, ...) m(t, x), GECKO_WIRE_FE_58(m, t, __VA_ARGS__)
#define GECKO_WIRE_FE_60(m, t, x, ...) m(t, x), GECKO_WIRE_FE_59(m, t, __VA_ARGS__)
#define GECKO_WIRE_FE_61(m, t, x, ...) m(t, x), GECKO_WIRE_FE_60(m, t, __VA_ARGS__)
#define GECKO_WIRE_FE_62(m, t, x, ...) m(t, x), GECKO_WIRE_FE_61(m, t, __VA_ARGS__)
#define GECKO_WIRE_FE_63(m, t, x, ...) m(t, x), GECKO_WIRE_FE_62(m, t, __VA_ARGS__)
#define GECKO_WIRE_FE_64(m, t, x, ...) m(t, x), GECKO_WIRE_FE_63(m, t, __VA_ARGS__)
