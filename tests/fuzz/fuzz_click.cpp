// libFuzzer target for the Click gateway's request parser
// (click_gateway/src/translate.cpp, wire_check.cpp): any bytes decoded as a
// Click frame, as the gateway decodes a request (its element budget, a
// handshake of 3 objects) and with the default limits, in both directions;
// what decodes is encoded again and decoded again; and the bytes go through
// the request handler the gateway serves with. Whatever the bytes, each must
// return an error or a value: never crash, hang or over-allocate (the CI run
// caps the process's memory).
#include <gecko/click_gateway/translate.hpp>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>

namespace {

namespace click = gecko::click;
namespace mc = gecko::msgs::click;

void decode_again(const click::Decoded& decoded) {
    std::visit(
        [](const auto& m) {
            if constexpr (!std::is_same_v<std::decay_t<decltype(m)>, click::DecodeError>) {
                const click::Encoded encoded = click::encode(m);
                if (const auto* bytes = std::get_if<std::string>(&encoded)) {
                    const click::Decoded again = click::decode(*bytes, mc::Direction::answer);
                    // What was decoded within the limits and encoded is a valid frame.
                    if (std::holds_alternative<click::DecodeError>(again)) std::abort();
                }
            }
        },
        decoded);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view bytes(reinterpret_cast<const char*>(data), size);

    click::DecodeLimits gateway;
    gateway.max_elements = 1u << 16;
    gateway.max_string_bytes = 4096;
    gateway.max_control_objects = 3;
    decode_again(click::decode(bytes, mc::Direction::request, gateway));
    decode_again(click::decode(bytes, mc::Direction::answer));

    static const auto handler = click::make_click_handler(
        [](const click::ClientRequest&) -> click::ServerAnswer {
            mc::Sensor sensor;
            sensor.objects["robot1"].angle_sensors = {0.1, 0.2};
            return sensor;
        },
        click::ClickHandlerHooks{[gateway] { return gateway; }, nullptr});
    if (handler(bytes).empty()) std::abort();  // every request gets a reply
    return 0;
}
