// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file core_query.hpp
/// A one-shot "list" query to the geckocore of a key, for tools (`gecko` CLI,
/// tests). Finds the core exactly as a node does (multicast, else the explicit
/// address) and returns the core's whole table.

#include "discovery/discovery_client.hpp"

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace gecko::detail {

struct QueryEntity {
    Peer peer;                         ///< registration + node/host/pid
    std::optional<TopicStats> stats;   ///< latest figures the node reported, if any
    std::int64_t stats_age_ms = 0;     ///< how old they are
};

struct QueryTopic {
    std::string name;
    bool service = false;              ///< true: a service (producers are servers, consumers clients)
    std::string type;                  ///< the type of the first publisher/server (else of the first subscriber)
    std::vector<std::string> types;    ///< every type declared on it
    std::vector<QueryEntity> producers;  ///< publishers or servers
    std::vector<QueryEntity> consumers;  ///< subscribers or clients
};

struct QueryNode {
    std::string node, host;
    std::int32_t pid = 0;
    std::uint64_t session = 0;
    std::int64_t silent_ms = 0;        ///< since the core last heard from it
    std::vector<std::string> locators; ///< where other nodes reach it
    std::size_t entities = 0;
};

struct QueryConflict {
    std::string topic;
    bool service = false;
    std::vector<std::string> types;
    std::string message;
};

struct QueryResult {
    std::string key;
    std::string core_endpoint;         ///< where the answer came from
    std::uint64_t instance = 0;
    std::string core_host;
    std::int32_t core_pid = 0;
    std::vector<QueryNode> nodes;
    std::vector<QueryTopic> topics;    ///< topics and services, sorted by (service, name)
    std::vector<QueryConflict> conflicts;
    std::map<std::string, std::uint64_t> counters;  ///< the core's counters (malformed_datagrams, ...)
    std::string raw;                   ///< the reply as received (msgpack), for tools that print everything

    /// The topic (or service) named `name`, or nullptr.
    const QueryTopic* find(const std::string& name, bool service = false) const;
};

/// Finds the core of `options.key` and fetches its table.
/// @throws gecko::Error(Errc::discovery) naming what was tried if no core answered within `timeout`.
QueryResult query_core(const DiscoveryOptions& options, std::chrono::milliseconds timeout);

/// Decodes a "list" reply (exposed for tests).
std::optional<QueryResult> decode_list_reply(const char* data, std::size_t size);

}  // namespace gecko::detail
