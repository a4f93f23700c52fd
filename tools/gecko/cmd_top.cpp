// SPDX-License-Identifier: Apache-2.0
// gecko top: `gecko list`, refreshed every second.
#include <unistd.h>

#include <cstdio>
#include <ctime>
#include <thread>

#include <gecko/signals.hpp>

#include "cli.hpp"
#include "commands.hpp"
#include "gecko/error.hpp"
#include "query.hpp"

namespace gecko::tools {

int run_top(const Args& args) {
    Connection connection;
    bool once = false;
    double interval_s = 1.0;
    Parser parser("top", "[options]",
                  "Shows the key's topics with their rates, publishers and subscribers (as `gecko list`),\n"
                  "redrawn every second until Ctrl-C. Rates are what the nodes report to the core every ~3 s.");
    parser.flag("--once", "print one frame and exit", once)
        .option("--interval", "SECONDS", "time between frames (default 1)", interval_s, 0.1, 3600)
        .connection(connection);
    if (!parser.parse(args)) return exit_ok;

    install_signal_handlers();
    const bool tty = ::isatty(STDOUT_FILENO) == 1;
    const auto options = search_options(connection.node);
    bool first = true;
    while (ok()) {
        std::string frame;
        try {
            frame = render_list(query(options, connection.timeout));
        } catch (const Error& e) {
            if (first) throw;  // never reached the core: a failure, not a frame
            frame = std::string("no answer from the core: ") + e.what() + "\n";
        }
        const std::time_t now = std::time(nullptr);
        char clock[16];
        std::strftime(clock, sizeof clock, "%H:%M:%S", std::localtime(&now));
        if (tty && !once) std::fputs("\033[H\033[2J", stdout);  // home, clear screen
        else if (!first) std::fputs("\n", stdout);
        std::printf("gecko top  %s%s\n", clock, once ? "" : "  (Ctrl-C to quit)");
        std::fputs(frame.c_str(), stdout);
        std::fflush(stdout);
        first = false;
        if (once) break;
        const auto next = std::chrono::steady_clock::now() + std::chrono::milliseconds(static_cast<long>(interval_s * 1000));
        while (ok() && std::chrono::steady_clock::now() < next) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return exit_ok;
}

}  // namespace gecko::tools
