// SPDX-License-Identifier: Apache-2.0
// The committed golden vectors against the C++ implementation: the code must
// write exactly the committed bytes, index.json and schemas.json, and must
// read the committed bytes back to the values index.json states. Rejection
// rules (docs/PROTOCOL.md section 2, the order of the checks) are pinned on
// mutations of the committed frames.

#include <catch2/catch.hpp>

#include <gecko/msgs/all.hpp>
#include <gecko/wire/announcement.hpp>
#include <gecko/wire/codec.hpp>
#include <gecko/wire/control.hpp>
#include <gecko/wire/discovery.hpp>
#include <gecko/wire/frame.hpp>
#include <gecko/wire/hash.hpp>
#include <gecko/wire/schema.hpp>

#include <cmath>
#include <fstream>
#include <map>
#include <sstream>

#include "vectors.hpp"

namespace c = gecko::conformance;
namespace wire = gecko::wire;
namespace discovery = gecko::discovery;
using c::Bytes;
using c::Json;

namespace {

std::string read_text(const std::string& relative) {
    std::ifstream in(std::string(GECKO_CONFORMANCE_DIR) + "/" + relative, std::ios::binary);
    if (!in) throw std::runtime_error("cannot read " + std::string(GECKO_CONFORMANCE_DIR) + "/" + relative);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

// The committed index, and each committed vector's entry and bytes, by name.
struct Committed {
    Json index = Json::parse(read_text("index.json"));
    std::map<std::string, Json> entries;
    Committed() {
        for (const auto& e : index.at("vectors")) entries[e.at("name").get<std::string>()] = e;
    }
    const Json& entry(const std::string& name) const { return entries.at(name); }
    Bytes bytes(const std::string& name) const { return c::from_hex(read_text(entry(name).at("file").get<std::string>())); }
};

const Committed& committed() {
    static const Committed instance;
    return instance;
}

std::vector<std::string> names_starting(const std::string& prefix) {
    std::vector<std::string> out;
    for (const auto& [name, e] : committed().entries)
        if (name.rfind(prefix, 0) == 0) out.push_back(name);
    return out;
}

wire::FrameError parse(const Bytes& b, wire::FrameView& view, std::size_t max = 64u << 20) {
    return wire::parse_frame(b.data(), b.size(), max, view);
}

}  // namespace

TEST_CASE("the committed vectors are the bytes the C++ implementation writes", "[conformance][vectors]") {
    const auto vectors = c::byte_vectors();
    REQUIRE(vectors.size() == committed().entries.size());
    for (const auto& v : vectors) {
        INFO(v.name << " (" << v.file << ")");
        REQUIRE(committed().entries.count(v.name) == 1);
        CHECK(committed().entry(v.name).at("file") == v.file);
        CHECK(c::to_hex_file(committed().bytes(v.name)) == c::to_hex_file(v.bytes));
    }
}

TEST_CASE("docs/MESSAGES.md lists the fields schemas.json has", "[conformance][vectors]") {
    std::ifstream in(GECKO_DOCS_DIR "/MESSAGES.md", std::ios::binary);
    REQUIRE(in);
    std::stringstream text;
    text << in.rdbuf();
    CHECK(text.str() == c::messages_markdown());  // else: gecko_conformance_generate tests/conformance/vectors docs
}

TEST_CASE("index.json and schemas.json are what the code says, byte for byte", "[conformance][vectors]") {
    CHECK(read_text("index.json") == c::dump(c::index(c::byte_vectors())));
    CHECK(read_text("schemas.json") == c::dump(c::schemas()));
}

TEST_CASE("FNV-1a matches the published test values, and names hash as documented", "[conformance][hashes]") {
    // http://www.isthe.com/chongo/tech/comp/fnv/ (test vectors), independent of the code.
    CHECK(wire::fnv1a32("") == 0x811c9dc5u);
    CHECK(wire::fnv1a32("a") == 0xe40c292cu);
    CHECK(wire::fnv1a32("foobar") == 0xbf9cf968u);
    CHECK(wire::fnv1a64("") == 0xcbf29ce484222325ull);
    CHECK(wire::fnv1a64("a") == 0xaf63dc4c8601ec8cull);
    CHECK(wire::fnv1a64("foobar") == 0x85944171f73967e8ull);

    const Json& h = committed().index.at("hashes");
    for (const auto& e : h.at("fnv1a32")) CHECK(wire::fnv1a32(e.at("input").get<std::string>()) == e.at("value").get<std::uint32_t>());
    for (const auto& e : h.at("fnv1a64")) CHECK(wire::fnv1a64(e.at("input").get<std::string>()) == e.at("value").get<std::uint64_t>());
    for (const auto& e : h.at("directed_names")) {
        const std::string name = wire::directed_name(e.at("id").get<std::uint64_t>());
        CHECK(name == e.at("name").get<std::string>());
        CHECK(name.size() == 19);
        CHECK(name.find_first_not_of("0123456789abcdef", 3) == std::string::npos);
    }
    for (const auto& e : h.at("channels")) {
        const auto key = e.at("key").get<std::string>();
        const auto name = e.at("name").get<std::string>();
        const wire::Channel ch = wire::channel_of(key, name);
        CHECK(ch == e.at("value").get<std::uint64_t>());
        // Bytes 0-3: the key's hash, 4-7: the name's, each little-endian.
        const std::uint64_t by_hand = std::uint64_t{wire::fnv1a32(key)} | (std::uint64_t{wire::fnv1a32(name)} << 32);
        CHECK(ch == by_hand);
        std::uint8_t b[8];
        wire::store_channel(b, ch);
        CHECK(b[0] == (wire::fnv1a32(key) & 0xff));
        CHECK(b[4] == (wire::fnv1a32(name) & 0xff));
        CHECK(Bytes(b, b + 8) == c::from_hex(e.at("bytes").get<std::string>()));
    }
    for (const auto& e : h.at("type_hashes"))
        CHECK(wire::type_hash(e.at("type_name").get<std::string>()) == e.at("value").get<std::uint64_t>());
    for (const auto& e : h.at("entity_digests"))
        CHECK(discovery::entity_digest(e.at("ids").get<std::vector<std::uint64_t>>()) == e.at("value").get<std::uint64_t>());
    // The digest is of a set: order does not matter, and it is 0 for none.
    CHECK(discovery::entity_digest({}) == 0);
    CHECK(discovery::entity_digest({c::publisher_id, c::server_id}) == discovery::entity_digest({c::server_id, c::publisher_id}));
}

TEST_CASE("every committed frame parses back to the header and payload index.json states", "[conformance][frames]") {
    const auto names = names_starting("frame.");
    REQUIRE(names.size() == 9);
    for (const auto& name : names) {
        INFO(name);
        const Json& e = committed().entry(name);
        const Json& h = e.at("header");
        const Bytes b = committed().bytes(name);
        REQUIRE(b.size() == e.at("size").get<std::size_t>());
        wire::FrameView view;
        REQUIRE(parse(b, view) == wire::FrameError::none);
        CHECK(view.header.channel == h.at("channel").get<std::uint64_t>());
        CHECK(view.header.channel == wire::channel_of(h.at("channel_of").at("key").get<std::string>(),
                                                       h.at("channel_of").at("name").get<std::string>()));
        CHECK(b[8] == 'G');
        CHECK(b[9] == 'K');
        CHECK(view.header.version == h.at("version").get<int>());
        CHECK(view.header.flags == h.at("flags").get<int>());
        CHECK(view.header.payload_size == h.at("payload_size").get<std::uint32_t>());
        CHECK(view.header.sequence == h.at("sequence").get<std::uint64_t>());
        CHECK(view.header.sender_id == h.at("sender_id").get<std::uint64_t>());
        CHECK(view.header.send_time_ns == h.at("send_time_ns").get<std::int64_t>());
        CHECK(view.header.type_hash == h.at("type_hash").get<std::uint64_t>());
        if (h.at("type_name").is_null()) {
            CHECK(view.header.type_hash == 0);
        } else {
            CHECK(view.header.type_hash == wire::type_hash(h.at("type_name").get<std::string>()));
        }
        CHECK(view.body_size == e.at("payload").at("size_on_wire").get<std::size_t>());
        std::vector<std::uint8_t> payload(view.body, view.body + view.body_size);
        if (view.header.compressed()) {
            REQUIRE(wire::inflate_body(view, payload) == wire::FrameError::none);
            CHECK(payload.size() == view.header.payload_size);
        }
        CHECK(c::msgpack_to_json(payload.data(), payload.size()) == e.at("payload").at("msgpack"));
        if (view.header.flags & wire::frame_flags::control) {
            const auto control = wire::parse_control(payload.data(), payload.size());
            REQUIRE(control);
            CHECK(control->type == e.at("payload").at("msgpack").at("t").get<std::string>());
            CHECK(control->last == view.header.sequence);  // the header repeats the last sequence
        }
    }
}

TEST_CASE("a frame is checked in the documented order, each failure with its own reason", "[conformance][frames]") {
    const Bytes plain = committed().bytes("frame.plain");
    wire::FrameView view;
    auto with = [&](std::size_t at, std::uint8_t value) {
        Bytes b = plain;
        b[at] = value;
        return b;
    };
    // 1. fewer than 11 bytes (magic and version unreadable): truncated.
    CHECK(parse(Bytes(plain.begin(), plain.begin() + 10), view) == wire::FrameError::truncated);
    // 2. bytes 8-9 are not "GK", whatever follows.
    CHECK(parse(with(8, 'g'), view) == wire::FrameError::bad_magic);
    CHECK(parse(Bytes{0, 0, 0, 0, 0, 0, 0, 0, 'G', 'X', 2}, view) == wire::FrameError::bad_magic);
    // 3. another version, even if the rest is short.
    CHECK(parse(with(10, 1), view) == wire::FrameError::unsupported_version);
    CHECK(parse(Bytes(plain.begin(), plain.begin() + 11), view) == wire::FrameError::truncated);
    {
        Bytes v1(plain.begin(), plain.begin() + 20);
        v1[10] = 3;
        CHECK(parse(v1, view) == wire::FrameError::unsupported_version);
    }
    // 4. shorter than the 48-byte header.
    CHECK(parse(Bytes(plain.begin(), plain.begin() + 47), view) == wire::FrameError::truncated);
    // 5. flag bits above 0x20.
    CHECK(parse(with(11, 0x40), view) == wire::FrameError::unknown_flags);
    CHECK(parse(with(11, 0x80), view) == wire::FrameError::unknown_flags);
    // 6. payload size (declared or on the wire) above the receiver's maximum, before anything else about the body.
    CHECK(parse(plain, view, 11) == wire::FrameError::oversized);
    CHECK(parse(plain, view, 12) == wire::FrameError::none);
    {
        Bytes claims = with(15, 0x7f);  // declares ~2 GiB, carries 12 bytes
        CHECK(parse(claims, view) == wire::FrameError::oversized);
    }
    // 7. uncompressed: the body must be exactly the payload size.
    CHECK(parse(Bytes(plain.begin(), plain.end() - 1), view) == wire::FrameError::truncated);
    {
        Bytes longer = plain;
        longer.push_back(0xc0);
        CHECK(parse(longer, view) == wire::FrameError::size_mismatch);
    }
    // 8. compressed: checked only when inflated (at read time), to exactly the payload size.
    const Bytes compressed = committed().bytes("frame.compressed");
    REQUIRE(parse(compressed, view) == wire::FrameError::none);
    std::vector<std::uint8_t> out;
    CHECK(wire::inflate_body(view, out) == wire::FrameError::none);
    {
        Bytes corrupt = compressed;
        corrupt[wire::frame_header_size + 5] ^= 0xff;
        REQUIRE(parse(corrupt, view) == wire::FrameError::none);  // the header is fine
        CHECK(wire::inflate_body(view, out) == wire::FrameError::decompress_failed);
    }
    {
        Bytes lies = compressed;
        lies[12] = static_cast<std::uint8_t>(lies[12] + 1);  // one byte more than the stream holds
        REQUIRE(parse(lies, view) == wire::FrameError::none);
        CHECK(wire::inflate_body(view, out) == wire::FrameError::decompress_failed);
    }
    // A broken frame whose 48-byte header is there still names its sender and sequence (servers answer it).
    std::uint64_t sender = 0, sequence = 0;
    const Bytes request = committed().bytes("frame.request");
    CHECK(wire::peek_sender(request.data(), wire::frame_header_size, sender, sequence));
    CHECK(sender == c::client_id);
    CHECK(sequence == 1);
    CHECK_FALSE(wire::peek_sender(request.data(), wire::frame_header_size - 1, sender, sequence));
}

TEST_CASE("every committed announcement parses back to the fields index.json states", "[conformance][announcements]") {
    const auto names = names_starting("announcement.");
    REQUIRE(names.size() == 4);
    for (const auto& name : names) {
        INFO(name);
        const Json& e = committed().entry(name);
        const Json& m = e.at("map");
        const Bytes b = committed().bytes(name);
        CHECK(b[8] == 0);
        CHECK(b[9] == wire::announcement_version);
        const auto a = wire::parse_announcement(std::string_view(reinterpret_cast<const char*>(b.data()), b.size()));
        REQUIRE(a);
        CHECK(a->channel == e.at("channel").get<std::uint64_t>());
        CHECK(a->id == m.at("id").get<std::uint64_t>());
        CHECK(a->kind == m.at("kind").get<std::string>());
        CHECK(a->topic == m.at("topic").get<std::string>());
        CHECK(a->type == m.at("type").get<std::string>());
        CHECK(a->node == m.at("node").get<std::string>());
        CHECK(a->session == m.at("session").get<std::uint64_t>());
        CHECK(a->depth == m.at("depth").get<std::uint32_t>());
        CHECK(a->wildcard == m.value("wildcard", false));
        if (a->wildcard) {
            CHECK(wire::key_part(a->channel) == wire::fnv1a32(c::key));
            CHECK(a->channel >> 32 == 0);
        } else if (a->kind == "subscriber") {
            CHECK(a->channel == wire::channel_of(c::key, a->topic));
        } else {
            CHECK(a->channel == wire::directed_channel(c::key, a->id));  // servers and clients: their own directed channel
        }
    }
}

TEST_CASE("what is not an announcement is refused", "[conformance][announcements]") {
    const Bytes good = committed().bytes("announcement.subscriber");
    auto parses = [](const Bytes& b) {
        return wire::parse_announcement(std::string_view(reinterpret_cast<const char*>(b.data()), b.size())).has_value();
    };
    CHECK(parses(good));
    Bytes b = good;
    b[8] = 'G';  // a data frame's prefix
    CHECK_FALSE(parses(b));
    b = good;
    b[9] = 2;  // another announcement version
    CHECK_FALSE(parses(b));
    CHECK_FALSE(parses(Bytes(good.begin(), good.begin() + 10)));  // no map
    CHECK_FALSE(parses(Bytes(good.begin(), good.begin() + 8)));   // a plain channel subscription
    b = good;
    b.push_back(0xc0);  // a byte after the map
    CHECK_FALSE(parses(b));
    b = Bytes(good.begin(), good.begin() + 10);
    const Bytes no_id = c::packed(std::map<std::string, std::string>{{"kind", "subscriber"}});
    b.insert(b.end(), no_id.begin(), no_id.end());
    CHECK_FALSE(parses(b));  // id is required (and non-zero)
    b = good;
    b.resize(1025, 0xc0);
    CHECK_FALSE(parses(b));  // above 1024 bytes
}

TEST_CASE("every committed discovery message reads back as the node and the core read it", "[conformance][discovery]") {
    const auto names = names_starting("discovery.");
    REQUIRE(names.size() == 40);
    for (const auto& name : names) {
        INFO(name);
        const Json& m = committed().entry(name).at("map");
        const Bytes b = committed().bytes(name);
        std::string why;
        const auto msg = discovery::Message::parse(reinterpret_cast<const char*>(b.data()), b.size(), &why);
        REQUIRE(msg);
        CHECK(msg->type() == m.at("t").get<std::string>());
        CHECK(m.at("v") == 2);
        CHECK(c::msgpack_to_json(b.data(), b.size()) == m);
        const auto& root = msg->root();
        const auto& t = msg->type();
        if (t == "add") {
            const auto r = discovery::read_registration(root);
            REQUIRE(r);
            CHECK(r->id == m.at("id").get<std::uint64_t>());
            CHECK(discovery::to_string(r->kind) == m.at("kind").get<std::string>());
            CHECK(r->wildcard == m.value("wildcard", false));
            if (m.contains("schema")) {  // a schema that decodes, and describes the registered type
                const auto schema = wire::Schema::decode(reinterpret_cast<const std::uint8_t*>(r->schema.data()), r->schema.size());
                CHECK(schema.find(r->type_name));
            }
        } else if (t == "directory") {
            const auto list = discovery::find(root, "channels");
            REQUIRE(list);
            for (std::uint32_t i = 0; i < list->count(); ++i) {
                const auto e = discovery::read_channel_entry(*list->item(i));
                REQUIRE(e);
                CHECK(e->channel == (e->service ? 0 : wire::channel_of(c::key, e->name)));
                CHECK(e->type_hash == wire::type_hash(e->type_name));
            }
        } else if (t == "peers") {
            const auto list = discovery::find(root, "peers");
            REQUIRE(list);
            for (std::uint32_t i = 0; i < list->count(); ++i) {
                const auto p = discovery::read_peer(*list->item(i));
                REQUIRE(p);
                CHECK(p->locators.size() == 3);
                CHECK(p->session != 0);
            }
        } else if (t == "stats") {
            const auto list = discovery::find(root, "stats");
            REQUIRE(list);
            const auto first = discovery::read_stats(*list->item(0));
            REQUIRE(first);
            CHECK(first->messages_per_s == 99.5);
            CHECK(first->bytes_per_s == 1194.0);  // written as an int, read as a number
            CHECK(first->latency_ns == -1);
        } else if (t == "hb") {
            const auto n = discovery::get_u64(root, "n");
            const auto digest = discovery::get_u64(root, "digest");
            REQUIRE(n);
            REQUIRE(digest);
            CHECK(*n == 2);
            CHECK(*digest == discovery::entity_digest({c::publisher_id, c::server_id}));
        }
    }
}

TEST_CASE("a discovery message of another version, or without v and t, is refused with a reason", "[conformance][discovery]") {
    std::string why;
    const Bytes v1 = c::packed(std::map<std::string, int>{{"v", 1}});
    CHECK_FALSE(discovery::Message::parse(reinterpret_cast<const char*>(v1.data()), v1.size(), &why));
    CHECK(why == "missing 'v' or 't'");
    discovery::Writer w("hb", 0);
    Bytes b(reinterpret_cast<const std::uint8_t*>(w.data()), reinterpret_cast<const std::uint8_t*>(w.data()) + w.size());
    REQUIRE(b[1] == 0xa1);  // "v"
    b[3] = 0x01;            // v: 1
    CHECK_FALSE(discovery::Message::parse(reinterpret_cast<const char*>(b.data()), b.size(), &why));
    CHECK(why == "unsupported protocol version 1");
    b[3] = 0x02;
    b.push_back(0xc0);
    CHECK_FALSE(discovery::Message::parse(reinterpret_cast<const char*>(b.data()), b.size(), &why));
    CHECK(why == "trailing bytes after the msgpack map");
    const Bytes array = c::packed(std::vector<int>{2});
    CHECK_FALSE(discovery::Message::parse(reinterpret_cast<const char*>(array.data()), array.size(), &why));
    CHECK(why == "not a msgpack map");
}

TEST_CASE("a discovery message is refused for the first check it fails, in the documented order", "[conformance][discovery]") {
    // DISCOVERY.md "Encoding": 1 the value, 2 trailing bytes, 3 a map, 4 v and t, 5 the version.
    const auto why_of = [](const Bytes& b) {
        std::string why;
        CHECK_FALSE(discovery::Message::parse(reinterpret_cast<const char*>(b.data()), b.size(), &why));
        return why;
    };
    // 1 before 2: a value cut short is not msgpack, whatever else is wrong with it.
    CHECK(why_of({0x82, 0xa1, 'v', 0x02}).rfind("not msgpack (", 0) == 0);
    // 1: a map with a key twice, though followed by bytes and with v 3.
    CHECK(why_of({0x82, 0xa1, 'v', 0x03, 0xa1, 'v', 0x02, 0xc0}) == "not msgpack (field 'v' appears twice in the map)");
    // 2 before 3: an array followed by more bytes.
    CHECK(why_of({0x91, 0x02, 0xc0}) == "trailing bytes after the msgpack map");
    // 3 before 4.
    CHECK(why_of({0x91, 0x02}) == "not a msgpack map");
    // 4 before 5: {v: 1} without t, and {v: "2", t: "hb"} (v not an int), and {v: 2.0, t: "hb"}.
    CHECK(why_of({0x81, 0xa1, 'v', 0x01}) == "missing 'v' or 't'");
    CHECK(why_of({0x82, 0xa1, 'v', 0xa1, '2', 0xa1, 't', 0xa2, 'h', 'b'}) == "missing 'v' or 't'");
    CHECK(why_of({0x82, 0xa1, 'v', 0xcb, 0x40, 0, 0, 0, 0, 0, 0, 0, 0xa1, 't', 0xa2, 'h', 'b'}) == "missing 'v' or 't'");
    // 5: v an int of any width.
    CHECK(why_of({0x82, 0xa1, 'v', 0xcd, 0x00, 0x03, 0xa1, 't', 0xa2, 'h', 'b'}) == "unsupported protocol version 3");
    const Bytes two = {0x82, 0xa1, 'v', 0xcd, 0x00, 0x02, 0xa1, 't', 0xa2, 'h', 'b'};
    CHECK(discovery::Message::parse(reinterpret_cast<const char*>(two.data()), two.size(), nullptr));
}

TEST_CASE("a peer map has its 12 fields in order, each of its documented msgpack type", "[conformance][discovery]") {
    // DISCOVERY.md section 3.1.
    const std::vector<std::pair<std::string, wire::Type>> fields = {
        {"id", wire::Type::integer},     {"kind", wire::Type::str},      {"topic", wire::Type::str},
        {"type", wire::Type::str},       {"latched", wire::Type::boolean}, {"node", wire::Type::str},
        {"session", wire::Type::integer}, {"host", wire::Type::str},     {"hostid", wire::Type::str},
        {"pid", wire::Type::integer},    {"pidns", wire::Type::str},     {"locators", wire::Type::array}};
    std::size_t maps = 0;
    for (const std::string name : {"discovery.peers_full", "discovery.peers_delta", "discovery.peers_server"}) {
        INFO(name);
        const Bytes b = committed().bytes(name);
        const auto msg = discovery::Message::parse(reinterpret_cast<const char*>(b.data()), b.size(), nullptr);
        REQUIRE(msg);
        const auto list = discovery::find(msg->root(), "peers");
        REQUIRE(list);
        for (const wire::Value& peer : list->items()) {
            ++maps;
            REQUIRE(peer.count() == fields.size());
            std::size_t i = 0;
            for (const auto& [key, value] : peer.entries()) {
                CHECK(key.as_str() == fields[i].first);
                CHECK(value.type() == fields[i].second);
                ++i;
            }
            CHECK(peer.find("id")->as_uint().value_or(0) != 0);
            CHECK(peer.find("session")->as_uint());
            for (const wire::Value& l : peer.find("locators")->items()) CHECK(l.type() == wire::Type::str);
        }
    }
    CHECK(maps > 0);
}

TEST_CASE("gecko.msgs vectors decode to their values and encode back to the same bytes", "[conformance][msgs]") {
    SECTION("Imu") {
        const Bytes b = committed().bytes("msgs.imu");
        const auto imu = wire::decode<gecko::msgs::Imu>(b.data(), b.size());
        CHECK(imu.stamp_ns == c::send_time_ns);
        CHECK(imu.frame_id == "imu_link");
        CHECK(imu.accel.z == 9.8125);
        CHECK(std::signbit(imu.gyro.z));  // -0.0 stays -0.0: float64 always
        CHECK(imu.orientation.w == 1.0);
        gecko::Buffer again;
        wire::encode(again, imu);
        CHECK(Bytes(again.data(), again.data() + again.size()) == b);
    }
    SECTION("JointState") {
        const Bytes b = committed().bytes("msgs.joint_state");
        const auto js = wire::decode<gecko::msgs::JointState>(b.data(), b.size());
        CHECK(js.names == std::vector<std::string>{"hip", "knee"});
        CHECK(js.velocity.empty());
        CHECK(js.effort == std::vector<double>{300.0, 0.001});
        gecko::Buffer again;
        wire::encode(again, js);
        CHECK(Bytes(again.data(), again.data() + again.size()) == b);
    }
    SECTION("Image") {
        const Bytes b = committed().bytes("msgs.image_small");
        const auto image = wire::decode<gecko::msgs::Image>(b.data(), b.size());
        CHECK(image.width == 2);
        CHECK(image.encoding == "mono8");
        CHECK(image.data == std::vector<std::uint8_t>{0x00, 0x7f, 0x80, 0xff});
        gecko::Buffer again;
        wire::encode(again, image);
        CHECK(Bytes(again.data(), again.data() + again.size()) == b);
    }
}

TEST_CASE("the decoder accepts and refuses the rule vectors as index.json says", "[conformance][msgs][rules]") {
    // byte_vectors() decodes each rule vector with gecko::wire::decode now; the
    // committed entry says what it did when the vectors were made.
    std::size_t rules = 0;
    for (const auto& v : c::byte_vectors()) {
        if (v.name.rfind("rule.", 0) != 0) continue;
        ++rules;
        INFO(v.name << ": " << v.what);
        const Json& e = committed().entry(v.name);
        CHECK(committed().bytes(v.name) == v.bytes);
        CHECK(v.fields.at("accept") == e.at("accept"));
        if (e.at("accept").get<bool>()) {
            CHECK(v.fields.at("value") == e.at("value"));
        } else {
            CHECK(v.fields.at("error") == e.at("error"));
        }
    }
    CHECK(rules == names_starting("rule.").size());
    CHECK(rules >= 20);
}
