// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file cli.hpp
/// `gecko record`, `gecko play` and `gecko bag info|echo|doctor|recover`,
/// which tools/gecko/main.cpp forwards to. Each takes the arguments after
/// its name (the connection options given before the command included) and
/// returns the exit code: 0 ok, 1 failure, 2 usage error.

#include <functional>
#include <string>
#include <vector>

#include <gecko/wire/value.hpp>

namespace gecko::bag::cli {

/// What the `gecko` tool lends these commands: how it prints a message as
/// text (`gecko echo`'s form), so that `gecko bag echo` prints the same.
struct Tool {
    std::function<std::string(const wire::Value&)> to_text;
};

int record(const std::vector<std::string>& args);
int play(const std::vector<std::string>& args);
int bag(const std::vector<std::string>& args, const Tool& tool);

}  // namespace gecko::bag::cli
