#pragma once
/// @file stats.hpp
/// Counters that publishers and subscribers keep. Every rejected frame is
/// counted under the reason it was rejected for, and every message a
/// publisher sent is, at each subscriber, either delivered or counted:
///
///     sent = delivered + drops + overwritten + dropped by the reader's checks (type, size, decode)
///
/// (per subscriber, for the messages sent while it was subscribed; a publisher
/// killed with -9 cannot say how many it had in flight).

#include <cstddef>
#include <cstdint>
#include <map>

namespace gecko {

struct PublisherStats {
    std::uint64_t messages = 0;        ///< frames sent
    std::uint64_t bytes = 0;           ///< bytes sent (after compression)
    std::uint64_t compressed = 0;      ///< frames sent compressed
    std::uint64_t loaned = 0;          ///< frames sent from a loan in shared memory, without a copy (gecko/loan.hpp)
    /// Frames a link reported it could not queue for a subscriber (in-process
    /// and shared-memory links, which know). ZeroMQ links cannot tell the
    /// sender: their losses are counted by each subscriber as `drops`.
    std::uint64_t dropped = 0;
    std::uint64_t unheard = 0;         ///< frames sent while no subscriber was connected (nobody got them)
    std::size_t subscribers = 0;       ///< subscribers connected now (of any type)
    std::uint64_t mismatched_subscribers = 0;  ///< subscribers seen expecting another type
};

/// Per-publisher view from one subscriber.
struct PeerStats {
    std::uint64_t received = 0;
    std::uint64_t drops = 0;          ///< sequence numbers that never arrived
    std::uint64_t last_sequence = 0;
    /// Where this subscriber's stream from the publisher began, once the
    /// publisher said so (control `start`, PROTOCOL.md §6): every message
    /// after `start` was sent to this subscriber, none before it.
    bool start_known = false;
    std::uint64_t start = 0;
    /// The publisher closed or left the directory. A subscription keeps the
    /// counts of its latest departed publishers (SubscriberStats::publishers)
    /// so that they can still be read once the publisher is gone.
    bool departed = false;
};

struct SubscriberStats {
    std::uint64_t received = 0;       ///< frames accepted (passed header and type checks)
    std::uint64_t bytes = 0;          ///< wire bytes accepted
    std::uint64_t delivered = 0;      ///< messages handed to the application
    /// Messages that never arrived: sequence gaps, and the tail a publisher
    /// announced when it closed but that did not reach us. Summed over publishers.
    std::uint64_t drops = 0;
    std::uint64_t overwritten = 0;    ///< accepted but pushed out of the keep-last-N queue unread
    std::uint64_t type_mismatches = 0;///< frames of another type than the subscriber's
    std::uint64_t malformed = 0;      ///< frames rejected by the header check (truncated, bad magic, ...)
    std::uint64_t unsupported_version = 0;
    std::uint64_t oversized = 0;      ///< frames above max_message_size
    std::uint64_t decode_errors = 0;  ///< payloads that did not decode into the type (or did not inflate)
    std::uint64_t callback_errors = 0;///< messages whose callback threw (logged, the subscriber goes on)
    /// A publisher's sequence went backwards or jumped by more than 2^32: a
    /// restart or a forgery, treated as a new start, never as drops.
    std::uint64_t epochs = 0;
    /// Publishers forgotten because more than SubscriberOptions::max_publishers
    /// sent to this subscriber (the least recently heard goes first).
    std::uint64_t publishers_forgotten = 0;
    /// Key-wide subscriptions: messages on a channel the key's directory did
    /// not name within 2 s (a publisher that never registered), dropped.
    std::uint64_t unlisted = 0;
    std::int64_t last_latency_ns = -1;///< receive time minus send time of the last message
    /// Keyed by publisher id: those still known, and the latest departed ones (PeerStats::departed).
    std::map<std::uint64_t, PeerStats> publishers;
};

}  // namespace gecko
