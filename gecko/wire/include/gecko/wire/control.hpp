// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file control.hpp
/// Control frames (flag `control`, type hash 0): what a publisher tells its
/// subscribers in-band, in order with its data. Payload: a msgpack map with
/// `t` (str) and the fields of that type.
///
///   {t: "end", last: N}   the publisher closes; N is the last sequence it sent
///                         (a subscriber that saw less counts the rest as drops)
///   {t: "seq", last: N}   the publisher's last sequence so far, sent when it
///                         goes quiet (at most every 100 ms): messages a link
///                         dropped at the end of a burst are counted at once,
///                         not only when a later message shows the gap
///   {t: "start", last: N} to one subscriber (its directed channel): every
///                         message after N was sent to it; one that received
///                         a later first message counts those between as drops

#include <cstdint>
#include <optional>
#include <string>

#include "gecko/buffer.hpp"

namespace gecko::wire {

struct Control {
    std::string type;           ///< "end", "seq", "start"
    std::uint64_t last = 0;     ///< end, seq: the last sequence sent; start: the last before the subscriber joined
};

/// Appends the msgpack payload of `control` to `out`.
void encode_control(const Control& control, Buffer& out);
/// Parses a control payload; nullopt if it is not one.
std::optional<Control> parse_control(const std::uint8_t* data, std::size_t size);

}  // namespace gecko::wire
