// SPDX-License-Identifier: Apache-2.0
#include "gecko/wire/announcement.hpp"

#include <msgpack.hpp>

namespace gecko::wire {

namespace {

const msgpack::object* field(const msgpack::object& map, std::string_view key) noexcept {
    for (std::uint32_t i = 0; i < map.via.map.size; ++i) {
        const auto& kv = map.via.map.ptr[i];
        if (kv.key.type == msgpack::type::STR && std::string_view(kv.key.via.str.ptr, kv.key.via.str.size) == key)
            return &kv.val;
    }
    return nullptr;
}

std::optional<std::uint64_t> read_uint(const msgpack::object& map, std::string_view key) noexcept {
    const auto* v = field(map, key);
    if (!v || v->type != msgpack::type::POSITIVE_INTEGER) return std::nullopt;
    return v->via.u64;
}

std::optional<std::string> read_str(const msgpack::object& map, std::string_view key) {
    const auto* v = field(map, key);
    if (!v || v->type != msgpack::type::STR) return std::nullopt;
    return std::string(v->via.str.ptr, v->via.str.size);
}

bool reference_nothing(msgpack::type::object_type, std::size_t, void*) { return false; }

}  // namespace

std::string encode_announcement(const Announcement& a) {
    msgpack::sbuffer body;
    msgpack::packer<msgpack::sbuffer> pk(body);
    pk.pack_map(a.wildcard ? 8 : 7);
    pk.pack(std::string_view("id"));
    pk.pack(a.id);
    pk.pack(std::string_view("kind"));
    pk.pack(a.kind);
    pk.pack(std::string_view("topic"));
    pk.pack(a.topic);
    pk.pack(std::string_view("type"));
    pk.pack(a.type.empty() ? std::string("*") : a.type);
    pk.pack(std::string_view("node"));
    pk.pack(a.node);
    pk.pack(std::string_view("session"));
    pk.pack(a.session);
    pk.pack(std::string_view("depth"));
    pk.pack(a.depth);
    if (a.wildcard) {
        pk.pack(std::string_view("wildcard"));
        pk.pack(true);
    }
    std::string out(10, '\0');
    const Channel channel = a.wildcard ? static_cast<Channel>(key_part(a.channel)) : a.channel;
    store_channel(reinterpret_cast<std::uint8_t*>(out.data()), channel);
    out[8] = 0;
    out[9] = static_cast<char>(announcement_version);
    out.append(body.data(), body.size());
    return out;
}

std::optional<Announcement> parse_announcement(std::string_view bytes) {
    if (bytes.size() < 11 || bytes.size() > max_announcement_size || bytes[8] != 0 ||
        static_cast<std::uint8_t>(bytes[9]) != announcement_version)
        return std::nullopt;
    Announcement a;
    a.channel = load_channel(reinterpret_cast<const std::uint8_t*>(bytes.data()));
    try {
        const msgpack::unpack_limit limits(64, 64, 512, 512, 64, 4);
        std::size_t offset = 10;
        const auto handle = msgpack::unpack(bytes.data(), bytes.size(), offset, reference_nothing, nullptr, limits);
        const auto& map = handle.get();
        if (offset != bytes.size() || map.type != msgpack::type::MAP) return std::nullopt;
        const auto id = read_uint(map, "id");
        if (!id || *id == 0) return std::nullopt;
        a.id = *id;
        a.kind = read_str(map, "kind").value_or("subscriber");
        a.topic = read_str(map, "topic").value_or("");
        a.type = read_str(map, "type").value_or("*");
        if (a.type.empty()) a.type = "*";
        a.node = read_str(map, "node").value_or("");
        a.session = read_uint(map, "session").value_or(0);
        a.depth = static_cast<std::uint32_t>(std::min<std::uint64_t>(read_uint(map, "depth").value_or(0), UINT32_MAX));
        if (const auto* w = field(map, "wildcard"); w && w->type == msgpack::type::BOOLEAN) a.wildcard = w->via.boolean;
    } catch (const std::exception&) {
        return std::nullopt;
    }
    return a;
}

}  // namespace gecko::wire
