// SPDX-License-Identifier: Apache-2.0
#pragma once
// Shared fixtures for the discovery tests: per-process unique ports and keys
// (ctest runs test cases in parallel, each in its own process), and spawning
// geckocore / fake_node.

#include "discovery/core_query.hpp"
#include "gecko/node.hpp"
#include "support/process.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <map>
#include <sstream>
#include <thread>
#include <string>
#include <vector>

namespace gecko::test {

using namespace std::chrono_literals;

/// A multicast port unique to this test process (keys keep tests apart anyway).
inline std::uint16_t test_multicast_port() { return static_cast<std::uint16_t>(20000 + (::getpid() % 20000)); }
inline std::string test_multicast() { return "239.255.71.67:" + std::to_string(test_multicast_port()); }
inline std::string test_key(const std::string& name) { return "t" + std::to_string(::getpid()) + "-" + name; }

/// geckocore for `key` on loopback (ephemeral port unless `listen` says otherwise).
struct CoreProcess {
    Process proc;
    std::string endpoint;  // as printed: tcp://127.0.0.1:PORT

    static CoreProcess start(const std::string& key, std::vector<std::string> extra = {},
                             const std::string& listen = "tcp://127.0.0.1:*") {
        std::vector<std::string> args{"--key", key, "--multicast", test_multicast(), "--listen", listen};
        // No host door unless the test asks for one (on a port of its own): the
        // machine's real door, port 7651, is not the tests' to take.
        if (std::find(extra.begin(), extra.end(), "--door") == extra.end()) extra.insert(extra.end(), {"--door", "0"});
        args.insert(args.end(), extra.begin(), extra.end());
        SpawnOptions o;
        o.stderr_mode = Stderr::merge;
        o.env["GECKO_LOG"] = "info";
        o.unset_env = {"GECKO_KEY", "GECKO_CORE", "GECKO_MULTICAST", "GECKO_NO_MULTICAST", "GECKO_INTERFACE"};
        CoreProcess c{Process::spawn(GECKOCORE_PATH, args, o), {}};
        const auto line = c.proc.wait_for_line("listening on", 10s);
        if (!line) throw std::runtime_error("geckocore did not start:\n" + c.proc.output());
        const auto at = line->find("listening on ") + 13;
        c.endpoint = line->substr(at, line->find(',', at) - at);
        return c;
    }
    std::string port() const { return endpoint.substr(endpoint.rfind(':') + 1); }
};

/// fake_node for `key`; `env` adds GECKO_* variables.
inline Process start_node(const std::string& key, const std::string& name, std::map<std::string, std::string> env = {},
                          std::vector<std::string> extra = {}) {
    std::vector<std::string> args{"--key", key, "--node", name, "--multicast", test_multicast()};
    args.insert(args.end(), extra.begin(), extra.end());
    SpawnOptions o;
    o.env = std::move(env);
    o.env.emplace("GECKO_LOG", "warn");
    o.stderr_mode = Stderr::merge;  // its warnings are part of what tests check
    for (const char* v : {"GECKO_KEY", "GECKO_CORE", "GECKO_MULTICAST", "GECKO_NO_MULTICAST", "GECKO_INTERFACE"})
        if (!o.env.count(v)) o.unset_env.push_back(v);
    auto p = Process::spawn(FAKE_NODE_PATH, args, o);
    if (!p.wait_for_line("ready", 20s)) throw std::runtime_error("fake_node did not start:\n" + p.output());
    return p;
}

/// A node of `key` that goes straight to `core` (no waiting on the multicast group).
inline gecko::NodeOptions node_options(const std::string& key, const std::string& name, const CoreProcess& core) {
    gecko::NodeOptions o;
    o.key = key;
    o.name = name;
    o.multicast = test_multicast();
    o.multicast_enabled = false;
    o.core = core.endpoint.substr(6);  // host:port
    o.transports = {"ipc", "tcp"};
    o.lease = 1000ms;
    return o;
}

/// DiscoveryOptions for in-test queries of `key`'s core.
inline gecko::net::FinderOptions query_options(const std::string& key) {
    gecko::net::FinderOptions o;
    o.key = key;
    o.node = "test";
    o.multicast_port = test_multicast_port();
    return o;
}

/// Polls the core's table until `pred` holds (bounded). Returns the last result.
template <typename Pred>
gecko::Graph query_until(const gecko::net::FinderOptions& o, Pred pred, std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    gecko::Graph last;
    for (;;) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0) return last;
        try {
            last = gecko::query_graph(o, std::max(left, 100ms));
            if (pred(last)) return last;
        } catch (const std::exception&) {
        }
        std::this_thread::sleep_for(20ms);  // poll interval of a bounded wait, not a synchronisation
    }
}

inline std::size_t producers(const gecko::Graph& r, const std::string& topic) {
    const auto* t = r.find(topic);
    return t ? t->producers.size() : 0;
}
inline std::size_t consumers(const gecko::Graph& r, const std::string& topic) {
    const auto* t = r.find(topic);
    return t ? t->consumers.size() : 0;
}

/// "peers ID N ..." lines: the count N.
inline int peer_count(const std::string& line) {
    std::istringstream in(line);
    std::string word, id;
    int n = -1;
    in >> word >> id >> n;
    return n;
}
inline std::function<bool(const std::string&)> peers_line(std::uint64_t id, int n) {
    return [=](const std::string& l) { return l.rfind("peers " + std::to_string(id) + " ", 0) == 0 && peer_count(l) == n; };
}

}  // namespace gecko::test
