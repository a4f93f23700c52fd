// SPDX-License-Identifier: Apache-2.0
// gecko: the command line to look at and poke a key's topics.
// Dispatches to one subcommand per file (cmd_*.cpp).
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

#include "cli.hpp"
#include "commands.hpp"
#include "gecko/error.hpp"

namespace {

struct Command {
    const char* name;
    const char* summary;
    int (*run)(const gecko::tools::Args&);
};

const Command commands[] = {
    {"list", "topics and services of a key: types, publishers, subscribers, rates", gecko::tools::run_list},
    {"info", "everything about one topic: type, each publisher and subscriber, endpoints, stats", gecko::tools::run_info},
    {"echo", "print the messages of a topic (text, or JSON lines with --json)", gecko::tools::run_echo},
    {"hz", "measure the message rate of a topic", gecko::tools::run_hz},
    {"bw", "measure the bandwidth of a topic", gecko::tools::run_bw},
    {"pub", "publish a message written as JSON", gecko::tools::run_pub},
    {"nodes", "the nodes of a key, with host, pid and when the core last heard of them", gecko::tools::run_nodes},
    {"top", "live view of the topics and their rates, refreshed every second", gecko::tools::run_top},
    {"doctor", "check the network and whether the key's core answers, with fixes", gecko::tools::run_doctor},
};

void print_usage(std::FILE* to) {
    std::fputs("usage: gecko COMMAND [options]\n\n"
               "Look at and poke the topics of a robot or simulation (a key).\n\n"
               "Commands:\n", to);
    for (const auto& c : commands) std::fprintf(to, "  %-8s %s\n", c.name, c.summary);
    std::fputs("\n"
               "Every command takes --key KEY (or GECKO_KEY) and finds the key's geckocore by\n"
               "multicast, or at --core HOST[:PORT] (or GECKO_CORE) where multicast does not work.\n"
               "`gecko COMMAND --help` describes a command and its options.\n\n"
               "Exit codes: 0 ok, 1 failure (e.g. no core answered), 2 usage error.\n", to);
}

}  // namespace

int main(int argc, char** argv) {
    std::setvbuf(stdout, nullptr, _IOLBF, 0);  // line by line, also into pipes: echo and hz are read live
    if (argc < 2) {
        print_usage(stderr);
        return gecko::tools::exit_usage;
    }
    const std::string name = argv[1];
    if (name == "--help" || name == "-h" || name == "help") {
        if (name == "help" && argc > 2) {
            for (const auto& c : commands)
                if (std::strcmp(c.name, argv[2]) == 0) return c.run({"--help"});
        }
        print_usage(stdout);
        return gecko::tools::exit_ok;
    }
    for (const auto& c : commands) {
        if (name != c.name) continue;
        try {
            return c.run(gecko::tools::Args(argv + 2, argv + argc));
        } catch (const gecko::tools::UsageError& e) {
            std::fprintf(stderr, "gecko %s: %s\nTry 'gecko %s --help'.\n", c.name, e.what(), c.name);
            return gecko::tools::exit_usage;
        } catch (const gecko::Error& e) {
            std::fprintf(stderr, "gecko %s: %s\n", c.name, e.what());
            return e.code() == gecko::Errc::invalid_argument ? gecko::tools::exit_usage : gecko::tools::exit_failure;
        } catch (const std::exception& e) {
            std::fprintf(stderr, "gecko %s: %s\n", c.name, e.what());
            return gecko::tools::exit_failure;
        }
    }
    std::fprintf(stderr, "gecko: unknown command '%s'\n\n", name.c_str());
    print_usage(stderr);
    return gecko::tools::exit_usage;
}
