// libFuzzer target for the decoders of msgpack of unknown shape
// (gecko/wire/value.hpp): any bytes as a Value, printed as JSON
// (gecko/wire/json.hpp), and as a discovery message read field by field
// with every reader geckocore and the node's client use. Whatever the bytes,
// each must give an error or a value: never crash, hang or over-allocate.
// What msgpack_to_json prints must be JSON that json_to_msgpack reads back.
#include <gecko/error.hpp>
#include <gecko/wire/discovery.hpp>
#include <gecko/wire/json.hpp>
#include <gecko/wire/value.hpp>

#include <cstdint>
#include <cstdlib>
#include <string>

namespace {

namespace discovery = gecko::discovery;
using gecko::wire::Value;

// Every field reader on `v` and, one level down, on its items and entries.
void read_everything(const Value& v) {
    (void)discovery::read_registration(v);
    (void)discovery::read_peer(v);
    (void)discovery::read_stats(v);
    (void)discovery::get_str_array(v, "locators");
    (void)discovery::get_f64(v, "messages_per_s");
    (void)discovery::get_i64(v, "pid");
    for (const Value& item : v.items()) {
        (void)discovery::read_peer(item);
        (void)discovery::read_stats(item);
    }
    for (const auto& [key, item] : v.entries()) {
        (void)key.as_str();
        (void)discovery::read_peer(item);
        for (const Value& inner : item.items()) (void)discovery::read_peer(inner);
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    try {
        const std::string json = gecko::wire::msgpack_to_json(data, size);
        try {
            (void)gecko::wire::json_to_msgpack(json);
        } catch (const gecko::Error&) {
            std::abort();  // the JSON printed is not JSON
        }
    } catch (const gecko::wire::DecodeError&) {
        // Expected for most inputs.
    }
    std::string why;
    if (const auto m = discovery::Message::parse(reinterpret_cast<const char*>(data), size, &why)) read_everything(m->root());
    return 0;
}
