#pragma once
/// @file stats.hpp
/// Counters that publishers and subscribers keep. Every rejected frame is
/// counted under the reason it was rejected for.

#include <cstdint>
#include <map>

namespace gecko {

struct PublisherStats {
    std::uint64_t messages = 0;        ///< frames sent
    std::uint64_t bytes = 0;           ///< bytes sent (after compression)
    std::uint64_t compressed = 0;      ///< frames sent compressed
    std::uint64_t send_failures = 0;   ///< frames the transport refused (queue full)
    std::size_t subscribers = 0;       ///< subscribers connected now
    std::uint64_t mismatched_subscribers = 0;  ///< subscribers seen expecting another type
};

/// Per-publisher view from one subscriber.
struct PeerStats {
    std::uint64_t received = 0;
    std::uint64_t drops = 0;          ///< sequence numbers that never arrived
    std::uint64_t last_sequence = 0;
};

struct SubscriberStats {
    std::uint64_t received = 0;       ///< frames accepted (passed header and type checks)
    std::uint64_t bytes = 0;          ///< wire bytes accepted
    std::uint64_t delivered = 0;      ///< messages handed to the application
    std::uint64_t drops = 0;          ///< sequence gaps, summed over publishers
    std::uint64_t overwritten = 0;    ///< accepted but pushed out of the keep-last-N queue unread
    std::uint64_t type_mismatches = 0;///< frames of another type than the subscriber's
    std::uint64_t malformed = 0;      ///< frames rejected by the header check (truncated, bad magic, ...)
    std::uint64_t unsupported_version = 0;
    std::uint64_t oversized = 0;      ///< frames above max_message_size
    std::uint64_t decode_errors = 0;  ///< payloads that did not decode into the type
    std::uint64_t callback_errors = 0;///< messages whose callback threw (logged, the subscriber goes on)
    std::int64_t last_latency_ns = -1;///< receive time minus send time of the last message
    std::map<std::uint64_t, PeerStats> publishers;  ///< keyed by publisher id
};

}  // namespace gecko
