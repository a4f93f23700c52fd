// SPDX-License-Identifier: Apache-2.0
// gecko-click-gateway: lets existing Click clients (protobuf over ZeroMQ
// REQ/REP) drive a Gecko lockstep simulation such as gecko-sim (--bind: a
// Gateway, gateway.hpp), or, with --connect, offers an existing Click server
// to Gecko controllers as a simulation (click_server_backend.hpp behind a
// SimulationServer). Serves until SIGINT or SIGTERM. Exit codes: 0 stopped by
// a signal, 1 runtime failure, 2 usage error.
#include "gecko/click_gateway/click_server_backend.hpp"
#include "gecko/click_gateway/gateway.hpp"

#include <gecko/error.hpp>
#include <gecko/node.hpp>
#include <gecko/options.hpp>
#include <gecko/security/key_security.hpp>
#include <gecko/signals.hpp>

#include <gecko/click/simulation.hpp>
#include <gecko/msgs/sensors.hpp>
#include <gecko/time.hpp>

#include <cstdio>
#include <iostream>
#include <string>

namespace {

// --connect: an existing Click server (e.g. an AGX simulation) offered on
// Gecko as a lockstep simulation under the key, as gecko-sim offers its own.
int serve_click_server(const gecko::NodeOptions& node_options, const std::string& simulation,
                       gecko::click::ClickServerOptions server, long watchdog_ms, long spin_us) {
    gecko::Node node(node_options);
    gecko::click::ClickServerBackend backend(server, node.logger());
    // The server may come up after the gateway: wait for its handshake.
    bool said = false;
    while (gecko::ok()) {
        try {
            backend.handshake();
            break;
        } catch (const gecko::Error& e) {
            if (e.code() != gecko::Errc::timeout) throw;
            if (!said) std::cout << "gecko-click-gateway: waiting for the Click server at " << server.endpoint << std::endl;
            said = true;
        }
    }
    if (!gecko::ok()) return 0;
    gecko::click::SimulationServerOptions options;
    options.watchdog = std::chrono::milliseconds(watchdog_ms);
    options.request_subscriber.spin = std::chrono::microseconds(spin_us);
    gecko::click::SimulationServer sim(node, simulation, backend, options);
    auto joint_states = node.publisher<gecko::msgs::JointState>(simulation + "/joint_states");
    std::cout << "gecko-click-gateway: the Click server at " << server.endpoint << " is simulation '" << simulation
              << "' under key '" << node.key() << "' (topics " << sim.topics().request << ", " << sim.topics().answer
              << ", joint states on " << simulation << "/joint_states, control services " << simulation
              << "/control/{start,resume,stop,pause,reset,status}, status on " << simulation << "/status), timeout "
              << server.timeout.count() << " ms" << std::endl;
    std::uint64_t published = 0;
    while (sim.spin_once(std::chrono::milliseconds(10))) {
        if (backend.sensors_seen() == published) continue;
        published = backend.sensors_seen();
        auto js = backend.joint_state();
        js.stamp_ns = gecko::now_ns();
        joint_states.publish(js);
    }
    const auto& s = backend.stats();
    std::cout << "gecko-click-gateway: stopped after " << s.requests << " requests to the Click server (" << s.handshakes
              << " handshakes, " << s.steps << " steps, " << s.server_resets << " server resets, " << s.server_errors
              << " ErrorMessages, " << s.timeouts << " timeouts, " << s.reconnects << " reconnects)" << std::endl;
    return 0;
}

}  // namespace

// Click's own links carry no authentication or encryption (the Click
// protocol has none): in a secured key, say so when one leaves the host.
static void warn_if_exposed(const std::string& key, const std::string& endpoint, const std::string& what) {
    if (gecko::click::is_local_endpoint(endpoint)) return;
    try {
        if (!gecko::security::KeySecurity::find(key).secured()) return;
    } catch (const gecko::Error&) {
        return;  // an unusable secret file: the node says so
    }
    std::cerr << "gecko-click-gateway: WARNING: key '" << key << "' is secured (docs/SECURITY.md), but " << what
              << std::endl;
}

int main(int argc, char** argv) {
    gecko::click::GatewayOptions options;
    long timeout_ms = 5000;
    gecko::OptionParser args("gecko-click-gateway",
                             "serves Click's wire format (protobuf over a ZeroMQ REP socket) in front of the Gecko "
                             "lockstep simulation SIM under KEY (e.g. gecko-sim), so that existing Click clients drive "
                             "it unchanged; every request gets exactly one reply, failures an ErrorMessage saying why "
                             "(but one over --max-request-bytes, which ZeroMQ refuses unread by closing the connection). "
                             "With --connect, the other way: an existing Click server offered on Gecko as simulation SIM. "
                             "Exit codes: 0 stopped by SIGINT/SIGTERM, 1 runtime failure, 2 usage error");
    args.text("--bind", options.bind, "ENDPOINT",
              "where Click clients connect (default tcp://*:5555; tcp://127.0.0.1:* picks a free port)",
              [](const std::string& v) { return v.empty() ? std::string("empty") : std::string(); });
    std::string connect;
    args.text("--connect", connect, "ENDPOINT",
              "the other direction: connect to the Click server at ENDPOINT (e.g. tcp://sim-host:5555, an AGX "
              "simulation) and offer it on Gecko as simulation SIM under KEY, as gecko-sim does, for Gecko "
              "controllers; --bind is then not used",
              [](const std::string& v) { return v.empty() ? std::string("empty") : std::string(); });
    args.text("--sim", options.simulation, "SIM", "the simulation's topic prefix (default sim)",
              [](const std::string& v) { return v.empty() ? std::string("empty") : std::string(); });
    timeout_ms = 0;
    args.integer("--timeout-ms", timeout_ms, 1, 999999999, "MS",
                 "longest wait per request: for the simulation (default 5000; past it the Click client gets an "
                 "ErrorMessage), or with --connect for the Click server (default 3000, below a Gecko controller's "
                 "own 5 s: past it the controller gets an Error saying so, and the gateway reconnects)");
    long watchdog_ms = 1000;
    args.integer("--watchdog-ms", watchdog_ms, 0, 3600 * 1000, "MS",
                 "with --connect: once running, a Gecko controller that sends no Control for this long loses the "
                 "simulation (default 1000, 0: never), as with gecko-sim");
    long spin_us = 0;
    args.integer("--spin-us", spin_us, 0, 1000000, "US",
                 "with --connect: busy-poll shared memory this long for the controller's next request before blocking "
                 "(default 0: the Click server's answer needs ZeroMQ's I/O threads, which a busy-poll would keep off "
                 "a small machine's cores)");
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
    if (timeout_ms == 0) timeout_ms = connect.empty() ? 5000 : 3000;
    options.controller.timeout = std::chrono::milliseconds(timeout_ms);
    options.controller.connect_timeout = std::chrono::milliseconds(timeout_ms);

    gecko::install_signal_handlers();
    try {
        if (!connect.empty()) {
            gecko::click::ClickServerOptions server;
            server.endpoint = connect;
            server.timeout = std::chrono::milliseconds(timeout_ms);
            warn_if_exposed(node_options.key, connect,
                            "the link to the Click server at " + connect +
                                " is plain ZeroMQ: the simulation's sensors and controls cross the network unencrypted");
            return serve_click_server(node_options, options.simulation, server, watchdog_ms, spin_us);
        }
        gecko::Node node(node_options);
        gecko::click::Gateway gateway(node, options);
        warn_if_exposed(node.key(), gateway.endpoint(), "Click clients reach this gateway on " + gateway.endpoint() +
                                                            " over plain ZeroMQ: whoever reaches that address drives "
                                                            "simulation '" + options.simulation + "'; bind it to loopback "
                                                            "(--bind tcp://127.0.0.1:5555) unless the Click client runs "
                                                            "on another machine");
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
