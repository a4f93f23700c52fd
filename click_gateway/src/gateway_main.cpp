// SPDX-License-Identifier: Apache-2.0
// gecko-click-gateway: lets existing Click clients (protobuf over ZeroMQ
// REQ/REP) drive a Gecko lockstep simulation such as gecko-sim. Parses
// arguments, builds a Node and a Gateway (gateway.hpp), serves until SIGINT or
// SIGTERM. Exit codes: 0 stopped by a signal, 1 runtime failure, 2 usage error.
#include "gecko/click_gateway/gateway.hpp"

#include <gecko/error.hpp>
#include <gecko/node.hpp>
#include <gecko/options.hpp>
#include <gecko/signals.hpp>

#include <cstdio>
#include <iostream>
#include <string>

int main(int argc, char** argv) {
    gecko::click::GatewayOptions options;
    long timeout_ms = 5000;
    gecko::OptionParser args("gecko-click-gateway",
                             "serves Click's wire format (protobuf over a ZeroMQ REP socket) in front of the Gecko "
                             "lockstep simulation SIM under KEY (e.g. gecko-sim), so that existing Click clients drive "
                             "it unchanged; every request gets exactly one reply, failures an ErrorMessage saying why "
                             "(but one over --max-request-bytes, which ZeroMQ refuses unread by closing the connection). "
                             "Exit codes: 0 stopped by SIGINT/SIGTERM, 1 runtime failure, 2 usage error");
    args.text("--bind", options.bind, "ENDPOINT",
              "where Click clients connect (default tcp://*:5555; tcp://127.0.0.1:* picks a free port)",
              [](const std::string& v) { return v.empty() ? std::string("empty") : std::string(); });
    args.text("--sim", options.simulation, "SIM", "the simulation's topic prefix (default sim)",
              [](const std::string& v) { return v.empty() ? std::string("empty") : std::string(); });
    args.integer("--timeout-ms", timeout_ms, 1, 999999999, "MS",
                 "longest wait for the simulation per request (default 5000); past it the client gets an ErrorMessage");
    long max_request_bytes = static_cast<long>(options.rep.max_request_bytes);
    args.integer("--max-request-bytes", max_request_bytes, 64, 1L << 30, "BYTES",
                 "largest request (default 16 MiB); ZeroMQ refuses a larger one when its size arrives, unread, by "
                 "closing that client's connection");
    long max_request_elements = static_cast<long>(options.max_request_elements);
    args.integer("--max-request-elements", max_request_elements, 16, 1L << 24, "N",
                 "most fields, map entries and numbers in one request (default 65536), which bounds what decoding it "
                 "allocates; a Control naming more objects than the handshake is refused too");
    long max_request_string_bytes = static_cast<long>(options.max_request_string_bytes);
    args.integer("--max-request-string-bytes", max_request_string_bytes, 64, 1L << 24, "BYTES",
                 "longest name or text in a request (default 4096)");
    // Not the default name (/proc/self/comm): the kernel cuts it to 15 characters.
    const gecko::NodeOptions node_options = gecko::NodeOptions::from_args(argc, argv, args, "gecko-click-gateway");
    options.rep.max_request_bytes = static_cast<std::size_t>(max_request_bytes);
    options.max_request_elements = static_cast<std::size_t>(max_request_elements);
    options.max_request_string_bytes = static_cast<std::size_t>(max_request_string_bytes);
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
                  << " resets, " << s.ended_runs << " ended runs, " << s.error_replies << " ErrorMessage replies, "
                  << s.refused << " refused, " << s.connections_closed << " client connections closed)" << std::endl;
        return 0;
    } catch (const gecko::Error& e) {
        std::cerr << "gecko-click-gateway: " << e.what() << std::endl;
        return e.code() == gecko::Errc::invalid_argument ? 2 : 1;
    } catch (const std::exception& e) {
        std::cerr << "gecko-click-gateway: " << e.what() << std::endl;
        return 1;
    }
}
