// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file msgpack_json.hpp
/// Any msgpack value to JSON or to indented text, and JSON back to msgpack,
/// without generated code: what `gecko echo` and `gecko pub` use.
///
/// **Mapping.**
///
/// | msgpack            | JSON                                        | text (YAML-ish)          |
/// | ---                | ---                                         | ---                      |
/// | map                | object (non-string keys become their JSON text) | `key: value` lines   |
/// | array              | array                                       | `[a, b]` or `- ` items   |
/// | int / uint         | integer (exact, full 64 bits)               | integer                  |
/// | float32 / float64  | shortest text that reads back the same; always with `.` or `e` | same, at most `float_digits` digits |
/// | NaN, ±infinity     | `null` (JSON has no such numbers)           | `nan`, `inf`, `-inf`     |
/// | str                | string (invalid UTF-8 bytes become U+FFFD)  | plain, or quoted when ambiguous |
/// | bin                | `{"$bin": "<base64>"}`                      | `<N bytes: 01 02 ...>`   |
/// | ext                | `{"$ext": type, "$data": "<base64>"}`       | `<ext T, N bytes>`       |
///
/// JSON to msgpack: objects become maps (field order kept), integers stay
/// integers (smallest encoding), every other number is float64, and an object
/// whose only member is `"$bin"` (a base64 string) becomes bin, so that
/// msgpack -> JSON -> msgpack keeps every value (float32 becomes float64).

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <msgpack.hpp>

namespace gecko::tools {

/// Parses exactly `size` bytes of msgpack (lengths bounded by `size`, depth by 64).
/// @throws gecko::Error(Errc::decode) on malformed or truncated data or trailing bytes.
msgpack::object_handle parse_msgpack(const std::uint8_t* data, std::size_t size);

/// Appends `o` as compact one-line JSON.
void append_json(std::string& out, const msgpack::object& o);
std::string to_json(const msgpack::object& o);
/// parse_msgpack() then to_json().
std::string msgpack_to_json(const std::uint8_t* data, std::size_t size);

/// How append_text() renders.
struct TextOptions {
    /// Arrays of scalars longer than this are cut ("..., +N more"); 0 = print all.
    std::size_t max_array = 32;
    /// Significant digits at most for floats (fewer when fewer read back the same).
    int float_digits = 10;
    /// Bytes of a bin value shown in hex before "...".
    std::size_t bin_preview = 8;
};

/// Appends `o` as indented text: maps as `key: value` lines, nested maps
/// indented by two spaces, arrays of scalars inline, other arrays as `- ` items.
/// Every line ends with '\n' (a scalar at top level is one line).
void append_text(std::string& out, const msgpack::object& o, const TextOptions& options = {});
std::string to_text(const msgpack::object& o, const TextOptions& options = {});

/// JSON text -> msgpack bytes.
/// @throws gecko::Error(Errc::invalid_argument) naming line and column of a syntax error,
/// or a "$bin" value that is not base64.
std::vector<std::uint8_t> json_to_msgpack(std::string_view json);

/// Writes msgpack with the smallest encodings, except floats: float64 stays
/// float64 even when integral (msgpack-c's packer would write 1.0 as 1).
class MsgpackWriter {
public:
    void nil();
    void boolean(bool v);
    void integer(std::int64_t v);
    void unsigned_integer(std::uint64_t v);
    void float64(double v);
    void float32(float v);
    void string(std::string_view v);
    void binary(const std::uint8_t* data, std::size_t size);
    void array(std::uint32_t size);  ///< then `size` values
    void map(std::uint32_t size);    ///< then `size` key, value pairs

    const std::vector<std::uint8_t>& bytes() const noexcept { return out_; }
    std::vector<std::uint8_t> take() noexcept { return std::move(out_); }

private:
    void header(std::uint8_t fix_base, std::uint32_t fix_max, std::uint8_t c8, std::uint8_t c16, std::uint8_t c32,
                std::uint32_t size);
    void big_endian(std::uint64_t v, int bytes);
    std::vector<std::uint8_t> out_;
};

/// Standard base64 (RFC 4648, with padding).
std::string base64_encode(const std::uint8_t* data, std::size_t size);
/// False on a character outside the alphabet or a wrong length. Whitespace is skipped.
bool base64_decode(std::string_view text, std::vector<std::uint8_t>& out);

/// The shortest decimal text (at most `max_digits` significant digits) that
/// reads back as `v` (as a float when `single` is set); always contains '.' or
/// 'e' so that it reads back as a float. "nan", "inf", "-inf" for those.
std::string format_float(double v, bool single = false, int max_digits = 17);

/// The name of a msgpack type as messages give it: "nil", "bool", "positive int",
/// "negative int", "float32", "float64", "str", "bin", "array", "map", "ext".
const char* msgpack_type_name(msgpack::type::object_type type) noexcept;

/// Appends `s` as a JSON string literal (quotes, escapes, invalid UTF-8 -> U+FFFD).
void append_json_string(std::string& out, std::string_view s);

}  // namespace gecko::tools
