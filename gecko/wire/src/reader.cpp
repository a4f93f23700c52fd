// SPDX-License-Identifier: Apache-2.0
// The cold half of the msgpack reader: skipping values of any type, and
// phrasing errors. The hot typed reads are inline in reader.hpp.
#include "gecko/wire/reader.hpp"

#include <string>

namespace gecko::wire {

// ---- DecodeError ----

DecodeError::DecodeError(std::string detail) : Error(Errc::decode, detail), detail_(std::move(detail)) { rebuild(); }

void DecodeError::nest_field(std::string_view name) {
    // Map keys come from the network: keep the message printable and short.
    std::string step;
    for (char c : name.substr(0, 64)) step += (c >= 0x20 && c <= 0x7e) ? c : '?';
    if (name.size() > 64) step += "...";
    prefix(std::move(step));
}

void DecodeError::nest_index(std::size_t index) { prefix("[" + std::to_string(index) + "]"); }

void DecodeError::set_type_name(std::string_view name) {
    type_name_ = std::string(name);
    rebuild();
}

void DecodeError::prefix(std::string step) {
    if (!path_.empty() && path_[0] != '[') step += '.';
    path_ = std::move(step) + path_;
    rebuild();
}

void DecodeError::rebuild() {
    what_.clear();
    if (!type_name_.empty()) what_ = type_name_ + ": ";
    what_ += path_.empty() ? "the message" : "field '" + path_ + "'";
    what_ += ' ';
    what_ += detail_;
}

// ---- type names ----

const char* to_string(Type type) noexcept {
    switch (type) {
        case Type::nil: return "nil";
        case Type::boolean: return "bool";
        case Type::integer: return "int";
        case Type::float32: return "float32";
        case Type::float64: return "float64";
        case Type::str: return "str";
        case Type::bin: return "bin";
        case Type::array: return "array";
        case Type::map: return "map";
        case Type::ext: return "ext";
    }
    return "?";
}

namespace {

/// The type of a value by its first byte; false for 0xc1, which msgpack never uses.
bool type_of(std::uint8_t b, Type& type) noexcept {
    if (b <= 0x7f || b >= 0xe0 || (b >= 0xcc && b <= 0xd3)) type = Type::integer;
    else if (b <= 0x8f || b == 0xde || b == 0xdf) type = Type::map;
    else if (b <= 0x9f || b == 0xdc || b == 0xdd) type = Type::array;
    else if (b <= 0xbf || (b >= 0xd9 && b <= 0xdb)) type = Type::str;
    else if (b == 0xc0) type = Type::nil;
    else if (b == 0xc2 || b == 0xc3) type = Type::boolean;
    else if (b >= 0xc4 && b <= 0xc6) type = Type::bin;
    else if (b == 0xca) type = Type::float32;
    else if (b == 0xcb) type = Type::float64;
    else if ((b >= 0xc7 && b <= 0xc9) || (b >= 0xd4 && b <= 0xd8)) type = Type::ext;
    else return false;
    return true;
}

const char* int_type_name(std::size_t size, bool is_signed) noexcept {
    switch (size) {
        case 1: return is_signed ? "int8" : "uint8";
        case 2: return is_signed ? "int16" : "uint16";
        case 4: return is_signed ? "int32" : "uint32";
        default: return is_signed ? "int64" : "uint64";
    }
}

std::string bytes_word(std::size_t n) { return std::to_string(n) + (n == 1 ? " byte" : " bytes"); }

}  // namespace

const char* Reader::type_word(std::uint8_t first_byte) noexcept {
    Type type;
    return type_of(first_byte, type) ? to_string(type) : "byte 0xc1";
}

Type Reader::peek() const {
    Type type;
    if (!type_of(peek_byte(), type)) fail_type("a msgpack value");
    return type;
}

// ---- skip ----

void Reader::skip() { skip_value(peek_byte()); }

void Reader::skip_value(std::uint8_t b) {
    if (b <= 0x7f || b >= 0xe0 || b == 0xc0 || b == 0xc2 || b == 0xc3) {  // one-byte values
        ++p_;
        return;
    }
    if ((b & 0xe0) == 0xa0 || (b >= 0xd9 && b <= 0xdb)) {
        (void)read_str();
        return;
    }
    if ((b & 0xf0) == 0x90 || b == 0xdc || b == 0xdd) {
        const std::uint32_t count = read_array();
        Nesting level(*this);
        for (std::uint32_t i = 0; i < count; ++i) skip();
        return;
    }
    if ((b & 0xf0) == 0x80 || b == 0xde || b == 0xdf) {
        const std::uint64_t values = std::uint64_t{read_map()} * 2;
        Nesting level(*this);
        for (std::uint64_t i = 0; i < values; ++i) skip();
        return;
    }
    std::size_t size = 0;  // whole value, header included
    switch (b) {
        case 0xc4:
        case 0xc5:
        case 0xc6: (void)read_bin(); return;
        case 0xca: size = 5; break;
        case 0xcb: size = 9; break;
        case 0xcc: case 0xd0: size = 2; break;
        case 0xcd: case 0xd1: size = 3; break;
        case 0xce: case 0xd2: size = 5; break;
        case 0xcf: case 0xd3: size = 9; break;
        case 0xc7: case 0xc8: case 0xc9:
        case 0xd4: case 0xd5: case 0xd6: case 0xd7: case 0xd8: (void)read_ext(); return;
        default: fail_type("a msgpack value");  // 0xc1
    }
    need(size, type_word(b));
    p_ += size;
}

// ---- ext ----

Reader::Ext Reader::read_ext() {
    const std::uint8_t b = peek_byte();
    std::size_t header = 2;  // fixext: the header byte, then the type byte
    std::size_t length = 0;
    switch (b) {
        case 0xd4: length = 1; break;
        case 0xd5: length = 2; break;
        case 0xd6: length = 4; break;
        case 0xd7: length = 8; break;
        case 0xd8: length = 16; break;
        case 0xc7: header = 3; break;  // ext 8/16/32: the header byte, the length, the type byte
        case 0xc8: header = 4; break;
        case 0xc9: header = 6; break;
        default: fail_type("an ext");
    }
    need(header, "an ext header");
    if (b == 0xc7) length = p_[1];
    if (b == 0xc8) length = load16(p_ + 1);
    if (b == 0xc9) length = load32(p_ + 1);
    if (length > remaining() - header) fail_body("ext", length, header);
    Ext ext;
    ext.type = static_cast<std::int8_t>(p_[header - 1]);
    ext.data = BytesView(p_ + header, length);
    p_ += header + length;
    return ext;
}

// ---- errors ----

void Reader::fail_type(const char* expected) const {
    const std::uint8_t b = *p_;
    if (b == 0xc1) throw DecodeError("starts with byte 0xc1, which msgpack never uses");
    throw DecodeError(std::string("has msgpack type ") + type_word(b) + ", expected " + expected);
}

void Reader::fail_end() const { throw DecodeError("is cut short: the input ends where a value should start"); }

void Reader::fail_short(const char* what, std::size_t needed) const {
    throw DecodeError(std::string("is cut short: ") + what + " needs " + bytes_word(needed) + ", only " +
                      std::to_string(remaining()) + " left in the input");
}

void Reader::fail_body(const char* what, std::size_t length, std::size_t header) const {
    const char* article = what[0] == 'e' ? "an " : "a ";  // "a str", "a bin", "an ext"
    throw DecodeError(std::string("is cut short: ") + article + what + " of " + bytes_word(length) + ", only " +
                      std::to_string(remaining() - header) + " left in the input");
}

void Reader::fail_count(const char* what, std::uint32_t count, unsigned bytes_each, std::size_t header) const {
    throw DecodeError(std::string("is ") + what + " of " + std::to_string(count) +
                      (bytes_each == 1 ? " elements" : " entries") + ", more than the " +
                      bytes_word(remaining() - header) + " left in the input can hold");
}

void Reader::fail_depth() {
    --depth_;
    throw DecodeError("nests arrays and maps more than " + std::to_string(max_depth) + " deep");
}

void Reader::fail_trailing() const { throw DecodeError("is followed by " + bytes_word(remaining()) + " of trailing data"); }

void Reader::fail_range(std::uint64_t positive, std::int64_t negative, std::size_t size, bool is_signed) {
    const std::string value = negative != 0 ? std::to_string(negative) : std::to_string(positive);
    throw DecodeError("holds " + value + ", out of range for " + int_type_name(size, is_signed));
}

}  // namespace gecko::wire
