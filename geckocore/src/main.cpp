// SPDX-License-Identifier: Apache-2.0
// geckocore: the discovery daemon of one key. Parses arguments, builds
// CoreOptions, runs gecko::core::Core. Exit codes: 0 ok, 1 runtime failure, 2 usage error.
#include "geckocore/core.hpp"

#include "discovery/discovery_client.hpp"  // parse_multicast
#include "gecko/error.hpp"
#include "gecko/signals.hpp"

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>

namespace {

const char* const usage =
    "usage: geckocore [--key KEY] [options]\n"
    "\n"
    "The discovery daemon for one key (one robot, one simulation). Nodes find it by\n"
    "UDP multicast, or through GECKO_CORE=host:port where multicast does not work.\n"
    "\n"
    "  --key KEY              the key to serve (default: $GECKO_KEY; required)\n"
    "  --multicast GROUP:PORT multicast group shared by all keys (default 239.255.71.67:7650,\n"
    "                         or $GECKO_MULTICAST)\n"
    "  --ttl N                multicast TTL (default 1: this subnet)\n"
    "  --interface IF         interface name or IPv4 address for multicast (default: any,\n"
    "                         or $GECKO_INTERFACE)\n"
    "  --listen ENDPOINT      this core's ZeroMQ endpoint (default tcp://0.0.0.0:*, a free\n"
    "                         port; multicast tells nodes which)\n"
    "  --door PORT            the host door's tcp port (default 7651; 0: none): the first core\n"
    "                         on a host holds it and sends GECKO_CORE=host users to the core\n"
    "                         of their key; the others register with it and take it over\n"
    "  --no-multicast         unicast only (also $GECKO_NO_MULTICAST=1)\n"
    "  --lease MS             drop a node silent for MS milliseconds (default 3000)\n"
    "  --help                 this text\n"
    "\n"
    "Exit codes: 0 stopped by SIGINT/SIGTERM, 1 runtime failure, 2 usage error.\n";

int usage_error(const std::string& message) {
    std::fprintf(stderr, "geckocore: %s\n%s", message.c_str(), usage);
    return 2;
}

bool parse_int(const std::string& text, long min, long max, long& out) {
    if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos || text.size() > 9) return false;
    out = std::stol(text);
    return out >= min && out <= max;
}

}  // namespace

int main(int argc, char** argv) {
    gecko::core::CoreOptions options;
    if (const char* v = std::getenv("GECKO_KEY")) options.key = v;
    if (const char* v = std::getenv("GECKO_MULTICAST"); v && *v) {
        if (!gecko::detail::parse_multicast(v, options.multicast_group, options.multicast_port))
            return usage_error(std::string("GECKO_MULTICAST='") + v + "' is not GROUP[:PORT]");
    }
    if (const char* v = std::getenv("GECKO_INTERFACE")) options.interface = v;
    if (const char* v = std::getenv("GECKO_NO_MULTICAST"); v && *v && std::string(v) != "0") options.multicast = false;

    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        auto value = [&](std::string& out) {
            if (i + 1 >= argc) return false;
            out = argv[++i];
            return true;
        };
        std::string v;
        long n = 0;
        if (arg == "--help" || arg == "-h") {
            std::fputs(usage, stdout);
            return 0;
        } else if (arg == "--key") {
            if (!value(v) || v.empty()) return usage_error("--key needs a value");
            options.key = v;
        } else if (arg == "--multicast") {
            if (!value(v) || !gecko::detail::parse_multicast(v, options.multicast_group, options.multicast_port))
                return usage_error("--multicast needs GROUP[:PORT] with GROUP in 224.0.0.0/4");
        } else if (arg == "--ttl") {
            if (!value(v) || !parse_int(v, 0, 255, n)) return usage_error("--ttl needs 0..255");
            options.ttl = static_cast<int>(n);
        } else if (arg == "--interface") {
            if (!value(v)) return usage_error("--interface needs a name or an address");
            options.interface = v;
        } else if (arg == "--listen") {
            if (!value(v) || v.empty()) return usage_error("--listen needs an endpoint, e.g. tcp://0.0.0.0:7651");
            options.listen = v;
        } else if (arg == "--door") {
            if (!value(v) || !parse_int(v, 0, 65535, n)) return usage_error("--door needs a tcp port (0..65535; 0: no door)");
            options.door_port = static_cast<std::uint16_t>(n);
        } else if (arg == "--no-multicast") {
            options.multicast = false;
        } else if (arg == "--lease") {
            if (!value(v) || !parse_int(v, 100, 3600000, n)) return usage_error("--lease needs milliseconds (100..3600000)");
            options.lease = std::chrono::milliseconds(n);
        } else {
            return usage_error("unknown argument '" + arg + "'");
        }
    }
    if (options.key.empty()) return usage_error("no key: pass --key KEY or set GECKO_KEY");

    gecko::install_signal_handlers();
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
        std::cout << std::endl;
        return core.run();
    } catch (const gecko::Error& e) {
        std::fprintf(stderr, "geckocore: %s\n", e.what());
        return e.code() == gecko::Errc::invalid_argument ? 2 : 1;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "geckocore: %s\n", e.what());
        return 1;
    }
}
