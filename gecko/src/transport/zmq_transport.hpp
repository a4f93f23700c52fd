// SPDX-License-Identifier: Apache-2.0
#pragma once
// The ZeroMQ transport (tcp://, ipc://, inproc://): see zmq_transport.cpp.

#include <memory>
#include <string>
#include <vector>

#include "transport/transport.hpp"

namespace zmq {
class context_t;
}

namespace gecko::detail {

/// A transport over `context` offering (binding) the locator schemes in
/// `schemes` ("inproc", "ipc", "tcp"); it connects to any of the three.
std::unique_ptr<Transport> make_zmq_transport(std::shared_ptr<zmq::context_t> context, std::vector<std::string> schemes);

}  // namespace gecko::detail
