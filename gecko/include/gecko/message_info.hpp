#pragma once
/// @file message_info.hpp
/// What a subscriber knows about a message besides its contents.

#include <cstdint>
#include <string>

namespace gecko {

struct MessageInfo {
    std::uint64_t sequence = 0;      ///< the publisher's sequence number (starts at 1)
    std::uint64_t publisher_id = 0;  ///< identifies the publisher (random per publisher)
    std::int64_t send_time_ns = 0;   ///< publisher's clock at send, ns since the Unix epoch
    std::int64_t receive_time_ns = 0;///< subscriber's clock when taken from the transport
    std::size_t wire_size = 0;       ///< bytes on the wire (header + possibly compressed payload)
    bool compressed = false;
    std::string type_name;           ///< as the publisher declared it
};

}  // namespace gecko
