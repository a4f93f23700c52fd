// SPDX-License-Identifier: Apache-2.0
// gecko_bridge_bench: gecko-bridge next to a minimal Beast forwarder of the
// same bytes (forwarder.cpp), in one run, against one geckocore:
//   latency     1 kHz, ~200 B: what the server adds (client receive minus its
//               Gecko subscriber's receive), p50/p99, and publish -> client
//   throughput  small messages published flat out: messages/s one client gets
//   fairness    1080p rgb8 images (6 MB) at 30 Hz and a 1 kHz IMU to one
//               client: the IMU's latency beside the images
//   fan-out     10 clients, each a 1 kHz IMU and 640x480 images at 30 Hz:
//               server CPU and memory
// Each row is the median of --reps runs, the servers alternating run by run.
// Run:  ./build/bin/gecko_bridge_bench [--reps N] [--quick] [--markdown]   (docs/BENCHMARKS.md)
#include "children.hpp"
#include "client.hpp"
#include "forwarder.hpp"

#include <gecko/gecko.hpp>
#include <gecko/msgs/sensors.hpp>

#include <boost/asio/executor_work_guard.hpp>

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <thread>

namespace {

using namespace bench_bridge;
using namespace std::chrono_literals;

struct Setup {
    std::string key, core, ipc_dir;
    std::map<std::string, std::string> env;
    gecko::NodeOptions node(const std::string& name) const {
        gecko::NodeOptions o;
        o.key = key;
        o.name = name;
        o.core = core;
        o.multicast_enabled = false;
        o.ipc_directory = ipc_dir;
        return o;
    }
};

[[noreturn]] void fail(const std::string& why);

double percentile(std::vector<double> v, double p) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    return v[std::min(v.size() - 1, static_cast<std::size_t>(p * static_cast<double>(v.size())))];
}

// Publishes on a thread until stopped: an IMU padded to ~200 B, or rgb8
// images; `burst` messages every 1/hz s (hz 0: flat out).
struct Load {
    std::string topic;
    double hz = 0;
    int burst = 1;
    unsigned width = 0, height = 0;  ///< images when not 0
};

class Publishing {
public:
    Publishing(gecko::Node& node, Load load)
        : thread_([this, &node, load] {
              std::unique_ptr<gecko::Rate> rate;
              if (load.hz > 0) rate = std::make_unique<gecko::Rate>(load.hz);
              if (load.width) {
                  auto pub = node.publisher<gecko::msgs::Image>(load.topic);
                  gecko::msgs::Image m;
                  m.frame_id = "camera";
                  m.width = load.width;
                  m.height = load.height;
                  m.encoding = "rgb8";
                  m.step = load.width * 3;
                  m.data.assign(std::size_t(load.width) * load.height * 3, 7);
                  while (!stop_.load()) {
                      m.stamp_ns = gecko::now_ns();
                      pub.publish(m);
                      ++sent_;
                      if (rate) rate->sleep();
                  }
              } else {
                  auto pub = node.publisher<gecko::msgs::Imu>(load.topic);
                  gecko::msgs::Imu m;
                  m.frame_id = std::string(90, 'f');  // the encoded reading is ~200 B
                  while (!stop_.load()) {
                      for (int i = 0; i < load.burst; ++i) {
                          m.stamp_ns = gecko::now_ns();
                          m.accel.x += 0.001;
                          pub.publish(m);
                          ++sent_;
                      }
                      if (rate) rate->sleep();
                  }
              }
          }) {}
    ~Publishing() {
        stop_.store(true);
        thread_.join();
    }
    std::uint64_t sent() const { return sent_.load(); }

private:
    std::atomic<bool> stop_{false};
    std::atomic<std::uint64_t> sent_{0};
    std::thread thread_;
};

// Clients on an io thread of their own, for one measurement.
class Clients {
public:
    Clients(int port, WsClient::Server server, const std::vector<Want>& wants, int count = 1) : guard_(io_.get_executor()) {
        for (int i = 0; i < count; ++i) clients_.push_back(std::make_unique<WsClient>(io_, port, server, wants));
        for (auto& c : clients_) c->start();
        thread_ = std::thread([this] { io_.run(); });
        const auto deadline = std::chrono::steady_clock::now() + 20s;
        for (auto& c : clients_)
            while (!c->subscribed()) {
                if (!c->error().empty()) fail("client: " + c->error());
                if (std::chrono::steady_clock::now() > deadline) fail("a client was not subscribed within 20 s");
                std::this_thread::sleep_for(10ms);
            }
    }
    ~Clients() {
        io_.stop();
        thread_.join();
    }
    WsClient& operator[](std::size_t i) { return *clients_[i]; }
    std::size_t size() const { return clients_.size(); }
    void record(bool on) {
        for (auto& c : clients_) c->record(on);
    }

private:
    boost::asio::io_context io_;
    boost::asio::executor_work_guard<boost::asio::io_context::executor_type> guard_;
    std::vector<std::unique_ptr<WsClient>> clients_;
    std::thread thread_;
};

struct Options {
    bool quick = false, markdown = false;
    int reps = 5;
    std::chrono::milliseconds window{3000};
};

// Every child, so that a failure ends them before the benchmark exits.
std::vector<Child*> children;

[[noreturn]] void fail(const std::string& why) {
    std::fprintf(stderr, "gecko_bridge_bench: %s\n", why.c_str());
    for (auto* c : children) c->stop();
    // Not exit(): the node, the publishers and the clients' threads are still
    // running, and static destructors would wait on them.
    std::_Exit(2);
}

void heading(const Options& o, const std::string& title, const std::vector<std::string>& columns) {
    const std::string runs = o.reps > 1 ? " (median of " + std::to_string(o.reps) + " alternating runs)" : "";
    if (o.markdown) {
        std::printf("\n### %s%s\n\n|", title.c_str(), runs.c_str());
        for (const auto& c : columns) std::printf(" %s |", c.c_str());
        std::printf("\n|");
        for (std::size_t i = 0; i < columns.size(); ++i) std::printf(i ? " ---: |" : " --- |");
        std::printf("\n");
    } else {
        std::printf("\n== %s%s\n", title.c_str(), runs.c_str());
        for (std::size_t i = 0; i < columns.size(); ++i) std::printf(i ? "%-22s" : "%-34s", columns[i].c_str());
        std::printf("\n");
    }
    std::fflush(stdout);
}

void row(const Options& o, const std::vector<std::string>& cells) {
    if (o.markdown) {
        std::printf("|");
        for (const auto& c : cells) std::printf(" %s |", c.c_str());
    } else {
        for (std::size_t i = 0; i < cells.size(); ++i) std::printf(i ? "%-22s" : "%-34s", cells[i].c_str());
    }
    std::printf("\n");
    std::fflush(stdout);
}

std::string us(double ns) {
    char b[32];
    std::snprintf(b, sizeof b, "%.0f µs", ns / 1000);
    return b;
}
std::string num(double v, const char* unit = "") {
    char b[32];
    if (v >= 10000) std::snprintf(b, sizeof b, "%.1f k%s", v / 1000, unit);
    else std::snprintf(b, sizeof b, "%.0f%s", v, unit);
    return b;
}
std::string mib(double bytes) {
    char b[32];
    std::snprintf(b, sizeof b, "%.1f MiB", bytes / 1048576);
    return b;
}

struct Servers {
    int bridge = 0, forwarder = 0;
    Child* bridge_child = nullptr;
    Child* forwarder_child = nullptr;
};

// One server under test: gecko-bridge (json or msgpack) or the baseline forwarder.
struct Case {
    std::string name;
    int port;
    WsClient::Server server;
    std::string encoding;  // of the small topic; images are always msgpack
    Child* child;
    unsigned depth = 0;    // the queue a bridge client asks for; 0: the bridge's default
};

std::vector<Case> cases(const Servers& s, bool both_encodings) {
    std::vector<Case> out{{"gecko-bridge json", s.bridge, WsClient::Server::bridge, "json", s.bridge_child}};
    if (both_encodings) out.push_back({"gecko-bridge msgpack", s.bridge, WsClient::Server::bridge, "msgpack", s.bridge_child});
    out.push_back({"forwarder (baseline)", s.forwarder, WsClient::Server::forwarder, "msgpack", s.forwarder_child});
    return out;
}

// Each figure of a row, one value per run; printed as the median.
using Runs = std::vector<std::vector<double>>;

void record_run(Runs& runs, const std::vector<double>& figures) {
    runs.resize(figures.size());
    for (std::size_t i = 0; i < figures.size(); ++i) runs[i].push_back(figures[i]);
}
double median(std::vector<double> v) { return percentile(std::move(v), 0.5); }

// Runs `measure` for every case, case after case, `reps` times over (A, B, A, B ...).
template <class Measure>
std::vector<Runs> alternate(const Options& o, const std::vector<Case>& cs, Measure measure) {
    std::vector<Runs> runs(cs.size());
    for (int rep = 0; rep < o.reps; ++rep)
        for (std::size_t i = 0; i < cs.size(); ++i) record_run(runs[i], measure(cs[i]));
    return runs;
}

void latency(const Options& o, gecko::Node& node, const Servers& s) {
    heading(o, "latency: 1 kHz, ~200 B, one client",
            {"server", "added p50", "added p99", "publish->client p50", "publish->client p99", "messages/run"});
    Publishing pub(node, {"bench_small", 1000});
    const auto cs = cases(s, true);
    const auto runs = alternate(o, cs, [&](const Case& c) {
        Clients clients(c.port, c.server, {{"bench_small", c.encoding}});
        std::this_thread::sleep_for(1s);
        clients.record(true);
        std::this_thread::sleep_for(o.window);
        const auto samples = clients[0].take()[0];
        std::vector<double> added, e2e;
        for (const auto& x : samples) {
            added.push_back(static_cast<double>(x.received_ns - x.gecko_ns));
            e2e.push_back(static_cast<double>(x.received_ns - x.stamp_ns));
        }
        return std::vector<double>{percentile(added, 0.5), percentile(added, 0.99), percentile(e2e, 0.5),
                                   percentile(e2e, 0.99), static_cast<double>(samples.size())};
    });
    for (std::size_t i = 0; i < cs.size(); ++i)
        row(o, {cs[i].name, us(median(runs[i][0])), us(median(runs[i][1])), us(median(runs[i][2])),
                us(median(runs[i][3])), num(median(runs[i][4]))});
}

void throughput(const Options& o, gecko::Node& node, const Servers& s) {
    heading(o, "throughput: ~200 B messages to one client",
            {"server", "offered", "client msg/s", "published msg/s"});
    // The bridge as a Foxglove client finds it (a subscription that does not
    // ask keeps up to 1024 small messages while the client is busy), and as
    // a client that asks for a shallow queue (the Gecko extension "depth": 16).
    auto cs = cases(s, true);
    cs.insert(cs.begin() + 2, {"gecko-bridge msgpack, depth 16", s.bridge, WsClient::Server::bridge, "msgpack", s.bridge_child, 16});
    cs.insert(cs.begin() + 1, {"gecko-bridge json, depth 16", s.bridge, WsClient::Server::bridge, "json", s.bridge_child, 16});
    // Offered at 150 k/s (bursts of 50 every 1/3 ms), then flat out: a publisher
    // flat out overruns every subscriber's queue, the bridge's Gecko subscriber
    // as the forwarder's, and measures that as much as the server.
    for (const Load& load : {Load{"bench_throughput", 3000, 50}, Load{"bench_flat_out", 0, 1}}) {
        // Publishing before any client: a bridge client subscribes to what is advertised.
        Publishing pub(node, load);
        const auto runs = alternate(o, cs, [&](const Case& c) {
            Clients clients(c.port, c.server, {{load.topic, c.encoding, c.depth}});
            std::this_thread::sleep_for(1s);
            const auto got0 = clients[0].received(0);
            const auto sent0 = pub.sent();
            const auto t0 = std::chrono::steady_clock::now();
            std::this_thread::sleep_for(o.window);
            const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            return std::vector<double>{static_cast<double>(clients[0].received(0) - got0) / secs,
                                       static_cast<double>(pub.sent() - sent0) / secs};
        });
        for (std::size_t i = 0; i < cs.size(); ++i)
            row(o, {cs[i].name, load.hz > 0 ? num(load.hz * load.burst, "/s") : "flat out", num(median(runs[i][0])), num(median(runs[i][1]))});
    }
}

void fairness(const Options& o, gecko::Node& node, const Servers& s) {
    heading(o, "fairness: 1080p rgb8 (6.2 MB) at 30 Hz and a 1 kHz IMU, one client",
            {"server", "IMU publish->client p50", "IMU p99", "IMU added p99", "IMU msg/s", "images/s"});
    Publishing images(node, {"bench_image", 30, 1, 1920, 1080});
    Publishing imu(node, {"bench_small", 1000});
    const auto cs = cases(s, false);
    const auto runs = alternate(o, cs, [&](const Case& c) {
        Clients clients(c.port, c.server, {{"bench_small", c.encoding}, {"bench_image", "msgpack"}});
        std::this_thread::sleep_for(2s);
        clients.record(true);
        const auto images0 = clients[0].received(1);
        const auto t0 = std::chrono::steady_clock::now();
        std::this_thread::sleep_for(o.window);
        const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        const auto samples = clients[0].take();
        std::vector<double> e2e, added;
        for (const auto& x : samples[0]) {
            e2e.push_back(static_cast<double>(x.received_ns - x.stamp_ns));
            added.push_back(static_cast<double>(x.received_ns - x.gecko_ns));
        }
        return std::vector<double>{percentile(e2e, 0.5), percentile(e2e, 0.99), percentile(added, 0.99),
                                   static_cast<double>(samples[0].size()) / secs,
                                   static_cast<double>(clients[0].received(1) - images0) / secs};
    });
    for (std::size_t i = 0; i < cs.size(); ++i)
        row(o, {cs[i].name, us(median(runs[i][0])), us(median(runs[i][1])), us(median(runs[i][2])),
                num(median(runs[i][3])), num(median(runs[i][4]))});
}

void fan_out(const Options& o, gecko::Node& node, const Servers& s) {
    heading(o, "fan-out: 10 clients, each a 1 kHz IMU and 640x480 rgb8 at 30 Hz (msgpack)",
            {"server", "server CPU", "server RSS", "slowest client IMU msg/s", "IMU p99 (all clients)",
             "images/s per client"});
    Publishing images(node, {"bench_camera", 30, 1, 640, 480});
    Publishing imu(node, {"bench_small", 1000});
    const auto cs = cases(s, false);
    const auto runs = alternate(o, cs, [&](const Case& c) {
        Clients clients(c.port, c.server, {{"bench_small", c.encoding}, {"bench_camera", "msgpack"}}, 10);
        std::this_thread::sleep_for(2s);
        clients.record(true);
        std::vector<std::uint64_t> imu0, img0;
        for (std::size_t i = 0; i < clients.size(); ++i) {
            imu0.push_back(clients[i].received(0));
            img0.push_back(clients[i].received(1));
        }
        const double cpu0 = c.child->cpu_seconds();
        const auto t0 = std::chrono::steady_clock::now();
        std::this_thread::sleep_for(o.window);
        const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        const double cpu = (c.child->cpu_seconds() - cpu0) / secs * 100;
        const double rss = static_cast<double>(c.child->rss());
        double slowest = 1e18, images_per_s = 0;
        std::vector<double> e2e;
        for (std::size_t i = 0; i < clients.size(); ++i) {
            slowest = std::min(slowest, static_cast<double>(clients[i].received(0) - imu0[i]) / secs);
            images_per_s += static_cast<double>(clients[i].received(1) - img0[i]) / secs / static_cast<double>(clients.size());
            const auto samples = clients[i].take();
            for (const auto& x : samples[0]) e2e.push_back(static_cast<double>(x.received_ns - x.stamp_ns));
        }
        return std::vector<double>{cpu, rss, slowest, percentile(e2e, 0.99), images_per_s};
    });
    for (std::size_t i = 0; i < cs.size(); ++i)
        row(o, {cs[i].name, num(median(runs[i][0]), " %"), mib(median(runs[i][1])), num(median(runs[i][2])),
                us(median(runs[i][3])), num(median(runs[i][4]))});
    row(o, {"peak RSS (whole run)", "", "gecko-bridge " + mib(static_cast<double>(s.bridge_child->peak_rss())),
            "forwarder " + mib(static_cast<double>(s.forwarder_child->peak_rss())), "", ""});
}

}  // namespace

int main(int argc, char** argv) {
    if (argc >= 2 && std::string(argv[1]) == "--forwarder") {
        gecko::install_signal_handlers();
        return run_forwarder(gecko::NodeOptions::from_env());
    }
    gecko::OptionParser args("gecko_bridge_bench", "gecko-bridge next to a minimal Beast forwarder, in one run");
    Options o;
    std::string only;
    args.flag("--quick", o.quick, "short windows (rough figures)");
    args.flag("--markdown", o.markdown, "Markdown tables");
    long long reps = o.reps;
    args.integer("--reps", reps, 1, 100, "N", "runs of each server per row, alternating; the median is shown (default 5)");
    std::string depth;
    args.text("--bridge-depth", depth, "N", "gecko-bridge --depth (default: the bridge's)");
    args.text("--only", only, "latency|throughput|fairness|fan-out", "one section");
    args.parse_or_exit(argc, argv);
    o.reps = static_cast<int>(reps);
    if (o.quick) {
        o.window = 1500ms;
        o.reps = 1;
    }

    const auto bin = std::filesystem::canonical("/proc/self/exe").parent_path();
    Setup setup;
    setup.key = "bridge-bench-" + std::to_string(::getpid());
    char dir[] = "/tmp/gecko-bridge-bench-XXXXXX";
    if (!::mkdtemp(dir)) fail("mkdtemp failed");
    setup.ipc_dir = dir;
    Child core((bin / "geckocore").string(),
               {"--key", setup.key, "--listen", "tcp://127.0.0.1:*", "--no-multicast", "--door", "0"}, {});
    const auto line = core.wait_for("listening on", 20s);
    children.push_back(&core);
    if (!line) fail("geckocore did not start");
    setup.core = "127.0.0.1:" + std::to_string(port_in(*line, "listening on"));
    setup.env = {{"GECKO_KEY", setup.key}, {"GECKO_CORE", setup.core}, {"GECKO_NO_MULTICAST", "1"},
                 {"GECKO_IPC_DIR", setup.ipc_dir}, {"GECKO_MULTICAST", ""}, {"GECKO_INTERFACE", ""}};

    std::vector<std::string> bridge_args{"--listen", "127.0.0.1:0"};
    if (!depth.empty()) bridge_args.insert(bridge_args.end(), {"--depth", depth});
    Child bridge((bin / "gecko-bridge").string(), bridge_args, setup.env);
    children.push_back(&bridge);
    const auto bridge_line = bridge.wait_for("serving", 20s);
    if (!bridge_line) fail("gecko-bridge did not start");
    Child forwarder((bin / "gecko_bridge_bench").string(), {"--forwarder"}, setup.env);
    children.push_back(&forwarder);
    const auto forwarder_line = forwarder.wait_for("serving", 20s);
    if (!forwarder_line) fail("the forwarder did not start");
    Servers servers{port_in(*bridge_line, "serving"), port_in(*forwarder_line, "serving"), &bridge, &forwarder};

    gecko::Node node(setup.node("bench_publisher"));
    if (!node.wait_for_core(10s)) fail("no core");
    cpu_set_t allowed;
    CPU_ZERO(&allowed);
    ::sched_getaffinity(0, sizeof allowed, &allowed);
    std::printf("gecko_bridge_bench: %d of %u vCPUs for every process (taskset); windows of %.1f s, %d run(s) of "
                "each server per row%s\n",
                CPU_COUNT(&allowed), std::thread::hardware_concurrency(), static_cast<double>(o.window.count()) / 1000,
                o.reps, o.quick ? " (--quick)" : "");
    if (only.empty() || only == "latency") latency(o, node, servers);
    if (only.empty() || only == "throughput") throughput(o, node, servers);
    if (only.empty() || only == "fairness") fairness(o, node, servers);
    if (only.empty() || only == "fan-out") fan_out(o, node, servers);
    children.clear();
    forwarder.stop();
    bridge.stop();
    core.stop();
    std::filesystem::remove_all(setup.ipc_dir);
    return 0;
}
