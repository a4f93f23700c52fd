// SPDX-License-Identifier: Apache-2.0
#include "json_twin.hpp"

#include <gecko/wire/json.hpp>
#include <gecko/wire/json_schema.hpp>
#include <gecko/wire/value.hpp>

namespace gecko::bag::cli {

std::string json_schema(const wire::Schema* schema, const std::string& type_name) {
    return wire::json_schema_of(schema ? *schema : wire::Schema{}, type_name);
}

void transcode_to_json(const std::uint8_t* msgpack, std::size_t size, std::string& out) {
    out.clear();
    wire::JsonOptions options;
    options.bin_as_base64_string = true;
    wire::append_json(out, wire::Value::parse(msgpack, size), options);
}

}  // namespace gecko::bag::cli
