// SPDX-License-Identifier: Apache-2.0
#pragma once
// The `json` + `jsonschema` twin of a msgpack channel (gecko record --json),
// so that Foxglove's typed panels read Gecko's messages: a JSON Schema made
// from the type's Gecko schema, and each message transcoded to JSON with
// bin fields as base64 strings (`contentEncoding: base64`, as Foxglove
// expects image data).

#include <gecko/wire/schema.hpp>

#include <cstdint>
#include <string>

namespace gecko::bag::cli {

/// The JSON Schema of `type_name` in `schema` (wire::json_schema_of; any object when the schema does not have it).
std::string json_schema(const wire::Schema* schema, const std::string& type_name);

/// One msgpack value as JSON (wire::append_json): bin as a base64 string,
/// NaN and infinities null, non-str keys as their JSON text.
/// @throws gecko::Error (Errc::decode) if the bytes are not one msgpack value.
void transcode_to_json(const std::uint8_t* msgpack, std::size_t size, std::string& out);

/// The topic of a twin: "/json/" + topic (a Gecko topic never starts with '/').
inline std::string twin_topic(const std::string& topic) { return "/json/" + topic; }

}  // namespace gecko::bag::cli
