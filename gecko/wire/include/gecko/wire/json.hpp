// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file json.hpp
/// Any msgpack value to JSON, and JSON back to msgpack, without generated
/// code: what `gecko echo --json` prints and `gecko pub` sends, and the form
/// a browser bridge or a script sees a message in.
///
/// **Mapping.**
///
/// | msgpack            | JSON                                                   |
/// | ---                | ---                                                    |
/// | map                | object (a key that is not a str becomes its JSON text; a map or array key within such a key, `"{...}"` or `"[...]"`) |
/// | array              | array                                                  |
/// | int                | integer (exact, full 64 bits)                          |
/// | float32 / float64  | shortest text that reads back the same; always with `.` or `e` |
/// | NaN, ±infinity     | `null` (JSON has no such numbers)                      |
/// | str                | string (invalid UTF-8 bytes become U+FFFD; C0 and C1 controls escaped) |
/// | bin                | `{"$bin": "<base64>"}`                                 |
/// | ext                | `{"$ext": type, "$data": "<base64>"}`                  |
///
/// JSON to msgpack: objects become maps (member order kept), integers stay
/// integers (smallest encoding), every other number is float64, and an
/// object whose only member is `"$bin"` (a base64 string) becomes bin, so
/// that msgpack -> JSON -> msgpack keeps every value (float32 becomes
/// float64, ext does not come back).

#include <gecko/wire/value.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace gecko::wire {

/// How append_json writes what JSON has no form for.
struct JsonOptions {
    /// A bin as `{"$bin": "<base64>"}` (unset: json_to_msgpack reads it back
    /// as bin), or as a bare base64 string (set: what Foxglove's `json` message
    /// encoding and a JSON Schema's `"contentEncoding": "base64"` expect, and
    /// what json_schema_of() describes).
    bool bin_as_base64_string{false};
};

/// Appends `value` as compact one-line JSON.
void append_json(std::string& out, const Value& value, const JsonOptions& options = {});
std::string to_json(const Value& value);
/// Value::parse() then to_json().
/// @throws DecodeError if the bytes are not exactly one msgpack value.
std::string msgpack_to_json(const std::uint8_t* data, std::size_t size);

/// JSON text -> msgpack bytes.
/// @throws gecko::Error(Errc::invalid_argument) naming the line and column
/// of a syntax error, or a "$bin" value that is not base64.
std::vector<std::uint8_t> json_to_msgpack(std::string_view json);

/// Appends `text` as a JSON string literal: quotes, backslashes and control
/// characters (C0, DEL, and C1 such as CSI, which a terminal would obey)
/// escaped, bytes that are not UTF-8 replaced by U+FFFD.
void append_json_string(std::string& out, std::string_view text);

/// The shortest decimal text (at most `max_digits` significant digits) that
/// reads back as `v` (as a float when `single` is set); always contains '.'
/// or 'e' so that it reads back as a float. "nan", "inf", "-inf" for those.
std::string format_float(double v, bool single = false, int max_digits = 17);

}  // namespace gecko::wire
