// SPDX-License-Identifier: Apache-2.0
// The gecko.msgs types, walked at compile time through GECKO_MSG_FIELDS:
// their shapes, and checks of msgpack against them.
#include "known_types.hpp"

#include <array>
#include <map>
#include <optional>
#include <tuple>
#include <type_traits>
#include <utility>

#include <gecko/msgs/all.hpp>
#include <gecko/msgs/click.hpp>
#include <gecko/msgs/sim.hpp>

#include <gecko/buffer.hpp>
#include <gecko/wire/json.hpp>
#include <gecko/wire/value.hpp>

#include "cli.hpp"

namespace gecko::tools {
namespace {

template <class... M>
struct TypeList {};

using KnownTypes = TypeList<msgs::String, msgs::Float64, msgs::Int64, msgs::Bytes, msgs::Empty, msgs::Point2,
                            msgs::Vector3, msgs::Quaternion, msgs::Pose, msgs::Twist, msgs::Wrench, msgs::Imu,
                            msgs::Lidar, msgs::JointState, msgs::Image, msgs::Odometry, msgs::click::HandshakeInit,
                            msgs::click::SensorRequest, msgs::click::Control, msgs::click::Handshake,
                            msgs::click::Sensor, msgs::click::Reset, msgs::click::Error, msgs::sim::Status,
                            msgs::sim::ControlRequest, msgs::sim::ControlReply>;

// The codec's own type families (gecko/message.hpp).
template <class T>
using has_fields = wire::has_fields<T>;
using wire::detail::is_optional;
using wire::detail::is_string_map;
using wire::detail::is_vector;
template <class T>
using is_array = wire::detail::is_std_array<T>;

using wire::detail::field_t;

// ---- shapes ----

// Nested Click structs travel inside messages but have no type name of their own.
template <class T>
std::string message_name() {
    if constexpr (msgs::is_message_v<T>) return T::type_name;
    else if constexpr (std::is_same_v<T, msgs::click::ControlObject>) return "gecko.msgs.click.ControlObject";
    else if constexpr (std::is_same_v<T, msgs::click::HandshakeObject>) return "gecko.msgs.click.HandshakeObject";
    else if constexpr (std::is_same_v<T, msgs::click::SensorObject>) return "gecko.msgs.click.SensorObject";
    else if constexpr (std::is_same_v<T, msgs::click::SensorValue>) return "gecko.msgs.click.SensorValue";
    else return "map";
}

template <class T>
Shape shape_of();

template <class M, std::size_t... I>
void add_fields(Shape& s, std::index_sequence<I...>) {
    (s.fields.emplace_back(std::string(M::gecko_field_names[I]), shape_of<field_t<M, I>>()), ...);
}

template <class T>
Shape shape_of() {
    Shape s;
    if constexpr (has_fields<T>::value) {
        s.kind = Shape::Kind::message;
        s.type = message_name<T>();
        add_fields<T>(s, std::make_index_sequence<T::gecko_field_names.size()>{});
    } else if constexpr (std::is_same_v<T, std::vector<std::uint8_t>>) {
        s.type = "bytes";
    } else if constexpr (is_vector<T>::value || is_array<T>::value) {
        s.kind = Shape::Kind::array;
        s.item.push_back(shape_of<typename T::value_type>());
        if constexpr (is_array<T>::value)
            s.type = s.item.front().type + "[" + std::to_string(std::tuple_size<T>::value) + "]";
        else
            s.type = s.item.front().type + "[]";
    } else if constexpr (is_string_map<T>::value) {
        s.kind = Shape::Kind::map;
        s.item.push_back(shape_of<typename T::mapped_type>());
        s.type = "map<string, " + s.item.front().type + ">";
    } else if constexpr (is_optional<T>::value) {
        s = shape_of<typename T::value_type>();
        s.type += " or nil";
    } else if constexpr (std::is_same_v<T, bool>) {
        s.type = "bool";
    } else if constexpr (std::is_integral_v<T>) {
        s.type = std::string(std::is_signed_v<T> ? "int" : "uint") + std::to_string(sizeof(T) * 8);
    } else if constexpr (std::is_same_v<T, float>) {
        s.type = "float32";
    } else if constexpr (std::is_same_v<T, double>) {
        s.type = "float64";
    } else if constexpr (std::is_same_v<T, std::string>) {
        s.type = "string";
    } else if constexpr (std::is_same_v<T, msgs::click::ValueType>) {
        s.type = "string (a Click ValueType: ";
        for (std::size_t i = 0; i < msgs::click::all_value_types.size(); ++i)
            s.type += std::string(i ? ", " : "") + msgs::click::to_string(msgs::click::all_value_types[i]);
        s.type += ")";
    } else if constexpr (std::is_same_v<T, msgs::click::Direction>) {
        s.type = "string (request or answer)";
    } else if constexpr (std::is_same_v<T, msgs::sim::SimulationState>) {
        s.type = "string (running, paused, resetting or over)";
    } else {
        static_assert(sizeof(T) == 0, "a field type gecko type cannot describe");
    }
    return s;
}

// ---- checking the user's JSON (as msgpack) ----

using wire::Type;
using wire::Value;

template <class T>
void check_value(const Value& v, const std::string& path, const char* type);

template <class M, std::size_t... I>
void check_field([[maybe_unused]] const Value& value, [[maybe_unused]] std::size_t index,
                 [[maybe_unused]] const std::string& path, [[maybe_unused]] const char* type,
                 std::index_sequence<I...>) {  // unused for a message without fields (Empty)
    ((index == I ? check_value<field_t<M, I>>(value, path, type) : void()), ...);
}

std::string key_text(const Value& key) {
    const auto text = key.as_str();
    return text ? std::string(*text) : wire::to_json(key);
}

// Throws UsageError for a map key that is not a field of M (or of a nested message).
template <class M>
void check_message(const Value& v, const std::string& path, const char* type) {
    // A wrong kind of value (not a map) has no entries: decode names it.
    constexpr auto& names = M::gecko_field_names;
    for (const auto& [k, value] : v.entries()) {
        const std::string key = key_text(k);
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
        check_field<M>(value, index, where, type, std::make_index_sequence<names.size()>{});
    }
}

template <class T>
void check_value(const Value& v, const std::string& path, const char* type) {
    if constexpr (has_fields<T>::value) {
        check_message<T>(v, path, type);
    } else if constexpr (is_vector<T>::value || is_array<T>::value) {
        std::size_t i = 0;
        for (const Value& item : v.items()) check_value<typename T::value_type>(item, path + "[" + std::to_string(i++) + "]", type);
    } else if constexpr (is_optional<T>::value) {
        check_value<typename T::value_type>(v, path, type);
    } else if constexpr (is_string_map<T>::value) {
        for (const auto& [key, item] : v.entries()) check_value<typename T::mapped_type>(item, path + "." + key_text(key), type);
    }
}

template <class M>
void check_payload(const std::vector<std::uint8_t>& payload) {
    const Value message = Value::parse(payload.data(), payload.size());
    if (message.type() != Type::map) {
        Buffer example;
        wire::encode(example, M{});
        throw UsageError(std::string(M::type_name) + " is written as a JSON object, e.g. " +
                         wire::msgpack_to_json(example.data(), example.size()));
    }
    check_message<M>(message, "", M::type_name);
    try {
        (void)msgs::decode<M>(payload.data(), payload.size());
    } catch (const std::exception& e) {  // a field of the wrong kind (gecko::wire::DecodeError)
        throw UsageError(e.what());
    }
}

template <class M>
std::string decode_error(const std::uint8_t* payload, std::size_t size) {
    try {
        (void)msgs::decode<M>(payload, size);
        return "";
    } catch (const std::exception& e) {
        return e.what();
    }
}

// ---- the registry ----

struct Known {
    Shape shape;
    void (*check)(const std::vector<std::uint8_t>&);
    std::string (*violation)(const std::uint8_t*, std::size_t);
};

template <class... M>
std::map<std::string, Known> make_registry(TypeList<M...>) {
    std::map<std::string, Known> r;
    (r.emplace(M::type_name, Known{shape_of<M>(), &check_payload<M>, &decode_error<M>}), ...);
    return r;
}

const std::map<std::string, Known>& registry() {
    static const auto r = make_registry(KnownTypes{});
    return r;
}

// Types learned from the key's directory (learn_schemas), with their shapes.
struct Learned {
    std::shared_ptr<const wire::Schema> schema;
    Shape shape;
};
std::map<std::string, Learned>& learned() {
    static std::map<std::string, Learned> l;
    return l;
}

const Learned* find_learned(const std::string& type) {
    const auto it = learned().find(type);
    return it == learned().end() ? nullptr : &it->second;
}

}  // namespace

void learn_schemas(const Graph& graph) {
    for (const auto& t : graph.topics) {
        if (!t.schema) continue;
        for (const auto& m : t.schema->types())
            if (!registry().count(m.type_name) && !learned().count(m.type_name))
                if (auto shape = shape_of_schema(*t.schema, m.type_name))
                    learned().emplace(m.type_name, Learned{t.schema, std::move(*shape)});
    }
}

std::vector<std::string> known_type_names() {
    std::vector<std::string> names;
    for (const auto& [name, known] : registry()) names.push_back(name);
    return names;
}

const Shape* known_shape(const std::string& type) {
    const auto it = registry().find(type);
    if (it != registry().end()) return &it->second.shape;
    const Learned* l = find_learned(type);
    return l ? &l->shape : nullptr;
}

void check_known(const std::string& type, const std::vector<std::uint8_t>& payload) {
    if (const auto it = registry().find(type); it != registry().end()) return it->second.check(payload);
    const Learned* l = find_learned(type);
    if (!l) return;
    if (wire::Value::parse(payload.data(), payload.size()).type() != wire::Type::map)
        throw UsageError(type + " is written as a JSON object with the fields " + l->shape.field_list());
    if (auto why = l->schema->check(type, payload.data(), payload.size(), wire::Schema::Check::strict); !why.empty())
        throw UsageError(why);
}

std::string schema_violation(const std::string& type, const std::uint8_t* payload, std::size_t size) {
    const auto kind = wire::Value::parse(payload, size).type();
    if (kind != wire::Type::map) return std::string("not a msgpack map (a message) but a msgpack ") + wire::to_string(kind);
    if (const auto it = registry().find(type); it != registry().end()) return it->second.violation(payload, size);
    const Learned* l = find_learned(type);
    return l ? l->schema->check(type, payload, size, wire::Schema::Check::as_receiver) : "";
}

}  // namespace gecko::tools
