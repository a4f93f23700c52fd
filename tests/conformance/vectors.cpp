// SPDX-License-Identifier: Apache-2.0
// The golden vectors (see vectors.hpp). Each discovery builder below writes
// its message field for field in the order gecko/src/discovery/ (node side)
// and geckocore/src/ (core side) write it; live_*_test.cpp checks that the
// real node and core still do.

#include "vectors.hpp"

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

#include "add_types.hpp"

namespace gecko::conformance {
namespace {

using discovery::EntityKind;
using discovery::Peer;
using discovery::Registration;
using discovery::TopicStats;
using discovery::Writer;

constexpr std::uint64_t latched_publisher_id = 0x0a0b0c0d0e0f1011ull;

Bytes bytes_of(const Writer& w) {
    return Bytes(reinterpret_cast<const std::uint8_t*>(w.data()), reinterpret_cast<const std::uint8_t*>(w.data()) + w.size());
}

std::string hex_number(std::uint64_t v, int digits = 16) {
    char s[24];
    std::snprintf(s, sizeof s, "0x%0*llx", digits, static_cast<unsigned long long>(v));
    return s;
}

std::string hex_bytes(const std::uint8_t* p, std::size_t n) {
    static const char* digits = "0123456789abcdef";
    std::string out;
    for (std::size_t i = 0; i < n; ++i) {
        out += digits[p[i] >> 4];
        out += digits[p[i] & 15];
    }
    return out;
}

std::string channel_bytes(wire::Channel c) {
    std::uint8_t b[8];
    wire::store_channel(b, c);
    return hex_bytes(b, 8);
}

// ---- frames ------------------------------------------------------------------------------

template <class T>
Bytes encoded(const T& message) {
    Buffer b;
    wire::encode(b, message);
    return Bytes(b.data(), b.data() + b.size());
}

Bytes frame(const wire::FrameHeader& h, const Bytes& body) {
    Bytes out(wire::frame_header_size);
    wire::write_frame_header(out.data(), h);
    out.insert(out.end(), body.begin(), body.end());
    return out;
}

Json flag_names(std::uint8_t flags) {
    Json names = Json::array();
    const std::pair<std::uint8_t, const char*> known[] = {
        {wire::frame_flags::compressed, "compressed"}, {wire::frame_flags::reply, "reply"},
        {wire::frame_flags::error, "error"},           {wire::frame_flags::request, "request"},
        {wire::frame_flags::control, "control"},       {wire::frame_flags::latched, "latched"}};
    for (const auto& [bit, name] : known)
        if (flags & bit) names.push_back(name);
    return names;
}

Json header_fields(const wire::FrameHeader& h, const std::string& channel_name, const char* sender_role,
                   const char* type_name) {
    Json j;
    j["channel"] = h.channel;
    j["channel_hex"] = hex_number(h.channel);
    j["channel_of"] = Json{{"key", key}, {"name", channel_name}};
    j["magic"] = "GK";
    j["version"] = h.version;
    j["flags"] = h.flags;
    j["flag_names"] = flag_names(h.flags);
    j["payload_size"] = h.payload_size;
    j["sequence"] = h.sequence;
    j["sender_id"] = h.sender_id;
    j["sender_id_hex"] = hex_number(h.sender_id);
    j["sender"] = sender_role;
    j["send_time_ns"] = h.send_time_ns;
    j["type_hash"] = h.type_hash;
    j["type_hash_hex"] = hex_number(h.type_hash);
    j["type_name"] = type_name ? Json(type_name) : Json(nullptr);
    return j;
}

Vector data_frame(std::string name, std::string what, wire::FrameHeader h, const std::string& channel_name,
                  const char* sender_role, const char* type_name, const Bytes& payload, int compression_level = 0) {
    Bytes body = payload;
    h.payload_size = static_cast<std::uint32_t>(payload.size());
    if (compression_level > 0) {
        Buffer deflated;
        if (!wire::deflate_append(payload.data(), payload.size(), compression_level, deflated))
            throw std::runtime_error("zlib failed");
        body.assign(deflated.data(), deflated.data() + deflated.size());
    }
    Vector v;
    v.file = "frames/" + name + ".hex";
    v.name = "frame." + std::move(name);
    v.what = std::move(what);
    v.bytes = frame(h, body);
    v.fields["layer"] = "data frame (docs/PROTOCOL.md section 2)";
    v.fields["header"] = header_fields(h, channel_name, sender_role, type_name);
    Json p;
    p["compressed"] = compression_level > 0;
    p["size_on_wire"] = body.size();
    if (compression_level > 0) {
        p["deflate_level"] = compression_level;
        p["note"] = "the zlib stream is not normative: check that it inflates to exactly payload_size bytes, equal to 'msgpack'";
    }
    p["msgpack"] = msgpack_to_json(payload.data(), payload.size());
    v.fields["payload"] = p;
    return v;
}

std::vector<Vector> frames() {
    std::vector<Vector> out;
    {
        wire::FrameHeader h;
        h.channel = wire::channel_of(key, topic);
        h.sequence = 1;
        h.sender_id = publisher_id;
        h.send_time_ns = send_time_ns;
        h.type_hash = wire::type_hash(string_type);
        out.push_back(data_frame("plain", "a publisher's first message on 'chatter': gecko.msgs.String {data: \"hello\"}", h,
                                 topic, "publisher", string_type, encoded(msgs::String{"hello"})));
    }
    {
        wire::FrameHeader h;
        h.channel = wire::channel_of(key, topic);
        h.flags = wire::frame_flags::compressed;
        h.sequence = 2;
        h.sender_id = publisher_id;
        h.send_time_ns = send_time_ns + 10'000'000;
        h.type_hash = wire::type_hash(string_type);
        std::string text;
        for (int i = 0; i < 40; ++i) text += "gecko ";
        out.push_back(data_frame("compressed",
                                 "a payload above the publisher's compress_above, zlib level 1: gecko.msgs.String {data: \"gecko \" x 40}",
                                 h, topic, "publisher", string_type, encoded(msgs::String{text}), 1));
    }
    {
        wire::FrameHeader h;
        h.channel = wire::directed_channel(key, subscriber_id);
        h.flags = wire::frame_flags::latched;
        h.sequence = 3;
        h.sender_id = latched_publisher_id;
        h.send_time_ns = send_time_ns - 5'000'000'000;
        h.type_hash = wire::type_hash(string_type);
        out.push_back(data_frame("latched",
                                 "a latched publisher of 'mode' replays its last frame (sequence 3) to a subscriber that "
                                 "joined late: the channel is the subscriber's directed channel, flag latched set",
                                 h, wire::directed_name(subscriber_id), "publisher", string_type,
                                 encoded(msgs::String{"auto"})));
    }
    {
        wire::FrameHeader h;
        h.channel = wire::directed_channel(key, server_id);
        h.flags = wire::frame_flags::request;
        h.sequence = 1;
        h.sender_id = client_id;
        h.send_time_ns = send_time_ns;
        h.type_hash = wire::type_hash(request_type);
        AddRequest r;
        r.a = 2;
        r.b = 3;
        out.push_back(data_frame("request", "a client's first request (request id 1) to the 'add' server: {a: 2.0, b: 3.0}", h,
                                 wire::directed_name(server_id), "client", request_type, encoded(r)));
    }
    {
        wire::FrameHeader h;
        h.channel = wire::directed_channel(key, client_id);
        h.flags = wire::frame_flags::reply;
        h.sequence = 1;
        h.sender_id = server_id;
        h.send_time_ns = send_time_ns + 1'000'000;
        h.type_hash = wire::type_hash(reply_type);
        AddReply r;
        r.sum = 5;
        out.push_back(data_frame("reply", "the server's reply to request 1 on the client's directed channel: {sum: 5.0}", h,
                                 wire::directed_name(client_id), "server", reply_type, encoded(r)));
    }
    {
        wire::FrameHeader h;
        h.channel = wire::directed_channel(key, client_id);
        h.flags = wire::frame_flags::reply | wire::frame_flags::error;
        h.sequence = 2;
        h.sender_id = server_id;
        h.send_time_ns = send_time_ns + 2'000'000;
        h.type_hash = wire::type_hash(reply_type);  // an error reply keeps the reply type's hash
        out.push_back(data_frame("error_reply",
                                 "the server's error reply to request 2, whose type hash was not examples.AddRequest's: "
                                 "the payload is one msgpack str",
                                 h, wire::directed_name(client_id), "server", reply_type,
                                 packed(std::string("service 'add' expects examples.AddRequest but got another type"))));
    }
    for (const char* type : {"seq", "end"}) {
        const std::uint64_t last = std::string(type) == "seq" ? 4 : 5;
        wire::FrameHeader h;
        h.channel = wire::channel_of(key, topic);
        h.flags = wire::frame_flags::control;
        h.sequence = last;
        h.sender_id = publisher_id;
        h.send_time_ns = send_time_ns + 500'000'000;
        h.type_hash = 0;
        Buffer body;
        wire::encode_control(wire::Control{type, last}, body);
        out.push_back(data_frame(std::string("control_") + type,
                                 std::string(type) == "seq"
                                     ? "control frame 'seq': the publisher went quiet after sequence 4"
                                     : "control frame 'end': the publisher closes; 5 was its last sequence",
                                 h, topic, "publisher", nullptr, Bytes(body.data(), body.data() + body.size())));
    }
    return out;
}

// ---- announcements ---------------------------------------------------------------------------

Vector announcement(std::string name, std::string what, const wire::Announcement& a, const std::string& channel_name) {
    Vector v;
    v.file = "announcements/" + name + ".hex";
    v.name = "announcement." + std::move(name);
    v.what = std::move(what);
    const std::string text = wire::encode_announcement(a);
    v.bytes.assign(text.begin(), text.end());
    const wire::Channel channel = wire::load_channel(v.bytes.data());
    v.fields["layer"] = "subscriber announcement (docs/PROTOCOL.md section 4); over ZeroMQ the SUB subscribes to exactly these bytes";
    v.fields["channel"] = channel;
    v.fields["channel_hex"] = hex_number(channel);
    v.fields["channel_bytes"] = channel_bytes(channel);
    v.fields["channel_of"] = Json{{"key", key}, {"name", channel_name}};
    v.fields["byte8"] = 0;
    v.fields["announcement_version"] = wire::announcement_version;
    v.fields["map"] = msgpack_to_json(v.bytes.data() + 10, v.bytes.size() - 10);
    return v;
}

std::vector<Vector> announcements() {
    std::vector<Vector> out;
    wire::Announcement a;
    a.channel = wire::channel_of(key, topic);
    a.id = subscriber_id;
    a.kind = "subscriber";
    a.topic = topic;
    a.type = string_type;
    a.node = "listener";
    a.session = listener_session;
    a.depth = 16;
    out.push_back(announcement("subscriber", "a typed subscriber of 'chatter' keeping the last 16 messages", a, topic));

    wire::Announcement w;
    w.channel = wire::channel_of(key, "");
    w.wildcard = true;
    w.id = recorder_id;
    w.kind = "subscriber";
    w.topic = "*";
    w.type = "*";
    w.node = "recorder";
    w.session = listener_session;
    w.depth = 16;
    out.push_back(announcement("wildcard",
                               "a subscriber of every topic of the key: the channel is the key's 4 bytes and 4 zero bytes",
                               w, "(key only)"));

    wire::Announcement s;
    s.channel = wire::directed_channel(key, server_id);
    s.id = server_id;
    s.kind = "server";
    s.topic = service;
    s.type = service_type;
    s.node = "talker";
    s.session = talker_session;
    out.push_back(announcement("server", "the 'add' server on its directed channel, where requests come", s,
                               wire::directed_name(server_id)));

    wire::Announcement c;
    c.channel = wire::directed_channel(key, client_id);
    c.id = client_id;
    c.kind = "client";
    c.topic = service;
    c.type = service_type;
    c.node = "listener";
    c.session = listener_session;
    out.push_back(announcement("client", "an 'add' client on its directed channel, where replies come", c,
                               wire::directed_name(client_id)));
    return out;
}

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
                              "stale_shm_removed",   "answers_dropped"};
    pk.pack_map(static_cast<std::uint32_t>(std::size(counters)));
    for (const char* name : counters) {
        pk.pack(std::string_view(name));
        pk.pack(std::uint64_t{0});
    }
    return bytes_of(w);
}

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

// ---- gecko.msgs payloads -----------------------------------------------------------------------------

template <class T>
Vector message_vector(std::string name, std::string what, const T& message) {
    Vector v;
    v.file = "msgs/" + name + ".hex";
    v.name = "msgs." + std::move(name);
    v.what = std::move(what);
    v.bytes = encoded(message);
    v.fields["layer"] = "message payload (docs/PROTOCOL.md section 3)";
    v.fields["type_name"] = T::type_name;
    v.fields["type_hash"] = wire::type_hash(T::type_name);
    v.fields["type_hash_hex"] = hex_number(wire::type_hash(T::type_name));
    v.fields["map"] = msgpack_to_json(v.bytes.data(), v.bytes.size());
    return v;
}

std::vector<Vector> message_vectors() {
    std::vector<Vector> out;
    msgs::Imu imu;
    imu.stamp_ns = send_time_ns;
    imu.frame_id = "imu_link";
    imu.accel = {0.125, -0.5, 9.8125};
    imu.gyro = {0.0, 0.25, -0.0};
    imu.mag = {2.5e-05, 0.0, -4.25e-05};
    imu.orientation = {1.0, 0.0, 0.0, 0.0};
    out.push_back(message_vector("imu", "gecko.msgs.Imu: every double is float64, even 0.0, 1.0 and -0.0", imu));

    msgs::JointState js;
    js.stamp_ns = 42;
    js.frame_id = "base";
    js.names = {"hip", "knee"};
    js.position = {0.5, -1.0};
    js.velocity = {};
    js.effort = {300.0, 0.001};
    out.push_back(message_vector("joint_state", "gecko.msgs.JointState: parallel arrays; an empty one is an empty array", js));

    msgs::Image image;
    image.stamp_ns = 99;
    image.frame_id = "camera";
    image.width = 2;
    image.height = 2;
    image.encoding = "mono8";
    image.step = 2;
    image.data = {0x00, 0x7f, 0x80, 0xff};
    out.push_back(message_vector("image_small", "gecko.msgs.Image 2x2 mono8: the pixels are one msgpack bin", image));
    return out;
}

// ---- decoding rules -----------------------------------------------------------------------------------
// Payloads a reader must accept or refuse (docs/PROTOCOL.md section 3), with
// what the C++ decoder makes of them: the decoded message re-encoded, or the
// error it gives. Built by hand, byte for byte.

using Packer = msgpack::packer<msgpack::sbuffer>;

template <class F>
Bytes raw(F&& build) {
    msgpack::sbuffer b;
    Packer pk(b);
    build(pk, b);
    return Bytes(reinterpret_cast<const std::uint8_t*>(b.data()), reinterpret_cast<const std::uint8_t*>(b.data()) + b.size());
}

void put_float32(msgpack::sbuffer& b, float v) {
    char buf[5];
    b.write(buf, wire::detail::store_float(buf, v));
}

void put_float64(msgpack::sbuffer& b, double v) {
    char buf[9];
    b.write(buf, wire::detail::store_float(buf, v));
}

template <class T>
Vector rule(std::string name, std::string what, bool accepted, Bytes bytes) {
    Vector v;
    v.file = "rules/" + name + ".hex";
    v.name = "rule." + std::move(name);
    v.what = std::move(what);
    v.bytes = std::move(bytes);
    v.fields["layer"] = "message payload decoding rule (docs/PROTOCOL.md section 3)";
    v.fields["type_name"] = T::type_name;
    try {
        const T decoded = wire::decode<T>(v.bytes.data(), v.bytes.size());
        const Bytes again = encoded(decoded);
        v.fields["accept"] = true;
        v.fields["value"] = msgpack_to_json(again.data(), again.size());
    } catch (const wire::DecodeError& e) {
        v.fields["accept"] = false;
        v.fields["error"] = e.what();
    }
    if (v.fields["accept"].get<bool>() != accepted)
        throw std::runtime_error(v.name + ": the decoder " + (accepted ? "refuses" : "accepts") + " it");
    return v;
}

std::vector<Vector> rule_vectors() {
    using msgs::Int64;
    using msgs::Vector3;
    std::vector<Vector> out;
    auto key = [](Packer& pk, const char* k) { pk.pack(std::string_view(k)); };
    out.push_back(rule<Vector3>("unknown_fields", "unknown keys are skipped, whatever they hold; absent fields get the defaults", true,
                                raw([&](Packer& pk, msgpack::sbuffer& b) {
                                    pk.pack_map(3);
                                    key(pk, "x");
                                    put_float64(b, 1.5);
                                    key(pk, "future");
                                    pk.pack_array(2);
                                    pk.pack(1);
                                    pk.pack_map(1);
                                    key(pk, "k");
                                    pk.pack_ext(1, 7);
                                    pk.pack_ext_body("\x2a", 1);
                                    key(pk, "y");
                                    put_float64(b, -2.0);
                                })));
    out.push_back(rule<Vector3>("int_for_float", "a float field takes a msgpack int", true, raw([&](Packer& pk, msgpack::sbuffer&) {
                                    pk.pack_map(3);
                                    key(pk, "x");
                                    pk.pack(1);
                                    key(pk, "y");
                                    pk.pack(-2);
                                    key(pk, "z");
                                    pk.pack(300);
                                })));
    out.push_back(rule<Vector3>("float32_for_float64", "a float64 field takes a float32", true,
                                raw([&](Packer& pk, msgpack::sbuffer& b) {
                                    pk.pack_map(1);
                                    key(pk, "x");
                                    put_float32(b, 0.25f);
                                })));
    out.push_back(rule<Int64>("float_for_int", "an integer field refuses a float, even 2.0", false,
                              raw([&](Packer& pk, msgpack::sbuffer& b) {
                                  pk.pack_map(1);
                                  key(pk, "data");
                                  put_float64(b, 2.0);
                              })));
    out.push_back(rule<msgs::Image>("int_out_of_range", "an integer field refuses a value its type cannot hold (-1 in a uint32)",
                                    false, raw([&](Packer& pk, msgpack::sbuffer&) {
                                        pk.pack_map(1);
                                        key(pk, "width");
                                        pk.pack(-1);
                                    })));
    out.push_back(rule<Int64>("duplicate_key", "a key given twice is an error", false, raw([&](Packer& pk, msgpack::sbuffer&) {
                                  pk.pack_map(2);
                                  key(pk, "data");
                                  pk.pack(1);
                                  key(pk, "data");
                                  pk.pack(2);
                              })));
    out.push_back(rule<Int64>("non_str_key", "a key that is not a str is an error, even an unknown one", false,
                              raw([&](Packer& pk, msgpack::sbuffer&) {
                                  pk.pack_map(1);
                                  pk.pack(1);
                                  pk.pack(5);
                              })));
    out.push_back(rule<msgs::String>("bin_for_str", "a str field refuses a bin", false, raw([&](Packer& pk, msgpack::sbuffer&) {
                                         pk.pack_map(1);
                                         key(pk, "data");
                                         pk.pack_bin(2);
                                         pk.pack_bin_body("hi", 2);
                                     })));
    out.push_back(rule<msgs::Bytes>("str_for_bin", "a bin field refuses a str", false, raw([&](Packer& pk, msgpack::sbuffer&) {
                                        pk.pack_map(1);
                                        key(pk, "data");
                                        pk.pack(std::string_view("hi"));
                                    })));
    out.push_back(rule<msgs::String>("nil_for_str", "nil is refused where the field is not optional", false,
                                     raw([&](Packer& pk, msgpack::sbuffer&) {
                                         pk.pack_map(1);
                                         key(pk, "data");
                                         pk.pack_nil();
                                     })));
    out.push_back(rule<msgs::click::Sensor>("nil_for_optional", "nil is the empty value of an optional field", true,
                                            raw([&](Packer& pk, msgpack::sbuffer&) {
                                                pk.pack_map(1);
                                                key(pk, "simulated_time");
                                                pk.pack_nil();
                                            })));
    out.push_back(rule<msgs::click::Reset>("enum_by_name", "an enum is one of its names", true,
                                           raw([&](Packer& pk, msgpack::sbuffer&) {
                                               pk.pack_map(1);
                                               key(pk, "direction");
                                               pk.pack(std::string_view("answer"));
                                           })));
    out.push_back(rule<msgs::click::Reset>("enum_by_number", "an enum also takes the number of a listed enumerator", true,
                                           raw([&](Packer& pk, msgpack::sbuffer&) {
                                               pk.pack_map(1);
                                               key(pk, "direction");
                                               pk.pack(1);
                                           })));
    out.push_back(rule<msgs::click::Reset>("enum_unknown_number", "a number that is no enumerator's is an error", false,
                                           raw([&](Packer& pk, msgpack::sbuffer&) {
                                               pk.pack_map(1);
                                               key(pk, "direction");
                                               pk.pack(2);
                                           })));
    out.push_back(rule<msgs::click::Reset>("enum_unknown_name", "names are case-sensitive: \"Answer\" is not \"answer\"", false,
                                           raw([&](Packer& pk, msgpack::sbuffer&) {
                                               pk.pack_map(1);
                                               key(pk, "direction");
                                               pk.pack(std::string_view("Answer"));
                                           })));
    out.push_back(rule<msgs::click::Sensor>("fixed_array_size", "a fixed-size array (3 forces) refuses 2 elements", false,
                                            raw([&](Packer& pk, msgpack::sbuffer& b) {
                                                pk.pack_map(1);
                                                key(pk, "objects");
                                                pk.pack_map(1);
                                                key(pk, "robot");
                                                pk.pack_map(1);
                                                key(pk, "force_sensors");
                                                pk.pack_array(1);
                                                pk.pack_array(2);
                                                put_float64(b, 1.0);
                                                put_float64(b, 2.0);
                                            })));
    for (const int levels : {63, 64}) {
        const bool ok = levels == 63;
        out.push_back(rule<Int64>(ok ? "depth_64" : "depth_65",
                                  ok ? "64 levels of nesting (the message's map and 63 arrays in an unknown field) are read"
                                     : "65 levels of nesting are refused, also in an unknown field",
                                  ok, raw([&](Packer& pk, msgpack::sbuffer&) {
                                      pk.pack_map(1);
                                      key(pk, "deep");
                                      for (int i = 0; i < levels; ++i) pk.pack_array(1);
                                      pk.pack_nil();
                                  })));
    }
    out.push_back(rule<Int64>("trailing_bytes", "one message, nothing after it", false, raw([&](Packer& pk, msgpack::sbuffer&) {
                                  pk.pack_map(1);
                                  key(pk, "data");
                                  pk.pack(1);
                                  pk.pack_nil();
                              })));
    out.push_back(rule<Int64>("not_a_map", "a message is a map", false, raw([&](Packer& pk, msgpack::sbuffer&) {
                                  pk.pack_array(1);
                                  pk.pack(1);
                              })));
    out.push_back(rule<msgs::String>("length_beyond_input", "a str32 that claims 4 GiB in a 12-byte input is refused before any allocation",
                                     false, raw([&](Packer& pk, msgpack::sbuffer& b) {
                                         pk.pack_map(1);
                                         key(pk, "data");
                                         const char header[5] = {static_cast<char>(0xdb), static_cast<char>(0xff),
                                                                 static_cast<char>(0xff), static_cast<char>(0xff),
                                                                 static_cast<char>(0xff)};
                                         b.write(header, 5);
                                         b.write("abc", 3);
                                     })));
    return out;
}

// ---- schemas ------------------------------------------------------------------------------------------

// A type's entry: its schema as gecko::wire::schema_of<M>() makes it (the one
// a typed publisher declares), with its hash and default value.
template <class M>
Json schema_of() {
    Json j;
    j["type_name"] = M::type_name;
    j["type_hash"] = wire::type_hash(M::type_name);
    j["type_hash_hex"] = hex_number(wire::type_hash(M::type_name));
    j["fields"] = Json::parse(wire::schema_of<M>().to_json()).at("types").at(0).at("fields");
    const Bytes defaults = encoded(M{});
    j["default"] = msgpack_to_json(defaults.data(), defaults.size());
    return j;
}

template <class... M>
Json schemas_of() {
    Json out = Json::array();
    (out.push_back(schema_of<M>()), ...);
    return out;
}

}  // namespace

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

std::vector<Vector> byte_vectors() {
    std::vector<Vector> out;
    for (auto* group : {&frames, &announcements, &discovery_vectors, &message_vectors, &rule_vectors})
        for (auto& v : (*group)()) out.push_back(std::move(v));
    return out;
}

Json hash_vectors() {
    Json h;
    Json f32 = Json::array();
    for (const char* s : {"", "a", "foobar", "dalek", "chatter", "#e:2122232425262728"})
        f32.push_back(Json{{"input", s}, {"value", wire::fnv1a32(s)}, {"hex", hex_number(wire::fnv1a32(s), 8)}});
    h["fnv1a32"] = f32;
    Json f64 = Json::array();
    for (const char* s : {"", "a", "foobar", "gecko.msgs.String", "gecko.msgs.Imu", "examples.AddRequest", "examples.AddReply"})
        f64.push_back(Json{{"input", s}, {"value", wire::fnv1a64(s)}, {"hex", hex_number(wire::fnv1a64(s))}});
    h["fnv1a64"] = f64;
    Json names = Json::array();
    for (std::uint64_t id : {publisher_id, subscriber_id, server_id, client_id, std::uint64_t{1}})
        names.push_back(Json{{"id", id}, {"id_hex", hex_number(id)}, {"name", wire::directed_name(id)}});
    h["directed_names"] = names;
    Json channels = Json::array();
    auto channel = [&](const std::string& name, const char* what) {
        const wire::Channel c = wire::channel_of(key, name);
        channels.push_back(Json{{"key", key},
                                {"name", name},
                                {"what", what},
                                {"value", c},
                                {"hex", hex_number(c)},
                                {"bytes", channel_bytes(c)}});
    };
    channel(topic, "the topic 'chatter'");
    channel(latched_topic, "the topic 'mode'");
    channel("", "the empty name: a key-wide subscriber's own channel (its announcement carries only the key part)");
    channel(wire::directed_name(subscriber_id), "the subscriber's directed channel (latched replays)");
    channel(wire::directed_name(server_id), "the server's directed channel (requests)");
    channel(wire::directed_name(client_id), "the client's directed channel (replies)");
    h["channels"] = channels;
    const wire::Channel k = wire::channel_of(key, "");
    std::uint8_t kb[8];
    wire::store_channel(kb, k);
    h["key_prefixes"] = Json::array({Json{{"key", key},
                                          {"value", wire::key_part(k)},
                                          {"hex", hex_number(wire::key_part(k), 8)},
                                          {"bytes", hex_bytes(kb, 4)}}});
    Json types = Json::array();
    for (const char* t : {string_type, "gecko.msgs.Imu", "gecko.msgs.JointState", "gecko.msgs.Image", request_type, reply_type})
        types.push_back(Json{{"type_name", t}, {"value", wire::type_hash(t)}, {"hex", hex_number(wire::type_hash(t))}});
    h["type_hashes"] = types;
    Json digests = Json::array();
    const std::vector<std::vector<std::uint64_t>> sets = {{}, {1}, {publisher_id}, {publisher_id, server_id}, {server_id, publisher_id}};
    for (const auto& s : sets) {
        const auto d = discovery::entity_digest(s);
        digests.push_back(Json{{"ids", s}, {"value", d}, {"hex", hex_number(d)}});
    }
    h["entity_digests"] = digests;
    return h;
}

Json schemas() {
    Json j;
    j["what"] = "the fields of every message type gecko.msgs defines, and of the example 'add' service, as they travel "
                "(docs/PROTOCOL.md section 3): a msgpack map from field name to value, in this order";
    j["conventions"] = Json{
        {"int8..int64, uint8..uint64", "a msgpack int that fits the C++ type; written in msgpack's smallest form"},
        {"float64, float32", "written as msgpack float64 (0xcb) or float32 (0xca), always; read from any msgpack int or float"},
        {"str", "msgpack str (UTF-8)"},
        {"bin", "msgpack bin"},
        {"bool", "msgpack true / false"},
        {"{array: T}", "msgpack array of T; with size: exactly that many elements"},
        {"{optional: T}", "T, or nil when absent"},
        {"{map: T}", "msgpack map with str keys, values T (written in key order)"},
        {"{message: NAME}", "the nested message NAME, as a map (see its own entry)"},
        {"{struct: [fields]}", "a nested map with these fields (no type name of its own)"},
        {"{enum: NAME, names: [...], values: [...]}", "msgpack str, one of the names; readers also accept the number of a listed enumerator (values, in the order of names)"},
        {"default", "a default-constructed message: what a reader assumes for an absent field"}};
    j["types"] = schemas_of<msgs::String, msgs::Float64, msgs::Int64, msgs::Bytes, msgs::Empty, msgs::Point2, msgs::Vector3,
                            msgs::Quaternion, msgs::Pose, msgs::Twist, msgs::Wrench, msgs::Imu, msgs::Lidar, msgs::JointState,
                            msgs::Image, msgs::Odometry, msgs::click::HandshakeInit, msgs::click::SensorRequest,
                            msgs::click::Control, msgs::click::Handshake, msgs::click::Sensor, msgs::click::Reset,
                            msgs::click::Error, click::Request, click::Answer, AddRequest, AddReply>();
    return j;
}

namespace {

std::string anchor(const std::string& type_name) {
    std::string a;
    for (char ch : type_name)
        if (ch != '.') a += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    return a;
}

// A field's wire type in words, nested messages linked to their own table.
std::string wire_type(const Json& t) {
    if (t.is_string()) return "`" + t.get<std::string>() + "`";
    if (t.contains("array"))
        return "array of " + (t.contains("size") ? std::to_string(t.at("size").get<std::size_t>()) + " " : std::string()) +
               wire_type(t.at("array"));
    if (t.contains("optional")) return wire_type(t.at("optional")) + " or `nil`";
    if (t.contains("map")) return "map from `str` to " + wire_type(t.at("map"));
    if (t.contains("bin")) return "`bin` of " + std::to_string(t.at("bin").get<std::size_t>()) + " bytes";
    if (t.contains("message")) {
        const auto name = t.at("message").get<std::string>();
        return "[" + name + "](#" + anchor(name) + ")";
    }
    if (t.contains("enum")) {
        std::string names;
        for (const auto& n : t.at("names")) names += (names.empty() ? "" : ", ") + ("`" + n.get<std::string>() + "`");
        return "`str`, one of " + names + " (" + t.at("enum").get<std::string>() + ")";
    }
    std::string fields;  // a struct without a type name of its own
    for (const auto& f : t.at("struct")) fields += (fields.empty() ? "" : ", ") + f.at("name").get<std::string>() + ": " + wire_type(f.at("type"));
    return "map {" + fields + "}";
}

}  // namespace

std::string messages_markdown() {
    const Json all = schemas();
    std::string out =
        "# The message types (`gecko.msgs`)\n\n"
        "<!-- Written by tests/conformance (gecko_conformance_generate), from the same source as\n"
        "     tests/conformance/vectors/schemas.json: do not edit by hand. -->\n\n"
        "Every type `gecko.msgs` defines (`msgs/include/gecko/msgs/`), and the example `add` service's,\n"
        "field by field as it travels: a msgpack map from field name to value, in this order\n"
        "([PROTOCOL.md](PROTOCOL.md) §3). A reader takes an absent field as its default. The same\n"
        "fields, as a schema a program reads, are in `tests/conformance/vectors/schemas.json` and in\n"
        "every typed publisher's entry of the key's directory ([DISCOVERY.md](DISCOVERY.md) §4.1).\n\n"
        "Scalars: `bool`; `int8` … `int64` and `uint8` … `uint64` (a msgpack int that fits); `float32`\n"
        "and `float64` (written as msgpack float32 / float64 always; read from any number); `str`; `bin`.\n";
    for (const auto& t : all.at("types")) {
        const auto name = t.at("type_name").get<std::string>();
        out += "\n## " + name + "\n\n";
        out += "Type hash `" + t.at("type_hash_hex").get<std::string>() + "`.\n\n";
        if (t.at("fields").empty()) {
            out += "No fields: an empty map.\n";
            continue;
        }
        out += "| field | wire type | default |\n| --- | --- | --- |\n";
        for (const auto& f : t.at("fields")) {
            const auto field = f.at("name").get<std::string>();
            std::string def = t.at("default").contains(field) ? t.at("default").at(field).dump() : "";
            for (std::size_t at = def.find('|'); at != std::string::npos; at = def.find('|', at + 2)) def.replace(at, 1, "\\|");
            out += "| `" + field + "` | " + wire_type(f.at("type")) + " | `" + def + "` |\n";
        }
    }
    return out;
}

Json index(const std::vector<Vector>& vectors) {
    Json j;
    j["what"] = "Golden vectors of the Gecko wire protocol: data frame version 2, announcement version 1, discovery "
                "protocol version 2. docs/PROTOCOL.md and docs/DISCOVERY.md are the specification; "
                "tests/conformance/README.md says how to use these files.";
    j["versions"] = Json{{"frame", wire::frame_version},
                         {"announcement", wire::announcement_version},
                         {"discovery", discovery::version}};
    j["conventions"] = Json{
        {"files", "each vector's bytes are in 'file' (relative to this index) as lowercase hex, 32 bytes per line; ignore whitespace"},
        {"integers", "JSON numbers are exact: 64-bit ids and hashes need a JSON reader that keeps all their digits (Python's json does); *_hex fields give the same values in hex"},
        {"floats", "a msgpack float is written with a decimal point or an exponent (5.0); a msgpack int never has one"},
        {"bin", "a msgpack bin is written as {\"bin\": \"<hex>\"}"},
        {"maps", "JSON objects keep the wire order of msgpack map keys"},
        {"channel bytes", "a channel is a little-endian u64: 'bytes' is its wire order, 'hex'/'value' the number"}};
    j["fixed_values"] = Json{{"key", key},
                             {"publisher_id", publisher_id},
                             {"server_id", server_id},
                             {"subscriber_id", subscriber_id},
                             {"client_id", client_id},
                             {"recorder_id", recorder_id},
                             {"talker_session", talker_session},
                             {"talker_secret", talker_secret},
                             {"listener_session", listener_session},
                             {"listener_secret", listener_secret},
                             {"core_instance", core_instance}};
    j["hashes"] = hash_vectors();
    Json list = Json::array();
    for (const auto& v : vectors) {
        Json e;
        e["name"] = v.name;
        e["file"] = v.file;
        e["size"] = v.bytes.size();
        e["what"] = v.what;
        for (auto it = v.fields.begin(); it != v.fields.end(); ++it) e[it.key()] = it.value();
        list.push_back(std::move(e));
    }
    j["vectors"] = std::move(list);
    return j;
}

std::string to_hex_file(const Bytes& bytes) {
    std::string out;
    for (std::size_t at = 0; at < bytes.size(); at += 32) {
        out += hex_bytes(bytes.data() + at, std::min<std::size_t>(32, bytes.size() - at));
        out += '\n';
    }
    return out;
}

Bytes from_hex(const std::string& text) {
    Bytes out;
    int high = -1;
    for (char c : text) {
        if (c == ' ' || c == '\n' || c == '\r' || c == '\t') continue;
        int v;
        if (c >= '0' && c <= '9') v = c - '0';
        else if (c >= 'a' && c <= 'f') v = c - 'a' + 10;
        else if (c >= 'A' && c <= 'F') v = c - 'A' + 10;
        else throw std::invalid_argument(std::string("not a hex digit: '") + c + "'");
        if (high < 0) {
            high = v;
        } else {
            out.push_back(static_cast<std::uint8_t>(high * 16 + v));
            high = -1;
        }
    }
    if (high >= 0) throw std::invalid_argument("an odd number of hex digits");
    return out;
}

namespace {
Json to_json(const msgpack::object& o) {
    switch (o.type) {
        case msgpack::type::NIL: return nullptr;
        case msgpack::type::BOOLEAN: return o.via.boolean;
        case msgpack::type::POSITIVE_INTEGER: return o.via.u64;
        case msgpack::type::NEGATIVE_INTEGER: return o.via.i64;
        case msgpack::type::FLOAT32:
        case msgpack::type::FLOAT64: return o.via.f64;
        case msgpack::type::STR: return std::string(o.via.str.ptr, o.via.str.size);
        case msgpack::type::BIN:
            return Json{{"bin", hex_bytes(reinterpret_cast<const std::uint8_t*>(o.via.bin.ptr), o.via.bin.size)}};
        case msgpack::type::ARRAY: {
            Json a = Json::array();
            for (std::uint32_t i = 0; i < o.via.array.size; ++i) a.push_back(to_json(o.via.array.ptr[i]));
            return a;
        }
        case msgpack::type::MAP: {
            Json m = Json::object();
            for (std::uint32_t i = 0; i < o.via.map.size; ++i) {
                const auto& kv = o.via.map.ptr[i];
                if (kv.key.type != msgpack::type::STR) throw std::runtime_error("a map key that is not a str");
                m[std::string(kv.key.via.str.ptr, kv.key.via.str.size)] = to_json(kv.val);
            }
            return m;
        }
        case msgpack::type::EXT: break;
    }
    throw std::runtime_error("msgpack ext has no JSON form here");
}
}  // namespace

Json msgpack_to_json(const std::uint8_t* data, std::size_t size) {
    std::size_t offset = 0;
    const auto handle = msgpack::unpack(reinterpret_cast<const char*>(data), size, offset);
    if (offset != size) throw std::runtime_error("trailing bytes after a msgpack value");
    return to_json(handle.get());
}

std::string dump(const Json& json) { return json.dump(2) + "\n"; }

}  // namespace gecko::conformance
