// gecko_key_wide_bench: what a key-wide subscription (Node::subscribe_all)
// costs next to ordinary subscribers, side by side in one run.
//
// A publisher process sends 64 B messages as fast as it can for a while; a
// subscriber process receives them:
//   1 topic:    A = one ordinary subscriber of it      B = one key-wide subscriber of every topic
//   100 topics: A = 100 ordinary subscribers, 1 each   B = one key-wide subscriber of every topic
// over shared memory (the two processes share a host) and over tcp, with a
// geckocore of their own on loopback naming the topics (the key-wide
// subscriber's path names each message by the directory, as in use).
// Runs alternate A, B, A, B ... (--reps of each), every run with fresh
// processes; the table gives each one's median and the ratio B / A, for what
// the publisher sent per second and for what the subscriber delivered.
//
//   gecko_key_wide_bench [--reps N] [--seconds S] [--markdown]
//                        [--transport shm|tcp] [--topics 1|100] [--only ordinary|key-wide]   (a part, for a profiler)

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <gecko/gecko.hpp>

#include "../common.hpp"

extern char** environ;

namespace {

using namespace std::chrono_literals;
using bench::Child;
using bench::Clock;
using bench::PipeMsg;

constexpr std::size_t kPayload = 64;

struct Run {
    std::string key, core, transport;
    int topics = 1;
    bool key_wide = false;
    double seconds = 1.0;
};

std::string topic_name(int i) { return "bench/t" + std::to_string(i); }

gecko::NodeOptions node_options(const Run& r, const std::string& name) {
    gecko::NodeOptions o;
    o.key = r.key;
    o.name = name;
    o.core = r.core;
    o.multicast_enabled = false;
    o.transports = r.transport == "tcp" ? std::vector<std::string>{"tcp"} : std::vector<std::string>{"inproc", "shm", "ipc"};
    o.shared_memory_size = 64u << 20;
    return o;
}

// Sends round robin over the run's topics for its seconds, once every
// topic has its subscriber: a = sent, b = ns it took.
int publisher(const Run& r, Child& self) {
    gecko::Node node(node_options(r, "bench-pub"));
    std::vector<gecko::RawPublisher> pubs;
    for (int i = 0; i < r.topics; ++i) pubs.push_back(node.raw_publisher(topic_name(i), "bench.Blob"));
    for (auto& p : pubs)
        if (!p.wait_for_subscribers(1, 30s)) throw bench::Stall("the publisher saw no subscriber within 30 s");
    self.send(PipeMsg{bench::kReady});
    std::uint8_t payload[kPayload] = {};
    std::uint64_t sent = 0;
    const auto start = Clock::now();
    const auto end = start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(r.seconds));
    while (Clock::now() < end)
        for (int burst = 0; burst < 64; ++burst) pubs[sent++ % pubs.size()].publish(payload, kPayload);
    const auto took = Clock::now() - start;
    PipeMsg done{bench::kResult};
    done.a = sent;
    done.b = static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(took).count());
    self.send(done);
    PipeMsg stop;
    self.receive(stop, 60s);  // linger until told: nothing in flight is cut off
    return 0;
}

// Receives (callbacks run by spin_once, for one subscriber as for 100) until
// told the publisher is done and nothing came for 200 ms: a = delivered,
// b = ns from the first to the last.
int subscriber(const Run& r, Child& self) {
    gecko::Node node(node_options(r, r.key_wide ? "bench-recorder" : "bench-subscribers"));
    gecko::SubscriberOptions so;
    so.depth = 1u << 17;  // what is measured is the receive path, not the queue's overwriting
    std::uint64_t delivered = 0;
    std::int64_t first = 0, last = 0;
    bool misnamed = false;
    auto count = [&](const gecko::RawView& v) {
        misnamed = misnamed || v.size != kPayload || (r.key_wide && v.info.topic.rfind("bench/t", 0) != 0);
        ++delivered;
        last = bench::mono_ns();
        if (first == 0) first = last;
    };
    std::vector<gecko::RawSubscriber> subs;
    if (r.key_wide)
        subs.push_back(node.subscribe_all(gecko::TopicFilter::all(), count, so));
    else
        for (int i = 0; i < r.topics; ++i) subs.push_back(node.raw_subscriber(topic_name(i), so, count));
    self.send(PipeMsg{bench::kReady});
    bool done = false;
    auto quiet_since = Clock::now();
    const auto hard_deadline = Clock::now() + std::chrono::seconds(static_cast<long>(r.seconds) + 60);
    while (Clock::now() < hard_deadline) {
        if (node.spin_once(10ms) > 0) quiet_since = Clock::now();
        PipeMsg m;
        if (!done && self.receive(m, 0ms) && m.kind == bench::kDone) done = true;
        if (done && Clock::now() - quiet_since > 200ms) break;
    }
    if (misnamed) throw bench::Stall("a message of another size, or not named by its topic");
    PipeMsg result{bench::kResult};
    result.a = delivered;
    result.b = static_cast<std::uint64_t>(last - first);
    self.send(result);
    return 0;
}

struct Figures {
    double sent_per_s = 0, delivered_per_s = 0;
};

Figures once(const Run& r) {
    Child sub([&](Child& self) { return subscriber(r, self); });
    PipeMsg m;
    if (!sub.receive(m, 30s) || m.kind != bench::kReady) throw bench::Stall("the subscriber did not start");
    Child pub([&](Child& self) { return publisher(r, self); });
    if (!pub.receive(m, 60s) || m.kind != bench::kReady) throw bench::Stall("the publisher did not start");
    if (!pub.receive(m, std::chrono::seconds(static_cast<long>(r.seconds) + 60)) || m.kind != bench::kResult)
        throw bench::Stall("the publisher did not finish");
    Figures f;
    f.sent_per_s = static_cast<double>(m.a) / (static_cast<double>(m.b) / 1e9);
    sub.send(PipeMsg{bench::kDone});
    if (!sub.receive(m, 120s) || m.kind != bench::kResult) throw bench::Stall("the subscriber did not finish");
    f.delivered_per_s = m.b > 0 ? static_cast<double>(m.a) / (static_cast<double>(m.b) / 1e9) : 0;
    pub.send(PipeMsg{bench::kDone});
    pub.join(30s, "publisher");
    sub.join(30s, "subscriber");
    return f;
}

// A geckocore of the benchmark's own (unicast on loopback, no door).
struct Core {
    pid_t pid = -1;
    std::string address;
    explicit Core(const std::string& key) {
        const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        socklen_t len = sizeof a;
        ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
        ::close(fd);
        const std::string port = std::to_string(ntohs(a.sin_port));
        address = "127.0.0.1:" + port;
        std::vector<std::string> args = {GECKOCORE_PATH, "--key", key, "--no-multicast", "--door", "0",
                                         "--listen", "tcp://127.0.0.1:" + port, "--lease", "1000"};
        std::vector<char*> argv;
        for (auto& s : args) argv.push_back(s.data());
        argv.push_back(nullptr);
        if (posix_spawn(&pid, GECKOCORE_PATH, nullptr, nullptr, argv.data(), environ) != 0)
            throw bench::Stall(std::string("cannot start ") + GECKOCORE_PATH);
    }
    ~Core() {
        ::kill(pid, SIGTERM);
        ::waitpid(pid, nullptr, 0);
    }
};

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
    int reps = 5;
    double seconds = 1.0;
    bool markdown = false;
    std::vector<std::string> transports{"shm", "tcp"};
    std::vector<int> topic_counts{1, 100};
    std::vector<bool> modes{false, true};
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        const bool value = i + 1 < argc;
        if (a == "--reps" && value) reps = std::max(1, std::atoi(argv[++i]));
        else if (a == "--seconds" && value) seconds = std::max(0.1, std::atof(argv[++i]));
        else if (a == "--markdown") markdown = true;
        else if (a == "--transport" && value) transports = {argv[++i]};
        else if (a == "--topics" && value) topic_counts = {std::max(1, std::atoi(argv[++i]))};
        else if (a == "--only" && value) modes = {std::string(argv[++i]) == "key-wide"};
        else {
            std::fprintf(stderr, "usage: gecko_key_wide_bench [--reps N] [--seconds S] [--markdown] [--transport shm|tcp] "
                                 "[--topics N] [--only ordinary|key-wide]\n");
            return a == "--help" || a == "-h" ? 0 : 2;
        }
    }
    ::signal(SIGPIPE, SIG_IGN);
    const std::string key = "kwbench-" + std::to_string(::getpid());
    try {
        Core core(key);
        bench::Table table;
        table.title = "A key-wide subscriber next to ordinary ones: 64 B messages, median of " + std::to_string(reps) +
                      " alternating runs of " + bench::fmt(seconds, 1) + " s each";
        table.header = {"link", "topics", "A: ordinary sent/s", "B: key-wide sent/s", "B/A sent",
                        "A: delivered/s", "B: delivered/s", "B/A delivered"};
        table.right = {false, true, true, true, true, true, true, true};
        for (const std::string& transport : transports) {
            for (const int topics : topic_counts) {
                std::vector<double> sent[2], delivered[2];
                for (int rep = 0; rep < reps; ++rep)
                    for (const bool key_wide : modes) {
                        Run r{key, core.address, transport, topics, key_wide, seconds};
                        const Figures f = once(r);
                        sent[key_wide].push_back(f.sent_per_s);
                        delivered[key_wide].push_back(f.delivered_per_s);
                        std::fprintf(stderr, "  %s %3d topics %-8s sent %s/s delivered %s/s\n", transport.c_str(), topics,
                                     key_wide ? "key-wide" : "ordinary", bench::fmt_count(f.sent_per_s).c_str(),
                                     bench::fmt_count(f.delivered_per_s).c_str());
                    }
                if (modes.size() == 1) continue;  // one side alone: its runs are above
                const double sa = median(sent[0]), sb = median(sent[1]);
                const double da = median(delivered[0]), db = median(delivered[1]);
                table.rows.push_back({transport, std::to_string(topics), bench::fmt_count(sa), bench::fmt_count(sb),
                                      bench::fmt(sb / sa, 2), bench::fmt_count(da), bench::fmt_count(db), bench::fmt(db / da, 2)});
            }
        }
        table.notes = {"measured on " + bench::describe_machine(),
                       "sent/s: what the publisher process sent (the cost to the publisher); delivered/s: what the "
                       "subscriber process handed to its application, first to last message",
                       "A with 100 topics is 100 ordinary subscribers in one node (one link to the publisher's node, "
                       "as for B)"};
        table.print(markdown);
    } catch (const std::exception& e) {
        bench::kill_children();
        std::fprintf(stderr, "gecko_key_wide_bench: %s\n", e.what());
        return 1;
    }
    return 0;
}
