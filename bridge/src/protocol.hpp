// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file protocol.hpp
/// The Foxglove WebSocket protocol (v1 message set, docs/BRIDGE.md §2) as
/// data: what a client may send, parsed and checked whole before the bridge
/// acts on it, and the server's messages, written. No sockets here: the
/// fuzz target (tests/fuzz/fuzz_bridge.cpp) drives these parsers directly.
///
/// Text frames are JSON objects with an "op"; binary frames start with an
/// opcode byte; every integer is little-endian.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gecko::bridge {

/// The subprotocol names a client may offer; the bridge echoes the one it took.
inline constexpr std::string_view subprotocol_v1 = "foxglove.websocket.v1";
inline constexpr std::string_view subprotocol_sdk = "foxglove.sdk.v1";
/// The one of `offered` (a Sec-WebSocket-Protocol header: names separated by
/// commas) the bridge speaks, or "" when none.
std::string choose_subprotocol(std::string_view offered);

/// Limits a client message is checked against while it is parsed.
struct ParseLimits {
    std::size_t max_items = 4096;   ///< subscriptions, ids or channels in one request
    std::size_t max_depth = 32;     ///< JSON nesting (deeper is refused before parsing)
    std::size_t max_name = 1024;    ///< a topic, encoding or schema name, in bytes
};

struct SubscribeItem {
    std::uint32_t id = 0;          ///< the client's subscription id
    std::uint32_t channel = 0;     ///< the channel it wants
    /// Gecko extensions a Foxglove client omits: how the subscription queues.
    std::optional<std::uint32_t> depth;  ///< messages kept while the connection is busy
    bool latest = false;                 ///< keep only the newest (depth 1)
};

struct ClientChannel {
    std::uint32_t id = 0;
    std::string topic;
    std::string encoding;      ///< "json" or "msgpack" (serverInfo's supportedEncodings)
    std::string schema_name;   ///< the type the client says it publishes
};

/// One JSON request of a client.
struct TextRequest {
    enum class Op {
        subscribe, unsubscribe, advertise, unadvertise,
        get_parameters, set_parameters, subscribe_parameter_updates, unsubscribe_parameter_updates,
        subscribe_connection_graph, unsubscribe_connection_graph, fetch_asset,
    };
    Op op = Op::subscribe;
    std::vector<SubscribeItem> subscriptions;  ///< subscribe
    std::vector<std::uint32_t> ids;            ///< unsubscribe: subscription ids; unadvertise: channel ids
    std::vector<ClientChannel> channels;       ///< advertise
    std::string request_id;                    ///< getParameters/setParameters/fetchAsset id, as text ("" if none)
};

/// One binary request of a client.
struct BinaryRequest {
    enum class Op : std::uint8_t { message_data = 0x01, service_call = 0x02, playback_control = 0x03 };
    Op op = Op::message_data;
    std::uint32_t channel = 0;     ///< message_data: the client's channel id
    std::uint32_t service = 0;     ///< service_call
    std::uint32_t call = 0;        ///< service_call: the client's call id
    std::string encoding;          ///< service_call: "json" or "msgpack"
    const std::uint8_t* payload = nullptr;  ///< into the frame parsed
    std::size_t size = 0;
};

/// A request parsed, or why it was refused (a sentence a person can act on).
template <class T>
struct Parsed {
    std::optional<T> request;
    std::string error;
    std::string op;   ///< the op named, when it was read ("" before that)
    explicit operator bool() const noexcept { return request.has_value(); }
};

Parsed<TextRequest> parse_text(std::string_view text, const ParseLimits& limits = {});
Parsed<BinaryRequest> parse_binary(const std::uint8_t* data, std::size_t size, const ParseLimits& limits = {});

// ---------------------------------------------------------------- server -> client

enum class StatusLevel { info = 0, warning = 1, error = 2 };

/// A channel as `advertise` lists it.
struct AdvertisedChannel {
    std::uint32_t id = 0;
    std::string topic;
    std::string encoding;
    std::string schema_name;
    std::string schema;           ///< the schema text (a JSON Schema document)
    std::string schema_encoding;  ///< "jsonschema"
};

struct AdvertisedService {
    std::uint32_t id = 0;
    std::string name;
    std::string type;               ///< "Request->Reply"
    std::string request_type, reply_type;
    std::string request_schema, reply_schema;  ///< JSON Schema documents
};

struct GraphUpdate {
    struct Entry {
        std::string name;
        std::vector<std::string> ids;
    };
    std::vector<Entry> published, subscribed, services;
    std::vector<std::string> removed_topics, removed_services;
};

std::string server_info(std::string_view name, const std::vector<std::string>& capabilities,
                        const std::vector<std::string>& encodings,
                        const std::vector<std::pair<std::string, std::string>>& metadata, std::string_view session_id);
std::string status(StatusLevel level, std::string_view message, std::string_view id = {});
std::string advertise(const std::vector<AdvertisedChannel>& channels);
std::string unadvertise(const std::vector<std::uint32_t>& ids);
std::string advertise_services(const std::vector<AdvertisedService>& services);
std::string unadvertise_services(const std::vector<std::uint32_t>& ids);
std::string connection_graph_update(const GraphUpdate& update);
std::string service_call_failure(std::uint32_t service, std::uint32_t call, std::string_view message);

/// The 13 bytes before a MessageData payload: opcode 0x01, subscription id, timestamp (ns).
inline constexpr std::size_t message_data_header_size = 13;
void message_data_header(std::uint8_t* out, std::uint32_t subscription, std::uint64_t timestamp_ns) noexcept;
/// A whole ServiceCallResponse frame (opcode 0x03).
std::string service_call_response(std::uint32_t service, std::uint32_t call, std::string_view encoding,
                                  const std::uint8_t* payload, std::size_t size);

}  // namespace gecko::bridge
