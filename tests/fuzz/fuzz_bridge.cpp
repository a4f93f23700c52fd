// libFuzzer target for gecko-bridge's client-message parsers
// (bridge/src/protocol.hpp) and what it does with a client's payload: the
// first byte picks a text message (JSON), a binary message (opcodes, ids,
// lengths), or a client publish (JSON -> msgpack, checked against the Imu
// schema, and any msgpack transcoded to JSON as subscribers get it).
// Whatever the bytes, each must give a request or a reason: never crash,
// hang or over-allocate.
#include "json_schema.hpp"
#include "protocol.hpp"
#include "transcode.hpp"

#include <gecko/msgs/sensors.hpp>
#include <gecko/wire/json.hpp>
#include <gecko/wire/schema_of.hpp>

#include <cstdint>
#include <cstdlib>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace gecko::bridge;
    if (size == 0) return 0;
    const std::uint8_t mode = data[0] % 4;
    ++data;
    --size;
    switch (mode) {
        case 0: {
            const auto p = parse_text(std::string_view(reinterpret_cast<const char*>(data), size));
            if (!p && p.error.empty()) std::abort();  // a refusal always says why
            break;
        }
        case 1: {
            const auto p = parse_binary(data, size);
            if (p && p.request->payload + p.request->size != data + size) std::abort();  // the payload is the rest
            if (!p && p.error.empty()) std::abort();
            break;
        }
        case 2: {
            static const gecko::wire::Schema imu = gecko::wire::schema_of<gecko::msgs::Imu>();
            try {
                const auto packed = gecko::wire::json_to_msgpack(std::string_view(reinterpret_cast<const char*>(data), size));
                (void)imu.check("gecko.msgs.Imu", packed.data(), packed.size(), gecko::wire::Schema::Check::strict);
            } catch (const std::exception&) {
            }
            break;
        }
        case 3: {
            try {
                std::string out;
                append_message_json(out, data, size, JsonShape::raw_image);
                SchemaInference inference;
                inference.observe(gecko::wire::Value::parse(data, size));
                (void)inference.json();
            } catch (const std::exception&) {
            }
            break;
        }
    }
    return 0;
}
