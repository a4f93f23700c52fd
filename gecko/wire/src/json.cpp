// SPDX-License-Identifier: Apache-2.0
// msgpack -> JSON walks a checked Value; JSON -> msgpack parses with
// nlohmann::json (a header-only dependency of this file alone) and writes
// with gecko::wire::Packer.
#include "gecko/wire/json.hpp"

#include <gecko/buffer.hpp>
#include <gecko/error.hpp>
#include <gecko/wire/base64.hpp>
#include <gecko/wire/names.hpp>
#include <gecko/wire/packer.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include <nlohmann/json.hpp>

namespace gecko::wire {

// ---------------------------------------------------------------- numbers and strings

// The fewest significant digits, at most `max_digits`, that read back as
// `v`, written as printf's %.*g writes them. std::to_chars' shortest round
// trip says where to start, so that a value needing 17 digits costs one
// formatting, not 17 (the bridge writes every float of every message so).
std::string format_float(double v, bool single, int max_digits) {
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    const int limit = std::max(1, std::min(max_digits, single ? 9 : 17));
    char buf[48];
    int first = 1;
    const auto shortest = single ? std::to_chars(buf, buf + sizeof buf, static_cast<float>(v), std::chars_format::scientific)
                                 : std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);
    if (shortest.ec == std::errc()) {
        int digits = 0;
        for (const char* c = buf; c != shortest.ptr && *c != 'e'; ++c) digits += *c >= '0' && *c <= '9';
        first = std::clamp(digits, 1, limit);
    }
    for (int digits = first; digits <= limit; ++digits) {
        const auto r = std::to_chars(buf, buf + sizeof buf - 1, v, std::chars_format::general, digits);  // %.*g
        *r.ptr = '\0';
        const double back = std::strtod(buf, nullptr);
        if (single ? static_cast<float>(back) == static_cast<float>(v) : back == v) break;
    }
    std::string s = buf;
    if (s.find_first_of(".eninf") == std::string::npos) s += ".0";
    return s;
}

void append_json_string(std::string& out, std::string_view s) {
    out += '"';
    for (std::size_t i = 0; i < s.size();) {
        const auto c = static_cast<unsigned char>(s[i]);
        if (c >= 0x80) {
            const std::size_t n = utf8_sequence(s, i);
            if (n == 0) {
                out += "\xEF\xBF\xBD";  // U+FFFD for a byte that is not UTF-8
                ++i;
            } else if (n == 2 && c == 0xC2 && static_cast<unsigned char>(s[i + 1]) < 0xA0) {
                // A C1 control (U+0080-U+009F, e.g. CSI): valid JSON raw, but a terminal obeys it.
                char buf[8];
                std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(static_cast<unsigned char>(s[i + 1])));
                out += buf;
                i += n;
            } else {
                out.append(s.substr(i, n));
                i += n;
            }
            continue;
        }
        switch (c) {
            case '"': out += "\\\""; break;
            case '\\': out += "\\\\"; break;
            case '\n': out += "\\n"; break;
            case '\r': out += "\\r"; break;
            case '\t': out += "\\t"; break;
            case '\b': out += "\\b"; break;
            case '\f': out += "\\f"; break;
            default:
                if (c < 0x20 || c == 0x7f) {
                    char buf[8];
                    std::snprintf(buf, sizeof buf, "\\u%04x", c);
                    out += buf;
                } else {
                    out += static_cast<char>(c);
                }
        }
        ++i;
    }
    out += '"';
}

// ---------------------------------------------------------------- msgpack -> JSON

namespace {

// `in_key`: the value is (part of) a map key that is not a str, written as a
// JSON string of its JSON text. A map or array key inside such a key is shown
// as "{...}" or "[...]": each level of keys within keys would escape the
// quotes and backslashes of the one inside again, doubling them, so that 30
// levels of forged input would print gigabytes.
void write_json(std::string& out, const Value& value, bool in_key, const JsonOptions& options) {
    switch (value.type()) {
        case Type::nil: out += "null"; return;
        case Type::boolean: out += *value.as_bool() ? "true" : "false"; return;
        case Type::integer:
            if (const auto u = value.as_uint())
                out += std::to_string(*u);
            else
                out += std::to_string(*value.as_int());
            return;
        case Type::float32:
        case Type::float64: {
            const double v = *value.as_number();
            out += std::isfinite(v) ? format_float(v, value.type() == Type::float32) : "null";
            return;
        }
        case Type::str: append_json_string(out, *value.as_str()); return;
        case Type::bin: {
            const BytesView bytes = *value.as_bin();
            out += options.bin_as_base64_string ? "\"" : "{\"$bin\":\"";
            append_base64(out, bytes.data(), bytes.size());
            out += options.bin_as_base64_string ? "\"" : "\"}";
            return;
        }
        case Type::ext: {
            const Reader::Ext ext = *value.as_ext();
            out += "{\"$ext\":" + std::to_string(ext.type) + ",\"$data\":\"";
            append_base64(out, ext.data.data(), ext.data.size());
            out += "\"}";
            return;
        }
        case Type::array: {
            out += '[';
            bool first = true;
            for (const Value& item : value.items()) {
                if (!first) out += ',';
                first = false;
                write_json(out, item, in_key, options);
            }
            out += ']';
            return;
        }
        case Type::map: {
            out += '{';
            bool first = true;
            for (const auto& [key, item] : value.entries()) {
                if (!first) out += ',';
                first = false;
                if (const auto text = key.as_str()) {
                    append_json_string(out, *text);
                } else if (in_key && (key.type() == Type::map || key.type() == Type::array)) {
                    out += key.type() == Type::map ? "\"{...}\"" : "\"[...]\"";
                } else {
                    std::string key_json;
                    write_json(key_json, key, true, options);
                    append_json_string(out, key_json);
                }
                out += ':';
                write_json(out, item, in_key, options);
            }
            out += '}';
            return;
        }
    }
}

}  // namespace

void append_json(std::string& out, const Value& value, const JsonOptions& options) { write_json(out, value, false, options); }

std::string to_json(const Value& value) {
    std::string out;
    append_json(out, value);
    return out;
}

std::string msgpack_to_json(const std::uint8_t* data, std::size_t size) { return to_json(Value::parse(data, size)); }

// ---------------------------------------------------------------- JSON -> msgpack

namespace {

using Json = nlohmann::ordered_json;

void pack_string(Packer& w, std::string_view text) {
    w.pack_str(static_cast<std::uint32_t>(text.size()));
    w.pack_str_body(text.data(), static_cast<std::uint32_t>(text.size()));
}

void pack_binary(Packer& w, const std::uint8_t* data, std::size_t size) {
    w.pack_bin(static_cast<std::uint32_t>(size));
    w.pack_bin_body(reinterpret_cast<const char*>(data), static_cast<std::uint32_t>(size));
}

void write_json_value(Packer& w, const Json& j, const std::string& path) {
    switch (j.type()) {
        case Json::value_t::null:
        case Json::value_t::discarded: w.pack_nil(); break;
        case Json::value_t::boolean: j.get<bool>() ? w.pack_true() : w.pack_false(); break;
        case Json::value_t::number_integer: w.pack(j.get<std::int64_t>()); break;
        case Json::value_t::number_unsigned: w.pack(j.get<std::uint64_t>()); break;
        case Json::value_t::number_float: w.pack_float64(j.get<double>()); break;
        case Json::value_t::string: pack_string(w, j.get_ref<const std::string&>()); break;
        case Json::value_t::binary: {
            const auto& b = j.get_binary();
            pack_binary(w, b.data(), b.size());
            break;
        }
        case Json::value_t::array:
            w.pack_array(static_cast<std::uint32_t>(j.size()));
            for (std::size_t i = 0; i < j.size(); ++i) write_json_value(w, j[i], path + "[" + std::to_string(i) + "]");
            break;
        case Json::value_t::object:
            if (j.size() == 1 && j.begin().key() == "$bin") {
                const auto& v = j.begin().value();
                std::vector<std::uint8_t> bytes;
                if (!v.is_string() || !base64_decode(v.get_ref<const std::string&>(), bytes))
                    throw Error(Errc::invalid_argument,
                                "JSON value at '" + (path.empty() ? std::string("(top)") : path) +
                                    "': {\"$bin\": ...} needs a base64 string");
                pack_binary(w, bytes.data(), bytes.size());
                break;
            }
            w.pack_map(static_cast<std::uint32_t>(j.size()));
            for (auto it = j.begin(); it != j.end(); ++it) {
                pack_string(w, it.key());
                write_json_value(w, it.value(), path.empty() ? it.key() : path + "." + it.key());
            }
            break;
    }
}

}  // namespace

std::vector<std::uint8_t> json_to_msgpack(std::string_view json) {
    Json j;
    try {
        j = Json::parse(json.begin(), json.end());
    } catch (const Json::parse_error& e) {
        std::string what = e.what();
        if (const auto at = what.find("] "); at != std::string::npos) what.erase(0, at + 2);  // drop "[json.exception...]"
        throw Error(Errc::invalid_argument, "invalid JSON: " + what);
    }
    Buffer out;
    Packer w(out);
    write_json_value(w, j, "");
    return std::vector<std::uint8_t>(out.data(), out.data() + out.size());
}

}  // namespace gecko::wire
