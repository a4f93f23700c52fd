// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file door.hpp
/// The host door: how several geckocores share one host and one well-known port.
///
/// Every core listens on an endpoint of its own (an ephemeral port by
/// default), which multicast announces. For the unicast fallback
/// (`GECKO_CORE=host`, where multicast does not work), one core per host also
/// holds the *door*, a ROUTER on the well-known port (7651): it answers a
/// `hello` (or a tool's `list`) for key K with a `redirect` to K's core on this
/// host, or with an error that lists the keys served here. Every core
/// registers itself with the door over loopback once a second; a core that
/// does not hold the door tries to take it once a second, so when the holder
/// exits another core holds the door within about a second, and the
/// registrations of the others reach it at their next tick.
/// docs/DISCOVERY.md §1a is the specification.

#include <zmq.hpp>

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "gecko/log.hpp"

namespace gecko::core {

/// What the door knows of one core on this host.
struct DoorEntry {
    std::string key;
    std::uint64_t instance = 0;
    std::string endpoint;  ///< as the core bound it (wildcard host: the node substitutes the door's host)
    std::string host;
    std::int32_t pid = 0;
    std::string pidns;  ///< readlink /proc/self/ns/pid: the door checks kill(pid, 0) only within its own
    std::chrono::steady_clock::time_point last_seen{};
    std::uint64_t order = 0;  ///< first registration wins when two cores serve one key
};

class HostDoor {
public:
    using Clock = std::chrono::steady_clock;

    struct Options {
        std::uint16_t port = 7651;  ///< 0: no door (neither held nor registered with)
        DoorEntry self;             ///< this core, as registered
        std::chrono::milliseconds period{1000};  ///< registration and take-over attempts
        std::chrono::milliseconds lease{2500};   ///< a registration not renewed for this long is dropped
    };

    HostDoor(zmq::context_t& context, Options options, const Logger& log);

    /// Registers, and tries to take the door if no one holds it. Returns when to call again.
    Clock::time_point tick(Clock::time_point now);

    /// The sockets to poll for input (nullptr when absent).
    void* door_socket() noexcept { return door_ ? door_->handle() : nullptr; }
    void* link_socket() noexcept { return link_ ? link_->handle() : nullptr; }
    /// Handles what arrived on the door (when held) or on the registration link.
    void on_door(Clock::time_point now);
    void on_link();

    bool holding() const noexcept { return door_.has_value(); }
    std::uint16_t port() const noexcept { return options_.port; }
    /// The cores registered here (only while holding), for tests and `list`.
    std::vector<DoorEntry> entries() const;
    /// Where the door answers `key` (tests): the registered entry, if any.
    std::optional<DoorEntry> lookup(const std::string& key) const;

private:
    void try_take(Clock::time_point now);
    void register_self();
    void expire(Clock::time_point now);
    void remember(DoorEntry entry, Clock::time_point now);
    std::string keys_served() const;

    zmq::context_t& context_;
    Options options_;
    const Logger& log_;
    std::optional<zmq::socket_t> door_;  // held: ROUTER on the well-known port
    std::optional<zmq::socket_t> link_;  // DEALER to the door over loopback
    std::map<std::uint64_t, DoorEntry> entries_;  // by instance, only while holding
    std::uint64_t next_order_ = 0;
    Clock::time_point next_tick_{};
    std::uint64_t refused_ = 0;  // registrations from non-loopback peers
};

}  // namespace gecko::core
