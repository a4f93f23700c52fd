// SPDX-License-Identifier: Apache-2.0
#include "gecko/wire/json_schema.hpp"

#include <nlohmann/json.hpp>

namespace gecko::wire {

namespace {

using Json = nlohmann::ordered_json;
using Kind = FieldType::Kind;

constexpr std::size_t max_depth = 16;

Json integer(double min, double max) { return Json{{"type", "integer"}, {"minimum", min}, {"maximum", max}}; }

Json field_schema(const Schema& schema, const FieldType& t, std::size_t depth);

Json object_schema(const Schema& schema, const std::vector<SchemaField>& fields, std::string_view title, std::size_t depth) {
    Json props = Json::object();
    for (const auto& f : fields) props[f.name] = field_schema(schema, f.type, depth + 1);
    Json j{{"type", "object"}};
    if (!title.empty()) j["title"] = title;
    j["properties"] = std::move(props);
    return j;
}

Json field_schema(const Schema& schema, const FieldType& t, std::size_t depth) {
    if (depth > max_depth) return Json::object();  // a recursive type: the rest is left open
    switch (t.kind) {
        case Kind::boolean: return Json{{"type", "boolean"}};
        case Kind::int8: return integer(-128, 127);
        case Kind::int16: return integer(-32768, 32767);
        case Kind::int32: return integer(-2147483648.0, 2147483647.0);
        case Kind::uint8: return integer(0, 255);
        case Kind::uint16: return integer(0, 65535);
        case Kind::uint32: return integer(0, 4294967295.0);
        case Kind::int64:
        case Kind::uint64: return Json{{"type", "integer"}};
        case Kind::float32:
        case Kind::float64: return Json{{"type", "number"}};
        case Kind::str: return Json{{"type", "string"}};
        case Kind::bin: return Json{{"type", "string"}, {"contentEncoding", "base64"}};
        case Kind::array: {
            if (t.item.empty()) return Json{{"type", "array"}};
            if (t.item[0].kind == Kind::uint8 && t.size == 0)  // bytes travel as bin when packed so
                return Json{{"anyOf", Json::array({Json{{"type", "string"}, {"contentEncoding", "base64"}},
                                                   Json{{"type", "array"}, {"items", integer(0, 255)}}})}};
            Json j{{"type", "array"}, {"items", field_schema(schema, t.item[0], depth + 1)}};
            if (t.size) {
                j["minItems"] = t.size;
                j["maxItems"] = t.size;
            }
            return j;
        }
        case Kind::optional:
            if (t.item.empty()) return Json::object();
            return Json{{"anyOf", Json::array({field_schema(schema, t.item[0], depth + 1), Json{{"type", "null"}}})}};
        case Kind::map:
            return Json{{"type", "object"},
                        {"additionalProperties", t.item.empty() ? Json::object() : field_schema(schema, t.item[0], depth + 1)}};
        case Kind::message: {
            const auto* nested = schema.find(t.name);
            if (!nested) return Json{{"type", "object"}, {"title", t.name}};
            return object_schema(schema, nested->fields, t.name, depth);
        }
        case Kind::record: return object_schema(schema, t.fields, "", depth);
        case Kind::enumeration: {
            Json j{{"type", Json::array({"string", "integer"})}, {"title", t.name}};
            Json allowed = Json::array();
            for (const auto& n : t.names) allowed.push_back(n);
            for (const auto v : t.values) allowed.push_back(v);
            if (!allowed.empty()) j["enum"] = std::move(allowed);
            std::string described;
            for (std::size_t i = 0; i < t.names.size() && i < t.values.size(); ++i)
                described += (i ? ", " : "") + t.names[i] + " = " + std::to_string(t.values[i]);
            if (!described.empty()) j["description"] = described;
            return j;
        }
    }
    return Json::object();
}

}  // namespace

std::string json_schema_of(const Schema& schema, std::string_view type_name) {
    const auto* type = schema.find(type_name);
    const Json j = type ? object_schema(schema, type->fields, type_name, 0) : Json{{"type", "object"}, {"title", type_name}};
    return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

}  // namespace gecko::wire
