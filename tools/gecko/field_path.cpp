// SPDX-License-Identifier: Apache-2.0
#include "field_path.hpp"

#include <gecko/wire/json.hpp>

#include <cstdlib>
#include <cstring>

#include "cli.hpp"

namespace gecko::tools {

std::vector<std::string> parse_field_path(const std::string& text) {
    std::string dotted;
    for (char c : text) {
        if (c == '[') dotted += '.';
        else if (c != ']') dotted += c;
    }
    std::vector<std::string> path;
    std::size_t start = 0;
    for (;;) {
        const auto dot = dotted.find('.', start);
        path.push_back(dotted.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
        if (path.back().empty())
            throw UsageError("--field needs a dotted path such as accel.x or position.0, not '" + text + "'");
        if (dot == std::string::npos) return path;
        start = dot + 1;
    }
}

std::string join_field_path(const std::vector<std::string>& path) {
    std::string s;
    for (const auto& step : path) s += (s.empty() ? "" : ".") + step;
    return s;
}

std::optional<wire::Value> find_field(const wire::Value& message, const std::vector<std::string>& path, std::string& why) {
    wire::Value at = message;
    std::string where;
    for (const auto& step : path) {
        const std::string here = where.empty() ? "the message" : "'" + where + "'";
        if (at.type() == wire::Type::map) {
            std::optional<wire::Value> next;
            std::string fields;
            for (const auto& [k, v] : at.entries()) {
                const auto text = k.as_str();
                const std::string key = text ? std::string(*text) : wire::to_json(k);
                if (key == step) {
                    next = v;
                    break;
                }
                fields += (fields.empty() ? "" : ", ") + key;
            }
            if (!next) {
                why = here + " has no field '" + step + "'; its fields are: " + (fields.empty() ? "(none)" : fields);
                return std::nullopt;
            }
            at = *next;
        } else if (at.type() == wire::Type::array) {
            char* end = nullptr;
            const unsigned long index = std::strtoul(step.c_str(), &end, 10);
            const std::uint32_t size = at.count();
            if (step.empty() || *end != '\0' || step[0] == '-') {
                why = here + " is an array of " + std::to_string(size) + " items: '" + step + "' is not an index (0, 1, ...)";
                return std::nullopt;
            }
            if (index >= size) {
                why = here + " has " + std::to_string(size) + " item" + (size == 1 ? "" : "s") + ": there is no item " + step;
                return std::nullopt;
            }
            at = *at.item(static_cast<std::uint32_t>(index));
        } else {
            why = here + " is a msgpack " + wire::to_string(at.type()) + ", not a map: it has no field '" + step + "'";
            return std::nullopt;
        }
        where += (where.empty() ? "" : ".") + step;
    }
    return at;
}

}  // namespace gecko::tools
