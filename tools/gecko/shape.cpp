// SPDX-License-Identifier: Apache-2.0
#include "shape.hpp"

#include <algorithm>
#include <cstdlib>
#include <set>

#include "format.hpp"

namespace gecko::tools {

const Shape* Shape::field(const std::string& name) const {
    for (const auto& [n, s] : fields)
        if (n == name) return &s;
    return nullptr;
}

std::string Shape::field_list() const {
    std::string out;
    for (const auto& f : fields) out += (out.empty() ? "" : ", ") + f.first;
    return out.empty() ? "(none)" : out;
}

namespace {

Shape field_shape(const wire::Schema& schema, const wire::FieldType& t, int depth);

void add_fields(Shape& s, const wire::Schema& schema, const std::vector<wire::SchemaField>& fields, int depth) {
    s.kind = Shape::Kind::message;
    for (const auto& f : fields) s.fields.emplace_back(f.name, field_shape(schema, f.type, depth + 1));
}

// Types as the tool names them: "string", "bytes", "map<string, T>", "T or nil".
Shape field_shape(const wire::Schema& schema, const wire::FieldType& t, int depth) {
    using K = wire::FieldType::Kind;
    Shape s;
    switch (t.kind) {
        case K::str: s.type = "string"; break;
        case K::bin: s.type = t.size ? "bytes[" + std::to_string(t.size) + "]" : "bytes"; break;
        case K::array:
            s.kind = Shape::Kind::array;
            s.item.push_back(field_shape(schema, t.item.at(0), depth + 1));
            s.type = s.item.front().type + (t.size ? "[" + std::to_string(t.size) + "]" : "[]");
            break;
        case K::optional:
            s = field_shape(schema, t.item.at(0), depth + 1);
            s.type += " or nil";
            break;
        case K::map:
            s.kind = Shape::Kind::map;
            s.item.push_back(field_shape(schema, t.item.at(0), depth + 1));
            s.type = "map<string, " + s.item.front().type + ">";
            break;
        case K::message:
            s.type = t.name;
            // A message that names itself (a tree) is shown once: its fields are already above.
            if (const auto* m = schema.find(t.name); m && depth < 16) add_fields(s, schema, m->fields, depth);
            break;
        case K::record:
            s.type = "struct";
            add_fields(s, schema, t.fields, depth);
            break;
        case K::enumeration: {
            std::string names;
            for (const auto& n : t.names) names += (names.empty() ? "" : ", ") + n;
            s.type = "string (" + t.name + ": " + names + ")";
            break;
        }
        default: s.type = t.to_string(); break;
    }
    return s;
}

}  // namespace

std::optional<Shape> shape_of_schema(const wire::Schema& schema, const std::string& type) {
    const auto* m = schema.find(type);
    if (!m) return std::nullopt;
    Shape s;
    s.type = type;
    add_fields(s, schema, m->fields, 0);
    return s;
}

Shape infer_shape(const wire::Value& value) {
    using wire::Type;
    Shape s;
    switch (value.type()) {
        case Type::nil: s.type = "nil"; break;
        case Type::boolean: s.type = "bool"; break;
        case Type::integer: s.type = "int"; break;
        case Type::float32: s.type = "float32"; break;
        case Type::float64: s.type = "float64"; break;
        case Type::str: s.type = "string"; break;
        case Type::bin: s.type = "bytes"; break;
        case Type::ext: s.type = "ext"; break;
        case Type::map:
            s.kind = Shape::Kind::message;
            s.type = "map";
            for (const auto& [key, item] : value.entries())
                s.fields.emplace_back(std::string(key.as_str().value_or("?")), infer_shape(item));
            break;
        case Type::array: {
            s.kind = Shape::Kind::array;
            std::vector<Shape> items;
            std::set<std::string> types;
            for (const wire::Value& item : value.items()) {
                items.push_back(infer_shape(item));
                types.insert(items.back().type);
            }
            // Integral values among floats are floats written compactly (1.0 as 1): float64[].
            const bool numbers = std::all_of(types.begin(), types.end(), [](const std::string& t) {
                return t == "int" || t == "float32" || t == "float64";
            });
            if (items.empty()) {
                s.type = "array (empty: item type unknown)";
            } else if (types.size() == 1 || numbers) {
                const auto it = std::find_if(items.begin(), items.end(), [&](const Shape& i) { return i.type != "int"; });
                s.item.push_back(std::move(types.size() == 1 ? items.front() : *it));
                s.type = s.item.front().type + "[]";
            } else {
                s.type = "array (mixed items)";
            }
            break;
        }
    }
    return s;
}

namespace {

// The message whose fields go under a field of this shape: itself, or its
// (innermost) item's.
const Shape* message_under(const Shape& s) {
    const Shape* at = &s;
    while ((at->kind == Shape::Kind::array || at->kind == Shape::Kind::map) && !at->item.empty()) at = &at->item.front();
    return at->kind == Shape::Kind::message ? at : nullptr;
}

void collect(const Shape& message, const std::string& indent, std::vector<std::pair<std::string, std::string>>& rows) {
    for (const auto& [name, shape] : message.fields) {
        rows.emplace_back(indent + name, shape.type);
        if (const Shape* nested = message_under(shape)) collect(*nested, indent + "  ", rows);
    }
}

bool is_index(const std::string& s) {
    return !s.empty() && s.size() < 10 && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace

std::string render_fields(const Shape& message, const std::string& indent) {
    std::vector<std::pair<std::string, std::string>> rows;
    collect(message, indent, rows);
    std::size_t width = 0;
    for (const auto& r : rows) width = std::max(width, display_width(r.first));
    std::string out;
    for (const auto& r : rows) out += r.first + std::string(width - display_width(r.first) + 2, ' ') + r.second + "\n";
    return out;
}

std::string check_path(const Shape& message, const std::vector<std::string>& path) {
    const Shape* at = &message;
    std::string where;  // the path so far, for messages
    for (const auto& step : path) {
        const std::string here = where.empty() ? "the message" : "'" + where + "'";
        switch (at->kind) {
            case Shape::Kind::message: {
                const Shape* next = at->field(step);
                if (!next)
                    return (where.empty() ? at->type : "'" + where + "' (" + at->type + ")") + " has no field '" + step +
                           "'; its fields are: " + at->field_list();
                at = next;
                break;
            }
            case Shape::Kind::array:
                if (!is_index(step))
                    return here + " is an array (" + at->type + "): '" + step + "' is not an index (0, 1, ...)";
                if (at->item.empty()) return "";  // items of unknown shape: anything may follow
                at = &at->item.front();
                break;
            case Shape::Kind::map:
                if (at->item.empty()) return "";
                at = &at->item.front();
                break;
            case Shape::Kind::scalar:
                return here + " is of type " + at->type + ": it has no field '" + step + "'";
        }
        where += (where.empty() ? "" : ".") + step;
    }
    return "";
}

}  // namespace gecko::tools
