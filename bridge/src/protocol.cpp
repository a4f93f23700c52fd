// SPDX-License-Identifier: Apache-2.0
#include "protocol.hpp"
#include "json_text.hpp"

#include <nlohmann/json.hpp>

#include <cstring>
#include <limits>

namespace gecko::bridge {

using Json = nlohmann::json;

namespace {

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    return s;
}

// Deeper nesting than `max` is refused before any parser sees it (a parser's
// recursion, or a tree's destruction, is where "[[[[..." hurts).
bool nesting_within(std::string_view text, std::size_t max) {
    std::size_t depth = 0;
    bool in_string = false, escaped = false;
    for (const char c : text) {
        if (in_string) {
            if (escaped) escaped = false;
            else if (c == '\\') escaped = true;
            else if (c == '"') in_string = false;
            continue;
        }
        if (c == '"') in_string = true;
        else if (c == '[' || c == '{') {
            if (++depth > max) return false;
        } else if ((c == ']' || c == '}') && depth > 0) {
            --depth;
        }
    }
    return true;
}

// Reading fields, each failure a sentence naming the field.
struct Fields {
    const Json& object;
    std::string& error;
    std::string where;

    const Json* get(const char* name, bool required) {
        const auto it = object.find(name);
        if (it == object.end() || it->is_null()) {
            if (required) error = where + ": field '" + name + "' is missing";
            return nullptr;
        }
        return &*it;
    }
    bool u32(const char* name, std::uint32_t& out, bool required = true) {
        const Json* v = get(name, required);
        if (!v) return !required;
        if (!v->is_number_unsigned() && !(v->is_number_integer() && v->get<std::int64_t>() >= 0)) {
            error = where + ": field '" + name + "' must be an integer from 0 to 4294967295";
            return false;
        }
        const auto n = v->get<std::uint64_t>();
        if (n > std::numeric_limits<std::uint32_t>::max()) {
            error = where + ": field '" + name + "' must be an integer from 0 to 4294967295";
            return false;
        }
        out = static_cast<std::uint32_t>(n);
        return true;
    }
    bool text(const char* name, std::string& out, std::size_t max, bool required = true) {
        const Json* v = get(name, required);
        if (!v) return !required;
        if (!v->is_string()) {
            error = where + ": field '" + name + "' must be a string";
            return false;
        }
        const auto& s = v->get_ref<const std::string&>();
        if (s.size() > max) {
            error = where + ": field '" + name + "' is longer than " + std::to_string(max) + " bytes";
            return false;
        }
        out = s;
        return true;
    }
    const Json* array(const char* name, std::size_t max, bool required = true) {
        const Json* v = get(name, required);
        if (!v) return nullptr;
        if (!v->is_array()) {
            error = where + ": field '" + name + "' must be an array";
            return nullptr;
        }
        if (v->size() > max) {
            error = where + ": field '" + name + "' has " + std::to_string(v->size()) + " items; at most " +
                    std::to_string(max) + " are taken in one request";
            return nullptr;
        }
        return v;
    }
};

bool read_ids(Fields& f, const char* name, std::vector<std::uint32_t>& out, std::size_t max) {
    const Json* a = f.array(name, max);
    if (!a) return false;
    for (std::size_t i = 0; i < a->size(); ++i) {
        const Json& v = (*a)[i];
        if (!v.is_number_unsigned() || v.get<std::uint64_t>() > std::numeric_limits<std::uint32_t>::max()) {
            f.error = f.where + ": " + name + "[" + std::to_string(i) + "] must be an integer from 0 to 4294967295";
            return false;
        }
        out.push_back(static_cast<std::uint32_t>(v.get<std::uint64_t>()));
    }
    return true;
}

std::string id_text(const Json& object) {
    auto it = object.find("id");
    if (it == object.end()) it = object.find("requestId");
    if (it == object.end()) return "";
    if (it->is_string()) return it->get<std::string>().substr(0, 256);
    if (it->is_number()) return it->dump();
    return "";
}

}  // namespace

std::string choose_subprotocol(std::string_view offered) {
    std::string chosen;
    while (!offered.empty()) {
        const auto comma = offered.find(',');
        const auto name = trim(offered.substr(0, comma));
        // The first one offered that we speak: the client's order is its preference.
        if (chosen.empty() && (name == subprotocol_v1 || name == subprotocol_sdk)) chosen = std::string(name);
        if (comma == std::string_view::npos) break;
        offered.remove_prefix(comma + 1);
    }
    return chosen;
}

Parsed<TextRequest> parse_text(std::string_view text, const ParseLimits& limits) {
    Parsed<TextRequest> out;
    if (!nesting_within(text, limits.max_depth)) {
        out.error = "JSON nested deeper than " + std::to_string(limits.max_depth) + " levels";
        return out;
    }
    Json j;
    try {
        j = Json::parse(text.begin(), text.end());
    } catch (const Json::exception& e) {
        std::string what = e.what();
        if (const auto at = what.find("] "); at != std::string::npos) what.erase(0, at + 2);
        out.error = "malformed JSON: " + what;
        return out;
    }
    if (!j.is_object()) {
        out.error = "a text message must be a JSON object with an \"op\"";
        return out;
    }
    const auto op_it = j.find("op");
    if (op_it == j.end() || !op_it->is_string()) {
        out.error = "a text message must have an \"op\" string";
        return out;
    }
    out.op = op_it->get<std::string>().substr(0, 64);
    TextRequest r;
    Fields f{j, out.error, "'" + out.op + "'"};
    const std::string& op = op_it->get_ref<const std::string&>();
    if (op == "subscribe") {
        r.op = TextRequest::Op::subscribe;
        const Json* subs = f.array("subscriptions", limits.max_items);
        if (!subs) return out;
        for (std::size_t i = 0; i < subs->size(); ++i) {
            const Json& s = (*subs)[i];
            if (!s.is_object()) {
                out.error = "'subscribe': subscriptions[" + std::to_string(i) + "] must be an object {id, channelId}";
                return out;
            }
            Fields sf{s, out.error, "'subscribe': subscriptions[" + std::to_string(i) + "]"};
            SubscribeItem item;
            std::uint32_t depth = 0;
            if (!sf.u32("id", item.id) || !sf.u32("channelId", item.channel) || !sf.u32("depth", depth, false))
                return out;
            if (const Json* latest = sf.get("latest", false)) {
                if (!latest->is_boolean()) {
                    out.error = sf.where + ": field 'latest' must be true or false";
                    return out;
                }
                item.latest = latest->get<bool>();
            }
            if (s.contains("depth")) {
                if (depth == 0) {
                    out.error = sf.where + ": field 'depth' must be at least 1";
                    return out;
                }
                item.depth = depth;
            }
            r.subscriptions.push_back(item);
        }
    } else if (op == "unsubscribe") {
        r.op = TextRequest::Op::unsubscribe;
        if (!read_ids(f, "subscriptionIds", r.ids, limits.max_items)) return out;
    } else if (op == "advertise") {
        r.op = TextRequest::Op::advertise;
        const Json* chans = f.array("channels", limits.max_items);
        if (!chans) return out;
        for (std::size_t i = 0; i < chans->size(); ++i) {
            const Json& c = (*chans)[i];
            if (!c.is_object()) {
                out.error = "'advertise': channels[" + std::to_string(i) + "] must be an object";
                return out;
            }
            Fields cf{c, out.error, "'advertise': channels[" + std::to_string(i) + "]"};
            ClientChannel ch;
            if (!cf.u32("id", ch.id) || !cf.text("topic", ch.topic, limits.max_name) ||
                !cf.text("encoding", ch.encoding, limits.max_name) ||
                !cf.text("schemaName", ch.schema_name, limits.max_name, false))
                return out;
            r.channels.push_back(std::move(ch));
        }
    } else if (op == "unadvertise") {
        r.op = TextRequest::Op::unadvertise;
        if (!read_ids(f, "channelIds", r.ids, limits.max_items)) return out;
    } else if (op == "getParameters") {
        r.op = TextRequest::Op::get_parameters;
        r.request_id = id_text(j);
    } else if (op == "setParameters") {
        r.op = TextRequest::Op::set_parameters;
        r.request_id = id_text(j);
    } else if (op == "subscribeParameterUpdates") {
        r.op = TextRequest::Op::subscribe_parameter_updates;
    } else if (op == "unsubscribeParameterUpdates") {
        r.op = TextRequest::Op::unsubscribe_parameter_updates;
    } else if (op == "subscribeConnectionGraph") {
        r.op = TextRequest::Op::subscribe_connection_graph;
    } else if (op == "unsubscribeConnectionGraph") {
        r.op = TextRequest::Op::unsubscribe_connection_graph;
    } else if (op == "fetchAsset") {
        r.op = TextRequest::Op::fetch_asset;
        r.request_id = id_text(j);
    } else {
        out.error = "unknown op '" + out.op +
                    "'; this bridge takes subscribe, unsubscribe, advertise, unadvertise, subscribeConnectionGraph, "
                    "unsubscribeConnectionGraph";
        return out;
    }
    out.request = std::move(r);
    return out;
}

namespace {

struct LittleEndian {
    const std::uint8_t* at;
    std::size_t left;
    bool u32(std::uint32_t& v) {
        if (left < 4) return false;
        v = std::uint32_t(at[0]) | std::uint32_t(at[1]) << 8 | std::uint32_t(at[2]) << 16 | std::uint32_t(at[3]) << 24;
        at += 4;
        left -= 4;
        return true;
    }
};

}  // namespace

Parsed<BinaryRequest> parse_binary(const std::uint8_t* data, std::size_t size, const ParseLimits& limits) {
    Parsed<BinaryRequest> out;
    if (size == 0) {
        out.error = "an empty binary message (it must start with an opcode)";
        return out;
    }
    BinaryRequest r;
    LittleEndian in{data + 1, size - 1};
    switch (data[0]) {
        case 0x01:
            out.op = "clientMessageData";
            r.op = BinaryRequest::Op::message_data;
            if (!in.u32(r.channel)) {
                out.error = "a client message (opcode 0x01) shorter than its 4-byte channel id";
                return out;
            }
            break;
        case 0x02: {
            out.op = "serviceCallRequest";
            r.op = BinaryRequest::Op::service_call;
            std::uint32_t length = 0;
            if (!in.u32(r.service) || !in.u32(r.call) || !in.u32(length)) {
                out.error = "a service call request (opcode 0x02) shorter than its header (service id, call id, "
                            "encoding length)";
                return out;
            }
            if (length > in.left || length > limits.max_name) {
                out.error = "a service call request whose encoding length (" + std::to_string(length) +
                            ") runs past the message";
                return out;
            }
            r.encoding.assign(reinterpret_cast<const char*>(in.at), length);
            in.at += length;
            in.left -= length;
            break;
        }
        case 0x03:
            out.op = "playbackControl";
            out.error = "playback control (opcode 0x03) is not offered by this bridge (no playbackControl capability)";
            return out;
        default:
            out.error = "unknown binary opcode 0x" + [&] {
                static const char* hex = "0123456789abcdef";
                return std::string{hex[data[0] >> 4], hex[data[0] & 15]};
            }() + "; clients send 0x01 (message data) and 0x02 (service call)";
            return out;
    }
    r.payload = in.at;
    r.size = in.left;
    out.request = r;
    return out;
}

// ---------------------------------------------------------------- server -> client

namespace {
}  // namespace

std::string server_info(std::string_view name, const std::vector<std::string>& capabilities,
                        const std::vector<std::string>& encodings,
                        const std::vector<std::pair<std::string, std::string>>& metadata, std::string_view session_id) {
    Json j{{"op", "serverInfo"}, {"name", name}, {"capabilities", capabilities}};
    if (!encodings.empty()) j["supportedEncodings"] = encodings;
    Json meta = Json::object();
    for (const auto& [k, v] : metadata) meta[k] = v;
    j["metadata"] = meta;
    j["sessionId"] = session_id;
    return json_text(j);
}

std::string status(StatusLevel level, std::string_view message, std::string_view id) {
    Json j{{"op", "status"}, {"level", static_cast<int>(level)}, {"message", message}};
    if (!id.empty()) j["id"] = id;
    return json_text(j);
}

std::string advertise(const std::vector<AdvertisedChannel>& channels) {
    Json list = Json::array();
    for (const auto& c : channels) {
        Json ch{{"id", c.id}, {"topic", c.topic}, {"encoding", c.encoding}, {"schemaName", c.schema_name},
                {"schema", c.schema}};
        if (!c.schema_encoding.empty()) ch["schemaEncoding"] = c.schema_encoding;
        list.push_back(std::move(ch));
    }
    return json_text(Json{{"op", "advertise"}, {"channels", std::move(list)}});
}

std::string unadvertise(const std::vector<std::uint32_t>& ids) {
    return json_text(Json{{"op", "unadvertise"}, {"channelIds", ids}});
}

std::string advertise_services(const std::vector<AdvertisedService>& services) {
    Json list = Json::array();
    for (const auto& s : services) {
        list.push_back(Json{
            {"id", s.id},
            {"name", s.name},
            {"type", s.type},
            {"request", {{"encoding", "json"}, {"schemaName", s.request_type}, {"schemaEncoding", "jsonschema"},
                         {"schema", s.request_schema}}},
            {"response", {{"encoding", "json"}, {"schemaName", s.reply_type}, {"schemaEncoding", "jsonschema"},
                          {"schema", s.reply_schema}}},
            {"requestSchema", s.request_schema},
            {"responseSchema", s.reply_schema},
        });
    }
    return json_text(Json{{"op", "advertiseServices"}, {"services", std::move(list)}});
}

std::string unadvertise_services(const std::vector<std::uint32_t>& ids) {
    return json_text(Json{{"op", "unadvertiseServices"}, {"serviceIds", ids}});
}

std::string connection_graph_update(const GraphUpdate& u) {
    auto entries = [](const std::vector<GraphUpdate::Entry>& list, const char* ids_name) {
        Json a = Json::array();
        for (const auto& e : list) a.push_back(Json{{"name", e.name}, {ids_name, e.ids}});
        return a;
    };
    return json_text(Json{{"op", "connectionGraphUpdate"},
                     {"publishedTopics", entries(u.published, "publisherIds")},
                     {"subscribedTopics", entries(u.subscribed, "subscriberIds")},
                     {"advertisedServices", entries(u.services, "providerIds")},
                     {"removedTopics", u.removed_topics},
                     {"removedServices", u.removed_services}});
}

std::string service_call_failure(std::uint32_t service, std::uint32_t call, std::string_view message) {
    return json_text(Json{{"op", "serviceCallFailure"}, {"serviceId", service}, {"callId", call}, {"message", message}});
}

namespace {
void put_u32(std::uint8_t* at, std::uint32_t v) noexcept {
    for (int i = 0; i < 4; ++i) at[i] = static_cast<std::uint8_t>(v >> (8 * i));
}
}  // namespace

void message_data_header(std::uint8_t* out, std::uint32_t subscription, std::uint64_t timestamp_ns) noexcept {
    out[0] = 0x01;
    put_u32(out + 1, subscription);
    for (int i = 0; i < 8; ++i) out[5 + i] = static_cast<std::uint8_t>(timestamp_ns >> (8 * i));
}

std::string service_call_response(std::uint32_t service, std::uint32_t call, std::string_view encoding,
                                  const std::uint8_t* payload, std::size_t size) {
    std::string out(1 + 12 + encoding.size() + size, '\0');
    auto* at = reinterpret_cast<std::uint8_t*>(out.data());
    at[0] = 0x03;
    put_u32(at + 1, service);
    put_u32(at + 5, call);
    put_u32(at + 9, static_cast<std::uint32_t>(encoding.size()));
    std::memcpy(at + 13, encoding.data(), encoding.size());
    if (size) std::memcpy(at + 13 + encoding.size(), payload, size);
    return out;
}

}  // namespace gecko::bridge
