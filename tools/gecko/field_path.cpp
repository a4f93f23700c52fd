// SPDX-License-Identifier: Apache-2.0
#include "field_path.hpp"

#include <cstring>

#include "cli.hpp"
#include "msgpack_json.hpp"

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

const msgpack::object* find_field(const msgpack::object& message, const std::vector<std::string>& path, std::string& why) {
    const msgpack::object* at = &message;
    std::string where;
    for (const auto& step : path) {
        const std::string here = where.empty() ? "the message" : "'" + where + "'";
        if (at->type == msgpack::type::MAP) {
            const msgpack::object* next = nullptr;
            std::string fields;
            for (std::uint32_t i = 0; i < at->via.map.size && !next; ++i) {
                const auto& kv = at->via.map.ptr[i];
                const std::string key = kv.key.type == msgpack::type::STR ? std::string(kv.key.via.str.ptr, kv.key.via.str.size)
                                                                          : to_json(kv.key);
                if (key == step) next = &kv.val;
                fields += (fields.empty() ? "" : ", ") + key;
            }
            if (!next) {
                why = here + " has no field '" + step + "'; its fields are: " + (fields.empty() ? "(none)" : fields);
                return nullptr;
            }
            at = next;
        } else if (at->type == msgpack::type::ARRAY) {
            char* end = nullptr;
            const unsigned long index = std::strtoul(step.c_str(), &end, 10);
            const std::uint32_t size = at->via.array.size;
            if (step.empty() || *end != '\0' || step[0] == '-') {
                why = here + " is an array of " + std::to_string(size) + " items: '" + step + "' is not an index (0, 1, ...)";
                return nullptr;
            }
            if (index >= size) {
                why = here + " has " + std::to_string(size) + " item" + (size == 1 ? "" : "s") + ": there is no item " + step;
                return nullptr;
            }
            at = &at->via.array.ptr[index];
        } else {
            why = here + " is a msgpack " + msgpack_type_name(at->type) + ", not a map: it has no field '" +
                  step + "'";
            return nullptr;
        }
        where += (where.empty() ? "" : ".") + step;
    }
    return at;
}

}  // namespace gecko::tools
