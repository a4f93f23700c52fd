// SPDX-License-Identifier: Apache-2.0
// Golden vectors of data frames and announcements (docs/PROTOCOL.md sections 2 and 5).

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

#include "add_types.hpp"

namespace gecko::conformance {
namespace {

using discovery::EntityKind;
using discovery::Peer;
using discovery::Registration;
using discovery::TopicStats;
using discovery::Writer;

// ---- frames ------------------------------------------------------------------------------

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

}  // namespace

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
    {
        wire::FrameHeader h;
        h.channel = wire::directed_channel(key, subscriber_id);
        h.flags = wire::frame_flags::control;
        h.sequence = 3;
        h.sender_id = publisher_id;
        h.send_time_ns = send_time_ns + 400'000'000;
        h.type_hash = 0;
        Buffer body;
        wire::encode_control(wire::Control{"start", 3}, body);
        out.push_back(data_frame("control_start",
                                 "control frame 'start', directed at the subscriber: it joined after sequence 3, "
                                 "every later message was sent to it",
                                 h, wire::directed_name(subscriber_id), "publisher", nullptr,
                                 Bytes(body.data(), body.data() + body.size())));
    }
    return out;
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


}  // namespace gecko::conformance
