// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file cli.hpp
/// Argument parsing shared by the `gecko` subcommands: each subcommand declares
/// its flags, options and positionals on a Parser, which also writes its
/// `--help`. The connection options every subcommand takes (--key, --core, ...)
/// come from Parser::connection().
///
/// Exit codes of the tool: 0 ok, 1 runtime failure, 2 usage error.

#include <chrono>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include <gecko/node.hpp>

namespace gecko::tools {

constexpr int exit_ok = 0;
constexpr int exit_failure = 1;
constexpr int exit_usage = 2;

/// A command line the tool cannot act on. main() prints it with a hint to --help and exits 2.
class UsageError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

/// How to reach the key's core, from GECKO_* variables and the command line.
struct Connection {
    /// Options from the environment; the node is named `default_name` unless GECKO_NODE is set.
    explicit Connection(const std::string& default_name = "gecko");

    NodeOptions node;                          ///< key, core, multicast, interface...
    std::chrono::milliseconds timeout{3000};   ///< bound on each query to the core
};

class Parser {
public:
    /// `command` as typed ("echo"), `synopsis` the arguments after it, `description` a paragraph.
    Parser(std::string command, std::string synopsis, std::string description);

    /// A flag without a value.
    Parser& flag(const std::string& name, const std::string& help, bool& out);
    Parser& flag(const std::string& name, const std::string& help, std::function<void()> on);
    /// An option with a value (`--name VALUE` or `--name=VALUE`). `on` throws UsageError for a bad value.
    Parser& option(const std::string& name, const std::string& metavar, const std::string& help,
                   std::function<void(const std::string&)> on);
    Parser& option(const std::string& name, const std::string& metavar, const std::string& help, std::string& out);
    /// An integer in [min, max].
    Parser& option(const std::string& name, const std::string& metavar, const std::string& help, long& out, long min,
                   long max);
    /// A number in [min, max].
    Parser& option(const std::string& name, const std::string& metavar, const std::string& help, double& out,
                   double min, double max);
    /// A positional argument, in order of declaration.
    Parser& positional(const std::string& name, const std::string& help, std::string& out, bool required = true);
    /// --key (also -k), --core, --no-multicast, --multicast, --interface, --name, --timeout.
    /// With `require_key`, parse() fails without a key (from --key or GECKO_KEY).
    Parser& connection(Connection& out, bool require_key = true);

    /// Parses the arguments after the subcommand's name. Returns false if
    /// --help was given (the help is printed: exit 0).
    /// @throws UsageError for an unknown option, a missing or malformed value, a missing positional.
    bool parse(const std::vector<std::string>& args);

    std::string help() const;
    const std::string& command() const noexcept { return command_; }

private:
    struct Spec {
        std::string name, metavar, help;
        std::function<void(const std::string&)> on;  // flags get ""
        bool takes_value = false;
        bool common = false;
        std::string short_name;  // "-k" for --key
    };
    struct Positional {
        std::string name, help;
        std::string* out;
        bool required;
    };
    const Spec* find(const std::string& name) const;

    std::string command_, synopsis_, description_;
    std::vector<Spec> specs_;
    std::vector<Positional> positionals_;
    bool adding_common_ = false;
    Connection* connection_ = nullptr;
    bool require_key_ = false;
};

/// The connection options main() accepts before the command (`gecko --key K list`),
/// and whether each takes a value.
struct GlobalOption {
    const char* name;
    bool takes_value;
};
extern const GlobalOption global_options[8];

/// Parses a number of seconds, "2", "0.5", or with a unit: "500ms", "2s", "1m".
/// @throws UsageError.
std::chrono::milliseconds parse_duration(const std::string& text, const std::string& what);

}  // namespace gecko::tools
