// SPDX-License-Identifier: Apache-2.0
// fake_node: a node made of a DiscoveryClient only, driven by tests.
// Options: --key K --node N [--core ADDR] [--no-multicast] [--multicast G:P] [--lease MS] [--find-timeout MS]
//          [--locator L] (the node's locator, registered in its hello; default tcp://0.0.0.0:9, rewritten when sent)
// (the environment is read first, as DiscoveryOptions::from_env()).
// Commands on stdin, one per line:
//   pub|server ID TOPIC TYPE               register
//   sub|client ID TOPIC TYPE               register and watch (servers watch too: their clients)
//   remove ID | stats ID MPS | endpoint BOUND | describe | quit
// Output on stdout, one event per line:
//   ready SESSION | core INSTANCE | lost | peers ID N [PEER_ID@NODE@LOCATOR ...] | error ID MESSAGE
//   endpoint REWRITTEN | attempts TEXT | ok COMMAND
#include "discovery/discovery_client.hpp"
#include "gecko/graph.hpp"
#include "gecko/node.hpp"
#include "gecko/options.hpp"

#include <poll.h>
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <mutex>
#include <sstream>
#include <string>

using namespace gecko::detail;

namespace {
std::mutex out_mutex;
void say(const std::string& line) {
    std::lock_guard<std::mutex> lock(out_mutex);
    std::fputs((line + "\n").c_str(), stdout);
    std::fflush(stdout);
}
}  // namespace

int main(int argc, char** argv) {
    DiscoveryOptions o;
    static_cast<gecko::net::FinderOptions&>(o) = gecko::finder_options(gecko::NodeOptions::from_env());
    for (int i = 1; i + 1 < argc || (i < argc && std::string(argv[i]) == "--no-multicast"); ++i) {
        const std::string a = argv[i];
        if (a == "--no-multicast") {
            o.multicast = false;
            continue;
        }
        const std::string v = argv[++i];
        if (a == "--key") o.key = v;
        else if (a == "--node") o.node = v;
        else if (a == "--core") o.core = v;
        else if (a == "--multicast") (void)gecko::parse_multicast(v, o.multicast_group, o.multicast_port);
        else if (a == "--lease") o.lease = std::chrono::milliseconds(std::stol(v));
        else if (a == "--find-timeout") o.find_timeout = std::chrono::milliseconds(std::stol(v));
        else if (a == "--locator") o.locators.push_back(v);
        else {
            std::fprintf(stderr, "fake_node: unknown option %s\n", a.c_str());
            return 2;
        }
    }
    if (o.locators.empty()) o.locators.push_back("tcp://0.0.0.0:9");
    DiscoveryClient client(o);
    client.on_error([](std::uint64_t id, const std::string&, const std::string& m) { say("error " + std::to_string(id) + " " + m); });
    say("ready " + std::to_string(client.session()));

    std::uint64_t instance = 0;
    bool connected = false;
    std::string buffer;
    for (;;) {
        // Report core (re)connections as they happen.
        const bool c = client.connected();
        const auto inst = client.core_instance();
        if (c && inst != instance) {
            instance = inst;
            say("core " + std::to_string(inst));
        } else if (!c && connected) {
            say("lost");
        }
        connected = c;

        pollfd p{0, POLLIN, 0};
        if (::poll(&p, 1, 20) <= 0) continue;
        char buf[1024];
        const auto n = ::read(0, buf, sizeof buf);
        if (n <= 0) break;  // end of input: exit cleanly
        buffer.append(buf, static_cast<std::size_t>(n));
        for (auto nl = buffer.find('\n'); nl != std::string::npos; nl = buffer.find('\n')) {
            const std::string line = buffer.substr(0, nl);
            buffer.erase(0, nl + 1);
            std::istringstream in(line);
            std::string cmd;
            in >> cmd;
            if (cmd == "quit") return 0;
            if (cmd == "pub" || cmd == "sub" || cmd == "server" || cmd == "client") {
                Registration r;
                in >> r.id >> r.topic >> r.type_name;
                r.kind = cmd == "pub" ? EntityKind::publisher
                         : cmd == "sub" ? EntityKind::subscriber
                         : cmd == "server" ? EntityKind::server
                                           : EntityKind::client;
                client.add(r);
                if (r.kind != EntityKind::publisher) {
                    const auto id = r.id;
                    client.watch(id, [id](const std::vector<Peer>& peers) {
                        std::string s = "peers " + std::to_string(id) + " " + std::to_string(peers.size());
                        for (const auto& p : peers)
                            s += " " + std::to_string(p.reg.id) + "@" + p.node + "@" + (p.locators.empty() ? "-" : p.locators[0]);
                        say(s);
                    });
                }
                say("ok " + line);
            } else if (cmd == "remove") {
                std::uint64_t id = 0;
                in >> id;
                client.remove(id);
                say("ok " + line);
            } else if (cmd == "stats") {
                TopicStats s;
                in >> s.id >> s.messages_per_s;
                client.report({s});
                say("ok " + line);
            } else if (cmd == "endpoint") {
                std::string b;
                in >> b;
                say("endpoint " + client.local_endpoint_for(b));
            } else if (cmd == "describe") {
                say("attempts " + client.describe_attempts());
            } else if (!cmd.empty()) {
                say("unknown command " + cmd);
            }
        }
    }
    return 0;
}
