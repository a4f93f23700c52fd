// SPDX-License-Identifier: Apache-2.0
#pragma once
// Text from the network, as the core checks it and shows it back.

#include <string>
#include <string_view>

namespace gecko::core {

/// What wire::check_node_name() lets through that a terminal would still
/// obey: node and host names may be UTF-8, but not C1 controls or broken
/// UTF-8. "" if `name` is fine, else why not.
std::string check_node_text(std::string_view name);

/// A secret's fingerprint as a hello names it: empty (none), or 16
/// lowercase hexadecimal digits (docs/SECURITY.md §2).
bool fingerprint_text(std::string_view fingerprint);

/// A name from the network, for a log line or an answer: control characters
/// escaped, and at most 64 bytes of it (a 900 kB name is not echoed back).
std::string shown(std::string_view text);

}  // namespace gecko::core
