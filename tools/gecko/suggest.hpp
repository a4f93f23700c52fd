// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file suggest.hpp
/// "Did you mean": the known name closest to a mistyped one (a topic, a
/// service, a type, a command).

#include <string>
#include <vector>

namespace gecko::tools {

/// Edit distance: insertions, deletions, substitutions and swaps of two
/// neighbours ("lsit" for "list"), each 1.
std::size_t edit_distance(const std::string& a, const std::string& b);

/// The candidate `name` was most likely meant to be, or "" if none is close:
/// the same name but for a leading '/' (ROS habits) or letter case, else the
/// nearest by edit distance when it is at most a third of the name's length
/// (at least 1, at most 3). `name` itself is never suggested.
std::string closest(const std::string& name, const std::vector<std::string>& candidates);

/// "; did you mean 'imu'?" or "" (for the end of an error message).
std::string did_you_mean(const std::string& name, const std::vector<std::string>& candidates);

}  // namespace gecko::tools
