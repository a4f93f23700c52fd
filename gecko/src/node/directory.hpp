// SPDX-License-Identifier: Apache-2.0
#pragma once
// A node's copy of the key's channel directory (docs/DISCOVERY.md §4.1):
// merged from the core's `directory` messages on the reactor, read from any
// thread. Each change becomes a DirectoryEvent for the node to hand on (to
// its key-wide subscribers at once, to watch_directory() callbacks from spin).

#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "gecko/directory.hpp"
#include "gecko/wire/discovery.hpp"

namespace gecko::detail {

/// One `directory` message, read.
struct DirectoryUpdate {
    bool partial = false;                             ///< false: the whole directory (replaces what was known)
    std::vector<discovery::ChannelEntry> channels;    ///< entries added or replaced
    std::vector<std::pair<bool, std::string>> gone;   ///< (service, name) removed
};

class Directory {
public:
    enum class State {
        unknown,      ///< no full set yet
        known,        ///< the core sent its directory: what is here is its view
        unsupported,  ///< the core keeps none (an older geckocore)
    };

    /// Merges `update` (reactor thread); returns the changes it made.
    std::vector<DirectoryEvent> apply(const DirectoryUpdate& update);
    /// The core said it keeps no directory.
    void mark_unsupported();

    State state() const;
    /// Waits until the state is not `unknown`, at most `timeout`; returns the state.
    State wait(std::chrono::milliseconds timeout) const;
    /// Every entry now, topics then services, by name.
    std::vector<std::shared_ptr<const ChannelInfo>> snapshot() const;
    /// The entry of topic `name` (not a service), or null.
    std::shared_ptr<const ChannelInfo> topic(const std::string& name) const;

private:
    struct Entry {
        std::shared_ptr<const ChannelInfo> info;
        std::string schema;  // as the core sent it: an unchanged schema is not decoded again
    };
    using Key = std::pair<bool, std::string>;  // service, name
    // Builds the entry of `e`, reusing the decoded schema of `before` when it is the same.
    Entry make(const discovery::ChannelEntry& e, const Entry* before) const;

    mutable std::mutex mutex_;
    mutable std::condition_variable changed_;
    std::map<Key, Entry> entries_;
    State state_ = State::unknown;
};

}  // namespace gecko::detail
