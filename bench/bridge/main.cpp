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
// Run:  ./build/bin/gecko_bridge_bench [--quick] [--markdown]   (docs/BENCHMARKS.md)
#include "children.hpp"
#include "client.hpp"
#include "forwarder.hpp"

#include <gecko/gecko.hpp>
#include <gecko/msgs/sensors.hpp>

#include <boost/asio/executor_work_guard.hpp>

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

[[noreturn]] void die(const std::string& why) {
    std::fprintf(stderr, "gecko_bridge_bench: %s\n", why.c_str());
    std::exit(2);
}

double percentile(std::vector<double> v, double p) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    return v[std::min(v.size() - 1, static_cast<std::size_t>(p * static_cast<double>(v.size())))];
}

// Publishes on a thread until stopped: an IMU padded to ~200 B, or rgb8 images.
class Publishing {
public:
    Publishing(gecko::Node& node, const std::string& topic, double hz, unsigned width = 0, unsigned height = 0)
        : thread_([this, &node, topic, hz, width, height] {
              std::unique_ptr<gecko::Rate> rate;
              if (hz > 0) rate = std::make_unique<gecko::Rate>(hz);
              if (width) {
                  auto pub = node.publisher<gecko::msgs::Image>(topic);
                  gecko::msgs::Image m;
                  m.frame_id = "camera";
                  m.width = width;
                  m.height = height;
                  m.encoding = "rgb8";
                  m.step = width * 3;
                  m.data.assign(std::size_t(width) * height * 3, 7);
                  while (!stop_.load()) {
                      m.stamp_ns = gecko::now_ns();
                      pub.publish(m);
                      ++sent_;
                      if (rate) rate->sleep();
                  }
              } else {
                  auto pub = node.publisher<gecko::msgs::Imu>(topic);
                  gecko::msgs::Imu m;
                  m.frame_id = std::string(90, 'f');  // the encoded reading is ~200 B
                  while (!stop_.load()) {
                      m.stamp_ns = gecko::now_ns();
                      m.accel.x += 0.001;
                      pub.publish(m);
                      ++sent_;
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
                if (!c->error().empty()) die("client: " + c->error());
                if (std::chrono::steady_clock::now() > deadline) die("a client was not subscribed within 20 s");
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
    std::chrono::milliseconds window{5000};
};

void heading(const Options& o, const std::string& title, const std::vector<std::string>& columns) {
    if (o.markdown) {
        std::printf("\n### %s\n\n|", title.c_str());
        for (const auto& c : columns) std::printf(" %s |", c.c_str());
        std::printf("\n|");
        for (std::size_t i = 0; i < columns.size(); ++i) std::printf(" --- |");
        std::printf("\n");
    } else {
        std::printf("\n== %s\n", title.c_str());
        for (const auto& c : columns) std::printf("%-22s", c.c_str());
        std::printf("\n");
    }
}

void row(const Options& o, const std::vector<std::string>& cells) {
    if (o.markdown) {
        std::printf("|");
        for (const auto& c : cells) std::printf(" %s |", c.c_str());
    } else {
        for (const auto& c : cells) std::printf("%-22s", c.c_str());
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
    std::snprintf(b, sizeof b, "%.0f%s", v, unit);
    return b;
}

struct Servers {
    int bridge = 0, forwarder = 0;
    Child* bridge_child = nullptr;
    Child* forwarder_child = nullptr;
};

void latency(const Options& o, gecko::Node& node, const Servers& s) {
    heading(o, "latency: 1 kHz, ~200 B, one client",
            {"server", "added p50", "added p99", "publish->client p50", "publish->client p99", "messages"});
    Publishing pub(node, "bench_small", 1000);
    struct Case {
        const char* name;
        int port;
        WsClient::Server server;
        const char* encoding;
    };
    for (const Case& c : {Case{"gecko-bridge json", s.bridge, WsClient::Server::bridge, "json"},
                          Case{"gecko-bridge msgpack", s.bridge, WsClient::Server::bridge, "msgpack"},
                          Case{"forwarder (baseline)", s.forwarder, WsClient::Server::forwarder, "msgpack"}}) {
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
        row(o, {c.name, us(percentile(added, 0.5)), us(percentile(added, 0.99)), us(percentile(e2e, 0.5)),
                us(percentile(e2e, 0.99)), std::to_string(samples.size())});
    }
}

void throughput(const Options& o, gecko::Node& node, const Servers& s) {
    heading(o, "throughput: ~200 B published flat out, one client", {"server", "client msg/s", "published msg/s"});
    struct Case {
        const char* name;
        int port;
        WsClient::Server server;
        const char* encoding;
    };
    for (const Case& c : {Case{"gecko-bridge msgpack", s.bridge, WsClient::Server::bridge, "msgpack"},
                          Case{"gecko-bridge json", s.bridge, WsClient::Server::bridge, "json"},
                          Case{"forwarder (baseline)", s.forwarder, WsClient::Server::forwarder, "msgpack"}}) {
        Clients clients(c.port, c.server, {{"bench_throughput", c.encoding}});
        Publishing pub(node, "bench_throughput", 0);
        std::this_thread::sleep_for(1s);
        const auto got0 = clients[0].received(0);
        const auto sent0 = pub.sent();
        const auto t0 = std::chrono::steady_clock::now();
        std::this_thread::sleep_for(o.window);
        const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        row(o, {c.name, num(static_cast<double>(clients[0].received(0) - got0) / secs),
                num(static_cast<double>(pub.sent() - sent0) / secs)});
    }
}

void fairness(const Options& o, gecko::Node& node, const Servers& s) {
    heading(o, "fairness: 1080p rgb8 (6.2 MB) at 30 Hz and a 1 kHz IMU, one client",
            {"server", "IMU p50", "IMU p99", "IMU msg/s", "images/s"});
    Publishing images(node, "bench_image", 30, 1920, 1080);
    Publishing imu(node, "bench_small", 1000);
    struct Case {
        const char* name;
        int port;
        WsClient::Server server;
    };
    for (const Case& c : {Case{"gecko-bridge", s.bridge, WsClient::Server::bridge},
                          Case{"forwarder (baseline)", s.forwarder, WsClient::Server::forwarder}}) {
        Clients clients(c.port, c.server, {{"bench_small", c.server == WsClient::Server::bridge ? "json" : "msgpack"},
                                           {"bench_image", "msgpack"}});
        std::this_thread::sleep_for(2s);
        clients.record(true);
        const auto images0 = clients[0].received(1);
        const auto t0 = std::chrono::steady_clock::now();
        std::this_thread::sleep_for(o.window);
        const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        const auto samples = clients[0].take();
        std::vector<double> e2e;
        for (const auto& x : samples[0]) e2e.push_back(static_cast<double>(x.received_ns - x.stamp_ns));
        row(o, {c.name, us(percentile(e2e, 0.5)), us(percentile(e2e, 0.99)),
                num(static_cast<double>(samples[0].size()) / secs),
                num(static_cast<double>(clients[0].received(1) - images0) / secs)});
    }
}

void fan_out(const Options& o, gecko::Node& node, const Servers& s) {
    heading(o, "fan-out: 10 clients, each a 1 kHz IMU (json) and 640x480 rgb8 at 30 Hz (msgpack)",
            {"server", "CPU", "RSS", "peak RSS", "slowest client IMU msg/s", "images/s per client"});
    Publishing images(node, "bench_camera", 30, 640, 480);
    Publishing imu(node, "bench_small", 1000);
    struct Case {
        const char* name;
        int port;
        WsClient::Server server;
        Child* child;
    };
    for (const Case& c : {Case{"gecko-bridge", s.bridge, WsClient::Server::bridge, s.bridge_child},
                          Case{"forwarder (baseline)", s.forwarder, WsClient::Server::forwarder, s.forwarder_child}}) {
        Clients clients(c.port, c.server,
                        {{"bench_small", c.server == WsClient::Server::bridge ? "json" : "msgpack"}, {"bench_camera", "msgpack"}},
                        10);
        std::this_thread::sleep_for(2s);
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
        double slowest = 1e18, images_per_s = 0;
        for (std::size_t i = 0; i < clients.size(); ++i) {
            slowest = std::min(slowest, static_cast<double>(clients[i].received(0) - imu0[i]) / secs);
            images_per_s += static_cast<double>(clients[i].received(1) - img0[i]) / secs / static_cast<double>(clients.size());
        }
        row(o, {c.name, num(cpu, " %"), num(static_cast<double>(c.child->rss()) / 1048576, " MiB"),
                num(static_cast<double>(c.child->peak_rss()) / 1048576, " MiB"), num(slowest), num(images_per_s)});
    }
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
    args.text("--only", only, "latency|throughput|fairness|fan-out", "one section");
    args.parse_or_exit(argc, argv);
    if (o.quick) o.window = 1500ms;

    const auto bin = std::filesystem::canonical("/proc/self/exe").parent_path();
    Setup setup;
    setup.key = "bridge-bench-" + std::to_string(::getpid());
    char dir[] = "/tmp/gecko-bridge-bench-XXXXXX";
    if (!::mkdtemp(dir)) die("mkdtemp failed");
    setup.ipc_dir = dir;
    Child core((bin / "geckocore").string(),
               {"--key", setup.key, "--listen", "tcp://127.0.0.1:*", "--no-multicast", "--door", "0"}, {});
    const auto line = core.wait_for("listening on", 20s);
    if (!line) die("geckocore did not start");
    setup.core = "127.0.0.1:" + std::to_string(port_in(*line, "listening on"));
    setup.env = {{"GECKO_KEY", setup.key}, {"GECKO_CORE", setup.core}, {"GECKO_NO_MULTICAST", "1"},
                 {"GECKO_IPC_DIR", setup.ipc_dir}, {"GECKO_MULTICAST", ""}, {"GECKO_INTERFACE", ""}};

    Child bridge((bin / "gecko-bridge").string(), {"--listen", "127.0.0.1:0"}, setup.env);
    const auto bridge_line = bridge.wait_for("serving", 20s);
    if (!bridge_line) die("gecko-bridge did not start");
    Child forwarder((bin / "gecko_bridge_bench").string(), {"--forwarder"}, setup.env);
    const auto forwarder_line = forwarder.wait_for("serving", 20s);
    if (!forwarder_line) die("the forwarder did not start");
    Servers servers{port_in(*bridge_line, "serving"), port_in(*forwarder_line, "serving"), &bridge, &forwarder};

    gecko::Node node(setup.node("bench_publisher"));
    if (!node.wait_for_core(10s)) die("no core");
    std::printf("gecko_bridge_bench: %u cores; windows of %.1f s%s\n", std::thread::hardware_concurrency(),
                static_cast<double>(o.window.count()) / 1000, o.quick ? " (--quick)" : "");
    if (only.empty() || only == "latency") latency(o, node, servers);
    if (only.empty() || only == "throughput") throughput(o, node, servers);
    if (only.empty() || only == "fairness") fairness(o, node, servers);
    if (only.empty() || only == "fan-out") fan_out(o, node, servers);
    forwarder.stop();
    bridge.stop();
    core.stop();
    std::filesystem::remove_all(setup.ipc_dir);
    return 0;
}
