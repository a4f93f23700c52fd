// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file network.hpp
/// What `gecko doctor` reads about this host's network: interfaces and
/// their flags (getifaddrs), and the route the kernel would take to an
/// address (/proc/net/route).

#include <netinet/in.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gecko::tools {

struct Interface {
    std::string name;
    unsigned flags = 0;              ///< IFF_UP, IFF_MULTICAST, ...
    std::vector<in_addr> addresses;  ///< IPv4
};

/// Every interface, in the order getifaddrs() lists them.
std::vector<Interface> interfaces();

/// "UP RUNNING LOOPBACK MULTICAST" (those of the four that are set).
std::string flag_names(unsigned flags);

struct Route {
    std::string iface;
    std::uint32_t destination = 0, mask = 0;  ///< as in /proc/net/route: network order in memory
    bool gateway = false;
};

/// The /proc/net/route entry the kernel would use for `to` (longest prefix), if any.
std::optional<Route> route_for(const in_addr& to);

}  // namespace gecko::tools
