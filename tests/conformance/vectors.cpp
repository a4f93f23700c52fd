// SPDX-License-Identifier: Apache-2.0
// The golden vectors (see vectors.hpp): the groups the vectors_*.cpp files build, the hashes, the
// generated docs/MESSAGES.md, the index and the hex files.

#include "vectors_parts.hpp"

#include <gecko/buffer.hpp>
#include <gecko/msgs/all.hpp>
#include <gecko/msgs/click.hpp>
#include <gecko/wire/announcement.hpp>
#include <gecko/wire/codec.hpp>
#include <gecko/wire/control.hpp>
#include <gecko/wire/frame.hpp>
#include <gecko/wire/hash.hpp>
#include <gecko/wire/schema_of.hpp>

#include <gecko/click/lockstep_msgs.hpp>

#include <cctype>
#include <cstdio>
#include <map>
#include <optional>
#include <stdexcept>
#include <tuple>
#include <type_traits>
#include <utility>

namespace gecko::conformance {

std::vector<Vector> byte_vectors() {
    std::vector<Vector> out;
    for (auto* group : {&frames, &announcements, &discovery_vectors, &message_vectors, &rule_vectors})
        for (auto& v : (*group)()) out.push_back(std::move(v));
    return out;
}

Json hash_vectors() {
    Json h;
    Json f32 = Json::array();
    for (const char* s : {"", "a", "foobar", "dalek", "chatter", "#e:2122232425262728"})
        f32.push_back(Json{{"input", s}, {"value", wire::fnv1a32(s)}, {"hex", hex_number(wire::fnv1a32(s), 8)}});
    h["fnv1a32"] = f32;
    Json f64 = Json::array();
    for (const char* s : {"", "a", "foobar", "gecko.msgs.String", "gecko.msgs.Imu", "examples.AddRequest", "examples.AddReply"})
        f64.push_back(Json{{"input", s}, {"value", wire::fnv1a64(s)}, {"hex", hex_number(wire::fnv1a64(s))}});
    h["fnv1a64"] = f64;
    Json names = Json::array();
    for (std::uint64_t id : {publisher_id, subscriber_id, server_id, client_id, std::uint64_t{1}})
        names.push_back(Json{{"id", id}, {"id_hex", hex_number(id)}, {"name", wire::directed_name(id)}});
    h["directed_names"] = names;
    Json channels = Json::array();
    auto channel = [&](const std::string& name, const char* what) {
        const wire::Channel c = wire::channel_of(key, name);
        channels.push_back(Json{{"key", key},
                                {"name", name},
                                {"what", what},
                                {"value", c},
                                {"hex", hex_number(c)},
                                {"bytes", channel_bytes(c)}});
    };
    channel(topic, "the topic 'chatter'");
    channel(latched_topic, "the topic 'mode'");
    channel("", "the empty name: a key-wide subscriber's own channel (its announcement carries only the key part)");
    channel(wire::directed_name(subscriber_id), "the subscriber's directed channel (latched replays)");
    channel(wire::directed_name(server_id), "the server's directed channel (requests)");
    channel(wire::directed_name(client_id), "the client's directed channel (replies)");
    h["channels"] = channels;
    const wire::Channel k = wire::channel_of(key, "");
    std::uint8_t kb[8];
    wire::store_channel(kb, k);
    h["key_prefixes"] = Json::array({Json{{"key", key},
                                          {"value", wire::key_part(k)},
                                          {"hex", hex_number(wire::key_part(k), 8)},
                                          {"bytes", hex_bytes(kb, 4)}}});
    Json types = Json::array();
    for (const char* t : {string_type, "gecko.msgs.Imu", "gecko.msgs.JointState", "gecko.msgs.Image", request_type, reply_type})
        types.push_back(Json{{"type_name", t}, {"value", wire::type_hash(t)}, {"hex", hex_number(wire::type_hash(t))}});
    h["type_hashes"] = types;
    Json digests = Json::array();
    const std::vector<std::vector<std::uint64_t>> sets = {{}, {1}, {publisher_id}, {publisher_id, server_id}, {server_id, publisher_id}};
    for (const auto& s : sets) {
        const auto d = discovery::entity_digest(s);
        digests.push_back(Json{{"ids", s}, {"value", d}, {"hex", hex_number(d)}});
    }
    h["entity_digests"] = digests;
    return h;
}

namespace {

std::string anchor(const std::string& type_name) {
    std::string a;
    for (char ch : type_name)
        if (ch != '.') a += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    return a;
}

// A field's wire type in words, nested messages linked to their own table.
std::string wire_type(const Json& t) {
    if (t.is_string()) return "`" + t.get<std::string>() + "`";
    if (t.contains("array"))
        return "array of " + (t.contains("size") ? std::to_string(t.at("size").get<std::size_t>()) + " " : std::string()) +
               wire_type(t.at("array"));
    if (t.contains("optional")) return wire_type(t.at("optional")) + " or `nil`";
    if (t.contains("map")) return "map from `str` to " + wire_type(t.at("map"));
    if (t.contains("bin")) return "`bin` of " + std::to_string(t.at("bin").get<std::size_t>()) + " bytes";
    if (t.contains("message")) {
        const auto name = t.at("message").get<std::string>();
        return "[" + name + "](#" + anchor(name) + ")";
    }
    if (t.contains("enum")) {
        std::string names;
        for (const auto& n : t.at("names")) names += (names.empty() ? "" : ", ") + ("`" + n.get<std::string>() + "`");
        return "`str`, one of " + names + " (" + t.at("enum").get<std::string>() + ")";
    }
    std::string fields;  // a struct without a type name of its own
    for (const auto& f : t.at("struct")) fields += (fields.empty() ? "" : ", ") + f.at("name").get<std::string>() + ": " + wire_type(f.at("type"));
    return "map {" + fields + "}";
}

}  // namespace

std::string messages_markdown() {
    const Json all = schemas();
    std::string out =
        "# The message types (`gecko.msgs`)\n\n"
        "<!-- Written by tests/conformance (gecko_conformance_generate), from the same source as\n"
        "     tests/conformance/vectors/schemas.json: do not edit by hand. -->\n\n"
        "Every type `gecko.msgs` defines (`msgs/include/gecko/msgs/`), and the example `add` service's,\n"
        "field by field as it travels: a msgpack map from field name to value, in this order\n"
        "([PROTOCOL.md](PROTOCOL.md) §3). A reader takes an absent field as its default. The same\n"
        "fields, as a schema a program reads, are in `tests/conformance/vectors/schemas.json` and in\n"
        "every typed publisher's entry of the key's directory ([DISCOVERY.md](DISCOVERY.md) §4.1).\n\n"
        "Scalars: `bool`; `int8` … `int64` and `uint8` … `uint64` (a msgpack int that fits); `float32`\n"
        "and `float64` (written as msgpack float32 / float64 always; read from any number); `str`; `bin`.\n";
    for (const auto& t : all.at("types")) {
        const auto name = t.at("type_name").get<std::string>();
        out += "\n## " + name + "\n\n";
        out += "Type hash `" + t.at("type_hash_hex").get<std::string>() + "`.\n\n";
        if (t.at("fields").empty()) {
            out += "No fields: an empty map.\n";
            continue;
        }
        out += "| field | wire type | default |\n| --- | --- | --- |\n";
        for (const auto& f : t.at("fields")) {
            const auto field = f.at("name").get<std::string>();
            std::string def = t.at("default").contains(field) ? t.at("default").at(field).dump() : "";
            for (std::size_t at = def.find('|'); at != std::string::npos; at = def.find('|', at + 2)) def.replace(at, 1, "\\|");
            out += "| `" + field + "` | " + wire_type(f.at("type")) + " | `" + def + "` |\n";
        }
    }
    return out;
}

Json index(const std::vector<Vector>& vectors) {
    Json j;
    j["what"] = "Golden vectors of the Gecko wire protocol: data frame version 2, announcement version 1, discovery "
                "protocol version 2. docs/PROTOCOL.md and docs/DISCOVERY.md are the specification; "
                "tests/conformance/README.md says how to use these files.";
    j["versions"] = Json{{"frame", wire::frame_version},
                         {"announcement", wire::announcement_version},
                         {"discovery", discovery::version}};
    j["conventions"] = Json{
        {"files", "each vector's bytes are in 'file' (relative to this index) as lowercase hex, 32 bytes per line; ignore whitespace"},
        {"integers", "JSON numbers are exact: 64-bit ids and hashes need a JSON reader that keeps all their digits (Python's json does); *_hex fields give the same values in hex"},
        {"floats", "a msgpack float is written with a decimal point or an exponent (5.0); a msgpack int never has one"},
        {"bin", "a msgpack bin is written as {\"bin\": \"<hex>\"}"},
        {"maps", "JSON objects keep the wire order of msgpack map keys"},
        {"channel bytes", "a channel is a little-endian u64: 'bytes' is its wire order, 'hex'/'value' the number"}};
    j["fixed_values"] = Json{{"key", key},
                             {"publisher_id", publisher_id},
                             {"server_id", server_id},
                             {"subscriber_id", subscriber_id},
                             {"client_id", client_id},
                             {"recorder_id", recorder_id},
                             {"talker_session", talker_session},
                             {"talker_secret", talker_secret},
                             {"listener_session", listener_session},
                             {"listener_secret", listener_secret},
                             {"core_instance", core_instance}};
    j["hashes"] = hash_vectors();
    Json list = Json::array();
    for (const auto& v : vectors) {
        Json e;
        e["name"] = v.name;
        e["file"] = v.file;
        e["size"] = v.bytes.size();
        e["what"] = v.what;
        for (auto it = v.fields.begin(); it != v.fields.end(); ++it) e[it.key()] = it.value();
        list.push_back(std::move(e));
    }
    j["vectors"] = std::move(list);
    return j;
}

std::string to_hex_file(const Bytes& bytes) {
    std::string out;
    for (std::size_t at = 0; at < bytes.size(); at += 32) {
        out += hex_bytes(bytes.data() + at, std::min<std::size_t>(32, bytes.size() - at));
        out += '\n';
    }
    return out;
}

Bytes from_hex(const std::string& text) {
    Bytes out;
    int high = -1;
    for (char c : text) {
        if (c == ' ' || c == '\n' || c == '\r' || c == '\t') continue;
        int v;
        if (c >= '0' && c <= '9') v = c - '0';
        else if (c >= 'a' && c <= 'f') v = c - 'a' + 10;
        else if (c >= 'A' && c <= 'F') v = c - 'A' + 10;
        else throw std::invalid_argument(std::string("not a hex digit: '") + c + "'");
        if (high < 0) {
            high = v;
        } else {
            out.push_back(static_cast<std::uint8_t>(high * 16 + v));
            high = -1;
        }
    }
    if (high >= 0) throw std::invalid_argument("an odd number of hex digits");
    return out;
}

namespace {
Json to_json(const msgpack::object& o) {
    switch (o.type) {
        case msgpack::type::NIL: return nullptr;
        case msgpack::type::BOOLEAN: return o.via.boolean;
        case msgpack::type::POSITIVE_INTEGER: return o.via.u64;
        case msgpack::type::NEGATIVE_INTEGER: return o.via.i64;
        case msgpack::type::FLOAT32:
        case msgpack::type::FLOAT64: return o.via.f64;
        case msgpack::type::STR: return std::string(o.via.str.ptr, o.via.str.size);
        case msgpack::type::BIN:
            return Json{{"bin", hex_bytes(reinterpret_cast<const std::uint8_t*>(o.via.bin.ptr), o.via.bin.size)}};
        case msgpack::type::ARRAY: {
            Json a = Json::array();
            for (std::uint32_t i = 0; i < o.via.array.size; ++i) a.push_back(to_json(o.via.array.ptr[i]));
            return a;
        }
        case msgpack::type::MAP: {
            Json m = Json::object();
            for (std::uint32_t i = 0; i < o.via.map.size; ++i) {
                const auto& kv = o.via.map.ptr[i];
                if (kv.key.type != msgpack::type::STR) throw std::runtime_error("a map key that is not a str");
                m[std::string(kv.key.via.str.ptr, kv.key.via.str.size)] = to_json(kv.val);
            }
            return m;
        }
        case msgpack::type::EXT: break;
    }
    throw std::runtime_error("msgpack ext has no JSON form here");
}
}  // namespace

Json msgpack_to_json(const std::uint8_t* data, std::size_t size) {
    std::size_t offset = 0;
    const auto handle = msgpack::unpack(reinterpret_cast<const char*>(data), size, offset);
    if (offset != size) throw std::runtime_error("trailing bytes after a msgpack value");
    return to_json(handle.get());
}

std::string dump(const Json& json) { return json.dump(2) + "\n"; }

}  // namespace gecko::conformance
