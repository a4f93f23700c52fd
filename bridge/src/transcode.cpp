// SPDX-License-Identifier: Apache-2.0
#include "transcode.hpp"

#include <gecko/wire/base64.hpp>
#include <gecko/wire/json.hpp>

#include <cmath>

namespace gecko::bridge {

namespace {

void append_value(std::string& out, const wire::Value& v) {
    switch (v.type()) {
        case wire::Type::nil: out += "null"; return;
        case wire::Type::boolean: out += *v.as_bool() ? "true" : "false"; return;
        case wire::Type::integer:
            if (auto i = v.as_int()) out += std::to_string(*i);
            else out += std::to_string(*v.as_uint());
            return;
        case wire::Type::float32:
        case wire::Type::float64: {
            const double d = *v.as_number();
            if (!std::isfinite(d)) out += "null";
            else out += wire::format_float(d, v.type() == wire::Type::float32);
            return;
        }
        case wire::Type::str: wire::append_json_string(out, *v.as_str()); return;
        case wire::Type::bin: {
            const auto b = *v.as_bin();
            out += '"';
            wire::append_base64(out, b.data(), b.size());
            out += '"';
            return;
        }
        case wire::Type::array: {
            out += '[';
            bool first = true;
            for (const auto& item : v.items()) {
                if (!first) out += ',';
                first = false;
                append_value(out, item);
            }
            out += ']';
            return;
        }
        case wire::Type::map: {
            out += '{';
            bool first = true;
            for (const auto& [key, value] : v.entries()) {
                if (!first) out += ',';
                first = false;
                if (auto s = key.as_str()) wire::append_json_string(out, *s);
                else wire::append_json_string(out, wire::to_json(key));
                out += ':';
                append_value(out, value);
            }
            out += '}';
            return;
        }
        case wire::Type::ext: wire::append_json(out, v); return;
    }
}

}  // namespace

void append_message_json(std::string& out, const std::uint8_t* message, std::size_t size, JsonShape shape) {
    const auto v = wire::Value::parse(message, size);
    append_value(out, v);
    if (shape == JsonShape::plain || v.type() != wire::Type::map || out.empty() || out.back() != '}') return;
    std::int64_t stamp = 0;
    if (auto s = v.find("stamp_ns")) stamp = s->as_int().value_or(0);
    out.pop_back();
    if (v.count() > 0) out += ',';
    std::int64_t sec = stamp / 1000000000, nsec = stamp % 1000000000;
    if (nsec < 0) {
        nsec += 1000000000;
        --sec;
    }
    out += "\"timestamp\":{\"sec\":" + std::to_string(sec) + ",\"nsec\":" + std::to_string(nsec) + "}}";
}

}  // namespace gecko::bridge
