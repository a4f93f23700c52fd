#include "gecko/error.hpp"

namespace gecko {

const char* to_string(Errc code) noexcept {
    switch (code) {
        case Errc::invalid_argument: return "invalid_argument";
        case Errc::transport: return "transport";
        case Errc::timeout: return "timeout";
        case Errc::no_peer: return "no_peer";
        case Errc::type_mismatch: return "type_mismatch";
        case Errc::decode: return "decode";
        case Errc::remote: return "remote";
        case Errc::protocol: return "protocol";
        case Errc::discovery: return "discovery";
        case Errc::closed: return "closed";
        case Errc::security: return "security";
    }
    return "unknown";
}

}  // namespace gecko
