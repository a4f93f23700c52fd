// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file schema.hpp
/// A message type's fields as data: what a consumer that did not compile the
/// type (a tool, a bridge, a recorder, another language) needs to read it, to
/// check what a user typed against it, and to describe it to others.
///
/// A publisher declares its type's schema when it registers; geckocore keeps
/// it in the key's channel directory (docs/DISCOVERY.md §4.1) and hands it to
/// every consumer. On the wire a schema is one msgpack map, in the shape
/// tests/conformance/vectors/schemas.json writes for the gecko.msgs types
/// (docs/PROTOCOL.md §3.1):
///
///     {"types": [{"type_name": "gecko.msgs.Pose",
///                 "fields": [{"name": "position", "type": {"message": "gecko.msgs.Vector3"}}, ...]},
///                {"type_name": "gecko.msgs.Vector3",
///                 "fields": [{"name": "x", "type": "float64"}, ...]}, ...]}
///
/// `types` holds the declared type and every message type its fields name,
/// so that a schema is complete by itself. A field's type is a str for a
/// scalar ("bool", "int8".."int64", "uint8".."uint64", "float32", "float64",
/// "str", "bin") or a map for the rest: {"array": T} (with "size": N when
/// fixed), {"optional": T}, {"map": T} (str keys), {"message": NAME},
/// {"struct": [fields]} (a nested struct without a type name of its own),
/// {"enum": NAME, "names": [...], "values": [...]}, {"bin": N} (exactly N bytes).
///
/// **Example**:
///
///     const gecko::wire::Schema s = gecko::wire::schema_of<gecko::msgs::Imu>();  // schema_of.hpp
///     const auto bytes = s.encode();                                         // msgpack, as above
///     const auto why = s.check("gecko.msgs.Imu", payload, size, gecko::wire::Schema::Check::strict);
///     if (!why.empty()) std::cerr << why << "\n";  // "gecko.msgs.Imu has no field 'acel'; its fields are: ..."

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <gecko/wire/value.hpp>

namespace gecko::wire {

struct SchemaField;

/// The type of one field as it travels (docs/PROTOCOL.md §3).
struct FieldType {
    enum class Kind : std::uint8_t {
        boolean, int8, int16, int32, int64, uint8, uint16, uint32, uint64, float32, float64, str, bin,
        array, optional, map, message, record, enumeration,
    };
    Kind kind = Kind::boolean;
    std::size_t size = 0;               ///< array, bin: exactly this many items (bytes); 0: any number
    std::vector<FieldType> item;        ///< array, optional, map: the type of an item (exactly one)
    std::string name;                   ///< message: the nested type's name; enumeration: the enum's name
    std::vector<SchemaField> fields;    ///< record: a nested struct's fields
    std::vector<std::string> names;     ///< enumeration: its names ...
    std::vector<std::int64_t> values;   ///< ... and their numbers

    /// As `gecko type` prints it: "float64", "str", "gecko.msgs.Vector3",
    /// "float64[]", "float64[3]", "map<str, bool>", "float64 or nil", "enum Mode".
    std::string to_string() const;
};

struct SchemaField {
    std::string name;
    FieldType type;
};

/// One message type: its name and its fields, in wire order.
struct MessageSchema {
    std::string type_name;
    std::vector<SchemaField> fields;

    /// The field `name`, or nullptr.
    const SchemaField* field(std::string_view name) const noexcept;
    /// "x, y, z", or "(none)".
    std::string field_list() const;
};

class Schema {
public:
    /// The most bytes an encoded schema may take (a registration carrying a
    /// larger one is refused, and so is decoding one).
    static constexpr std::size_t max_encoded_size = 64 * 1024;

    Schema() = default;
    /// `types`: the declared type first, then the types it refers to.
    explicit Schema(std::vector<MessageSchema> types) : types_(std::move(types)) {}

    const std::vector<MessageSchema>& types() const noexcept { return types_; }
    bool empty() const noexcept { return types_.empty(); }
    /// The type `type_name` of this schema, or nullptr.
    const MessageSchema* find(std::string_view type_name) const noexcept;
    /// Adds the types of `other` this schema does not have yet (a service's
    /// request and reply types in one schema).
    void merge(const Schema& other);

    /// The msgpack map described at the top of this file.
    std::vector<std::uint8_t> encode() const;
    /// Reads a schema from its msgpack map, checking every part: field types
    /// known, items where they belong, names printable and at most 256 bytes,
    /// every {"message": NAME} among the types, at most 256 types and 4096
    /// fields in all, nested at most 16 deep.
    /// @throws gecko::Error (Errc::decode) saying what is wrong and where.
    static Schema decode(const Value& map);
    static Schema decode(const std::uint8_t* data, std::size_t size);
    /// The same as JSON (schemas.json's "types" entries, without hashes and defaults).
    std::string to_json() const;

    enum class Check {
        strict,       ///< what a user typed: an unknown field is an error (a misspelt name)
        as_receiver,  ///< what a publisher sent: unknown fields are skipped, as receivers do
    };
    /// "" if `[payload, payload + size)` is one msgpack map that a receiver
    /// decodes as `type_name`, else why not, naming the field path, e.g.
    /// "gecko.msgs.Imu: field 'accel.x' has msgpack type str, expected a
    /// number", or (strict) "gecko.msgs.Imu has no field 'acel'; its fields
    /// are: stamp_ns, frame_id, accel, gyro, mag, orientation". A type this
    /// schema does not have: "" (nothing to check against).
    std::string check(std::string_view type_name, const std::uint8_t* payload, std::size_t size,
                      Check mode = Check::as_receiver) const;

private:
    std::vector<MessageSchema> types_;
};

}  // namespace gecko::wire
