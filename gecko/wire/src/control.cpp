// SPDX-License-Identifier: Apache-2.0
#include "gecko/wire/control.hpp"

#include <msgpack.hpp>

namespace gecko::wire {

void encode_control(const Control& control, Buffer& out) {
    msgpack::packer<Buffer> pk(out);
    pk.pack_map(2);
    pk.pack(std::string_view("t"));
    pk.pack(control.type);
    pk.pack(std::string_view("last"));
    pk.pack(control.last);
}

std::optional<Control> parse_control(const std::uint8_t* data, std::size_t size) {
    if (size > 4096) return std::nullopt;
    try {
        const msgpack::unpack_limit limits(32, 32, 256, 256, 32, 4);
        std::size_t offset = 0;
        const auto handle = msgpack::unpack(reinterpret_cast<const char*>(data), size, offset,
                                            [](msgpack::type::object_type, std::size_t, void*) { return false; },
                                            nullptr, limits);
        const auto& map = handle.get();
        if (offset != size || map.type != msgpack::type::MAP) return std::nullopt;
        Control c;
        bool typed = false;
        for (std::uint32_t i = 0; i < map.via.map.size; ++i) {
            const auto& kv = map.via.map.ptr[i];
            if (kv.key.type != msgpack::type::STR) continue;
            const std::string_view key(kv.key.via.str.ptr, kv.key.via.str.size);
            if (key == "t" && kv.val.type == msgpack::type::STR) {
                c.type.assign(kv.val.via.str.ptr, kv.val.via.str.size);
                typed = true;
            } else if (key == "last" && kv.val.type == msgpack::type::POSITIVE_INTEGER) {
                c.last = kv.val.via.u64;
            }
        }
        if (!typed) return std::nullopt;
        return c;
    } catch (const std::exception&) {
        return std::nullopt;
    }
}

}  // namespace gecko::wire
