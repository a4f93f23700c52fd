#pragma once
/// @file message_info.hpp
/// What a subscriber knows about a message besides its contents.

#include <cstddef>
#include <cstdint>
#include <string>

namespace gecko {

struct ChannelInfo;

struct MessageInfo {
    std::uint64_t sequence = 0;       ///< the publisher's sequence number (starts at 1)
    std::uint64_t publisher_id = 0;   ///< identifies the publisher (random per publisher)
    std::int64_t send_time_ns = 0;    ///< publisher's clock at send, ns since the Unix epoch
    std::int64_t receive_time_ns = 0; ///< subscriber's clock when it arrived
    std::size_t wire_size = 0;        ///< bytes on the wire (header + possibly compressed payload)
    bool compressed = false;
    bool latched = false;             ///< a latched publisher's last message, replayed to this late subscriber
    /// The publisher's type name: the subscriber's own for typed subscribers;
    /// for typeless ones (tools) as discovery names it ("" if not known yet).
    std::string type_name;
    std::uint64_t type_hash = 0;      ///< the frame's type hash (fnv1a64 of the type name)
    /// The topic the message was published on: the subscriber's own, or for
    /// a key-wide subscription (Node::subscribe_all) the one the directory
    /// names ("" without a directory: discovery off, or an older core).
    std::string topic;
    /// Key-wide subscriptions: the directory's entry of `topic` (its type,
    /// schema and publishers), valid during the call that hands the message
    /// over (Node::directory() gives entries to keep); null otherwise.
    const ChannelInfo* channel = nullptr;
};

}  // namespace gecko
