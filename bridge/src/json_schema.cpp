// SPDX-License-Identifier: Apache-2.0
#include "json_schema.hpp"

#include <gecko/wire/json.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>

namespace gecko::bridge {

using Json = nlohmann::ordered_json;
using Kind = wire::FieldType::Kind;

namespace {

constexpr std::size_t max_depth = 16;

bool has_bytes(const wire::MessageSchema& t, std::string_view name) {
    const auto* f = t.field(name);
    return f && (f->type.kind == Kind::bin || (f->type.kind == Kind::array && !f->type.item.empty() &&
                                               f->type.item[0].kind == Kind::uint8));
}

Json integer(double min, double max) { return Json{{"type", "integer"}, {"minimum", min}, {"maximum", max}}; }

Json field_schema(const wire::Schema& schema, const wire::FieldType& t, std::size_t depth);

Json object_schema(const wire::Schema& schema, const std::vector<wire::SchemaField>& fields, std::string_view title,
                   std::size_t depth) {
    Json props = Json::object();
    for (const auto& f : fields) props[f.name] = field_schema(schema, f.type, depth + 1);
    Json j{{"type", "object"}};
    if (!title.empty()) j["title"] = title;
    j["properties"] = std::move(props);
    return j;
}

Json field_schema(const wire::Schema& schema, const wire::FieldType& t, std::size_t depth) {
    if (depth > max_depth) return Json::object();  // any: deeper than any reader shows
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
        case Kind::optional: {
            if (t.item.empty()) return Json::object();
            return Json{{"anyOf", Json::array({field_schema(schema, t.item[0], depth + 1), Json{{"type", "null"}}})}};
        }
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
            Json j{{"type", "integer"}, {"title", t.name}};
            if (!t.values.empty()) j["enum"] = t.values;
            std::string names;
            for (std::size_t i = 0; i < t.names.size() && i < t.values.size(); ++i)
                names += (i ? ", " : "") + t.names[i] + " = " + std::to_string(t.values[i]);
            if (!names.empty()) j["description"] = names;
            return j;
        }
    }
    return Json::object();
}

std::string dump(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

}  // namespace

JsonShape shape_of(const wire::MessageSchema& t) noexcept {
    if (t.type_name == "gecko.msgs.Image" ||
        (t.field("width") && t.field("height") && t.field("encoding") && t.field("step") && has_bytes(t, "data")))
        return JsonShape::raw_image;
    if (t.field("format") && has_bytes(t, "data") && !t.field("width")) return JsonShape::compressed_image;
    return JsonShape::plain;
}

std::string schema_name_of(std::string_view type_name, JsonShape shape) {
    switch (shape) {
        case JsonShape::raw_image: return "foxglove.RawImage";
        case JsonShape::compressed_image: return "foxglove.CompressedImage";
        case JsonShape::plain: break;
    }
    return std::string(type_name);
}

std::string json_schema_of(const wire::Schema& schema, std::string_view type_name, JsonShape shape) {
    const auto* type = schema.find(type_name);
    if (!type) return dump(Json{{"type", "object"}, {"title", type_name}});
    Json j = object_schema(schema, type->fields, type_name, 0);
    if (shape != JsonShape::plain) {
        j["properties"]["timestamp"] =
            Json{{"type", "object"},
                 {"properties", {{"sec", Json{{"type", "integer"}}}, {"nsec", Json{{"type", "integer"}}}}}};
    }
    return dump(j);
}

// ---------------------------------------------------------------- inference

struct SchemaInference::Node {
    // JSON types seen, as bits: what a value has been.
    enum : unsigned { null = 1, boolean = 2, integer = 4, number = 8, string = 16, bytes = 32, array = 64, object = 128 };
    unsigned seen = 0;
    std::vector<std::pair<std::string, std::unique_ptr<Node>>> properties;  // in first-seen order
    std::unique_ptr<Node> items;
    bool open = false;  // past the bounds: anything more is "any"

    Json json() const {
        Json types = Json::array();
        Json j = Json::object();
        if (seen & null) types.push_back("null");
        if (seen & boolean) types.push_back("boolean");
        if ((seen & integer) && !(seen & number)) types.push_back("integer");
        if (seen & number) types.push_back("number");
        if (seen & (string | bytes)) types.push_back("string");
        if (seen & array) types.push_back("array");
        if (seen & object) types.push_back("object");
        if (types.size() == 1) j["type"] = types[0];
        else if (!types.empty()) j["type"] = types;
        if ((seen & bytes) && !(seen & string)) j["contentEncoding"] = "base64";
        if (seen & object) {
            Json props = Json::object();
            for (const auto& [name, node] : properties) props[name] = node->json();
            j["properties"] = std::move(props);
        }
        if ((seen & array) && items) j["items"] = items->json();
        return j;
    }
};

SchemaInference::SchemaInference(std::size_t max_nodes) : max_nodes_(max_nodes) {}
SchemaInference::~SchemaInference() = default;
SchemaInference::SchemaInference(SchemaInference&&) noexcept = default;
SchemaInference& SchemaInference::operator=(SchemaInference&&) noexcept = default;

bool SchemaInference::merge(std::unique_ptr<Node>& node, const wire::Value& value, std::size_t depth) {
    bool grew = false;
    if (!node) {
        if (nodes_ >= max_nodes_ || depth > max_depth) return false;
        node = std::make_unique<Node>();
        ++nodes_;
        grew = true;
    }
    unsigned kind = 0;
    switch (value.type()) {
        case wire::Type::nil: kind = Node::null; break;
        case wire::Type::boolean: kind = Node::boolean; break;
        case wire::Type::integer: kind = Node::integer; break;
        case wire::Type::float32:
        case wire::Type::float64: kind = Node::number; break;
        case wire::Type::str: kind = Node::string; break;
        case wire::Type::bin: kind = Node::bytes; break;
        case wire::Type::array: kind = Node::array; break;
        case wire::Type::map: kind = Node::object; break;
        case wire::Type::ext: kind = Node::object; break;
    }
    if (!(node->seen & kind)) {
        node->seen |= kind;
        grew = true;
    }
    if (value.type() == wire::Type::map) {
        for (const auto& entry : value.entries()) {
            std::string name;
            if (auto s = entry.key.as_str()) name = std::string(*s);
            else name = wire::to_json(entry.key);
            auto it = std::find_if(node->properties.begin(), node->properties.end(),
                                   [&](const auto& p) { return p.first == name; });
            if (it == node->properties.end()) {
                if (nodes_ >= max_nodes_ || depth + 1 > max_depth) continue;
                node->properties.emplace_back(name, nullptr);
                it = node->properties.end() - 1;
            }
            grew = merge(it->second, entry.value, depth + 1) || grew;
            if (!it->second) node->properties.erase(it);
        }
    } else if (value.type() == wire::Type::array) {
        // The first few items teach the item type; a long array is not walked whole per message.
        std::uint32_t n = 0;
        for (const auto& item : value.items()) {
            grew = merge(node->items, item, depth + 1) || grew;
            if (++n == 8) break;
        }
    }
    return grew;
}

bool SchemaInference::observe(const wire::Value& message) { return merge(root_, message, 0); }

std::string SchemaInference::json() const {
    if (!root_) return dump(Json{{"type", "object"}});
    Json j = root_->json();
    j["type"] = "object";  // Foxglove's rule for a channel's schema
    return dump(j);
}

}  // namespace gecko::bridge
