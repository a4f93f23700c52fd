// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file announcement.hpp
/// What a subscribing entity tells the publishers it reaches, through the
/// transport itself (docs/PROTOCOL.md §4): who it is, which type it expects,
/// and how many messages it keeps. Over ZeroMQ it is a subscription of the
/// data socket, so a publisher hears it exactly when that subscriber can
/// receive, and hears it go when the subscriber leaves or its link breaks.
///
///     bytes 0-7   the channel subscribed (a key-wide subscription: the key's
///                 4 bytes, then 4 zero bytes, and `wildcard: true`)
///     byte  8     0x00   (a data frame has 'G' here: an announcement never matches one)
///     byte  9     0x01   (announcement version)
///     bytes 10-   a msgpack map: id, kind, topic, type, node, session, depth, wildcard
///
/// kind is "subscriber" (data), "server" (its requests channel) or "client"
/// (its replies channel); type "*" (or "") accepts any type (tools).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "gecko/wire/hash.hpp"

namespace gecko::wire {

struct Announcement {
    Channel channel = 0;
    bool wildcard = false;      ///< every channel of the key (channel's key part)
    std::uint64_t id = 0;       ///< the subscribing entity
    std::string kind = "subscriber";
    std::string topic;          ///< the topic or service name (a server is found by it without discovery)
    std::string type = "*";     ///< the type it expects; "*" any
    std::string node;           ///< its node's name
    std::uint64_t session = 0;  ///< its node's discovery session
    std::uint32_t depth = 0;    ///< its keep-last-N (0: not said)
};

inline constexpr std::uint8_t announcement_version = 1;
/// Announcements above this size are refused (names are bounded at registration).
inline constexpr std::size_t max_announcement_size = 1024;

/// The bytes of an announcement (the subscription to make, without ZeroMQ's 0x01 prefix).
std::string encode_announcement(const Announcement& a);
/// Parses an announcement; nullopt if `bytes` are not one (e.g. a plain data prefix).
std::optional<Announcement> parse_announcement(std::string_view bytes);

}  // namespace gecko::wire
