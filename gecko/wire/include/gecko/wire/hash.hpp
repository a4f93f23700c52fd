// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file hash.hpp
/// The names a frame carries as numbers: a topic's *channel* (8 bytes that
/// start every data frame and by which publishers filter) and a type's *type
/// hash* (8 bytes in the frame header; the type's name travels in discovery).
///
/// Both are FNV-1a hashes (http://www.isthe.com/chongo/tech/comp/fnv/), chosen
/// because any language writes them in three lines:
///
///     channel   = fnv1a32(key) | fnv1a32(name) << 32   (bytes 0-3: the key's hash, 4-7: the name's, little-endian)
///     type hash = fnv1a64(type name)
///
/// A channel's first four bytes depend on the key alone, so a subscription to
/// those four bytes is a subscription to every channel of a key (recorders).
/// `name` is a topic name for data, or "#e:<16 lowercase hex digits>" for the
/// frames directed at one entity (service requests to a server, replies to a
/// client, a latched value to a new subscriber); topic names never start with
/// '#'.

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include "gecko/wire/endian.hpp"

namespace gecko::wire {

/// 32-bit FNV-1a (offset basis 2166136261, prime 16777619).
constexpr std::uint32_t fnv1a32(std::string_view text) noexcept {
    std::uint32_t h = 2166136261u;
    for (char c : text) {
        h ^= static_cast<std::uint8_t>(c);
        h *= 16777619u;
    }
    return h;
}

/// 64-bit FNV-1a (offset basis 14695981039346656037, prime 1099511628211).
constexpr std::uint64_t fnv1a64(std::string_view text) noexcept {
    std::uint64_t h = 14695981039346656037ull;
    for (char c : text) {
        h ^= static_cast<std::uint8_t>(c);
        h *= 1099511628211ull;
    }
    return h;
}

/// A channel: the 8-byte routing prefix of a frame, as a little-endian u64.
using Channel = std::uint64_t;

/// The channel of topic (or directed name) `name` under `key`.
constexpr Channel channel_of(std::string_view key, std::string_view name) noexcept {
    return static_cast<Channel>(fnv1a32(key)) | (static_cast<Channel>(fnv1a32(name)) << 32);
}

/// The key part of a channel (its first four bytes): what a key-wide subscription matches.
constexpr std::uint32_t key_part(Channel channel) noexcept { return static_cast<std::uint32_t>(channel); }

/// The directed name of an entity: "#e:" + 16 lowercase hex digits of its id.
inline std::string directed_name(std::uint64_t entity_id) {
    char text[20];
    std::snprintf(text, sizeof text, "#e:%016llx", static_cast<unsigned long long>(entity_id));
    return text;
}

/// The channel of the frames directed at entity `entity_id` under `key`.
inline Channel directed_channel(std::string_view key, std::uint64_t entity_id) {
    return channel_of(key, directed_name(entity_id));
}

/// The type hash of a type name ("gecko.msgs.Imu").
constexpr std::uint64_t type_hash(std::string_view type_name) noexcept { return fnv1a64(type_name); }

/// Writes a channel's 8 bytes (little-endian) at `out`.
inline void store_channel(std::uint8_t* out, Channel channel) noexcept {
    store_le64(out, channel);
}

/// Reads a channel from 8 bytes at `in`.
inline Channel load_channel(const std::uint8_t* in) noexcept {
    return load_le64(in);
}

}  // namespace gecko::wire
