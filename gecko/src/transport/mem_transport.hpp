// SPDX-License-Identifier: Apache-2.0
#pragma once
// The in-process queue transport (mem://): nodes of one process hand frames to
// each other's queues directly, in order, with no I/O thread, so a test built
// on it runs the same way every time. Proves the seam: nothing above it knows
// it is not ZeroMQ.

#include <memory>

#include "transport/transport.hpp"

namespace gecko::detail {

std::unique_ptr<Transport> make_mem_transport();

}  // namespace gecko::detail
