// SPDX-License-Identifier: Apache-2.0
// gecko-bridge: one key's topics, services and graph for browsers and
// Foxglove, over the Foxglove WebSocket protocol, and a live page at /.
// Run:  gecko-bridge --key K            then open http://127.0.0.1:8765/
#include "academy/academy.hpp"
#include "bridge.hpp"
#include "page.hpp"
#include "server.hpp"

#include <gecko/options.hpp>
#include <gecko/signals.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>
#include <sstream>
#include <vector>

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
    bool academy_on = false;
    gecko::bridge::academy::AcademyOptions academy;
    args.flag("--academy", academy_on,
              "also serve the RoboticsAcademy endpoints /academy/manager, /academy/code, /academy/gui (docs/ACADEMY.md)");
    args.custom("--academy-sim-command", "COMMAND",
                "what the manager's open starts, split at spaces, e.g. 'gecko-sim --robots arm' (it gets the bridge's "
                "key); implies --academy. Without it open waits for a running simulation",
                [&](const std::string& v) {
                    std::istringstream words(v);
                    academy.simulation_command.clear();
                    for (std::string w; words >> w;) academy.simulation_command.push_back(w);
                    academy_on = true;
                    return academy.simulation_command.empty() ? std::string("empty command") : std::string();
                });
    std::vector<long long> academy_ports;
    args.custom("--academy-ports", "MANAGER,CODE,GUI",
                "also serve the academy endpoints on ports of their own, every path, as RoboticsAcademy's frontend "
                "expects them (RoboticsAcademy: 8765,1905,2303; 8765 is the bridge's own default: move --listen). "
                "Implies --academy",
                [&](const std::string& v) {
                    academy_ports.clear();
                    std::istringstream list(v);
                    for (std::string item; std::getline(list, item, ',');) {
                        long long p = 0;
                        if (const auto why = gecko::OptionParser::parse_integer(item, 0, 65535, p); !why.empty())
                            return why;
                        academy_ports.push_back(p);
                    }
                    academy_on = true;
                    return academy_ports.size() == 3 ? std::string() : std::string("wants three ports: MANAGER,CODE,GUI");
                });
    args.text("--academy-sim", academy.simulation, "NAME",
              "the simulation the academy controls: services NAME/control/*, topics NAME/* (default sim)");
    args.text("--academy-image", academy.image_topic, "TOPIC",
              "the gecko.msgs.Image topic the GUI endpoint shows (default academy/image, where a brain's "
              "GUI.show_image publishes)");
    args.text("--academy-python", academy.python, "PYTHON",
              "the python3 that runs brains and checks code; it must import gecko (default python3)");
    bridge.node = gecko::NodeOptions::from_args(argc, argv, args, "gecko_bridge");
    bridge.outbox.data_budget = static_cast<std::size_t>(budget_mib) << 20;
    bridge.outbox.default_depth = static_cast<std::size_t>(depth);
    bridge.outbox.default_bytes = static_cast<std::size_t>(subscription_kib) << 10;
    bridge.call_timeout = std::chrono::milliseconds(call_timeout_ms);
    server.max_client_message = static_cast<std::size_t>(max_message_mib) << 20;

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
        std::shared_ptr<gecko::bridge::academy::Academy> academy_endpoints;
        if (academy_on) {
            academy.node = bridge.node;
            academy_endpoints = std::make_shared<gecko::bridge::academy::Academy>(academy, io);
            academy_endpoints->start();
            web.serve_academy(academy_endpoints);
        }
        std::vector<std::unique_ptr<Server>> academy_servers;  // --academy-ports: manager, code, gui
        const gecko::bridge::academy::Endpoint endpoints[] = {gecko::bridge::academy::Endpoint::manager,
                                                              gecko::bridge::academy::Endpoint::code,
                                                              gecko::bridge::academy::Endpoint::gui};
        for (std::size_t i = 0; i < academy_ports.size(); ++i) {
            auto options = server;
            options.port = static_cast<unsigned short>(academy_ports[i]);
            academy_servers.push_back(std::make_unique<Server>(io, core, options));
            academy_servers.back()->serve_academy_only(academy_endpoints, endpoints[i]);
            academy_servers.back()->start();
        }
        web.start();
        const std::string scheme = web.tls() ? "https" : "http";
        const std::string host = server.address.find(':') != std::string::npos ? "[" + server.address + "]" : server.address;
        std::cout << "gecko-bridge: key '" << bridge.node.key << "' serving " << scheme << "://" << host << ":"
                  << web.port() << "/ (Foxglove WebSocket at " << (web.tls() ? "wss" : "ws") << "://" << host << ":"
                  << web.port() << "/)" << std::endl;
        if (academy_endpoints)
            std::cout << "gecko-bridge: RoboticsAcademy endpoints at " << (web.tls() ? "wss" : "ws") << "://" << host
                      << ":" << web.port() << "/academy/{manager,code,gui} for simulation '" << academy.simulation
                      << "'" << std::endl;
        const char* names[] = {"manager", "code", "gui"};
        for (std::size_t i = 0; i < academy_servers.size(); ++i)
            std::cout << "gecko-bridge: RoboticsAcademy " << names[i] << " port at " << (web.tls() ? "wss" : "ws")
                      << "://" << host << ":" << academy_servers[i]->port() << "/" << std::endl;
        boost::asio::signal_set signals(io, SIGINT, SIGTERM);
        signals.async_wait([&](const boost::system::error_code&, int) {
            web.stop();
            for (auto& s : academy_servers) s->stop();
            if (academy_endpoints) academy_endpoints->stop();
            core->stop();
            io.stop();
        });
        io.run();
        std::cout << "gecko-bridge: stopped; " << core->stats_json() << std::endl;
        if (academy_endpoints) std::cout << "gecko-bridge: academy " << academy_endpoints->counters_json() << std::endl;
    } catch (const std::exception& e) {
        std::cerr << "gecko-bridge: " << e.what() << "\n";
        return 1;
    }
    return 0;
}
