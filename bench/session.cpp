// The node session at scale and under a slow reader:
//
//  census    a node with 50 publishers and 50 subscribers talking to one peer
//            node (another process): its threads, listening sockets and
//            connections, counted from /proc; and a subscriber process with
//            20 topics from one peer node: its connections.
//  freshness a slow subscriber (a 100 ms callback) behind a 10 kHz publisher
//            in another process, over ipc and tcp: how old the data it is
//            handed is, and whether every message sent is delivered or counted.

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gecko/gecko.hpp>
#include <gecko/msgs/std.hpp>

#include "common.hpp"

namespace bench {
namespace {

constexpr milliseconds kSetup{10000};

// ---- counting from /proc ----------------------------------------------------------------------

std::set<unsigned long> socket_inodes(pid_t pid) {
    std::set<unsigned long> out;
    const std::string dir = "/proc/" + std::to_string(pid) + "/fd";
    DIR* d = ::opendir(dir.c_str());
    if (!d) return out;
    while (const dirent* e = ::readdir(d)) {
        char target[64] = {};
        const std::string link = dir + "/" + e->d_name;
        const auto n = ::readlink(link.c_str(), target, sizeof target - 1);
        unsigned long inode = 0;
        if (n > 0 && std::sscanf(target, "socket:[%lu]", &inode) == 1) out.insert(inode);
    }
    ::closedir(d);
    return out;
}

struct SocketCensus {
    int tcp_listening = 0;
    int tcp_connected = 0;
    int unix_listening = 0;
    int unix_connected = 0;
    int threads = 0;
};

SocketCensus census_of(pid_t pid) {
    SocketCensus c;
    const auto mine = socket_inodes(pid);
    for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
        std::ifstream in(table);
        std::string line;
        std::getline(in, line);  // header
        while (std::getline(in, line)) {
            std::istringstream f(line);
            std::string sl, local, remote, state, queues, timer, retr, uid, timeout;
            unsigned long inode = 0;
            f >> sl >> local >> remote >> state >> queues >> timer >> retr >> uid >> timeout >> inode;
            if (!mine.count(inode)) continue;
            if (state == "0A") ++c.tcp_listening;
            if (state == "01") ++c.tcp_connected;
        }
    }
    {
        std::ifstream in("/proc/net/unix");
        std::string line;
        std::getline(in, line);
        while (std::getline(in, line)) {
            std::istringstream f(line);
            std::string num, refs, proto, flags, type, st;
            unsigned long inode = 0;
            f >> num >> refs >> proto >> flags >> type >> st >> inode;
            if (!mine.count(inode)) continue;
            if (std::stoul(flags, nullptr, 16) & 0x10000) ++c.unix_listening;  // __SO_ACCEPTCON
            else if (st == "03") ++c.unix_connected;
        }
    }
    const std::string tasks = "/proc/" + std::to_string(pid) + "/task";
    if (DIR* d = ::opendir(tasks.c_str())) {
        while (const dirent* e = ::readdir(d))
            if (e->d_name[0] != '.') ++c.threads;
        ::closedir(d);
    }
    return c;
}

gecko::NodeOptions bench_node(const std::string& name, const std::string& transport) {
    gecko::NodeOptions o;
    o.key = "gecko-bench";
    o.name = name;
    o.discovery = false;
    o.transports = {};
    o.listen = {transport == "tcp" ? "tcp://127.0.0.1:*" : make_endpoint(Transport::ipc, name)};
    return o;
}

// The locator a node bound, as a port number (tcp) travels over the pipe.
std::uint64_t tcp_port_of(const gecko::Node& node) {
    for (const auto& l : node.locators())
        if (l.rfind("tcp://", 0) == 0) return std::stoull(l.substr(l.rfind(':') + 1));
    throw Stall("census: node has no tcp locator");
}

// ---- census -----------------------------------------------------------------------------------

// The peer process: `pubs` publishers on topics out/i, `subs` subscribers on in/i.
int census_peer(Child& self, int pubs, int subs) {
    gecko::Node node(bench_node("census-peer", "tcp"));
    std::vector<gecko::Publisher<gecko::msgs::Int64>> out;
    std::vector<gecko::Subscriber<gecko::msgs::Int64>> in;
    for (int i = 0; i < pubs; ++i) out.push_back(node.publisher<gecko::msgs::Int64>("out/" + std::to_string(i)));
    for (int i = 0; i < subs; ++i) in.push_back(node.subscriber<gecko::msgs::Int64>("in/" + std::to_string(i)));
    PipeMsg m{kReady};
    m.a = tcp_port_of(node);
    self.send(m);
    if (!self.receive(m, kSetup)) throw Stall("census peer: no locator from the parent");
    if (m.a != 0) node.connect("tcp://127.0.0.1:" + std::to_string(m.a));
    for (auto& p : out)
        if (!p.wait_for_subscribers(1, kSetup)) throw Stall("census peer: a publisher got no subscriber");
    for (auto& p : out) p.publish(gecko::msgs::Int64{1});
    self.send(PipeMsg{kResult});
    if (!self.receive(m, kSetup)) throw Stall("census peer: the parent did not finish");
    return 0;
}

struct CensusRow {
    std::string what;
    SocketCensus c;
    std::string per_entity;  // what one socket per publisher/subscriber would have taken
};

CensusRow census_run(const std::string& what, int pubs, int subs, int peer_pubs, int peer_subs) {
    Child child([&](Child& self) { return census_peer(self, peer_pubs, peer_subs); });
    PipeMsg m;
    if (!child.receive(m, kSetup) || m.kind != kReady) throw Stall("census: the peer did not start");
    const auto peer_port = m.a;
    CensusRow row;
    {
        gecko::Node node(bench_node("census", "tcp"));
        std::vector<gecko::Publisher<gecko::msgs::Int64>> out;
        std::vector<gecko::Subscriber<gecko::msgs::Int64>> in;
        for (int i = 0; i < pubs; ++i) out.push_back(node.publisher<gecko::msgs::Int64>("in/" + std::to_string(i)));
        for (int i = 0; i < subs; ++i) in.push_back(node.subscriber<gecko::msgs::Int64>("out/" + std::to_string(i)));
        node.connect("tcp://127.0.0.1:" + std::to_string(peer_port));
        PipeMsg back{kProbe};
        back.a = pubs > 0 ? tcp_port_of(node) : 0;  // the peer links back only if it subscribes to us
        child.send(back);
        for (auto& p : out)
            if (!p.wait_for_subscribers(1, kSetup)) throw Stall("census: a publisher got no subscriber");
        if (!child.receive(m, kSetup) || m.kind != kResult) throw Stall("census: the peer did not finish its setup");
        for (auto& s : in)
            if (!s.receive(kSetup)) throw Stall("census: a subscriber got nothing from the peer");
        row.what = what;
        row.c = census_of(::getpid());
        row.per_entity = std::to_string(pubs) + " listening, " + std::to_string(pubs + subs) + " connections";
        child.send(PipeMsg{kDone});
    }
    child.join(kSetup, "census peer");
    return row;
}

void run_census(const Options& options) {
    std::vector<CensusRow> rows;
    rows.push_back(census_run("node with 50 publishers + 50 subscribers, one peer node", 50, 50, 50, 50));
    rows.push_back(census_run("subscriber of 20 topics of one peer node", 0, 20, 20, 0));
    Table t;
    t.title = "Node session census (tcp loopback, counted from /proc of the measured process)";
    t.header = {"process", "threads", "tcp listening", "tcp connections", "ipc sockets", "one socket per entity would be"};
    t.right = {false, true, true, true, true, false};
    for (const auto& r : rows) {
        t.rows.push_back({r.what, std::to_string(r.c.threads), std::to_string(r.c.tcp_listening),
                          std::to_string(r.c.tcp_connected), std::to_string(r.c.unix_listening + r.c.unix_connected),
                          r.per_entity});
    }
    t.notes.push_back(
        "threads: the application's, the node's reactor and ZeroMQ's I/O and reaper threads. tcp listening: the "
        "node's one out-port. tcp connections: one per direction per pair of nodes that talk (this node's in-port "
        "to the peer's out-port, and the peer's to this one when it subscribes here), whatever the number of "
        "topics; ZeroMQ's internal signalling uses no sockets of these kinds. The last column is what Gecko's first "
        "runtime used: a bound port per publisher and a connection per subscriber and publisher pair.");
    t.print(options.markdown);
}

// ---- freshness --------------------------------------------------------------------------------

struct FreshRow {
    std::string transport;
    std::size_t depth = 0;
    std::vector<double> ages_ms;
    double period_us = 0;
    gecko::SubscriberStats stats;
    std::uint64_t sent = 0;
};

FreshRow fresh_run(const std::string& transport, std::size_t depth, long count) {
    const std::string ipc = transport == "ipc" ? make_endpoint(Transport::ipc, "fresh") : "";
    const EndpointCleanup cleanup(ipc.empty() ? std::vector<std::string>{} : std::vector<std::string>{ipc});
    Child child([&](Child& self) {
        gecko::Node node([&] {
            auto o = bench_node("fresh-pub", transport);
            if (!ipc.empty()) o.listen = {ipc};
            return o;
        }());
        auto pub = node.publisher<gecko::msgs::Int64>("fresh");
        PipeMsg m{kReady};
        if (transport == "tcp") m.a = tcp_port_of(node);
        self.send(m);
        if (!pub.wait_for_subscribers(1, kSetup)) throw Stall("freshness: no subscriber");
        gecko::Rate rate(10000.0);
        for (long i = 1; i <= count; ++i) {
            pub.publish(gecko::msgs::Int64{i});
            rate.sleep();
        }
        self.send(PipeMsg{kDone});
        if (!self.receive(m, milliseconds(20000))) throw Stall("freshness: the subscriber did not finish");
        return 0;
    });
    PipeMsg m;
    if (!child.receive(m, kSetup) || m.kind != kReady) throw Stall("freshness: the publisher did not start");
    FreshRow row;
    row.transport = transport;
    row.depth = depth;
    {
        gecko::NodeOptions o;
        o.key = "gecko-bench";
        o.name = "fresh-sub";
        o.discovery = false;
        o.transports = {};
        o.peers = {transport == "tcp" ? "tcp://127.0.0.1:" + std::to_string(m.a) : ipc};
        gecko::Node node(o);
        std::mutex mutex;
        std::vector<std::pair<std::int64_t, std::int64_t>> calls;  // (when, age)
        std::uint64_t first_seq = 0, last_seq = 0;
        std::int64_t first_send = 0, last_send = 0;
        gecko::SubscriberOptions so;
        so.depth = depth;
        auto sub = node.subscriber<gecko::msgs::Int64>(
            "fresh",
            [&](const gecko::msgs::Int64&, const gecko::MessageInfo& info) {
                {
                    std::lock_guard<std::mutex> lock(mutex);
                    const auto now = gecko::now_ns();
                    calls.emplace_back(now, now - info.send_time_ns);
                    if (first_seq == 0) first_seq = info.sequence, first_send = info.send_time_ns;
                    last_seq = info.sequence;
                    last_send = info.send_time_ns;
                }
                std::this_thread::sleep_for(milliseconds(100));  // the slow application
            },
            so);
        node.spin_in_background();
        if (!child.receive(m, milliseconds(count / 5 + 20000)) || m.kind != kDone) throw Stall("freshness: publisher stalled");
        const auto stopped = gecko::now_ns();
        const auto deadline = Clock::now() + milliseconds(10000);
        while (Clock::now() < deadline) {
            const auto s = sub.stats();
            std::lock_guard<std::mutex> lock(mutex);
            if (s.delivered + s.overwritten + s.drops >= static_cast<std::uint64_t>(count)) break;
            std::this_thread::sleep_for(milliseconds(20));
        }
        node.stop_spinning();
        row.stats = sub.stats();
        std::lock_guard<std::mutex> lock(mutex);
        for (std::size_t i = 1; i < calls.size(); ++i)  // the first waited for the link to settle
            if (calls[i].first < stopped) row.ages_ms.push_back(calls[i].second / 1e6);
        row.sent = static_cast<std::uint64_t>(count);  // all after the publisher saw us subscribed
        row.period_us = last_seq > first_seq ? double(last_send - first_send) / double(last_seq - first_seq) / 1e3 : 0;
        child.send(PipeMsg{kDone});
    }
    child.join(kSetup, "freshness publisher");
    return row;
}

void run_freshness(const Options& options) {
    const long count = options.quick ? 10000 : 30000;  // 1 s / 3 s at 10 kHz
    Table t;
    t.title = "Freshness: a 100 ms callback behind a 10 kHz publisher (another process)";
    t.header = {"transport", "depth", "callbacks", "age p50 (ms)", "age max (ms)", "bound (ms)", "sent", "delivered",
                "overwritten", "drops", "accounted", "target"};
    t.right = {false, true, true, true, true, true, true, true, true, true, false, false};
    for (const std::string transport : {"ipc", "tcp"}) {
        if ((transport == "ipc" && !options.ipc) || (transport == "tcp" && !options.tcp)) continue;
        for (const std::size_t depth : {std::size_t{1}, std::size_t{16}}) {
            FreshRow r = fresh_run(transport, depth, count);
            auto ages = r.ages_ms;
            const double p50 = ages.empty() ? NAN : percentile(ages, 50);
            const double max = ages.empty() ? NAN : *std::max_element(ages.begin(), ages.end());
            const double bound = double(depth) * r.period_us / 1e3 + 50.0;
            const auto& s = r.stats;
            const bool accounted = s.delivered + s.overwritten + s.drops == r.sent;
            t.rows.push_back({transport, std::to_string(depth), std::to_string(ages.size()), fmt(p50, 2), fmt(max, 2),
                              fmt(bound, 1), std::to_string(r.sent), std::to_string(s.delivered),
                              std::to_string(s.overwritten), std::to_string(s.drops), accounted ? "yes" : "NO",
                              (accounted && max <= bound) ? "ok" : "MISS"});
        }
    }
    t.notes.push_back(
        "age: when the callback is handed a message minus when it was sent, for the callbacks made while the "
        "publisher was still sending (after it stops, the last N wait their turn and age by design); the first "
        "callback, which waited for the link, is left out. bound: depth x the measured publish period + 50 ms. "
        "accounted: sent (the publisher waits for the subscriber first) = delivered + overwritten + drops.");
    t.print(options.markdown);
}

}  // namespace

void run_session(const Options& options) {
    run_census(options);
    run_freshness(options);
}

}  // namespace bench
