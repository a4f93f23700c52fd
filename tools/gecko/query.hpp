// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file query.hpp
/// What the `gecko` subcommands ask the key's geckocore, and helpers to
/// present its answer. Wraps gecko::detail::query_core (the in-tree one-shot
/// "list" query of the discovery client).

#include <cstdint>
#include <map>
#include <string>

#include "cli.hpp"
#include "discovery/core_query.hpp"

namespace gecko::tools {

/// The discovery options a node built from `node` would use.
/// @throws UsageError for a malformed --multicast/GECKO_MULTICAST or --core/GECKO_CORE.
detail::DiscoveryOptions discovery_options(const NodeOptions& node);

/// The whole table of the key's core.
/// @throws gecko::Error(Errc::discovery) saying what was tried and what to check,
/// also when the core that answered serves another key.
detail::QueryResult query(const Connection& connection);
/// Same, with explicit discovery options (gecko doctor tries several).
detail::QueryResult query(const detail::DiscoveryOptions& options, std::chrono::milliseconds timeout);

/// "node@host:pid"
std::string where(const std::string& node, const std::string& host, std::int32_t pid);
std::string where(const detail::Peer& peer);

/// Publisher id -> "node@host:pid" for the producers of `topic`.
std::map<std::uint64_t, std::string> producer_names(const detail::QueryResult& result, const std::string& topic);

/// The type to subscribe to `topic` with: the type its publishers declare (the
/// first one if they disagree, with a warning on stderr), else its subscribers'.
/// While the core does not know the topic, says so once on stderr and asks
/// again every 250 ms until it appears or ok() turns false (then returns "").
/// `names` receives producer_names() of the last answer.
/// @throws gecko::Error(Errc::discovery) if the core does not answer.
std::string wait_for_topic_type(const Connection& connection, const std::string& command, const std::string& topic,
                                std::map<std::uint64_t, std::string>* names = nullptr);

}  // namespace gecko::tools
