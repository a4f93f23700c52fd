// SPDX-License-Identifier: Apache-2.0
// The key's channel directory (docs/DISCOVERY.md §4.1): one entry per topic
// and service name (its channel id, type, schema and producers), pushed to
// the sessions that watch it as a full set and then as deltas; the names
// whose channel ids collide, refused; and the key-wide subscribers, told of
// every publisher their filter matches.

#include "gecko/wire/hash.hpp"
#include "gecko/wire/names.hpp"
#include "gecko/wire/schema.hpp"
#include "table.hpp"
#include "text.hpp"

namespace gecko::core {
namespace {

// Directory messages carry at most this many bytes of entries (a full set
// of a large key is split): well below a node's 4 MiB limit.
constexpr std::size_t directory_bytes = 1u << 20;
constexpr std::size_t max_patterns = 64;
// An entry lists at most this many producers (a topic of thousands costs a
// change O(this), not O(thousands)); `list` has them all.
constexpr std::size_t max_listed_producers = 64;

bool matches_any(const std::vector<std::string>& patterns, const std::string& text) {
    if (patterns.empty()) return true;
    for (const auto& p : patterns)
        if (wire::glob_match(p, text)) return true;
    return false;
}

std::string check_patterns(const std::vector<std::string>& patterns, const char* what) {
    if (patterns.size() > max_patterns)
        return std::to_string(patterns.size()) + " " + what + " patterns (at most " + std::to_string(max_patterns) + ")";
    for (const auto& p : patterns)
        if (auto why = wire::check_pattern(p); !why.empty()) return std::string(what) + " pattern '" + shown(p) + "': " + why;
    return {};
}

// The types a registration's schema must describe: its type, or a service's request and reply types.
std::vector<std::string> declared_types(const Registration& reg) {
    if (!is_service(reg.kind)) return {reg.type_name};
    const auto arrow = reg.type_name.find("->");
    if (arrow == std::string::npos) return {reg.type_name};
    return {reg.type_name.substr(0, arrow), reg.type_name.substr(arrow + 2)};
}

}  // namespace

std::string Table::check_registration(const Registration& reg) const {
    if (reg.wildcard) {
        if (reg.kind != EntityKind::subscriber) return "only a subscriber may be key-wide";
        if (auto why = check_patterns(reg.topic_filter, "topic"); !why.empty()) return why;
        if (auto why = check_patterns(reg.type_filter, "type"); !why.empty()) return why;
    } else if (!is_service(reg.kind)) {
        const auto at = channel_names_.find(wire::fnv1a32(reg.topic));
        if (at != channel_names_.end() && at->second != reg.topic)
            return "topic '" + shown(reg.topic) + "' has the channel id of topic '" + shown(at->second) +
                   "' (the 32-bit hash of its name, which frames carry: PROTOCOL.md §1): rename one of them";
    }
    if (!reg.schema.empty()) {
        try {
            const auto schema = wire::Schema::decode(reinterpret_cast<const std::uint8_t*>(reg.schema.data()), reg.schema.size());
            for (const auto& type : declared_types(reg))
                if (!is_wildcard_type(type) && !schema.find(type))
                    return "its schema does not describe its type " + shown(type);
        } catch (const std::exception& e) {
            return e.what();
        }
    }
    return {};
}

// ---- entries -----------------------------------------------------------------------------------

discovery::ChannelEntry Table::entry_of(const TopicKey& key, const Topic& topic) const {
    discovery::ChannelEntry e;
    e.name = key.name;
    e.service = key.service;
    e.channel = key.service ? 0 : wire::channel_of(me_.key, key.name);
    const auto producer = discovery::producer_kind(key.service ? EntityKind::client : EntityKind::subscriber);
    const auto& producers = topic.of_kind[static_cast<std::size_t>(producer)];
    // The type: its first producer's, else its first consumer's (as `list` says it).
    for (const auto& [order, id] : producers.empty() ? topic.by_order : producers) {
        const auto& t = entities_.at(id).reg.type_name;
        if (!is_wildcard_type(t)) {
            e.type_name = t;
            break;
        }
    }
    if (!e.type_name.empty()) {
        e.type_hash = wire::type_hash(e.type_name);
        // The schema: the first one declared for that type, producers first.
        if (const auto use = topic.types.find(e.type_name); use != topic.types.end())
            for (const ByOrder* side : {&use->second.producers, &use->second.consumers})
                for (auto it = side->begin(); it != side->end() && e.schema.empty(); ++it)
                    e.schema = entities_.at(it->second).reg.schema;
    }
    for (const auto& [order, id] : producers) {
        if (e.producers.size() == max_listed_producers) break;
        const Entity& p = entities_.at(id);
        const auto s = sessions_.find(p.session);
        e.producers.push_back({id, s == sessions_.end() ? "" : s->second.node, s == sessions_.end() ? "" : s->second.host,
                               p.reg.type_name, p.reg.latched});
    }
    return e;
}

void Table::directory_changed(const TopicKey& key) {
    const auto t = topics_.find(key);
    if (!key.service && t == topics_.end()) {
        // The name is free again.
        if (const auto c = channel_names_.find(wire::fnv1a32(key.name)); c != channel_names_.end() && c->second == key.name)
            channel_names_.erase(c);
    }
    if (directory_watchers_ == 0) {
        // Nobody to tell: the entry is made when someone asks (push_directory).
        if (t != topics_.end()) t->second.published.clear();
        return;
    }
    std::string now;
    if (t != topics_.end()) {
        msgpack::sbuffer out;
        discovery::pack_channel_entry(out, entry_of(key, t->second));
        now.assign(out.data(), out.size());
        if (now == t->second.published) return;
        t->second.published = now;
    }
    msgpack::sbuffer entries;
    entries.write(now.data(), now.size());
    std::vector<std::pair<bool, std::string>> gone;
    if (now.empty()) gone.emplace_back(key.service, key.name);
    for (const auto& [id, s] : sessions_)
        if (s.watch_directory)
            send_to(s, discovery::directory_message(s.id, me_.instance, true, entries, now.empty() ? 0 : 1, gone));
}

// The whole directory, in messages of at most directory_bytes of entries:
// the first replaces what the node had (not during the warm-up, when
// nothing is removed by absence), the rest add.
void Table::push_directory(const Session& s) {
    msgpack::sbuffer entries;
    std::uint32_t count = 0;
    bool first = true;
    auto flush = [&] {
        send_to(s, discovery::directory_message(s.id, me_.instance, warm_ || !first, entries, count, {}));
        entries.clear();
        count = 0;
        first = false;
    };
    for (auto& [key, topic] : topics_) {
        if (topic.published.empty()) {
            msgpack::sbuffer out;
            discovery::pack_channel_entry(out, entry_of(key, topic));
            topic.published.assign(out.data(), out.size());
        }
        entries.write(topic.published.data(), topic.published.size());
        ++count;
        if (entries.size() > directory_bytes) flush();
    }
    if (count > 0 || first) flush();
}

// ---- key-wide subscribers ------------------------------------------------------------------------

bool Table::key_wide_watches(const Entity& watcher, const Entity& e) const {
    return e.reg.kind == EntityKind::publisher && matches_any(watcher.reg.topic_filter, e.reg.topic) &&
           matches_any(watcher.reg.type_filter, e.reg.type_name);
}

void Table::add_key_wide(Session& s, Registration reg) {
    Entity e;
    e.reg = std::move(reg);
    e.session = s.id;
    e.order = next_order_++;
    const auto id = e.reg.id;
    s.entities.insert(id);
    s.digest ^= discovery::entity_digest_term(id);
    entities_.emplace(id, std::move(e));
    key_wide_.insert(id);
    push_full(id);
}

}  // namespace gecko::core
