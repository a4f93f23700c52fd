// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file json_schema.hpp
/// The JSON Schema of a message type, from its Gecko schema (schema.hpp): how
/// a browser, Foxglove or an MCAP reader learns the shape of the JSON that
/// append_json() writes with JsonOptions::bin_as_base64_string. The bridge
/// advertises it for its `json` channels; `gecko record --json` writes it for
/// the twin channels.
///
/// | Gecko field type              | JSON Schema                                                       |
/// | ---                           | ---                                                               |
/// | bool                          | `{"type": "boolean"}`                                             |
/// | int8 … uint32                 | `{"type": "integer", "minimum": …, "maximum": …}`                 |
/// | int64, uint64                 | `{"type": "integer"}`                                             |
/// | float32, float64              | `{"type": "number"}` (a NaN or an infinity travels as `null`)     |
/// | str                           | `{"type": "string"}`                                              |
/// | bin                           | `{"type": "string", "contentEncoding": "base64"}`                 |
/// | array of uint8, any length    | base64 string or array of integers (bytes travel as bin when packed so) |
/// | array, map, optional          | `array` with `items` (and `minItems` = `maxItems` when fixed), `object` with `additionalProperties`, `anyOf` with `null` |
/// | message, struct               | `object` with `properties` (a message's `title` is its type name) |
/// | enum                          | `{"type": ["string", "integer"], "enum": [names…, numbers…]}` (names travel; readers take numbers too) |
///
/// Types nested deeper than 16 levels (a recursive type) are left open (`{}`).

#include <gecko/wire/schema.hpp>

#include <string>
#include <string_view>

namespace gecko::wire {

/// The JSON Schema (one line of JSON text) of the messages of `type_name`
/// described by `schema`; a type `schema` does not hold gives
/// `{"type":"object","title":type_name}` (any object).
std::string json_schema_of(const Schema& schema, std::string_view type_name);

}  // namespace gecko::wire
