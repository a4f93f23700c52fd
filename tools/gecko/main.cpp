// SPDX-License-Identifier: Apache-2.0
// gecko: the command line to look at and poke a key's topics.
// Dispatches to one subcommand per file (cmd_*.cpp).
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include <gecko/wire/names.hpp>

#include "cli.hpp"
#include "commands.hpp"
#include "format.hpp"
#include "gecko/error.hpp"
#include "suggest.hpp"

namespace {

struct Command {
    const char* name;
    const char* summary;
    int (*run)(const gecko::tools::Args&);
};

const Command commands[] = {
    {"list", "topics and services of a key: types, publishers, subscribers, rates", gecko::tools::run_list},
    {"info", "everything about one topic or service: type and fields, each publisher and subscriber", gecko::tools::run_info},
    {"echo", "print the messages of a topic (text, or JSON lines with --json; --field for one field)", gecko::tools::run_echo},
    {"hz", "measure the message rate of a topic", gecko::tools::run_hz},
    {"bw", "measure the bandwidth of a topic", gecko::tools::run_bw},
    {"pub", "publish a message written as JSON (or one per line of stdin or a file)", gecko::tools::run_pub},
    {"call", "call a service with a request written as JSON and print the reply", gecko::tools::run_call},
    {"type", "the fields of a message type (gecko.msgs, or inferred from a live topic)", gecko::tools::run_type},
    {"nodes", "the nodes of a key, with host, pid and when the core last heard of them", gecko::tools::run_nodes},
    {"top", "live view of the topics and their rates, refreshed every second", gecko::tools::run_top},
    {"doctor", "check the network and whether the key's core answers, with fixes", gecko::tools::run_doctor},
    {"record", "record topics into an MCAP file (-o FILE; docs/RECORDING.md)", gecko::tools::run_record},
    {"play", "publish the messages of MCAP files with their timing (--lockstep: replay a Click run)", gecko::tools::run_play},
    {"bag", "look at MCAP files: info, echo, doctor, recover", gecko::tools::run_bag},
    {"bridge", "serve the key to browsers and Foxglove: a live page and the Foxglove WebSocket protocol (gecko-bridge)",
     gecko::tools::run_bridge},
    {"keygen", "write a new secret for a key to the key store (docs/SECURITY.md)", gecko::tools::run_keygen},
};

void print_usage(std::FILE* to) {
    std::fputs("usage: gecko [--key KEY] COMMAND [options]\n\n"
               "Look at and poke the topics and services of a robot or simulation (a key).\n\n"
               "Commands:\n", to);
    for (const auto& c : commands) std::fprintf(to, "  %-8s %s\n", c.name, c.summary);
    std::fputs("\n"
               "Every command takes -k/--key KEY (or GECKO_KEY) and finds the key's geckocore by\n"
               "multicast, or at --core HOST[:PORT] (or GECKO_CORE) where multicast does not work.\n"
               "These connection options (--key, -k, --core, --no-multicast, --multicast, --interface,\n"
               "--name, --timeout) may also come before the command: gecko -k dalek list.\n"
               "`gecko COMMAND --help` describes a command and its options. Bash completion:\n"
               "tools/gecko/completion/gecko.bash.\n\n"
               "Exit codes: 0 ok, 1 failure (e.g. no core answered), 2 usage error.\n", to);
}

std::vector<std::string> command_names() {
    std::vector<std::string> names;
    for (const auto& c : commands) names.emplace_back(c.name);
    return names;
}

// Takes the connection options given before the command. False (after saying
// why) on an option that is not one of them, or one without its value.
bool take_global_options(int argc, char** argv, int& at, gecko::tools::Args& global) {
    for (; at < argc && argv[at][0] == '-' && std::strcmp(argv[at], "--help") != 0 && std::strcmp(argv[at], "-h") != 0; ++at) {
        const std::string arg = argv[at];
        const std::string name = arg.substr(0, arg.find('='));
        const gecko::tools::GlobalOption* option = nullptr;
        for (const auto& g : gecko::tools::global_options)
            if (name == g.name) option = &g;
        if (!option) {
            std::fprintf(stderr, "gecko: '%s' is not an option that may come before the command (--key, -k, --core, "
                                 "--no-multicast, --multicast, --interface, --name, --timeout); give it after the "
                                 "command\nTry 'gecko --help'.\n", arg.c_str());
            return false;
        }
        global.push_back(arg);
        if (option->takes_value && arg.find('=') == std::string::npos) {
            if (at + 1 >= argc) {
                std::fprintf(stderr, "gecko: %s needs a value\nTry 'gecko --help'.\n", arg.c_str());
                return false;
            }
            global.emplace_back(argv[++at]);
        }
    }
    return true;
}

}  // namespace

int main(int argc, char** argv) {
    std::setvbuf(stdout, nullptr, _IOLBF, 0);  // line by line, also into pipes: echo and hz are read live
    int at = 1;
    gecko::tools::Args global;
    if (!take_global_options(argc, argv, at, global)) return gecko::tools::exit_usage;
    if (at >= argc) {
        print_usage(stderr);
        return gecko::tools::exit_usage;
    }
    const std::string name = argv[at];
    if (name == "--help" || name == "-h" || name == "help") {
        if (name == "help" && at + 1 < argc) {
            for (const auto& c : commands)
                if (std::strcmp(c.name, argv[at + 1]) == 0) return c.run({"--help"});
        }
        print_usage(stdout);
        return gecko::tools::exit_ok;
    }
    for (const auto& c : commands) {
        if (name != c.name) continue;
        gecko::tools::Args args = global;  // first: a "--" among the command's own arguments ends options
        args.insert(args.end(), argv + at + 1, argv + argc);
        try {
            return c.run(args);
        } catch (const gecko::tools::UsageError& e) {
            std::fprintf(stderr, "gecko %s: %s\nTry 'gecko %s --help'.\n", c.name, e.what(), c.name);
            return gecko::tools::exit_usage;
        } catch (const gecko::Error& e) {
            // An error may quote what a peer sent (a core's refusal, a server's reply): escaped.
            std::fprintf(stderr, "gecko %s: %s\n", c.name, gecko::wire::printable(e.what(), true).c_str());
            return e.code() == gecko::Errc::invalid_argument ? gecko::tools::exit_usage : gecko::tools::exit_failure;
        } catch (const std::exception& e) {
            std::fprintf(stderr, "gecko %s: %s\n", c.name, gecko::wire::printable(e.what(), true).c_str());
            return gecko::tools::exit_failure;
        }
    }
    std::fprintf(stderr, "gecko: unknown command '%s'%s\n\n", name.c_str(),
                 gecko::tools::did_you_mean(name, command_names()).c_str());
    print_usage(stderr);
    return gecko::tools::exit_usage;
}
