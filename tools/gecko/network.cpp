// SPDX-License-Identifier: Apache-2.0
#include "network.hpp"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

namespace gecko::tools {

std::vector<Interface> interfaces() {
    std::vector<Interface> out;
    ifaddrs* list = nullptr;
    if (::getifaddrs(&list) != 0) return out;
    for (ifaddrs* it = list; it; it = it->ifa_next) {
        Interface* found = nullptr;
        for (auto& i : out)
            if (i.name == it->ifa_name) found = &i;
        if (!found) {
            out.push_back(Interface{it->ifa_name, it->ifa_flags, {}});
            found = &out.back();
        }
        if (it->ifa_addr && it->ifa_addr->sa_family == AF_INET)
            found->addresses.push_back(reinterpret_cast<const sockaddr_in*>(it->ifa_addr)->sin_addr);
    }
    ::freeifaddrs(list);
    return out;
}

std::optional<Route> route_for(const in_addr& to) {
    std::ifstream file("/proc/net/route");
    std::string line;
    std::getline(file, line);  // header
    std::optional<Route> best;
    int best_bits = -1;
    while (std::getline(file, line)) {
        std::istringstream in(line);
        std::string iface, dest, gateway, flags, refcnt, use, metric, mask;
        if (!(in >> iface >> dest >> gateway >> flags >> refcnt >> use >> metric >> mask)) continue;
        const auto d = static_cast<std::uint32_t>(std::strtoul(dest.c_str(), nullptr, 16));
        const auto m = static_cast<std::uint32_t>(std::strtoul(mask.c_str(), nullptr, 16));
        const auto f = std::strtoul(flags.c_str(), nullptr, 16);
        if (!(f & 0x1) || (to.s_addr & m) != d) continue;  // RTF_UP, covers `to`
        const int bits = __builtin_popcount(m);
        if (bits > best_bits) {
            best_bits = bits;
            best = Route{iface, d, m, (f & 0x2) != 0};
        }
    }
    return best;
}

std::string flag_names(unsigned flags) {
    std::string s;
    auto add = [&](unsigned bit, const char* name) {
        if (flags & bit) s += (s.empty() ? "" : " ") + std::string(name);
    };
    add(IFF_UP, "UP");
    add(IFF_RUNNING, "RUNNING");
    add(IFF_LOOPBACK, "LOOPBACK");
    add(IFF_MULTICAST, "MULTICAST");
    return s;
}

}  // namespace gecko::tools
