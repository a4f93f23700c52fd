// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file names.hpp
/// What a key, topic, service, type or node name may be. Nodes refuse a bad
/// name when an entity is made; geckocore refuses it at registration (a
/// hostile peer cannot put terminal escapes or megabytes into every tool's
/// output). docs/DISCOVERY.md §2 gives the same rules.
///
/// - topic and service names: 1-256 bytes of printable ASCII (0x21-0x7E), not starting with '#',
///   without '*' or '?' (they match names in filters: `gecko echo 'arm1/*'`)
/// - type names: 1-256 bytes of printable ASCII ("gecko.msgs.Imu", "A->B" for services), without '*' or '?'
/// - filters (patterns): a name, or a glob where '*' matches any run of characters ('/' included)
///   and '?' any one character
/// - keys: 1-128 bytes of printable ASCII
/// - node and host names: 1-128 bytes, no control characters (spaces allowed)

#include <cstddef>
#include <string>
#include <string_view>

namespace gecko::wire {

inline constexpr std::size_t max_topic_name = 256;
inline constexpr std::size_t max_type_name = 256;
inline constexpr std::size_t max_key = 128;
inline constexpr std::size_t max_node_name = 128;

/// "" if `name` is a valid topic or service name, else why not.
std::string check_topic_name(std::string_view name);
std::string check_type_name(std::string_view name);
std::string check_key(std::string_view name);
/// Node and host names (no control characters; spaces allowed).
std::string check_node_name(std::string_view name);

/// "" if `pattern` is a valid filter of topic or type names: 1-256 bytes of
/// printable ASCII, '*' and '?' as wildcards; else why not.
std::string check_pattern(std::string_view pattern);
/// Whether `text` matches `pattern`: '*' any run of characters ('/'
/// included, the empty run too), '?' any one character, anything else itself.
bool glob_match(std::string_view pattern, std::string_view text) noexcept;
/// Whether `pattern` has a wildcard ('*' or '?').
bool is_glob(std::string_view pattern) noexcept;

/// "" if `locator` is one a node may offer (docs/DISCOVERY.md §2): tcp://HOST:PORT
/// (HOST a numeric address, IPv4 or bracketed IPv6, not a wildcard: a host name
/// would block ZeroMQ's I/O thread on a resolver; PORT 1-65535), ipc://PATH (1-107 bytes),
/// inproc://NAME, mem://NAME or shm://NAME (1-256 bytes), printable; else why not.
std::string check_locator(std::string_view locator);
inline constexpr std::size_t max_locator = 256;
inline constexpr std::size_t max_locators = 8;

/// Length of the well-formed UTF-8 sequence at text[i]: 1 for ASCII, 2-4 for
/// a multi-byte one (not overlong, not a surrogate, at most U+10FFFF), 0 if
/// the bytes there are not UTF-8. `i` must be < text.size().
std::size_t utf8_sequence(std::string_view text, std::size_t i) noexcept;

/// `text` from the network made safe to print on a terminal: UTF-8 text
/// passes; control characters (C0, DEL, and C1 such as U+009B, a CSI to many
/// terminals) and bytes that are not UTF-8 are shown as \xNN, one per byte.
/// With `keep_newlines`, '\n' passes (an error message of several lines).
std::string printable(std::string_view text, bool keep_newlines = false);

}  // namespace gecko::wire
