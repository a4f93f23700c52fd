// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file directory.hpp
/// The key's channel directory: every topic and service of the key with its
/// channel id, its type, the schema its publisher declared and its
/// publishers, as geckocore vouches for them (it refuses a topic whose
/// channel id another topic has). A node follows it with
/// Node::watch_directory() or reads it with Node::directory(); a key-wide
/// subscription (Node::subscribe_all) names each message's entry in
/// MessageInfo::channel. docs/DISCOVERY.md §4.1 is the protocol.
///
/// **Example**: a program that prints topics as they come and go
///
///     auto watch = node.watch_directory([](const gecko::DirectoryEvent& e) {
///         std::cout << gecko::to_string(e.kind) << " " << e.channel->topic << " " << e.channel->type_name << "\n";
///     });
///     node.spin();

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "gecko/wire/schema.hpp"

namespace gecko {

/// A publisher of a topic (a server of a service), as the directory lists it.
struct PublisherInfo {
    std::uint64_t id = 0;   ///< its entity id: MessageInfo::publisher_id of its messages
    std::string node;       ///< its node's name
    std::string host;       ///< its node's host
    std::string type_name;  ///< the type it declares (the channel's, unless they conflict)
    bool latched = false;   ///< it replays its last message to late subscribers
};

/// One topic or service of the key.
struct ChannelInfo {
    std::string topic;                           ///< the topic or service name
    bool service = false;
    std::uint64_t channel = 0;                   ///< the channel id its frames carry (PROTOCOL.md §1); 0 for a service
    std::string type_name;                       ///< its type: the first publisher's, else the first subscriber's ("A->B" for a service)
    std::uint64_t type_hash = 0;                 ///< fnv1a64(type_name); 0 if no type is declared
    std::shared_ptr<const wire::Schema> schema;  ///< the fields declared for type_name; null: none declared
    std::vector<PublisherInfo> publishers;       ///< in registration order (servers, for a service)
};

/// A change of the directory, as Node::watch_directory() reports it.
struct DirectoryEvent {
    enum class Kind {
        added,    ///< a topic or service appeared (its first entity registered)
        removed,  ///< it went (its last entity left); `channel` is its last entry
        changed,  ///< its type, schema or publishers changed
    };
    Kind kind = Kind::added;
    std::shared_ptr<const ChannelInfo> channel;
};

/// "added", "removed", "changed".
const char* to_string(DirectoryEvent::Kind kind) noexcept;

/// Keeps a Node::watch_directory() callback registered; destroy it (or reset()) to stop.
class DirectoryWatch {
public:
    DirectoryWatch() = default;
    explicit DirectoryWatch(std::function<void()> stop) : stop_(std::move(stop)) {}
    ~DirectoryWatch() { reset(); }
    DirectoryWatch(DirectoryWatch&& o) noexcept : stop_(std::move(o.stop_)) { o.stop_ = nullptr; }
    DirectoryWatch& operator=(DirectoryWatch&& o) noexcept {
        if (this != &o) {
            reset();
            stop_ = std::move(o.stop_);
            o.stop_ = nullptr;
        }
        return *this;
    }
    DirectoryWatch(const DirectoryWatch&) = delete;
    DirectoryWatch& operator=(const DirectoryWatch&) = delete;
    void reset() {
        if (stop_) stop_();
        stop_ = nullptr;
    }

private:
    std::function<void()> stop_;
};

/// Which topics a key-wide subscription takes: a topic whose name matches one
/// of `topics` and whose type matches one of `types`. Each is an exact name,
/// or a glob where `*` matches any run of characters (`/` included) and `?`
/// any one character: {"arm1/*"}, {"*"}, {"imu", "odom"}.
struct TopicFilter {
    std::vector<std::string> topics{"*"};
    std::vector<std::string> types{"*"};

    /// Every topic of the key (of any type).
    static TopicFilter all() { return {}; }
    /// The topics matching one pattern.
    static TopicFilter topic(std::string pattern) {
        TopicFilter f;
        f.topics = {std::move(pattern)};
        return f;
    }
    bool matches(std::string_view topic, std::string_view type_name) const noexcept;
    /// True when it takes every topic of every type.
    bool takes_all() const noexcept;
};

}  // namespace gecko
