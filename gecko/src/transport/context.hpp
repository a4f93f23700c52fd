#pragma once
// The process's ZeroMQ context, shared by every Node (ZeroMQ's advice: one per
// process). Held by weak reference, so it exists exactly while some node does,
// and inproc:// endpoints work between nodes of one process.

#include <memory>
#include <zmq.hpp>

namespace gecko::detail {

std::shared_ptr<zmq::context_t> shared_context();

}  // namespace gecko::detail
