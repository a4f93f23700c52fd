#pragma once
/// @file testing.hpp
/// Hooks for tests and tools that need to misbehave on purpose: send bytes
/// that are not a well-formed frame (a hostile peer), on a node's links.
/// Not for applications.

#include <cstddef>
#include <string>

namespace gecko {

class Node;

namespace testing {

/// Sends `bytes` as they are, as one frame, to every node linked to `node`
/// whose subscriptions match its first 8 bytes (the channel).
void send_raw(Node& node, const void* bytes, std::size_t size);

}  // namespace testing
}  // namespace gecko
