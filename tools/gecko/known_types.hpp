// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file known_types.hpp
/// The types the tool knows field by field: the gecko.msgs types
/// (msgs/include/gecko/msgs), and those whose schema the key's publishers
/// declared (learn_schemas): their shapes for `gecko type` and `gecko info`,
/// the check of JSON before `gecko pub` and `gecko call` send it, and the
/// check of a received frame against its declared type for `gecko echo`.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <gecko/graph.hpp>

#include "shape.hpp"

namespace gecko::tools {

/// Learns the types whose schema the key's directory holds (a topic's
/// `schema`): from now on they are known as the gecko.msgs types are.
void learn_schemas(const Graph& graph);

/// Every known type name, sorted ("gecko.msgs.Float64", ..., "gecko.msgs.click.Control", ...).
std::vector<std::string> known_type_names();

/// The fields of a known type, or nullptr for another type.
const Shape* known_shape(const std::string& type);

/// For a known type: checks the msgpack made from the user's JSON, field
/// names first (a misspelled field names the valid ones), then value types,
/// by decoding as the receivers will. Other types pass unchecked: call
/// learn_schemas() first to check the key's own types too.
/// @throws UsageError saying what is wrong.
void check_known(const std::string& type, const std::vector<std::uint8_t>& payload);

/// For a received frame: "" if its payload fits `type` (any msgpack map for
/// a type the tool does not know), else why not ("not a msgpack map (a
/// message) but an array", "gecko.msgs.Imu: field 'accel.x' has the wrong
/// msgpack type (str)"). The payload must be valid msgpack.
std::string schema_violation(const std::string& type, const std::uint8_t* payload, std::size_t size);

}  // namespace gecko::tools
