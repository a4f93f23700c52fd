// SPDX-License-Identifier: Apache-2.0
#include "text.hpp"

#include <gecko/wire/json.hpp>
#include <gecko/wire/names.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>

namespace gecko::tools {

namespace {

using wire::Type;
using wire::Value;

bool is_container(const Value& v) { return v.type() == Type::map || v.type() == Type::array; }

// Valid UTF-8 without a control character (C0, DEL, C1): prints as itself.
bool terminal_safe(std::string_view s) {
    for (std::size_t i = 0; i < s.size(); ++i) {
        const auto c = static_cast<unsigned char>(s[i]);
        if (c < 0x20 || c == 0x7f) return false;
        if (c >= 0x80) {
            const std::size_t n = wire::utf8_sequence(s, i);
            if (n == 0) return false;
            if (n == 2 && c == 0xC2 && static_cast<unsigned char>(s[i + 1]) < 0xA0) return false;  // C1 control
            i += n - 1;
        }
    }
    return true;
}

// A string that reads unambiguously without quotes.
bool plain_safe(std::string_view s) {
    if (s.empty() || s.front() == ' ' || s.back() == ' ') return false;
    if (std::strchr("-?:,[]{}#&*!|>'\"%@`~", s.front()) != nullptr) return false;
    if (!terminal_safe(s)) return false;
    if (s.find(": ") != std::string_view::npos || s.find(" #") != std::string_view::npos || s.back() == ':') return false;
    for (const char* word : {"true", "false", "null", "yes", "no", "on", "off", "nan", "inf"})
        if (s == word) return false;
    // Anything that would read back as a number.
    const std::string copy(s);
    char* end = nullptr;
    std::strtod(copy.c_str(), &end);
    return end != copy.c_str() + copy.size();
}

void append_text_string(std::string& out, std::string_view s) {
    if (plain_safe(s))
        out.append(s);
    else
        wire::append_json_string(out, s);
}

void append_inline(std::string& out, const Value& v, const TextOptions& opt);

void append_scalar(std::string& out, const Value& v, const TextOptions& opt) {
    switch (v.type()) {
        case Type::nil: out += "null"; break;
        case Type::boolean: out += *v.as_bool() ? "true" : "false"; break;
        case Type::integer: {
            const auto u = v.as_uint();
            out += u ? std::to_string(*u) : std::to_string(*v.as_int());
            break;
        }
        case Type::float32:
        case Type::float64: out += wire::format_float(*v.as_number(), v.type() == Type::float32, opt.float_digits); break;
        case Type::str: append_text_string(out, *v.as_str()); break;
        case Type::bin: {
            const BytesView bytes = *v.as_bin();
            out += "<" + std::to_string(bytes.size()) + " bytes";
            const std::size_t shown = std::min<std::size_t>(bytes.size(), opt.bin_preview);
            for (std::size_t i = 0; i < shown; ++i) {
                char hex[4];
                std::snprintf(hex, sizeof hex, "%02x", bytes[i]);
                out += i == 0 ? ": " : " ";
                out += hex;
            }
            if (shown < bytes.size()) out += " ...";
            out += ">";
            break;
        }
        case Type::ext: {
            const auto ext = *v.as_ext();
            out += "<ext " + std::to_string(ext.type) + ", " + std::to_string(ext.data.size()) + " bytes>";
            break;
        }
        case Type::array:
        case Type::map: append_inline(out, v, opt); break;
    }
}

// Arrays of scalars (and empty containers) go on one line.
bool inline_able(const Value& v) {
    if (v.type() == Type::map) return v.count() == 0;
    if (v.type() != Type::array) return true;
    for (const Value& item : v.items())
        if (is_container(item) && item.count() != 0) return false;
    return true;
}

void append_inline(std::string& out, const Value& v, const TextOptions& opt) {
    if (v.type() == Type::map) {
        out += "{}";  // only empty maps are written inline
        return;
    }
    if (v.type() != Type::array) {
        append_scalar(out, v, opt);
        return;
    }
    const std::uint32_t n = v.count();
    const std::uint32_t shown = opt.max_array == 0 ? n : static_cast<std::uint32_t>(std::min<std::size_t>(n, opt.max_array));
    out += '[';
    std::uint32_t i = 0;
    for (auto it = v.items().begin(); i < shown; ++it, ++i) {
        if (i) out += ", ";
        append_scalar(out, *it, opt);
    }
    if (shown < n) out += ", ... +" + std::to_string(n - shown) + " more";
    out += ']';
}

// Keys are read as keys whatever they look like; quote only what would break the layout.
bool key_safe(std::string_view s) {
    if (s.empty() || s.front() == ' ' || s.back() == ' ' || s.back() == ':' || s.front() == '"' || s.front() == '-')
        return false;
    return s.find(": ") == std::string_view::npos && terminal_safe(s);
}

void append_key(std::string& out, const Value& key, const TextOptions& opt) {
    if (const auto s = key.as_str()) {
        if (key_safe(*s))
            out.append(*s);
        else
            wire::append_json_string(out, *s);
    } else
        append_inline(out, key, opt);
}

// Writes a map or a block array, each line starting with `indent` spaces.
void append_block(std::string& out, const Value& v, std::size_t indent, const TextOptions& opt) {
    const std::string pad(indent, ' ');
    if (v.type() == Type::map) {
        for (const auto& [key, value] : v.entries()) {
            out += pad;
            append_key(out, key, opt);
            out += ':';
            if (inline_able(value)) {
                out += ' ';
                append_inline(out, value, opt);
                out += '\n';
            } else {
                out += '\n';
                append_block(out, value, indent + 2, opt);
            }
        }
        return;
    }
    for (const Value& e : v.items()) {
        if (inline_able(e)) {
            out += pad + "- ";
            append_inline(out, e, opt);
            out += '\n';
        } else {
            // The element's block, with its first line's indentation turned into "- ".
            std::string item;
            append_block(item, e, indent + 2, opt);
            item.replace(indent, 2, "- ");
            out += item;
        }
    }
}

}  // namespace

void append_text(std::string& out, const Value& value, const TextOptions& options) {
    if (inline_able(value)) {
        append_inline(out, value, options);
        out += '\n';
    } else {
        append_block(out, value, 0, options);
    }
}

std::string to_text(const Value& value, const TextOptions& options) {
    std::string out;
    append_text(out, value, options);
    return out;
}

}  // namespace gecko::tools
