// SPDX-License-Identifier: Apache-2.0
#include "node/directory.hpp"

#include <algorithm>
#include <set>

#include "gecko/wire/names.hpp"

namespace gecko {

const char* to_string(DirectoryEvent::Kind kind) noexcept {
    switch (kind) {
        case DirectoryEvent::Kind::added: return "added";
        case DirectoryEvent::Kind::removed: return "removed";
        case DirectoryEvent::Kind::changed: return "changed";
    }
    return "?";
}

namespace {
bool matches_any(const std::vector<std::string>& patterns, std::string_view text) {
    for (const auto& p : patterns)
        if (wire::glob_match(p, text)) return true;
    return false;
}
}  // namespace

bool TopicFilter::matches(std::string_view topic, std::string_view type_name) const noexcept {
    return matches_any(topics, topic) && matches_any(types, type_name);
}

bool TopicFilter::takes_all() const noexcept {
    auto has_star = [](const std::vector<std::string>& v) { return std::find(v.begin(), v.end(), "*") != v.end(); };
    return has_star(topics) && has_star(types);
}

namespace detail {
namespace {

bool same_publishers(const std::vector<PublisherInfo>& a, const std::vector<PublisherInfo>& b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (a[i].id != b[i].id || a[i].node != b[i].node || a[i].host != b[i].host || a[i].type_name != b[i].type_name ||
            a[i].latched != b[i].latched)
            return false;
    return true;
}

}  // namespace

Directory::Entry Directory::make(const discovery::ChannelEntry& e, const Entry* before) const {
    auto info = std::make_shared<ChannelInfo>();
    info->topic = e.name;
    info->service = e.service;
    info->channel = e.channel;
    info->type_name = e.type_name;
    info->type_hash = e.type_hash;
    for (const auto& p : e.producers) info->publishers.push_back(PublisherInfo{p.id, p.node, p.host, p.type_name, p.latched});
    if (before && before->schema == e.schema) {
        info->schema = before->info->schema;
    } else if (!e.schema.empty()) {
        try {
            info->schema = std::make_shared<const wire::Schema>(
                wire::Schema::decode(reinterpret_cast<const std::uint8_t*>(e.schema.data()), e.schema.size()));
        } catch (const std::exception&) {
            // The core checked it; a schema that does not decode here is left out rather than trusted.
        }
    }
    return Entry{std::move(info), e.schema};
}

std::vector<DirectoryEvent> Directory::apply(const DirectoryUpdate& update) {
    std::vector<DirectoryEvent> events;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        std::set<Key> listed;
        for (const auto& e : update.channels) {
            const Key key{e.service, e.name};
            listed.insert(key);
            const auto it = entries_.find(key);
            Entry next = make(e, it == entries_.end() ? nullptr : &it->second);
            if (it == entries_.end()) {
                events.push_back({DirectoryEvent::Kind::added, next.info});
                entries_.emplace(key, std::move(next));
                continue;
            }
            const ChannelInfo& was = *it->second.info;
            const ChannelInfo& now = *next.info;
            const bool same = was.type_name == now.type_name && was.channel == now.channel && it->second.schema == next.schema &&
                              same_publishers(was.publishers, now.publishers);
            if (!same) {
                events.push_back({DirectoryEvent::Kind::changed, next.info});
                it->second = std::move(next);
            }
        }
        // A full set replaces what was known; a delta removes what it says is gone.
        for (auto it = entries_.begin(); it != entries_.end();) {
            bool gone = !update.partial && !listed.count(it->first);
            for (const auto& g : update.gone) gone = gone || (g == it->first && !listed.count(it->first));
            if (gone) {
                events.push_back({DirectoryEvent::Kind::removed, it->second.info});
                it = entries_.erase(it);
            } else {
                ++it;
            }
        }
        if (!update.partial || state_ == State::unsupported) state_ = State::known;
    }
    changed_.notify_all();
    return events;
}

void Directory::mark_unsupported() {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        state_ = State::unsupported;
    }
    changed_.notify_all();
}

Directory::State Directory::state() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return state_;
}

Directory::State Directory::wait(std::chrono::milliseconds timeout) const {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait_for(lock, timeout, [&] { return state_ != State::unknown; });
    return state_;
}

std::vector<std::shared_ptr<const ChannelInfo>> Directory::snapshot() const {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<std::shared_ptr<const ChannelInfo>> out;
    out.reserve(entries_.size());
    for (const auto& [key, e] : entries_) out.push_back(e.info);
    return out;
}

std::shared_ptr<const ChannelInfo> Directory::topic(const std::string& name) const {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto it = entries_.find(Key{false, name});
    return it == entries_.end() ? nullptr : it->second.info;
}

}  // namespace detail
}  // namespace gecko
