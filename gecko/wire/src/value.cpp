// SPDX-License-Identifier: Apache-2.0
// A Value is checked once, when it is made; every accessor then reads the
// checked bytes with a Reader and only asks it about the type first, so
// none of them can throw.
#include "gecko/wire/value.hpp"

namespace gecko::wire {

namespace {
constexpr std::uint8_t nil_byte = 0xc0;
}  // namespace

Value::Value() noexcept : bytes_(&nil_byte, 1) {}

Value Value::parse(const std::uint8_t* data, std::size_t size) {
    Reader r(data, size);
    const Value v = read(r);
    r.expect_end();
    return v;
}

Type Value::type() const noexcept { return reader().peek(); }

std::optional<bool> Value::as_bool() const noexcept {
    if (type() != Type::boolean) return std::nullopt;
    return reader().read_bool();
}

std::optional<std::uint64_t> Value::as_uint() const noexcept {
    if (type() != Type::integer) return std::nullopt;
    const std::uint8_t b = bytes_[0];
    if (b >= 0xe0 || (b >= 0xd0 && b <= 0xd3 && (bytes_[1] & 0x80))) return std::nullopt;  // negative
    return reader().read_int<std::uint64_t>();
}

std::optional<std::int64_t> Value::as_int() const noexcept {
    if (type() != Type::integer) return std::nullopt;
    if (bytes_[0] == 0xcf && (bytes_[1] & 0x80)) return std::nullopt;  // a uint64 above INT64_MAX
    return reader().read_int<std::int64_t>();
}

std::optional<double> Value::as_number() const noexcept {
    const Type t = type();
    if (t != Type::integer && t != Type::float32 && t != Type::float64) return std::nullopt;
    return reader().read_float<double>();
}

std::optional<std::string_view> Value::as_str() const noexcept {
    if (type() != Type::str) return std::nullopt;
    return reader().read_str();
}

std::optional<BytesView> Value::as_bin() const noexcept {
    if (type() != Type::bin) return std::nullopt;
    return reader().read_bin();
}

std::optional<Reader::Ext> Value::as_ext() const noexcept {
    if (type() != Type::ext) return std::nullopt;
    return reader().read_ext();
}

std::uint32_t Value::count() const noexcept {
    switch (type()) {
        case Type::array: return reader().read_array();
        case Type::map: return reader().read_map();
        default: return 0;
    }
}

Value::Range<Value> Value::items() const noexcept {
    Reader r = reader();
    const std::uint32_t n = type() == Type::array ? r.read_array() : 0;
    return Range<Value>(r, n);
}

Value::Range<Value::Entry> Value::entries() const noexcept {
    Reader r = reader();
    const std::uint32_t n = type() == Type::map ? r.read_map() : 0;
    return Range<Entry>(r, n);
}

std::optional<Value> Value::item(std::uint32_t index) const noexcept {
    for (const Value& v : items())
        if (index-- == 0) return v;
    return std::nullopt;
}

std::optional<Value> Value::find(std::string_view key) const noexcept {
    for (const auto& [k, v] : entries())
        if (k.as_str() == key) return v;
    return std::nullopt;
}

}  // namespace gecko::wire
