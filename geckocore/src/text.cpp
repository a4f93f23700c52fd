// SPDX-License-Identifier: Apache-2.0
#include "text.hpp"

#include "gecko/wire/names.hpp"

namespace gecko::core {
namespace {

// A C1 control (U+0080-U+009F, CSI among them) encoded as UTF-8.
bool is_c1(std::string_view s, std::size_t i, std::size_t n) {
    return n == 2 && static_cast<unsigned char>(s[i]) == 0xC2 && static_cast<unsigned char>(s[i + 1]) < 0xA0;
}

}  // namespace

bool fingerprint_text(std::string_view fingerprint) {
    if (fingerprint.empty()) return true;
    if (fingerprint.size() != 16) return false;
    for (char c : fingerprint)
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
    return true;
}

std::string check_node_text(std::string_view name) {
    if (auto why = wire::check_node_name(name); !why.empty()) return why;
    for (std::size_t i = 0; i < name.size();) {
        if (static_cast<unsigned char>(name[i]) < 0x80) {
            ++i;
            continue;
        }
        const std::size_t n = wire::utf8_sequence(name, i);
        if (n == 0) return "the name is not UTF-8 (byte " + std::to_string(i) + ")";
        if (is_c1(name, i, n)) return "the name has a control character (C1, byte " + std::to_string(i) + ")";
        i += n;
    }
    return {};
}

std::string shown(std::string_view text) {
    constexpr std::size_t max = 64;
    if (text.size() <= max) return wire::printable(text);
    return wire::printable(text.substr(0, max)) + "... (" + std::to_string(text.size()) + " bytes)";
}

}  // namespace gecko::core
