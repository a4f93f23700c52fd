// SPDX-License-Identifier: Apache-2.0
// The table's entities and the names they register: adding and removing
// them, the type check, and what each change tells the other nodes (peer
// sets, graph events). docs/DISCOVERY.md §2.4-§4.

#include "gecko/wire/hash.hpp"
#include "gecko/wire/names.hpp"
#include "table.hpp"
#include "text.hpp"

namespace gecko::core {
namespace {

bool types_match(const std::string& a, const std::string& b) { return a == b || is_wildcard_type(a) || is_wildcard_type(b); }

// Which kind watches an entity of `kind` (the inverse of watched_kind).
std::optional<EntityKind> watcher_kind(EntityKind kind) {
    switch (kind) {
        case EntityKind::publisher: return EntityKind::subscriber;
        case EntityKind::server: return EntityKind::client;
        case EntityKind::client: return EntityKind::server;
        case EntityKind::subscriber: return std::nullopt;
    }
    return std::nullopt;
}

// Peer lists are sent in chunks of at most this many peers per message.
constexpr std::size_t peers_per_push = 256;

}  // namespace

// Subscribers hear of publishers; clients of servers; servers of clients
// (their nodes must link to each other both ways for requests and replies).
std::optional<EntityKind> watched_kind(EntityKind kind) {
    switch (kind) {
        case EntityKind::subscriber: return EntityKind::publisher;
        case EntityKind::client: return EntityKind::server;
        case EntityKind::server: return EntityKind::client;
        case EntityKind::publisher: return std::nullopt;
    }
    return std::nullopt;
}

void Topic::insert(const Entity& e) {
    by_order[e.order] = e.reg.id;
    of_kind[static_cast<std::size_t>(e.reg.kind)][e.order] = e.reg.id;
    const bool produces = discovery::is_producer(e.reg.kind);
    if (!is_wildcard_type(e.reg.type_name)) {
        auto& use = types[e.reg.type_name];
        (produces ? use.producers : use.consumers)[e.order] = e.reg.id;
        if (produces) produced.insert(e.reg.type_name);
        if (++use.by_session[e.session] == 1) ++types_of_session[e.session];
    }
    if (produces) ++producers;
}

void Topic::erase(const Entity& e) {
    by_order.erase(e.order);
    of_kind[static_cast<std::size_t>(e.reg.kind)].erase(e.order);
    const bool produces = discovery::is_producer(e.reg.kind);
    if (!is_wildcard_type(e.reg.type_name))
        if (auto ty = types.find(e.reg.type_name); ty != types.end()) {
            (produces ? ty->second.producers : ty->second.consumers).erase(e.order);
            if (ty->second.producers.empty()) produced.erase(e.reg.type_name);
            if (auto n = ty->second.by_session.find(e.session); n != ty->second.by_session.end() && --n->second == 0) {
                ty->second.by_session.erase(n);
                if (auto k = types_of_session.find(e.session); k != types_of_session.end() && --k->second == 0)
                    types_of_session.erase(k);
            }
            if (ty->second.producers.empty() && ty->second.consumers.empty()) types.erase(ty);
        }
    if (produces) --producers;
}

std::size_t Table::size_of(const std::string& name) const {
    std::size_t n = 0;
    for (bool service : {false, true})
        if (const auto t = topics_.find(TopicKey{service, name}); t != topics_.end()) n += t->second.by_order.size();
    return n;
}

// ---- peer sets ---------------------------------------------------------------------------------

Peer Table::peer_of(const Entity& e) const {
    Peer p;
    p.reg = e.reg;
    if (const auto s = sessions_.find(e.session); s != sessions_.end()) {
        p.node = s->second.node;
        p.session = s->second.id;
        p.host = s->second.host;
        p.host_id = s->second.host_id;
        p.pid = s->second.pid;
        p.pid_ns = s->second.pidns;
        p.locators = s->second.locators;
        p.fingerprint = s->second.fingerprint;
    }
    return p;
}

std::vector<std::uint64_t> Table::peers_of(const Entity& watcher) const {
    std::vector<std::uint64_t> out;
    if (watcher.reg.wildcard) {
        for (const auto& [key, topic] : topics_) {
            if (key.service) continue;
            for (const auto& [order, id] : topic.of_kind[static_cast<std::size_t>(EntityKind::publisher)])
                if (key_wide_watches(watcher, entities_.at(id))) out.push_back(id);
        }
        return out;
    }
    const auto want = watched_kind(watcher.reg.kind);
    if (!want) return out;
    const auto t = topics_.find(TopicKey{is_service(watcher.reg.kind), watcher.reg.topic});
    if (t == topics_.end()) return out;
    for (const auto& [order, id] : t->second.of_kind[static_cast<std::size_t>(*want)])
        if (types_match(entities_.at(id).reg.type_name, watcher.reg.type_name)) out.push_back(id);
    return out;
}

// The entities that are told about `e` (its watchers), of matching type.
std::vector<std::uint64_t> Table::watchers_of(const Entity& e) const {
    std::vector<std::uint64_t> out;
    const auto kind = watcher_kind(e.reg.kind);
    if (!kind) return out;
    const auto t = topics_.find(TopicKey{is_service(e.reg.kind), e.reg.topic});
    if (t != topics_.end())
        for (const auto& [order, id] : t->second.of_kind[static_cast<std::size_t>(*kind)])
            if (id != e.reg.id && types_match(entities_.at(id).reg.type_name, e.reg.type_name)) out.push_back(id);
    for (auto id : key_wide_)
        if (key_wide_watches(entities_.at(id), e)) out.push_back(id);
    return out;
}

// A watcher's whole peer set, in chunks: the first replaces what the node had
// (except during warm-up, where nothing is ever removed by absence), the rest add.
void Table::push_full(std::uint64_t watcher) {
    const auto w = entities_.find(watcher);
    if (w == entities_.end()) return;
    const auto s = sessions_.find(w->second.session);
    if (s == sessions_.end()) return;
    const auto ids = peers_of(w->second);
    std::size_t at = 0;
    do {
        const std::size_t n = std::min(peers_per_push, ids.size() - at);
        discovery::Writer msg("peers", 5);
        msg.kv("s", s->second.id);
        msg.kv("instance", me_.instance);
        msg.kv("id", watcher);
        msg.kv("partial", warm_ || at > 0);
        msg.key("peers");
        msg.packer().pack_array(static_cast<std::uint32_t>(n));
        for (std::size_t i = at; i < at + n; ++i) discovery::pack_peer(msg.packer(), peer_of(entities_.at(ids[i])));
        send_to(s->second, msg);
        at += n;
    } while (at < ids.size());
}

// What changed for a watcher: peers added, peers gone. The node merges it.
void Table::push_delta(std::uint64_t watcher, const std::vector<std::uint64_t>& added,
                       const std::vector<std::uint64_t>& gone) {
    const auto w = entities_.find(watcher);
    if (w == entities_.end()) return;
    const auto s = sessions_.find(w->second.session);
    if (s == sessions_.end()) return;
    std::size_t at = 0;
    do {
        const std::size_t n = std::min(peers_per_push, added.size() - at);
        discovery::Writer msg("peers", 6);
        msg.kv("s", s->second.id);
        msg.kv("instance", me_.instance);
        msg.kv("id", watcher);
        msg.kv("partial", true);
        msg.key("peers");
        msg.packer().pack_array(static_cast<std::uint32_t>(n));
        for (std::size_t i = at; i < at + n; ++i) discovery::pack_peer(msg.packer(), peer_of(entities_.at(added[i])));
        msg.kv("gone", at == 0 ? gone : std::vector<std::uint64_t>{});
        send_to(s->second, msg);
        at += n;
    } while (at < added.size());
}

// ---- graph events ------------------------------------------------------------------------------

void Table::graph_event_to(const Session& s, bool appeared, const TopicKey& key, const std::string& type) {
    discovery::Writer w("graph", 6);
    w.kv("s", s.id);
    w.kv("instance", me_.instance);
    w.kv("event", appeared ? "appeared" : "gone");
    w.kv("name", key.name);
    w.kv("service", key.service);
    w.kv("type", type);
    send_to(s, w);
}

void Table::graph_event(bool appeared, const TopicKey& key, const std::string& type) {
    for (const auto& [id, s] : sessions_)
        if (s.watch_graph) graph_event_to(s, appeared, key, type);
}

// ---- add and remove ----------------------------------------------------------------------------

void Table::add(Session& s, Registration reg) {
    const auto id = reg.id;
    auto refuse = [&](const std::string& reason) {
        out_.count(&CoreCounters::refused);
        out_.say(LogLevel::warn, "refused registration",
                 "refused a registration of node '" + wire::printable(s.node) + "': " + wire::printable(reason));
        error_to(s, id, "refused", "geckocore refused it: " + reason);
    };
    std::string why = reg.wildcard ? "" : wire::check_topic_name(reg.topic);
    if (why.empty() && !is_wildcard_type(reg.type_name)) why = wire::check_type_name(reg.type_name);
    if (!why.empty()) return refuse("'" + shown(reg.topic) + "': " + why);
    if (const auto claimed = claims_.entities.find(id);
        claimed != claims_.entities.end() && claimed->second != s.id && !entities_.count(id)) {
        // The previous run gave this id to another session, whose node has not come back yet.
        out_.count(&CoreCounters::refused);
        out_.say(LogLevel::warn, "claimed id",
                 "refused entity id " + std::to_string(id) + " to node '" + wire::printable(s.node) +
                     "': it belonged to another node before the core restarted");
        error_to(s, id, "duplicate",
                 "entity id " + std::to_string(id) +
                     " belonged to another node before the core restarted; it stays that node's until the warm-up "
                     "is over; ignored");
        return;
    }
    if (const auto old = entities_.find(id); old != entities_.end()) {
        if (old->second.session != s.id) {
            error_to(s, id, "duplicate",
                     "entity id " + std::to_string(id) + " is already registered by " + describe(old->second) + "; ignored");
            return;
        }
        const auto& o = old->second.reg;
        if (o.kind == reg.kind && o.topic == reg.topic && o.type_name == reg.type_name && o.latched == reg.latched &&
            o.schema == reg.schema && o.wildcard == reg.wildcard && o.topic_filter == reg.topic_filter &&
            o.type_filter == reg.type_filter) {
            if (watched_kind(reg.kind)) push_full(id);  // a re-registration still gets its peer set
            return;
        }
        remove_entity(id);
    }
    if (s.entities.size() >= opt_.max_entities_per_session)
        return refuse("node '" + s.node + "' already has " + std::to_string(opt_.max_entities_per_session) +
                      " entities (geckocore --max-entities-per-node)");
    if (entities_.size() >= opt_.max_entities)
        return refuse("the core already holds " + std::to_string(opt_.max_entities) +
                      " entities of all nodes (geckocore --max-entities)");
    if (auto collision = check_registration(reg); !collision.empty()) {
        const bool is_collision = collision.rfind("topic '", 0) == 0;
        out_.count(&CoreCounters::refused);
        out_.say(LogLevel::warn, is_collision ? "collision" : "refused registration",
                 "refused a registration of node '" + wire::printable(s.node) + "': " + wire::printable(collision));
        error_to(s, id, is_collision ? "collision" : "refused", "geckocore refused it: " + collision);
        return;
    }
    if (reg.wildcard) return add_key_wide(s, std::move(reg));
    const TopicKey key{is_service(reg.kind), reg.topic};
    auto& topic = topics_[key];
    const bool new_topic = topic.by_order.empty();
    // Types are limited per node, not per topic: nodes that declare made-up
    // types on a topic first cannot lock its real publisher out.
    if (!is_wildcard_type(reg.type_name)) {
        const auto use = topic.types.find(reg.type_name);
        const bool declares_it = use != topic.types.end() && use->second.by_session.count(s.id) > 0;
        const auto mine = topic.types_of_session.find(s.id);
        if (!declares_it && mine != topic.types_of_session.end() && mine->second >= opt_.max_types_per_topic_per_node) {
            if (new_topic) topics_.erase(key);
            return refuse("node '" + s.node + "' already declares " + std::to_string(opt_.max_types_per_topic_per_node) +
                          " types on '" + reg.topic + "' (geckocore --max-types-per-topic-per-node)");
        }
    }
    Entity e;
    e.reg = std::move(reg);
    e.session = s.id;
    e.order = next_order_++;
    if (!is_wildcard_type(e.reg.type_name)) check_types(s, topic, key, e);
    topic.insert(e);
    if (!key.service) channel_names_.emplace(wire::fnv1a32(key.name), key.name);
    s.entities.insert(e.reg.id);
    s.digest ^= discovery::entity_digest_term(e.reg.id);
    const auto [it, inserted] = entities_.emplace(e.reg.id, std::move(e));
    (void)inserted;
    ++changes_;
    const Entity& added = it->second;
    directory_changed(key);  // first: a key-wide subscriber learns the name before it links to the publisher
    if (watched_kind(added.reg.kind)) push_full(added.reg.id);
    for (auto w : watchers_of(added)) push_delta(w, {added.reg.id}, {});
    if (new_topic) graph_event(true, key, added.reg.type_name);
    out_.names_changed({key.name});
}

// Type check against the types already on the topic. A conflict concerns
// the parties between which data would flow (a producer and a consumer):
// both hear of it, once. A second producer of another type hears of the
// first (it splits the topic); consumers of another type than each other,
// with no producer between them, are only shown by `list`.
// Work per type: the first entity it concerns (for the newcomer's one
// message) and those on the other side of the flow (told each): the topic's
// other entities are never scanned. At most conflicts_told types are looked
// at (a topic may carry as many types as nodes declare), the rest summed up.
void Table::check_types(const Session& s, const Topic& topic, const TopicKey& key, const Entity& e) {
    constexpr std::size_t conflicts_told = 8;
    const bool newcomer_produces = discovery::is_producer(e.reg.kind);
    const std::string what = key.service ? "service" : "topic";
    const std::string mine = "the " + std::string(discovery::to_string(e.reg.kind)) + " of " + what + " '" +
                             e.reg.topic + "' on node '" + s.node + "' declares " + e.reg.type_name;
    // A producer conflicts with every other type (each has a producer or a
    // consumer), a consumer with those that have a producer.
    std::vector<const std::string*> conflicting;
    std::size_t others = 0;
    if (newcomer_produces) {
        others = topic.types.size() - topic.types.count(e.reg.type_name);
        for (const auto& [type, use] : topic.types) {
            if (conflicting.size() == conflicts_told) break;
            if (type != e.reg.type_name) conflicting.push_back(&type);
        }
    } else {
        others = topic.produced.size() - topic.produced.count(e.reg.type_name);
        for (const auto& type : topic.produced) {
            if (conflicting.size() == conflicts_told) break;
            if (type != e.reg.type_name) conflicting.push_back(&type);
        }
    }
    if (others > conflicting.size()) {
        out_.count(&CoreCounters::type_conflicts);
        error_to(s, e.reg.id, "type_conflict",
                 "type conflict: " + mine + ", but " + std::to_string(others) + " other types are declared on it" +
                     " (the first " + std::to_string(conflicting.size()) + " follow); no data flows between them");
    }
    for (const std::string* declared : conflicting) {
        const std::string& type = *declared;
        const Topic::TypeUse& use = topic.types.at(type);
        // The first of that type (registration order) that data would flow to or from.
        std::optional<std::uint64_t> first;
        if (!use.producers.empty()) first = use.producers.begin()->first;
        if (newcomer_produces && !use.consumers.empty() && (!first || use.consumers.begin()->first < *first))
            first = use.consumers.begin()->first;
        if (!first) continue;
        const auto& other = entities_.at(topic.by_order.at(*first));
        out_.count(&CoreCounters::type_conflicts);
        const std::string text = "type conflict: " + mine + ", but the " + describe(other) + " declares " +
                                 other.reg.type_name + "; no data flows between them";
        error_to(s, e.reg.id, "type_conflict", text);
        out_.say(LogLevel::warn, "type conflict", wire::printable(text));
        for (const auto& [order, other_id] : newcomer_produces ? use.consumers : use.producers)
            notify_error(other_id, "type_conflict",
                         "type conflict: " + mine + ", but this " + describe(entities_.at(other_id)) + " declares " +
                             type + "; no data flows between them");
    }
}

void Table::remove_entity(std::uint64_t id) {
    const auto it = entities_.find(id);
    if (it == entities_.end()) return;
    ++changes_;
    const auto watchers = watchers_of(it->second);
    Entity e = std::move(it->second);
    entities_.erase(it);
    if (auto s = sessions_.find(e.session); s != sessions_.end()) {
        s->second.entities.erase(id);
        s->second.digest ^= discovery::entity_digest_term(id);
    }
    if (key_wide_.erase(id) > 0) return;  // in no topic, watched by nobody
    const TopicKey key{is_service(e.reg.kind), e.reg.topic};
    if (auto t = topics_.find(key); t != topics_.end()) {
        t->second.erase(e);
        if (t->second.by_order.empty()) {
            topics_.erase(t);
            graph_event(false, key, e.reg.type_name);
        }
    }
    for (auto w : watchers) push_delta(w, {}, {id});
    directory_changed(key);
    out_.names_changed({key.name});
}

}  // namespace gecko::core
