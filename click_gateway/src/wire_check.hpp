// SPDX-License-Identifier: Apache-2.0
#pragma once
// A Click frame checked on the wire before protobuf builds anything from it.
// libprotobuf keeps every field it does not know (about 16 bytes of memory for
// every 2 on the wire) and builds every map entry a frame lists, so a strict
// decoder that looked only after parsing let a few MiB of request cost a GiB.
// This walk allocates nothing: it reads tags and lengths, descends into the
// message fields the schema declares, and counts.

#include "gecko/click_gateway/translate.hpp"

#include <google/protobuf/descriptor.h>

#include <optional>
#include <string>
#include <string_view>

namespace gecko::click::detail {

/// Walks `bytes` as a message of `type`: every field must be one `type` (or the
/// message it nests) declares, with its wire type; every string valid UTF-8
/// and within `limits.max_string_bytes`;
/// and the counts within `limits` (`max_control_objects` applies when `type`
/// is ControlMessage).
/// @return why the frame is refused, naming the field; nullopt if it may be parsed.
std::optional<std::string> check_wire(std::string_view bytes, const google::protobuf::Descriptor& type,
                                      const DecodeLimits& limits);

/// The messageType (field 1) of a frame, read from the wire alone: every Click
/// message has it, and protobuf's own way (parsing the frame as a one-field
/// message) would keep every other field as unknown, in memory.
/// @return the type (0, HandshakeInit, when absent), or nullopt if the bytes are not protobuf.
std::optional<int> message_type_of(std::string_view bytes);

}  // namespace gecko::click::detail
