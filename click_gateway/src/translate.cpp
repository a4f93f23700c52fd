// SPDX-License-Identifier: Apache-2.0
#include "gecko/click_gateway/translate.hpp"

#include "click.pb.h"
#include "utf8.hpp"
#include "wire_check.hpp"

#include <google/protobuf/descriptor.h>

#include <climits>
#include <exception>
#include <memory>
#include <type_traits>
#include <utility>

namespace gecko::click {

namespace {

namespace pb = ::click::protobuf;
namespace gp = ::google::protobuf;
using detail::sanitize_utf8;
using detail::valid_utf8;

// Internal: thrown by the helpers below, caught at every API function, so that
// the conversion code reads straight and nothing escapes the API.
struct Failure {
    std::string reason;
};

[[noreturn]] void fail(std::string reason) { throw Failure{std::move(reason)}; }

std::string in_quotes(std::string_view s) { return "'" + std::string(s) + "'"; }

void require_utf8(std::string_view s, const std::string& what) {
    if (!valid_utf8(s)) fail(what + " is not valid UTF-8 (Click strings must be)");
}

// ---- Strict parsing -----------------------------------------------------------

template <class Pb>
Pb parse_strict(std::string_view bytes, const DecodeLimits& limits) {
    if (std::optional<std::string> reason = detail::check_wire(bytes, *Pb::descriptor(), limits)) fail(*reason);
    Pb m;
    const std::string& name = Pb::descriptor()->name();
    if (!m.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
        fail("not a valid " + name + " (malformed or truncated bytes, or a string that is not UTF-8)");
    }
    return m;
}

// ---- Value types ---------------------------------------------------------------

mc::ValueType value_type_from_pb(int number, const std::string& where, bool allow_multiple = false) {
    const std::optional<mc::ValueType> t = mc::value_type_from_number(number);
    if (!t) fail(where + ": unknown Click value type " + std::to_string(number));
    if (*t == mc::ValueType::multiple && !allow_multiple) fail(where + ": Multiple is only valid as the scene-wide controlType");
    return *t;
}

template <class Repeated>
std::vector<mc::ValueType> value_types_from_pb(const Repeated& numbers, const std::string& where) {
    std::vector<mc::ValueType> out;
    out.reserve(static_cast<std::size_t>(numbers.size()));
    int i = 0;
    for (int n : numbers) out.push_back(value_type_from_pb(n, where + "[" + std::to_string(i++) + "]"));
    return out;
}

pb::ValueType value_type_to_pb(mc::ValueType t, const std::string& where, bool allow_multiple = false) {
    if (!mc::value_type_from_number(static_cast<std::int64_t>(t))) {
        fail(where + ": not a Click value type (" + std::to_string(static_cast<int>(t)) + ")");
    }
    if (t == mc::ValueType::multiple && !allow_multiple) fail(where + ": Multiple is only valid as the scene-wide control_type");
    return static_cast<pb::ValueType>(static_cast<int>(t));
}

template <class Repeated>
void value_types_to_pb(const std::vector<mc::ValueType>& types, Repeated* out, const std::string& where) {
    int i = 0;
    for (mc::ValueType t : types) out->Add(value_type_to_pb(t, where + "[" + std::to_string(i++) + "]"));
}

// controlTypesInOrder is either absent (Click before it existed) or one per control.
void check_control_types_size(std::size_t controls, std::size_t types, const std::string& where) {
    if (types != 0 && types != controls) {
        fail(where + ": " + std::to_string(controls) + " controls in order but " + std::to_string(types) +
             " control types in order");
    }
}

// ---- Sensor values ---------------------------------------------------------------

std::vector<double> vec3_from_pb(const pb::SensorMessage::Vec3& v, const std::string& where) {
    if (v.arr_size() != 3) fail(where + ": a vector of " + std::to_string(v.arr_size()) + " numbers, expected 3");
    return {v.arr(0), v.arr(1), v.arr(2)};
}

void vec3_to_pb(const std::vector<double>& v, pb::SensorMessage::Vec3* out) {
    for (double x : v) out->add_arr(x);
}

mc::SensorValue sensor_value_from_pb(const pb::SensorMessage::Sensor& s, const std::string& where) {
    using S = pb::SensorMessage::Sensor;
    using T = mc::ValueType;
    switch (s.value_case()) {
        case S::kAngle: return {T::angle, {s.angle()}};
        case S::kAngularVelocity1D: return {T::angular_velocity_1d, {s.angularvelocity1d()}};
        case S::kTorque1D: return {T::torque_1d, {s.torque1d()}};
        case S::kForce1D: return {T::force_1d, {s.force1d()}};
        case S::kActivated: return {T::activated, {s.activated() ? 1.0 : 0.0}};
        case S::kPosition: return {T::position, vec3_from_pb(s.position(), where + ".position")};
        case S::kRpy: return {T::rpy, vec3_from_pb(s.rpy(), where + ".rpy")};
        case S::kAcceleration3D: return {T::acceleration_3d, vec3_from_pb(s.acceleration3d(), where + ".acceleration3d")};
        case S::kForce3D: return {T::force_3d, vec3_from_pb(s.force3d(), where + ".force3d")};
        case S::kTorque3D: return {T::torque_3d, vec3_from_pb(s.torque3d(), where + ".torque3d")};
        case S::kAngularAcceleration3D:
            return {T::angular_acceleration_3d, vec3_from_pb(s.angularacceleration3d(), where + ".angularAcceleration3d")};
        case S::kVelocity3D: return {T::velocity_3d, vec3_from_pb(s.velocity3d(), where + ".velocity3d")};
        case S::kAngularVelocity3D:
            return {T::angular_velocity_3d, vec3_from_pb(s.angularvelocity3d(), where + ".angularVelocity3d")};
        case S::VALUE_NOT_SET: break;
    }
    fail(where + ": a sensor value with no value set");
}

void sensor_value_to_pb(const mc::SensorValue& v, pb::SensorMessage::Sensor* out, const std::string& where) {
    using T = mc::ValueType;
    const std::size_t expected = mc::size_of(v.type);
    if (v.type == T::multiple || !mc::value_type_from_number(static_cast<std::int64_t>(v.type))) {
        fail(where + ": " + mc::to_string(v.type) + " is not a sensor value type");
    }
    if (v.value.size() != expected) {
        fail(where + ": a " + mc::to_string(v.type) + " value has " + std::to_string(v.value.size()) + " numbers, expected " +
             std::to_string(expected));
    }
    switch (v.type) {
        case T::angle: out->set_angle(v.value[0]); return;
        case T::angular_velocity_1d: out->set_angularvelocity1d(v.value[0]); return;
        case T::torque_1d: out->set_torque1d(v.value[0]); return;
        case T::force_1d: out->set_force1d(v.value[0]); return;
        case T::activated: out->set_activated(v.value[0] != 0.0); return;
        case T::position: vec3_to_pb(v.value, out->mutable_position()); return;
        case T::rpy: vec3_to_pb(v.value, out->mutable_rpy()); return;
        case T::acceleration_3d: vec3_to_pb(v.value, out->mutable_acceleration3d()); return;
        case T::force_3d: vec3_to_pb(v.value, out->mutable_force3d()); return;
        case T::torque_3d: vec3_to_pb(v.value, out->mutable_torque3d()); return;
        case T::angular_acceleration_3d: vec3_to_pb(v.value, out->mutable_angularacceleration3d()); return;
        case T::velocity_3d: vec3_to_pb(v.value, out->mutable_velocity3d()); return;
        case T::angular_velocity_3d: vec3_to_pb(v.value, out->mutable_angularvelocity3d()); return;
        case T::multiple: break;
    }
    fail(where + ": not a sensor value type");
}

template <class Repeated>
std::vector<mc::SensorValue> sensor_values_from_pb(const Repeated& values, const std::string& where) {
    std::vector<mc::SensorValue> out;
    out.reserve(static_cast<std::size_t>(values.size()));
    int i = 0;
    for (const auto& s : values) out.push_back(sensor_value_from_pb(s, where + "[" + std::to_string(i++) + "]"));
    return out;
}

// ---- Click protobuf -> Gecko ----------------------------------------------------------

mc::HandshakeInit from_pb(const pb::HandshakeInitMessage& m) {
    mc::HandshakeInit out;
    out.version = m.version();
    return out;
}

mc::Handshake from_pb(const pb::HandshakeMessage& m) {
    mc::Handshake out;
    out.version = m.version();
    out.control_type = value_type_from_pb(m.controltype(), "HandshakeMessage.controlType", /*allow_multiple=*/true);
    for (const auto& [name, o] : m.objects()) {
        const std::string where = "HandshakeMessage.objects[" + in_quotes(name) + "]";
        mc::HandshakeObject obj;
        obj.controls_in_order.assign(o.controlsinorder().begin(), o.controlsinorder().end());
        obj.control_types_in_order = value_types_from_pb(o.controltypesinorder(), where + ".controlTypesInOrder");
        check_control_types_size(obj.controls_in_order.size(), obj.control_types_in_order.size(), where);
        obj.joint_sensors_in_order.assign(o.jointsensorsinorder().begin(), o.jointsensorsinorder().end());
        obj.joint_sensors = value_types_from_pb(o.jointsensors(), where + ".jointSensors");
        for (const auto& [event, type] : o.controlevents()) {
            obj.control_events[event] = value_type_from_pb(type, where + ".controlEvents[" + in_quotes(event) + "]");
        }
        for (const auto& [sensor, types] : o.sensors()) {
            obj.sensors[sensor] = value_types_from_pb(types.types(), where + ".sensors[" + in_quotes(sensor) + "]");
        }
        obj.object_sensors = value_types_from_pb(o.objectsensors(), where + ".objectSensors");
        out.objects.emplace(name, std::move(obj));
    }
    if (m.has_simsettings()) out.time_step = m.simsettings().timestep();
    return out;
}

mc::Control from_pb(const pb::ControlMessage& m) {
    mc::Control out;
    for (const auto& [name, o] : m.objects()) {
        mc::ControlObject obj;
        obj.values.assign(o.values().begin(), o.values().end());
        obj.angles.assign(o.angles().begin(), o.angles().end());
        obj.angular_velocities.assign(o.angularvelocities().begin(), o.angularvelocities().end());
        obj.torques.assign(o.torques().begin(), o.torques().end());
        for (const auto& [event, on] : o.controlevents()) obj.control_events[event] = on;
        out.objects.emplace(name, std::move(obj));
    }
    if (std::optional<std::string> reason = check_control(out)) fail("ControlMessage: " + *reason);
    return out;
}

mc::Sensor from_pb(const pb::SensorMessage& m) {
    mc::Sensor out;
    for (const auto& [name, o] : m.objects()) {
        const std::string where = "SensorMessage.objects[" + in_quotes(name) + "]";
        mc::SensorObject obj;
        obj.angle_sensors.assign(o.anglesensors().begin(), o.anglesensors().end());
        obj.angular_velocity_sensors.assign(o.angularvelocitysensors().begin(), o.angularvelocitysensors().end());
        obj.torque_sensors.assign(o.torquesensors().begin(), o.torquesensors().end());
        int i = 0;
        for (const auto& f : o.forcesensors()) {
            const std::vector<double> v = vec3_from_pb(f, where + ".forceSensors[" + std::to_string(i++) + "]");
            obj.force_sensors.push_back({v[0], v[1], v[2]});
        }
        obj.object_sensors = sensor_values_from_pb(o.objectsensors(), where + ".objectSensors");
        for (const auto& [sensor, values] : o.sensors()) {
            obj.sensors[sensor] = sensor_values_from_pb(values.sensor(), where + ".sensors[" + in_quotes(sensor) + "]");
        }
        out.objects.emplace(name, std::move(obj));
    }
    if (m.has_simvars()) out.simulated_time = m.simvars().simulatedtime();
    return out;
}

// ---- Gecko -> Click protobuf ----------------------------------------------------------

template <class Pb>
std::string serialize(const Pb& m) {
    std::string out;
    if (!m.SerializeToString(&out)) fail(Pb::descriptor()->name() + ": protobuf serialization failed");
    return out;
}

void add_strings(const std::vector<std::string>& in, gp::RepeatedPtrField<std::string>* out, const std::string& where) {
    int i = 0;
    for (const std::string& s : in) {
        require_utf8(s, where + "[" + std::to_string(i++) + "]");
        out->Add()->assign(s);
    }
}

pb::HandshakeMessage to_pb(const mc::Handshake& h) {
    pb::HandshakeMessage m;
    m.set_messagetype(pb::HandshakeMessageType);
    m.set_version(static_cast<pb::Version>(h.version));
    m.set_controltype(value_type_to_pb(h.control_type, "Handshake.control_type", /*allow_multiple=*/true));
    for (const auto& [name, obj] : h.objects) {
        const std::string where = "Handshake.objects[" + in_quotes(name) + "]";
        require_utf8(name, where);
        check_control_types_size(obj.controls_in_order.size(), obj.control_types_in_order.size(), where);
        pb::HandshakeMessage::Object& o = (*m.mutable_objects())[name];
        add_strings(obj.controls_in_order, o.mutable_controlsinorder(), where + ".controls_in_order");
        value_types_to_pb(obj.control_types_in_order, o.mutable_controltypesinorder(), where + ".control_types_in_order");
        add_strings(obj.joint_sensors_in_order, o.mutable_jointsensorsinorder(), where + ".joint_sensors_in_order");
        value_types_to_pb(obj.joint_sensors, o.mutable_jointsensors(), where + ".joint_sensors");
        for (const auto& [event, type] : obj.control_events) {
            const std::string w = where + ".control_events[" + in_quotes(event) + "]";
            require_utf8(event, w);
            (*o.mutable_controlevents())[event] = value_type_to_pb(type, w);
        }
        for (const auto& [sensor, types] : obj.sensors) {
            const std::string w = where + ".sensors[" + in_quotes(sensor) + "]";
            require_utf8(sensor, w);
            value_types_to_pb(types, (*o.mutable_sensors())[sensor].mutable_types(), w);
        }
        value_types_to_pb(obj.object_sensors, o.mutable_objectsensors(), where + ".object_sensors");
    }
    if (h.time_step) m.mutable_simsettings()->set_timestep(*h.time_step);
    return m;
}

pb::ControlMessage to_pb(const mc::Control& c) {
    if (std::optional<std::string> reason = check_control(c)) fail("Control: " + *reason);
    pb::ControlMessage m;
    m.set_messagetype(pb::ControlMessageType);
    for (const auto& [name, obj] : c.objects) {
        const std::string where = "Control.objects[" + in_quotes(name) + "]";
        require_utf8(name, where);
        pb::ControlMessage::Object& o = (*m.mutable_objects())[name];
        o.mutable_values()->Add(obj.values.begin(), obj.values.end());
        o.mutable_angles()->Add(obj.angles.begin(), obj.angles.end());
        o.mutable_angularvelocities()->Add(obj.angular_velocities.begin(), obj.angular_velocities.end());
        o.mutable_torques()->Add(obj.torques.begin(), obj.torques.end());
        for (const auto& [event, on] : obj.control_events) {
            require_utf8(event, where + ".control_events[" + in_quotes(event) + "]");
            (*o.mutable_controlevents())[event] = on;
        }
    }
    return m;
}

pb::SensorMessage to_pb(const mc::Sensor& s) {
    pb::SensorMessage m;
    m.set_messagetype(pb::SensorMessageType);
    for (const auto& [name, obj] : s.objects) {
        const std::string where = "Sensor.objects[" + in_quotes(name) + "]";
        require_utf8(name, where);
        pb::SensorMessage::Object& o = (*m.mutable_objects())[name];
        o.mutable_anglesensors()->Add(obj.angle_sensors.begin(), obj.angle_sensors.end());
        o.mutable_angularvelocitysensors()->Add(obj.angular_velocity_sensors.begin(), obj.angular_velocity_sensors.end());
        o.mutable_torquesensors()->Add(obj.torque_sensors.begin(), obj.torque_sensors.end());
        for (const auto& f : obj.force_sensors) vec3_to_pb({f[0], f[1], f[2]}, o.add_forcesensors());
        int i = 0;
        for (const mc::SensorValue& v : obj.object_sensors) {
            sensor_value_to_pb(v, o.add_objectsensors(), where + ".object_sensors[" + std::to_string(i++) + "]");
        }
        for (const auto& [sensor, values] : obj.sensors) {
            const std::string w = where + ".sensors[" + in_quotes(sensor) + "]";
            require_utf8(sensor, w);
            pb::SensorMessage::Sensors& out = (*o.mutable_sensors())[sensor];
            int k = 0;
            for (const mc::SensorValue& v : values) sensor_value_to_pb(v, out.add_sensor(), w + "[" + std::to_string(k++) + "]");
        }
    }
    if (s.simulated_time) m.mutable_simvars()->set_simulatedtime(*s.simulated_time);
    return m;
}

// Runs `f`, turning a Failure or any exception into an EncodeError.
template <class F>
Encoded encode_guarded(F&& f) noexcept {
    try {
        return Encoded{std::in_place_index<0>, f()};
    } catch (const Failure& e) {
        return EncodeError{e.reason};
    } catch (const std::exception& e) {
        return EncodeError{std::string("encoding failed: ") + e.what()};
    } catch (...) {
        return EncodeError{"encoding failed"};
    }
}

template <class... Fs>
struct overloaded : Fs... {
    using Fs::operator()...;
};
template <class... Fs>
overloaded(Fs...) -> overloaded<Fs...>;

std::string join(const std::vector<std::string>& names) {
    std::string out;
    for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
    return out;
}

}  // namespace

// ---- API -----------------------------------------------------------------------------------

Decoded decode(std::string_view bytes, mc::Direction reset_error_direction, const DecodeLimits& limits) noexcept {
    try {
        if (bytes.size() > static_cast<std::size_t>(INT_MAX)) return DecodeError{"message too large for protobuf"};
        // Classify on field 1 only, read from the wire (ControlMessage's field 2
        // clashes with Message.id); then check the frame against its type's schema
        // and `limits` before protobuf builds it.
        const std::optional<int> type = detail::message_type_of(bytes);
        if (!type) {
            return DecodeError{"not a protobuf message (malformed or truncated, " + std::to_string(bytes.size()) + " bytes)"};
        }
        switch (*type) {
            case pb::HandshakeInitMessageType: return from_pb(parse_strict<pb::HandshakeInitMessage>(bytes, limits));
            case pb::HandshakeMessageType: return from_pb(parse_strict<pb::HandshakeMessage>(bytes, limits));
            case pb::SensorRequestMessageType: {
                parse_strict<pb::SensorRequestMessage>(bytes, limits);
                return mc::SensorRequest{};
            }
            case pb::ControlMessageType: return from_pb(parse_strict<pb::ControlMessage>(bytes, limits));
            case pb::SensorMessageType: return from_pb(parse_strict<pb::SensorMessage>(bytes, limits));
            case pb::ResetMessageType: {
                parse_strict<pb::ResetMessage>(bytes, limits);
                mc::Reset out;
                out.direction = reset_error_direction;
                return out;
            }
            case pb::ErrorMessageType: {
                const pb::ErrorMessage m = parse_strict<pb::ErrorMessage>(bytes, limits);
                mc::Error out;
                out.direction = reset_error_direction;
                out.code = m.error();
                out.reason = m.errormessage();
                return out;
            }
            default: break;
        }
        return DecodeError{"unknown Click message type " + std::to_string(*type)};
    } catch (const Failure& e) {
        return DecodeError{e.reason};
    } catch (const std::exception& e) {
        return DecodeError{std::string("decoding failed: ") + e.what()};
    } catch (...) {
        return DecodeError{"decoding failed"};
    }
}

Encoded encode(const mc::HandshakeInit& msg) noexcept {
    return encode_guarded([&] {
        pb::HandshakeInitMessage m;
        m.set_messagetype(pb::HandshakeInitMessageType);  // 0: not on the wire, but said
        m.set_version(static_cast<pb::Version>(msg.version));
        return serialize(m);
    });
}

Encoded encode(const mc::Handshake& msg) noexcept {
    return encode_guarded([&] { return serialize(to_pb(msg)); });
}

Encoded encode(const mc::SensorRequest&) noexcept {
    return encode_guarded([&] {
        pb::SensorRequestMessage m;
        m.set_messagetype(pb::SensorRequestMessageType);
        return serialize(m);
    });
}

Encoded encode(const mc::Control& msg) noexcept {
    return encode_guarded([&] { return serialize(to_pb(msg)); });
}

Encoded encode(const mc::Sensor& msg) noexcept {
    return encode_guarded([&] { return serialize(to_pb(msg)); });
}

Encoded encode(const mc::Reset&) noexcept {
    return encode_guarded([&] {
        pb::ResetMessage m;
        m.set_messagetype(pb::ResetMessageType);
        return serialize(m);
    });
}

Encoded encode(const mc::Error& msg) noexcept {
    return encode_guarded([&] {
        pb::ErrorMessage m;
        m.set_messagetype(pb::ErrorMessageType);
        m.set_error(static_cast<pb::ErrorType>(msg.code));
        m.set_errormessage(sanitize_utf8(msg.reason));
        return serialize(m);
    });
}

std::string error_reply(std::string_view reason) {
    pb::ErrorMessage m;
    m.set_messagetype(pb::ErrorMessageType);
    m.set_errormessage(sanitize_utf8(reason));
    return m.SerializeAsString();  // cannot fail: no required fields, valid UTF-8
}

const char* kind_name(const Decoded& msg) noexcept {
    return std::visit(overloaded{
                          [](const DecodeError&) { return "DecodeError"; },
                          [](const mc::HandshakeInit&) { return "HandshakeInit"; },
                          [](const mc::Handshake&) { return "Handshake"; },
                          [](const mc::SensorRequest&) { return "SensorRequest"; },
                          [](const mc::Control&) { return "Control"; },
                          [](const mc::Sensor&) { return "Sensor"; },
                          [](const mc::Reset&) { return "Reset"; },
                          [](const mc::Error&) { return "Error"; },
                      },
                      msg);
}

std::optional<std::string> check_control(const mc::Control& control) {
    for (const auto& [name, obj] : control.objects) {
        std::vector<std::string> set;
        if (!obj.values.empty()) set.emplace_back("values");
        if (!obj.angles.empty()) set.emplace_back("angles");
        if (!obj.angular_velocities.empty()) set.emplace_back("angularVelocities");
        if (!obj.torques.empty()) set.emplace_back("torques");
        if (set.size() > 1) {
            return "object " + in_quotes(name) + " sets " + join(set) +
                   "; a control sets only one of values, angles, angularVelocities, torques";
        }
    }
    return std::nullopt;
}

std::function<std::string(std::string_view)> make_click_handler(std::function<ServerAnswer(const ClientRequest&)> serve,
                                                                ClickHandlerHooks hooks) {
    auto last_id = std::make_shared<std::uint64_t>(0);
    return [serve = std::move(serve), hooks = std::move(hooks), last_id](std::string_view bytes) -> std::string {
        const auto refuse = [&](const std::string& reason) {
            if (hooks.refused) hooks.refused(reason);
            return error_reply(reason);
        };
        try {
            const DecodeLimits limits = hooks.limits ? hooks.limits() : DecodeLimits{};
            Decoded decoded = decode(bytes, mc::Direction::request, limits);
            if (const auto* e = std::get_if<DecodeError>(&decoded)) return refuse("malformed Click message: " + e->reason);

            const char* kind = kind_name(decoded);
            const std::uint64_t id = *last_id + 1;  // taken only if the request is accepted
            std::optional<ClientRequest> request = std::visit(
                overloaded{
                    [](const DecodeError&) -> std::optional<ClientRequest> { return std::nullopt; },
                    [](const mc::Handshake&) -> std::optional<ClientRequest> { return std::nullopt; },
                    [](const mc::Sensor&) -> std::optional<ClientRequest> { return std::nullopt; },
                    [id](auto m) -> std::optional<ClientRequest> {
                        m.request_id = id;
                        return ClientRequest{std::move(m)};
                    },
                },
                std::move(decoded));
            if (!request) {
                return refuse(std::string("a client may not send a ") + kind + " message; only a server does");
            }
            *last_id = id;

            ServerAnswer answer = serve(*request);
            Encoded encoded = std::visit(
                [id](auto& a) {
                    a.answers = id;
                    if constexpr (std::is_same_v<std::decay_t<decltype(a)>, mc::Reset> ||
                                  std::is_same_v<std::decay_t<decltype(a)>, mc::Error>) {
                        a.direction = mc::Direction::answer;
                    }
                    return encode(a);
                },
                answer);
            if (const auto* e = std::get_if<EncodeError>(&encoded)) {
                return error_reply("the server's answer cannot be sent as a Click message: " + e->reason);
            }
            return std::get<std::string>(std::move(encoded));
        } catch (const std::exception& e) {
            return error_reply(std::string("the server failed to handle the request: ") + e.what());
        } catch (...) {
            return error_reply("the server failed to handle the request");
        }
    };
}

}  // namespace gecko::click
