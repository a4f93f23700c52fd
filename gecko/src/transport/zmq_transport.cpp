// SPDX-License-Identifier: Apache-2.0
// ZeroMQ behind the seam: a node's OutPort is one XPUB bound on an ipc path,
// a tcp port and an inproc name; its InPort is one SUB connected to every
// node it receives from. The XPUB filters by channel (the frame's first 8
// bytes) and, being "verboser", reports every subscription: announcements
// (wire/announcement.hpp) become PortEvents.

#include "transport/zmq_transport.hpp"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <poll.h>
#include <dirent.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>
#include <ctime>

#include "gecko/error.hpp"
#include "gecko/net/zmq_socket.hpp"
#include "gecko/wire/frame.hpp"
#include "gecko/wire/names.hpp"
#include "transport/zmq_send_budget.hpp"

namespace gecko::detail {
namespace {

// sun_path holds 108 bytes including the terminating zero.
constexpr std::size_t max_ipc_path = sizeof(sockaddr_un::sun_path) - 1;

// ---- frames ----------------------------------------------------------------------

const std::uint8_t* msg_data(const void* h) noexcept {
    return static_cast<const std::uint8_t*>(zmq_msg_data(const_cast<zmq_msg_t*>(static_cast<const zmq_msg_t*>(h))));
}
std::size_t msg_size(const void* h) noexcept { return zmq_msg_size(static_cast<const zmq_msg_t*>(h)); }
void msg_destroy(void* h) noexcept { zmq_msg_close(static_cast<zmq_msg_t*>(h)); }
bool msg_share(const void* h, void* to) noexcept {
    zmq_msg_init(static_cast<zmq_msg_t*>(to));
    // Large messages are reference-counted by ZeroMQ: a copy shares the bytes.
    return zmq_msg_copy(static_cast<zmq_msg_t*>(to), const_cast<zmq_msg_t*>(static_cast<const zmq_msg_t*>(h))) == 0;
}
// A zmq_msg_t is trivially relocatable (zmq_msg_move itself copies it
// bitwise): no move function, Frame copies its bytes.
const Frame::Ops zmq_frame_ops{msg_data, msg_size, nullptr, msg_destroy, msg_share};

// ---- names --------------------------------------------------------------------------

// ipc paths are limited to ~107 bytes: keep names short and safe.
std::string sanitize(const std::string& text, std::size_t max) {
    std::string out;
    for (char c : text) {
        if (out.size() >= max) break;
        out += (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_') ? c : '_';
    }
    return out;
}

std::string hex(std::uint64_t v) {
    char s[17];
    std::snprintf(s, sizeof s, "%016llx", static_cast<unsigned long long>(v));
    return s;
}

// Whether a locator can be given to ZeroMQ at all; it came from another node.
bool usable(const std::string& locator, std::string& why) {
    why = wire::check_locator(locator);
    if (why.empty() && scheme_of(locator) != "tcp" && scheme_of(locator) != "ipc" && scheme_of(locator) != "inproc")
        why = "not a ZeroMQ locator";
    return why.empty();
}

// A socket file nobody listens on any more (its node was killed): connecting
// to it is refused. Only files older than a few seconds are looked at, so a
// socket being bound right now is never mistaken for a stale one.
void remove_stale_ipc_files(const std::string& directory) {
    DIR* dir = ::opendir(directory.c_str());
    if (!dir) return;
    const std::time_t now = std::time(nullptr);
    int budget = 256;
    while (const dirent* e = ::readdir(dir)) {
        if (--budget < 0) break;
        const std::string name = e->d_name;
        if (name.rfind("gecko-", 0) != 0 || name.size() < 11 || name.substr(name.size() - 5) != ".sock") continue;
        const std::string path = directory + "/" + name;
        struct stat st {};
        if (::lstat(path.c_str(), &st) != 0 || !S_ISSOCK(st.st_mode) || now - st.st_mtime < 5 ||
            path.size() > max_ipc_path)
            continue;
        const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0) break;
        sockaddr_un a{};
        a.sun_family = AF_UNIX;
        std::memcpy(a.sun_path, path.c_str(), path.size() + 1);
        const bool refused = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 && errno == ECONNREFUSED;
        ::close(fd);
        if (refused) ::unlink(path.c_str());
    }
    ::closedir(dir);
}

// ---- the ports -----------------------------------------------------------------------

class ZmqOutPort final : public OutPort {
public:
    ZmqOutPort(zmq::context_t& context, const PortOptions& o, const std::vector<std::string>& schemes)
        : budget_(o.send_queue_bytes, o.send_queue) {
        net::SocketOptions so;
        so.linger = o.linger;
        // Connections made from now on start with this mark; send() and
        // drain_events() hold them to the byte budget (zmq_send_budget.hpp).
        so.send_queue = budget_.initial_mark();
        mark_ = so.send_queue;
        // Subscriptions in are never dropped: a full queue would lose one
        // silently, and that subscriber would get nothing from us for good
        // (a burst of subscribers coming and going fills 1,000 quickly). The
        // reactor reads them as they come.
        so.receive_queue = 0;
        so.xpub_verboser = true;
        so.curve = o.curve;  // it only binds: the CURVE server of its links
        so.curve_role = net::CurveRole::server;
        socket_ = net::make_socket(context, zmq::socket_type::xpub, so);
        auto offers = [&](const char* s) {
            for (const auto& x : schemes)
                if (x == s) return true;
            return false;
        };
        std::vector<std::string> endpoints;
        // inproc always: the node's link to itself, and to other nodes of the process.
        endpoints.push_back("inproc://gecko-" + hex(o.session));
        // Exact locators to bind (PortOptions::listen) replace the automatic ones.
        const bool automatic = o.listen.empty();
        if (automatic && offers("ipc")) {
            ipc_directory_ = o.ipc_directory;
            // Short enough for sun_path: the directory, then at most ~60 bytes of name.
            std::string path = o.ipc_directory + "/gecko-" + sanitize(o.key, 12) + "-" + sanitize(o.node, 16) + "-" +
                               hex(o.session) + ".sock";
            if (path.size() > max_ipc_path) path = o.ipc_directory + "/gecko-" + hex(o.session) + ".sock";
            if (path.size() <= max_ipc_path) endpoints.push_back("ipc://" + path);
        }
        if (automatic && offers("tcp")) endpoints.push_back("tcp://" + o.tcp_address + ":*");
        for (const auto& l : o.listen) endpoints.push_back(l);
        for (const auto& endpoint : endpoints) {
            try {
                socket_.bind(endpoint);
            } catch (const zmq::error_t& e) {
                throw Error(Errc::transport, "cannot bind the node's data socket on '" + endpoint + "': " + e.what());
            }
            bound_.push_back(socket_.get(zmq::sockopt::last_endpoint));
        }
        fd_ = socket_.get(zmq::sockopt::fd);
    }

    ~ZmqOutPort() override {
        socket_.close();
        for (const auto& e : bound_)
            if (e.rfind("ipc://", 0) == 0) ::unlink(e.c_str() + 6);
    }

    std::vector<std::string> locators() const override { return bound_; }

    SendResult send(Buffer& frame) override {
        int mark = budget_.mark_for(frame.size());
        // A connection ZeroMQ accepted since the mark was last set has the
        // initial mark; asking for events attaches it (and reads its
        // subscriptions): set the mark again before it can get a frame. The
        // first subscription also says how low the mark may go from now on
        // (zmq_send_budget.hpp).
        bool pending = false;
        if (mark != budget_.initial_mark() || mark != mark_ || !budget_.peers()) {
            pending = (socket_.get(zmq::sockopt::events) & ZMQ_POLLIN) != 0;
            if (pending && !budget_.peers()) mark = budget_.heard();
        }
        if (mark != mark_ || (pending && mark != budget_.initial_mark())) apply_mark(mark);
        zmq::message_t message = budget_.message(frame);
        // A peer whose queue is at the mark does not get it: ZeroMQ says
        // nothing of that here, its subscriber counts the gap as drops.
        const bool sent = socket_.send(message, zmq::send_flags::dontwait).has_value();
        if (sent) budget_.sent();
        return SendResult{sent, 0};
    }

    void drain_events(FunctionRef<void(const PortEvent&)> on) override {
        zmq::message_t m;
        bool heard = false;
        for (int budget = 4096; budget > 0 && socket_.recv(m, zmq::recv_flags::dontwait); --budget) {
            heard = true;
            if (m.size() < 1) continue;
            const auto* bytes = static_cast<const char*>(m.data());
            // 0x01 + prefix: subscribe; 0x00 + prefix: unsubscribe. Plain data
            // prefixes are ZeroMQ's business; announcements are ours.
            auto who = wire::parse_announcement(std::string_view(bytes + 1, m.size() - 1));
            if (!who) continue;
            on(PortEvent{bytes[0] == 1, std::move(*who)});
        }
        // A connection ZeroMQ accepted since the mark was last set started
        // with the initial mark; one that subscribed is attached by now.
        if (!heard) return;
        const int mark = budget_.heard();
        if (mark != budget_.initial_mark() || mark != mark_) apply_mark(mark);
    }

    bool events_pending() override { return (socket_.get(zmq::sockopt::events) & ZMQ_POLLIN) != 0; }
    int event_fd() const override { return fd_; }
    void tidy() override {
        if (!ipc_directory_.empty()) remove_stale_ipc_files(ipc_directory_);
    }

private:
    // ZeroMQ sets the mark of every connection it has (zmq_setsockopt,
    // ZMQ_SNDHWM): the socket's, and its peer's side.
    void apply_mark(int mark) {
        socket_.set(zmq::sockopt::sndhwm, mark);
        mark_ = mark;
        budget_.told(mark);
    }

    ZmqSendBudget budget_;
    int mark_ = 0;  // ZMQ_SNDHWM as last set
    zmq::socket_t socket_;
    std::vector<std::string> bound_;
    std::string ipc_directory_;  // where we bound an automatic ipc socket (tidy() looks there)
    int fd_ = -1;
};

class ZmqInPort final : public InPort {
public:
    ZmqInPort(zmq::context_t& context, const PortOptions& o) {
        net::SocketOptions so;
        so.receive_queue = o.receive_queue;
        so.send_queue = 0;  // what a SUB sends are subscriptions: never dropped (see ZmqOutPort)
        // A peer that sends a frame above the node's limit is disconnected by
        // ZeroMQ before the frame is read whole (it reconnects at once).
        so.max_message_size = static_cast<std::int64_t>(o.max_message_size + wire::frame_header_size);
        so.curve = o.curve;  // it only connects: the CURVE client of its links
        so.curve_role = net::CurveRole::client;
        curve_ = o.curve;
        socket_ = net::make_socket(context, zmq::socket_type::sub, so);
        fd_ = socket_.get(zmq::sockopt::fd);
        // ZeroMQ does not reconnect a session it ended for a protocol error
        // (a frame above ZMQ_MAXMSGSIZE is one): one oversized frame would cut
        // that publisher off for good. The monitor says when a link drops;
        // the port connects it again.
        static std::atomic<unsigned> instances{0};
        const std::string monitor_endpoint = "inproc://gecko-in-monitor-" + hex(o.session) + "-" + std::to_string(instances++);
        if (zmq_socket_monitor(socket_.handle(), monitor_endpoint.c_str(), ZMQ_EVENT_DISCONNECTED | ZMQ_EVENT_CONNECT_RETRIED) == 0) {
            monitor_ = net::make_socket(context, zmq::socket_type::pair);
            monitor_.connect(monitor_endpoint);
            monitor_fd_ = monitor_.get(zmq::sockopt::fd);
        }
    }

    ~ZmqInPort() override {
        if (monitor_fd_ >= 0) zmq_socket_monitor(socket_.handle(), nullptr, 0);
    }

    bool connect(const std::string& locator, std::string& why) override { return connect_with_secret(locator, {}, why); }

    bool connect_with_secret(const std::string& locator, const std::string& peer_fingerprint, std::string& why) override {
        if (!usable(locator, why)) return false;
        drained_ = false;  // any operation on the socket may process its commands
        try {
            connect_as_client_of(locator, peer_fingerprint);
        } catch (const zmq::error_t& e) {
            why = e.what();
            return false;
        }
        connected_[locator] = peer_fingerprint;
        return true;
    }

    void disconnect(const std::string& locator) override {
        drained_ = false;
        connected_.erase(locator);
        
        try {
            socket_.disconnect(locator);
        } catch (const zmq::error_t&) {
            // Not connected: nothing to undo.
        }
    }

    void subscribe(const Interest& i) override {
        drained_ = false;
        std::uint8_t prefix[8];
        wire::store_channel(prefix, i.channel);
        // The data prefix first: when a publisher hears the announcement, the
        // subscription that lets its frames through is already in place.
        socket_.set(zmq::sockopt::subscribe, zmq::const_buffer(prefix, i.wildcard ? 4 : 8));
        // (An empty subscription would be the empty prefix: everything.)
        if (!i.announcement.empty()) socket_.set(zmq::sockopt::subscribe, i.announcement);
    }

    void unsubscribe(const Interest& i) override {
        drained_ = false;
        std::uint8_t prefix[8];
        wire::store_channel(prefix, i.channel);
        if (!i.announcement.empty()) socket_.set(zmq::sockopt::unsubscribe, i.announcement);
        socket_.set(zmq::sockopt::unsubscribe, zmq::const_buffer(prefix, i.wildcard ? 4 : 8));
    }

    bool take(Frame& out) override {
        zmq_msg_t m;
        zmq_msg_init(&m);
        if (zmq_msg_recv(&m, socket_.handle(), ZMQ_DONTWAIT) < 0) {
            zmq_msg_close(&m);
            // A drain ends here every time: asking the monitor each time
            // would cost a system call per drain. wait() polls its fd; a
            // reader that never waits still looks every few milliseconds.
            look_at_monitor(false);
            // ZeroMQ processed the socket's pending commands before saying
            // EAGAIN: its fd now fires on the next arrival.
            drained_ = true;
            return false;
        }
        drained_ = false;
        out = Frame::adopt(m, zmq_frame_ops);
        return true;
    }

    // Optimistic: unless the last take() found nothing (and nothing happened
    // since), say "maybe" and let take() find out. Asking ZeroMQ (ZMQ_EVENTS)
    // would cost the same command processing as the take() that follows.
    bool ready_now() override { return !drained_; }

    // poll() on ZeroMQ's fd directly, as a blocking recv does inside: valid
    // once the socket's commands are processed (drained_), which saves the
    // two extra checks zmq_poll makes on every call.
    unsigned wait(std::chrono::nanoseconds timeout, const std::array<int, 2>& also) override {
        if (ready_now()) return 1;
        pollfd p[4] = {{fd_, POLLIN, 0}, {also[0], POLLIN, 0}, {also[1], POLLIN, 0}, {monitor_fd_, POLLIN, 0}};
        int ms = timeout.count() <= 0 ? 0 : static_cast<int>((timeout.count() + 999999) / 1000000);
        if (!dropped_.empty()) ms = std::min(ms, static_cast<int>(drop_grace.count()));  // to reconnect it in time
        if (::poll(p, 4, ms) <= 0) {  // timeout, or EINTR: the caller re-checks ok() and its deadline
            if (!dropped_.empty()) reconnect_dropped();
            return 0;
        }
        unsigned fired = 0;
        for (unsigned i = 0; i < 3; ++i)
            if (p[i].revents & (POLLIN | POLLERR | POLLHUP)) fired |= 1u << i;
        if (p[3].revents & POLLIN) reconnect_dropped();  // then 0 fired: the caller looks again
        if (fired & 1u) drained_ = false;
        return fired;
    }

    int event_fd() const override { return fd_; }

    // Waited on with other ports: the monitor is not in that poll, so look at
    // it here (the caller wakes at least every 100 ms to call this again).
    bool prepare_wait() override {
        look_at_monitor(!dropped_.empty());
        return !ready_now();
    }

private:
    // reconnect_dropped() at most every 5 ms (each look is a system call), or now if `due`.
    void look_at_monitor(bool due) {
        if (monitor_fd_ < 0) return;
        const auto now = std::chrono::steady_clock::now();
        if (!due && now - monitor_checked_ < std::chrono::milliseconds(5)) return;
        monitor_checked_ = now;
        reconnect_dropped();
    }

    // Reads the monitor's events (never blocks) and connects again every
    // locator of ours whose link dropped for good. A link that dropped because
    // the peer went away is ZeroMQ's to re-establish (it says so with
    // CONNECT_RETRIED right after DISCONNECTED), and its pipe still holds the
    // frames that arrived before: disconnecting it here would throw them away
    // unread (a publisher that exits right after publishing). Only a session
    // ZeroMQ ended for a protocol error (an oversized frame) has no retry;
    // it is connected again once a short grace has passed without one.
    void reconnect_dropped() {
        if (monitor_fd_ < 0) return;
        const auto now = std::chrono::steady_clock::now();
        for (int budget = 64; budget > 0; --budget) {
            zmq::message_t event, address;
            if (!monitor_.recv(event, zmq::recv_flags::dontwait)) break;
            if (!event.more() || !monitor_.recv(address, zmq::recv_flags::dontwait)) continue;
            std::uint16_t what = 0;
            if (event.size() >= 2) std::memcpy(&what, event.data(), 2);
            std::string locator = address.to_string();
            if (!connected_.count(locator)) continue;
            if (what == ZMQ_EVENT_DISCONNECTED) {
                dropped_.emplace(std::move(locator), now);
            } else {
                dropped_.erase(locator);  // CONNECT_RETRIED: ZeroMQ reconnects it itself
            }
        }
        for (auto it = dropped_.begin(); it != dropped_.end();) {
            if (now - it->second < drop_grace) {
                ++it;
                continue;
            }
            const std::string locator = it->first;
            it = dropped_.erase(it);
            try {
                socket_.disconnect(locator);
            } catch (const zmq::error_t&) {
                // Already gone (the session ended): connect afresh below.
            }
            try {
                connect_as_client_of(locator, connected_[locator]);
            } catch (const zmq::error_t&) {
                connected_.erase(locator);
            }
            drained_ = false;
        }
    }

    // How long a dropped link may wait for ZeroMQ's own retry before the port reconnects it.
    static constexpr std::chrono::milliseconds drop_grace{100};

    zmq::socket_t socket_;
    zmq::socket_t monitor_;  // PAIR: the SUB's disconnect events
    int fd_ = -1;
    int monitor_fd_ = -1;
    // libzmq takes a CURVE client's server key when it connects (each
    // connection keeps a copy of the socket's options): set it per peer.
    void connect_as_client_of(const std::string& locator, const std::string& peer_fingerprint) {
        if (curve_) socket_.set(zmq::sockopt::curve_serverkey, curve_->server_public_for(peer_fingerprint));
        socket_.connect(locator);
    }

    std::shared_ptr<const net::CurveKeys> curve_;
    std::map<std::string, std::string> connected_;  // locators connected through this port -> their peer's secret
    std::map<std::string, std::chrono::steady_clock::time_point> dropped_;  // DISCONNECTED, no retry seen yet
    bool drained_ = false;  // the last operation was a take() that found nothing (see ready_now)
    std::chrono::steady_clock::time_point monitor_checked_{};
};

class ZmqTransport final : public Transport {
public:
    ZmqTransport(std::shared_ptr<zmq::context_t> context, std::vector<std::string> schemes)
        : context_(std::move(context)), schemes_(std::move(schemes)) {}
    std::vector<std::string> schemes() const override { return schemes_; }
    std::unique_ptr<OutPort> open_out(const PortOptions& o) override {
        return std::make_unique<ZmqOutPort>(*context_, o, schemes_);
    }
    std::unique_ptr<InPort> open_in(const PortOptions& o) override { return std::make_unique<ZmqInPort>(*context_, o); }

private:
    std::shared_ptr<zmq::context_t> context_;
    std::vector<std::string> schemes_;
};

}  // namespace

std::unique_ptr<Transport> make_zmq_transport(std::shared_ptr<zmq::context_t> context, std::vector<std::string> schemes) {
    return std::make_unique<ZmqTransport>(std::move(context), std::move(schemes));
}

}  // namespace gecko::detail
