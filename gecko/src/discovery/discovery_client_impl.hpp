// SPDX-License-Identifier: Apache-2.0
// The discovery client's state, shared by its two halves: discovery_client.cpp
// (the session: hello, registrations, heartbeats, reconnection) and
// discovery_answers.cpp (what the core sends: peers, graph, directory, errors).
#pragma once

#include "discovery/discovery_client.hpp"

#include "discovery/core_channel.hpp"

#include "gecko/net/finder.hpp"
#include "gecko/net/net.hpp"
#include "gecko/wire/discovery.hpp"
#include "gecko/wire/names.hpp"
#include "gecko/error.hpp"
#include "gecko/log.hpp"
#include "gecko/net/zmq_socket.hpp"
#include "node/reactor.hpp"

#include <zmq.hpp>

#include <arpa/inet.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

namespace gecko::detail {

inline std::string read_pid_namespace() {
    char buf[128] = {};
    const auto n = ::readlink("/proc/self/ns/pid", buf, sizeof buf - 1);
    return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string();
}

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

struct DiscoveryClient::Impl {
    explicit Impl(DiscoveryOptions o) : opt(std::move(o)), log(opt.node.empty() ? "gecko.discovery" : opt.node) {}
    ~Impl() {
        if (channel) channel->leave(session);  // normally done by say_goodbye
    }

    DiscoveryOptions opt;
    Logger log;
    const std::string host = net::hostname();
    const std::string host_id = net::host_id();
    const std::int32_t pid = static_cast<std::int32_t>(::getpid());
    const std::string pid_ns = read_pid_namespace();
    const std::uint64_t session = net::random_id();
    // Proves that a message comes from this node: never shown by `list`, so
    // nobody can speak for our session by knowing its id (docs/DISCOVERY.md §2).
    const std::uint64_t secret = net::random_id();
    std::unique_ptr<Reactor> own_reactor;  // when no node reactor was given
    Reactor* reactor = nullptr;
    bool closed = false;                   // reactor thread
    std::vector<int> watched;              // fds the reactor watches for us (reactor thread)

    // State readable from other threads.
    mutable std::mutex state_mutex;
    std::condition_variable state_cv;
    std::atomic<bool> acked{false};
    std::atomic<std::uint64_t> instance{0};
    std::string core_endpoint;   // the one the DEALER is connected to
    std::string core_secret;     // the fingerprint whose server key the DEALER expects ("": the key's own)
    std::string attempts;        // CoreFinder::describe(), refreshed by the thread
    std::string security_error;  // set once, for good (DiscoveryClient::security_error)

    // Thread-only state.
    struct Watch {
        std::function<void(const std::vector<Peer>&)> callback;
        std::vector<Peer> peers;  // sorted by id
        bool known = false;       // a core told us at least once
        bool delivered = false;   // the callback saw `peers`
    };
    std::map<std::uint64_t, Registration> registrations;
    std::map<std::uint64_t, Watch> watches;
    std::function<void(std::uint64_t, const std::string&, const std::string&)> error_callback;
    std::function<void(bool, bool, const std::string&, const std::string&)> graph_callback;
    std::function<void(const DirectoryUpdate&)> directory_callback;
    std::function<void()> directory_unsupported;
    std::vector<TopicStats> stats;
    bool stats_pending = false;
    std::vector<std::pair<std::uint64_t, std::string>> links;  // reported with the stats: peer session, transport

    std::optional<net::CoreFinder> finder;
    // The connection to the core, shared with the process's other nodes of
    // this key (core_channel.hpp), and where it leaves our messages.
    std::shared_ptr<CoreChannel> channel;
    std::shared_ptr<CoreChannel::Inbox> inbox;
    bool share = true;  // false once a core refused one more node on a shared connection
    Clock::time_point search_started{};
    Clock::time_point last_rx{};
    Clock::time_point next_hello{};
    Clock::time_point next_heartbeat{};
    Clock::time_point next_stats{};
    Clock::time_point next_probe{};
    Clock::time_point connected_at{};
    milliseconds heartbeat_period{1000};
    milliseconds core_lease{3000};
    bool warned = false;
    // Instances of other cores for our key, each warned about once, at most
    // one line per 10 s: anyone on the group can announce a new instance per
    // datagram. At most 64 remembered (then forgotten, and said again).
    std::set<std::uint64_t> other_cores_warned;
    LogLimiter other_cores_said;
    bool hello_unsent = false;  // the last hello was not queued (ZMQ_IMMEDIATE: no connection yet)
    int hellos_sent = 0;        // on this connection
    // The connection's first hello has left with our registrations behind it:
    // until the welcome, adds and removes go out as they happen (in order,
    // after the hello), and the welcome does not repeat them.
    bool early_adds = false;
    bool core_hears() const { return acked || early_adds; }  // adds and removes go out as they happen
    bool wrong_key = false;  // the explicit core serves another key: keep saying so
    bool via_door = false;   // core_endpoint came from the host door's redirect: go back there when it is lost
    bool door_warned = false;
    // A secured node given GECKO_CORE: the endpoint refused its CURVE
    // handshake, so it is asked as a host door, which is plain
    // (docs/SECURITY.md §5): over a plain connection, with a `list` question
    // that names nothing but the key, never a hello. A redirect then sends
    // the node to its core over CURVE.
    bool door_plain = false;
    bool door_probed = false;  // that was tried once already
    bool plain_door_channel() const { return door_plain && core_endpoint == finder->explicit_endpoint(); }
    void send_door_question();
    bool ever_acked = false;
    std::uint64_t malformed = 0;
    LogLimiter malformed_said;  // one warning per 10 s, with how many more
    // A message from the core we cannot read: counted, said (rate-limited), ignored.
    void on_malformed(const std::string& what) {
        ++malformed;
        std::string more;
        if (malformed_said.admit("malformed", LogLimiter::Clock::now(), &more))
            log.warn("discovery: ignored a message from geckocore at " + core_endpoint + " that this node cannot read (" +
                     what + ")" + more + "; " + std::to_string(malformed) +
                     " so far. Is the core another version of Gecko?");
    }
    std::pair<std::uint64_t, std::uint64_t> last_hb{};  // what our last hb said: entity count, digest

    void post(std::function<void()> f) { reactor->post(std::move(f)); }

    void start();
    Clock::time_point service(Clock::time_point now);
    void read_inbox(Clock::time_point now);
    void leave_channel();
    void sync_watches();
    void say_goodbye();
    /// `core_fingerprint`: the secret its sealed datagram names ("" when unknown: the key's own).
    void connect_to(const std::string& endpoint, Clock::time_point now, const std::string& core_fingerprint = {});
    bool send(const discovery::Writer& w);
    bool send_hello();
    void send_add(const Registration& r);
    void send_stats();
    void on_message(const zmq::message_t& msg, Clock::time_point now);
    void on_peers(const wire::Value& root);
    void on_redirect(const wire::Value& root, Clock::time_point now);
    void on_graph(const wire::Value& root);
    void send_watch_graph();
    void on_directory(const wire::Value& root);
    void send_watch_directory();
    std::vector<std::uint64_t> ids() const;
    void deliver(std::uint64_t id, Watch& w);
    void lose_core(Clock::time_point now, const std::string& why);
    void register_again(Clock::time_point now);
    void refresh_attempts();
    std::string describe_attempts_copy() const {
        std::lock_guard<std::mutex> lock(state_mutex);
        return attempts;
    }
    std::string local_endpoint_for(const std::string& bound) const;
    // Security (docs/SECURITY.md §5): a core whose security differs from ours is never joined.
    bool secured() const { return opt.curve != nullptr; }
    bool security_mismatch(const net::CoreAnswer& answer);
    void check_handshakes();
    void fail_security(const std::string& why);
};

}  // namespace gecko::detail
