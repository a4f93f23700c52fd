// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file commands.hpp
/// The `gecko` subcommands. Each takes the arguments after its name and
/// returns the exit code (0 ok, 1 failure, 2 usage error); it may throw
/// UsageError (exit 2) or gecko::Error (exit 1), which main() prints.

#include <string>
#include <vector>

#include "gecko/graph.hpp"

namespace gecko::tools {

using Args = std::vector<std::string>;

int run_list(const Args& args);
int run_info(const Args& args);
int run_echo(const Args& args);
int run_hz(const Args& args);
int run_bw(const Args& args);
int run_pub(const Args& args);
int run_call(const Args& args);
int run_type(const Args& args);
int run_nodes(const Args& args);
int run_top(const Args& args);
int run_doctor(const Args& args);
int run_record(const Args& args);  ///< cmd_bag.cpp: forwarded to bag/cli
int run_play(const Args& args);
int run_bag(const Args& args);
int run_bridge(const Args& args);  ///< runs gecko-bridge
int run_keygen(const Args& args);  ///< a key's secret (gecko::security)

/// The tables `gecko list` prints (topics, services, conflicts), shared with `gecko top`.
std::string render_list(const Graph& result);

}  // namespace gecko::tools
