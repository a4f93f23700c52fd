// SPDX-License-Identifier: Apache-2.0
#include "list_answer.hpp"

namespace gecko::core {
namespace {

using std::chrono::milliseconds;
using Packer = msgpack::packer<msgpack::sbuffer>;

// A page stops taking topics past this size and says where to go on
// (`next`); the nodes, and the entities of one topic, take at most
// part_bytes of it, the rest is omitted and counted. An answer thus stays
// below 4 MiB (discovery::max_zmq_message, the tools' limit).
constexpr std::size_t page_bytes = 2u << 20;
constexpr std::size_t part_bytes = 1u << 20;
// The types of one topic listed (by name), at most.
constexpr std::size_t types_shown = 64;

std::int64_t ms_since(Clock::time_point then, Clock::time_point now) {
    return static_cast<std::int64_t>(std::chrono::duration_cast<milliseconds>(now - then).count());
}

// One part of the answer, packed apart first: its item count goes before its
// items, and depends on what fits.
struct Part {
    msgpack::sbuffer bytes;
    Packer pk{bytes};
    std::uint32_t items = 0;
    std::size_t omitted = 0;
};

void pack_node(Packer& p, const Table& table, std::uint64_t id, const Session& s, Clock::time_point now) {
    p.pack_map(9);
    p.pack(std::string_view("s"));
    p.pack(id);
    p.pack(std::string_view("node"));
    p.pack(s.node);
    p.pack(std::string_view("host"));
    p.pack(s.host);
    p.pack(std::string_view("pid"));
    p.pack(s.pid);
    p.pack(std::string_view("silent_ms"));
    p.pack(ms_since(s.last_seen, now));
    p.pack(std::string_view("entities"));
    p.pack(static_cast<std::uint64_t>(s.entities.size()));
    p.pack(std::string_view("locators"));
    p.pack(s.locators);
    p.pack(std::string_view("session"));
    p.pack(id);
    p.pack(std::string_view("links"));
    p.pack_array(static_cast<std::uint32_t>(s.links.size()));
    for (const auto& [peer, via] : s.links) {
        const auto other = table.sessions().find(peer);
        p.pack_map(3);
        p.pack(std::string_view("s"));
        p.pack(peer);
        p.pack(std::string_view("node"));
        p.pack(other == table.sessions().end() ? std::string() : other->second.node);
        p.pack(std::string_view("via"));
        p.pack(via);
    }
}

void pack_entity(Packer& p, const Table& table, const Entity& e, Clock::time_point now) {
    const Peer peer = table.peer_of(e);
    p.pack_map(discovery::registration_fields + 7 + (e.reg.wildcard ? 1 : 0));
    discovery::pack_registration_fields(p, peer.reg);
    p.pack(std::string_view("locators"));
    p.pack(peer.locators);
    p.pack(std::string_view("node"));
    p.pack(peer.node);
    p.pack(std::string_view("session"));
    p.pack(peer.session);
    p.pack(std::string_view("host"));
    p.pack(peer.host);
    p.pack(std::string_view("pid"));
    p.pack(peer.pid);
    p.pack(std::string_view("stats"));
    if (e.stats)
        discovery::pack_stats(p, *e.stats);
    else
        p.pack_nil();
    p.pack(std::string_view("stats_age_ms"));
    if (e.stats)
        p.pack(ms_since(e.stats_at, now));
    else
        p.pack_nil();
    if (e.reg.wildcard) {
        p.pack(std::string_view("filter"));
        p.pack_map(2);
        p.pack(std::string_view("topics"));
        p.pack(e.reg.topic_filter);
        p.pack(std::string_view("types"));
        p.pack(e.reg.type_filter);
    }
}

// One side of a topic (its producers or its consumers), up to the part's
// budget (`used` so far); the rest counted in `omitted`.
void pack_side(msgpack::sbuffer& out, const Table& table, const std::vector<const Entity*>& list, std::size_t& used,
               std::size_t& omitted, Clock::time_point now) {
    Part side;
    for (auto* e : list) {
        if (used + side.bytes.size() > part_bytes) {
            ++omitted;
            continue;
        }
        pack_entity(side.pk, table, *e, now);
        ++side.items;
    }
    used += side.bytes.size();
    Packer(out).pack_array(side.items);
    out.write(side.bytes.data(), side.bytes.size());
}

void pack_conflict(Part& conflicts, const TopicKey& k, const std::vector<std::string>& types, std::size_t declared) {
    Packer& p = conflicts.pk;
    p.pack_map(4);
    p.pack(std::string_view("topic"));
    p.pack(k.name);
    p.pack(std::string_view("service"));
    p.pack(k.service);
    p.pack(std::string_view("types"));
    p.pack(types);
    std::string text = std::string(k.service ? "service '" : "topic '") + k.name + "' is declared with " +
                       std::to_string(declared) + " types:";
    for (const auto& t : types) text += " " + t;
    if (declared > types.size()) text += " ...";
    p.pack(std::string_view("message"));
    p.pack(text);
    ++conflicts.items;
}

// A topic (or service) with its entities; its conflict, if any, into `conflicts`.
void pack_topic(Part& body, Part& conflicts, const Table& table, const TopicKey& k, const Topic& t,
                Clock::time_point now) {
    std::vector<const Entity*> producers, consumers;
    std::vector<std::string> types;
    for (const auto& [order, id] : t.by_order) {
        const auto& e = table.entities().at(id);
        (discovery::is_producer(e.reg.kind) ? producers : consumers).push_back(&e);
    }
    // A topic may carry as many types as nodes declare: the first ones (by name) are shown.
    for (const auto& [type, use] : t.types) {
        if (types.size() == types_shown) break;
        types.push_back(type);
    }
    const std::string type = !producers.empty() ? producers.front()->reg.type_name : consumers.front()->reg.type_name;
    if (types.size() > 1) pack_conflict(conflicts, k, types, t.types.size());
    msgpack::sbuffer sides;
    std::size_t used = 0, omitted = 0;
    Packer(sides).pack(std::string_view(k.service ? "servers" : "publishers"));
    pack_side(sides, table, producers, used, omitted, now);
    Packer(sides).pack(std::string_view(k.service ? "clients" : "subscribers"));
    pack_side(sides, table, consumers, used, omitted, now);
    const discovery::ChannelEntry entry = table.entry_of(k, t);
    Packer& p = body.pk;
    p.pack_map(omitted > 0 ? 8 : 7);
    p.pack(std::string_view("name"));
    p.pack(k.name);
    p.pack(std::string_view("type"));
    p.pack(type);
    p.pack(std::string_view("types"));
    p.pack(types);
    p.pack(std::string_view("channel"));
    p.pack(entry.channel);
    p.pack(std::string_view("schema"));
    if (entry.schema.empty())
        p.pack_nil();
    else
        body.bytes.write(entry.schema.data(), entry.schema.size());
    body.bytes.write(sides.data(), sides.size());
    if (omitted > 0) {
        p.pack(std::string_view("omitted"));  // entities of this topic not in the answer
        p.pack(static_cast<std::uint64_t>(omitted));
        body.omitted += omitted;
    }
    ++body.items;
}

void pack_counters(Packer& p, const CoreFigures& f) {
    const CoreCounters& c = f.counters;
    const std::pair<const char*, std::uint64_t> fields[] = {
        {"malformed_datagrams", c.malformed_datagrams}, {"malformed_messages", c.malformed_messages},
        {"queries_answered", c.queries_answered},       {"other_key_queries", c.other_key_queries},
        {"duplicate_cores", c.duplicate_cores},         {"leases_expired", c.leases_expired},
        {"dead_processes", c.dead_processes},           {"type_conflicts", c.type_conflicts},
        {"duplicate_instances", f.duplicate_instances}, {"refused", c.refused},
        {"auth_failures", c.auth_failures},             {"connections_closed", c.connections_closed},
        {"stale_shm_removed", c.stale_shm_removed},     {"answers_dropped", c.answers_dropped},
        {"datagrams_refused", c.datagrams_refused},     {"handshakes_refused", c.handshakes_refused}};
    p.pack_map(static_cast<std::uint32_t>(std::size(fields)));
    for (const auto& [name, value] : fields) {
        p.pack(std::string_view(name));
        p.pack(value);
    }
}

void append(discovery::Writer& w, const char* key, const Part& part) {
    w.key(key);
    w.packer().pack_array(part.items);
    w.append_raw(part.bytes.data(), part.bytes.size());
}

}  // namespace

discovery::Writer list_answer(const Table& table, const CoreIdentity& me, const CoreFigures& figures,
                              const wire::Value& request, Clock::time_point now) {
    const auto only = discovery::get_str(request, "topic");
    const std::size_t offset = static_cast<std::size_t>(discovery::get_u64(request, "offset").value_or(0));
    const std::size_t limit = static_cast<std::size_t>(discovery::get_u64(request, "limit").value_or(SIZE_MAX));

    Part nodes;
    if (offset == 0) {
        for (const auto& [id, s] : table.sessions()) {
            if (nodes.bytes.size() > part_bytes) {
                ++nodes.omitted;
                continue;
            }
            pack_node(nodes.pk, table, id, s, now);
            ++nodes.items;
        }
    }
    // Topics are numbered in name order, then services; a page is the
    // numbers from `offset` on that fit (conflicts count in its size).
    Part bodies[2], conflicts;  // topics, services
    std::size_t index = 0, next = 0;
    for (bool service : {false, true}) {
        for (const auto& [k, t] : table.topics()) {
            if (k.service != service) continue;
            if (only && k.name != *only) continue;
            const std::size_t i = index++;
            if (i < offset || bodies[service].items >= limit) continue;
            const std::size_t size = nodes.bytes.size() + bodies[0].bytes.size() + bodies[1].bytes.size() + conflicts.bytes.size();
            if (next != 0 || size > page_bytes) {
                if (next == 0) next = i;
                continue;
            }
            pack_topic(bodies[service], conflicts, table, k, t, now);
        }
    }

    // Key-wide subscribers (recorders, bridges) belong to no topic: listed apart, with the first page.
    Part key_wide;
    if (offset == 0 && !only) {
        for (auto id : table.key_wide()) {
            if (key_wide.bytes.size() > part_bytes) {
                ++key_wide.omitted;
                continue;
            }
            pack_entity(key_wide.pk, table, table.entities().at(id), now);
            ++key_wide.items;
        }
    }

    const std::size_t entities_omitted = bodies[0].omitted + bodies[1].omitted + key_wide.omitted;
    const bool cut = nodes.omitted > 0 || entities_omitted > 0;
    discovery::Writer w("list", cut ? 14 : 13);
    w.kv("key", me.key);
    w.kv("instance", me.instance);
    w.kv("host", me.host);
    w.kv("pid", me.pid);
    w.kv("endpoint", me.endpoint);
    w.kv("uptime_ms", static_cast<std::int64_t>(figures.uptime.count()));
    append(w, "nodes", nodes);
    append(w, "topics", bodies[0]);
    append(w, "services", bodies[1]);
    append(w, "key_wide", key_wide);
    w.kv("next", static_cast<std::uint64_t>(next));
    append(w, "conflicts", conflicts);
    if (cut) {
        // What this answer leaves out to stay bounded (never, in an ordinary table).
        w.key("omitted");
        w.packer().pack_map(2);
        w.kv("nodes", static_cast<std::uint64_t>(nodes.omitted));
        w.kv("entities", static_cast<std::uint64_t>(entities_omitted));
    }
    w.key("counters");
    pack_counters(w.packer(), figures);
    return w;
}

}  // namespace gecko::core
