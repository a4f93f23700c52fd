// SPDX-License-Identifier: Apache-2.0
#include "academy/messages.hpp"

#include "json_text.hpp"

#include <cmath>
#include <cstdlib>

namespace gecko::bridge::academy {

using nlohmann::json;

ManagerOrder read_manager_order(std::string_view text) {
    ManagerOrder o;
    json order = json::parse(text.begin(), text.end(), nullptr, false);
    if (order.is_object() && order.contains("id")) o.id = json_text(order["id"]);
    if (!order.is_object() || !order.contains("command") || !order["command"].is_string()) {
        o.error = "a manager message is a JSON object {\"command\": NAME, \"data\": {...}}";
        return o;
    }
    o.command = order["command"].get<std::string>();
    if (o.command.empty()) {
        o.error = "a manager message's command is a non-empty name";
        return o;
    }
    o.data = order.contains("data") ? std::move(order["data"]) : json::object();
    return o;
}

CodeMessage split_code_message(std::string_view text) {
    return {text.substr(0, 5), text.size() > 5 ? text.substr(5) : std::string_view()};
}

Frequencies read_frequencies(std::string_view body) {
    Frequencies f;
    const json given = json::parse(body.begin(), body.end(), nullptr, false);
    if (!given.is_object()) {
        f.error = "#freq wants a JSON object, e.g. #freq{\"brain\": 50, \"gui\": 10}";
        return f;
    }
    const auto number = [&](const char* key) -> std::optional<double> {
        if (!given.contains(key)) return std::nullopt;
        const auto& v = given[key];
        if (v.is_number()) return v.get<double>();
        if (v.is_string()) {  // RoboticsAcademy's page sends its numbers as text
            const std::string s = v.get<std::string>();
            char* end = nullptr;
            const double d = std::strtod(s.c_str(), &end);
            if (!s.empty() && end == s.c_str() + s.size()) return d;
        }
        return -1.0;
    };
    const auto ok = [](const std::optional<double>& hz) { return !hz || (std::isfinite(*hz) && *hz > 0 && *hz <= 1000); };
    f.brain = number("brain");
    f.gui = number("gui");
    if (!ok(f.brain) || !ok(f.gui)) {
        f = Frequencies{};
        f.error = "#freq: brain and gui are frequencies in Hz, above 0 and at most 1000";
    }
    return f;
}

}  // namespace gecko::bridge::academy
