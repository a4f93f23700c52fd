// SPDX-License-Identifier: Apache-2.0
#include "gecko/wire/announcement.hpp"

#include <gecko/buffer.hpp>
#include <gecko/wire/packer.hpp>
#include <gecko/wire/value.hpp>

#include <algorithm>

namespace gecko::wire {

namespace {

std::optional<std::string> read_str(const Value& map, std::string_view key) {
    const auto v = map.find(key);
    const auto text = v ? v->as_str() : std::nullopt;
    if (!text) return std::nullopt;
    return std::string(*text);
}

std::optional<std::uint64_t> read_uint(const Value& map, std::string_view key) noexcept {
    const auto v = map.find(key);
    return v ? v->as_uint() : std::nullopt;
}

}  // namespace

std::string encode_announcement(const Announcement& a) {
    Buffer body;
    Packer pk(body);
    pk.pack_map(a.wildcard ? 8 : 7);
    pk.pack(std::string_view("id"));
    pk.pack(a.id);
    pk.pack(std::string_view("kind"));
    pk.pack(std::string_view(a.kind));
    pk.pack(std::string_view("topic"));
    pk.pack(std::string_view(a.topic));
    pk.pack(std::string_view("type"));
    pk.pack(a.type.empty() ? std::string_view("*") : std::string_view(a.type));
    pk.pack(std::string_view("node"));
    pk.pack(std::string_view(a.node));
    pk.pack(std::string_view("session"));
    pk.pack(a.session);
    pk.pack(std::string_view("depth"));
    pk.pack(a.depth);
    if (a.wildcard) {
        pk.pack(std::string_view("wildcard"));
        pk.pack_true();
    }
    std::string out(10, '\0');
    const Channel channel = a.wildcard ? static_cast<Channel>(key_part(a.channel)) : a.channel;
    store_channel(reinterpret_cast<std::uint8_t*>(out.data()), channel);
    out[8] = 0;
    out[9] = static_cast<char>(announcement_version);
    out.append(reinterpret_cast<const char*>(body.data()), body.size());
    return out;
}

std::optional<Announcement> parse_announcement(std::string_view bytes) {
    if (bytes.size() < 11 || bytes.size() > max_announcement_size || bytes[8] != 0 ||
        static_cast<std::uint8_t>(bytes[9]) != announcement_version)
        return std::nullopt;
    Announcement a;
    a.channel = load_channel(reinterpret_cast<const std::uint8_t*>(bytes.data()));
    Value map;
    try {
        map = Value::parse(reinterpret_cast<const std::uint8_t*>(bytes.data()) + 10, bytes.size() - 10);
    } catch (const DecodeError&) {
        return std::nullopt;
    }
    if (map.type() != Type::map) return std::nullopt;
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
    if (const auto w = map.find("wildcard")) a.wildcard = w->as_bool().value_or(false);
    return a;
}

}  // namespace gecko::wire
