// SPDX-License-Identifier: Apache-2.0
// gecko_discovery_bench: what discovery costs.
//
//  1. Time to first message: from "before creating the subscriber" to "first
//     message received", publisher already running (1 kHz, another process)
//     and geckocore running. Gecko (Node + subscriber + discovery, multicast or
//     GECKO_CORE) side by side with a raw ZeroMQ SUB connecting to the known
//     endpoint, in the same run, rotating the order every round. Each try starts
//     at a random phase of the publisher's period. Median of N tries.
//  2. geckocore at scale: NODES nodes with PUBS publishers each (default 100 x 10 =
//     1,000 topics) in PROCS child processes: time from "go" until the core's
//     list shows every publisher and every node, and the core's peak RSS (VmHWM).
//
// Usage: gecko_discovery_bench [--tries N] [--nodes N] [--pubs N] [--procs N]
//                              [--only ttfm|core] [--markdown]
// Every wait is bounded; a stall ends the run with exit code 1.
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <zmq.hpp>

#include <gecko/gecko.hpp>
#include <gecko/net/net.hpp>
#include <gecko/options.hpp>
#include <gecko/msgs/std.hpp>


extern char** environ;

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

struct Stall : std::runtime_error {
    using std::runtime_error::runtime_error;
};

double ms_since(Clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// ---- child processes ----------------------------------------------------------

/// A child with a pipe to its stdin and one from its stdout (stderr inherited).
class Child {
public:
    Child() = default;
    Child(const std::string& path, const std::vector<std::string>& args) {
        int in[2], out[2];
        if (::pipe2(in, O_CLOEXEC) != 0 || ::pipe2(out, O_CLOEXEC) != 0) throw Stall("pipe failed");
        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_adddup2(&fa, in[0], 0);
        posix_spawn_file_actions_adddup2(&fa, out[1], 1);
        std::vector<char*> argv;
        argv.push_back(const_cast<char*>(path.c_str()));
        for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
        argv.push_back(nullptr);
        const int rc = posix_spawn(&pid_, path.c_str(), &fa, nullptr, argv.data(), environ);
        posix_spawn_file_actions_destroy(&fa);
        ::close(in[0]);
        ::close(out[1]);
        stdin_ = in[1];
        stdout_ = out[0];
        if (rc != 0) {
            pid_ = -1;
            throw Stall("cannot start " + path + ": " + std::strerror(rc));
        }
    }
    Child(const Child&) = delete;
    Child& operator=(const Child&) = delete;
    ~Child() { stop(); }

    pid_t pid() const { return pid_; }

    /// The next stdout line containing `needle`, within `timeout`; nullopt otherwise.
    std::optional<std::string> wait_for(const std::string& needle, milliseconds timeout) {
        const auto deadline = Clock::now() + timeout;
        for (;;) {
            for (auto nl = buffer_.find('\n'); nl != std::string::npos; nl = buffer_.find('\n')) {
                std::string line = buffer_.substr(0, nl);
                buffer_.erase(0, nl + 1);
                if (line.find(needle) != std::string::npos) return line;
            }
            const auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now()).count();
            if (left <= 0) return std::nullopt;
            pollfd p{stdout_, POLLIN, 0};
            if (::poll(&p, 1, static_cast<int>(left)) <= 0) continue;
            char buf[4096];
            const auto n = ::read(stdout_, buf, sizeof buf);
            if (n <= 0) return std::nullopt;  // the child is gone
            buffer_.append(buf, static_cast<std::size_t>(n));
        }
    }
    void send(const std::string& text) {
        if (stdin_ >= 0) [[maybe_unused]] auto n = ::write(stdin_, text.data(), text.size());
    }
    /// Closes stdin (children exit on EOF), then SIGTERM, then SIGKILL; bounded.
    void stop() {
        if (stdin_ >= 0) ::close(stdin_), stdin_ = -1;
        if (pid_ > 0) {
            if (!reap(milliseconds(2000))) {
                ::kill(pid_, SIGTERM);
                if (!reap(milliseconds(1000))) {
                    ::kill(pid_, SIGKILL);
                    reap(milliseconds(5000));
                }
            }
            pid_ = -1;
        }
        if (stdout_ >= 0) ::close(stdout_), stdout_ = -1;
    }

private:
    bool reap(milliseconds timeout) {
        const auto deadline = Clock::now() + timeout;
        while (Clock::now() < deadline) {
            if (::waitpid(pid_, nullptr, WNOHANG) == pid_) return true;
            std::this_thread::sleep_for(milliseconds(5));
        }
        return false;
    }
    pid_t pid_ = -1;
    int stdin_ = -1, stdout_ = -1;
    std::string buffer_;
};

std::string self_path() {
    char buf[4096];
    const auto n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
    if (n <= 0) throw Stall("cannot read /proc/self/exe");
    return std::string(buf, static_cast<std::size_t>(n));
}

int free_tcp_port() {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0)
        throw Stall("cannot find a free tcp port");
    ::close(fd);
    return ntohs(a.sin_port);
}

/// A field of /proc/PID/status in kB (VmHWM, VmRSS), or -1.
long status_kb(pid_t pid, const std::string& field) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/status");
    std::string line;
    while (std::getline(in, line))
        if (line.rfind(field + ":", 0) == 0) return std::atol(line.c_str() + field.size() + 1);
    return -1;
}

/// Unlinks stray ipc sockets on exit of a child: nothing to do, the library does it.
bool stdin_closed(int timeout_ms) {
    pollfd p{0, POLLIN, 0};
    if (::poll(&p, 1, timeout_ms) <= 0) return false;
    char c;
    return ::read(0, &c, 1) <= 0;
}

// ---- child roles ----------------------------------------------------------------

// --child-publisher KEY CORE RAW_IPC RAW_TCP: a Gecko publisher on "ttfm"
// (its node offers inproc, ipc, tcp: ipc is chosen on this host), one on "ttfm_tcp" (a node offering tcp only)
// and a raw ZeroMQ PUB bound to RAW_IPC and RAW_TCP, all at 1 kHz, until stdin closes.
int child_publisher(int argc, char** argv) {
    if (argc < 6) return 2;
    gecko::NodeOptions o;
    o.key = argv[2];
    o.name = "bench_publisher";
    o.core = argv[3];
    o.multicast_enabled = false;
    gecko::Node node(o);
    auto pub = node.publisher<gecko::msgs::Int64>("ttfm");
    // A second node offering tcp only: its subscribers reach it over tcp even on this host.
    gecko::NodeOptions tcp_only = o;
    tcp_only.name = "bench_publisher_tcp";
    tcp_only.transports = {"tcp"};
    tcp_only.tcp_address = "127.0.0.1";
    gecko::Node node_tcp(tcp_only);
    auto pub_tcp = node_tcp.publisher<gecko::msgs::Int64>("ttfm_tcp");
    zmq::context_t ctx(1);
    zmq::socket_t raw(ctx, zmq::socket_type::pub);
    raw.set(zmq::sockopt::linger, 0);
    raw.bind(argv[4]);
    raw.bind(argv[5]);
    if (!node.wait_for_core(milliseconds(5000))) {
        std::printf("no core\n");
        std::fflush(stdout);
        return 1;
    }
    std::printf("ready\n");
    std::fflush(stdout);
    gecko::msgs::Int64 m;
    auto next = Clock::now();
    for (std::int64_t i = 0; gecko::ok(); ++i) {
        m.data = i;
        pub.publish(m);
        pub_tcp.publish(m);
        (void)raw.send(zmq::const_buffer(&i, sizeof i), zmq::send_flags::dontwait);
        next += std::chrono::microseconds(1000);
        const auto wait = std::chrono::duration_cast<milliseconds>(next - Clock::now()).count();
        if (wait > 0) {
            if (stdin_closed(static_cast<int>(wait))) break;
        } else if (i % 100 == 0 && stdin_closed(0)) {
            break;
        }
    }
    return 0;
}

// --child-register KEY CORE NODES PUBS TAG: waits for a byte on stdin, then makes
// NODES nodes with PUBS publishers each (topics TAG_n<i>_p<j>), prints
// "created", and lingers until stdin closes.
int child_register(int argc, char** argv) {
    if (argc < 7) return 2;
    const std::string key = argv[2], core = argv[3], tag = argv[6];
    const int nodes = std::atoi(argv[4]), pubs = std::atoi(argv[5]);
    std::printf("loaded\n");
    std::fflush(stdout);
    char go;
    if (::read(0, &go, 1) != 1) return 1;
    std::vector<std::unique_ptr<gecko::Node>> keep;
    std::vector<gecko::Publisher<gecko::msgs::Int64>> publishers;
    for (int n = 0; n < nodes; ++n) {
        gecko::NodeOptions o;
        o.key = key;
        o.name = tag + "_node" + std::to_string(n);
        o.core = core;
        o.multicast_enabled = false;
        keep.push_back(std::make_unique<gecko::Node>(o));
        for (int p = 0; p < pubs; ++p)
            publishers.push_back(
                keep.back()->publisher<gecko::msgs::Int64>(tag + "_n" + std::to_string(n) + "_p" + std::to_string(p)));
    }
    std::printf("created\n");
    std::fflush(stdout);
    while (!stdin_closed(1000) && gecko::ok()) {
    }
    return 0;
}

// ---- geckocore ----------------------------------------------------------------------

struct CoreProcess {
    std::unique_ptr<Child> child;
    std::string address;  // host:port
};

CoreProcess start_core(const std::string& key, bool multicast) {
    CoreProcess c;
    const int port = free_tcp_port();
    c.address = "127.0.0.1:" + std::to_string(port);
    std::vector<std::string> args{"--key", key, "--listen", "tcp://" + c.address};
    if (!multicast) args.push_back("--no-multicast");
    c.child = std::make_unique<Child>(GECKOCORE_PATH, args);
    if (!c.child->wait_for("listening on", milliseconds(5000)))
        throw Stall("geckocore did not start (" + std::string(GECKOCORE_PATH) + ")");
    return c;
}

std::string unique_key(const char* what) {
    std::random_device rd;
    char buf[64];
    std::snprintf(buf, sizeof buf, "bench-%s-%d-%04x", what, static_cast<int>(::getpid()), rd() & 0xffff);
    return buf;
}

// ---- statistics and output ---------------------------------------------------------

struct Samples {
    std::vector<double> v;
    int failures = 0;
    double quantile(double q) const {
        if (v.empty()) return -1;
        auto s = v;
        std::sort(s.begin(), s.end());
        const double pos = q * static_cast<double>(s.size() - 1);
        const auto lo = static_cast<std::size_t>(pos);
        const auto hi = std::min(lo + 1, s.size() - 1);
        return s[lo] + (s[hi] - s[lo]) * (pos - static_cast<double>(lo));
    }
    double median() const { return quantile(0.5); }
};

struct Table {
    std::vector<std::string> header;
    std::vector<std::vector<std::string>> rows;
    void print(bool markdown) const {
        std::vector<std::size_t> width(header.size());
        for (std::size_t i = 0; i < header.size(); ++i) width[i] = header[i].size();
        for (const auto& r : rows)
            for (std::size_t i = 0; i < r.size(); ++i) width[i] = std::max(width[i], r[i].size());
        auto line = [&](const std::vector<std::string>& r) {
            std::string s = markdown ? "|" : "";
            for (std::size_t i = 0; i < r.size(); ++i) {
                std::string cell = r[i];
                cell.resize(width[i], ' ');
                s += markdown ? " " + cell + " |" : (i ? "  " : "") + cell;
            }
            std::printf("%s\n", s.c_str());
        };
        line(header);
        if (markdown) {
            std::vector<std::string> sep;
            for (auto w : width) sep.push_back(std::string(std::max<std::size_t>(3, w), '-'));
            line(sep);
        } else {
            std::size_t total = 0;
            for (auto w : width) total += w + 2;
            std::printf("%s\n", std::string(total - 2, '-').c_str());
        }
        for (const auto& r : rows) line(r);
    }
};

std::string fmt(double v, int decimals = 2) {
    if (v < 0) return "n/a";
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
    return buf;
}

// ---- 1. time to first message ----------------------------------------------------------

/// Raw ZeroMQ: new context + SUB + connect to a known endpoint + first message.
std::optional<double> raw_first_message(const std::string& endpoint) {
    const auto t0 = Clock::now();
    zmq::context_t ctx(1);
    zmq::socket_t sub(ctx, zmq::socket_type::sub);
    sub.set(zmq::sockopt::linger, 0);
    sub.set(zmq::sockopt::subscribe, "");
    sub.connect(endpoint);
    zmq::pollitem_t item{static_cast<void*>(sub), 0, ZMQ_POLLIN, 0};
    if (zmq::poll(&item, 1, milliseconds(5000)) <= 0) return std::nullopt;
    zmq::message_t msg;
    if (!sub.recv(msg, zmq::recv_flags::dontwait)) return std::nullopt;
    return ms_since(t0);
}

/// Gecko: new Node (its discovery finds the core) + subscriber + first message.
std::optional<double> gecko_first_message(const std::string& key, const std::string& topic, bool multicast,
                                          const std::string& core) {
    const auto t0 = Clock::now();
    gecko::NodeOptions o;
    o.key = key;
    o.name = "bench_subscriber";
    o.multicast_enabled = multicast;
    if (!multicast) o.core = core;
    gecko::Node node(o);
    auto sub = node.subscriber<gecko::msgs::Int64>(topic);
    gecko::msgs::Int64 m;
    if (!sub.receive(m, milliseconds(5000))) return std::nullopt;
    return ms_since(t0);  // the Node's teardown (bye) is not timed
}

/// Diagnostic: the Node exists and the core has welcomed it before t0; only the
/// subscriber (add -> peers -> connect -> first message) is timed.
std::optional<double> gecko_first_message_warm_node(const std::string& key, const std::string& topic) {
    gecko::NodeOptions o;
    o.key = key;
    o.name = "bench_subscriber";
    gecko::Node node(o);
    if (!node.wait_for_core(milliseconds(5000))) return std::nullopt;
    const auto t0 = Clock::now();
    auto sub = node.subscriber<gecko::msgs::Int64>(topic);
    gecko::msgs::Int64 m;
    if (!sub.receive(m, milliseconds(5000))) return std::nullopt;
    return ms_since(t0);
}

bool bench_first_message(int tries, bool markdown) {
    const std::string key = unique_key("ttfm");
    CoreProcess core = start_core(key, /*multicast=*/true);
    const std::string raw_ipc = "ipc:///tmp/gecko-dbench-" + std::to_string(::getpid()) + "-raw";
    const std::string raw_tcp = "tcp://127.0.0.1:" + std::to_string(free_tcp_port());
    Child publisher(self_path(), {"--child-publisher", key, core.address, raw_ipc, raw_tcp});
    if (!publisher.wait_for("ready", milliseconds(10000))) throw Stall("the publisher child did not start");

    struct Variant {
        std::string name;
        std::function<std::optional<double>()> run;
        Samples samples;
    };
    std::vector<Variant> variants;
    variants.push_back({"raw ZeroMQ SUB, known endpoint, ipc", [&] { return raw_first_message(raw_ipc); }, {}});
    variants.push_back({"raw ZeroMQ SUB, known endpoint, tcp", [&] { return raw_first_message(raw_tcp); }, {}});
    variants.push_back({"gecko Node + subscriber, multicast discovery (picks ipc)",
                        [&] { return gecko_first_message(key, "ttfm", true, ""); }, {}});
    variants.push_back({"gecko Node + subscriber, multicast discovery, tcp-only publisher",
                        [&] { return gecko_first_message(key, "ttfm_tcp", true, ""); }, {}});
    variants.push_back({"gecko Node + subscriber, GECKO_CORE (no multicast, picks ipc)",
                        [&] { return gecko_first_message(key, "ttfm", false, core.address); }, {}});
    variants.push_back({"(diagnostic) gecko subscriber only, Node already welcomed (picks ipc)",
                        [&] { return gecko_first_message_warm_node(key, "ttfm"); }, {}});

    for (auto& v : variants) (void)v.run();  // warm-up (page cache, first allocations): not counted
    // Each try starts at a random phase of the publisher's 1 ms period (an
    // untimed pause of 0-999 µs). Back to back, a try would start where the
    // last one's message (and teardown) left it, locked to the same phase:
    // the medians then depended on that phase, not on the stack (the raw ipc
    // row came out 0.7 or 1.7 ms from one run to the next).
    std::mt19937 rng(std::random_device{}());
    std::uniform_int_distribution<int> phase_us(0, 999);
    for (int round = 0; round < tries; ++round) {
        for (std::size_t i = 0; i < variants.size(); ++i) {
            auto& v = variants[(i + static_cast<std::size_t>(round)) % variants.size()];  // rotate the order
            std::this_thread::sleep_for(std::chrono::microseconds(phase_us(rng)));
            if (auto t = v.run()) v.samples.v.push_back(*t);
            else ++v.samples.failures;
        }
    }
    publisher.stop();
    core.child->stop();
    ::unlink(raw_ipc.substr(6).c_str());

    const double raw_ipc_median = variants[0].samples.median();
    const double raw_tcp_median = variants[1].samples.median();
    Table t;
    t.header = {"time to first message (1 kHz publisher)", "median ms", "p10 ms", "p90 ms", "max ms", "ok/tries",
                "vs raw ZeroMQ"};
    for (std::size_t i = 0; i < variants.size(); ++i) {
        const auto& s = variants[i].samples;
        const bool tcp = variants[i].name.find("tcp") != std::string::npos;
        const double base = tcp ? raw_tcp_median : raw_ipc_median;
        std::string ratio = i < 2 ? "1.00x" : (base > 0 && s.median() > 0 ? fmt(s.median() / base) + "x" : "n/a");
        t.rows.push_back({variants[i].name, fmt(s.median()), fmt(s.quantile(0.1)), fmt(s.quantile(0.9)),
                          fmt(s.quantile(1.0)), std::to_string(s.v.size()) + "/" + std::to_string(tries), ratio});
    }
    t.print(markdown);
    std::printf("\n");
    bool ok = true;
    for (const auto& v : variants) ok = ok && v.samples.failures == 0;
    return ok;
}

// ---- 2. geckocore at scale ----------------------------------------------------------------


bool bench_core_scale(int nodes, int pubs, int procs, bool markdown) {
    const std::string key = unique_key("scale");
    CoreProcess core = start_core(key, /*multicast=*/false);
    const pid_t core_pid = core.child->pid();
    const long idle_rss = status_kb(core_pid, "VmRSS");
    const long idle_hwm = status_kb(core_pid, "VmHWM");
    const long idle_anon = status_kb(core_pid, "RssAnon");

    procs = std::max(1, std::min(procs, nodes));
    std::vector<std::unique_ptr<Child>> children;
    for (int p = 0; p < procs; ++p) {
        const int share = nodes / procs + (p < nodes % procs ? 1 : 0);
        children.push_back(std::make_unique<Child>(
            self_path(), std::vector<std::string>{"--child-register", key, core.address, std::to_string(share),
                                                  std::to_string(pubs), "c" + std::to_string(p)}));
    }
    for (auto& c : children)
        if (!c->wait_for("loaded", milliseconds(10000))) throw Stall("a registering child did not start");

    gecko::net::FinderOptions q;
    q.key = key;
    q.multicast = false;
    q.core = core.address;
    const std::size_t want = static_cast<std::size_t>(nodes) * static_cast<std::size_t>(pubs);

    const auto t0 = Clock::now();
    for (auto& c : children) c->send("g");
    double created_ms = -1, registered_ms = -1;
    std::size_t seen_pubs = 0, seen_nodes = 0, seen_topics = 0;
    int queries = 0;
    std::thread creation([&] {
        bool all = true;
        for (auto& c : children) all = c->wait_for("created", milliseconds(60000)).has_value() && all;
        if (all) created_ms = ms_since(t0);
    });
    while (ms_since(t0) < 60000) {
        try {
            const auto r = gecko::query_graph(q, milliseconds(2000));
            ++queries;
            seen_pubs = 0;
            seen_topics = r.topics.size();
            for (const auto& topic : r.topics) seen_pubs += topic.producers.size();
            seen_nodes = r.nodes.size();
            if (seen_pubs >= want && seen_nodes >= static_cast<std::size_t>(nodes)) {
                registered_ms = ms_since(t0);
                break;
            }
        } catch (const std::exception& e) {
            std::fprintf(stderr, "query_core: %s\n", e.what());
        }
        std::this_thread::sleep_for(milliseconds(20));
    }
    creation.join();
    const long rss_registered = status_kb(core_pid, "VmRSS");
    const long anon_registered = status_kb(core_pid, "RssAnon");
    const long file_registered = status_kb(core_pid, "RssFile");
    // Steady state: heartbeats and stats reports (every 3 s) for a few seconds.
    std::this_thread::sleep_for(milliseconds(3500));
    const long rss_steady = status_kb(core_pid, "VmRSS");
    const long hwm = status_kb(core_pid, "VmHWM");
    const int connections = gecko::net::established_connections(
        static_cast<std::uint16_t>(std::stoul(core.address.substr(core.address.rfind(':') + 1))));
    for (auto& c : children) c->stop();
    core.child->stop();

    Table t;
    t.header = {"geckocore with " + std::to_string(want) + " topics from " + std::to_string(nodes) + " nodes (" +
                    std::to_string(procs) + " processes)",
                "value"};
    t.rows.push_back({"nodes created (all processes), ms", fmt(created_ms, 1)});
    t.rows.push_back({"all registered in the core's list, ms", fmt(registered_ms, 1)});
    t.rows.push_back({"seen in the list: nodes / topics / publishers",
                      std::to_string(seen_nodes) + " / " + std::to_string(seen_topics) + " / " +
                          std::to_string(seen_pubs)});
    t.rows.push_back({"list queries while waiting", std::to_string(queries)});
    t.rows.push_back({"connections the core holds (a process's nodes share one per 16)", std::to_string(connections)});
    t.rows.push_back({"geckocore RSS idle, MB", fmt(idle_rss / 1024.0)});
    t.rows.push_back({"geckocore RSS all registered, MB", fmt(rss_registered / 1024.0)});
    t.rows.push_back({"  of which anonymous (heap, stacks) / file-backed (libraries), MB",
                      fmt(anon_registered / 1024.0) + " / " + fmt(file_registered / 1024.0) + " (idle anonymous " +
                          fmt(idle_anon / 1024.0) + ")"});
    t.rows.push_back({"geckocore RSS after 3.5 s steady state, MB", fmt(rss_steady / 1024.0)});
    t.rows.push_back({"geckocore peak RSS (VmHWM), MB", fmt(hwm / 1024.0) + " (idle peak " + fmt(idle_hwm / 1024.0) + ")"});
    t.print(markdown);
    std::printf("\n");
    return registered_ms >= 0;
}


}  // namespace

int main(int argc, char** argv) {
    if (argc > 1 && std::string(argv[1]) == "--child-publisher") return child_publisher(argc, argv);
    if (argc > 1 && std::string(argv[1]) == "--child-register") return child_register(argc, argv);
    ::signal(SIGPIPE, SIG_IGN);

    int tries = 40, nodes = 100, pubs = 10, procs = 4;
    bool markdown = false;
    std::string only;
    gecko::OptionParser args("gecko_discovery_bench",
                             "time to a first message (a new subscriber: node, discovery and link included) next to "
                             "a raw SUB handed the endpoint, on ipc and tcp; and geckocore at scale (nodes x "
                             "publishers: registration time, RSS)");
    args.integer("--tries", tries, 1, 1000, "N", "first-message runs per transport (default 40)");
    args.integer("--nodes", nodes, 1, 10000, "N", "nodes registered with the core (default 100)");
    args.integer("--pubs", pubs, 1, 1000, "N", "publishers per node, each on its own topic (default 10)");
    args.integer("--procs", procs, 1, 64, "N", "processes the nodes are spread over (default 4)");
    args.text("--only", only, "ttfm|core", "one section", [](const std::string& v) {
        return v == "ttfm" || v == "core" ? "" : "ttfm or core";
    });
    args.flag("--markdown", markdown, "print the tables as Markdown");
    args.parse_or_exit(argc, argv);
    // Keep the nodes' info lines out of the table; warnings still show.
    if (!std::getenv("GECKO_LOG")) ::setenv("GECKO_LOG", "warn", 1);

    bool ok = true;
    try {
        if (only.empty() || only == "ttfm") ok = bench_first_message(tries, markdown) && ok;
        if (only.empty() || only == "core") ok = bench_core_scale(nodes, pubs, procs, markdown) && ok;
    } catch (const Stall& e) {
        std::fprintf(stderr, "gecko_discovery_bench: %s\n", e.what());
        return 1;
    }
    return ok ? 0 : 1;
}
