// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file text.hpp
/// Any msgpack value as indented, YAML-ish text: what `gecko echo` prints
/// (`--json` prints gecko/wire/json.hpp's form instead).
///
/// | msgpack            | text                                               |
/// | ---                | ---                                                |
/// | map                | `key: value` lines, nested maps indented           |
/// | array              | `[a, b]` when of scalars, else `- ` items          |
/// | int                | integer                                            |
/// | float32 / float64  | shortest text that reads back, at most `float_digits` digits; `nan`, `inf`, `-inf` |
/// | str                | plain, or quoted (JSON escapes) when ambiguous     |
/// | bin                | `<N bytes: 01 02 ...>`                             |
/// | ext                | `<ext T, N bytes>`                                 |

#include <gecko/wire/value.hpp>

#include <cstddef>
#include <string>

namespace gecko::tools {

/// How append_text() renders.
struct TextOptions {
    /// Arrays of scalars longer than this are cut ("..., +N more"); 0 = print all.
    std::size_t max_array = 32;
    /// Significant digits at most for floats (fewer when fewer read back the same).
    int float_digits = 10;
    /// Bytes of a bin value shown in hex before "...".
    std::size_t bin_preview = 8;
};

/// Appends `value` as indented text: maps as `key: value` lines, nested maps
/// indented by two spaces, arrays of scalars inline, other arrays as `- ` items.
/// Every line ends with '\n' (a scalar at top level is one line).
void append_text(std::string& out, const wire::Value& value, const TextOptions& options = {});
std::string to_text(const wire::Value& value, const TextOptions& options = {});

}  // namespace gecko::tools
