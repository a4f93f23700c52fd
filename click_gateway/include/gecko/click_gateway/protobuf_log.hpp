// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file protobuf_log.hpp
/// libprotobuf writes its own lines to stderr (one ERROR line for every string
/// that is not UTF-8 it parses, for instance), outside Gecko's log and its
/// limits: a client could write a line per request. This routes them into
/// Gecko's log (gecko/log.hpp), rate-limited like the rest of it.

#include <string>

namespace gecko::click {

/// From now on, libprotobuf's lines go to Gecko's log as `who`'s lines,
/// prefixed "libprotobuf", at the matching level (INFO as debug). The first
/// line of each call site passes, then at most one per 10 s, which says how
/// many were held back. Process-wide (libprotobuf has one log handler); a
/// later call changes `who`. Thread-safe.
void route_protobuf_log(std::string who);

}  // namespace gecko::click
