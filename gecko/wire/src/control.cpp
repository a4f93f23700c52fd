// SPDX-License-Identifier: Apache-2.0
#include "gecko/wire/control.hpp"

#include <gecko/wire/packer.hpp>
#include <gecko/wire/value.hpp>

namespace gecko::wire {

void encode_control(const Control& control, Buffer& out) {
    Packer pk(out);
    pk.pack_map(2);
    pk.pack(std::string_view("t"));
    pk.pack(std::string_view(control.type));
    pk.pack(std::string_view("last"));
    pk.pack(control.last);
}

std::optional<Control> parse_control(const std::uint8_t* data, std::size_t size) {
    if (size > 4096) return std::nullopt;
    Value map;
    try {
        map = Value::parse(data, size);
    } catch (const DecodeError&) {
        return std::nullopt;
    }
    Control c;
    bool typed = false;
    for (const auto& [key, value] : map.entries()) {
        const auto name = key.as_str();
        if (name == "t") {
            if (const auto type = value.as_str()) {
                c.type.assign(*type);
                typed = true;
            }
        } else if (name == "last") {
            c.last = value.as_uint().value_or(c.last);
        }
    }
    if (!typed) return std::nullopt;
    return c;
}

}  // namespace gecko::wire
