// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file transcode.hpp
/// A message's msgpack as the JSON its json channel carries: bytes as base64
/// strings (what Foxglove's JSON decoding reads, "contentEncoding": "base64"),
/// maps as objects, integers exact, NaN and infinities as null; for an image
/// shape (json_schema.hpp), a "timestamp" {sec, nsec} besides its fields.

#include "json_schema.hpp"

#include <cstddef>
#include <cstdint>
#include <string>

namespace gecko::bridge {

/// Appends the JSON of `message` to `out`.
/// @throws gecko::wire::DecodeError if the bytes are not one msgpack value.
void append_message_json(std::string& out, const std::uint8_t* message, std::size_t size, JsonShape shape);

}  // namespace gecko::bridge
