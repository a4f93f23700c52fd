// SPDX-License-Identifier: Apache-2.0
// gecko-click-gateway: lets existing Click clients (protobuf over ZeroMQ
// REQ/REP) drive a Gecko lockstep simulation such as gecko-sim. Parses
// arguments, builds a Node and a Gateway (gateway.hpp), serves until SIGINT or
// SIGTERM. Exit codes: 0 stopped by a signal, 1 runtime failure, 2 usage error.
#include "gecko/click_gateway/gateway.hpp"

#include <gecko/error.hpp>
#include <gecko/node.hpp>
#include <gecko/signals.hpp>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>

namespace {

const char* const usage =
    "usage: gecko-click-gateway --key KEY [options]\n"
    "\n"
    "Serves Click's wire format (protobuf over a ZeroMQ REP socket) in front of the\n"
    "Gecko lockstep simulation SIM under KEY (e.g. gecko-sim), so that existing Click\n"
    "clients drive it unchanged. Every request gets exactly one reply; failures come\n"
    "back as a Click ErrorMessage saying why.\n"
    "\n"
    "  --key KEY            the simulation's key (default: $GECKO_KEY; required)\n"
    "  --bind ENDPOINT      where Click clients connect (default tcp://*:5555; e.g.\n"
    "                       tcp://127.0.0.1:5555, tcp://127.0.0.1:* for a free port, ipc:///tmp/click)\n"
    "  --sim SIM            the simulation's topic prefix (default sim: topics sim/click/request\n"
    "                       and sim/click/answer)\n"
    "  --core HOST[:PORT]   geckocore's address when multicast gets no answer (default: $GECKO_CORE)\n"
    "  --no-multicast       find geckocore through --core only (also $GECKO_NO_MULTICAST=1)\n"
    "  --name NAME          this node's name (default gecko-click-gateway)\n"
    "  --timeout-ms N       longest wait for the simulation per request, in ms (default 5000);\n"
    "                       past it the client gets an ErrorMessage\n"
    "  --help               this text\n"
    "\n"
    "Exit codes: 0 stopped by SIGINT/SIGTERM, 1 runtime failure, 2 usage error.\n";

int usage_error(const std::string& message) {
    std::fprintf(stderr, "gecko-click-gateway: %s\n%s", message.c_str(), usage);
    return 2;
}

bool parse_ms(const std::string& text, long& out) {
    if (text.empty() || text.size() > 9 || text.find_first_not_of("0123456789") != std::string::npos) return false;
    out = std::stol(text);
    return out >= 1;
}

}  // namespace

int main(int argc, char** argv) {
    gecko::NodeOptions node_options = gecko::NodeOptions::from_env();
    // Not the default (/proc/self/comm): the kernel cuts it to 15 characters.
    if (!std::getenv("GECKO_NODE")) node_options.name = "gecko-click-gateway";
    gecko::click::GatewayOptions options;
    long timeout_ms = 5000;

    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        auto value = [&](std::string& out) {
            if (i + 1 >= argc) return false;
            out = argv[++i];
            return true;
        };
        std::string v;
        if (arg == "--help" || arg == "-h") {
            std::fputs(usage, stdout);
            return 0;
        } else if (arg == "--key") {
            if (!value(v) || v.empty()) return usage_error("--key needs a value");
            node_options.key = v;
        } else if (arg == "--bind") {
            if (!value(v) || v.empty()) return usage_error("--bind needs an endpoint, e.g. tcp://*:5555");
            options.bind = v;
        } else if (arg == "--sim") {
            if (!value(v) || v.empty()) return usage_error("--sim needs the simulation's topic prefix, e.g. sim");
            options.simulation = v;
        } else if (arg == "--core") {
            if (!value(v) || v.empty()) return usage_error("--core needs HOST[:PORT]");
            node_options.core = v;
        } else if (arg == "--no-multicast") {
            node_options.multicast_enabled = false;
        } else if (arg == "--name") {
            if (!value(v) || v.empty()) return usage_error("--name needs a value");
            node_options.name = v;
        } else if (arg == "--timeout-ms") {
            if (!value(v) || !parse_ms(v, timeout_ms)) return usage_error("--timeout-ms needs milliseconds (1..999999999)");
        } else {
            return usage_error("unknown argument '" + arg + "'");
        }
    }
    if (node_options.key.empty()) return usage_error("no key: pass --key KEY or set GECKO_KEY");
    options.controller.timeout = std::chrono::milliseconds(timeout_ms);
    options.controller.connect_timeout = std::chrono::milliseconds(timeout_ms);

    gecko::install_signal_handlers();
    try {
        gecko::Node node(node_options);
        gecko::click::Gateway gateway(node, options);
        const auto& topics = gateway.controller().topics();
        std::cout << "gecko-click-gateway: Click clients on " << gateway.endpoint() << " (REP, protobuf), simulation '"
                  << options.simulation << "' under key '" << node.key() << "' (topics " << topics.request << ", "
                  << topics.answer << "), timeout " << timeout_ms << " ms" << std::endl;

        const gecko::click::RepLoopStats loop = gateway.run([] { return gecko::ok(); });

        // Free the simulation for another controller rather than leave it owned
        // until its takeover delay.
        if (!gateway.end_run("gecko-click-gateway stopped")) {
            std::cerr << "gecko-click-gateway: the simulation did not acknowledge the end of the run" << std::endl;
        }
        const auto& s = gateway.stats();
        std::cout << "gecko-click-gateway: stopped after " << loop.requests << " requests (" << s.handshakes
                  << " handshakes, " << s.steps << " steps, " << s.sensor_requests << " sensor requests, " << s.resets
                  << " resets, " << s.ended_runs << " ended runs, " << s.error_replies << " ErrorMessage replies)"
                  << std::endl;
        return 0;
    } catch (const gecko::Error& e) {
        std::cerr << "gecko-click-gateway: " << e.what() << std::endl;
        return e.code() == gecko::Errc::invalid_argument ? 2 : 1;
    } catch (const std::exception& e) {
        std::cerr << "gecko-click-gateway: " << e.what() << std::endl;
        return 1;
    }
}
