// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file json_schema.hpp
/// JSON Schema documents for a topic's `json` channel, as Foxglove wants them
/// ("type": "object", bytes as base64 strings with "contentEncoding"):
/// generated from the fields a publisher declared (gecko::wire::Schema), or,
/// for a type nobody declared, inferred from what its messages carry and
/// refined as new fields appear.

#include <gecko/wire/schema.hpp>
#include <gecko/wire/value.hpp>

#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace gecko::bridge {

/// What a topic's json channel is shown as in Foxglove: its own type, or one
/// of Foxglove's image shapes that its Image panel reads.
enum class JsonShape {
    plain,             ///< the message's own fields
    raw_image,         ///< foxglove.RawImage: adds "timestamp" {sec, nsec} from stamp_ns
    compressed_image,  ///< foxglove.CompressedImage: the same
};

/// The shape a type's json channel takes: raw_image for gecko.msgs.Image or
/// any type with width, height, encoding, step and bytes `data`;
/// compressed_image for one with `format` and bytes `data` (and no width).
JsonShape shape_of(const wire::MessageSchema& type) noexcept;
/// The schema name advertised for `type_name` in `shape`.
std::string schema_name_of(std::string_view type_name, JsonShape shape);

/// The JSON Schema document of `type_name` as declared in `schema` (nested
/// message types inlined). Throws nothing: a type `schema` lacks gives
/// {"type": "object"}.
std::string json_schema_of(const wire::Schema& schema, std::string_view type_name, JsonShape shape = JsonShape::plain);

/// A JSON Schema learnt from messages: every field seen so far with the JSON
/// type its values had. Bounded: at most `max_nodes` fields in all and 16
/// levels; past that, values are described as "any".
class SchemaInference {
public:
    explicit SchemaInference(std::size_t max_nodes = 2048);
    ~SchemaInference();
    SchemaInference(SchemaInference&&) noexcept;
    SchemaInference& operator=(SchemaInference&&) noexcept;
    /// Learns from one message. True if the schema grew (a new field, or a
    /// field whose values now have more than one JSON type).
    bool observe(const wire::Value& message);
    bool empty() const noexcept { return !root_; }
    /// The document ({"type": "object"} before any message).
    std::string json() const;

    struct Node;

private:
    bool merge(std::unique_ptr<Node>& node, const wire::Value& value, std::size_t depth);
    std::unique_ptr<Node> root_;
    std::size_t nodes_ = 0;
    std::size_t max_nodes_;
};

}  // namespace gecko::bridge
