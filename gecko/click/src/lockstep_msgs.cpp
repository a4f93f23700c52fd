// SPDX-License-Identifier: Apache-2.0
// check_control(): the rules a Control must follow, shared by the controller
// (which refuses a bad control before sending it) and the simulation (which
// answers one that slipped through with an Error).

#include "gecko/click/lockstep_msgs.hpp"

#include <cmath>
#include <sstream>

namespace gecko::click {

namespace {

using msgs::click::ValueType;

std::string join(const std::vector<std::string>& names) {
    std::string out;
    for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
    return out.empty() ? "none" : out;
}

template <class Map>
std::string join_keys(const Map& map) {
    std::vector<std::string> keys;
    for (const auto& entry : map) keys.push_back(entry.first);
    return join(keys);
}

// The one control type a deprecated array implies.
struct Deprecated {
    const char* field;
    ValueType type;
    const std::vector<double>& values;
};

}  // namespace

const std::vector<double>& control_values(const msgs::click::ControlObject& object) noexcept {
    if (!object.angles.empty()) return object.angles;
    if (!object.angular_velocities.empty()) return object.angular_velocities;
    if (!object.torques.empty()) return object.torques;
    return object.values;
}

std::optional<std::string> check_control(const msgs::click::Handshake& handshake, const msgs::click::Control& control) {
    for (const auto& [name, object] : control.objects) {
        const auto found = handshake.objects.find(name);
        if (found == handshake.objects.end()) {
            return "unknown object '" + name + "' (the handshake lists " + join_keys(handshake.objects) + ")";
        }
        const auto& announced = found->second;
        const std::size_t n = announced.controls_in_order.size();

        const int arrays = int(!object.values.empty()) + int(!object.angles.empty()) +
                           int(!object.angular_velocities.empty()) + int(!object.torques.empty());
        if (arrays > 1) {
            return "object '" + name + "' sets more than one of values, angles, angular_velocities and torques";
        }
        const std::vector<double>& values = control_values(object);
        if (!values.empty() && values.size() != n) {
            std::ostringstream s;
            s << "object '" << name << "' has " << n << " control" << (n == 1 ? "" : "s") << " ("
              << join(announced.controls_in_order) << "), the control gives " << values.size() << " value"
              << (values.size() == 1 ? "" : "s");
            return s.str();
        }
        for (const Deprecated& d : {Deprecated{"angles", ValueType::angle, object.angles},
                                    Deprecated{"angular_velocities", ValueType::angular_velocity_1d,
                                               object.angular_velocities},
                                    Deprecated{"torques", ValueType::torque_1d, object.torques}}) {
            if (d.values.empty()) continue;
            for (std::size_t i = 0; i < announced.control_types_in_order.size(); ++i) {
                if (announced.control_types_in_order[i] != d.type) {
                    const std::string joint = i < n ? announced.controls_in_order[i] : std::to_string(i);
                    return "object '" + name + "': the deprecated '" + d.field + "' array needs every control to be " +
                           msgs::click::to_string(d.type) + ", but '" + joint + "' is " +
                           msgs::click::to_string(announced.control_types_in_order[i]) + " (send 'values' instead)";
                }
            }
        }
        for (std::size_t i = 0; i < values.size(); ++i) {
            if (!std::isfinite(values[i])) {
                return "object '" + name + "': the value for '" + announced.controls_in_order[i] + "' is not finite";
            }
        }
        for (const auto& event : object.control_events) {
            if (announced.control_events.count(event.first) == 0) {
                return "object '" + name + "' has no control event '" + event.first + "' (the handshake lists " +
                       join_keys(announced.control_events) + ")";
            }
        }
    }
    return std::nullopt;
}

}  // namespace gecko::click
