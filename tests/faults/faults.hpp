// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file faults.hpp
/// Hostile peers for tests/faults, written with Gecko's own wire code: a
/// discovery session spoken by hand (CoreClient), a fake core (FakeCore), a
/// data publisher that sends whatever frames it is given (HostilePublisher),
/// and the figures of a process (CPU seconds, resident and peak memory) read
/// from /proc.
///
/// Counts scale with GECKO_FAULTS_SCALE (a factor, default 1; the sanitizer
/// build defaults to 0.1, see CMakeLists.txt): heavy tests still run there,
/// with fewer messages, and their bounds scale with them.

#include "support/ports.hpp"
#include "support/process.hpp"

#include <gecko/net/zmq_socket.hpp>
#include <gecko/wire/discovery.hpp>
#include <gecko/wire/frame.hpp>
#include <gecko/wire/hash.hpp>

#include <catch2/catch.hpp>
#include <msgpack.hpp>
#include <zmq.hpp>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace gecko::faults {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using test::Process;
using test::SpawnOptions;
using test::Stderr;

// ---- scale -------------------------------------------------------------------

/// The factor heavy tests multiply their counts by.
inline double scale() {
    if (const char* s = std::getenv("GECKO_FAULTS_SCALE"); s && *s) {
        const double v = std::atof(s);
        if (v > 0) return v;
    }
#ifdef GECKO_FAULTS_SANITIZED
    return 0.1;
#else
    return 1.0;
#endif
}
inline std::size_t scaled(std::size_t n, std::size_t minimum = 1) {
    return std::max(minimum, static_cast<std::size_t>(static_cast<double>(n) * scale()));
}
/// True in the sanitizer build: time and memory bounds are looser there.
inline constexpr bool sanitized =
#ifdef GECKO_FAULTS_SANITIZED
    true;
#else
    false;
#endif

inline std::string unique_key(const std::string& what) { return "f" + std::to_string(::getpid()) + "-" + what; }

inline std::uint64_t random_u64() {
    static std::mt19937_64 rng{std::random_device{}()};
    std::uint64_t v = 0;
    while (v == 0) v = rng();
    return v;
}

// ---- /proc -------------------------------------------------------------------

struct ProcFigures {
    double cpu_s = 0;       ///< user + system CPU seconds so far
    long rss_kb = 0;        ///< resident now
    long hwm_kb = 0;        ///< peak resident
    long threads = 0;
};

/// The figures of process `pid` (its /proc/PID/stat and status).
inline ProcFigures figures_of(pid_t pid) {
    ProcFigures f;
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string all((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    const auto close = all.rfind(')');  // the command name may hold spaces
    if (close != std::string::npos) {
        std::istringstream rest(all.substr(close + 2));
        std::string field;
        std::vector<std::string> fields;
        while (rest >> field) fields.push_back(field);
        // fields[0] is field 3 (state): utime is field 14, stime 15.
        if (fields.size() > 13) {
            const double tick = static_cast<double>(::sysconf(_SC_CLK_TCK));
            f.cpu_s = (std::atof(fields[11].c_str()) + std::atof(fields[12].c_str())) / tick;
        }
    }
    std::ifstream status("/proc/" + std::to_string(pid) + "/status");
    for (std::string line; std::getline(status, line);) {
        if (line.rfind("VmRSS:", 0) == 0) f.rss_kb = std::atol(line.c_str() + 6);
        if (line.rfind("VmHWM:", 0) == 0) f.hwm_kb = std::atol(line.c_str() + 6);
        if (line.rfind("Threads:", 0) == 0) f.threads = std::atol(line.c_str() + 8);
    }
    return f;
}

/// "key=value key=value" -> map (the victim's stats lines).
inline std::map<std::string, long long> fields_of(const std::string& line) {
    std::map<std::string, long long> out;
    std::istringstream in(line);
    for (std::string word; in >> word;) {
        const auto eq = word.find('=');
        if (eq != std::string::npos) out[word.substr(0, eq)] = std::atoll(word.c_str() + eq + 1);
    }
    return out;
}

// ---- the victim process ------------------------------------------------------------

/// gecko_fault_victim (victim.cpp) started with `args`, its log captured.
struct Victim {
    std::shared_ptr<gecko::test::TempDir> ipc_dir;  // its ipc sockets, unless the test gave GECKO_IPC_DIR (outlives proc)
    Process proc;
    std::uint64_t id = 0;
    std::vector<std::string> locators;

    static Victim start(const std::vector<std::string>& args, std::map<std::string, std::string> env = {}) {
        SpawnOptions o;
        o.env = std::move(env);
        // A victim killed with -9 leaves its sockets behind: in a directory of the test's own, never /tmp.
        std::shared_ptr<gecko::test::TempDir> dir;
        if (!o.env.count("GECKO_IPC_DIR")) {
            dir = std::make_shared<gecko::test::TempDir>();
            o.env.emplace("GECKO_IPC_DIR", dir->path());
        }
        o.env.emplace("GECKO_LOG", "info");
        o.stderr_mode = Stderr::capture;
        for (const char* v : {"GECKO_KEY", "GECKO_CORE", "GECKO_MULTICAST", "GECKO_INTERFACE"})
            if (!o.env.count(v)) o.unset_env.push_back(v);
        Victim v{dir, Process::spawn(GECKO_FAULT_VICTIM, args, o), 0, {}};
        const auto line = v.proc.wait_for_line("ready", 10s);
        if (!line) {
            v.proc.err().drain(200ms);
            throw std::runtime_error("gecko_fault_victim did not start: " + v.proc.output() + v.proc.err().text());
        }
        std::istringstream in(*line);
        std::string word;
        in >> word;  // "ready"
        while (in >> word) {
            if (word.rfind("id=", 0) == 0) v.id = std::stoull(word.substr(3));
            else v.locators.push_back(word);
        }
        return v;
    }
    /// Sends a command and returns its one-line answer (empty if none within `timeout`).
    std::string ask(const std::string& command, std::chrono::milliseconds timeout = 10s) {
        if (!proc.write_line(command)) return {};
        const auto first = command.substr(0, command.find(' '));
        const std::string expect = first == "connect" ? "connected" : first;
        return proc.wait_for_line(expect, timeout).value_or("");
    }
    std::map<std::string, long long> stats(std::chrono::milliseconds timeout = 10s) { return fields_of(ask("stats", timeout)); }
    /// Waits (bounded) until `done(stats)` holds; returns the last stats read.
    std::map<std::string, long long> stats_until(const std::function<bool(std::map<std::string, long long>&)>& done,
                                                 std::chrono::milliseconds timeout) {
        const auto deadline = Clock::now() + timeout;
        auto s = stats();
        for (auto pause = 1ms; !done(s) && Clock::now() < deadline; pause = std::min(pause * 2, 20ms)) {
            std::this_thread::sleep_for(pause);  // poll interval of a bounded wait on another process's counters
            s = stats();
        }
        return s;
    }
    /// The tcp locator it listens on.
    std::string tcp() const { return test::tcp_endpoint_in(locators); }
    /// Its stderr lines so far (reads what is there, waiting up to `wait`).
    std::vector<std::string> log_lines(std::chrono::milliseconds wait = 0ms) {
        proc.err().drain(wait);
        return proc.err().lines();
    }
};

// ---- frames ------------------------------------------------------------------

/// A frame as a hostile publisher wants it: any header, any payload.
inline std::vector<std::uint8_t> make_frame(wire::Channel channel, std::uint64_t sender, std::uint64_t sequence,
                                            std::uint64_t type_hash, const std::vector<std::uint8_t>& payload,
                                            std::uint8_t flags = 0, std::optional<std::uint32_t> declared = std::nullopt) {
    wire::FrameHeader h;
    h.channel = channel;
    h.flags = flags;
    h.payload_size = declared ? *declared : static_cast<std::uint32_t>(payload.size());
    h.sequence = sequence;
    h.sender_id = sender;
    h.send_time_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
    h.type_hash = type_hash;
    std::vector<std::uint8_t> frame(wire::frame_header_size + payload.size());
    wire::write_frame_header(frame.data(), h);
    std::copy(payload.begin(), payload.end(), frame.begin() + wire::frame_header_size);
    return frame;
}

/// msgpack of gecko.msgs.Bytes {data: bytes}.
inline std::vector<std::uint8_t> bytes_payload(const std::vector<std::uint8_t>& data) {
    msgpack::sbuffer b;
    msgpack::packer<msgpack::sbuffer> pk(b);
    pk.pack_map(1);
    pk.pack(std::string_view("data"));
    pk.pack_bin(static_cast<std::uint32_t>(data.size()));
    pk.pack_bin_body(reinterpret_cast<const char*>(data.data()), static_cast<std::uint32_t>(data.size()));
    return std::vector<std::uint8_t>(b.data(), b.data() + b.size());
}

inline constexpr std::uint64_t bytes_type = wire::type_hash("gecko.msgs.Bytes");

/// A data publisher that sends what it is told: an XPUB bound on loopback,
/// as a node's out-port is. Victims connect to it (Node::connect).
class HostilePublisher {
public:
    /// `linger`: how long frames still queued may go out once it is destroyed (0: dropped).
    explicit HostilePublisher(const std::string& bind = "tcp://127.0.0.1:*",
                              std::chrono::milliseconds linger = std::chrono::milliseconds(0)) {
        net::SocketOptions so;
        so.send_queue = 0;  // unbounded: every frame reaches the victim as fast as it drains
        so.linger = linger;
        socket_ = net::make_socket(*context_, zmq::socket_type::xpub, so);
        // Its connections' ends, to see a victim's transport hang up on it.
        static std::atomic<int> monitors{0};
        const std::string monitor = "inproc://faults-hostile-" + std::to_string(::getpid()) + "-" + std::to_string(monitors++);
        zmq_socket_monitor(socket_.handle(), monitor.c_str(), ZMQ_EVENT_DISCONNECTED);
        monitor_ = net::make_socket(*context_, zmq::socket_type::pair);
        monitor_.connect(monitor);
        socket_.bind(bind);
        locator_ = socket_.get(zmq::sockopt::last_endpoint);
    }
    ~HostilePublisher() {
        zmq_socket_monitor(socket_.handle(), nullptr, 0);
        monitor_.close();
    }
    HostilePublisher(const HostilePublisher&) = delete;
    HostilePublisher& operator=(const HostilePublisher&) = delete;
    const std::string& locator() const noexcept { return locator_; }

    /// Waits until a victim's connection to us ended (its transport hung up); false at the deadline.
    bool wait_disconnected(std::chrono::milliseconds timeout) {
        zmq::pollitem_t item{monitor_.handle(), 0, ZMQ_POLLIN, 0};
        if (zmq::poll(&item, 1, timeout) <= 0) return false;
        zmq::message_t event, address;
        if (!monitor_.recv(event, zmq::recv_flags::dontwait)) return false;
        if (event.more()) (void)monitor_.recv(address, zmq::recv_flags::dontwait);
        return true;
    }

    /// Waits until a subscriber asked for `channel` (its 8 bytes); false at the deadline.
    bool wait_subscribed(wire::Channel channel, std::chrono::milliseconds timeout) {
        std::uint8_t want[9] = {1};
        wire::store_channel(want + 1, channel);
        const auto deadline = Clock::now() + timeout;
        while (Clock::now() < deadline) {
            zmq::pollitem_t item{socket_.handle(), 0, ZMQ_POLLIN, 0};
            zmq::poll(&item, 1, std::chrono::milliseconds(50));
            zmq::message_t m;
            while (socket_.recv(m, zmq::recv_flags::dontwait))
                if (m.size() == 9 && std::memcmp(m.data(), want, 9) == 0) return true;
        }
        return false;
    }
    bool send(const std::vector<std::uint8_t>& frame) {
        return socket_.send(zmq::const_buffer(frame.data(), frame.size()), zmq::send_flags::none).has_value();
    }
    bool send(zmq::message_t& m) { return socket_.send(m, zmq::send_flags::none).has_value(); }

private:
    std::shared_ptr<zmq::context_t> context_ = net::process_context();
    zmq::socket_t socket_;
    zmq::socket_t monitor_;
    std::string locator_;
};

// ---- discovery, by hand -------------------------------------------------------------

/// One discovery session spoken by hand over a DEALER, as a node's is.
class CoreClient {
public:
    explicit CoreClient(const std::string& endpoint, std::uint64_t session = random_u64(), std::uint64_t secret = random_u64())
        : session_(session), secret_(secret) {
        net::SocketOptions so;
        so.send_queue = 0;
        so.receive_queue = 0;
        so.max_message_size = discovery::max_zmq_message;
        dealer_ = net::make_socket(*context_, zmq::socket_type::dealer, so);
        dealer_.connect(endpoint);
    }
    std::uint64_t session() const noexcept { return session_; }
    std::uint64_t secret() const noexcept { return secret_; }

    void send(const discovery::Writer& w) { dealer_.send(zmq::const_buffer(w.data(), w.size()), zmq::send_flags::none); }
    /// The next message, or nullopt after `timeout`.
    std::optional<discovery::Message> recv(std::chrono::milliseconds timeout) {
        zmq::pollitem_t item{dealer_.handle(), 0, ZMQ_POLLIN, 0};
        if (zmq::poll(&item, 1, timeout) <= 0) return std::nullopt;
        zmq::message_t m;
        if (!dealer_.recv(m, zmq::recv_flags::dontwait)) return std::nullopt;
        std::string why;
        return discovery::Message::parse(static_cast<const char*>(m.data()), m.size(), &why);
    }
    /// Skips messages until one of type `t` (and satisfying `match`), or nullopt at the deadline.
    std::optional<discovery::Message> await(const std::string& t, std::chrono::milliseconds timeout,
                                            const std::function<bool(const gecko::wire::Value&)>& match = {}) {
        const auto deadline = Clock::now() + timeout;
        for (;;) {
            const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
            if (left.count() <= 0) return std::nullopt;
            auto m = recv(left);
            if (m && m->type() == t && (!match || match(m->root()))) return m;
        }
    }
    /// Messages that arrive within `quiet` of each other, until none does.
    std::vector<discovery::Message> drain(std::chrono::milliseconds quiet = 100ms) {
        std::vector<discovery::Message> out;
        while (auto m = recv(quiet)) out.push_back(std::move(*m));
        return out;
    }

    void hello(const std::string& key, const std::string& node = "hostile", const std::string& host = "hostile-host",
               const std::vector<std::string>& locators = {}, const std::vector<std::uint64_t>& ids = {},
               std::optional<std::uint64_t> secret = std::nullopt, const std::string& hostid = "hostile-hostid",
               const std::string& pidns = "") {
        discovery::Writer w("hello", 12);
        w.kv("s", session_);
        w.kv("secret", secret.value_or(secret_));
        w.kv("key", key);
        w.kv("node", node);
        w.kv("host", host);
        w.kv("hostid", hostid);
        w.kv("pid", 0);
        w.kv("pidns", pidns);
        w.kv("lease_ms", std::int64_t{3000});
        w.kv("ids", ids);
        w.kv("locators", locators);
        w.kv("tool", false);
        send(w);
    }
    void add(std::uint64_t id, discovery::EntityKind kind, const std::string& topic, const std::string& type) {
        discovery::Writer w("add", 2 + discovery::registration_fields);
        w.kv("s", session_);
        w.kv("secret", secret_);
        discovery::Registration r;
        r.id = id;
        r.kind = kind;
        r.topic = topic;
        r.type_name = type;
        discovery::pack_registration_fields(w.packer(), r);
        send(w);
    }
    /// A message of type `t` carrying only this session's id and `secret` (hb, bye, ...).
    void session_message(const std::string& t, std::optional<std::uint64_t> secret = std::nullopt) {
        discovery::Writer w(t, 2);
        w.kv("s", session_);
        w.kv("secret", secret.value_or(secret_));
        send(w);
    }
    void remove(std::uint64_t id, std::optional<std::uint64_t> secret = std::nullopt) {
        discovery::Writer w("remove", 3);
        w.kv("s", session_);
        w.kv("secret", secret.value_or(secret_));
        w.kv("id", id);
        send(w);
    }

private:
    std::shared_ptr<zmq::context_t> context_ = net::process_context();
    zmq::socket_t dealer_;
    std::uint64_t session_, secret_;
};


/// A fake core: a ROUTER on loopback that answers as `handler` says, on a
/// thread of its own. It hands nodes (and tools) what a real core never
/// would, to prove they survive it. The handler runs on that thread; reply()
/// may only be called from it.
class FakeCore {
public:
    struct Request {
        std::string route;
        bool req_envelope = false;
        discovery::Message message;
    };
    using Handler = std::function<void(FakeCore&, const Request&)>;

    explicit FakeCore(Handler handler) : handler_(std::move(handler)) {
        net::SocketOptions so;
        so.send_queue = 0;
        router_ = net::make_socket(*context_, zmq::socket_type::router, so);
        router_.bind("tcp://127.0.0.1:*");
        endpoint_ = router_.get(zmq::sockopt::last_endpoint);
        thread_ = std::thread([this] { loop(); });
    }
    ~FakeCore() {
        stop_ = true;
        thread_.join();
    }
    FakeCore(const FakeCore&) = delete;
    FakeCore& operator=(const FakeCore&) = delete;

    const std::string& endpoint() const noexcept { return endpoint_; }
    std::string address() const { return test::host_port(endpoint_); }  ///< for GECKO_CORE
    std::uint64_t instance() const noexcept { return instance_; }

    void reply(const Request& to, const discovery::Writer& w) {
        router_.send(zmq::buffer(to.route), zmq::send_flags::sndmore);
        if (to.req_envelope) router_.send(zmq::message_t(), zmq::send_flags::sndmore);
        router_.send(zmq::const_buffer(w.data(), w.size()), zmq::send_flags::dontwait);
    }
    /// The welcome a real core sends (lease_ms: the heartbeat period is a third of it).
    void welcome(const Request& to, const std::string& key, std::int64_t lease_ms = 3000) {
        discovery::Writer w("welcome", 6);
        w.kv("instance", instance_);
        w.kv("lease_ms", lease_ms);
        w.kv("host", std::string("fake-core"));
        w.kv("pid", 1);
        w.kv("key", key);
        w.kv("warm", false);
        reply(to, w);
    }
    /// How many messages of type `t` arrived (satisfying `match`).
    std::size_t count(const std::string& t, const std::function<bool(const gecko::wire::Value&)>& match = {}) {
        std::lock_guard<std::mutex> lock(mutex_);
        std::size_t n = 0;
        for (const auto& [type, bytes] : seen_) {
            if (type != t) continue;
            if (!match) {
                ++n;
                continue;
            }
            std::string why;
            const auto m = discovery::Message::parse(bytes.data(), bytes.size(), &why);
            if (m && match(m->root())) ++n;
        }
        return n;
    }
    /// Waits (bounded) until count(t, match) >= n.
    bool wait_count(const std::string& t, std::size_t n, std::chrono::milliseconds timeout,
                    const std::function<bool(const gecko::wire::Value&)>& match = {}) {
        const auto deadline = Clock::now() + timeout;
        while (count(t, match) < n) {
            if (Clock::now() >= deadline) return false;
            std::this_thread::sleep_for(10ms);  // poll interval of a bounded wait on the fake core's thread
        }
        return true;
    }

private:
    void loop() {
        while (!stop_) {
            zmq::pollitem_t item{router_.handle(), 0, ZMQ_POLLIN, 0};
            zmq::poll(&item, 1, std::chrono::milliseconds(20));
            std::vector<zmq::message_t> parts;
            for (;;) {
                zmq::message_t m;
                if (!router_.recv(m, zmq::recv_flags::dontwait)) break;
                const bool more = m.more();
                parts.push_back(std::move(m));
                if (!more) {
                    handle(parts);
                    parts.clear();
                }
            }
        }
    }
    void handle(std::vector<zmq::message_t>& parts) {
        if (parts.size() < 2) return;
        std::string why;
        auto m = discovery::Message::parse(static_cast<const char*>(parts.back().data()), parts.back().size(), &why);
        if (!m) return;
        {
            std::lock_guard<std::mutex> lock(mutex_);
            seen_.emplace_back(m->type(), parts.back().to_string());
        }
        Request r{parts.front().to_string(), parts.size() == 3, std::move(*m)};
        handler_(*this, r);
    }

    std::shared_ptr<zmq::context_t> context_ = net::process_context();
    zmq::socket_t router_;
    std::string endpoint_;
    Handler handler_;
    std::uint64_t instance_ = random_u64();
    std::atomic<bool> stop_{false};
    std::mutex mutex_;
    std::vector<std::pair<std::string, std::string>> seen_;  // type, bytes
    std::thread thread_;
};

/// A peer map as a core pushes it: `locators` whatever they are.
inline void pack_fake_peer(msgpack::packer<msgpack::sbuffer>& pk, std::uint64_t id, discovery::EntityKind kind,
                           const std::string& topic, const std::string& type, const std::vector<std::string>& locators,
                           const std::string& node = "fake", const std::string& host = "fake-host") {
    discovery::Peer p;
    p.reg.id = id;
    p.reg.kind = kind;
    p.reg.topic = topic;
    p.reg.type_name = type;
    p.node = node;
    p.session = id;
    p.host = host;
    p.host_id = "fake-hostid";
    p.pid = 1;
    p.locators = locators;
    discovery::pack_peer(pk, p);
}

/// The core's answer to `list` (one page), asked on a DEALER of its own.
inline std::optional<discovery::Message> list_core(const std::string& endpoint, const std::string& key,
                                                   std::chrono::milliseconds timeout = 10s) {
    CoreClient c(endpoint);
    discovery::Writer w("list", 1);
    w.kv("key", key);
    c.send(w);
    return c.await("list", timeout);
}

/// A counter of the core's `list` answer (0 if absent).
inline std::uint64_t core_counter(const discovery::Message& list, const std::string& name) {
    const auto counters = discovery::find(list.root(), "counters");
    return counters ? discovery::get_u64(*counters, name).value_or(0) : 0;
}

/// Starts a geckocore on loopback for `key` with `extra` options; its log is
/// captured (stderr) for the tests that count its lines.
inline test::CoreOnLoopback start_core(const std::string& key, const std::vector<std::string>& extra = {},
                                       const std::string& wrapper = {}, const std::vector<std::string>& wrapper_args = {}) {
    std::vector<std::string> args{"--key", key, "--no-multicast", "--door", "0", "--listen", "tcp://127.0.0.1:*"};
    args.insert(args.end(), extra.begin(), extra.end());
    SpawnOptions o;
    o.stderr_mode = Stderr::capture;
    o.env["GECKO_LOG"] = "info";
    o.unset_env = {"GECKO_KEY", "GECKO_CORE", "GECKO_MULTICAST", "GECKO_NO_MULTICAST", "GECKO_INTERFACE"};
    std::string program = GECKOCORE_PATH;
    if (!wrapper.empty()) {
        std::vector<std::string> wrapped = wrapper_args;
        wrapped.push_back(program);
        wrapped.insert(wrapped.end(), args.begin(), args.end());
        args = std::move(wrapped);
        program = wrapper;
    }
    test::CoreOnLoopback core{Process::spawn(program, args, o), {}};
    const auto line = core.proc.wait_for_line("listening on ", 10s);
    const auto endpoint = line ? test::endpoint_after(*line, "listening on ") : std::nullopt;
    if (!endpoint) {
        core.proc.err().drain(200ms);
        throw std::runtime_error("geckocore did not start: " + core.proc.output() + core.proc.err().text());
    }
    core.endpoint = *endpoint;
    return core;
}

// ---- a victim linked to a hostile publisher --------------------------------------------

/// A victim with discovery off, linked to `hostile`, subscribed (its
/// subscription reached the hostile publisher) to `topic` under `key`.
inline Victim linked_subscriber(HostilePublisher& hostile, const std::string& key, const std::string& topic,
                                std::vector<std::string> extra = {}, std::map<std::string, std::string> env = {}) {
    std::vector<std::string> args{"sub", "--topic", topic, "--key", key, "--no-discovery"};
    args.insert(args.end(), extra.begin(), extra.end());
    auto v = Victim::start(args, std::move(env));
    REQUIRE(v.ask("connect " + hostile.locator()) == "connected");
    REQUIRE(hostile.wait_subscribed(wire::channel_of(key, topic), 10s));
    return v;
}

/// Sends valid small frames until the victim has delivered `n` more than
/// `before` (a link cut by the transport comes back by itself). False at the deadline.
inline bool still_delivers(Victim& v, HostilePublisher& hostile, wire::Channel channel, long long before,
                           std::uint64_t sender, std::chrono::milliseconds timeout = 10s) {
    const auto deadline = Clock::now() + timeout;
    for (std::uint64_t seq = 1; Clock::now() < deadline; ++seq) {
        hostile.send(make_frame(channel, sender, seq, bytes_type, bytes_payload({1, 2, 3})));
        if (v.stats()["delivered"] > before) return true;
        std::this_thread::sleep_for(50ms);  // pace of the probe frames (a reconnect takes ~100 ms)
    }
    return false;
}

}  // namespace gecko::faults
