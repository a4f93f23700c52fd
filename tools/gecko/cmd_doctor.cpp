// SPDX-License-Identifier: Apache-2.0
// gecko doctor: why can't my node find the core? Checks the network
// interfaces, the multicast route, and whether the key's core answers by
// multicast (every core that answers, to catch a second one) and by unicast,
// and prints a concrete fix for each failure. The core is asked first: when
// it answers by multicast, the network checks are only informational.
#include <net/if.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <future>

#include <gecko/wire/names.hpp>

#include "census.hpp"
#include "cli.hpp"
#include "commands.hpp"
#include "format.hpp"
#include "gecko/net/net.hpp"
#include "gecko/error.hpp"
#include "gecko/security/key_security.hpp"
#include "network.hpp"
#include "query.hpp"

namespace gecko::tools {

namespace {

// Every line goes through wire::printable(): the details quote what the network
// answered (a core's error, a host name), which may hold escape sequences.
class Report {
public:
    void section(const std::string& title) { std::printf("\n%s\n", wire::printable(title).c_str()); }
    void ok(const std::string& what) { std::printf("  ok    %s\n", wire::printable(what).c_str()); }
    void info(const std::string& what) { std::printf("  -     %s\n", wire::printable(what).c_str()); }
    void warn(const std::string& what, const std::string& fix = "") {
        std::printf("  WARN  %s\n", wire::printable(what).c_str());
        if (!fix.empty()) fixes_.push_back(fix);
    }
    void fail(const std::string& what, const std::string& fix = "") {
        std::printf("  FAIL  %s\n", wire::printable(what).c_str());
        if (!fix.empty()) fixes_.push_back(fix);
    }
    void fix(const std::string& text) { fixes_.push_back(text); }
    void print_fixes() const {
        if (fixes_.empty()) return;
        std::printf("\nWhat to do:\n");
        int n = 1;
        for (const auto& f : fixes_) std::printf("  %d. %s\n", n++, wire::printable(f).c_str());
    }

private:
    std::vector<std::string> fixes_;
};

struct Attempt {
    bool ok = false;
    std::string detail;
    std::uint64_t instance = 0;  // of the core that answered
    std::string core;            // "pid N on host at endpoint", for messages
    std::uint64_t duplicate_cores = 0;
};

std::string plural(std::size_t n, const char* word) { return std::to_string(n) + " " + word + (n == 1 ? "" : "s"); }

// The part of query_core's explanation about one way of finding the core
// ("multicast ...: no answer to 6 queries"), or all of it if it has another form.
std::string attempt_detail(const std::string& what, const std::string& start) {
    const auto from = what.find(start);
    if (from == std::string::npos) return what;
    const auto to = what.find("; ", from);
    return what.substr(from, to == std::string::npos ? std::string::npos : to - from);
}

Attempt try_query(const net::FinderOptions& options, std::chrono::milliseconds timeout) {
    Attempt a;
    try {
        const auto r = query(options, timeout);
        std::size_t topics = 0;
        for (const auto& t : r.topics) topics += t.service ? 0 : 1;
        a.ok = true;
        a.detail = "answered from " + r.core_endpoint + " (geckocore on " + r.core_host + ", pid " +
                   std::to_string(r.core_pid) + "; " + plural(r.nodes.size(), "node") + ", " + plural(topics, "topic") +
                   ", " + plural(r.topics.size() - topics, "service") + ")";
        a.instance = r.core_instance;
        a.core = "pid " + std::to_string(r.core_pid) + " on " + r.core_host + " at " + r.core_endpoint;
        if (const auto it = r.counters.find("duplicate_cores"); it != r.counters.end()) a.duplicate_cores = it->second;
    } catch (const Error& e) {
        const std::string what = e.what();
        a.detail = e.code() != Errc::discovery || what.find("no answer from a geckocore") != 0
                       ? what  // e.g. another key's core
                       : "no answer within " + std::to_string(timeout.count()) +
                             " ms: " + attempt_detail(what, options.multicast ? "multicast " : "unicast ");
    } catch (const std::exception& e) {
        a.detail = e.what();
    }
    return a;
}

// What the core checks found, asked before anything is printed.
struct CoreChecks {
    Census census;      // every core that answered by multicast
    Attempt multicast;  // the first of them, asked for its table
    Attempt unicast;
};

CoreChecks check_core(const net::FinderOptions& options, const net::FinderOptions& by_unicast,
                      std::chrono::milliseconds timeout) {
    // Both ways at once. Multicast listens for the whole window (nodes give it
    // find_timeout before trying GECKO_CORE), to hear a second core too.
    const auto window = std::min(timeout, options.find_timeout);
    auto census = std::async(std::launch::async, [&] { return multicast_census(options, window); });
    auto unicast = std::async(std::launch::async, [&] { return try_query(by_unicast, timeout); });
    CoreChecks c;
    c.census = census.get();
    c.unicast = unicast.get();
    if (c.census.cores.empty()) {
        c.multicast.detail = "no answer within " + std::to_string(window.count()) + " ms: " +
                             attempt_detail(c.census.nobody, "multicast ");
        return c;
    }
    auto first = options;
    first.multicast = false;
    first.core = c.census.cores.front().endpoint;
    c.multicast = try_query(first, timeout);
    c.multicast.ok = true;  // it answered by multicast, whatever its table said
    if (c.multicast.instance == 0) {
        c.multicast.instance = c.census.cores.front().instance;
        c.multicast.core = c.census.cores.front().describe();
        c.multicast.detail = "answered from " + c.census.cores.front().endpoint + " (" + c.census.cores.front().describe() +
                             "; its table: " + c.multicast.detail + ")";
    }
    return c;
}

// Whether this machine and the cores heard agree on the key's secret
// (docs/SECURITY.md). A secured core admits only nodes that prove the secret
// (CURVE and ZAP), so every node it lists holds it.
// False when they disagree: programs of this machine cannot join.
bool check_security(Report& report, const std::string& key, const std::vector<CoreSeen>& cores) {
    report.section("security of key '" + key + "' (docs/SECURITY.md)");
    security::KeySecurity here;
    try {
        here = security::KeySecurity::find(key);
    } catch (const Error& e) {
        report.fail(std::string("the key's secret file is unusable: ") + e.what());
        return false;
    }
    bool agree = true;
    if (here.secured())
        report.ok("this machine holds the key's secret (" + here.path() + ", fingerprint " + here.fingerprint() +
                  (here.accepted_fingerprint().empty()
                       ? std::string()
                       : ", also accepting " + here.accepted_fingerprint() + " during a rotation") +
                  "): its programs' links are CURVE and their datagrams sealed");
    else
        report.info("no secret for key '" + key + "' here (looked at " + (here.path().empty() ? "nowhere: no HOME" : here.path()) +
                    "): this machine's programs run plain");
    for (const auto& c : cores) {
        const std::string who = "geckocore " + c.describe();
        if (!c.secured && !here.secured()) {
            report.info(who + " runs plain: anyone on the network can join the key (gecko keygen --key " + key +
                        " turns security on)");
        } else if (c.secured && here.secured() && c.fingerprint == here.fingerprint()) {
            report.ok(who + " is secured with the same secret: every node it lists holds it");
        } else if (c.secured && here.secured() && c.fingerprint == here.accepted_fingerprint()) {
            report.ok(who + " is secured with the secret this machine accepts during the rotation (fingerprint " +
                      c.fingerprint + "): they interoperate until the rotation finishes (docs/SECURITY.md §9)");
        } else {
            agree = false;
            if (c.secured && here.secured())
                report.fail(who + " is secured with another secret (fingerprint " + wire::printable(c.fingerprint) + ")",
                            "copy the same secret to every machine of the key (compare `gecko keygen --key " + key +
                                " --fingerprint` on each)");
            else if (c.secured)
                report.fail(who + " is secured, and this machine has no secret for the key: its programs cannot join",
                            "copy the key's secret from the core's machine to " + here.path());
            else
                report.fail(who + " runs plain, but this machine holds the key's secret: its programs refuse that core",
                            "give the core the same secret, or remove " + here.path() + " here");
        }
    }
    return agree;
}

}  // namespace

int run_doctor(const Args& args) {
    Connection connection("gecko_doctor");
    Parser parser("doctor", "[options]",
                  "Checks what discovery needs and says how to fix what is missing: network interfaces\n"
                  "(UP, MULTICAST), a route for the multicast group, which geckocores of the key answer\n"
                  "by multicast (all of them, for the whole find window: a second core of the key is a\n"
                  "failure), and whether one answers by unicast (--core / GECKO_CORE, else this host's\n"
                  "default port). When the core answers by multicast, the interface and route checks are\n"
                  "only informational. Exit 0 if exactly one core of the key is reachable, 1 otherwise.");
    parser.connection(connection, false);
    if (!parser.parse(args)) return exit_ok;
    const auto options = search_options(connection.node);
    const std::string key = options.key;
    Report report;

    auto by_unicast = options;
    by_unicast.multicast = false;
    const bool core_configured = !options.core.empty();
    if (!core_configured) by_unicast.core = "127.0.0.1";
    const std::string unicast_address = net::normalize_core_address(by_unicast.core);
    CoreChecks core;
    if (!key.empty()) core = check_core(options, by_unicast, connection.timeout);
    const bool multicast_answered = core.multicast.ok;
    // A network problem that multicast got past anyway (e.g. the core's loopback fallback) is only informational.
    const std::string anyway = " (informational: the core answered by multicast anyway)";
    auto problem = [&](bool failure, const std::string& what, const std::string& fix) {
        if (multicast_answered) report.info(what + anyway);
        else if (failure) report.fail(what, fix);
        else report.warn(what, fix);
    };

    std::printf("gecko doctor: key '%s'\n", key.empty() ? "(none)" : key.c_str());

    // 1. Interfaces.
    report.section("network interfaces (getifaddrs)");
    const auto ifs = interfaces();
    std::string multicast_iface;  // a usable non-loopback interface, for the fixes
    for (const auto& i : ifs) {
        std::string addrs;
        for (const auto& a : i.addresses) addrs += (addrs.empty() ? "" : ", ") + net::to_string(a);
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
        bool lo_mc = false;
        for (const auto& i : ifs) lo_mc = lo_mc || ((i.flags & IFF_LOOPBACK) && (i.flags & IFF_MULTICAST));
        if (lo_mc)
            problem(false, "no UP interface with MULTICAST besides loopback: multicast discovery works on this host only", "");
        else
            problem(false, "no UP interface with MULTICAST: multicast discovery cannot reach other hosts",
                    "on a loopback-only host (container, laptop offline): sudo ip link set lo multicast on "
                    "&& sudo ip route add 239.255.0.0/16 dev lo; or use unicast: export GECKO_CORE=host");
    }

    // 2. Route to the multicast group.
    report.section("route to the multicast group " + options.multicast_group + " (/proc/net/route, UDP connect)");
    const auto group = net::parse_ipv4(options.multicast_group);
    const std::string suggest_dev = multicast_iface.empty() ? "lo" : multicast_iface;
    if (!group) {
        report.fail("'" + options.multicast_group + "' is not an IPv4 address", "set GECKO_MULTICAST to GROUP:PORT, e.g. 239.255.71.67:7650");
    } else {
        const auto route = route_for(*group);
        const auto local = net::local_address_towards(*group);
        if (!route && !local) {
            problem(true, "no route: the kernel has nowhere to send multicast",
                    "sudo ip route add 239.255.0.0/16 dev " + suggest_dev + "   (or export GECKO_CORE=host)");
        } else {
            std::string via = route ? "via " + route->iface + (route->mask == 0 ? " (default route)" : "") : "via the kernel's choice";
            if (local) via += ", local address " + net::to_string(*local);
            const Interface* used = nullptr;
            for (const auto& i : ifs)
                if (route && i.name == route->iface) used = &i;
            if (used && !(used->flags & IFF_MULTICAST))
                problem(true, via + ": that interface has no MULTICAST flag",
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

    // 4. The core, as asked above.
    const auto& cores = core.census.cores;
    report.section("core of key '" + key + "' by multicast (" + options.multicast_group + ":" +
                   std::to_string(options.multicast_port) + ")");
    if (multicast_answered) report.ok(core.multicast.detail);
    else report.fail(core.multicast.detail);
    if (cores.size() > 1) {
        report.fail(std::to_string(cores.size()) + " geckocores of key '" + key + "' answered:");
        for (const auto& c : cores) report.info("  geckocore " + c.describe());
    }
    if (core.multicast.duplicate_cores > 0)
        report.fail("that core counted " + std::to_string(core.multicast.duplicate_cores) +
                    " announcements from another geckocore of key '" + key + "' (duplicate_cores, since it started)");
    report.section("core of key '" + key + "' by unicast (" + unicast_address +
                   (core_configured ? ", from --core / GECKO_CORE)" : ", this host's default port; GECKO_CORE is unset)"));
    if (core.unicast.ok)
        report.ok(core.unicast.detail);
    else if (core_configured)
        report.fail(core.unicast.detail);
    else
        report.info("no core at this host's default port (tried only as a hint: GECKO_CORE is unset)");

    const bool security_agrees = check_security(report, key, cores);

    std::printf("\n");
    const bool unicast_elsewhere = multicast_answered && core.unicast.ok &&
                                   std::none_of(cores.begin(), cores.end(), [&](const CoreSeen& c) { return c.instance == core.unicast.instance; });
    if (cores.size() > 1 || unicast_elsewhere) {
        std::string list;
        for (const auto& c : cores) list += (list.empty() ? "" : "; ") + c.describe() + " (by multicast)";
        if (unicast_elsewhere) list += "; " + core.unicast.core + " (by unicast)";
        const std::size_t n = cores.size() + (unicast_elsewhere ? 1 : 0);
        std::printf("verdict: %zu geckocores serve key '%s': %s\n", n, key.c_str(), list.c_str());
        report.fix("stop one of them: " + list + ". Nodes register with whichever answers first, and nodes on "
                   "different cores do not see each other");
        report.print_fixes();
        return exit_failure;
    }
    if (core.multicast.duplicate_cores > 0) {
        std::printf("verdict: another geckocore of key '%s' announced itself to the one that answered (%s), though "
                    "it did not answer here\n", key.c_str(), core.multicast.core.c_str());
        report.fix("stop one of them: the other one's host and pid are in the log of geckocore " + core.multicast.core +
                   " ('another geckocore serves key'); it may run on another host. The counter counts since that core "
                   "started: if the other one is gone already, restart this one to clear it");
        report.print_fixes();
        return exit_failure;
    }
    if (!security_agrees) {
        std::printf("verdict: this machine and the core of key '%s' do not hold the same secret: its programs cannot "
                    "join (see security above)\n", key.c_str());
        report.print_fixes();
        return exit_failure;
    }
    if (multicast_answered && (core.unicast.ok || !core_configured)) {
        std::printf("verdict: the core of key '%s' is reachable by multicast%s; nodes will find it by themselves\n",
                    key.c_str(), multicast_iface.empty() ? " (through loopback: from this host only)" : "");
    } else if (multicast_answered) {
        std::printf("verdict: the core answers by multicast, but not at --core / GECKO_CORE (%s)\n", unicast_address.c_str());
        report.fix("fix GECKO_CORE (or unset it: multicast works here)");
    } else if (core.unicast.ok) {
        std::printf("verdict: the core of key '%s' is reachable by unicast only\n", key.c_str());
        if (core_configured)
            report.fix("nodes try multicast for 1.5 s before GECKO_CORE; to skip that wait: export GECKO_NO_MULTICAST=1");
        else
            report.fix("multicast does not reach the core: export GECKO_CORE=127.0.0.1 (and GECKO_NO_MULTICAST=1 to skip the multicast wait)");
        report.fix("for multicast: check the route above, and that no firewall drops UDP port " +
                   std::to_string(options.multicast_port) + " (sudo iptables -I INPUT -p udp --dport " +
                   std::to_string(options.multicast_port) + " -j ACCEPT)");
    } else {
        std::printf("verdict: no core of key '%s' answered\n", key.c_str());
        report.fix("start the core on the robot (or here): geckocore --key " + key);
        report.fix("if it runs on another host where multicast does not reach (Docker bridge, Wi-Fi, VPN): export GECKO_CORE=that-host");
        report.fix("check that no firewall drops UDP " + std::to_string(options.multicast_port) +
                   " (multicast) and TCP to the core (its port: the 'listening on' line of geckocore)");
    }
    report.print_fixes();
    return multicast_answered || core.unicast.ok ? exit_ok : exit_failure;
}

}  // namespace gecko::tools
