// SPDX-License-Identifier: Apache-2.0
#include "json_schema.hpp"
#include "json_text.hpp"

#include <gecko/wire/json.hpp>
#include <gecko/wire/json_schema.hpp>

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
    std::string text = wire::json_schema_of(schema, type_name);
    if (shape == JsonShape::plain || !schema.find(type_name)) return text;
    // Foxglove's image panels read a `timestamp` {sec, nsec}, which append_message_json adds for these shapes.
    Json j = Json::parse(text);
    j["properties"]["timestamp"] =
        Json{{"type", "object"}, {"properties", {{"sec", Json{{"type", "integer"}}}, {"nsec", Json{{"type", "integer"}}}}}};
    return json_text(j);
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
    if (!root_) return json_text(Json{{"type", "object"}});
    Json j = root_->json();
    j["type"] = "object";  // Foxglove's rule for a channel's schema
    return json_text(j);
}

}  // namespace gecko::bridge
