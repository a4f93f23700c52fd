// SPDX-License-Identifier: Apache-2.0
#pragma once
// The two ports of the shm transport, each in its own unit: the out-port
// (shm_out_port.cpp: the publisher, owner of a segment) and the in-port
// (shm_in_port.cpp: the subscriber, a slot in each segment it links to).

#include <memory>

#include "gecko/shm/segment.hpp"
#include "transport/transport.hpp"

namespace gecko::detail {

std::unique_ptr<OutPort> make_shm_out_port(const shm::Config& config, const PortOptions& options);
std::unique_ptr<InPort> make_shm_in_port(const shm::Config& config, const PortOptions& options);

}  // namespace gecko::detail
