// SPDX-License-Identifier: Apache-2.0
#include "json_twin.hpp"

#include <gecko/wire/base64.hpp>
#include <gecko/wire/json.hpp>
#include <gecko/wire/value.hpp>

#include <cmath>

namespace gecko::bag::cli {

namespace {

using Kind = wire::FieldType::Kind;

void field_schema(std::string& out, const wire::FieldType& t, const wire::Schema* schema, int depth);

void object_schema(std::string& out, const std::vector<wire::SchemaField>& fields, const std::string& title,
                   const wire::Schema* schema, int depth) {
    out += "{\"type\":\"object\"";
    if (!title.empty()) {
        out += ",\"title\":";
        wire::append_json_string(out, title);
    }
    out += ",\"properties\":{";
    bool first = true;
    for (const auto& f : fields) {
        if (!first) out += ',';
        first = false;
        wire::append_json_string(out, f.name);
        out += ':';
        field_schema(out, f.type, schema, depth + 1);
    }
    out += "}}";
}

void field_schema(std::string& out, const wire::FieldType& t, const wire::Schema* schema, int depth) {
    if (depth > 16) {  // a recursive type: leave the rest open
        out += "{}";
        return;
    }
    switch (t.kind) {
        case Kind::boolean: out += R"({"type":"boolean"})"; return;
        case Kind::int8: case Kind::int16: case Kind::int32: case Kind::int64:
        case Kind::uint8: case Kind::uint16: case Kind::uint32: case Kind::uint64: out += R"({"type":"integer"})"; return;
        case Kind::float32: case Kind::float64: out += R"({"type":["number","null"]})"; return;  // NaN becomes null
        case Kind::str: out += R"({"type":"string"})"; return;
        case Kind::bin: out += R"({"type":"string","contentEncoding":"base64"})"; return;
        case Kind::array:
            out += R"({"type":"array","items":)";
            if (t.item.empty()) out += "{}";
            else field_schema(out, t.item[0], schema, depth + 1);
            if (t.size) out += ",\"minItems\":" + std::to_string(t.size) + ",\"maxItems\":" + std::to_string(t.size);
            out += '}';
            return;
        case Kind::optional:
            out += R"({"anyOf":[)";
            if (t.item.empty()) out += "{}";
            else field_schema(out, t.item[0], schema, depth + 1);
            out += R"(,{"type":"null"}]})";
            return;
        case Kind::map:
            out += R"({"type":"object","additionalProperties":)";
            if (t.item.empty()) out += "{}";
            else field_schema(out, t.item[0], schema, depth + 1);
            out += '}';
            return;
        case Kind::message: {
            const auto* m = schema ? schema->find(t.name) : nullptr;
            if (m) object_schema(out, m->fields, t.name, schema, depth + 1);
            else out += R"({"type":"object"})";
            return;
        }
        case Kind::record: object_schema(out, t.fields, "", schema, depth + 1); return;
        case Kind::enumeration:
            out += R"({"type":["string","integer"]})";
            return;
    }
    out += "{}";
}

void value_json(std::string& out, const wire::Value& v) {
    using wire::Type;
    switch (v.type()) {
        case Type::bin: {
            const auto b = *v.as_bin();
            out += '"';
            wire::append_base64(out, b.data(), b.size());
            out += '"';
            return;
        }
        case Type::array: {
            out += '[';
            bool first = true;
            for (const wire::Value item : v.items()) {
                if (!first) out += ',';
                first = false;
                value_json(out, item);
            }
            out += ']';
            return;
        }
        case Type::map: {
            out += '{';
            bool first = true;
            for (const auto& [key, value] : v.entries()) {
                if (!first) out += ',';
                first = false;
                if (auto s = key.as_str()) wire::append_json_string(out, *s);
                else wire::append_json_string(out, wire::to_json(key));
                out += ':';
                value_json(out, value);
            }
            out += '}';
            return;
        }
        case Type::ext: out += "null"; return;
        default: wire::append_json(out, v); return;  // nil, bool, numbers (NaN as null), str
    }
}

}  // namespace

std::string json_schema(const wire::Schema* schema, const std::string& type_name) {
    std::string out;
    const auto* m = schema ? schema->find(type_name) : nullptr;
    if (!m) return R"({"type":"object"})";
    object_schema(out, m->fields, type_name, schema, 0);
    return out;
}

void transcode_to_json(const std::uint8_t* msgpack, std::size_t size, std::string& out) {
    out.clear();
    value_json(out, wire::Value::parse(msgpack, size));
}

}  // namespace gecko::bag::cli
