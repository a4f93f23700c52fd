// Key-wide subscriptions and the key's channel directory (docs/DISCOVERY.md
// §4.1): a subscriber of every topic of a key, publishers in other processes
// over shared memory and tcp, found through a real geckocore.

#include <catch2/catch.hpp>

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>

#include <gecko/gecko.hpp>
#include <gecko/msgs/std.hpp>

#include "support/ports.hpp"
#include "support/process.hpp"

using namespace std::chrono_literals;
using gecko::test::Process;
using gecko::test::SpawnOptions;
using gecko::test::TempDir;

namespace {

std::string unique_key(const char* what) { return std::string("kw-") + what + "-" + std::to_string(::getpid()); }

SpawnOptions env_for(const gecko::test::CoreOnLoopback& core, const TempDir& ipc_dir, const std::string& transports = "") {
    SpawnOptions env;
    env.env = {{"GECKO_CORE", core.address()}, {"GECKO_NO_MULTICAST", "1"}, {"GECKO_IPC_DIR", ipc_dir.path()}};
    if (!transports.empty()) env.env["GECKO_TRANSPORTS"] = transports;
    env.unset_env = {"GECKO_KEY", "GECKO_DISCOVERY", "GECKO_MULTICAST", "GECKO_INTERFACE", "GECKO_SHM"};
    return env;
}

gecko::NodeOptions node_options(const std::string& key, const gecko::test::CoreOnLoopback& core, const TempDir& ipc_dir) {
    gecko::NodeOptions o;
    o.key = key;
    o.name = "recorder";
    o.core = core.address();
    o.multicast_enabled = false;
    o.ipc_directory = ipc_dir.path();
    return o;
}

Process publisher(const std::string& key, const std::string& topic, const std::string& type, long count,
                  const SpawnOptions& env) {
    return Process::spawn(GECKO_TEST_NODE, {"pub", "--key", key, "--topic", topic, "--type", type, "--count",
                                            std::to_string(count), "--rate", "200", "--wait-subs", "1"},
                          env);
}

// What a key-wide subscriber received, per topic.
struct Received {
    std::map<std::string, std::vector<std::uint64_t>> sequences;  // topic -> sequences in arrival order
    std::map<std::string, std::string> types;                     // topic -> type name
    std::set<std::string> bad;                                    // what did not name itself as it should
};

// Receives until `want` messages per topic in `counts` arrived, or 30 s passed.
Received receive_all(gecko::RawSubscriber& sub, const std::map<std::string, std::size_t>& counts) {
    Received r;
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    auto done = [&] {
        for (const auto& [topic, n] : counts)
            if (r.sequences[topic].size() < n) return false;
        return true;
    };
    while (!done() && std::chrono::steady_clock::now() < deadline) {
        sub.receive(100ms, [&](const gecko::RawView& v) {
            const auto& info = v.info;
            r.sequences[info.topic].push_back(info.sequence);
            r.types[info.topic] = info.type_name;
            if (!info.channel || info.channel->topic != info.topic || info.channel->type_hash != info.type_hash) {
                r.bad.insert(info.topic + ": no directory entry, or another");
                return;
            }
            bool listed = false;
            for (const auto& p : info.channel->publishers) listed = listed || p.id == info.publisher_id;
            if (!listed) r.bad.insert(info.topic + ": its publisher is not listed");
        });
    }
    return r;
}

}  // namespace

TEST_CASE("a key-wide subscriber receives every topic of the key, publishers that start after it too, each named",
          "[integration][key_wide]") {
    const std::string key = unique_key("all");
    const auto core = gecko::test::start_core(GECKOCORE_PATH, key);
    TempDir ipc_dir;
    // Shared memory (the default between processes of one host), and tcp alone.
    for (const std::string transports : {"", "tcp"}) {
        INFO("transports: " << (transports.empty() ? "default (shm)" : transports));
        auto options = node_options(key, core, ipc_dir);
        if (!transports.empty()) options.transports = {"tcp"};
        gecko::Node node(options);
        gecko::SubscriberOptions so;
        so.depth = 1000;
        auto all = node.subscribe_all(gecko::TopicFilter::all(), so);
        const auto env = env_for(core, ipc_dir, transports);
        const std::string first = "arm1/joints" + transports, later = "arm2/label" + transports;
        auto pub1 = publisher(key, first, "int", 100, env);
        REQUIRE(pub1.wait_for_line("ready", 10s));
        auto pub2 = publisher(key, later, "string", 100, env);  // starts after the subscription
        const auto got = receive_all(all, {{first, 100}, {later, 100}});
        CHECK(got.bad.empty());
        REQUIRE(got.sequences.count(first));
        REQUIRE(got.sequences.count(later));
        CHECK(got.sequences.at(first).size() == 100);
        CHECK(got.sequences.at(later).size() == 100);
        CHECK(got.types.at(first) == "gecko.msgs.Int64");
        CHECK(got.types.at(later) == "gecko.msgs.String");
        for (const auto& [topic, seqs] : got.sequences) {
            INFO(topic);
            for (std::size_t i = 1; i < seqs.size(); ++i) CHECK(seqs[i] == seqs[i - 1] + 1);
        }
        CHECK(all.stats().unlisted == 0);
        CHECK(all.stats().drops == 0);
    }
}

// The directory drops a topic as soon as its last publisher is gone, while
// that publisher's last frames may still be on their way to a subscriber
// that is behind: they are still that topic's, and are received or counted.
TEST_CASE("a publisher that exits while a key-wide subscriber is behind: every frame it sent is received or counted",
          "[integration][key_wide]") {
    const std::string key = unique_key("exit");
    const auto core = gecko::test::start_core(GECKOCORE_PATH, key);
    TempDir ipc_dir;
    constexpr long sent = 20000;
    for (const std::string transports : {"", "tcp"}) {
        INFO("transports: " << (transports.empty() ? "default (shm)" : transports));
        auto options = node_options(key, core, ipc_dir);
        if (!transports.empty()) options.transports = {"tcp"};
        gecko::Node node(options);
        gecko::SubscriberOptions so;
        so.depth = 2 * sent;
        auto all = node.subscribe_all(gecko::TopicFilter::all(), so);
        const std::string topic = "burst" + transports;
        std::atomic<bool> removed{false};
        auto watch = node.watch_directory([&](const gecko::DirectoryEvent& e) {
            if (e.channel->topic == topic && e.kind == gecko::DirectoryEvent::Kind::removed) removed = true;
        });
        auto env = env_for(core, ipc_dir, transports);
        auto pub = Process::spawn(GECKO_TEST_NODE, {"pub", "--key", key, "--topic", topic, "--type", "int", "--count",
                                                    std::to_string(sent), "--rate", "1000000", "--wait-subs", "1"},
                                  env);
        REQUIRE(pub.wait_for_line("published", 30s));
        pub.close_stdin();
        REQUIRE(pub.wait(10s) == 0);
        // The directory has dropped the topic before we read a single frame.
        for (const auto deadline = std::chrono::steady_clock::now() + 20s;
             !removed && std::chrono::steady_clock::now() < deadline;)
            node.spin_once(100ms);  // runs the watch's callback
        REQUIRE(removed);
        std::uint64_t received = 0, last = 0;
        bool in_order = true;
        while (received < static_cast<std::uint64_t>(sent) &&
               all.receive(3s, [&](const gecko::RawView& v) {
                   in_order = in_order && v.info.sequence > last;
                   last = v.info.sequence;
                   ++received;
               })) {
        }
        const auto s = all.stats();
        INFO("received " << received << ", drops " << s.drops << ", overwritten " << s.overwritten << ", unlisted "
                         << s.unlisted);
        CHECK(in_order);
        CHECK(s.unlisted == 0);  // the topic's late frames were taken as its own
        // Lost at the end (a full queue) or at the start (shared memory drops its oldest) alike:
        // the publisher's "end" and "start" make the subscriber count them.
        CHECK(received + s.drops + s.overwritten == static_cast<std::uint64_t>(sent));
    }
}

// Shared memory drops a link's oldest frames when it is full: a subscriber
// that stops reading loses a publisher's first messages (and the "start" told
// as it joined), and took the first it received for the start of its stream.
// The publisher says where it began again as it closes.
TEST_CASE("a subscriber stopped while a publisher fills its shared-memory link counts the first messages it lost",
          "[integration][key_wide]") {
    const std::string key = unique_key("head");
    const auto core = gecko::test::start_core(GECKOCORE_PATH, key);
    TempDir ipc_dir;
    auto sub = Process::spawn(GECKO_TEST_NODE, {"sub", "--key", key, "--topic", "head", "--type", "int", "--count",
                                                "1000000", "--timeout-ms", "60000"},
                              env_for(core, ipc_dir));
    REQUIRE(sub.wait_for_line("ready", 30s));
    auto options = node_options(key, core, ipc_dir);
    options.name = "head_pub";
    gecko::Node node(options);
    constexpr long sent = 5000;  // 5 times what the link holds (send_queue: 1,000)
    {
        auto pub = node.publisher<gecko::msgs::Int64>("head");
        REQUIRE(pub.wait_for_subscribers(1, 30s));
        sub.kill(SIGSTOP);
        for (long i = 1; i <= sent; ++i) pub.publish(gecko::msgs::Int64{i});
        REQUIRE(pub.stats().dropped > 0);  // the oldest, the first messages among them
    }
    // A second publisher's message follows the first one's closing frames on the link.
    auto marker = node.publisher<gecko::msgs::Int64>("head");
    REQUIRE(marker.wait_for_subscribers(1, 30s));
    marker.publish(gecko::msgs::Int64{-1});
    sub.kill(SIGCONT);
    REQUIRE(sub.wait_for_line("recv -1 ", 30s));
    sub.kill(SIGINT);  // it prints its stats as it stops
    const auto line = sub.wait_for_line("stats ", 30s);
    REQUIRE(line);
    unsigned long long received = 0, drops = 0;
    REQUIRE(std::sscanf(line->c_str(), "stats received=%llu drops=%llu", &received, &drops) == 2);
    INFO(*line);
    CHECK(drops > 0);
    CHECK(received + drops == static_cast<unsigned long long>(sent) + 1);  // the marker too
}

TEST_CASE("a key-wide subscriber's filter takes only the topics it matches, and the directory lists them all",
          "[integration][key_wide]") {
    const std::string key = unique_key("filter");
    const auto core = gecko::test::start_core(GECKOCORE_PATH, key);
    TempDir ipc_dir;
    gecko::Node node(node_options(key, core, ipc_dir));
    gecko::SubscriberOptions so;
    so.depth = 1000;
    auto arm1 = node.subscribe_all(gecko::TopicFilter::topic("arm1/*"), so);
    const auto env = env_for(core, ipc_dir);
    auto wanted = publisher(key, "arm1/imu", "int", 50, env);
    auto other = publisher(key, "arm2/imu", "int", 50, env);
    auto listener = Process::spawn(GECKO_TEST_NODE, {"sub", "--key", key, "--topic", "arm2/imu", "--count", "50"}, env);
    const auto got = receive_all(arm1, {{"arm1/imu", 50}});
    CHECK(got.sequences.size() == 1);
    CHECK(got.sequences.count("arm1/imu"));
    // arm2/imu's 50 went to its own subscriber meanwhile: none reached the filter.
    REQUIRE(listener.wait(30s) == 0);
    CHECK(!arm1.receive(200ms, [](const gecko::RawView&) {}));

    const auto directory = node.directory(10s);
    std::map<std::string, std::shared_ptr<const gecko::ChannelInfo>> by_name;
    for (const auto& c : directory) by_name[c->topic] = c;
    REQUIRE(by_name.count("arm1/imu"));
    REQUIRE(by_name.count("arm2/imu"));
    const auto& imu = *by_name.at("arm1/imu");
    CHECK(imu.channel == gecko::wire::channel_of(key, "arm1/imu"));
    CHECK(imu.type_name == "gecko.msgs.Int64");
    REQUIRE(imu.schema);  // the typed publisher declared its fields
    REQUIRE(imu.schema->find("gecko.msgs.Int64"));
    CHECK(imu.schema->find("gecko.msgs.Int64")->field_list() == "data");
    REQUIRE(imu.publishers.size() == 1);
    CHECK(imu.publishers[0].node == "test_pub");
}

TEST_CASE("watch_directory reports a topic added, changed as publishers come, and removed as they go",
          "[integration][key_wide]") {
    const std::string key = unique_key("watch");
    const auto core = gecko::test::start_core(GECKOCORE_PATH, key);
    TempDir ipc_dir;
    gecko::Node node(node_options(key, core, ipc_dir));
    std::mutex mutex;
    std::vector<std::pair<gecko::DirectoryEvent::Kind, std::size_t>> events;  // for topic "odom": kind, publishers
    auto watch = node.watch_directory([&](const gecko::DirectoryEvent& e) {
        if (e.channel->topic != "odom") return;
        std::lock_guard<std::mutex> lock(mutex);
        events.emplace_back(e.kind, e.channel->publishers.size());
    });
    // Spins until `done` holds for the events so far (bounded).
    auto wait_until = [&](const std::function<bool()>& done) {
        const auto deadline = std::chrono::steady_clock::now() + 20s;
        while (std::chrono::steady_clock::now() < deadline) {
            node.spin_once(100ms);
            std::lock_guard<std::mutex> lock(mutex);
            if (done()) return true;
        }
        return false;
    };
    const auto env = env_for(core, ipc_dir);
    auto first = publisher(key, "odom", "int", 1, env);
    REQUIRE(wait_until([&] { return events.size() >= 1; }));
    auto second = publisher(key, "odom", "int", 1, env);
    REQUIRE(wait_until([&] { return events.size() >= 2; }));
    first.kill();
    second.kill();
    REQUIRE(wait_until([&] { return events.back().first == gecko::DirectoryEvent::Kind::removed; }));
    std::lock_guard<std::mutex> lock(mutex);
    REQUIRE(events.size() >= 3);
    CHECK(events[0] == std::make_pair(gecko::DirectoryEvent::Kind::added, std::size_t{1}));
    CHECK(events[1] == std::make_pair(gecko::DirectoryEvent::Kind::changed, std::size_t{2}));
    CHECK(events.back().first == gecko::DirectoryEvent::Kind::removed);
}

TEST_CASE("a latched value replayed to a key-wide subscriber is named by its publisher's topic",
          "[integration][key_wide]") {
    const std::string key = unique_key("latched");
    const auto core = gecko::test::start_core(GECKOCORE_PATH, key);
    TempDir ipc_dir;
    auto options = node_options(key, core, ipc_dir);
    options.name = "map_server";
    gecko::Node server(options);
    gecko::PublisherOptions po;
    po.latched = true;
    auto map = server.publisher<gecko::msgs::String>("map", po);
    map.publish(gecko::msgs::String{"the map"});
    gecko::Node recorder(node_options(key, core, ipc_dir));
    auto all = recorder.subscribe_all();
    std::string topic, body;
    bool latched = false;
    const auto deadline = std::chrono::steady_clock::now() + 20s;
    while (topic.empty() && std::chrono::steady_clock::now() < deadline)
        all.receive(100ms, [&](const gecko::RawView& v) {
            topic = v.info.topic;
            latched = v.info.latched;
            gecko::msgs::String s;
            gecko::codec::decode(v.payload, v.size, s);
            body = s.data;
        });
    CHECK(topic == "map");
    CHECK(latched);
    CHECK(body == "the map");
}

TEST_CASE("a topic whose channel id another topic has is refused: its publisher stops, nothing merges",
          "[integration][key_wide]") {
    const std::string key = unique_key("collision");
    const auto core = gecko::test::start_core(GECKOCORE_PATH, key);
    TempDir ipc_dir;
    gecko::Node first(node_options(key, core, ipc_dir));
    gecko::Node second(node_options(key, core, ipc_dir));
    // fnv1a32 of both names is 0x2dab3b7c: one channel id.
    REQUIRE(gecko::wire::channel_of(key, "arm/joint5676") == gecko::wire::channel_of(key, "arm/joint217000"));
    auto keeps = first.publisher<gecko::msgs::Int64>("arm/joint5676");
    REQUIRE(first.wait_for_core(10s));
    // The graph query and the registration may reach the core in either order: ask until it lists the topic.
    bool listed = false;
    for (const auto deadline = std::chrono::steady_clock::now() + 10s; !listed && std::chrono::steady_clock::now() < deadline;)
        listed = first.graph(10s).find("arm/joint5676") != nullptr;
    REQUIRE(listed);
    // The second topic's publisher shares its node with a subscriber of the first:
    // until it is refused, its frames reach that subscriber through the node's own link.
    gecko::SubscriberOptions so;
    so.depth = 1000;
    auto subscriber = second.subscriber<gecko::msgs::Int64>("arm/joint5676", so);
    auto refused = second.publisher<gecko::msgs::Int64>("arm/joint217000");
    // It may publish until the core's refusal arrives; then publish() says why.
    std::string why;
    gecko::Rate rate(100.0);
    const auto deadline = std::chrono::steady_clock::now() + 20s;
    while (why.empty() && std::chrono::steady_clock::now() < deadline) {
        try {
            refused.publish(gecko::msgs::Int64{-1});
        } catch (const gecko::Error& e) {
            CHECK(e.code() == gecko::Errc::discovery);
            why = e.what();
        }
        rate.sleep();
    }
    CHECK(why.find("has the channel id of topic 'arm/joint5676'") != std::string::npos);
    // From now on the first topic carries only its own messages.
    REQUIRE(keeps.wait_for_subscribers(1, 10s));
    for (long i = 1; i <= 20; ++i) keeps.publish(gecko::msgs::Int64{i});
    long last = 0, foreign_after = 0;
    while (last < 20) {
        auto m = subscriber.receive(10s);
        REQUIRE(m);
        if (m->data < 0) {
            foreign_after += last > 0;  // a -1 among the first topic's own, after the refusal: merged
            continue;
        }
        last = m->data;
    }
    CHECK(foreign_after == 0);
    const auto graph = first.graph(10s);
    CHECK(!graph.find("arm/joint217000"));
}
