// SPDX-License-Identifier: Apache-2.0
#pragma once
// What a key-wide sink knows of the key's channels: which topic each channel
// id is (the directory's entry), whether the subscription's filter takes it,
// and which channel each publisher sends on (a latched replay arrives on the
// subscriber's own directed channel: its publisher says whose topic it is).
// Kept by the sink, under the sink's lock.

#include <cstdint>
#include <memory>
#include <unordered_map>

#include "gecko/directory.hpp"
#include "gecko/wire/frame.hpp"

namespace gecko::detail {

class ChannelNames {
public:
    struct Known {
        std::shared_ptr<const ChannelInfo> info;
        bool wanted = false;
    };

    /// The directory lists `info`: its frames are taken (`wanted`) or left.
    void set(std::shared_ptr<const ChannelInfo> info, bool wanted) {
        const wire::Channel c = info->channel;
        for (const auto& p : info->publishers) publishers_[p.id] = c;
        channels_[c] = Known{std::move(info), wanted};
    }
    /// The directory no longer lists the topic of `channel`.
    void erase(wire::Channel channel) {
        const auto it = channels_.find(channel);
        if (it == channels_.end()) return;
        for (const auto& p : it->second.info->publishers) publishers_.erase(p.id);
        channels_.erase(it);
    }
    /// What is known of `channel`; nullptr: nothing yet.
    const Known* find(wire::Channel channel) const {
        const auto it = channels_.find(channel);
        return it == channels_.end() ? nullptr : &it->second;
    }
    /// The channel publisher `sender` sends on; 0: not known.
    wire::Channel channel_of(std::uint64_t sender) const {
        const auto it = publishers_.find(sender);
        return it == publishers_.end() ? 0 : it->second;
    }

private:
    std::unordered_map<wire::Channel, Known> channels_;
    std::unordered_map<std::uint64_t, wire::Channel> publishers_;
};

}  // namespace gecko::detail
