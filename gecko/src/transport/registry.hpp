// SPDX-License-Identifier: Apache-2.0
#pragma once
// The transport registry: every transport the runtime is built with, by
// locator scheme. The node asks it which transport serves a scheme, what it
// must open for the schemes it offers, and which of a peer's locators to use;
// nothing above this file names a scheme. A new transport (shared memory) is
// a new file implementing transport.hpp plus one entry in registry.cpp.

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "transport/transport.hpp"

namespace gecko::detail {

/// How far a scheme's locators reach.
enum class Reach {
    process,  ///< only nodes of the same process
    host,     ///< nodes on the same host (same boot id and mount namespace)
    network,  ///< any node that can route to the address
};

struct SchemeInfo {
    std::string_view scheme;
    Reach reach;
};

/// One transport, as the registry knows it.
struct TransportKind {
    std::string_view name;            ///< for messages: "zeromq", "in-process queues"
    std::vector<SchemeInfo> schemes;  ///< what it offers and connects to, preferred first
    /// Opens the transport; `offered`: which of its schemes this node offers
    /// (its out-port binds those, plus PortOptions::listen).
    std::unique_ptr<Transport> (*open)(const std::vector<std::string>& offered);
};

/// Every built-in transport, in order of preference.
const std::vector<TransportKind>& transport_kinds();
/// The transport serving `scheme`, or null.
const TransportKind* transport_for(std::string_view scheme) noexcept;
/// "inproc, ipc, tcp, mem": for error messages.
std::string known_schemes();

/// How far apart two nodes are: the same process, the same host (the same
/// /tmp and /dev/shm), or only the network.
Reach reach_between(const Whereabouts& here, const Whereabouts& there) noexcept;
/// How far a scheme's locators reach; Reach::network for an unknown scheme.
Reach reach_of(std::string_view scheme) noexcept;

/// Every one of a peer's `locators` a node at `here` can use to reach it at
/// `there`, best first: the narrowest reach that applies (same process, same
/// host, network), and within one reach the registry's order. When the first
/// cannot be opened (shared memory in another container, say), the next one
/// serves.
std::vector<std::string> usable_locators(const std::vector<std::string>& locators, const Whereabouts& here,
                                         const Whereabouts& there);
/// The locator a node links to itself with (its own subscribers hear its own publishers).
std::string self_locator(const std::vector<std::string>& locators);

}  // namespace gecko::detail
