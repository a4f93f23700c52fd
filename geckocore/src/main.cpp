// SPDX-License-Identifier: Apache-2.0
// geckocore: the discovery daemon of one key. Parses arguments, builds
// CoreOptions, runs gecko::core::Core. Exit codes: 0 ok, 1 runtime failure, 2 usage error.
#include "geckocore/core.hpp"

#include "gecko/error.hpp"
#include "gecko/options.hpp"

#include <signal.h>

#include <atomic>
#include <cstdio>
#include <iostream>
#include <string>

namespace {

std::atomic<gecko::core::Core*> running{nullptr};

extern "C" void on_signal(int sig) {
    if (auto* core = running.load()) core->stop();  // an atomic store: async-signal-safe
    signal(sig, SIG_DFL);                            // a second signal ends the process
}

}  // namespace

int main(int argc, char** argv) {
    gecko::core::CoreOptions options;
    try {
        options = gecko::core::CoreOptions::from_env();
    } catch (const gecko::Error& e) {
        std::fprintf(stderr, "geckocore: %s\n", e.what());
        return 2;
    }

    gecko::OptionParser args("geckocore",
                             "the discovery daemon for one key (one robot, one simulation). Nodes find it by UDP\n"
                             "multicast, or through GECKO_CORE=host where multicast does not work.");
    bool no_multicast = false;
    long long lease_ms = options.lease.count(), hello_ms = options.hello_timeout.count();
    long long log_period_ms = options.log_period.count();
    args.text("--key", options.key, "KEY", "the key to serve (GECKO_KEY); required").alias("-k");
    args.custom("--multicast", "GROUP:PORT", "multicast group shared by all keys (default 239.255.71.67:7650)",
                [&](const std::string& v) { return gecko::parse_multicast(v, options.multicast_group, options.multicast_port); });
    args.integer("--ttl", options.ttl, 0, 255, "N", "multicast TTL (default 1: this subnet)");
    args.text("--interface", options.interface, "IF", "interface name or IPv4 address for multicast (GECKO_INTERFACE)");
    args.text("--listen", options.listen, "ENDPOINT", "this core's ZeroMQ endpoint (default tcp://0.0.0.0:*, a free port)");
    args.integer("--door", options.door_port, 0, 65535, "PORT",
                 "the host door's tcp port (default 7651; 0: none): the first core on a host holds it and sends "
                 "GECKO_CORE=host users to the core of their key");
    args.flag("--no-multicast", no_multicast, "unicast only (GECKO_NO_MULTICAST=1)");
    args.integer("--lease", lease_ms, 100, 3600000, "MS", "drop a node silent for MS milliseconds (default 3000)");
    args.integer("--max-entities-per-node", options.max_entities_per_session, 1, 1000000, "N",
                 "entities one node may register (default 4096)");
    args.integer("--max-entities", options.max_entities, 1, 100000000, "N",
                 "entities of all nodes together the core may hold (default 100000)");
    args.integer("--max-sessions-per-host", options.max_sessions_per_host, 1, 1000000, "N",
                 "nodes one host (one peer address) may register (default 1024)");
    args.integer("--max-sessions-per-connection", options.max_sessions_per_connection, 1, 1000000, "N",
                 "nodes one connection may register (default 16: a process shares one among up to 16 of its nodes)");
    args.integer("--max-types-per-topic-per-node", options.max_types_per_topic_per_node, 1, 4096, "N",
                 "distinct types one node may declare on one topic (default 16)");
    args.integer("--hello-timeout", hello_ms, 100, 3600000, "MS",
                 "close a connection that has not said hello by then (default 10000)");
    args.integer("--log-period", log_period_ms, 10, 3600000, "MS",
                 "a flood of one kind of log line writes at most one such line per MS, with the count held back "
                 "(default 10000)");
    args.text("--shm-directory", options.shm_directory, "DIR",
              "where this host's nodes keep shared memory: the core removes what crashed ones left there every 10 s "
              "(default /dev/shm; \"\": never)");
    args.text("--claims-directory", options.claims_directory, "DIR",
              "where the core keeps which node held which session and entity id, for its next run "
              "(default /dev/shm; \"\": nowhere)");
    args.parse_or_exit(argc, argv);
    if (no_multicast) options.multicast = false;
    options.lease = std::chrono::milliseconds(lease_ms);
    options.hello_timeout = std::chrono::milliseconds(hello_ms);
    options.log_period = std::chrono::milliseconds(log_period_ms);
    if (options.key.empty()) {
        std::fprintf(stderr, "geckocore: no key: pass --key KEY or set GECKO_KEY (--help lists the options)\n");
        return 2;
    }

    try {
        gecko::core::Core core(options);
        std::cout << "geckocore: key '" << options.key << "' instance " << core.instance() << " listening on "
                  << core.endpoint();
        if (core.multicast_active())
            std::cout << ", multicast " << options.multicast_group << ":" << options.multicast_port << " ttl " << options.ttl;
        else
            std::cout << ", no multicast";
        if (options.door_port == 0)
            std::cout << ", no door";
        else if (core.holds_door())
            std::cout << ", holding the host door on tcp port " << options.door_port;
        else
            std::cout << ", registering with the host door on tcp port " << options.door_port;
        if (const auto fingerprint = core.secured_fingerprint(); !fingerprint.empty())
            std::cout << ", secured (secret " << fingerprint
                      << (core.accepted_fingerprint().empty() ? "" : ", also accepting " + core.accepted_fingerprint() + " during a rotation")
                      << ")";
        std::cout << std::endl;
        running = &core;
        struct sigaction action {};
        action.sa_handler = on_signal;
        sigemptyset(&action.sa_mask);
        sigaction(SIGINT, &action, nullptr);
        sigaction(SIGTERM, &action, nullptr);
        const int rc = core.run();
        running = nullptr;
        return rc;
    } catch (const gecko::Error& e) {
        std::fprintf(stderr, "geckocore: %s\n", e.what());
        return e.code() == gecko::Errc::invalid_argument ? 2 : 1;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "geckocore: %s\n", e.what());
        return 1;
    }
}
