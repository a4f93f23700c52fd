// SPDX-License-Identifier: Apache-2.0
#pragma once
// The golden vectors of the Gecko wire (tests/conformance/README.md): every
// vector is built here from fixed values by the C++ implementation itself
// (gecko::wire's frame, announcement, control, hash and discovery code, and
// builders that write discovery messages field for field as the node and the
// core do). gecko_conformance_generate writes them to vectors/ once;
// gecko_conformance_tests checks that the code still writes exactly the
// committed bytes and reads them back to the values index.json states, and
// that a live node and a live core send what the vectors show.

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "gecko/wire/discovery.hpp"

namespace gecko::conformance {

using Bytes = std::vector<std::uint8_t>;
using Json = nlohmann::ordered_json;

// ---- the fixed values the vectors are made of ------------------------------------------

inline constexpr const char* key = "dalek";
inline constexpr const char* topic = "chatter";
inline constexpr const char* latched_topic = "mode";
inline constexpr const char* service = "add";
inline constexpr const char* string_type = "gecko.msgs.String";
inline constexpr const char* request_type = "examples.AddRequest";
inline constexpr const char* reply_type = "examples.AddReply";
inline constexpr const char* service_type = "examples.AddRequest->examples.AddReply";

inline constexpr std::uint64_t publisher_id = 0x0102030405060708ull;   // talker's publisher of "chatter"
inline constexpr std::uint64_t server_id = 0x2122232425262728ull;      // talker's server of "add"
inline constexpr std::uint64_t subscriber_id = 0x1112131415161718ull;  // listener's subscriber of "chatter"
inline constexpr std::uint64_t client_id = 0x3132333435363738ull;      // listener's client of "add"
inline constexpr std::uint64_t recorder_id = 0x7172737475767778ull;    // a key-wide subscriber
inline constexpr std::uint64_t typed_publisher_id = 0x0102030405060709ull;  // talker's typed publisher of "chatter"
// Two topic names whose channel ids collide (fnv1a32 of both is 0x2dab3b7c).
inline constexpr const char* colliding_topic = "arm/joint5676";
inline constexpr const char* collided_topic = "arm/joint217000";
inline constexpr std::uint64_t talker_session = 0x4142434445464748ull;
inline constexpr std::uint64_t talker_secret = 0x5152535455565758ull;
inline constexpr std::uint64_t listener_session = 0x4a4b4c4d4e4f5051ull;
inline constexpr std::uint64_t listener_secret = 0x5a5b5c5d5e5f6061ull;
inline constexpr std::uint64_t core_instance = 0x6162636465666768ull;
inline constexpr std::int64_t send_time_ns = 1700000000123456789;

// ---- one vector ----------------------------------------------------------------------------

struct Vector {
    std::string name;  ///< "frame.plain"
    std::string file;  ///< "frames/plain.hex", relative to the vectors directory
    std::string what;  ///< one sentence
    Bytes bytes;
    Json fields;       ///< what the bytes hold, field by field
};

/// Every byte vector, in the order of index.json.
std::vector<Vector> byte_vectors();
/// The hash section of index.json (FNV-1a, channels, type hashes, entity digests).
Json hash_vectors();
/// schemas.json: every gecko.msgs type (and the example service's), field by field.
Json schemas();
/// docs/MESSAGES.md: the fields of every type of schemas(), as tables.
std::string messages_markdown();
/// index.json: the conventions, the hashes and every byte vector's fields.
Json index(const std::vector<Vector>& vectors);

/// 32 bytes per line, lowercase, newline-terminated.
std::string to_hex_file(const Bytes& bytes);
/// Hex digits to bytes; whitespace is ignored. Throws std::invalid_argument otherwise.
Bytes from_hex(const std::string& text);
/// A msgpack value as JSON (index.json's conventions: bin as {"bin": hex}).
Json msgpack_to_json(const std::uint8_t* data, std::size_t size);
/// index.json or schemas.json as committed: 2-space indentation, final newline.
std::string dump(const Json& json);

// ---- discovery messages, written as the node and the core write them ------------------------

struct HelloFields {
    std::uint64_t session = talker_session;
    std::uint64_t secret = talker_secret;
    std::string key = conformance::key;
    std::string node = "talker";
    std::string host = "robot1";
    std::string host_id = "0c9a5b1e-7d2f-4c1a-9e3b-5f6a7b8c9d0e/mnt:[4026531841]";
    std::int32_t pid = 4242;
    std::string pid_ns = "pid:[4026531836]";
    std::int64_t lease_ms = 3000;
    std::vector<std::uint64_t> ids;
    std::vector<std::string> locators;
};
/// The talker's fields (host, locators...), reused by the peer maps and list answers.
HelloFields talker();
HelloFields listener();

Bytes query(const std::string& key, const std::string& node, const std::string& host, std::int32_t pid);
Bytes hello(const HelloFields& h);
Bytes add(std::uint64_t session, std::uint64_t secret, const discovery::Registration& r);
/// talker's publisher of "chatter" as a typed publisher registers it: with the schema of gecko.msgs.String.
discovery::Registration typed_publisher_registration();
/// A recorder's key-wide subscriber of "arm1/*" (any type).
discovery::Registration key_wide_registration();
/// The directory's entry of "chatter" with talker's publisher and listener's subscriber registered,
/// and (`publisher` false) after the publisher left.
discovery::ChannelEntry chatter_entry(bool publisher);
discovery::ChannelEntry add_entry();
Bytes remove(std::uint64_t session, std::uint64_t secret, std::uint64_t id);
Bytes hb(std::uint64_t session, std::uint64_t secret, const std::vector<std::uint64_t>& ids);
/// `links`: the sessions the node receives from, with each link's transport ("ipc", "shm", ...).
Bytes stats(std::uint64_t session, std::uint64_t secret, const std::vector<discovery::TopicStats>& stats,
            const std::vector<std::pair<std::uint64_t, std::string>>& links);
Bytes session_only(const char* type, std::uint64_t session, std::uint64_t secret);  // watch_graph, bye
Bytes list(const std::string& key, std::uint64_t offset);

struct CoreFields {
    std::string key = conformance::key;
    std::uint64_t instance = core_instance;
    std::string endpoint = "tcp://0.0.0.0:41000";
    std::string host = "robot1";
    std::int32_t pid = 4000;
    std::string pid_ns = "pid:[4026531836]";
    std::int64_t lease_ms = 3000;
};
Bytes core_answer(const char* type, const CoreFields& c);  // "core" (UDP answer) or "announce"
// What the core sends to a session names it ("s"): nodes of one process may share a connection.
Bytes welcome(std::uint64_t session, const CoreFields& c, bool warm);
Bytes unknown(std::uint64_t session, std::uint64_t instance);
Bytes hb_answer(std::uint64_t session, std::uint64_t instance, const std::vector<std::uint64_t>& ids);
Bytes peers(std::uint64_t session, std::uint64_t instance, std::uint64_t watcher, bool partial,
            const std::vector<discovery::Peer>& peers, const std::vector<std::uint64_t>* gone);
Bytes graph(std::uint64_t session, std::uint64_t instance, bool appeared, const std::string& name, bool service,
            const std::string& type);
Bytes error(std::uint64_t instance, std::uint64_t id, const std::string& code, const std::string& message,
            std::uint64_t session = 0);
Bytes door_registration(const CoreFields& c);
Bytes door_ack(std::uint64_t instance);
Bytes redirect(const CoreFields& c);

/// The registrations of the story the vectors tell (talker: publisher, server;
/// listener: subscriber, client).
discovery::Registration publisher_registration();
discovery::Registration server_registration();
discovery::Registration subscriber_registration();
discovery::Registration client_registration();
/// A registration as a peer of another node (what `peers` and `list` carry).
discovery::Peer peer_of(const discovery::Registration& r, const HelloFields& node);

/// The wire form of `value` as msgpack-c packs it (smallest int forms, str8...).
template <class T>
Bytes packed(const T& value) {
    msgpack::sbuffer b;
    msgpack::pack(b, value);
    return Bytes(reinterpret_cast<const std::uint8_t*>(b.data()),
                 reinterpret_cast<const std::uint8_t*>(b.data()) + b.size());
}

}  // namespace gecko::conformance
