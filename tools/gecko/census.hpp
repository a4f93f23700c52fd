// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file census.hpp
/// Every geckocore of a key that answers by multicast within a window, not
/// just the first (a node takes the first; `gecko doctor` wants them all, to
/// catch a second core of the same key).

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "gecko/net/finder.hpp"

namespace gecko::tools {

struct CoreSeen {
    std::string endpoint;  ///< connectable, e.g. tcp://192.0.2.2:7651
    std::uint64_t instance = 0;
    std::string host;
    std::int32_t pid = 0;
    bool secured = false;     ///< it says it holds the key's secret (docs/SECURITY.md §5)
    std::string fingerprint;  ///< the secret's fingerprint its datagram names (§6), unchecked: for display

    /// "pid 123 on host at tcp://..."
    std::string describe() const;
};

struct Census {
    std::vector<CoreSeen> cores;  ///< one per instance, in the order they were first heard
    std::string nobody;           ///< when none answered: what was tried (multicast group, queries, errors)
};

/// Sends multicast queries for `options.key` (at once, then with the nodes'
/// back-off) and listens to answers and announcements for the whole `window`.
/// `options.core` is ignored: multicast only.
Census multicast_census(net::FinderOptions options, std::chrono::milliseconds window);

}  // namespace gecko::tools
