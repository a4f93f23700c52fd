// SPDX-License-Identifier: Apache-2.0
#pragma once
#include <gecko/node.hpp>

namespace bench_bridge {
/// Runs the baseline forwarder (forwarder.cpp) until SIGTERM; prints "serving ws://127.0.0.1:PORT/".
int run_forwarder(const gecko::NodeOptions& options);
}  // namespace bench_bridge
