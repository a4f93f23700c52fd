// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file base64.hpp
/// Standard base64 (RFC 4648, with padding): how bin travels in JSON
/// (gecko/wire/json.hpp).

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace gecko::wire {

/// Appends the base64 of `data` to `out`, written in place (no temporary: images are megabytes).
void append_base64(std::string& out, const std::uint8_t* data, std::size_t size);
std::string base64_encode(const std::uint8_t* data, std::size_t size);
/// False on a character outside the alphabet or a wrong length. Whitespace is skipped.
bool base64_decode(std::string_view text, std::vector<std::uint8_t>& out);

}  // namespace gecko::wire
