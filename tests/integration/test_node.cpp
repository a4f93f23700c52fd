// gecko_test_node: a publisher or subscriber process driven by the integration
// tests. It prints one line per event so tests can await them:
//   pub: "ready LOCATOR..." (the locators its node bound, ports resolved: give it
//        --endpoint tcp://127.0.0.1:* and read the port here), then "published N" when done
//   sub: "ready", "recv VALUE seq SEQ", then "stats received=.. drops=.. mismatches=.."
//   all: a key-wide subscriber (Node::subscribe_all) of the topics matching --topic (a glob):
//        "ready", then "recv TOPIC TYPE seq SEQ fields F1,F2,.." per message (the fields of its
//        type in its directory entry's schema; "-": none declared)
// Usage:
//   gecko_test_node pub --topic T [--type int|string] [--count N] [--rate HZ]
//                       [--endpoint E] [--wait-subs N] [gecko flags: --key K --core ADDR --no-discovery ...]
//   gecko_test_node sub --topic T [--type int|string] [--count N] [--timeout-ms MS] [--endpoint E]...
//   gecko_test_node all [--topic PATTERN] [--count N] [--timeout-ms MS]
#include <gecko/gecko.hpp>
#include <gecko/msgs/std.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

struct Args {
    std::string role, topic = "numbers", type = "int";
    long count = 10, timeout_ms = 10000, wait_subs = 0;
    double rate = 1000;
    std::vector<std::string> endpoints;
    std::vector<std::string> positional;  // the role
};

void declare(gecko::OptionParser& p, Args& a) {
    p.positionals(a.positional, "pub|sub|all");
    p.text("--topic", a.topic, "T", "the topic");
    p.text("--type", a.type, "int|string", "the message type",
           [](const std::string& v) { return v == "int" || v == "string" ? "" : "int or string"; });
    p.integer("--count", a.count, 0, 1000000000, "N", "messages to send or receive");
    p.number("--rate", a.rate, 0.001, 1e7, "HZ", "publish rate");
    p.integer("--timeout-ms", a.timeout_ms, 0, 3600000, "MS", "how long a subscriber waits");
    p.integer("--wait-subs", a.wait_subs, 0, 1000, "N", "subscribers to wait for before publishing");
    p.custom("--endpoint", "E", "what a publisher binds, what a subscriber connects to (repeatable)",
             [&a](const std::string& v) {
                 a.endpoints.push_back(v);
                 return std::string();
             });
}

template <class T>
T make(long i) {
    if constexpr (std::is_same_v<T, gecko::msgs::Int64>) return T{i};
    else return T{std::to_string(i)};
}

template <class T>
std::string show(const T& m) {
    if constexpr (std::is_same_v<T, gecko::msgs::Int64>) return std::to_string(m.data);
    else return m.data;
}

template <class T>
int publish(gecko::Node& node, const Args& a) {
    auto pub = node.publisher<T>(a.topic);
    std::string ready = "ready";
    for (const auto& e : node.locators()) ready += " " + e;
    std::printf("%s\n", ready.c_str());
    std::fflush(stdout);
    if (a.wait_subs > 0 && !pub.wait_for_subscribers(static_cast<std::size_t>(a.wait_subs), std::chrono::milliseconds(a.timeout_ms))) {
        std::printf("no subscribers\n");
        return 1;
    }
    gecko::Rate rate(a.rate);
    for (long i = 1; i <= a.count && gecko::ok(); ++i) {
        pub.publish(make<T>(i));
        rate.sleep();
    }
    std::printf("published %ld\n", a.count);
    std::fflush(stdout);
    // Linger until told to stop (stdin closes) so late subscribers' sockets stay served.
    char c;
    while (gecko::ok() && std::fread(&c, 1, 1, stdin) == 1) {
    }
    return 0;
}

template <class T>
int subscribe(gecko::Node& node, const Args& a) {
    gecko::SubscriberOptions so;
    so.depth = 1000;
    auto sub = node.subscriber<T>(a.topic, so);
    std::printf("ready\n");
    std::fflush(stdout);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(a.timeout_ms);
    long got = 0;
    while (got < a.count && gecko::ok() && std::chrono::steady_clock::now() < deadline) {
        gecko::MessageInfo info;
        auto msg = sub.receive(std::chrono::milliseconds(100), &info);
        if (!msg) continue;
        ++got;
        std::printf("recv %s seq %llu pub %016llx\n", show(*msg).c_str(), static_cast<unsigned long long>(info.sequence),
                    static_cast<unsigned long long>(info.publisher_id));
        std::fflush(stdout);
    }
    const auto s = sub.stats();
    std::printf("stats received=%llu drops=%llu mismatches=%llu\n", static_cast<unsigned long long>(s.received),
                static_cast<unsigned long long>(s.drops), static_cast<unsigned long long>(s.type_mismatches));
    std::fflush(stdout);
    return got == a.count ? 0 : 1;
}

int subscribe_all(gecko::Node& node, const Args& a) {
    gecko::SubscriberOptions so;
    so.depth = 1000;
    auto sub = node.subscribe_all(gecko::TopicFilter::topic(a.topic), so);
    std::printf("ready\n");
    std::fflush(stdout);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(a.timeout_ms);
    long got = 0;
    while (got < a.count && gecko::ok() && std::chrono::steady_clock::now() < deadline) {
        if (!sub.receive(std::chrono::milliseconds(100), [](const gecko::RawView& v) {
                std::string fields = "-";
                const gecko::wire::MessageSchema* m =
                    v.info.channel && v.info.channel->schema ? v.info.channel->schema->find(v.info.type_name) : nullptr;
                if (m) {
                    fields.clear();
                    for (const auto& f : m->fields) fields += (fields.empty() ? "" : ",") + f.name;
                }
                std::printf("recv %s %s seq %llu fields %s\n", v.info.topic.c_str(), v.info.type_name.c_str(),
                            static_cast<unsigned long long>(v.info.sequence), fields.c_str());
            }))
            continue;
        std::fflush(stdout);
        ++got;
    }
    return got == a.count ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
    gecko::install_signal_handlers();
    Args a;
    gecko::OptionParser parser("gecko_test_node", "a publisher or subscriber process for the integration tests");
    declare(parser, a);
    const std::string role = argc > 1 ? argv[1] : "";
    auto options = gecko::NodeOptions::from_args(argc, argv, parser, "test_" + role);
    a.role = a.positional.empty() ? "" : a.positional.front();
    if (a.positional.size() != 1 || (a.role != "pub" && a.role != "sub" && a.role != "all")) {
        std::fprintf(stderr, "usage: gecko_test_node pub|sub|all --topic T ...\n");
        return 2;
    }
    // --endpoint: what a publisher binds, what a subscriber connects to.
    (a.role == "pub" ? options.listen : options.peers) = a.endpoints;
    gecko::Node node(options);
    if (a.role == "all") return subscribe_all(node, a);
    const bool ints = a.type == "int";
    if (a.role == "pub") return ints ? publish<gecko::msgs::Int64>(node, a) : publish<gecko::msgs::String>(node, a);
    return ints ? subscribe<gecko::msgs::Int64>(node, a) : subscribe<gecko::msgs::String>(node, a);
}
