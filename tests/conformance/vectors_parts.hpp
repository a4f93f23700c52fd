// SPDX-License-Identifier: Apache-2.0
// What the golden vectors' builders (vectors_*.cpp) share: hex and byte
// helpers, and each file's group of vectors. Not part of vectors.hpp: only
// the builders use it.
#pragma once

#include "vectors.hpp"

#include <gecko/buffer.hpp>
#include <gecko/wire/codec.hpp>
#include <gecko/wire/frame.hpp>

#include <cstdio>
#include <string>
#include <vector>

namespace gecko::conformance {

// The latched publisher of the topic 'mode' (frames and announcements).
constexpr std::uint64_t latched_publisher_id = 0x0a0b0c0d0e0f1011ull;

inline Bytes bytes_of(const discovery::Writer& w) {
    return Bytes(reinterpret_cast<const std::uint8_t*>(w.data()), reinterpret_cast<const std::uint8_t*>(w.data()) + w.size());
}

inline std::string hex_number(std::uint64_t v, int digits = 16) {
    char s[24];
    std::snprintf(s, sizeof s, "0x%0*llx", digits, static_cast<unsigned long long>(v));
    return s;
}

inline std::string hex_bytes(const std::uint8_t* p, std::size_t n) {
    static const char* digits = "0123456789abcdef";
    std::string out;
    for (std::size_t i = 0; i < n; ++i) {
        out += digits[p[i] >> 4];
        out += digits[p[i] & 15];
    }
    return out;
}

inline std::string channel_bytes(wire::Channel c) {
    std::uint8_t b[8];
    wire::store_channel(b, c);
    return hex_bytes(b, 8);
}

template <class T>
Bytes encoded(const T& message) {
    Buffer b;
    wire::encode(b, message);
    return Bytes(b.data(), b.data() + b.size());
}

std::vector<Vector> frames();             // vectors_frames.cpp
std::vector<Vector> announcements();      // vectors_frames.cpp
std::vector<Vector> discovery_vectors();  // vectors_discovery.cpp
std::vector<Vector> message_vectors();    // vectors_messages.cpp
std::vector<Vector> rule_vectors();       // vectors_messages.cpp

}  // namespace gecko::conformance
