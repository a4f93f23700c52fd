// SPDX-License-Identifier: Apache-2.0
#include "census.hpp"

#include <gecko/wire/names.hpp>

#include <poll.h>

#include <algorithm>

#include "format.hpp"
#include "gecko/net/finder.hpp"

namespace gecko::tools {

// For display: whatever answers on the group names itself, so it is escaped
// (the endpoint itself stays as sent: it is what `doctor` connects to).
std::string CoreSeen::describe() const {
    return "pid " + std::to_string(pid) + " on " + wire::printable(host) + " at " + wire::printable(endpoint);
}

Census multicast_census(net::FinderOptions options, std::chrono::milliseconds window) {
    using Clock = net::CoreFinder::Clock;
    options.core.clear();
    options.multicast = true;
    net::CoreFinder finder(options);
    Census census;
    const auto deadline = Clock::now() + window;
    for (auto now = Clock::now(); now < deadline; now = Clock::now()) {
        const auto wake = std::min(deadline, finder.tick(now));
        pollfd fds[2] = {{finder.query_fd(), POLLIN, 0}, {finder.listen_fd(), POLLIN, 0}};
        const auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(wake - now).count();
        if (::poll(fds, 2, static_cast<int>(std::max<long long>(wait, 1))) <= 0) continue;
        for (const auto& fd : fds) {
            if (fd.fd < 0 || !(fd.revents & POLLIN)) continue;
            for (const auto& a : finder.read(fd.fd)) {
                const bool known = std::any_of(census.cores.begin(), census.cores.end(),
                                               [&](const CoreSeen& c) { return c.instance == a.instance; });
                if (!known) census.cores.push_back(CoreSeen{a.endpoint, a.instance, a.host, a.pid, a.secured, a.fingerprint});
            }
        }
    }
    if (census.cores.empty()) census.nobody = finder.describe();
    return census;
}

}  // namespace gecko::tools
