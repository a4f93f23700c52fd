// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file finder.hpp
/// Finds the geckocore of a key: sends multicast queries with back-off,
/// listens for answers and announcements, and remembers what was tried so
/// that a failure can be explained. Shared by the node's discovery client,
/// query_graph() and the tools (gecko doctor's census).
/// Not thread-safe: owned by one thread.

#include "gecko/net/datagram_seal.hpp"
#include "gecko/net/net.hpp"

#include <gecko/wire/value.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace gecko::net {

/// Where to look for the core of a key. Every field has a default.
struct FinderOptions {
    std::string key;                                ///< the key (robot / simulation) whose core we want
    std::string node;                               ///< who asks (shown in the core's log)
    std::string multicast_group = "239.255.71.67";  ///< administratively scoped (RFC 2365); shared by all keys
    std::uint16_t multicast_port = 7650;            ///< UDP port of the group
    std::string interface;                          ///< interface name or IPv4 address for multicast; empty = default route
    int ttl = 1;                                    ///< multicast TTL (1 = this subnet only)
    bool multicast = true;                          ///< false = only the explicit core address is used
    std::string core;                               ///< "host", "host:port" or "tcp://host:port" (port 7651 if omitted); empty = none
    std::chrono::milliseconds find_timeout{1500};   ///< multicast silence after which `core` is tried (and a node warns)
    /// The key's datagram key when it is secured (KeySecurity::datagram_key):
    /// queries are sealed, and only authentic answers count (docs/SECURITY.md §6).
    std::shared_ptr<const DatagramKey> seal;
};

/// "host" / "host:port" / "tcp://host:port" -> "tcp://host:port" (port 7651,
/// the host door, if omitted); empty string if malformed.
std::string normalize_core_address(const std::string& text);

/// Where a host door's `redirect` sends us: the core's endpoint with a wildcard
/// host replaced by the door's host. `loopback_only` when that core listens on
/// loopback but the door was reached from elsewhere (unreachable from here).
struct RedirectTarget {
    std::string endpoint;
    bool loopback_only = false;
};
std::optional<RedirectTarget> redirect_target(const wire::Value& redirect, const std::string& door_endpoint);

/// A core that answered (or announced itself) for our key.
struct CoreAnswer {
    std::string endpoint;  ///< connectable, e.g. "tcp://192.0.2.2:7651"
    std::uint64_t instance = 0;
    std::string host;
    std::int32_t pid = 0;
    bool announcement = false;  ///< heard on the group rather than as a reply
    bool secured = false;       ///< the core has the key's secret: its links are CURVE (docs/SECURITY.md §5)
    std::string fingerprint;    ///< the fingerprint its sealed datagram names (`fp`, §6; "" if none)
};

/// A core datagram of our key that a secured finder refused (docs/SECURITY.md §6).
struct RefusedAnswer {
    CoreAnswer answer;
    SealCheck why = SealCheck::unsigned_datagram;
    std::string fingerprint;  ///< the datagram's `fp` ("" if none)
};

class CoreFinder {
public:
    using Clock = std::chrono::steady_clock;

    /// Opens the sockets (failures are recorded for describe(), not thrown).
    explicit CoreFinder(const FinderOptions& options);

    /// Sends a multicast query if one is due. Returns when the next one is due.
    Clock::time_point tick(Clock::time_point now);
    /// Restarts the back-off (queries at once, then 100, 200, 400... ms up to 1 s).
    void restart();
    /// File descriptors to poll for input (-1 when absent).
    int query_fd() const noexcept { return sender_.get(); }
    int listen_fd() const noexcept { return listener_.get(); }
    /// Reads every pending datagram on `fd`; returns the answers for our key.
    std::vector<CoreAnswer> read(int fd);

    /// The explicit core, normalised ("tcp://host:port"), or "" if none.
    const std::string& explicit_endpoint() const noexcept { return explicit_; }
    bool multicast_enabled() const noexcept { return options_.multicast; }
    /// Records what happened with the explicit core ("connection refused", ...).
    void note_unicast(const std::string& result) { unicast_result_ = result; }
    /// "multicast 239.255.71.67:7650 on default interface: no answer (5 queries); unicast tcp://...: ...; check ..."
    std::string describe() const;

    /// With FinderOptions::seal: the telling refusal of a core datagram of our
    /// key (a plain core's, or one sealed with another secret, before any
    /// other), and when the first refusal came. Nothing when none was refused.
    const std::optional<RefusedAnswer>& refused_answer() const noexcept { return refused_answer_; }
    Clock::time_point first_refusal() const noexcept { return first_refusal_; }
    /// The datagrams a secured finder refused, per reason (null when not secured).
    const DatagramGuard* guard() const noexcept { return guard_ ? &*guard_ : nullptr; }

    std::uint64_t malformed() const noexcept { return malformed_; }
    std::uint64_t answers() const noexcept { return answers_; }

private:
    void send_query();
    bool admit(const char* data, std::size_t size, const discovery::Message& msg, const CoreAnswer& answer,
               const sockaddr_in& from);

    FinderOptions options_;
    std::string explicit_;
    std::string host_;
    Fd sender_;
    Fd listener_;
    sockaddr_in group_{};
    bool group_ok_ = false;
    std::string setup_error_;
    std::string send_error_;
    std::string unicast_result_;
    std::uint64_t queries_ = 0;
    std::uint64_t answers_ = 0;
    std::uint64_t malformed_ = 0;
    std::uint64_t other_key_answers_ = 0;
    std::string other_keys_;
    std::set<std::string> keys_heard_;  // other keys' cores announcing on the group (for "did you mean")
    Clock::time_point next_query_{};
    std::chrono::milliseconds backoff_{0};
    Clock::time_point last_malformed_log_{};
    std::optional<DatagramGuard> guard_;
    std::optional<RefusedAnswer> refused_answer_;
    Clock::time_point first_refusal_{};
    std::uint32_t refusals_logged_ = 0;  // a bit per SealCheck: each reason is logged once
};

}  // namespace gecko::net
