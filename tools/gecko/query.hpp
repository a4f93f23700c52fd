// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file query.hpp
/// What the `gecko` subcommands ask the key's geckocore, and helpers to
/// present its answer, on the public graph API (gecko/graph.hpp).

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "cli.hpp"
#include "gecko/graph.hpp"

namespace gecko::tools {

/// Where a node built from `node` would look for its core.
/// @throws UsageError for a malformed --multicast/GECKO_MULTICAST or --core/GECKO_CORE.
net::FinderOptions search_options(const NodeOptions& node);

/// The whole table of the key's core.
/// @throws gecko::Error(Errc::discovery) saying what was tried and what to check,
/// also when the core that answered serves another key.
Graph query(const Connection& connection);
/// Same, with explicit discovery options (gecko doctor tries several).
Graph query(const net::FinderOptions& options, std::chrono::milliseconds timeout);

/// "node@host:pid"
std::string where(const std::string& node, const std::string& host, std::int32_t pid);
std::string where(const GraphEntity& entity);

/// Publisher id -> "node@host:pid" for the producers of `topic`.
std::map<std::uint64_t, std::string> producer_names(const Graph& result, const std::string& topic);

/// Names of the key's topics (or services), as the core sorts them; with
/// `with_producers` only those with a publisher (a server).
std::vector<std::string> names_of(const Graph& result, bool service, bool with_producers = false);

/// "no topic 'imuu' under key 'K'; did you mean 'imu'?" (`what` is "topic",
/// "service", "topic or service"), the suggestion from the names of that kind.
std::string not_found(const Graph& result, const std::string& what, const std::string& name);

/// What echo, hz and bw learn about a topic before subscribing to it (with any type).
struct TopicGlance {
    std::string type;                            ///< as the core reports it; "" if it does not know the topic
    std::map<std::uint64_t, std::string> names;  ///< producer_names()
};

/// Asks the core once about `topic`. If it has no publisher yet, says on
/// stderr that `command` waits for one, with the topic the user may have
/// meant: "gecko echo: no topic 'imuu' under key 'K'; did you mean 'imu'?
/// waiting for it (Ctrl-C to stop)".
/// @throws gecko::Error(Errc::discovery) if the core does not answer.
TopicGlance glance_at_topic(const Connection& connection, const std::string& command, const std::string& topic);

}  // namespace gecko::tools
