// SPDX-License-Identifier: Apache-2.0
#include "msgpack_json.hpp"

#include <gecko/wire/names.hpp>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <nlohmann/json.hpp>

#include "gecko/error.hpp"

namespace gecko::tools {

// ---------------------------------------------------------------- parsing

msgpack::object_handle parse_msgpack(const std::uint8_t* data, std::size_t size) {
    // Every length is bounded by the input size, so forged headers cannot make
    // the unpacker reserve more than the payload could hold.
    const msgpack::unpack_limit limit(size, size, size, size, size, 64);
    std::size_t offset = 0;
    msgpack::object_handle handle;
    try {
        msgpack::unpack(handle, reinterpret_cast<const char*>(data), size, offset, nullptr, nullptr, limit);
    } catch (const std::exception& e) {
        throw Error(Errc::decode, std::string("not valid msgpack (") + e.what() + ")");
    }
    if (offset != size)
        throw Error(Errc::decode, std::to_string(size - offset) + " trailing bytes after the msgpack value");
    return handle;
}

// ---------------------------------------------------------------- numbers and strings

std::string format_float(double v, bool single, int max_digits) {
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    const int limit = std::max(1, std::min(max_digits, single ? 9 : 17));
    char buf[40];
    for (int digits = 1; digits <= limit; ++digits) {
        std::snprintf(buf, sizeof buf, "%.*g", digits, v);
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
            const std::size_t n = gecko::wire::utf8_sequence(s, i);
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

// ---------------------------------------------------------------- base64

namespace {
constexpr char b64_alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
}

std::string base64_encode(const std::uint8_t* data, std::size_t size) {
    std::string out;
    out.reserve((size + 2) / 3 * 4);
    for (std::size_t i = 0; i < size; i += 3) {
        const std::uint32_t b0 = data[i];
        const std::uint32_t b1 = i + 1 < size ? data[i + 1] : 0;
        const std::uint32_t b2 = i + 2 < size ? data[i + 2] : 0;
        const std::uint32_t v = (b0 << 16) | (b1 << 8) | b2;
        out += b64_alphabet[(v >> 18) & 63];
        out += b64_alphabet[(v >> 12) & 63];
        out += i + 1 < size ? b64_alphabet[(v >> 6) & 63] : '=';
        out += i + 2 < size ? b64_alphabet[v & 63] : '=';
    }
    return out;
}

bool base64_decode(std::string_view text, std::vector<std::uint8_t>& out) {
    out.clear();
    std::uint32_t acc = 0;
    int bits = 0, pad = 0, chars = 0;
    for (char c : text) {
        if (c == ' ' || c == '\n' || c == '\r' || c == '\t') continue;
        if (c == '=') {
            ++pad;
            ++chars;
            continue;
        }
        if (pad > 0) return false;  // data after padding
        const char* p = std::strchr(b64_alphabet, c);
        if (c == '\0' || p == nullptr) return false;
        acc = (acc << 6) | static_cast<std::uint32_t>(p - b64_alphabet);
        bits += 6;
        ++chars;
        if (bits >= 8) {
            bits -= 8;
            out.push_back(static_cast<std::uint8_t>((acc >> bits) & 0xFF));
        }
    }
    return chars % 4 == 0 && pad <= 2;
}

// ---------------------------------------------------------------- msgpack -> JSON

void append_json(std::string& out, const msgpack::object& o) {
    switch (o.type) {
        case msgpack::type::NIL: out += "null"; break;
        case msgpack::type::BOOLEAN: out += o.via.boolean ? "true" : "false"; break;
        case msgpack::type::POSITIVE_INTEGER: out += std::to_string(o.via.u64); break;
        case msgpack::type::NEGATIVE_INTEGER: out += std::to_string(o.via.i64); break;
        case msgpack::type::FLOAT32:
        case msgpack::type::FLOAT64:
            if (std::isfinite(o.via.f64))
                out += format_float(o.via.f64, o.type == msgpack::type::FLOAT32);
            else
                out += "null";
            break;
        case msgpack::type::STR: append_json_string(out, std::string_view(o.via.str.ptr, o.via.str.size)); break;
        case msgpack::type::BIN:
            out += "{\"$bin\":\"";
            out += base64_encode(reinterpret_cast<const std::uint8_t*>(o.via.bin.ptr), o.via.bin.size);
            out += "\"}";
            break;
        case msgpack::type::EXT:
            out += "{\"$ext\":" + std::to_string(static_cast<int>(o.via.ext.type())) + ",\"$data\":\"";
            out += base64_encode(reinterpret_cast<const std::uint8_t*>(o.via.ext.data()), o.via.ext.size);
            out += "\"}";
            break;
        case msgpack::type::ARRAY:
            out += '[';
            for (std::uint32_t i = 0; i < o.via.array.size; ++i) {
                if (i) out += ',';
                append_json(out, o.via.array.ptr[i]);
            }
            out += ']';
            break;
        case msgpack::type::MAP:
            out += '{';
            for (std::uint32_t i = 0; i < o.via.map.size; ++i) {
                if (i) out += ',';
                const auto& kv = o.via.map.ptr[i];
                if (kv.key.type == msgpack::type::STR) {
                    append_json_string(out, std::string_view(kv.key.via.str.ptr, kv.key.via.str.size));
                } else {
                    std::string key;
                    append_json(key, kv.key);
                    append_json_string(out, key);
                }
                out += ':';
                append_json(out, kv.val);
            }
            out += '}';
            break;
    }
}

std::string to_json(const msgpack::object& o) {
    std::string out;
    append_json(out, o);
    return out;
}

std::string msgpack_to_json(const std::uint8_t* data, std::size_t size) {
    auto handle = parse_msgpack(data, size);
    return to_json(handle.get());
}

// ---------------------------------------------------------------- msgpack -> text

namespace {

bool is_container(const msgpack::object& o) {
    return o.type == msgpack::type::MAP || o.type == msgpack::type::ARRAY;
}

// A string that reads unambiguously without quotes.
bool plain_safe(std::string_view s) {
    if (s.empty() || s.front() == ' ' || s.back() == ' ') return false;
    if (std::strchr("-?:,[]{}#&*!|>'\"%@`~", s.front()) != nullptr) return false;
    for (std::size_t i = 0; i < s.size(); ++i) {
        const auto c = static_cast<unsigned char>(s[i]);
        if (c < 0x20 || c == 0x7f) return false;
        if (c >= 0x80) {
            const std::size_t n = gecko::wire::utf8_sequence(s, i);
            if (n == 0) return false;
            if (n == 2 && c == 0xC2 && static_cast<unsigned char>(s[i + 1]) < 0xA0) return false;  // C1 control
            i += n - 1;
        }
    }
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
        append_json_string(out, s);
}

void append_inline(std::string& out, const msgpack::object& o, const TextOptions& opt);

void append_scalar(std::string& out, const msgpack::object& o, const TextOptions& opt) {
    switch (o.type) {
        case msgpack::type::NIL: out += "null"; break;
        case msgpack::type::BOOLEAN: out += o.via.boolean ? "true" : "false"; break;
        case msgpack::type::POSITIVE_INTEGER: out += std::to_string(o.via.u64); break;
        case msgpack::type::NEGATIVE_INTEGER: out += std::to_string(o.via.i64); break;
        case msgpack::type::FLOAT32:
        case msgpack::type::FLOAT64:
            out += format_float(o.via.f64, o.type == msgpack::type::FLOAT32, opt.float_digits);
            break;
        case msgpack::type::STR: append_text_string(out, std::string_view(o.via.str.ptr, o.via.str.size)); break;
        case msgpack::type::BIN: {
            out += "<" + std::to_string(o.via.bin.size) + " bytes";
            const std::size_t shown = std::min<std::size_t>(o.via.bin.size, opt.bin_preview);
            for (std::size_t i = 0; i < shown; ++i) {
                char hex[4];
                std::snprintf(hex, sizeof hex, "%02x", static_cast<unsigned char>(o.via.bin.ptr[i]));
                out += i == 0 ? ": " : " ";
                out += hex;
            }
            if (shown < o.via.bin.size) out += " ...";
            out += ">";
            break;
        }
        case msgpack::type::EXT:
            out += "<ext " + std::to_string(static_cast<int>(o.via.ext.type())) + ", " + std::to_string(o.via.ext.size) +
                   " bytes>";
            break;
        case msgpack::type::ARRAY:
        case msgpack::type::MAP: append_inline(out, o, opt); break;
    }
}

// Arrays of scalars (and empty containers) go on one line.
bool inline_able(const msgpack::object& o) {
    if (o.type == msgpack::type::MAP) return o.via.map.size == 0;
    if (o.type != msgpack::type::ARRAY) return true;
    for (std::uint32_t i = 0; i < o.via.array.size; ++i) {
        const auto& e = o.via.array.ptr[i];
        if (is_container(e) && !(e.type == msgpack::type::ARRAY ? e.via.array.size == 0 : e.via.map.size == 0))
            return false;
    }
    return true;
}

void append_inline(std::string& out, const msgpack::object& o, const TextOptions& opt) {
    if (o.type == msgpack::type::MAP) {
        out += "{}";  // only empty maps are written inline
        return;
    }
    if (o.type != msgpack::type::ARRAY) {
        append_scalar(out, o, opt);
        return;
    }
    const std::uint32_t n = o.via.array.size;
    const std::uint32_t shown = opt.max_array == 0 ? n : static_cast<std::uint32_t>(std::min<std::size_t>(n, opt.max_array));
    out += '[';
    for (std::uint32_t i = 0; i < shown; ++i) {
        if (i) out += ", ";
        append_scalar(out, o.via.array.ptr[i], opt);
    }
    if (shown < n) out += ", ... +" + std::to_string(n - shown) + " more";
    out += ']';
}

// Keys are read as keys whatever they look like; quote only what would break the layout.
bool key_safe(std::string_view s) {
    if (s.empty() || s.front() == ' ' || s.back() == ' ' || s.back() == ':' || s.front() == '"' || s.front() == '-')
        return false;
    if (s.find(": ") != std::string_view::npos) return false;
    for (std::size_t i = 0; i < s.size(); ++i) {
        const auto c = static_cast<unsigned char>(s[i]);
        if (c < 0x20 || c == 0x7f) return false;
        if (c >= 0x80) {
            const std::size_t n = gecko::wire::utf8_sequence(s, i);
            if (n == 0) return false;
            i += n - 1;
        }
    }
    return true;
}

void append_key(std::string& out, const msgpack::object& key, const TextOptions& opt) {
    if (key.type == msgpack::type::STR) {
        const std::string_view s(key.via.str.ptr, key.via.str.size);
        if (key_safe(s))
            out.append(s);
        else
            append_json_string(out, s);
    } else
        append_inline(out, key, opt);
}

// Writes a map or a block array, each line starting with `indent` spaces.
void append_block(std::string& out, const msgpack::object& o, std::size_t indent, const TextOptions& opt) {
    const std::string pad(indent, ' ');
    if (o.type == msgpack::type::MAP) {
        for (std::uint32_t i = 0; i < o.via.map.size; ++i) {
            const auto& kv = o.via.map.ptr[i];
            out += pad;
            append_key(out, kv.key, opt);
            out += ':';
            if (inline_able(kv.val)) {
                out += ' ';
                append_inline(out, kv.val, opt);
                out += '\n';
            } else {
                out += '\n';
                append_block(out, kv.val, indent + 2, opt);
            }
        }
        return;
    }
    for (std::uint32_t i = 0; i < o.via.array.size; ++i) {
        const auto& e = o.via.array.ptr[i];
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

void append_text(std::string& out, const msgpack::object& o, const TextOptions& options) {
    if (inline_able(o)) {
        append_inline(out, o, options);
        out += '\n';
    } else {
        append_block(out, o, 0, options);
    }
}

std::string to_text(const msgpack::object& o, const TextOptions& options) {
    std::string out;
    append_text(out, o, options);
    return out;
}

// ---------------------------------------------------------------- writer

void MsgpackWriter::big_endian(std::uint64_t v, int bytes) {
    for (int i = bytes - 1; i >= 0; --i) out_.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
}

void MsgpackWriter::header(std::uint8_t fix_base, std::uint32_t fix_max, std::uint8_t c8, std::uint8_t c16,
                           std::uint8_t c32, std::uint32_t size) {
    if (size <= fix_max) {
        out_.push_back(static_cast<std::uint8_t>(fix_base | size));
    } else if (c8 != 0 && size <= 0xFF) {
        out_.push_back(c8);
        big_endian(size, 1);
    } else if (size <= 0xFFFF) {
        out_.push_back(c16);
        big_endian(size, 2);
    } else {
        out_.push_back(c32);
        big_endian(size, 4);
    }
}

void MsgpackWriter::nil() { out_.push_back(0xc0); }
void MsgpackWriter::boolean(bool v) { out_.push_back(v ? 0xc3 : 0xc2); }

void MsgpackWriter::unsigned_integer(std::uint64_t v) {
    if (v <= 0x7F) {
        out_.push_back(static_cast<std::uint8_t>(v));
    } else if (v <= 0xFF) {
        out_.push_back(0xcc);
        big_endian(v, 1);
    } else if (v <= 0xFFFF) {
        out_.push_back(0xcd);
        big_endian(v, 2);
    } else if (v <= 0xFFFFFFFFu) {
        out_.push_back(0xce);
        big_endian(v, 4);
    } else {
        out_.push_back(0xcf);
        big_endian(v, 8);
    }
}

void MsgpackWriter::integer(std::int64_t v) {
    if (v >= 0) return unsigned_integer(static_cast<std::uint64_t>(v));
    if (v >= -32) {
        out_.push_back(static_cast<std::uint8_t>(v));  // negative fixint
    } else if (v >= INT8_MIN) {
        out_.push_back(0xd0);
        big_endian(static_cast<std::uint64_t>(v), 1);
    } else if (v >= INT16_MIN) {
        out_.push_back(0xd1);
        big_endian(static_cast<std::uint64_t>(v), 2);
    } else if (v >= INT32_MIN) {
        out_.push_back(0xd2);
        big_endian(static_cast<std::uint64_t>(v), 4);
    } else {
        out_.push_back(0xd3);
        big_endian(static_cast<std::uint64_t>(v), 8);
    }
}

void MsgpackWriter::float64(double v) {
    std::uint64_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    out_.push_back(0xcb);
    big_endian(bits, 8);
}

void MsgpackWriter::float32(float v) {
    std::uint32_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    out_.push_back(0xca);
    big_endian(bits, 4);
}

void MsgpackWriter::string(std::string_view v) {
    header(0xa0, 31, 0xd9, 0xda, 0xdb, static_cast<std::uint32_t>(v.size()));
    out_.insert(out_.end(), v.begin(), v.end());
}

void MsgpackWriter::binary(const std::uint8_t* data, std::size_t size) {
    if (size <= 0xFF) {
        out_.push_back(0xc4);
        big_endian(size, 1);
    } else if (size <= 0xFFFF) {
        out_.push_back(0xc5);
        big_endian(size, 2);
    } else {
        out_.push_back(0xc6);
        big_endian(size, 4);
    }
    out_.insert(out_.end(), data, data + size);
}

void MsgpackWriter::array(std::uint32_t size) { header(0x90, 15, 0, 0xdc, 0xdd, size); }
void MsgpackWriter::map(std::uint32_t size) { header(0x80, 15, 0, 0xde, 0xdf, size); }

// ---------------------------------------------------------------- JSON -> msgpack

namespace {

using Json = nlohmann::ordered_json;

void write_json_value(MsgpackWriter& w, const Json& j, const std::string& path) {
    switch (j.type()) {
        case Json::value_t::null:
        case Json::value_t::discarded: w.nil(); break;
        case Json::value_t::boolean: w.boolean(j.get<bool>()); break;
        case Json::value_t::number_integer: w.integer(j.get<std::int64_t>()); break;
        case Json::value_t::number_unsigned: w.unsigned_integer(j.get<std::uint64_t>()); break;
        case Json::value_t::number_float: w.float64(j.get<double>()); break;
        case Json::value_t::string: w.string(j.get_ref<const std::string&>()); break;
        case Json::value_t::binary: {
            const auto& b = j.get_binary();
            w.binary(b.data(), b.size());
            break;
        }
        case Json::value_t::array:
            w.array(static_cast<std::uint32_t>(j.size()));
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
                w.binary(bytes.data(), bytes.size());
                break;
            }
            w.map(static_cast<std::uint32_t>(j.size()));
            for (auto it = j.begin(); it != j.end(); ++it) {
                w.string(it.key());
                write_json_value(w, it.value(), path.empty() ? it.key() : path + "." + it.key());
            }
            break;
    }
}

}  // namespace

const char* msgpack_type_name(msgpack::type::object_type type) noexcept {
    switch (type) {
        case msgpack::type::NIL: return "nil";
        case msgpack::type::BOOLEAN: return "bool";
        case msgpack::type::POSITIVE_INTEGER: return "positive int";
        case msgpack::type::NEGATIVE_INTEGER: return "negative int";
        case msgpack::type::FLOAT32: return "float32";
        case msgpack::type::FLOAT64: return "float64";
        case msgpack::type::STR: return "str";
        case msgpack::type::BIN: return "bin";
        case msgpack::type::ARRAY: return "array";
        case msgpack::type::MAP: return "map";
        case msgpack::type::EXT: return "ext";
    }
    return "unknown";
}

std::vector<std::uint8_t> json_to_msgpack(std::string_view json) {
    Json j;
    try {
        j = Json::parse(json.begin(), json.end());
    } catch (const Json::parse_error& e) {
        std::string what = e.what();
        if (const auto at = what.find("] "); at != std::string::npos) what.erase(0, at + 2);  // drop "[json.exception...]"
        throw Error(Errc::invalid_argument, "invalid JSON: " + what);
    }
    MsgpackWriter w;
    write_json_value(w, j, "");
    return w.take();
}

}  // namespace gecko::tools
