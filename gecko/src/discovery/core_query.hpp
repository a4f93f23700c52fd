// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file core_query.hpp
/// A one-shot, sessionless `list` query to the geckocore of a key: finds the
/// core exactly as a node does (multicast, else the explicit address and the
/// host door) and fetches its table page by page into a gecko::Graph.
/// query_graph() and Node::graph() are built on it.

#include "gecko/graph.hpp"
#include "gecko/net/finder.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>

namespace gecko::detail {

/// Finds the core of `options.key` and fetches its whole table.
/// @throws gecko::Error(Errc::discovery) naming what was tried if no core
/// answered within `timeout`, or if the core refused the query.
Graph query_core(const net::FinderOptions& options, std::chrono::milliseconds timeout);

/// Adds one `list` answer (a page) to `graph`: its nodes, topics, services
/// and conflicts. Returns false if the bytes are not a `list` answer; else
/// `next` is where the next page starts (0: this was the last one).
/// Exposed for tests.
bool read_list_page(const char* data, std::size_t size, Graph& graph, std::uint64_t& next);

}  // namespace gecko::detail
