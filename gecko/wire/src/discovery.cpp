// SPDX-License-Identifier: Apache-2.0
#include "gecko/wire/discovery.hpp"

#include <cmath>

namespace gecko::discovery {

// Mixes an id so that the digest of a set of ids (their xor) does not cancel
// out for ids that differ in few bits.
std::uint64_t entity_digest_term(std::uint64_t x) noexcept {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

std::uint64_t entity_digest(const std::vector<std::uint64_t>& ids) noexcept {
    std::uint64_t d = 0;
    for (auto id : ids) d ^= entity_digest_term(id);
    return d;
}


const char* to_string(EntityKind kind) noexcept {
    switch (kind) {
        case EntityKind::publisher: return "publisher";
        case EntityKind::subscriber: return "subscriber";
        case EntityKind::server: return "server";
        case EntityKind::client: return "client";
    }
    return "?";
}

std::optional<EntityKind> kind_from_string(std::string_view text) noexcept {
    if (text == "publisher") return EntityKind::publisher;
    if (text == "subscriber") return EntityKind::subscriber;
    if (text == "server") return EntityKind::server;
    if (text == "client") return EntityKind::client;
    return std::nullopt;
}

EntityKind producer_kind(EntityKind kind) noexcept {
    return (kind == EntityKind::server || kind == EntityKind::client) ? EntityKind::server : EntityKind::publisher;
}

bool is_producer(EntityKind kind) noexcept { return kind == EntityKind::publisher || kind == EntityKind::server; }

std::optional<wire::Value> find(const wire::Value& obj, std::string_view key) noexcept { return obj.find(key); }

std::optional<std::string> get_str(const wire::Value& obj, std::string_view key) {
    const auto v = obj.find(key);
    const auto text = v ? v->as_str() : std::nullopt;
    if (!text) return std::nullopt;
    return std::string(*text);
}

std::optional<std::uint64_t> get_u64(const wire::Value& obj, std::string_view key) noexcept {
    const auto v = obj.find(key);
    return v ? v->as_uint() : std::nullopt;
}

std::optional<std::int64_t> get_i64(const wire::Value& obj, std::string_view key) noexcept {
    const auto v = obj.find(key);
    return v ? v->as_int() : std::nullopt;
}

std::optional<double> get_f64(const wire::Value& obj, std::string_view key) noexcept {
    const auto v = obj.find(key);
    const auto number = v ? v->as_number() : std::nullopt;
    if (!number || !std::isfinite(*number)) return std::nullopt;
    return number;
}

bool get_bool(const wire::Value& obj, std::string_view key, bool fallback) noexcept {
    const auto v = obj.find(key);
    return v ? v->as_bool().value_or(fallback) : fallback;
}

std::optional<std::vector<std::string>> get_str_array(const wire::Value& obj, std::string_view key) {
    const auto v = obj.find(key);
    std::vector<std::string> out;
    if (!v || v->is_nil()) return out;
    if (v->type() != wire::Type::array) return std::nullopt;
    for (const wire::Value& item : v->items()) {
        const auto text = item.as_str();
        if (!text) return std::nullopt;
        out.emplace_back(*text);
    }
    return out;
}

std::optional<Message> Message::parse(const char* data, std::size_t size, std::string* why) {
    Message m;
    auto bytes = std::make_shared<std::vector<std::uint8_t>>(data, data + size);
    wire::Reader reader(bytes->data(), bytes->size());
    try {
        m.root_ = wire::Value::read(reader);
    } catch (const wire::DecodeError& e) {
        if (why) *why = std::string("not msgpack (") + e.what() + ")";
        return std::nullopt;
    }
    if (!reader.at_end()) {
        if (why) *why = "trailing bytes after the msgpack map";
        return std::nullopt;
    }
    m.bytes_ = std::move(bytes);
    if (m.root_.type() != wire::Type::map) {
        if (why) *why = "not a msgpack map";
        return std::nullopt;
    }
    const auto v = get_i64(m.root_, "v");
    auto t = get_str(m.root_, "t");
    if (!v || !t) {
        if (why) *why = "missing 'v' or 't'";
        return std::nullopt;
    }
    if (*v != version) {
        if (why) *why = "unsupported protocol version " + std::to_string(*v);
        return std::nullopt;
    }
    m.type_ = std::move(*t);
    return m;
}

Writer add_message(std::uint64_t session, std::uint64_t secret, const Registration& r) {
    const std::uint32_t extra = (r.schema.empty() ? 0 : 1) + (r.wildcard ? 2 : 0);
    Writer w("add", 2 + registration_fields + extra);
    w.kv("s", session);
    w.kv("secret", secret);
    pack_registration_fields(w.packer(), r);
    if (!r.schema.empty()) {
        w.key("schema");
        w.append_raw(r.schema.data(), r.schema.size());
    }
    if (r.wildcard) {
        w.kv("wildcard", true);
        w.key("filter");
        w.packer().pack_map(2);
        w.kv("topics", r.topic_filter);
        w.kv("types", r.type_filter);
    }
    return w;
}

void pack_registration_fields(msgpack::packer<msgpack::sbuffer>& pk, const Registration& r) {
    pk.pack(std::string_view("id"));
    pk.pack(r.id);
    pk.pack(std::string_view("kind"));
    pk.pack(std::string_view(to_string(r.kind)));
    pk.pack(std::string_view("topic"));
    pk.pack(r.topic);
    pk.pack(std::string_view("type"));
    pk.pack(r.type_name);
    pk.pack(std::string_view("latched"));
    pk.pack(r.latched);
}

std::optional<Registration> read_registration(const wire::Value& obj) {
    Registration r;
    const auto id = get_u64(obj, "id");
    const auto kind = get_str(obj, "kind");
    auto topic = get_str(obj, "topic");
    auto type = get_str(obj, "type");
    if (!id || *id == 0 || !kind || !topic || !type) return std::nullopt;
    const auto k = kind_from_string(*kind);
    if (!k || topic->empty()) return std::nullopt;
    r.id = *id;
    r.kind = *k;
    r.topic = std::move(*topic);
    r.type_name = std::move(*type);
    r.latched = get_bool(obj, "latched", false);
    if (const auto schema = find(obj, "schema"); schema && !schema->is_nil())
        r.schema.assign(reinterpret_cast<const char*>(schema->bytes().data()), schema->bytes().size());
    r.wildcard = get_bool(obj, "wildcard", false);
    if (const auto filter = find(obj, "filter")) {
        auto topics = get_str_array(*filter, "topics");
        auto types = get_str_array(*filter, "types");
        if (!topics || !types) return std::nullopt;
        r.topic_filter = std::move(*topics);
        r.type_filter = std::move(*types);
    }
    return r;
}

void pack_peer(msgpack::packer<msgpack::sbuffer>& pk, const Peer& p) {
    pk.pack_map(registration_fields + 7 + (p.fingerprint.empty() ? 0 : 1));
    pack_registration_fields(pk, p.reg);
    pk.pack(std::string_view("node"));
    pk.pack(p.node);
    pk.pack(std::string_view("session"));
    pk.pack(p.session);
    pk.pack(std::string_view("host"));
    pk.pack(p.host);
    pk.pack(std::string_view("hostid"));
    pk.pack(p.host_id);
    pk.pack(std::string_view("pid"));
    pk.pack(p.pid);
    pk.pack(std::string_view("pidns"));
    pk.pack(p.pid_ns);
    pk.pack(std::string_view("locators"));
    pk.pack(p.locators);
    if (!p.fingerprint.empty()) {
        pk.pack(std::string_view("fp"));
        pk.pack(p.fingerprint);
    }
}

std::optional<Peer> read_peer(const wire::Value& obj) {
    auto reg = read_registration(obj);
    if (!reg) return std::nullopt;
    Peer p;
    p.reg = std::move(*reg);
    p.node = get_str(obj, "node").value_or("");
    p.session = get_u64(obj, "session").value_or(0);
    p.host = get_str(obj, "host").value_or("");
    p.host_id = get_str(obj, "hostid").value_or("");
    p.pid = static_cast<std::int32_t>(get_i64(obj, "pid").value_or(0));
    p.pid_ns = get_str(obj, "pidns").value_or("");
    p.locators = get_str_array(obj, "locators").value_or(std::vector<std::string>{});
    p.fingerprint = get_str(obj, "fp").value_or("");
    return p;
}

void pack_stats(msgpack::packer<msgpack::sbuffer>& pk, const TopicStats& s) {
    pk.pack_map(6);
    pk.pack(std::string_view("id"));
    pk.pack(s.id);
    pk.pack(std::string_view("messages_per_s"));
    pk.pack(s.messages_per_s);
    pk.pack(std::string_view("bytes_per_s"));
    pk.pack(s.bytes_per_s);
    pk.pack(std::string_view("drops"));
    pk.pack(s.drops);
    pk.pack(std::string_view("latency_ns"));
    pk.pack(s.latency_ns);
    pk.pack(std::string_view("unheard"));
    pk.pack(s.unheard);
}

std::optional<TopicStats> read_stats(const wire::Value& obj) {
    const auto id = get_u64(obj, "id");
    if (!id) return std::nullopt;
    TopicStats s;
    s.id = *id;
    s.messages_per_s = get_f64(obj, "messages_per_s").value_or(0);
    s.bytes_per_s = get_f64(obj, "bytes_per_s").value_or(0);
    s.drops = get_u64(obj, "drops").value_or(0);
    s.latency_ns = get_i64(obj, "latency_ns").value_or(-1);
    s.unheard = get_u64(obj, "unheard").value_or(0);
    return s;
}

void pack_channel_entry(msgpack::sbuffer& out, const ChannelEntry& e) {
    msgpack::packer<msgpack::sbuffer> pk(out);
    pk.pack_map(7);
    pk.pack(std::string_view("name"));
    pk.pack(e.name);
    pk.pack(std::string_view("service"));
    pk.pack(e.service);
    pk.pack(std::string_view("channel"));
    pk.pack(e.channel);
    pk.pack(std::string_view("type"));
    pk.pack(e.type_name);
    pk.pack(std::string_view("type_hash"));
    pk.pack(e.type_hash);
    pk.pack(std::string_view("schema"));
    if (e.schema.empty())
        pk.pack_nil();
    else
        out.write(e.schema.data(), e.schema.size());  // the map as its producer sent it
    pk.pack(std::string_view("producers"));
    pk.pack_array(static_cast<std::uint32_t>(e.producers.size()));
    for (const auto& p : e.producers) {
        pk.pack_map(5);
        pk.pack(std::string_view("id"));
        pk.pack(p.id);
        pk.pack(std::string_view("node"));
        pk.pack(p.node);
        pk.pack(std::string_view("host"));
        pk.pack(p.host);
        pk.pack(std::string_view("type"));
        pk.pack(p.type_name);
        pk.pack(std::string_view("latched"));
        pk.pack(p.latched);
    }
}

Writer directory_message(std::uint64_t session, std::uint64_t instance, bool partial, const msgpack::sbuffer& entries,
                         std::uint32_t count, const std::vector<std::pair<bool, std::string>>& gone) {
    Writer w("directory", 5);
    w.kv("s", session);
    w.kv("instance", instance);
    w.kv("partial", partial);
    w.key("channels");
    w.packer().pack_array(count);
    w.append_raw(entries.data(), entries.size());
    w.key("gone");
    w.packer().pack_array(static_cast<std::uint32_t>(gone.size()));
    for (const auto& [service, name] : gone) {
        w.packer().pack_map(2);
        w.kv("name", name);
        w.kv("service", service);
    }
    return w;
}

std::optional<ChannelEntry> read_channel_entry(const wire::Value& obj) {
    ChannelEntry e;
    auto name = get_str(obj, "name");
    if (!name || name->empty()) return std::nullopt;
    e.name = std::move(*name);
    e.service = get_bool(obj, "service", false);
    e.channel = get_u64(obj, "channel").value_or(0);
    e.type_name = get_str(obj, "type").value_or("");
    e.type_hash = get_u64(obj, "type_hash").value_or(0);
    if (const auto schema = find(obj, "schema"); schema && schema->type() == wire::Type::map)
        e.schema.assign(reinterpret_cast<const char*>(schema->bytes().data()), schema->bytes().size());
    if (const auto producers = find(obj, "producers"); producers && producers->type() == wire::Type::array) {
        for (const wire::Value& item : producers->items()) {
            ChannelEntry::Producer p;
            const auto id = get_u64(item, "id");
            if (!id) continue;
            p.id = *id;
            p.node = get_str(item, "node").value_or("");
            p.host = get_str(item, "host").value_or("");
            p.type_name = get_str(item, "type").value_or("");
            p.latched = get_bool(item, "latched", false);
            e.producers.push_back(std::move(p));
        }
    }
    return e;
}

}  // namespace gecko::discovery
