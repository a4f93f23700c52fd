// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file json_text.hpp
/// JSON as the bridge sends it: text that never throws. A Gecko string, a
/// page's bytes cut mid-character or a program's output may be invalid
/// UTF-8; nlohmann's dump() would throw on them, this writes U+FFFD.

#include <nlohmann/json.hpp>

#include <string>

namespace gecko::bridge {

/// `Json`: nlohmann::json or nlohmann::ordered_json.
template <class Json>
std::string json_text(const Json& value) {
    return value.dump(-1, ' ', false, Json::error_handler_t::replace);
}

}  // namespace gecko::bridge
