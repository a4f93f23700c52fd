// SPDX-License-Identifier: Apache-2.0
#pragma once
// What a key-wide sink knows of the key's channels: which topic each channel
// id is (the directory's entry), whether the subscription's filter takes it,
// and which channel each publisher sends on (a latched replay arrives on the
// subscriber's own directed channel: its publisher says whose topic it is).
// Kept by the sink, under the sink's lock.
//
// A channel the directory drops stays known for a while, retired: the
// directory drops a topic as soon as its last publisher leaves, while that
// publisher's last frames may still be queued on their way to a sink that is
// behind. They are still that topic's frames.

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
        std::int64_t retired_ns = 0;  ///< when the directory dropped it; 0: listed
    };

    /// The directory lists `info`: its frames are taken (`wanted`) or left.
    void set(std::shared_ptr<const ChannelInfo> info, bool wanted) {
        const wire::Channel c = info->channel;
        for (const auto& p : info->publishers) publishers_[p.id] = c;
        Known& known = channels_[c];
        if (known.retired_ns != 0) --retired_;
        known = Known{std::move(info), wanted, 0};
    }
    /// The directory no longer lists the topic of `channel` (at `now_ns`):
    /// it stays known until forget_retired() says it has been retired long enough.
    void retire(wire::Channel channel, std::int64_t now_ns) {
        const auto it = channels_.find(channel);
        if (it == channels_.end() || it->second.retired_ns != 0) return;
        it->second.retired_ns = now_ns;
        ++retired_;
    }
    /// Forgets the channels retired before `before_ns`.
    void forget_retired(std::int64_t before_ns) {
        if (retired_ == 0) return;
        for (auto it = channels_.begin(); it != channels_.end();) {
            const std::int64_t at = it->second.retired_ns;
            if (at == 0 || at >= before_ns) {
                ++it;
                continue;
            }
            for (const auto& p : it->second.info->publishers) {
                const auto sent = publishers_.find(p.id);
                if (sent != publishers_.end() && sent->second == it->first) publishers_.erase(sent);
            }
            it = channels_.erase(it);
            --retired_;
        }
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
    std::size_t retired_ = 0;
};

}  // namespace gecko::detail
