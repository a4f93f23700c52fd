// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file reader.hpp
/// gecko::wire::Reader: msgpack read straight from the bytes, bounded.
///
/// This is the one place where bytes from the network are parsed as msgpack
/// by the typed layer (gecko/message.hpp decodes every message through it).
/// It builds no object tree and allocates nothing: each read checks the next
/// value's type, checks that its bytes are all in the input, converts it and
/// moves on. That is what makes decoding a 360-point Lidar scan cost about
/// what encoding it does, where msgpack-c's unpack-then-convert costs ~7x.
///
/// **Never trusts the input.** No read goes past the end. A length is
/// checked against the bytes left before it is used: a str or bin must fit,
/// an array of N elements needs at least N bytes left (each element takes
/// one byte or more) and a map of N entries 2N, so a 5-byte input claiming
/// four billion elements fails before anyone reserves memory for them.
/// Arrays and maps nest at most `max_depth` deep (also while skipping), so
/// deep input cannot exhaust the stack.
///
/// **Numbers** follow docs/PROTOCOL.md §3: `read_float` accepts any msgpack
/// int or float (a float32 field accepts a float64 and rounds it);
/// `read_int` accepts only a msgpack int that fits the target type: `1.5`
/// never becomes `1`, 300 never becomes a uint8_t 44.
///
/// **Errors** are gecko::wire::DecodeError, a gecko::Error with
/// Errc::decode. The reader phrases what is wrong with the value ("has
/// msgpack type str, expected a number"); the message layer adds the
/// message type and the field path as the error climbs out.
///
/// Format reference: https://github.com/msgpack/msgpack/blob/master/spec.md
/// (big-endian lengths and numbers).

#include <gecko/bytes_view.hpp>
#include <gecko/error.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <string_view>
#include <type_traits>

namespace gecko::wire {

/// Why some bytes did not decode. what() reads, for example,
/// "gecko.msgs.Imu: field 'accel.x' has msgpack type str, expected a number".
class DecodeError : public Error {
public:
    /// `detail` completes a sentence about the value: "has msgpack type str,
    /// expected a number", "is cut short: ...".
    explicit DecodeError(std::string detail);

    /// The message type the error was found in ("gecko.msgs.Imu"); empty
    /// until the decoder of a named type adds it.
    const std::string& type_name() const noexcept { return type_name_; }
    /// Where in the message: "accel.x", "position[2]", "objects.robot1";
    /// empty for the message itself.
    const std::string& path() const noexcept { return path_; }
    /// What is wrong with the value at path().
    const std::string& detail() const noexcept { return detail_; }
    const char* what() const noexcept override { return what_.c_str(); }

    /// Prefixes the path with a field or map key (printable ASCII kept,
    /// anything else shown as '?', cut at 64 characters). For decoders of
    /// nested values, while the error climbs out.
    void nest_field(std::string_view name);
    /// Prefixes the path with an array index ("[3]").
    void nest_index(std::size_t index);
    /// Names the message type the path starts at.
    void set_type_name(std::string_view name);

private:
    void prefix(std::string step);
    void rebuild();

    std::string type_name_;
    std::string path_;
    std::string detail_;
    std::string what_;
};

/// The msgpack type family of a value, as the spec names them.
enum class Type : std::uint8_t { nil, boolean, integer, float32, float64, str, bin, array, map, ext };

/// "nil", "bool", "int", "float32", "float64", "str", "bin", "array", "map", "ext".
const char* to_string(Type type) noexcept;

/// Reads msgpack values one after another from `[data, data + size)`.
/// Each read consumes one value; on error it throws and the reader must not
/// be used further. The bytes must outlive the reader and every string_view
/// or BytesView it returned.
class Reader {
public:
    /// Deepest nesting of arrays and maps accepted (a message's own map counts).
    static constexpr std::size_t max_depth = 64;

    Reader(const std::uint8_t* data, std::size_t size) noexcept : begin_(data), p_(data), end_(data + size) {}

    /// Bytes not read yet.
    std::size_t remaining() const noexcept { return static_cast<std::size_t>(end_ - p_); }
    /// Bytes read so far.
    std::size_t offset() const noexcept { return static_cast<std::size_t>(p_ - begin_); }
    bool at_end() const noexcept { return p_ == end_; }

    /// The type of the next value, without consuming it.
    /// @throws DecodeError at the end of the input or on byte 0xc1 (never used).
    Type peek() const;

    /// Consumes a nil and returns true if the next value is nil; else false.
    /// @throws DecodeError at the end of the input.
    bool try_read_nil() {
        if (peek_byte() != 0xc0) return false;
        ++p_;
        return true;
    }

    /// @throws DecodeError unless the next value is true or false.
    bool read_bool() {
        const std::uint8_t b = peek_byte();
        if (b == 0xc2 || b == 0xc3) {
            ++p_;
            return b == 0xc3;
        }
        fail_type("a bool");
    }

    /// An integer of type `Int` (not bool).
    /// @throws DecodeError unless the next value is a msgpack int whose
    /// value `Int` can hold (a float is refused, whatever its value).
    template <class Int>
    Int read_int() {
        static_assert(std::is_integral_v<Int> && !std::is_same_v<Int, bool>, "read_int reads integer types");
        std::uint64_t u = 0;
        std::int64_t s = 0;
        if (!read_int_parts(u, s, "an integer")) {
            if constexpr (std::is_signed_v<Int>) {
                if (s >= static_cast<std::int64_t>(std::numeric_limits<Int>::min())) return static_cast<Int>(s);
            }
            fail_range(0, s, sizeof(Int), std::is_signed_v<Int>);
        }
        if (u > static_cast<std::uint64_t>(std::numeric_limits<Int>::max()))
            fail_range(u, 0, sizeof(Int), std::is_signed_v<Int>);
        return static_cast<Int>(u);
    }

    /// A number as float or double: any msgpack float or int is accepted
    /// (a float64 read as float rounds to the nearest float).
    /// @throws DecodeError unless the next value is a msgpack int or float.
    template <class Float>
    Float read_float() {
        static_assert(std::is_same_v<Float, float> || std::is_same_v<Float, double>, "read_float reads float or double");
        const std::uint8_t b = peek_byte();
        // The native width first: a float field is usually float32 on the wire.
        if constexpr (std::is_same_v<Float, float>) {
            if (b == 0xca) return load_float32();
            if (b == 0xcb) return static_cast<float>(load_float64());
        } else {
            if (b == 0xcb) return load_float64();
            if (b == 0xca) return static_cast<double>(load_float32());
        }
        std::uint64_t u = 0;
        std::int64_t s = 0;
        return read_int_parts(u, s, "a number") ? static_cast<Float>(u) : static_cast<Float>(s);
    }

    /// Fast path for arrays of numbers: reads up to `n` consecutive values
    /// encoded at Float's own width (float32 for float, float64 for double),
    /// as written by Gecko, into `out`, checking the input's bounds once for
    /// the run. Stops at the first value of another encoding (read it with
    /// read_float) and returns how many it read.
    template <class Float>
    std::size_t read_float_run(Float* out, std::size_t n) noexcept {
        static_assert(std::is_same_v<Float, float> || std::is_same_v<Float, double>, "float or double");
        constexpr std::size_t width = 1 + sizeof(Float);
        constexpr std::uint8_t tag = sizeof(Float) == 4 ? 0xca : 0xcb;
        const std::size_t fit = remaining() / width;
        if (n > fit) n = fit;
        const std::uint8_t* p = p_;  // a local: stores to `out` cannot move it
        std::size_t i = 0;
        for (; i < n && p[0] == tag; ++i, p += width) {
            if constexpr (sizeof(Float) == 4) {
                const std::uint32_t bits = load32(p + 1);
                std::memcpy(out + i, &bits, sizeof bits);
            } else {
                const std::uint64_t bits = load64(p + 1);
                std::memcpy(out + i, &bits, sizeof bits);
            }
        }
        p_ = p;
        return i;
    }

    /// A str, as a view into the input (not checked to be UTF-8).
    /// @throws DecodeError unless the next value is a str that fits in the input.
    std::string_view read_str() {
        std::string_view text;
        if (!try_read_str(text)) fail_type("a str");
        return text;
    }

    /// Reads a str into `text` and returns true if the next value is a str;
    /// returns false, consuming nothing, if it is of another type.
    /// @throws DecodeError at the end of the input, or if the str does not fit in it.
    bool try_read_str(std::string_view& text) {
        const std::uint8_t b = peek_byte();
        std::size_t header = 1;
        std::size_t length = 0;
        if ((b & 0xe0) == 0xa0) {
            length = b & 0x1f;
        } else if (b == 0xd9) {
            header = 2;
            need(header, "a str8 header");
            length = p_[1];
        } else if (b == 0xda) {
            header = 3;
            need(header, "a str16 header");
            length = load16(p_ + 1);
        } else if (b == 0xdb) {
            header = 5;
            need(header, "a str32 header");
            length = load32(p_ + 1);
        } else {
            return false;
        }
        if (length > remaining() - header) fail_body("str", length, header);
        text = std::string_view(reinterpret_cast<const char*>(p_ + header), length);
        p_ += header + length;
        return true;
    }

    /// Consumes the next N bytes if they are exactly `bytes` (an encoded
    /// value known at compile time, such as a field name with its header):
    /// true; else false, consuming nothing. Never throws.
    template <std::size_t N>
    [[gnu::always_inline]] bool try_read_exactly(const std::array<std::uint8_t, N>& bytes) noexcept {
        if (remaining() < N || !same_bytes<N>(p_, bytes.data())) return false;
        p_ += N;
        return true;
    }

    /// A bin, as a view into the input.
    /// @throws DecodeError unless the next value is a bin that fits in the input.
    BytesView read_bin() {
        const std::uint8_t b = peek_byte();
        std::size_t header = 0;
        std::size_t length = 0;
        if (b == 0xc4) {
            header = 2;
            need(header, "a bin8 header");
            length = p_[1];
        } else if (b == 0xc5) {
            header = 3;
            need(header, "a bin16 header");
            length = load16(p_ + 1);
        } else if (b == 0xc6) {
            header = 5;
            need(header, "a bin32 header");
            length = load32(p_ + 1);
        } else {
            fail_type("a bin");
        }
        if (length > remaining() - header) fail_body("bin", length, header);
        const BytesView bytes(p_ + header, length);
        p_ += header + length;
        return bytes;
    }

    /// The element count of an array; the elements follow. Hold a Nesting
    /// while reading them.
    /// @throws DecodeError unless the next value is an array and the input
    /// has at least one byte left per element.
    std::uint32_t read_array() {
        const std::uint8_t b = peek_byte();
        std::size_t header = 1;
        std::uint32_t count = 0;
        if ((b & 0xf0) == 0x90) {
            count = b & 0x0f;
        } else if (b == 0xdc) {
            header = 3;
            need(header, "an array16 header");
            count = load16(p_ + 1);
        } else if (b == 0xdd) {
            header = 5;
            need(header, "an array32 header");
            count = load32(p_ + 1);
        } else {
            fail_type("an array");
        }
        if (count > remaining() - header) fail_count("an array", count, 1, header);
        p_ += header;
        return count;
    }

    /// The entry count of a map; the entries (key, value, key, value, ...)
    /// follow. Hold a Nesting while reading them. `expected` names what was
    /// expected in the error when the value is not a map.
    /// @throws DecodeError unless the next value is a map and the input has
    /// at least two bytes left per entry.
    std::uint32_t read_map(const char* expected = "a map") {
        const std::uint8_t b = peek_byte();
        std::size_t header = 1;
        std::uint32_t count = 0;
        if ((b & 0xf0) == 0x80) {
            count = b & 0x0f;
        } else if (b == 0xde) {
            header = 3;
            need(header, "a map16 header");
            count = load16(p_ + 1);
        } else if (b == 0xdf) {
            header = 5;
            need(header, "a map32 header");
            count = load32(p_ + 1);
        } else {
            fail_type(expected);
        }
        if (static_cast<std::uint64_t>(count) * 2 > remaining() - header) fail_count("a map", count, 2, header);
        p_ += header;
        return count;
    }

    /// An ext value: an application-defined type code and its bytes.
    struct Ext {
        std::int8_t type = 0;
        BytesView data;
    };
    /// An ext, its data as a view into the input.
    /// @throws DecodeError unless the next value is an ext that fits in the input.
    Ext read_ext();

    /// Skips one value of any type, nested arrays and maps included.
    /// @throws DecodeError if it is malformed, cut short or nested deeper than max_depth.
    void skip();

    /// Skips one value like skip() and returns its encoded bytes (header
    /// included), a view into the input: a value to look at later, or to
    /// hand on, already checked whole.
    /// @throws DecodeError as skip() does.
    BytesView read_raw() {
        const std::uint8_t* start = p_;
        skip();
        return BytesView(start, static_cast<std::size_t>(p_ - start));
    }

    /// @throws DecodeError if any bytes are left ("followed by N trailing bytes").
    void expect_end() const {
        if (p_ != end_) fail_trailing();
    }

    /// One level of nesting, held while reading the contents of an array or
    /// a map. @throws DecodeError beyond max_depth levels.
    class Nesting {
    public:
        explicit Nesting(Reader& reader) : reader_(reader) {
            if (++reader_.depth_ > max_depth) reader_.fail_depth();
        }
        ~Nesting() { --reader_.depth_; }
        Nesting(const Nesting&) = delete;
        Nesting& operator=(const Nesting&) = delete;

    private:
        Reader& reader_;
    };

    /// The msgpack type a value starting with `first_byte` has, as a word for
    /// messages ("str", "float64", ...; "byte 0xc1" for the unused byte).
    static const char* type_word(std::uint8_t first_byte) noexcept;

private:
    // a[0, N) == b[0, N) in a few fixed-size compares (overlapping where N
    // is not a power of two), for the short N of field names: a library
    // memcmp call costs more than the compare.
    template <std::size_t N>
    [[gnu::always_inline]] static bool same_bytes(const std::uint8_t* a, const std::uint8_t* b) noexcept {
        if constexpr (N > 32) {
            return std::memcmp(a, b, N) == 0;
        } else if constexpr (N >= 16) {
            return same_word<8>(a, b) && same_word<8>(a + 8, b + 8) && same_word<8>(a + N - 16, b + N - 16) &&
                   same_word<8>(a + N - 8, b + N - 8);
        } else if constexpr (N >= 8) {
            return same_word<8>(a, b) && same_word<8>(a + N - 8, b + N - 8);
        } else if constexpr (N >= 4) {
            return same_word<4>(a, b) && same_word<4>(a + N - 4, b + N - 4);
        } else {
            for (std::size_t i = 0; i < N; ++i)
                if (a[i] != b[i]) return false;
            return true;
        }
    }
    template <std::size_t W>
    [[gnu::always_inline]] static bool same_word(const std::uint8_t* a, const std::uint8_t* b) noexcept {
        using Word = std::conditional_t<W == 8, std::uint64_t, std::uint32_t>;
        Word x, y;
        std::memcpy(&x, a, W);
        std::memcpy(&y, b, W);
        return x == y;
    }

    std::uint8_t peek_byte() const {
        if (p_ == end_) fail_end();
        return *p_;
    }
    void need(std::size_t n, const char* what) const {
        if (remaining() < n) fail_short(what, n);
    }

    static std::uint16_t load16(const std::uint8_t* p) noexcept {
        return static_cast<std::uint16_t>((p[0] << 8) | p[1]);
    }
    static std::uint32_t load32(const std::uint8_t* p) noexcept {
        return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) | p[3];
    }
    static std::uint64_t load64(const std::uint8_t* p) noexcept {
        return (std::uint64_t{load32(p)} << 32) | load32(p + 4);
    }
    float load_float32() {
        need(5, "a float32");
        const std::uint32_t bits = load32(p_ + 1);
        p_ += 5;
        float f;
        std::memcpy(&f, &bits, sizeof f);
        return f;
    }
    double load_float64() {
        need(9, "a float64");
        const std::uint64_t bits = load64(p_ + 1);
        p_ += 9;
        double d;
        std::memcpy(&d, &bits, sizeof d);
        return d;
    }

    /// Reads any msgpack int: returns true with the value in `u` when it is
    /// non-negative, false with it in `s` when negative. Throws naming
    /// `expected` when the next value is not an int.
    bool read_int_parts(std::uint64_t& u, std::int64_t& s, const char* expected) {
        const std::uint8_t b = peek_byte();
        if (b <= 0x7f) {  // positive fixint
            ++p_;
            u = b;
            return true;
        }
        if (b >= 0xe0) {  // negative fixint
            ++p_;
            s = static_cast<std::int64_t>(b) - 256;
            return false;
        }
        switch (b) {
            case 0xcc: need(2, "a uint8"); u = p_[1]; p_ += 2; return true;
            case 0xcd: need(3, "a uint16"); u = load16(p_ + 1); p_ += 3; return true;
            case 0xce: need(5, "a uint32"); u = load32(p_ + 1); p_ += 5; return true;
            case 0xcf: need(9, "a uint64"); u = load64(p_ + 1); p_ += 9; return true;
            case 0xd0: need(2, "an int8"); s = static_cast<std::int8_t>(p_[1]); p_ += 2; break;
            case 0xd1: need(3, "an int16"); s = static_cast<std::int16_t>(load16(p_ + 1)); p_ += 3; break;
            case 0xd2: need(5, "an int32"); s = static_cast<std::int32_t>(load32(p_ + 1)); p_ += 5; break;
            case 0xd3: need(9, "an int64"); s = static_cast<std::int64_t>(load64(p_ + 1)); p_ += 9; break;
            default: fail_type(expected);
        }
        if (s >= 0) {  // a signed format may carry a non-negative value
            u = static_cast<std::uint64_t>(s);
            return true;
        }
        return false;
    }

    // Out of line and cold (reader.cpp): each builds the message and throws.
    [[noreturn]] void fail_type(const char* expected) const;
    [[noreturn]] void fail_end() const;
    [[noreturn]] void fail_short(const char* what, std::size_t needed) const;
    [[noreturn]] void fail_body(const char* what, std::size_t length, std::size_t header) const;
    [[noreturn]] void fail_count(const char* what, std::uint32_t count, unsigned bytes_each, std::size_t header) const;
    [[noreturn]] void fail_depth();
    [[noreturn]] void fail_trailing() const;
    /// The value is `negative` when non-zero, else `positive`.
    [[noreturn]] static void fail_range(std::uint64_t positive, std::int64_t negative, std::size_t size, bool is_signed);

    void skip_value(std::uint8_t b);

    const std::uint8_t* begin_;
    const std::uint8_t* p_;
    const std::uint8_t* end_;
    std::size_t depth_ = 0;
};

}  // namespace gecko::wire
