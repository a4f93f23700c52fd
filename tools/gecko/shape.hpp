// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file shape.hpp
/// The fields of a message type and their types, as `gecko type` and
/// `gecko info` print them: known exactly for the gecko.msgs types
/// (known_types.hpp), or inferred from one msgpack message.

#include <gecko/wire/schema.hpp>
#include <gecko/wire/value.hpp>

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace gecko::tools {

struct Shape {
    enum class Kind { scalar, message, array, map };
    Kind kind = Kind::scalar;
    /// As printed: "float64", "string", "bytes", "gecko.msgs.Vector3", "float64[]",
    /// "float64[3]", "map<string, bool>", "float64 or nil".
    std::string type;
    /// Kind::message: its fields, in order.
    std::vector<std::pair<std::string, Shape>> fields;
    /// Kind::array and Kind::map: the shape of an item (exactly one).
    std::vector<Shape> item;

    const Shape* field(const std::string& name) const;
    /// "x, y, z", or "(none)".
    std::string field_list() const;
};

/// The shape of one msgpack value: maps are messages, ints "int", floats
/// "float32"/"float64", str "string", bin "bytes"; an array takes the shape
/// of its items when they all agree ("float64[]"), else "array".
Shape infer_shape(const wire::Value& value);

/// The shape of message type `type` as `schema` describes it (the fields a
/// publisher declared, from the key's directory); nullopt if it does not.
std::optional<Shape> shape_of_schema(const wire::Schema& schema, const std::string& type);

/// One line per field, "name  type", columns aligned, nested messages'
/// fields (also those of array and map items) indented by two spaces under
/// their field. `indent` starts every line.
std::string render_fields(const Shape& message, const std::string& indent = "  ");

/// "" if `path` (field names, and item indices or map keys where the shape
/// has arrays or maps) can exist in a message of this shape, else why not,
/// naming the fields that exist, e.g. "gecko.msgs.Imu has no field 'acel'; its
/// fields are: stamp_ns, frame_id, accel, gyro, mag, orientation".
std::string check_path(const Shape& message, const std::vector<std::string>& path);

}  // namespace gecko::tools
