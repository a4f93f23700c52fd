// SPDX-License-Identifier: Apache-2.0
// Golden vectors of the discovery messages (docs/DISCOVERY.md): each builder writes its message field
// for field in the order gecko/src/discovery/ (node side) and geckocore/src/ (core side) write it;
// live_*_test.cpp checks that the real node and core still do.

#include "vectors_parts.hpp"

#include <gecko/buffer.hpp>
#include <gecko/msgs/all.hpp>
#include <gecko/msgs/click.hpp>
#include <gecko/wire/announcement.hpp>
#include <gecko/wire/codec.hpp>
#include <gecko/wire/control.hpp>
#include <gecko/wire/frame.hpp>
#include <gecko/wire/hash.hpp>
#include <gecko/wire/schema_of.hpp>

#include <gecko/click/lockstep_msgs.hpp>

#include <cctype>
#include <cstdio>
#include <map>
#include <optional>
#include <stdexcept>
#include <tuple>
#include <type_traits>
#include <utility>

namespace gecko::conformance {

using discovery::EntityKind;
using discovery::Peer;
using discovery::Registration;
using discovery::TopicStats;
using discovery::Writer;

// ---- public -----------------------------------------------------------------------------------------------

HelloFields talker() {
    HelloFields h;
    h.locators = {"inproc://gecko-4142434445464748", "ipc:///tmp/gecko-dalek-talker-4142434445464748.sock",
                  "tcp://192.168.1.20:41234"};
    return h;
}

HelloFields listener() {
    HelloFields h;
    h.session = listener_session;
    h.secret = listener_secret;
    h.node = "listener";
    h.host = "robot2";
    h.host_id = "7e3d9c2a-1b4f-4e6d-8a9b-0c1d2e3f4a5b/mnt:[4026531841]";
    h.pid = 5151;
    h.locators = {"inproc://gecko-4a4b4c4d4e4f5051", "ipc:///tmp/gecko-dalek-listener-4a4b4c4d4e4f5051.sock",
                  "tcp://192.168.1.21:39001"};
    return h;
}

namespace {
Registration registration(std::uint64_t id, EntityKind kind, const std::string& name, const std::string& type) {
    Registration r;
    r.id = id;
    r.kind = kind;
    r.topic = name;
    r.type_name = type;
    return r;
}
}  // namespace

Registration publisher_registration() { return registration(publisher_id, EntityKind::publisher, topic, string_type); }
Registration server_registration() { return registration(server_id, EntityKind::server, service, service_type); }
Registration subscriber_registration() { return registration(subscriber_id, EntityKind::subscriber, topic, string_type); }
Registration client_registration() { return registration(client_id, EntityKind::client, service, service_type); }

Registration typed_publisher_registration() {
    Registration r = registration(typed_publisher_id, EntityKind::publisher, topic, string_type);
    const auto schema = wire::schema_of<msgs::String>().encode();
    r.schema.assign(schema.begin(), schema.end());
    return r;
}

Registration key_wide_registration() {
    Registration r = registration(recorder_id, EntityKind::subscriber, "*", "");
    r.wildcard = true;
    r.topic_filter = {"arm1/*"};
    r.type_filter = {"*"};
    return r;
}

discovery::ChannelEntry chatter_entry(bool publisher) {
    discovery::ChannelEntry e;
    e.name = topic;
    e.channel = wire::channel_of(key, topic);
    e.type_name = string_type;
    e.type_hash = wire::type_hash(string_type);
    if (publisher) e.producers.push_back({publisher_id, "talker", "robot1", string_type, false});
    return e;
}

discovery::ChannelEntry add_entry() {
    discovery::ChannelEntry e;
    e.name = service;
    e.service = true;
    e.type_name = service_type;
    e.type_hash = wire::type_hash(service_type);
    e.producers.push_back({server_id, "talker", "robot1", service_type, false});
    return e;
}

Peer peer_of(const Registration& r, const HelloFields& n) {
    Peer p;
    p.reg = r;
    p.node = n.node;
    p.session = n.session;
    p.host = n.host;
    p.host_id = n.host_id;
    p.pid = n.pid;
    p.pid_ns = n.pid_ns;
    p.locators = n.locators;
    return p;
}

// gecko/net/src/finder.cpp CoreFinder::send_query
Bytes query(const std::string& k, const std::string& node, const std::string& host, std::int32_t pid) {
    Writer w("query", 4);
    w.kv("key", k);
    w.kv("node", node);
    w.kv("host", host);
    w.kv("pid", pid);
    return bytes_of(w);
}

// gecko/src/discovery/discovery_client.cpp send_hello
Bytes hello(const HelloFields& h) {
    Writer w("hello", 12);
    w.kv("s", h.session);
    w.kv("secret", h.secret);
    w.kv("key", h.key);
    w.kv("node", h.node);
    w.kv("host", h.host);
    w.kv("hostid", h.host_id);
    w.kv("pid", h.pid);
    w.kv("pidns", h.pid_ns);
    w.kv("lease_ms", h.lease_ms);
    w.kv("ids", h.ids);
    w.kv("locators", h.locators);
    w.kv("tool", false);
    return bytes_of(w);
}

// send_add
Bytes add(std::uint64_t session, std::uint64_t secret, const Registration& r) {
    return bytes_of(discovery::add_message(session, secret, r));
}

// DiscoveryClient::remove
Bytes remove(std::uint64_t session, std::uint64_t secret, std::uint64_t id) {
    Writer w("remove", 3);
    w.kv("s", session);
    w.kv("secret", secret);
    w.kv("id", id);
    return bytes_of(w);
}

// service(): the heartbeat
Bytes hb(std::uint64_t session, std::uint64_t secret, const std::vector<std::uint64_t>& ids) {
    Writer w("hb", 4);
    w.kv("s", session);
    w.kv("secret", secret);
    w.kv("n", static_cast<std::uint64_t>(ids.size()));
    w.kv("digest", discovery::entity_digest(ids));
    return bytes_of(w);
}

// send_stats
Bytes stats(std::uint64_t session, std::uint64_t secret, const std::vector<TopicStats>& figures,
            const std::vector<std::pair<std::uint64_t, std::string>>& links) {
    Writer w("stats", 4);
    w.kv("s", session);
    w.kv("secret", secret);
    w.key("stats");
    w.packer().pack_array(static_cast<std::uint32_t>(figures.size()));
    for (const auto& s : figures) discovery::pack_stats(w.packer(), s);
    w.key("links");
    w.packer().pack_array(static_cast<std::uint32_t>(links.size()));
    for (const auto& [peer, via] : links) {
        w.packer().pack_map(2);
        w.packer().pack(std::string_view("s"));
        w.packer().pack(peer);
        w.packer().pack(std::string_view("via"));
        w.packer().pack(via);
    }
    return bytes_of(w);
}

// send_watch_graph, say_goodbye
Bytes session_only(const char* type, std::uint64_t session, std::uint64_t secret) {
    Writer w(type, 2);
    w.kv("s", session);
    w.kv("secret", secret);
    return bytes_of(w);
}

// gecko/src/discovery/core_query.cpp send_list
Bytes list(const std::string& k, std::uint64_t offset) {
    Writer w("list", offset == 0 ? 1 : 2);
    w.kv("key", k);
    if (offset != 0) w.kv("offset", offset);
    return bytes_of(w);
}

// geckocore/src/core.cpp write_core_fields (on_datagrams, announce)
Bytes core_answer(const char* type, const CoreFields& c) {
    Writer w(type, 5);
    w.kv("key", c.key);
    w.kv("instance", c.instance);
    w.kv("endpoint", c.endpoint);
    w.kv("host", c.host);
    w.kv("pid", c.pid);
    return bytes_of(w);
}

// Core::Impl::hello
Bytes welcome(std::uint64_t session, const CoreFields& c, bool warm) {
    Writer w("welcome", 7);
    w.kv("s", session);
    w.kv("instance", c.instance);
    w.kv("lease_ms", c.lease_ms);
    w.kv("host", c.host);
    w.kv("pid", c.pid);
    w.kv("key", c.key);
    w.kv("warm", warm);
    return bytes_of(w);
}

// Core::Impl::handle, a session it does not know
Bytes unknown(std::uint64_t session, std::uint64_t instance) {
    Writer w("unknown", 2);
    w.kv("s", session);
    w.kv("instance", instance);
    return bytes_of(w);
}

// Core::Impl::handle, "hb"
Bytes hb_answer(std::uint64_t session, std::uint64_t instance, const std::vector<std::uint64_t>& ids) {
    Writer w("hb", 4);
    w.kv("s", session);
    w.kv("instance", instance);
    w.kv("n", static_cast<std::uint64_t>(ids.size()));
    w.kv("digest", discovery::entity_digest(ids));
    return bytes_of(w);
}

// push_full (gone == nullptr) and push_delta
Bytes peers(std::uint64_t session, std::uint64_t instance, std::uint64_t watcher, bool partial, const std::vector<Peer>& list,
            const std::vector<std::uint64_t>* gone) {
    Writer w("peers", gone ? 6 : 5);
    w.kv("s", session);
    w.kv("instance", instance);
    w.kv("id", watcher);
    w.kv("partial", partial);
    w.key("peers");
    w.packer().pack_array(static_cast<std::uint32_t>(list.size()));
    for (const auto& p : list) discovery::pack_peer(w.packer(), p);
    if (gone) w.kv("gone", *gone);
    return bytes_of(w);
}

// graph_event_to
Bytes graph(std::uint64_t session, std::uint64_t instance, bool appeared, const std::string& name, bool is_service,
            const std::string& type) {
    Writer w("graph", 6);
    w.kv("s", session);
    w.kv("instance", instance);
    w.kv("event", appeared ? "appeared" : "gone");
    w.kv("name", name);
    w.kv("service", is_service);
    w.kv("type", type);
    return bytes_of(w);
}

// reply_error, notify_error, add's refusals; the door's errors. `session`: the
// session the error is for (0: none, as for a message the core could not read).
Bytes error(std::uint64_t instance, std::uint64_t id, const std::string& code, const std::string& message,
            std::uint64_t session) {
    Writer w("error", session != 0 ? 5 : 4);
    if (session != 0) w.kv("s", session);
    w.kv("instance", instance);
    w.kv("id", id);
    w.kv("code", code);
    w.kv("message", message);
    return bytes_of(w);
}

// geckocore/src/door.cpp register_self
Bytes door_registration(const CoreFields& c) {
    Writer w("core", 6);
    w.kv("key", c.key);
    w.kv("instance", c.instance);
    w.kv("endpoint", c.endpoint);
    w.kv("host", c.host);
    w.kv("pid", c.pid);
    w.kv("pidns", c.pid_ns);
    return bytes_of(w);
}

// HostDoor::on_door
Bytes door_ack(std::uint64_t instance) {
    Writer w("door", 1);
    w.kv("instance", instance);
    return bytes_of(w);
}

Bytes redirect(const CoreFields& c) {
    Writer w("redirect", 6);
    w.kv("key", c.key);
    w.kv("instance", c.instance);
    w.kv("endpoint", c.endpoint);
    w.kv("host", c.host);
    w.kv("pid", c.pid);
    w.kv("pidns", c.pid_ns);
    return bytes_of(w);
}

namespace {

// ---- discovery ---------------------------------------------------------------------------------

Vector discovery_vector(std::string name, std::string what, const char* transport, const char* direction, Bytes bytes) {
    Vector v;
    v.file = "discovery/" + name + ".hex";
    v.name = "discovery." + std::move(name);
    v.what = std::move(what);
    v.bytes = std::move(bytes);
    v.fields["layer"] = "discovery message (docs/DISCOVERY.md)";
    v.fields["transport"] = transport;
    v.fields["direction"] = direction;
    v.fields["map"] = msgpack_to_json(v.bytes.data(), v.bytes.size());
    return v;
}

std::vector<TopicStats> talker_stats() {
    TopicStats p;
    p.id = publisher_id;
    p.messages_per_s = 99.5;
    p.bytes_per_s = 1194.0;  // integral: msgpack-c writes it as an int
    p.latency_ns = -1;
    TopicStats s;
    s.id = server_id;
    s.messages_per_s = 2.0;
    s.latency_ns = -1;
    return {p, s};
}

// The answer to `list` for the story: talker and listener, 'chatter' and 'add'
// (geckocore/src/core.cpp write_list, field for field).
Bytes list_answer(const CoreFields& c) {
    Writer w("list", 13);
    auto& pk = w.packer();
    w.kv("key", c.key);
    w.kv("instance", c.instance);
    w.kv("host", c.host);
    w.kv("pid", c.pid);
    w.kv("endpoint", c.endpoint);
    w.kv("uptime_ms", std::int64_t{65000});
    w.key("nodes");
    const HelloFields nodes[] = {talker(), listener()};
    const std::int64_t silent[] = {120, 480};
    pk.pack_array(2);
    for (int i = 0; i < 2; ++i) {
        const auto& n = nodes[i];
        pk.pack_map(9);
        pk.pack(std::string_view("s"));
        pk.pack(n.session);
        pk.pack(std::string_view("node"));
        pk.pack(n.node);
        pk.pack(std::string_view("host"));
        pk.pack(n.host);
        pk.pack(std::string_view("pid"));
        pk.pack(n.pid);
        pk.pack(std::string_view("silent_ms"));
        pk.pack(silent[i]);
        pk.pack(std::string_view("entities"));
        pk.pack(std::uint64_t{2});
        pk.pack(std::string_view("locators"));
        pk.pack(n.locators);
        pk.pack(std::string_view("session"));
        pk.pack(n.session);
        // The talker's stats said it receives from the listener over ipc.
        pk.pack(std::string_view("links"));
        pk.pack_array(i == 0 ? 1 : 0);
        if (i == 0) {
            pk.pack_map(3);
            pk.pack(std::string_view("s"));
            pk.pack(nodes[1].session);
            pk.pack(std::string_view("node"));
            pk.pack(nodes[1].node);
            pk.pack(std::string_view("via"));
            pk.pack(std::string_view("ipc"));
        }
    }
    const auto stats = talker_stats();
    auto entity = [&](const Registration& r, const HelloFields& n, const TopicStats* st) {
        const Peer p = peer_of(r, n);
        pk.pack_map(discovery::registration_fields + 7);
        discovery::pack_registration_fields(pk, p.reg);
        pk.pack(std::string_view("locators"));
        pk.pack(p.locators);
        pk.pack(std::string_view("node"));
        pk.pack(p.node);
        pk.pack(std::string_view("session"));
        pk.pack(p.session);
        pk.pack(std::string_view("host"));
        pk.pack(p.host);
        pk.pack(std::string_view("pid"));
        pk.pack(p.pid);
        pk.pack(std::string_view("stats"));
        if (st) discovery::pack_stats(pk, *st);
        else pk.pack_nil();
        pk.pack(std::string_view("stats_age_ms"));
        if (st) pk.pack(std::int64_t{1500});
        else pk.pack_nil();
    };
    auto topic_entry = [&](bool service_entry, const Registration& producer, const HelloFields& pn, const TopicStats* ps,
                           const Registration& consumer, const HelloFields& cn) {
        pk.pack_map(7);
        pk.pack(std::string_view("name"));
        pk.pack(producer.topic);
        pk.pack(std::string_view("type"));
        pk.pack(producer.type_name);
        pk.pack(std::string_view("types"));
        pk.pack(std::vector<std::string>{producer.type_name});
        pk.pack(std::string_view("channel"));
        pk.pack(service_entry ? std::uint64_t{0} : wire::channel_of(key, producer.topic));
        pk.pack(std::string_view("schema"));
        pk.pack_nil();
        pk.pack(std::string_view(service_entry ? "servers" : "publishers"));
        pk.pack_array(1);
        entity(producer, pn, ps);
        pk.pack(std::string_view(service_entry ? "clients" : "subscribers"));
        pk.pack_array(1);
        entity(consumer, cn, nullptr);
    };
    w.key("topics");
    pk.pack_array(1);
    topic_entry(false, publisher_registration(), nodes[0], &stats[0], subscriber_registration(), nodes[1]);
    w.key("services");
    pk.pack_array(1);
    topic_entry(true, server_registration(), nodes[0], &stats[1], client_registration(), nodes[1]);
    w.key("key_wide");
    pk.pack_array(0);
    w.kv("next", std::uint64_t{0});
    w.key("conflicts");
    pk.pack_array(0);
    w.key("counters");
    const char* counters[] = {"malformed_datagrams", "malformed_messages", "queries_answered", "other_key_queries",
                              "duplicate_cores",     "leases_expired",     "dead_processes",   "type_conflicts",
                              "duplicate_instances", "refused",            "auth_failures",    "connections_closed",
                              "stale_shm_removed",   "answers_dropped",    "datagrams_refused", "handshakes_refused"};
    pk.pack_map(static_cast<std::uint32_t>(std::size(counters)));
    for (const char* name : counters) {
        pk.pack(std::string_view(name));
        pk.pack(std::uint64_t{0});
    }
    return bytes_of(w);
}

}  // namespace

std::vector<Vector> discovery_vectors() {
    std::vector<Vector> out;
    const CoreFields core;
    const auto t = talker();
    const auto l = listener();
    const char* udp = "udp";
    const char* over_zmq = "zmq";
    const char* n2c = "node -> core";
    const char* c2n = "core -> node";

    out.push_back(discovery_vector("query", "a node asks the multicast group where the core of 'dalek' is", udp,
                                   "node -> multicast group", query(key, "talker", "robot1", 4242)));
    out.push_back(discovery_vector("core", "the core's unicast answer to a query (its endpoint as bound)", udp,
                                   "core -> the query's source address", core_answer("core", core)));
    out.push_back(discovery_vector("announce", "the core announces itself on the group", udp, "core -> multicast group",
                                   core_answer("announce", core)));

    out.push_back(discovery_vector("hello", "talker opens its session (no entities yet)", over_zmq, n2c, hello(t)));
    out.push_back(discovery_vector("welcome", "the core accepts the session (after its warm-up)", over_zmq, c2n, welcome(t.session, core, false)));
    out.push_back(discovery_vector("add_publisher", "talker registers its publisher of 'chatter'", over_zmq, n2c,
                                   add(t.session, t.secret, publisher_registration())));
    out.push_back(discovery_vector("add_server", "talker registers its server of 'add'", over_zmq, n2c,
                                   add(t.session, t.secret, server_registration())));
    out.push_back(discovery_vector("add_subscriber", "listener registers its subscriber of 'chatter'", over_zmq, n2c,
                                   add(l.session, l.secret, subscriber_registration())));
    out.push_back(discovery_vector("add_client", "listener registers its client of 'add'", over_zmq, n2c,
                                   add(l.session, l.secret, client_registration())));
    out.push_back(discovery_vector("peers_full",
                                   "the subscriber's whole peer set (sent after its add and whenever the core pushes a "
                                   "full set): talker's publisher",
                                   over_zmq, c2n, peers(l.session, core.instance, subscriber_id, false, {peer_of(publisher_registration(), t)}, nullptr)));
    out.push_back(discovery_vector("peers_server", "the server's peer set: the client (servers are told of their clients)",
                                   over_zmq, c2n, peers(t.session, core.instance, server_id, false, {peer_of(client_registration(), l)}, nullptr)));
    out.push_back(discovery_vector("hb", "talker's heartbeat: its 2 entities and their digest", over_zmq, n2c,
                                   hb(t.session, t.secret, {publisher_id, server_id})));
    out.push_back(discovery_vector("hb_answer", "the core's answer: its view of talker (2 entities, same digest)", over_zmq, c2n,
                                   hb_answer(t.session, core.instance, {publisher_id, server_id})));
    out.push_back(discovery_vector("stats", "talker's periodic figures for its entities", over_zmq, n2c,
                                   stats(t.session, t.secret, talker_stats(), {{listener().session, "ipc"}})));
    out.push_back(discovery_vector("watch_graph", "listener asks to follow the key's topics", over_zmq, n2c,
                                   session_only("watch_graph", l.session, l.secret)));
    out.push_back(discovery_vector("graph", "a topic appeared (sent to sessions that watch the graph)", over_zmq, c2n,
                                   graph(l.session, core.instance, true, topic, false, string_type)));
    out.push_back(discovery_vector("watch_directory", "listener asks to follow the key's channel directory", over_zmq, n2c,
                                   session_only("watch_directory", l.session, l.secret)));
    {
        msgpack::sbuffer entries;
        discovery::pack_channel_entry(entries, chatter_entry(true));
        discovery::pack_channel_entry(entries, add_entry());
        out.push_back(discovery_vector("directory_full", "the whole directory: the topic 'chatter' and the service 'add'",
                                       over_zmq, c2n,
                                       bytes_of(discovery::directory_message(l.session, core.instance, false, entries, 2, {}))));
        msgpack::sbuffer changed;
        discovery::pack_channel_entry(changed, chatter_entry(false));
        out.push_back(discovery_vector("directory_delta", "a change: 'chatter' lost its publisher (its subscriber remains)",
                                       over_zmq, c2n,
                                       bytes_of(discovery::directory_message(l.session, core.instance, true, changed, 1, {}))));
    }
    out.push_back(discovery_vector("add_publisher_typed",
                                   "a typed publisher of 'chatter' registers with the schema of its type", over_zmq, n2c,
                                   add(t.session, t.secret, typed_publisher_registration())));
    out.push_back(discovery_vector("add_key_wide", "listener registers a key-wide subscriber of every topic under 'arm1/'",
                                   over_zmq, n2c, add(l.session, l.secret, key_wide_registration())));
    out.push_back(discovery_vector("list", "a tool asks for the key's table (no session needed)", over_zmq, "tool -> core",
                                   list(key, 0)));
    out.push_back(discovery_vector("list_page", "a tool asks for the next page, from topic index 1", over_zmq, "tool -> core",
                                   list(key, 1)));
    out.push_back(discovery_vector("list_answer", "the core's table: two nodes, 'chatter' and 'add'", over_zmq, "core -> tool",
                                   list_answer(core)));
    out.push_back(discovery_vector("remove", "talker withdraws its publisher", over_zmq, n2c,
                                   remove(t.session, t.secret, publisher_id)));
    {
        const std::vector<std::uint64_t> gone{publisher_id};
        out.push_back(discovery_vector("peers_delta", "the subscriber's peer set changed: the publisher is gone", over_zmq, c2n,
                                       peers(l.session, core.instance, subscriber_id, true, {}, &gone)));
    }
    out.push_back(discovery_vector("bye", "talker closes its session", over_zmq, n2c, session_only("bye", t.session, t.secret)));
    out.push_back(discovery_vector("unknown", "the core does not know the session of a message (it restarted or expired it)",
                                   over_zmq, c2n, unknown(t.session, core.instance)));

    out.push_back(discovery_vector("error_malformed", "answer to a message whose v is 1", over_zmq, c2n,
                                   error(core.instance, 0, "malformed", "unsupported protocol version 1")));
    out.push_back(discovery_vector("error_wrong_key", "answer to a hello for key 'daleks'", over_zmq, c2n,
                                   error(core.instance, 0, "wrong_key",
                                         "geckocore at tcp://0.0.0.0:41000 on robot1 serves key 'dalek', not 'daleks'", t.session)));
    out.push_back(discovery_vector("error_unknown_type", "answer to a session message of an unknown type", over_zmq, c2n,
                                   error(core.instance, 0, "unknown_type", "unknown message type 'frobnicate'", t.session)));
    out.push_back(discovery_vector(
        "error_type_conflict", "to listener, whose new subscriber of 'chatter' (id 0x1112131415161719) expects another type",
        over_zmq, c2n,
        error(core.instance, subscriber_id + 1, "type_conflict",
              "type conflict: the subscriber of topic 'chatter' on node 'listener' declares gecko.msgs.Int64, but the "
              "publisher on node 'talker' declares gecko.msgs.String; no data flows between them",
              l.session)));
    out.push_back(discovery_vector("error_refused", "answer to an add whose topic name starts with '#'", over_zmq, c2n,
                                   error(core.instance, 0x0102030405060799ull, "refused",
                                         "geckocore refused it: '#bad': the name starts with '#', which Gecko reserves", t.session)));
    out.push_back(discovery_vector("error_duplicate", "answer to listener adding an entity id that talker registered", over_zmq, c2n,
                                   error(core.instance, publisher_id, "duplicate",
                                         "entity id " + std::to_string(publisher_id) +
                                             " is already registered by publisher on node 'talker'; ignored",
                                         l.session)));
    out.push_back(discovery_vector(
        "error_collision", "answer to listener's publisher of a topic whose channel id talker's topic has", over_zmq, c2n,
        error(core.instance, subscriber_id + 2, "collision",
              std::string("geckocore refused it: topic '") + collided_topic + "' has the channel id of topic '" +
                  colliding_topic + "' (the 32-bit hash of its name, which frames carry: PROTOCOL.md §1): rename one of them",
              l.session)));
    out.push_back(discovery_vector("error_auth", "answer to a message naming talker's session without its secret", over_zmq, c2n,
                                   error(core.instance, 0, "auth",
                                         "session " + std::to_string(talker_session) + " belongs to another node", talker_session)));

    CoreFields door_core = core;
    out.push_back(discovery_vector("door_registration", "a core registers with the host door (over loopback), every second", over_zmq,
                                   "core -> host door", door_registration(door_core)));
    out.push_back(discovery_vector("door_ack", "the door acknowledges a registration", over_zmq, "host door -> core",
                                   door_ack(0x7172737475767700ull)));
    out.push_back(discovery_vector("redirect", "the door's answer to a hello (or list) for 'dalek': where its core is", over_zmq,
                                   "host door -> node", redirect(door_core)));
    out.push_back(discovery_vector("error_no_core", "the door's answer to a hello for a key no core of this host serves", over_zmq,
                                   "host door -> node",
                                   error(0x7172737475767700ull, 0, "no_core",
                                         "no geckocore for key 'daleks' on host robot1; keys served here: 'dalek'")));
    return out;
}


}  // namespace gecko::conformance
