// SPDX-License-Identifier: Apache-2.0
#pragma once
// The answer to `list` (docs/DISCOVERY.md §5): the table for tools, one page
// at a time.

#include "table.hpp"

namespace gecko::core {

/// What the answer says about the core besides its table.
struct CoreFigures {
    CoreCounters counters;
    std::size_t duplicate_instances = 0;  ///< other cores of the key remembered
    std::chrono::milliseconds uptime{0};
};

/// The answer to the `list` request `request`: the whole table, or one page
/// of topics of it (`offset`, `limit`, or a single `topic`). It stays below
/// discovery::max_zmq_message whatever the table holds: `next` says where
/// the next page starts (0: none), and what had to be left out is counted.
discovery::Writer list_answer(const Table& table, const CoreIdentity& me, const CoreFigures& figures,
                              const wire::Value& request, Clock::time_point now);

}  // namespace gecko::core
