// SPDX-License-Identifier: Apache-2.0
#include <gecko/bag/gecko_format.hpp>

#include <gecko/wire/json.hpp>

namespace gecko::bag {

std::string hex64(std::uint64_t v) {
    static const char* d = "0123456789abcdef";
    std::string s(16, '0');
    for (int i = 15; i >= 0; --i, v >>= 4) s[static_cast<std::size_t>(i)] = d[v & 15];
    return s;
}

std::string type_name_of(const Channel& channel) {
    auto it = channel.metadata.find(keys::type_name);
    return it == channel.metadata.end() ? std::string() : it->second;
}

std::shared_ptr<const wire::Schema> schema_of(const Channel& channel) {
    auto it = channel.metadata.find(keys::schema);
    if (it == channel.metadata.end() || it->second.empty()) return nullptr;
    try {
        const auto bytes = wire::json_to_msgpack(it->second);
        return std::make_shared<const wire::Schema>(wire::Schema::decode(bytes.data(), bytes.size()));
    } catch (const std::exception&) {
        return nullptr;  // a schema this version cannot read: the messages still read as msgpack
    }
}

StringMap channel_metadata(const std::string& type_name, const wire::Schema* schema) {
    StringMap m;
    m[keys::type_name] = type_name;
    if (!type_name.empty()) m[keys::type_hash] = hex64(wire::type_hash(type_name));
    if (schema && !schema->empty()) m[keys::schema] = schema->to_json();
    return m;
}

}  // namespace gecko::bag
