// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file field_path.hpp
/// `gecko echo --field accel.x`: a dotted path into a message, with array
/// indices as steps ("position.0", also written "position[0]").

#include <gecko/wire/value.hpp>

#include <optional>
#include <string>
#include <vector>

namespace gecko::tools {

/// "accel.x" -> {"accel", "x"}; "position[0]" -> {"position", "0"}.
/// @throws UsageError for an empty path or an empty step ("accel..x").
std::vector<std::string> parse_field_path(const std::string& text);

/// "accel.x" again, for messages.
std::string join_field_path(const std::vector<std::string>& path);

/// The value at `path` in `message`, or nothing with `why` naming the first
/// step that is missing and what exists there, e.g. "'accel' has no field
/// 'q'; its fields are: x, y, z" or "'position' has 6 items: there is no item 7".
std::optional<wire::Value> find_field(const wire::Value& message, const std::vector<std::string>& path, std::string& why);

}  // namespace gecko::tools
