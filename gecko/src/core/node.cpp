#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>

#include "core/node_core.hpp"
#include "gecko/error.hpp"
#include "gecko/signals.hpp"

#if __has_include("discovery/discovery_client.hpp")
#include "discovery/discovery_client.hpp"
#include "discovery/net.hpp"
#define GECKO_HAVE_DISCOVERY 1
#endif

namespace gecko {
namespace detail {
namespace {

std::string env_or(const char* name, std::string fallback) {
    const char* value = std::getenv(name);
    return (value && *value) ? std::string(value) : std::move(fallback);
}

bool env_flag(const char* name) {
    const std::string v = env_or(name, "");
    return v == "1" || v == "true" || v == "yes" || v == "on";
}

std::string program_name() {
    std::ifstream comm("/proc/self/comm");
    std::string name;
    std::getline(comm, name);
    return name.empty() ? "gecko" : name;
}

// ipc paths are limited to ~107 bytes: keep names short and safe.
std::string sanitize(const std::string& text, std::size_t max) {
    std::string out;
    for (char c : text) {
        if (out.size() >= max) break;
        out += (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_') ? c : '_';
    }
    return out;
}

}  // namespace

NodeCore::NodeCore(NodeOptions options)
    : options_(std::move(options)), logger_(options_.name), context_(shared_context()), random_(std::random_device{}()) {
    if (options_.key.empty()) {
        throw Error(Errc::invalid_argument, "gecko::Node needs a key (the robot's name): pass one or set GECKO_KEY");
    }
    if (options_.ipc_directory.empty()) options_.ipc_directory = "/tmp";
    char host[256] = {};
    ::gethostname(host, sizeof host - 1);
    hostname_ = host;
#ifdef GECKO_HAVE_DISCOVERY
    host_id_ = net::host_id();
    if (options_.discovery) {
        DiscoveryOptions d;
        d.key = options_.key;
        d.node = options_.name;
        d.core = options_.core;
        d.interface = options_.interface;
        d.multicast = options_.multicast_enabled;
        d.lease = options_.lease;
        if (!options_.multicast.empty()) {
            const auto colon = options_.multicast.rfind(':');
            d.multicast_group = options_.multicast.substr(0, colon);
            if (colon != std::string::npos) {
                d.multicast_port = static_cast<std::uint16_t>(std::stoi(options_.multicast.substr(colon + 1)));
            }
        }
        discovery_ = std::make_unique<DiscoveryClient>(std::move(d));
        discovery_->on_error([this](std::uint64_t, const std::string& message) { logger_.error(message); });
        reporter_ = std::thread([this] { report_loop(); });
    }
#endif
}

NodeCore::~NodeCore() {
    stop_background_spinner();
    {
        std::lock_guard<std::mutex> lock(sources_mutex_);
        reporter_stop_ = true;
    }
    reporter_wake_.notify_all();
    if (reporter_.joinable()) reporter_.join();
}

void NodeCore::add_stats_source(std::uint64_t id, std::function<Counters()> source) {
    if (!discovery_) return;
    std::lock_guard<std::mutex> lock(sources_mutex_);
    sources_[id] = Source{std::move(source), Counters{}};
}

void NodeCore::remove_stats_source(std::uint64_t id) {
    std::lock_guard<std::mutex> lock(sources_mutex_);
    sources_.erase(id);
}

// Every ~3 s: per-entity rates since the last tick, sent to the core for
// `gecko list` and `gecko top`.
void NodeCore::report_loop() {
    [[maybe_unused]] constexpr auto period = std::chrono::seconds(3);
    auto last = std::chrono::steady_clock::now();
    std::unique_lock<std::mutex> lock(sources_mutex_);
    while (!reporter_wake_.wait_for(lock, period, [this] { return reporter_stop_; })) {
        const auto now = std::chrono::steady_clock::now();
        const double seconds = std::chrono::duration<double>(now - last).count();
        last = now;
#ifdef GECKO_HAVE_DISCOVERY
        std::vector<TopicStats> report;
        for (auto& [id, source] : sources_) {
            const Counters c = source.read();
            TopicStats t;
            t.id = id;
            t.messages_per_s = static_cast<double>(c.messages - source.last.messages) / seconds;
            t.bytes_per_s = static_cast<double>(c.bytes - source.last.bytes) / seconds;
            t.drops = c.drops;
            t.latency_ns = c.latency_ns;
            source.last = c;
            report.push_back(t);
        }
        if (discovery_ && !report.empty()) discovery_->report(std::move(report));
#endif
    }
}

std::uint64_t NodeCore::new_id() {
    std::lock_guard<std::mutex> lock(random_mutex_);
    std::uint64_t id = 0;
    while (id == 0) id = random_();
    return id;
}

std::vector<std::string> NodeCore::automatic_endpoints(const std::string& name, std::uint64_t id) const {
    char suffix[32];
    std::snprintf(suffix, sizeof suffix, "%d-%08x", static_cast<int>(::getpid()), static_cast<unsigned>(id));
    const std::string ipc = "ipc://" + options_.ipc_directory + "/gecko-" + sanitize(options_.key, 16) + "-" +
                            sanitize(name, 24) + "-" + suffix;
    return {ipc, "tcp://" + options_.tcp_address + ":*"};
}

void NodeCore::advertise([[maybe_unused]] Role role, [[maybe_unused]] std::uint64_t id,
                         [[maybe_unused]] const std::string& topic, [[maybe_unused]] const std::string& type_name,
                         [[maybe_unused]] const std::vector<std::string>& endpoints) {
#ifdef GECKO_HAVE_DISCOVERY
    if (!discovery_) return;
    Registration r;
    r.id = id;
    r.kind = role == Role::publisher ? EntityKind::publisher : EntityKind::server;
    r.topic = topic;
    r.type_name = type_name;
    r.endpoints = endpoints;  // tcp wildcards are rewritten by the client when sent
    discovery_->add(r);
#endif
}

void NodeCore::watch([[maybe_unused]] Role role, [[maybe_unused]] std::uint64_t id,
                     [[maybe_unused]] const std::string& topic, [[maybe_unused]] const std::string& type_name,
                     [[maybe_unused]] std::function<void(const std::vector<std::string>&)> on_endpoints) {
#ifdef GECKO_HAVE_DISCOVERY
    if (!discovery_) return;
    Registration r;
    r.id = id;
    r.kind = role == Role::subscriber ? EntityKind::subscriber : EntityKind::client;
    r.topic = topic;
    r.type_name = type_name;
    discovery_->add(r);
    discovery_->watch(id, [this, cb = std::move(on_endpoints)](const std::vector<Peer>& peers) {
        std::vector<std::string> chosen;
        for (const auto& peer : peers) {
            // The same host for ipc means the same /tmp: compare host ids (boot id and
            // mount namespace) when the peer sent one, else fall back to the hostname.
            const bool same_host = peer.host_id.empty() ? peer.host == hostname_ : peer.host_id == host_id_;
            std::string pick;
            for (const auto& e : peer.reg.endpoints) {
                const bool ipc = e.rfind("ipc://", 0) == 0;
                if (same_host && ipc) { pick = e; break; }
                if (!ipc && e.rfind("tcp://", 0) == 0 && pick.empty()) pick = e;
            }
            if (!pick.empty()) chosen.push_back(pick);
        }
        cb(chosen);
    });
#endif
}

void NodeCore::withdraw([[maybe_unused]] std::uint64_t id) {
#ifdef GECKO_HAVE_DISCOVERY
    if (discovery_) discovery_->remove(id);
#endif
}

bool NodeCore::wait_for_core([[maybe_unused]] std::chrono::milliseconds timeout) {
#ifdef GECKO_HAVE_DISCOVERY
    if (discovery_) return discovery_->wait_for_core(timeout);
#endif
    return !options_.discovery;
}

void NodeCore::start_background_spinner() {
    if (spinning_.exchange(true)) return;
    spinner_ = std::thread([this] {
        while (spinning_.load()) executor_.spin_once(std::chrono::milliseconds(100));
    });
}

void NodeCore::stop_background_spinner() {
    if (!spinning_.exchange(false)) return;
    executor_.wake();
    if (spinner_.joinable()) spinner_.join();
}

}  // namespace detail

NodeOptions NodeOptions::from_env() {
    using detail::env_flag;
    using detail::env_or;
    NodeOptions o;
    o.key = env_or("GECKO_KEY", "");
    o.name = env_or("GECKO_NODE", detail::program_name());
    o.core = env_or("GECKO_CORE", "");
    o.multicast = env_or("GECKO_MULTICAST", "");
    o.interface = env_or("GECKO_INTERFACE", "");
    o.multicast_enabled = !env_flag("GECKO_NO_MULTICAST");
    const std::string discovery = env_or("GECKO_DISCOVERY", "on");
    o.discovery = !(discovery == "off" || discovery == "0" || discovery == "false");
    o.ipc_directory = env_or("GECKO_IPC_DIR", "/tmp");
    o.tcp_address = env_or("GECKO_TCP_ADDRESS", "0.0.0.0");
    return o;
}

NodeOptions NodeOptions::from_args(int argc, const char* const* argv, const std::string& default_name,
                                   const std::string& description) {
    NodeOptions o = from_env();
    if (!default_name.empty() && !std::getenv("GECKO_NODE")) o.name = default_name;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        const bool has_value = i + 1 < argc;
        if (arg == "--help" || arg == "-h") {
            const std::string program = argc > 0 && argv[0] ? std::string(argv[0]).substr(std::string(argv[0]).rfind('/') + 1)
                                                            : detail::program_name();
            const std::string help =
                (description.empty() ? "" : program + ": " + description + "\n") + "usage: " + program +
                " [options]\n"
                "Node options (each also read from the environment):\n"
                "  --key KEY              the key (robot, simulation) to join (GECKO_KEY); required\n"
                "  --name NAME            this node's name (GECKO_NODE; default: " +
                (o.name.empty() ? program : o.name) +
                ")\n"
                "  --core HOST[:PORT]     the geckocore's address, when multicast gets no answer (GECKO_CORE)\n"
                "  --multicast GROUP:PORT the discovery multicast group (GECKO_MULTICAST)\n"
                "  --interface ADDR       the interface for multicast and tcp (GECKO_INTERFACE)\n"
                "  --no-multicast         find the core at --core only (GECKO_NO_MULTICAST=1)\n"
                "  --no-discovery         no core: only explicit endpoints (GECKO_DISCOVERY=off)\n"
                "  -h, --help             print this help and exit\n";
            [[maybe_unused]] const auto written = ::write(STDOUT_FILENO, help.data(), help.size());
            std::exit(0);
        } else if (arg == "--key" && has_value) {
            o.key = argv[++i];
        } else if (arg == "--name" && has_value) {
            o.name = argv[++i];
        } else if (arg == "--core" && has_value) {
            o.core = argv[++i];
        } else if (arg == "--multicast" && has_value) {
            o.multicast = argv[++i];
        } else if (arg == "--interface" && has_value) {
            o.interface = argv[++i];
        } else if (arg == "--no-multicast") {
            o.multicast_enabled = false;
        } else if (arg == "--no-discovery") {
            o.discovery = false;
        }
    }
    if (o.key.empty()) {
        // A usage error, reported as a command-line parser does (not an uncaught exception).
        const std::string program = argc > 0 ? argv[0] : "gecko";
        const std::string message = program + ": no key: give --key KEY or set GECKO_KEY (--help lists the options)\n";
        [[maybe_unused]] const auto written = ::write(STDERR_FILENO, message.data(), message.size());
        std::exit(2);
    }
    return o;
}

Node::Node(std::string key, std::string name) : Node([&] {
    NodeOptions o = NodeOptions::from_env();
    o.key = std::move(key);
    if (!name.empty()) o.name = std::move(name);
    return o;
}()) {}

Node::Node(NodeOptions options) {
    if (options.name.empty()) options.name = detail::program_name();
    core_ = std::make_shared<detail::NodeCore>(std::move(options));
}

Node::~Node() {
    if (core_) core_->stop_background_spinner();
}
Node::Node(Node&&) noexcept = default;
Node& Node::operator=(Node&&) noexcept = default;

void Node::spin() {
    while (ok()) core_->executor().spin_once(std::chrono::milliseconds(100));
}

std::size_t Node::spin_once(std::chrono::milliseconds timeout) { return core_->executor().spin_once(timeout); }
void Node::spin_in_background() { core_->start_background_spinner(); }
void Node::stop_spinning() { core_->stop_background_spinner(); }
bool Node::wait_for_core(std::chrono::milliseconds timeout) { return core_->wait_for_core(timeout); }
const std::string& Node::key() const { return core_->options().key; }
const std::string& Node::name() const { return core_->options().name; }
const Logger& Node::logger() const { return core_->logger(); }

}  // namespace gecko
