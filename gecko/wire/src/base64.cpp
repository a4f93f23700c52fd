// SPDX-License-Identifier: Apache-2.0
#include "gecko/wire/base64.hpp"

#include <cstring>

namespace gecko::wire {

namespace {
constexpr char b64_alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
}

void append_base64(std::string& out, const std::uint8_t* data, std::size_t size) {
    const std::size_t start = out.size();
    out.resize(start + 4 * ((size + 2) / 3));
    char* at = out.data() + start;
    std::size_t i = 0;
    for (; i + 3 <= size; i += 3) {
        const std::uint32_t v = std::uint32_t(data[i]) << 16 | std::uint32_t(data[i + 1]) << 8 | data[i + 2];
        *at++ = b64_alphabet[v >> 18];
        *at++ = b64_alphabet[(v >> 12) & 63];
        *at++ = b64_alphabet[(v >> 6) & 63];
        *at++ = b64_alphabet[v & 63];
    }
    if (i < size) {
        std::uint32_t v = std::uint32_t(data[i]) << 16;
        if (i + 1 < size) v |= std::uint32_t(data[i + 1]) << 8;
        *at++ = b64_alphabet[v >> 18];
        *at++ = b64_alphabet[(v >> 12) & 63];
        *at++ = i + 1 < size ? b64_alphabet[(v >> 6) & 63] : '=';
        *at++ = '=';
    }
}

std::string base64_encode(const std::uint8_t* data, std::size_t size) {
    std::string out;
    append_base64(out, data, size);
    return out;
}

bool base64_decode(std::string_view text, std::vector<std::uint8_t>& out) {
    out.clear();
    std::uint32_t acc = 0;
    int bits = 0, pad = 0, chars = 0;
    for (char c : text) {
        if (c == ' ' || c == '\n' || c == '\r' || c == '\t') continue;
        if (c == '=') {
            ++pad;
            ++chars;
            continue;
        }
        if (pad > 0) return false;  // data after padding
        const char* p = std::strchr(b64_alphabet, c);
        if (c == '\0' || p == nullptr) return false;
        acc = (acc << 6) | static_cast<std::uint32_t>(p - b64_alphabet);
        bits += 6;
        ++chars;
        if (bits >= 8) {
            bits -= 8;
            out.push_back(static_cast<std::uint8_t>((acc >> bits) & 0xFF));
        }
    }
    return chars % 4 == 0 && pad <= 2;
}

}  // namespace gecko::wire
