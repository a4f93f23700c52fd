// SPDX-License-Identifier: Apache-2.0
// A live gecko::Node against the vectors: raw ZeroMQ sockets play its core
// and its peers, capture what it sends (discovery messages, subscriptions and
// announcements, data frames, requests, replies) and compare it with the
// vectors field for field; it must also accept the vectors' answers (welcome,
// replies, error replies). Ids, sessions, secrets, hosts and times differ
// from run to run: they must keep their place and msgpack type.

#include <gecko/gecko.hpp>
#include <gecko/msgs/std.hpp>
#include <gecko/net/zmq_socket.hpp>
#include <gecko/wire/announcement.hpp>
#include <gecko/wire/frame.hpp>
#include <gecko/wire/hash.hpp>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <future>
#include <mutex>
#include <thread>

#include "add_types.hpp"
#include "live.hpp"

namespace c = gecko::conformance;
namespace lv = gecko::conformance::live;
namespace wire = gecko::wire;
using c::Bytes;
using c::Json;
using namespace std::chrono_literals;

namespace {

std::atomic<int> unique{0};

std::string inproc_name(const char* what) {
    return "inproc://conformance-" + std::string(what) + "-" + std::to_string(::getpid()) + "-" + std::to_string(++unique);
}

// A node of key "dalek" on inproc only (the test's raw sockets share the process's ZeroMQ context).
gecko::NodeOptions node_options(const char* name) {
    gecko::NodeOptions o;
    o.key = c::key;
    o.name = name;
    o.discovery = false;
    o.transports = {"inproc"};
    return o;
}

// A subscription message as an XPUB reports it: 1 (subscribe) or 0, then the bytes.
struct Subscription {
    bool subscribe = true;
    std::string bytes;
};

std::optional<Subscription> next_subscription(zmq::socket_t& xpub, std::chrono::milliseconds timeout = 10000ms) {
    auto m = lv::receive(xpub, timeout);
    if (!m || m->size() < 1) return std::nullopt;
    const auto* p = static_cast<const char*>(m->data());
    return Subscription{p[0] == 1, std::string(p + 1, m->size() - 1)};
}

// The next announcement an XPUB hears (plain channel subscriptions go to `prefixes`).
// (Withdrawn plain subscriptions are skipped.)
std::optional<wire::Announcement> next_announcement(zmq::socket_t& xpub, std::vector<std::string>* prefixes = nullptr,
                                                   bool* subscribe = nullptr) {
    for (int i = 0; i < 16; ++i) {
        auto s = next_subscription(xpub);
        if (!s) return std::nullopt;
        if (auto a = wire::parse_announcement(s->bytes)) {
            if (subscribe) *subscribe = s->subscribe;
            return a;
        }
        if (prefixes && s->subscribe) prefixes->push_back(s->bytes);
    }
    return std::nullopt;
}

// A core played by a ROUTER: answers and reads what the node sends it.
struct FakeCore {
    zmq::context_t context;
    zmq::socket_t core{context, zmq::socket_type::router};
    std::string routing;

    FakeCore() {
        core.set(zmq::sockopt::linger, 0);
        core.bind("tcp://127.0.0.1:*");
    }
    std::string endpoint() { return core.get(zmq::sockopt::last_endpoint); }
    /// Options for a node (node_options) that finds this core, by address only.
    gecko::NodeOptions node(const char* name) {
        auto o = node_options(name);
        o.discovery = true;
        o.multicast_enabled = false;  // "use" the explicit core: straight to hello, no UDP
        o.core = endpoint();
        return o;
    }
    static Bytes bytes_of(const gecko::discovery::Writer& w) {
        return Bytes(reinterpret_cast<const std::uint8_t*>(w.data()), reinterpret_cast<const std::uint8_t*>(w.data()) + w.size());
    }
    void answer(const Bytes& b) {
        core.send(zmq::buffer(routing), zmq::send_flags::sndmore);
        core.send(zmq::const_buffer(b.data(), b.size()), zmq::send_flags::none);
    }
    /// Answers a heartbeat with the node's own view, as a core that agrees.
    void answer_hb(const Json& hb) {
        gecko::discovery::Writer w("hb", 3);
        w.kv("instance", c::core_instance);
        w.kv("n", hb.at("n").get<std::uint64_t>());
        w.kv("digest", hb.at("digest").get<std::uint64_t>());
        answer(bytes_of(w));
    }
    // The next message of type `t` the node sends (others it sends on the way
    // go to `skipped`). Heartbeats met on the way are answered with the node's
    // own view (a core that keeps quiet for a lease is lost).
    std::optional<Json> next(const std::string& t, std::vector<std::string>* skipped = nullptr,
                             std::chrono::milliseconds timeout = 10000ms) {
        for (int i = 0; i < 64; ++i) {
            auto id = lv::receive(core, timeout);
            if (!id) return std::nullopt;
            auto body = lv::receive(core, 10000ms);
            REQUIRE(body);
            routing = id->to_string();
            Json j = lv::as_json(*body);
            if (j.at("t") == t) return j;
            if (skipped) skipped->push_back(j.at("t").get<std::string>());
            if (j.at("t") == "hb") answer_hb(j);
        }
        return std::nullopt;
    }
};

Json announcement_json(const std::string& bytes) {
    return c::msgpack_to_json(reinterpret_cast<const std::uint8_t*>(bytes.data()) + 10, bytes.size() - 10);
}

// A frame's header and payload compared with a vector's. The send time always
// differs; the sender, the sequence and the payload when said.
void check_frame(const Bytes& live, const Bytes& vec, bool sender_varies, bool sequence_varies, bool payload_varies = false) {
    wire::FrameView a, b;
    REQUIRE(wire::parse_frame(live.data(), live.size(), 64u << 20, a) == wire::FrameError::none);
    REQUIRE(wire::parse_frame(vec.data(), vec.size(), 64u << 20, b) == wire::FrameError::none);
    CHECK(a.header.channel == b.header.channel);
    CHECK(a.header.version == b.header.version);
    CHECK(a.header.flags == b.header.flags);
    CHECK(a.header.payload_size == b.header.payload_size);
    if (!sequence_varies) CHECK(a.header.sequence == b.header.sequence);
    if (!sender_varies) CHECK(a.header.sender_id == b.header.sender_id);
    CHECK(a.header.type_hash == b.header.type_hash);
    const auto now = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
    CHECK(std::llabs(now - a.header.send_time_ns) < 60'000'000'000LL);  // ns since the Unix epoch, this machine's clock
    std::vector<std::uint8_t> pa(a.body, a.body + a.body_size), pb(b.body, b.body + b.body_size);
    if (a.header.compressed()) REQUIRE(wire::inflate_body(a, pa) == wire::FrameError::none);
    if (b.header.compressed()) REQUIRE(wire::inflate_body(b, pb) == wire::FrameError::none);
    if (!payload_varies) CHECK(pa == pb);
}

Bytes payload_of(const gecko::msgs::String& s) {
    gecko::Buffer b;
    gecko::wire::encode(b, s);
    return Bytes(b.data(), b.data() + b.size());
}

}  // namespace

TEST_CASE("a live node's discovery messages are the vectors' messages, field for field", "[conformance][live][node]") {
    FakeCore fake;
    auto answer = [&](const Bytes& b) { fake.answer(b); };
    auto next = [&](const std::string& t) { return fake.next(t); };
    const std::set<std::string> node_varies{"s", "secret", "host", "hostid", "pid", "pidns", "locators", "lease_ms"};

    // A core quiet for a lease is lost and the node registers anew; under a
    // sanitizer on a loaded machine this test's steps may take seconds.
    auto options = fake.node("talker");
    options.lease = std::chrono::milliseconds(15000);
    auto node = std::make_unique<gecko::Node>(options);

    const auto hello = next("hello");
    REQUIRE(hello);
    lv::check_like(*hello, lv::as_json(lv::vector_bytes("discovery.hello")), node_varies);
    CHECK(hello->at("s") == node->session());

    // Entities made before the core answers are registered right after its welcome.
    auto publisher = std::make_unique<gecko::RawPublisher>(node->raw_publisher(c::topic, c::string_type));
    auto server = node->raw_server(c::service, c::request_type, c::reply_type, [](const gecko::RawView&, gecko::Buffer&) {});
    answer(lv::vector_bytes("discovery.welcome"));
    std::map<std::string, Json> adds;
    for (int i = 0; i < 2; ++i) {
        auto add = next("add");
        REQUIRE(add);
        adds[add->at("kind").get<std::string>()] = *add;
    }
    const std::set<std::string> add_varies{"s", "secret", "id"};
    lv::check_like(adds.at("publisher"), lv::as_json(lv::vector_bytes("discovery.add_publisher")), add_varies);
    CHECK(adds.at("publisher").at("id") == publisher->id());
    lv::check_like(adds.at("server"), lv::as_json(lv::vector_bytes("discovery.add_server")), add_varies);
    CHECK(adds.at("server").at("id") == server.id());

    gecko::SubscriberOptions so;
    so.type_name = c::string_type;
    auto subscriber = node->raw_subscriber(c::topic, so);
    auto add = next("add");
    REQUIRE(add);
    lv::check_like(*add, lv::as_json(lv::vector_bytes("discovery.add_subscriber")), add_varies);
    CHECK(add->at("id") == subscriber.id());  // the subscriber's announcement carries the same id
    auto client = node->raw_client(c::service, c::request_type, c::reply_type);
    add = next("add");
    REQUIRE(add);
    lv::check_like(*add, lv::as_json(lv::vector_bytes("discovery.add_client")), add_varies);
    const std::uint64_t client_id = add->at("id").get<std::uint64_t>();  // (RawClient does not show its id)

    auto watch = node->on_graph_change([](const gecko::GraphEvent&) {});
    const auto watch_graph = next("watch_graph");
    REQUIRE(watch_graph);
    lv::check_like(*watch_graph, lv::as_json(lv::vector_bytes("discovery.watch_graph")), {"s", "secret"});

    // Heartbeat (every lease / 3) with the count and digest of the node's entities.
    const auto hb = next("hb");
    REQUIRE(hb);
    lv::check_like(*hb, lv::as_json(lv::vector_bytes("discovery.hb")), {"s", "secret", "n", "digest"});
    const std::vector<std::uint64_t> ids{publisher->id(), server.id(), subscriber.id(), client_id};
    CHECK(hb->at("n") == 4);
    CHECK(hb->at("digest") == gecko::discovery::entity_digest(ids));
    answer(c::hb_answer(node->session(), c::core_instance, ids));  // the same view: nothing to repair

    // Figures, every ~3 s.
    const auto stats = next("stats");
    REQUIRE(stats);
    lv::check_like(*stats, lv::as_json(lv::vector_bytes("discovery.stats")), {"s", "secret", "stats", "links"});
    CHECK(stats->at("stats").size() == 4);

    const auto publisher_id = publisher->id();
    publisher.reset();
    const auto remove = next("remove");
    REQUIRE(remove);
    lv::check_like(*remove, lv::as_json(lv::vector_bytes("discovery.remove")), add_varies);
    CHECK(remove->at("id") == publisher_id);

    node.reset();
    const auto bye = next("bye");
    REQUIRE(bye);
    lv::check_like(*bye, lv::as_json(lv::vector_bytes("discovery.bye")), {"s", "secret"});
}

TEST_CASE("a live node sends its adds behind its first hello, and as it makes entities until the welcome, once",
          "[conformance][live][node]") {
    FakeCore fake;
    gecko::Node node(fake.node("early"));
    auto a = node.raw_publisher(c::topic, c::string_type);
    REQUIRE(fake.next("hello"));
    // Before any welcome: the publisher made before or just after the hello...
    auto add_a = fake.next("add");
    REQUIRE(add_a);
    CHECK(add_a->at("id") == a.id());
    // ...and one made now both reach the core at once.
    auto b = node.raw_publisher("elsewhere", c::string_type);
    auto add_b = fake.next("add");
    REQUIRE(add_b);
    CHECK(add_b->at("id") == b.id());
    // The welcome answers the only hello: nothing is sent again.
    fake.answer(lv::vector_bytes("discovery.welcome"));
    std::vector<std::string> before_hb;
    const auto hb = fake.next("hb", &before_hb);
    REQUIRE(hb);
    CHECK(hb->at("n") == 2);
    CHECK(std::count(before_hb.begin(), before_hb.end(), "add") == 0);
}

TEST_CASE("a node warns, once per period, that its core sent what it cannot read, counts it, and keeps going",
          "[conformance][live][node][malformed]") {
    std::mutex mutex;
    std::condition_variable said;
    std::vector<std::string> warnings;
    gecko::set_log_sink([&](gecko::LogLevel level, std::string_view, std::string_view message) {
        if (level != gecko::LogLevel::warn || message.find("cannot read") == std::string_view::npos) return;
        std::lock_guard<std::mutex> lock(mutex);
        warnings.emplace_back(message);
        said.notify_all();
    });
    struct Restore {
        ~Restore() { gecko::set_log_sink({}); }
    } restore;
    FakeCore fake;
    gecko::Node node(fake.node("reader"));
    auto pub = node.raw_publisher(c::topic, c::string_type);
    REQUIRE(fake.next("hello"));
    fake.answer(lv::vector_bytes("discovery.welcome"));
    // Not msgpack, and a peers message without its peers: five of each.
    gecko::discovery::Writer broken("peers", 2);
    broken.kv("instance", c::core_instance);
    broken.kv("id", pub.id());
    for (int i = 0; i < 5; ++i) {
        fake.answer(Bytes{0xc1, 0x00});
        fake.answer(FakeCore::bytes_of(broken));
    }
    {
        std::unique_lock<std::mutex> lock(mutex);
        REQUIRE(said.wait_for(lock, 10s, [&] { return !warnings.empty(); }));
    }
    // The node goes on: it heartbeats, and a heartbeat later (the ten long
    // read) it has still said it once.
    const auto hb = fake.next("hb");
    REQUIRE(hb);
    fake.answer_hb(*hb);
    REQUIRE(fake.next("hb"));
    std::lock_guard<std::mutex> lock(mutex);
    REQUIRE(warnings.size() == 1);  // ten messages, one line per period
    CHECK(warnings.front().find("geckocore at " + fake.endpoint()) != std::string::npos);
    CHECK(warnings.front().find("another version of Gecko") != std::string::npos);
}

TEST_CASE("a live node announces its subscribers, servers and clients as the vectors show", "[conformance][live][announcements]") {
    const auto context = gecko::net::process_context();
    zmq::socket_t xpub(*context, zmq::socket_type::xpub);
    xpub.set(zmq::sockopt::linger, 0);
    xpub.set(zmq::sockopt::xpub_verboser, 1);
    const std::string endpoint = inproc_name("xpub");
    xpub.bind(endpoint);
    auto options = node_options("listener");
    options.peers = {endpoint};
    gecko::Node node(options);
    const std::set<std::string> varies{"id", "session"};

    {
        gecko::SubscriberOptions so;
        so.type_name = c::string_type;
        so.depth = 16;
        auto subscriber = node.raw_subscriber(c::topic, so);
        // In this order: the subscriber's directed channel (latched replays go
        // there, in answer to the announcement), the channel, the announcement.
        auto s = next_subscription(xpub);
        REQUIRE(s);
        CHECK(s->subscribe);
        CHECK(s->bytes == lv::prefix(wire::directed_channel(c::key, subscriber.id())));
        s = next_subscription(xpub);
        REQUIRE(s);
        CHECK(s->subscribe);
        CHECK(s->bytes == lv::prefix(wire::channel_of(c::key, c::topic)));
        s = next_subscription(xpub);
        REQUIRE(s);
        const Bytes vec = lv::vector_bytes("announcement.subscriber");
        REQUIRE(s->bytes.size() > 10);
        CHECK(s->bytes.substr(0, 10) == std::string(vec.begin(), vec.begin() + 10));  // channel, 0x00, version 1
        lv::check_like(announcement_json(s->bytes), lv::as_json(Bytes(vec.begin() + 10, vec.end())), varies);
        CHECK(announcement_json(s->bytes).at("id") == subscriber.id());
        CHECK(announcement_json(s->bytes).at("session") == node.session());
    }
    // Gone: the same subscriptions withdrawn (0x00).
    bool subscribe = true;
    const auto gone = next_announcement(xpub, nullptr, &subscribe);
    REQUIRE(gone);
    CHECK_FALSE(subscribe);

    {
        auto recorder = node.subscribe_all();
        std::vector<std::string> prefixes;
        const auto a = next_announcement(xpub, &prefixes);
        REQUIRE(a);
        // Its directed channel, then the key's 4 bytes (every channel of the key), then the announcement.
        REQUIRE(prefixes.size() == 2);
        CHECK(prefixes[0] == lv::prefix(wire::directed_channel(c::key, a->id)));
        CHECK(prefixes[1] == lv::prefix(wire::channel_of(c::key, ""), 4));
        CHECK(a->wildcard);
        const Bytes vec = lv::vector_bytes("announcement.wildcard");
        lv::check_like(Json{{"id", a->id}, {"kind", a->kind}, {"topic", a->topic}, {"type", a->type}, {"depth", a->depth}},
                       Json{{"id", c::recorder_id}, {"kind", "subscriber"}, {"topic", "*"}, {"type", "*"}, {"depth", 16}}, {"id"});
        CHECK(lv::prefix(a->channel) == std::string(vec.begin(), vec.begin() + 8));
    }
    next_announcement(xpub);  // the recorder's withdrawal

    {
        auto server = node.raw_server(c::service, c::request_type, c::reply_type, [](const gecko::RawView&, gecko::Buffer&) {});
        std::vector<std::string> prefixes;
        const auto a = next_announcement(xpub, &prefixes);
        REQUIRE(a);
        CHECK(prefixes == std::vector<std::string>{lv::prefix(wire::directed_channel(c::key, server.id()))});
        CHECK(a->channel == wire::directed_channel(c::key, server.id()));
        const Bytes vec = lv::vector_bytes("announcement.server");
        const auto live = wire::encode_announcement(*a);
        lv::check_like(announcement_json(live), lv::as_json(Bytes(vec.begin() + 10, vec.end())), {"id", "session", "node"});
    }
    next_announcement(xpub);
    {
        auto client = node.raw_client(c::service, c::request_type, c::reply_type);
        const auto a = next_announcement(xpub);
        REQUIRE(a);
        CHECK(a->kind == "client");
        CHECK(a->channel == wire::directed_channel(c::key, a->id));
        const Bytes vec = lv::vector_bytes("announcement.client");
        lv::check_like(announcement_json(wire::encode_announcement(*a)), lv::as_json(Bytes(vec.begin() + 10, vec.end())),
                       {"id", "session"});
    }
}

TEST_CASE("a live publisher sends the vectors' frames: plain, compressed, latched, seq and end", "[conformance][live][frames]") {
    const auto context = gecko::net::process_context();
    gecko::Node node(node_options("talker"));
    zmq::socket_t sub(*context, zmq::socket_type::sub);
    sub.set(zmq::sockopt::linger, 0);
    sub.connect(node.locators().front());
    // As a Gecko subscriber does: the channel first, then the announcement.
    auto subscribe = [&](const std::string& topic, std::uint64_t id) {
        sub.set(zmq::sockopt::subscribe, lv::prefix(wire::channel_of(c::key, topic)));
        wire::Announcement a;
        a.channel = wire::channel_of(c::key, topic);
        a.id = id;
        a.topic = topic;
        a.type = c::string_type;
        a.node = "listener";
        a.depth = 16;
        sub.set(zmq::sockopt::subscribe, lv::prefix(wire::directed_channel(c::key, id)));
        sub.set(zmq::sockopt::subscribe, wire::encode_announcement(a));
    };
    // The publisher's "start" (directed at the listener, PROTOCOL.md §6) comes beside its frames: kept apart.
    std::vector<Bytes> starts;
    auto next_frame = [&](std::chrono::milliseconds timeout = 10000ms) -> std::optional<Bytes> {
        for (;;) {
            auto m = lv::receive(sub, timeout);
            if (!m) return std::nullopt;
            Bytes b = lv::bytes_of(*m);
            const bool start = b.size() > 11 && ((b[11] & wire::frame_flags::control) != 0) &&
                               wire::load_channel(b.data()) == wire::directed_channel(c::key, c::subscriber_id);
            if (!start) return b;
            starts.push_back(std::move(b));
        }
    };

    SECTION("plain, then seq when it goes quiet, then end when it closes") {
        subscribe(c::topic, c::subscriber_id);
        auto publisher = std::make_unique<gecko::RawPublisher>(node.raw_publisher(c::topic, c::string_type));
        REQUIRE(publisher->wait_for_subscribers(1, 10s));
        const Bytes payload = payload_of(gecko::msgs::String{"hello"});
        publisher->publish(payload.data(), payload.size());
        auto frame = next_frame();
        REQUIRE(frame);
        check_frame(*frame, lv::vector_bytes("frame.plain"), true, false);  // sequence 1: the first message
        CHECK(lv::u64_at(*frame, 24) == publisher->id());
        // Told as it saw the listener join, before any message: its stream began after 0.
        REQUIRE_FALSE(starts.empty());
        const Bytes start = lv::vector_bytes("frame.control_start");
        CHECK(Bytes(starts[0].begin(), starts[0].begin() + 12) == Bytes(start.begin(), start.begin() + 12));
        CHECK(lv::u64_at(starts[0], 16) == 0);
        CHECK(lv::u64_at(starts[0], 24) == publisher->id());
        CHECK(c::msgpack_to_json(starts[0].data() + 48, starts[0].size() - 48) == Json{{"t", "start"}, {"last", 0}});

        frame = next_frame();  // quiet for a tick: "seq" with the last sequence
        REQUIRE(frame);
        check_frame(*frame, lv::vector_bytes("frame.control_seq"), true, true, true);  // (last 1 here, 4 there)
        CHECK(lv::u64_at(*frame, 16) == 1);
        CHECK(c::msgpack_to_json(frame->data() + 48, frame->size() - 48) == Json{{"t", "seq"}, {"last", 1}});

        publisher.reset();
        frame = next_frame();
        REQUIRE(frame);
        CHECK((*frame)[11] == wire::frame_flags::control);
        CHECK(lv::u64_at(*frame, 40) == 0);
        const Bytes end = lv::vector_bytes("frame.control_end");
        CHECK(Bytes(frame->begin(), frame->begin() + 8) == Bytes(end.begin(), end.begin() + 8));
        CHECK(c::msgpack_to_json(frame->data() + 48, frame->size() - 48) == Json{{"t", "end"}, {"last", 1}});
    }
    SECTION("compressed above compress_above") {
        subscribe(c::topic, c::subscriber_id);
        gecko::PublisherOptions po;
        po.compress_above = 64;
        auto publisher = node.raw_publisher(c::topic, c::string_type, po);
        REQUIRE(publisher.wait_for_subscribers(1, 10s));
        std::string text;
        for (int i = 0; i < 40; ++i) text += "gecko ";
        const Bytes payload = payload_of(gecko::msgs::String{text});
        publisher.publish(payload.data(), payload.size());
        publisher.publish(payload.data(), payload.size());  // the vector is the second message
        next_frame();
        const auto frame = next_frame();
        REQUIRE(frame);
        check_frame(*frame, lv::vector_bytes("frame.compressed"), true, false);
    }
    SECTION("latched: the last value, replayed on the late subscriber's directed channel") {
        gecko::PublisherOptions po;
        po.latched = true;
        auto publisher = node.raw_publisher(c::latched_topic, c::string_type, po);
        for (const char* v : {"manual", "idle", "auto"}) {
            const Bytes payload = payload_of(gecko::msgs::String{v});
            publisher.publish(payload.data(), payload.size());
        }
        subscribe(c::latched_topic, c::subscriber_id);  // joins after sequence 3
        const auto frame = next_frame();
        REQUIRE(frame);
        check_frame(*frame, lv::vector_bytes("frame.latched"), true, false);
    }
}

TEST_CASE("a live server answers the vectors' requests with the vectors' replies", "[conformance][live][services]") {
    const auto context = gecko::net::process_context();
    zmq::socket_t xpub(*context, zmq::socket_type::xpub);  // plays the client's node: requests go out here
    xpub.set(zmq::sockopt::linger, 0);
    xpub.set(zmq::sockopt::xpub_verboser, 1);
    const std::string endpoint = inproc_name("client-node");
    xpub.bind(endpoint);
    auto options = node_options("talker");
    options.peers = {endpoint};
    gecko::Node node(options);
    auto service = node.service<AddRequest, AddReply>(c::service, [](const AddRequest& r) { return AddReply{r.a + r.b}; });
    node.spin_in_background();

    const auto announced = next_announcement(xpub);  // the server subscribed to its requests
    REQUIRE(announced);
    REQUIRE(announced->kind == "server");
    const std::uint64_t server = announced->id;

    zmq::socket_t sub(*context, zmq::socket_type::sub);  // the client's replies come here
    sub.set(zmq::sockopt::linger, 0);
    sub.connect(node.locators().front());
    sub.set(zmq::sockopt::subscribe, lv::prefix(wire::directed_channel(c::key, c::client_id)));
    const Bytes client_announcement = lv::vector_bytes("announcement.client");
    sub.set(zmq::sockopt::subscribe, std::string(client_announcement.begin(), client_announcement.end()));

    // The vector's request, sent to this server's directed channel.
    const Bytes request = lv::with_channel(lv::vector_bytes("frame.request"), wire::directed_channel(c::key, server));
    xpub.send(zmq::const_buffer(request.data(), request.size()), zmq::send_flags::none);
    auto reply = lv::receive(sub);
    REQUIRE(reply);
    check_frame(lv::bytes_of(*reply), lv::vector_bytes("frame.reply"), true, false);
    CHECK(lv::u64_at(lv::bytes_of(*reply), 24) == server);

    // A request of another type (request id 2): an error reply, with the reply type's hash.
    Bytes wrong = request;
    for (int i = 0; i < 8; ++i) wrong[16 + static_cast<std::size_t>(i)] = i == 0 ? 2 : 0;
    const std::uint64_t string_hash = wire::type_hash(c::string_type);
    for (int i = 0; i < 8; ++i) wrong[40 + static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(string_hash >> (8 * i));
    xpub.send(zmq::const_buffer(wrong.data(), wrong.size()), zmq::send_flags::none);
    reply = lv::receive(sub);
    REQUIRE(reply);
    check_frame(lv::bytes_of(*reply), lv::vector_bytes("frame.error_reply"), true, false);
}

TEST_CASE("a live client sends the vectors' request and takes the vectors' replies", "[conformance][live][services]") {
    const auto context = gecko::net::process_context();
    zmq::socket_t xpub(*context, zmq::socket_type::xpub);  // plays the server's node: replies go out here
    xpub.set(zmq::sockopt::linger, 0);
    xpub.set(zmq::sockopt::xpub_verboser, 1);
    const std::string endpoint = inproc_name("server-node");
    xpub.bind(endpoint);
    auto options = node_options("listener");
    options.peers = {endpoint};
    gecko::Node node(options);
    auto client = node.client<AddRequest, AddReply>(c::service);

    const auto announced = next_announcement(xpub);  // the client subscribed to its replies
    REQUIRE(announced);
    REQUIRE(announced->kind == "client");
    const std::uint64_t client_id = announced->id;

    zmq::socket_t sub(*context, zmq::socket_type::sub);  // requests to the vectors' server come here
    sub.set(zmq::sockopt::linger, 0);
    sub.connect(node.locators().front());
    sub.set(zmq::sockopt::subscribe, lv::prefix(wire::directed_channel(c::key, c::server_id)));
    const Bytes server_announcement = lv::vector_bytes("announcement.server");
    sub.set(zmq::sockopt::subscribe, std::string(server_announcement.begin(), server_announcement.end()));
    REQUIRE(client.wait_for_server(10000ms));  // its out-port heard the server's announcement

    auto first = std::async(std::launch::async, [&] { return client.call(AddRequest{2, 3}, 10000ms); });
    auto request = lv::receive(sub);
    REQUIRE(request);
    check_frame(lv::bytes_of(*request), lv::vector_bytes("frame.request"), true, false);  // request id 1
    CHECK(lv::u64_at(lv::bytes_of(*request), 24) == client_id);
    const Bytes reply = lv::with_channel(lv::vector_bytes("frame.reply"), wire::directed_channel(c::key, client_id));
    xpub.send(zmq::const_buffer(reply.data(), reply.size()), zmq::send_flags::none);
    CHECK(first.get().sum == 5.0);

    auto second = std::async(std::launch::async, [&] { return client.call(AddRequest{2, 3}, 10000ms); });
    request = lv::receive(sub);
    REQUIRE(request);
    CHECK(lv::u64_at(lv::bytes_of(*request), 16) == 2);  // request ids count up per client
    const Bytes error = lv::with_channel(lv::vector_bytes("frame.error_reply"), wire::directed_channel(c::key, client_id));
    xpub.send(zmq::const_buffer(error.data(), error.size()), zmq::send_flags::none);
    try {
        second.get();
        FAIL("an error reply must fail the call");
    } catch (const gecko::Error& e) {
        CHECK(e.code() == gecko::Errc::remote);
        CHECK(std::string(e.what()) == "service 'add' expects examples.AddRequest but got another type");
    }
}
