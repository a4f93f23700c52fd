// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file json_text.hpp
/// JSON as the academy sends it: text that never throws. A page's bytes cut
/// mid-character (the first five of a message) or a program's output may be
/// invalid UTF-8; nlohmann's dump() would throw on them, this writes U+FFFD.

#include <nlohmann/json.hpp>

#include <string>

namespace gecko::bridge::academy {

inline std::string json_text(const nlohmann::json& value) {
    return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace gecko::bridge::academy
