// SPDX-License-Identifier: Apache-2.0
// gecko doctor: why can't my node find the core? Checks the network
// interfaces, the multicast route, and whether the key's core answers by
// multicast and by unicast, and prints a concrete fix for each failure.
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <future>
#include <map>
#include <sstream>

#include "cli.hpp"
#include "commands.hpp"
#include "discovery/net.hpp"
#include "format.hpp"
#include "gecko/error.hpp"
#include "query.hpp"

namespace gecko::tools {

namespace {

struct Interface {
    std::string name;
    unsigned flags = 0;
    std::vector<in_addr> addresses;  // IPv4
};

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

struct Route {
    std::string iface;
    std::uint32_t destination = 0, mask = 0;  // as in /proc/net/route: network order in memory
    bool gateway = false;
};

// The /proc/net/route entry the kernel would use for `to` (longest prefix), if any.
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

class Report {
public:
    void section(const std::string& title) { std::printf("\n%s\n", title.c_str()); }
    void ok(const std::string& what) { std::printf("  ok    %s\n", what.c_str()); }
    void info(const std::string& what) { std::printf("  -     %s\n", what.c_str()); }
    void warn(const std::string& what, const std::string& fix = "") {
        std::printf("  WARN  %s\n", what.c_str());
        if (!fix.empty()) fixes_.push_back(fix);
    }
    void fail(const std::string& what, const std::string& fix = "") {
        std::printf("  FAIL  %s\n", what.c_str());
        if (!fix.empty()) fixes_.push_back(fix);
    }
    void fix(const std::string& text) { fixes_.push_back(text); }
    void print_fixes() const {
        if (fixes_.empty()) return;
        std::printf("\nWhat to do:\n");
        int n = 1;
        for (const auto& f : fixes_) std::printf("  %d. %s\n", n++, f.c_str());
    }

private:
    std::vector<std::string> fixes_;
};

struct Attempt {
    bool ok = false;
    std::string detail;
    std::uint64_t instance = 0;  // of the core that answered
    std::string core;            // "pid N on host at endpoint", for messages
};

Attempt failed(std::string detail) {
    Attempt a;
    a.detail = std::move(detail);
    return a;
}

std::string plural(std::size_t n, const char* word) {
    return std::to_string(n) + " " + word + (n == 1 ? "" : "s");
}

// The part of query_core's explanation about one way of finding the core
// ("multicast ...: no answer to 6 queries"), or all of it if it has another form.
std::string attempt_detail(const std::string& what, const std::string& start) {
    const auto from = what.find(start);
    if (from == std::string::npos) return what;
    const auto to = what.find("; ", from);
    return what.substr(from, to == std::string::npos ? std::string::npos : to - from);
}

Attempt try_query(const detail::DiscoveryOptions& options, std::chrono::milliseconds timeout) {
    try {
        const auto r = query(options, timeout);
        std::size_t topics = 0;
        for (const auto& t : r.topics) topics += t.service ? 0 : 1;
        return {true,
                "answered from " + r.core_endpoint + " (geckocore on " + r.core_host + ", pid " +
                    std::to_string(r.core_pid) + "; " + plural(r.nodes.size(), "node") + ", " + plural(topics, "topic") +
                    ", " + plural(r.topics.size() - topics, "service") + ")",
                r.instance, "pid " + std::to_string(r.core_pid) + " on " + r.core_host + " at " + r.core_endpoint};
    } catch (const Error& e) {
        if (e.code() != Errc::discovery) return failed(e.what());
        const std::string what = e.what();
        if (what.find("no answer from a geckocore") != 0) return failed(what);  // e.g. another key's core
        return failed("no answer within " + std::to_string(timeout.count()) + " ms: " +
                           attempt_detail(what, options.multicast ? "multicast " : "unicast "));
    } catch (const std::exception& e) {
        return failed(e.what());
    }
}

}  // namespace

int run_doctor(const Args& args) {
    Connection connection("gecko_doctor");
    Parser parser("doctor", "[options]",
                  "Checks what discovery needs and says how to fix what is missing: network interfaces\n"
                  "(UP, MULTICAST), a route for the multicast group, whether the key's geckocore answers\n"
                  "by multicast, and whether it answers by unicast (--core / GECKO_CORE, else this host's\n"
                  "default port). Exit 0 if the core is reachable one way or the other, 1 otherwise.");
    parser.connection(connection, false);
    if (!parser.parse(args)) return exit_ok;
    const auto options = discovery_options(connection.node);
    const std::string key = options.key;
    Report report;
    std::printf("gecko doctor: key '%s'\n", key.empty() ? "(none)" : key.c_str());

    // 1. Interfaces.
    report.section("network interfaces (getifaddrs)");
    const auto ifs = interfaces();
    std::string multicast_iface;  // a usable non-loopback interface, for the fixes
    for (const auto& i : ifs) {
        std::string addrs;
        for (const auto& a : i.addresses) addrs += (addrs.empty() ? "" : ", ") + detail::net::to_string(a);
        const std::string line = i.name + "  " + (addrs.empty() ? "no IPv4 address" : addrs) + "  [" + flag_names(i.flags) + "]";
        const bool up = i.flags & IFF_UP, mc = i.flags & IFF_MULTICAST, loop = i.flags & IFF_LOOPBACK;
        if (up && mc && !i.addresses.empty()) {
            report.ok(line);
            if (!loop && multicast_iface.empty()) multicast_iface = i.name;
        } else {
            report.info(line + (!up ? "  (down)" : !mc ? "  (no MULTICAST)" : ""));
        }
    }
    if (multicast_iface.empty()) {
        const bool lo_mc = [&] {
            for (const auto& i : ifs)
                if ((i.flags & IFF_LOOPBACK) && (i.flags & IFF_MULTICAST)) return true;
            return false;
        }();
        if (lo_mc)
            report.warn("no UP interface with MULTICAST besides loopback: multicast discovery works on this host only");
        else
            report.warn("no UP interface with MULTICAST: multicast discovery cannot work",
                        "on a loopback-only host (container, laptop offline): sudo ip link set lo multicast on "
                        "&& sudo ip route add 239.255.0.0/16 dev lo; or use unicast: export GECKO_CORE=host:7651");
    }

    // 2. Route to the multicast group.
    report.section("route to the multicast group " + options.multicast_group + " (/proc/net/route, UDP connect)");
    const auto group = detail::net::parse_ipv4(options.multicast_group);
    const std::string suggest_dev = multicast_iface.empty() ? "lo" : multicast_iface;
    if (!group) {
        report.fail("'" + options.multicast_group + "' is not an IPv4 address", "set GECKO_MULTICAST to GROUP:PORT, e.g. 239.255.71.67:7650");
    } else {
        const auto route = route_for(*group);
        const auto local = detail::net::local_address_towards(*group);
        if (!route && !local) {
            report.fail("no route: the kernel has nowhere to send multicast",
                        "sudo ip route add 239.255.0.0/16 dev " + suggest_dev + "   (or export GECKO_CORE=host:7651)");
        } else {
            std::string via = route ? "via " + route->iface + (route->mask == 0 ? " (default route)" : "") : "via the kernel's choice";
            if (local) via += ", local address " + detail::net::to_string(*local);
            const Interface* used = nullptr;
            for (const auto& i : ifs)
                if (route && i.name == route->iface) used = &i;
            if (used && !(used->flags & IFF_MULTICAST))
                report.fail(via + ": that interface has no MULTICAST flag",
                            "sudo ip link set " + used->name + " multicast on   (or route the group elsewhere: sudo ip route add 239.255.0.0/16 dev " +
                                suggest_dev + ")");
            else
                report.ok(via);
        }
    }

    // 3. Environment.
    report.section("environment");
    for (const char* name : {"GECKO_KEY", "GECKO_CORE", "GECKO_NO_MULTICAST", "GECKO_MULTICAST", "GECKO_INTERFACE"}) {
        const char* v = std::getenv(name);
        report.info(std::string(name) + (v ? "=" + std::string(v) : " unset"));
    }

    if (key.empty()) {
        report.section("core");
        report.fail("no key: cannot ask for a core", "pass --key KEY or export GECKO_KEY=KEY (the robot's name)");
        report.print_fixes();
        return exit_failure;
    }

    // 4. The core, both ways at once.
    auto by_multicast = options;
    by_multicast.core.clear();
    by_multicast.multicast = true;
    auto by_unicast = options;
    by_unicast.multicast = false;
    const bool core_configured = !options.core.empty();
    if (!core_configured) by_unicast.core = "127.0.0.1";
    const std::string unicast_address = detail::normalize_core_address(by_unicast.core);
    auto multicast_future = std::async(std::launch::async, [&] { return try_query(by_multicast, connection.timeout); });
    auto unicast_future = std::async(std::launch::async, [&] { return try_query(by_unicast, connection.timeout); });
    const Attempt multicast = multicast_future.get();
    const Attempt unicast = unicast_future.get();

    report.section("core of key '" + key + "' by multicast (" + options.multicast_group + ":" +
                   std::to_string(options.multicast_port) + ")");
    if (multicast.ok)
        report.ok(multicast.detail);
    else
        report.fail(multicast.detail);
    report.section("core of key '" + key + "' by unicast (" + unicast_address +
                   (core_configured ? ", from --core / GECKO_CORE)" : ", this host's default port; GECKO_CORE is unset)"));
    if (unicast.ok)
        report.ok(unicast.detail);
    else if (core_configured)
        report.fail(unicast.detail);
    else
        report.info("no core at this host's default port (tried only as a hint: GECKO_CORE is unset)");

    std::printf("\n");
    if (multicast.ok && unicast.ok && multicast.instance != unicast.instance) {
        std::printf("verdict: TWO geckocores serve key '%s': %s (by multicast) and %s (by unicast)\n", key.c_str(),
                    multicast.core.c_str(), unicast.core.c_str());
        report.fix("stop one of them: nodes register with whichever answers first, and nodes on different cores do "
                   "not see each other");
        report.print_fixes();
        return exit_failure;
    }
    if (multicast.ok && (unicast.ok || !core_configured)) {
        std::printf("verdict: the core of key '%s' is reachable by multicast; nodes will find it by themselves\n", key.c_str());
    } else if (multicast.ok) {
        std::printf("verdict: the core answers by multicast, but not at --core / GECKO_CORE (%s)\n", unicast_address.c_str());
        report.fix("fix GECKO_CORE (or unset it: multicast works here)");
    } else if (unicast.ok) {
        std::printf("verdict: the core of key '%s' is reachable by unicast only\n", key.c_str());
        if (core_configured)
            report.fix("nodes try multicast for 1.5 s before GECKO_CORE; to skip that wait: export GECKO_NO_MULTICAST=1");
        else
            report.fix("multicast does not reach the core: export GECKO_CORE=127.0.0.1:7651 (and GECKO_NO_MULTICAST=1 to skip the multicast wait)");
        report.fix("for multicast: check the route above, and that no firewall drops UDP port " +
                   std::to_string(options.multicast_port) + " (sudo iptables -I INPUT -p udp --dport " +
                   std::to_string(options.multicast_port) + " -j ACCEPT)");
    } else {
        std::printf("verdict: no core of key '%s' answered\n", key.c_str());
        report.fix("start the core on the robot (or here): geckocore --key " + key);
        report.fix("if it runs on another host where multicast does not reach (Docker bridge, Wi-Fi, VPN): export GECKO_CORE=that-host:7651");
        report.fix("check that no firewall drops UDP " + std::to_string(options.multicast_port) + " (multicast) and TCP 7651 (the core)");
    }
    report.print_fixes();
    return multicast.ok || unicast.ok ? exit_ok : exit_failure;
}

}  // namespace gecko::tools
