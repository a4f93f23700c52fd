// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file discovery.hpp
/// The discovery protocol's messages, shared by the node-side client,
/// geckocore and the tools: defaults, what an entity registration is, and
/// small msgpack helpers. Every message is one msgpack map with at least `v`
/// (protocol version, 2) and `t` (message type).
/// Unknown fields are ignored, so fields may be added without a version bump.
/// docs/DISCOVERY.md is the specification; keep both in step.

#include <gecko/wire/value.hpp>

#include <msgpack.hpp>  // the Writer packs with msgpack-c; reading is gecko::wire::Value's

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gecko::discovery {

inline constexpr int version = 2;
inline constexpr const char* default_multicast_group = "239.255.71.67";  // 239.255/16: administratively scoped ("G"=71, "C"=67)
inline constexpr std::uint16_t default_multicast_port = 7650;
inline constexpr std::uint16_t default_core_port = 7651;  // the host door (GECKO_CORE=host)
inline constexpr std::size_t max_datagram = 8192;               // larger datagrams are foreign by definition
inline constexpr std::int64_t max_zmq_message = 4 * 1024 * 1024;  // ZMQ_MAXMSGSIZE on both ends

enum class EntityKind : std::uint8_t { publisher, subscriber, server, client };

/// One entity of a node, as registered with the core.
struct Registration {
    std::uint64_t id = 0;               ///< unique per entity (random 64-bit, chosen by the node)
    EntityKind kind = EntityKind::publisher;
    std::string topic;                  ///< topic or service name
    std::string type_name;              ///< "gecko.msgs.Imu"; services: "<request type>-><reply type>"
    bool latched = false;               ///< a publisher that replays its last message to late subscribers
    /// The schema of `type_name` as a producer declares it (schema.hpp's
    /// msgpack map, encoded; a service's holds its request and reply
    /// types); empty: none. Travels in `add` only, not in peer maps.
    std::string schema;
    /// A key-wide subscriber (kind subscriber, topic "*"): it watches every
    /// publisher of the key whose topic matches one of `topic_filter` and
    /// whose type matches one of `type_filter` (names or globs; empty: any).
    bool wildcard = false;
    std::vector<std::string> topic_filter, type_filter;
};

/// A registration seen from elsewhere, with where its node lives.
struct Peer {
    Registration reg;
    std::string node;                   ///< node name
    std::uint64_t session = 0;          ///< the node's session
    std::string host;                   ///< gethostname() of the node's host
    std::string host_id;                ///< net::host_id() of the node
    std::int32_t pid = 0;
    std::string pid_ns;                 ///< readlink /proc/self/ns/pid of the node
    std::vector<std::string> locators;  ///< where the node's out-ports are reached
    /// The fingerprint of the secret its listening sockets use, in a secured
    /// key ("" if it sent none): during a rotation, the server key a
    /// connecting node expects (docs/SECURITY.md §9).
    std::string fingerprint;
};

/// Per-entity figures a node reports to the core every few seconds.
struct TopicStats {
    std::uint64_t id = 0;          ///< the entity's registration id
    double messages_per_s = 0;
    double bytes_per_s = 0;
    std::uint64_t drops = 0;
    std::int64_t latency_ns = -1;  ///< -1 = unknown
    std::uint64_t unheard = 0;     ///< publishers: sent while nobody subscribed
};

/// The digest of a set of entity ids that heartbeats carry (docs/DISCOVERY.md §2).
std::uint64_t entity_digest(const std::vector<std::uint64_t>& ids) noexcept;
/// What one id adds to the digest, or removes from it (by xor): for a
/// digest kept up to date as entities come and go.
std::uint64_t entity_digest_term(std::uint64_t id) noexcept;

const char* to_string(EntityKind kind) noexcept;
std::optional<EntityKind> kind_from_string(std::string_view text) noexcept;
/// publisher<->subscriber, server<->client: the kind whose entities a watcher wants.
EntityKind producer_kind(EntityKind kind) noexcept;
bool is_producer(EntityKind kind) noexcept;

// ---- reading -----------------------------------------------------------------

// Fields are looked up by name in a map; each getter gives an empty optional
// when `obj` is not a map, lacks the field, or holds a value of another type.

/// The value of field `key` of the map `obj`.
std::optional<wire::Value> find(const wire::Value& obj, std::string_view key) noexcept;
std::optional<std::string> get_str(const wire::Value& obj, std::string_view key);
/// An int >= 0.
std::optional<std::uint64_t> get_u64(const wire::Value& obj, std::string_view key) noexcept;
/// An int that fits an int64.
std::optional<std::int64_t> get_i64(const wire::Value& obj, std::string_view key) noexcept;
/// Any int, or a finite float.
std::optional<double> get_f64(const wire::Value& obj, std::string_view key) noexcept;
bool get_bool(const wire::Value& obj, std::string_view key, bool fallback) noexcept;
/// An array of strings; nullopt if present but not an array of strings, empty if absent or nil.
std::optional<std::vector<std::string>> get_str_array(const wire::Value& obj, std::string_view key);

/// One decoded message, with a copy of its bytes (copies of a Message share
/// them). Checked whole by gecko::wire::Value: well-formed, every length
/// within the input, nested at most wire::Reader::max_depth deep.
class Message {
public:
    /// Never throws: malformed input gives nullopt and, in `why`, the reason.
    static std::optional<Message> parse(const char* data, std::size_t size, std::string* why);
    const std::string& type() const noexcept { return type_; }
    /// The message's map.
    const wire::Value& root() const noexcept { return root_; }

private:
    std::shared_ptr<const std::vector<std::uint8_t>> bytes_;  // what root_ views
    wire::Value root_;
    std::string type_;
};

// ---- writing -----------------------------------------------------------------

/// Builds one message: `Writer w("hello", 5); w.kv("key", k); ...` where 5 is
/// the number of fields after `v` and `t` (msgpack maps are length-prefixed).
class Writer {
public:
    Writer(std::string_view type, std::uint32_t fields) : buf_(std::make_unique<msgpack::sbuffer>()), pk_(*buf_) {
        pk_.pack_map(fields + 2);
        kv("v", version);
        kv("t", type);
    }
    // Movable (a message built by a function): the packer follows the buffer.
    Writer(Writer&& other) noexcept : buf_(std::move(other.buf_)), pk_(*buf_) {}
    Writer& operator=(Writer&&) = delete;
    Writer(const Writer&) = delete;
    Writer& operator=(const Writer&) = delete;

    template <typename T>
    void kv(std::string_view key, const T& value) {
        pk_.pack(key);
        pk_.pack(value);
    }
    void key(std::string_view key) { pk_.pack(key); }
    /// Appends bytes that are already msgpack (a value built apart).
    void append_raw(const char* data, std::size_t size) { buf_->write(data, size); }
    msgpack::packer<msgpack::sbuffer>& packer() noexcept { return pk_; }
    const char* data() const noexcept { return buf_->data(); }
    std::size_t size() const noexcept { return buf_->size(); }
    std::string str() const { return std::string(buf_->data(), buf_->size()); }

private:
    std::unique_ptr<msgpack::sbuffer> buf_;
    msgpack::packer<msgpack::sbuffer> pk_;
};

/// The `add` message of session `session` for `r` (docs/DISCOVERY.md §2.4):
/// its five registration fields, then `schema`, `wildcard` and `filter`
/// when `r` has them.
Writer add_message(std::uint64_t session, std::uint64_t secret, const Registration& r);

// Structured values shared by several messages.
void pack_registration_fields(msgpack::packer<msgpack::sbuffer>& pk, const Registration& r);  // 5 fields: id kind topic type latched
std::optional<Registration> read_registration(const wire::Value& obj);
inline constexpr std::uint32_t registration_fields = 5;
void pack_peer(msgpack::packer<msgpack::sbuffer>& pk, const Peer& p);  // map of 12 fields
std::optional<Peer> read_peer(const wire::Value& obj);
void pack_stats(msgpack::packer<msgpack::sbuffer>& pk, const TopicStats& s);  // map of 6 fields
std::optional<TopicStats> read_stats(const wire::Value& obj);

/// One topic or service of the key as the core's channel directory lists it
/// (docs/DISCOVERY.md §4.1).
struct ChannelEntry {
    struct Producer {
        std::uint64_t id = 0;
        std::string node;
        std::string host;
        std::string type_name;
        bool latched = false;
    };
    std::string name;
    bool service = false;
    std::uint64_t channel = 0;     ///< the topic's channel id (PROTOCOL.md §1); 0 for a service
    std::string type_name;         ///< its first producer's type, else its first consumer's ("" if neither declares one)
    std::uint64_t type_hash = 0;   ///< fnv1a64(type_name); 0 when type_name is ""
    std::string schema;            ///< the schema declared for type_name (encoded msgpack map); "": none
    std::vector<Producer> producers;  ///< publishers (servers), in registration order
};
/// Appends `e` to `out` as a map of 7 fields (its schema as the map it is).
void pack_channel_entry(msgpack::sbuffer& out, const ChannelEntry& e);
/// Nullopt when `name` is missing or a field has another type.
std::optional<ChannelEntry> read_channel_entry(const wire::Value& obj);
/// A `directory` message to session `session` (docs/DISCOVERY.md §4.1):
/// `count` entries already packed into `entries`, and the (service, name)
/// of those `gone`.
Writer directory_message(std::uint64_t session, std::uint64_t instance, bool partial, const msgpack::sbuffer& entries,
                         std::uint32_t count, const std::vector<std::pair<bool, std::string>>& gone);

}  // namespace gecko::discovery
