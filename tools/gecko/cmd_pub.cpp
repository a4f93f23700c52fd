// SPDX-License-Identifier: Apache-2.0
// gecko pub TOPIC --type NAME 'JSON': publishes a message written as JSON,
// converted to msgpack (objects become maps with field names, integers stay
// integers, other numbers float64) and sent raw with the given type name.
// For the gecko.msgs types it knows, it first checks the JSON against the
// type's fields, so that a misspelled field is an error rather than a
// message of defaults.
#include <array>
#include <cstdio>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <gecko/msgs/all.hpp>
#include <gecko/msgs/click.hpp>

#include <gecko/node.hpp>
#include <gecko/signals.hpp>
#include <gecko/time.hpp>

#include "cli.hpp"
#include "commands.hpp"
#include "msgpack_json.hpp"
#include "query.hpp"

namespace gecko::tools {
namespace {

// ---- checking JSON (as msgpack) against a known message type ----

template <class T, class = void>
struct has_fields : std::false_type {};
template <class T>
struct has_fields<T, std::void_t<decltype(T::gecko_field_names)>> : std::true_type {};

template <class T>
void check_value(const msgpack::object& o, const std::string& path, const char* type);

template <class T>
void check_elements(const msgpack::object& o, const std::string& path, const char* type) {
    if (o.type != msgpack::type::ARRAY) return;  // a wrong kind of value: decode names it
    for (std::uint32_t i = 0; i < o.via.array.size; ++i)
        check_value<T>(o.via.array.ptr[i], path + "[" + std::to_string(i) + "]", type);
}

template <class M, std::size_t... I>
void check_field([[maybe_unused]] const msgpack::object& value, [[maybe_unused]] std::size_t index,
                 [[maybe_unused]] const std::string& path, [[maybe_unused]] const char* type,
                 std::index_sequence<I...>) {  // unused for a message without fields (Empty)
    using Fields = decltype(std::declval<M&>().gecko_fields());
    ((index == I ? check_value<std::remove_reference_t<std::tuple_element_t<I, Fields>>>(value, path, type) : void()),
     ...);
}

// Throws UsageError for a map key that is not a field of M (or of a nested message).
template <class M>
void check_message(const msgpack::object& o, const std::string& path, const char* type) {
    if (o.type != msgpack::type::MAP) return;
    constexpr auto& names = M::gecko_field_names;
    for (std::uint32_t k = 0; k < o.via.map.size; ++k) {
        const auto& kv = o.via.map.ptr[k];
        const std::string key = kv.key.type == msgpack::type::STR ? std::string(kv.key.via.str.ptr, kv.key.via.str.size)
                                                                  : to_json(kv.key);
        std::size_t index = 0;
        while (index < names.size() && names[index] != key) ++index;
        const std::string where = path.empty() ? key : path + "." + key;
        if (index == names.size()) {
            std::string valid;
            for (const auto& n : names) valid += (valid.empty() ? "" : ", ") + std::string(n);
            throw UsageError(std::string(type) + " has no field '" + where + "'" +
                             (path.empty() ? "" : " (in '" + path + "')") + "; its fields are: " +
                             (valid.empty() ? "(none)" : valid));
        }
        check_field<M>(kv.val, index, where, type, std::make_index_sequence<names.size()>{});
    }
}

template <class T>
struct is_vector : std::false_type {};
template <class U, class A>
struct is_vector<std::vector<U, A>> : std::true_type {};
template <class T>
struct is_array : std::false_type {};
template <class U, std::size_t N>
struct is_array<std::array<U, N>> : std::true_type {};
template <class T>
struct is_string_map : std::false_type {};
template <class U>
struct is_string_map<std::map<std::string, U>> : std::true_type {};
template <class T>
struct is_optional : std::false_type {};
template <class U>
struct is_optional<std::optional<U>> : std::true_type {};

template <class T>
void check_value(const msgpack::object& o, const std::string& path, const char* type) {
    if constexpr (has_fields<T>::value) {
        check_message<T>(o, path, type);
    } else if constexpr (is_vector<T>::value || is_array<T>::value) {
        check_elements<typename T::value_type>(o, path, type);
    } else if constexpr (is_optional<T>::value) {
        check_value<typename T::value_type>(o, path, type);
    } else if constexpr (is_string_map<T>::value) {
        if (o.type != msgpack::type::MAP) return;
        for (std::uint32_t k = 0; k < o.via.map.size; ++k) {
            const auto& kv = o.via.map.ptr[k];
            const std::string key = kv.key.type == msgpack::type::STR
                                        ? std::string(kv.key.via.str.ptr, kv.key.via.str.size)
                                        : to_json(kv.key);
            check_value<typename T::mapped_type>(kv.val, path + "." + key, type);
        }
    }
}

// Field names first (the likely mistake, with the list of valid ones), then
// the value types, by decoding as the subscribers will.
template <class M>
void check_payload(const std::vector<std::uint8_t>& payload) {
    const auto handle = parse_msgpack(payload.data(), payload.size());
    if (handle.get().type != msgpack::type::MAP)
        throw UsageError(std::string(M::type_name) + " is written as a JSON object, e.g. " +
                         to_json(msgpack::object(M{}, *handle.zone())));
    check_message<M>(handle.get(), "", M::type_name);
    try {
        (void)msgs::decode<M>(payload.data(), payload.size());
    } catch (const msgpack::type_error& e) {
        throw UsageError(e.what());
    }
}

template <class... M>
struct TypeList {};

using KnownTypes = TypeList<msgs::String, msgs::Float64, msgs::Int64, msgs::Bytes, msgs::Empty, msgs::Point2,
                            msgs::Vector3, msgs::Quaternion, msgs::Pose, msgs::Twist, msgs::Wrench, msgs::Imu,
                            msgs::Lidar, msgs::JointState, msgs::Image, msgs::Odometry, msgs::click::HandshakeInit,
                            msgs::click::SensorRequest, msgs::click::Control, msgs::click::Handshake,
                            msgs::click::Sensor, msgs::click::Reset, msgs::click::Error>;

// Checks `payload` if `type` is a gecko.msgs type; other types are sent as written.
template <class... M>
void check_if_known(const std::string& type, const std::vector<std::uint8_t>& payload, TypeList<M...>) {
    ((type == M::type_name ? check_payload<M>(payload) : void()), ...);
}

// Every type the core has for `topic` (publishers' and subscribers').
std::set<std::string> declared_types(const detail::QueryResult& r, const std::string& topic) {
    std::set<std::string> types;
    if (const auto* t = r.find(topic)) {
        for (const auto& p : t->producers) types.insert(p.peer.reg.type_name);
        for (const auto& c : t->consumers) types.insert(c.peer.reg.type_name);
        if (!t->type.empty()) types.insert(t->type);
    }
    types.erase("");
    return types;
}

}  // namespace

int run_pub(const Args& args) {
    Connection connection("gecko_pub");
    std::string topic, json, type;
    long count = -1;
    double rate_hz = 0, wait_s = 1.0;
    bool force = false;
    Parser parser("pub", "TOPIC 'JSON' [--type NAME] [options]",
                  "Publishes JSON as a message of TOPIC: objects become msgpack maps with field names,\n"
                  "integers stay integers, other numbers are float64, {\"$bin\": \"<base64>\"} is bytes.\n"
                  "Without --rate, publishes once; with --rate, until --count messages or Ctrl-C.\n"
                  "Before the first message it waits (up to --wait) for a subscriber to connect, so\n"
                  "that a single message is not lost.\n\n"
                  "Example: gecko pub chatter --type gecko.msgs.String '{\"data\": \"hello\"}'");
    parser.positional("TOPIC", "the topic to publish on", topic)
        .positional("JSON", "the message, e.g. '{\"data\": 1.5}'", json)
        .option("--type", "NAME", "the type to declare, e.g. gecko.msgs.String (default: the topic's type, if the core knows it)", type)
        .option("--rate", "HZ", "publish repeatedly at HZ messages per second (default 1 with --count above 1)", rate_hz, 1e-3, 1e6)
        .option("--count", "N", "publish N messages (default 1 without --rate, unlimited with it)", count, 1, 1L << 40)
        .option("--wait", "SECONDS", "wait at most this long for a first subscriber (default 1)", wait_s, 0, 3600)
        .flag("--force", "publish even if --type differs from the type the topic already has", force)
        .connection(connection);
    if (!parser.parse(args)) return exit_ok;
    if (count < 0) count = rate_hz > 0 ? 0 : 1;  // 0: unlimited
    if (rate_hz <= 0) rate_hz = 1.0;

    const auto payload = json_to_msgpack(json);  // bad JSON is a usage error: check it before any network
    if (!type.empty()) check_if_known(type, payload, KnownTypes{});  // also a usage error: before any network
    if (type.empty()) {
        const auto r = query(connection);
        const auto* t = r.find(topic);
        if (!t || t->type.empty())
            throw UsageError("--type NAME is needed: the core of key '" + r.key + "' does not know topic '" + topic + "'");
        type = t->type;
        check_if_known(type, payload, KnownTypes{});
    } else if (!force && connection.node.discovery) {
        // Subscribers of another type would drop every message: say so instead.
        const auto types = declared_types(query(connection), topic);
        if (!types.empty() && (types.size() > 1 || *types.begin() != type)) {
            std::vector<std::string> others;
            for (const auto& t : types)
                if (t != type) others.push_back(t);
            std::string listed;
            for (const auto& t : others) listed += (listed.empty() ? "" : ", ") + t;
            std::fprintf(stderr,
                         "gecko pub: topic '%s' has type %s, not %s: its subscribers would drop these messages "
                         "(use --type %s, or --force to publish anyway)\n",
                         topic.c_str(), listed.c_str(), type.c_str(), others.front().c_str());
            return exit_failure;
        }
    }

    install_signal_handlers();
    Node node(connection.node);
    PublisherOptions options;
    options.linger = std::chrono::milliseconds(2000);  // the last message still goes out as the tool exits
    auto publisher = node.raw_publisher(topic, type, options);
    const bool heard = publisher.wait_for_subscribers(1, std::chrono::milliseconds(static_cast<long>(wait_s * 1000)));
    if (!heard && wait_s > 0)
        std::fprintf(stderr, "gecko pub: no subscriber of '%s' connected within %g s; publishing anyway\n", topic.c_str(), wait_s);
    const std::size_t subscribers = publisher.subscriber_count();  // when publishing starts (some may leave after)

    Rate rate(rate_hz);
    long sent = 0;
    for (; ok() && (count == 0 || sent < count); ++sent) {
        if (sent > 0) rate.sleep();
        if (!ok()) break;
        publisher.publish(payload.data(), payload.size());
    }
    std::printf("published %ld message%s of %zu bytes on '%s' (%s) to %zu subscriber%s\n", sent, sent == 1 ? "" : "s",
                payload.size(), topic.c_str(), type.c_str(), subscribers, subscribers == 1 ? "" : "s");
    return exit_ok;
}

}  // namespace gecko::tools
