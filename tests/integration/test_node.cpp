// gecko_test_node: a publisher or subscriber process driven by the integration
// tests. It prints one line per event so tests can await them:
//   pub: "ready LOCATOR..." (the locators its node bound, ports resolved: give it
//        --endpoint tcp://127.0.0.1:* and read the port here), then "published N" when done
//   sub: "ready", "recv VALUE seq SEQ", then "stats received=.. drops=.. mismatches=.."
// Usage:
//   gecko_test_node pub --topic T [--type int|string] [--count N] [--rate HZ]
//                       [--endpoint E] [--wait-subs N] [gecko flags: --key K --core ADDR --no-discovery ...]
//   gecko_test_node sub --topic T [--type int|string] [--count N] [--timeout-ms MS] [--endpoint E]...
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
};

Args parse(int argc, char** argv) {
    Args a;
    if (argc > 1) a.role = argv[1];
    for (int i = 2; i + 1 < argc; ++i) {
        const std::string k = argv[i];
        if (k == "--topic") a.topic = argv[++i];
        else if (k == "--type") a.type = argv[++i];
        else if (k == "--count") a.count = std::atol(argv[++i]);
        else if (k == "--rate") a.rate = std::atof(argv[++i]);
        else if (k == "--timeout-ms") a.timeout_ms = std::atol(argv[++i]);
        else if (k == "--wait-subs") a.wait_subs = std::atol(argv[++i]);
        else if (k == "--endpoint") a.endpoints.push_back(argv[++i]);
    }
    return a;
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

}  // namespace

int main(int argc, char** argv) {
    gecko::install_signal_handlers();
    const Args a = parse(argc, argv);
    if (a.role != "pub" && a.role != "sub") {
        std::fprintf(stderr, "usage: gecko_test_node pub|sub --topic T ...\n");
        return 2;
    }
    auto options = gecko::NodeOptions::from_args(argc, argv, "test_" + a.role);
    // --endpoint: what a publisher binds, what a subscriber connects to.
    (a.role == "pub" ? options.listen : options.peers) = a.endpoints;
    gecko::Node node(options);
    const bool ints = a.type == "int";
    if (a.role == "pub") return ints ? publish<gecko::msgs::Int64>(node, a) : publish<gecko::msgs::String>(node, a);
    return ints ? subscribe<gecko::msgs::Int64>(node, a) : subscribe<gecko::msgs::String>(node, a);
}
