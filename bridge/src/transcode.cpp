// SPDX-License-Identifier: Apache-2.0
#include "transcode.hpp"

#include <gecko/error.hpp>
#include <gecko/wire/base64.hpp>
#include <gecko/wire/json.hpp>
#include <gecko/wire/reader.hpp>
#include <gecko/wire/value.hpp>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <string_view>
#include <vector>

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

// ---------------------------------------------------------------- one pass

// The same JSON as append_value's, written while reading the bytes once
// (a wire::Value is walked three times: read, checked, written). It gives
// up, returning false, on what only the checked tree writes: a map key
// that is not a str, a key twice (the tree refuses it with its error), an
// ext; the caller then starts again from a wire::Value.
class OnePass {
public:
    OnePass(std::string& out, const std::uint8_t* data, std::size_t size) : out_(out), r_(data, size) {}

    /// Writes the message; `stamp` gets a top-level integer stamp_ns.
    bool message(std::int64_t* stamp, bool& is_map) {
        is_map = r_.peek() == wire::Type::map;
        if (!(is_map ? map(stamp) : value())) return false;
        r_.expect_end();
        return true;
    }

private:
    bool value() {
        switch (r_.peek()) {
            case wire::Type::nil: r_.try_read_nil(); out_ += "null"; return true;
            case wire::Type::boolean: out_ += r_.read_bool() ? "true" : "false"; return true;
            case wire::Type::integer: {
                const auto raw = r_.read_raw();
                wire::Reader one(raw.data(), raw.size());
                char text[24];
                const auto end = raw[0] == 0xcf ? std::to_chars(text, text + sizeof text, one.read_int<std::uint64_t>()).ptr
                                                : std::to_chars(text, text + sizeof text, one.read_int<std::int64_t>()).ptr;
                out_.append(text, end);
                return true;
            }
            case wire::Type::float32:
            case wire::Type::float64: {
                const bool single = r_.peek() == wire::Type::float32;
                const double d = r_.read_float<double>();
                if (!std::isfinite(d)) out_ += "null";
                else out_ += wire::format_float(d, single);
                return true;
            }
            case wire::Type::str: wire::append_json_string(out_, r_.read_str()); return true;
            case wire::Type::bin: {
                const auto b = r_.read_bin();
                out_ += '"';
                wire::append_base64(out_, b.data(), b.size());
                out_ += '"';
                return true;
            }
            case wire::Type::array: {
                const std::uint32_t n = r_.read_array();
                wire::Reader::Nesting nesting(r_);
                out_ += '[';
                for (std::uint32_t i = 0; i < n; ++i) {
                    if (i) out_ += ',';
                    if (!value()) return false;
                }
                out_ += ']';
                return true;
            }
            case wire::Type::map: return map(nullptr);
            case wire::Type::ext: return false;
        }
        return false;
    }

    bool map(std::int64_t* stamp) {
        const std::uint32_t n = r_.read_map();
        wire::Reader::Nesting nesting(r_);
        // A message's fields: a few, compared pairwise; more are sorted at the end.
        constexpr std::uint32_t few = 32;
        std::array<std::string_view, few> seen;
        std::vector<std::string_view> keys;
        if (n > few) keys.reserve(n);
        out_ += '{';
        for (std::uint32_t i = 0; i < n; ++i) {
            std::string_view key;
            if (!r_.try_read_str(key)) return false;
            if (n <= few) {
                for (std::uint32_t j = 0; j < i; ++j)
                    if (seen[j] == key) return false;
                seen[i] = key;
            } else {
                keys.push_back(key);
            }
            if (i) out_ += ',';
            wire::append_json_string(out_, key);
            out_ += ':';
            if (stamp && key == "stamp_ns" && r_.peek() == wire::Type::integer) {
                wire::Reader look = r_;
                try {
                    *stamp = look.read_int<std::int64_t>();
                } catch (const wire::DecodeError&) {  // beyond int64: no timestamp
                }
            }
            if (!value()) return false;
        }
        out_ += '}';
        if (n > few) {
            std::sort(keys.begin(), keys.end());
            if (std::adjacent_find(keys.begin(), keys.end()) != keys.end()) return false;
        }
        return true;
    }

    std::string& out_;
    wire::Reader r_;
};

void append_timestamp(std::string& out, std::int64_t stamp) {
    std::int64_t sec = stamp / 1000000000, nsec = stamp % 1000000000;
    if (nsec < 0) {
        nsec += 1000000000;
        --sec;
    }
    out += "\"timestamp\":{\"sec\":" + std::to_string(sec) + ",\"nsec\":" + std::to_string(nsec) + "}}";
}

}  // namespace

void append_message_json(std::string& out, const std::uint8_t* message, std::size_t size, JsonShape shape) {
    const std::size_t start = out.size();
    std::int64_t stamp = 0;
    bool is_map = false;
    bool done = false;
    try {
        done = OnePass(out, message, size).message(shape == JsonShape::plain ? nullptr : &stamp, is_map);
    } catch (...) {
        out.resize(start);
        throw;
    }
    if (!done) {
        out.resize(start);
        const auto v = wire::Value::parse(message, size);
        append_value(out, v);
        is_map = v.type() == wire::Type::map;
        if (is_map)
            if (auto s = v.find("stamp_ns")) stamp = s->as_int().value_or(0);
    }
    if (shape == JsonShape::plain || !is_map || out.size() < start + 2 || out.back() != '}') return;
    out.pop_back();
    if (out.back() != '{') out += ',';
    append_timestamp(out, stamp);
}

}  // namespace gecko::bridge
