// SPDX-License-Identifier: Apache-2.0
// A Value is checked once, when it is made; every accessor then reads the
// checked bytes with a Reader and only asks it about the type first, so
// none of them can throw.
#include "gecko/wire/value.hpp"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

namespace gecko::wire {

namespace {
constexpr std::uint8_t nil_byte = 0xc0;

// Map keys compared as values: str, then bin, then integers, then anything
// else; str and bin by their bytes, integers by value (whatever encoding
// carries them), anything else by its encoded bytes. <0, 0, >0.
int rank(Type t) noexcept { return t == Type::str ? 0 : t == Type::bin ? 1 : t == Type::integer ? 2 : 3; }

int compare_bytes(BytesView a, BytesView b) noexcept {
    const int c = std::memcmp(a.data(), b.data(), std::min(a.size(), b.size()));
    if (c != 0 || a.size() == b.size()) return c;
    return a.size() < b.size() ? -1 : 1;
}

int compare_keys(const Value& a, const Value& b) noexcept {
    const int ra = rank(a.type()), rb = rank(b.type());
    if (ra != rb) return ra < rb ? -1 : 1;
    switch (ra) {
        case 0: {
            const auto x = *a.as_str(), y = *b.as_str();
            return compare_bytes(BytesView(reinterpret_cast<const std::uint8_t*>(x.data()), x.size()),
                                 BytesView(reinterpret_cast<const std::uint8_t*>(y.data()), y.size()));
        }
        case 1: return compare_bytes(*a.as_bin(), *b.as_bin());
        case 2: {
            const auto ua = a.as_uint(), ub = b.as_uint();
            if (ua && ub) return *ua < *ub ? -1 : *ua > *ub ? 1 : 0;
            if (ua || ub) return ua ? 1 : -1;  // negative before non-negative
            const auto ia = *a.as_int(), ib = *b.as_int();
            return ia < ib ? -1 : ia > ib ? 1 : 0;
        }
        default: return compare_bytes(a.bytes(), b.bytes());
    }
}

// Says which key of a map appears twice (its path is added on the way out).
[[noreturn]] void fail_twice(const Value& key) {
    if (const auto text = key.as_str()) {
        DecodeError e("appears twice in the map");
        e.nest_field(*text);
        throw e;
    }
    if (key.type() == Type::integer) {
        DecodeError e("appears twice in the map");
        e.nest_field(key.as_uint() ? std::to_string(*key.as_uint()) : std::to_string(*key.as_int()));
        throw e;
    }
    throw DecodeError(std::string("has the same ") + to_string(key.type()) + " key twice");
}

// Maps up to this many entries compare their keys pairwise; larger ones sort them.
constexpr std::uint32_t pairwise_entries = 16;

}  // namespace

void Value::check_unique_keys(const Value& map) {
    const std::uint32_t n = map.count();
    if (n < 2) return;
    if (n <= pairwise_entries) {
        Value keys[pairwise_entries];
        std::uint32_t i = 0;
        for (const auto& entry : map.entries()) {
            for (std::uint32_t j = 0; j < i; ++j)
                if (compare_keys(keys[j], entry.key) == 0) fail_twice(entry.key);
            keys[i++] = entry.key;
        }
        return;
    }
    // Where each key starts, from the map's first byte: the keys are read
    // again from there (a few bytes per entry, never more than the input).
    const std::uint8_t* base = map.bytes().data();
    const std::size_t size = map.bytes().size();
    std::vector<std::size_t> at;
    at.reserve(n);
    for (const auto& entry : map.entries()) at.push_back(static_cast<std::size_t>(entry.key.bytes().data() - base));
    const auto key_at = [&](std::size_t offset) {
        Reader r(base + offset, size - offset);
        return Value(r.read_raw());  // checked bytes: cannot fail
    };
    std::sort(at.begin(), at.end(), [&](std::size_t x, std::size_t y) { return compare_keys(key_at(x), key_at(y)) < 0; });
    for (std::size_t i = 1; i < at.size(); ++i)
        if (compare_keys(key_at(at[i - 1]), key_at(at[i])) == 0) fail_twice(key_at(at[i]));
}

// Every map of `value`, at any depth (at most Reader::max_depth: the reader
// checked that), keys included. A failure says where.
void Value::check_maps(const Value& value) {
    switch (value.type()) {
        case Type::array: {
            std::size_t index = 0;
            for (const Value& item : value.items()) {
                try {
                    check_maps(item);
                } catch (DecodeError& e) {
                    e.nest_index(index);
                    throw;
                }
                ++index;
            }
            return;
        }
        case Type::map: {
            check_unique_keys(value);
            for (const auto& [key, item] : value.entries()) {
                check_maps(key);
                try {
                    check_maps(item);
                } catch (DecodeError& e) {
                    if (const auto text = key.as_str()) e.nest_field(*text);
                    else e.nest_field(std::string("<") + to_string(key.type()) + " key>");
                    throw;
                }
            }
            return;
        }
        default: return;
    }
}

Value::Value() noexcept : bytes_(&nil_byte, 1) {}

Value Value::parse(const std::uint8_t* data, std::size_t size) {
    Reader r(data, size);
    const Value v = read(r);
    r.expect_end();
    return v;
}

Value Value::read(Reader& reader) {
    const Value v(reader.read_raw());
    const Type t = v.type();
    if (t == Type::map || t == Type::array) check_maps(v);
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
