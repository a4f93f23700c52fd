// SPDX-License-Identifier: Apache-2.0
// gecko-bridge: one key's topics, services and graph for browsers and
// Foxglove, over the Foxglove WebSocket protocol, and a live page at /.
// Run:  gecko-bridge --key K            then open http://127.0.0.1:8765/
#include "academy/command_line.hpp"
#include "bridge.hpp"
#include "page.hpp"
#include "server.hpp"

#include <gecko/options.hpp>
#include <gecko/security/key_store.hpp>
#include <gecko/security/secret.hpp>
#include <gecko/signals.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <optional>

int main(int argc, char** argv) {
    using namespace gecko::bridge;
    gecko::OptionParser args("gecko-bridge",
                             "serves a key's topics, services and graph over the Foxglove WebSocket protocol, and a "
                             "live page at /");
    BridgeOptions bridge;
    ServerOptions server;
    std::string listen = "127.0.0.1:8765";
    if (const char* t = std::getenv("GECKO_BRIDGE_TOKEN")) server.token = t;
    long long budget_mib = static_cast<long long>(bridge.outbox.data_budget >> 20);
    long long depth = static_cast<long long>(bridge.outbox.default_depth);
    long long subscription_kib = static_cast<long long>(bridge.outbox.default_bytes >> 10);
    long long call_timeout_ms = bridge.call_timeout.count();
    long long max_message_mib = static_cast<long long>(server.max_client_message >> 20);
    args.text("--listen", listen, "ADDRESS:PORT",
              "where to listen (default 127.0.0.1:8765; port 0: any free one). Not loopback: a token is required");
    args.text("--token", server.token, "TOKEN",
              "a secret every client presents (?token=, Authorization: Bearer, or the page's cookie); also "
              "GECKO_BRIDGE_TOKEN");
    bool no_token = false;
    args.flag("--no-token", no_token,
              "in a key with a secret, serve loopback clients without the token derived from it (every user of this "
              "machine can then read the key through the bridge)");
    args.text("--tls-cert", server.tls_cert, "FILE", "PEM certificate (chain): serve https and wss");
    args.text("--tls-key", server.tls_key, "FILE", "PEM private key of --tls-cert");
    args.custom("--allow-origin", "ORIGIN",
                "a web origin whose pages may connect, e.g. https://app.foxglove.dev ('*': any); repeatable",
                [&](const std::string& v) {
                    server.allow_origins.push_back(v);
                    return std::string();
                });
    args.text("--www", server.www, "DIR", "the page's folder (default: installed with the bridge)");
    args.integer("--client-budget", budget_mib, 1, 4096, "MiB",
                 "data queued per client before the oldest is dropped (default 16)");
    args.integer("--depth", depth, 1, 1024, "N",
                 "messages a subscription that did not ask for a depth keeps while its client is busy (default 1024)");
    args.integer("--subscription-budget", subscription_kib, 1, 1 << 20, "KiB",
                 "bytes such a subscription keeps, whichever of the two is fewer; at least one message (default 1024)");
    args.integer("--call-timeout", call_timeout_ms, 1, 600000, "MS", "service call deadline (default 5000)");
    args.integer("--max-client-message", max_message_mib, 1, 1024, "MiB",
                 "largest message a client may send (default 16)");
    academy::AcademyCommandLine academy;
    academy::declare_options(args, academy);
    bridge.node = gecko::NodeOptions::from_args(argc, argv, args, "gecko_bridge");
    bridge.outbox.data_budget = static_cast<std::size_t>(budget_mib) << 20;
    bridge.outbox.default_depth = static_cast<std::size_t>(depth);
    bridge.outbox.default_bytes = static_cast<std::size_t>(subscription_kib) << 10;
    bridge.call_timeout = std::chrono::milliseconds(call_timeout_ms);
    server.max_client_message = static_cast<std::size_t>(max_message_mib) << 20;

    // In a secured key the bridge's clients see what only holders of the secret may: without a token of
    // the user's, they present the one derived from the secret (docs/SECURITY.md §10).
    bool derived_token = false;
    if (server.token.empty() && !no_token) {
        try {
            if (const auto secret = gecko::security::find_secret(bridge.node.key)) {
                server.token = secret->bridge_token();
                derived_token = true;
            }
        } catch (const std::exception& e) {
            std::cerr << "gecko-bridge: " << e.what() << "\n";
            return 1;
        }
    }
    const auto colon = listen.rfind(':');
    long long port = -1;
    if (colon == std::string::npos ||
        !gecko::OptionParser::parse_integer(listen.substr(colon + 1), 0, 65535, port).empty()) {
        std::cerr << "gecko-bridge: --listen wants ADDRESS:PORT, e.g. 127.0.0.1:8765 (got '" << listen << "')\n";
        return 2;
    }
    server.address = listen.substr(0, colon);
    if (server.address.size() > 2 && server.address.front() == '[') server.address = server.address.substr(1, server.address.size() - 2);
    server.port = static_cast<unsigned short>(port);
    if (const auto why = check_exposure(server); !why.empty()) {
        std::cerr << "gecko-bridge: " << why << "\n";
        return 2;
    }
    // The program's own file, not argv[0]: `gecko bridge` runs it under its bare name.
    std::error_code exe_error;
    const auto exe = std::filesystem::read_symlink("/proc/self/exe", exe_error);
    server.www = find_www(server.www, exe_error ? std::string(argv[0]) : exe.string());
    if (const auto missing = missing_page_files(server.www); !missing.empty()) {
        std::cerr << "gecko-bridge: the page is incomplete in " << server.www << " (missing";
        for (const auto& m : missing) std::cerr << " " << m;
        std::cerr << "); the protocol works, the page will not. scripts/install-deps installs its libraries.\n";
    }

    try {
        boost::asio::io_context io(1);
        auto core = std::make_shared<Bridge>(bridge, io);
        core->start();
        Server web(io, core, server);
        std::optional<academy::AcademyService> academy_service;
        if (academy.enabled) academy_service.emplace(academy, bridge.node, io, core, web, server);
        web.start();
        const std::string scheme = web.tls() ? "https" : "http";
        const std::string host = server.address.find(':') != std::string::npos ? "[" + server.address + "]" : server.address;
        std::cout << "gecko-bridge: key '" << bridge.node.key << "' serving " << scheme << "://" << host << ":"
                  << web.port() << "/ (Foxglove WebSocket at " << (web.tls() ? "wss" : "ws") << "://" << host << ":"
                  << web.port() << "/)" << std::endl;
        if (derived_token)
            std::cout << "gecko-bridge: key '" << bridge.node.key << "' is secured: every client presents the token "
                      << "derived from its secret (`gecko keygen --key " << bridge.node.key << " --bridge-token` prints "
                      << "it): " << scheme << "://" << host << ":" << web.port() << "/?token=" << server.token << std::endl;
        if (academy_service) academy_service->print(std::cout, host, web.port(), web.tls());
        boost::asio::signal_set signals(io, SIGINT, SIGTERM);
        signals.async_wait([&](const boost::system::error_code&, int) {
            web.stop();
            if (academy_service) academy_service->stop();
            core->stop();
            io.stop();
        });
        io.run();
        std::cout << "gecko-bridge: stopped; " << core->stats_json() << std::endl;
        if (academy_service) std::cout << "gecko-bridge: academy " << academy_service->counters_json() << std::endl;
    } catch (const std::exception& e) {
        std::cerr << "gecko-bridge: " << e.what() << "\n";
        return 1;
    }
    return 0;
}
