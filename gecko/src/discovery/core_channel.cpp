// SPDX-License-Identifier: Apache-2.0
#include "discovery/core_channel.hpp"

#include "gecko/net/zmq_socket.hpp"
#include "gecko/wire/discovery.hpp"
#include "node/reactor.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <utility>

namespace gecko::detail {

namespace {

// The process's channels by (endpoint, key + the core's secret). Weak: a channel lives as long as
// one of its members holds it.
struct Registry {
    std::mutex mutex;
    pid_t pid = ::getpid();
    std::map<std::pair<std::string, std::string>, std::vector<std::weak_ptr<CoreChannel>>> channels;
};

Registry& registry() {
    static Registry* r = new Registry;  // never destroyed: nodes may close during static destruction
    return *r;
}

}  // namespace

CoreChannel::CoreChannel(std::shared_ptr<zmq::context_t> context, zmq::socket_t socket, bool shared)
    : context_(std::move(context)), socket_(std::move(socket)), shared_(shared) {}

CoreChannel::~CoreChannel() = default;

std::shared_ptr<CoreChannel> CoreChannel::join(const std::string& endpoint, const std::string& key, bool shared,
                                               std::uint64_t session, std::shared_ptr<Inbox> inbox,
                                               std::shared_ptr<const net::CurveKeys> curve,
                                               const std::string& core_fingerprint) {
    auto& r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    if (r.pid != ::getpid()) {
        // A forked child: the parent's sockets are not ours to use (nor to close).
        r.channels.clear();  // weak references only: nothing of the parent is touched
        r.pid = ::getpid();
    }
    auto& list = r.channels[{endpoint, key + '/' + (curve ? core_fingerprint : std::string("plain"))}];
    list.erase(std::remove_if(list.begin(), list.end(), [](const auto& w) { return w.expired(); }), list.end());
    if (shared) {
        for (const auto& weak : list) {
            auto c = weak.lock();
            if (!c || !c->shared_) continue;
            std::lock_guard<std::mutex> member_lock(c->mutex_);
            if (c->members_.size() >= capacity) continue;
            c->members_.push_back({session, std::move(inbox)});
            return c;
        }
    }
    net::SocketOptions so;
    so.immediate = true;  // never queue for a core that is not there
    so.max_message_size = discovery::max_zmq_message;
    so.reconnect = std::chrono::milliseconds(100);
    so.reconnect_max = std::chrono::milliseconds(0);  // no back-off: a restarted core is found within 100 ms
    so.curve = std::move(curve);
    so.curve_role = net::CurveRole::client;
    so.curve_peer_fingerprint = core_fingerprint;
    auto context = net::process_context();
    zmq::socket_t s = net::make_socket(*context, zmq::socket_type::dealer, so);
    std::shared_ptr<CoreChannel> c(new CoreChannel(std::move(context), std::move(s), shared));
    // Before connecting: a core that refuses our handshake (security differs) says nothing else.
    c->handshakes_ = HandshakeWatch(*c->context_, c->socket_);
    c->socket_.connect(endpoint);
    c->members_.push_back({session, std::move(inbox)});
    list.push_back(c);
    return c;
}

void CoreChannel::leave(std::uint64_t session) {
    std::lock_guard<std::mutex> lock(mutex_);
    members_.erase(std::remove_if(members_.begin(), members_.end(), [&](const Member& m) { return m.session == session; }),
                   members_.end());
}

bool CoreChannel::send(const char* data, std::size_t size) noexcept {
    std::lock_guard<std::mutex> lock(mutex_);
    bool sent = false;
    try {
        sent = socket_.send(zmq::const_buffer(data, size), zmq::send_flags::dontwait).has_value();
        // Sending may have taken ZeroMQ's notice of a message that arrived
        // meanwhile (its fd is edge-style): route what is there now.
        if (socket_.get(zmq::sockopt::events) & ZMQ_POLLIN) route_locked();
    } catch (const zmq::error_t&) {
        // The context is terminating: nothing to send to.
    }
    return sent;
}

void CoreChannel::route() noexcept {
    std::lock_guard<std::mutex> lock(mutex_);
    route_locked();
}

void CoreChannel::route_locked() noexcept {
    try {
        for (int budget = 256; budget > 0; --budget) {
            zmq::message_t msg;
            if (!socket_.recv(msg, zmq::recv_flags::dontwait)) break;
            while (msg.more()) {  // a ROUTER peer sends one frame; skip anything else
                zmq::message_t rest;
                if (!socket_.recv(rest, zmq::recv_flags::dontwait)) break;
                msg = std::move(rest);
            }
            if (members_.empty()) continue;
            // One member: it is the message's reader, whatever the message says.
            std::uint64_t to = members_.size() == 1 ? members_.front().session : 0;
            if (to == 0) {
                if (auto m = discovery::Message::parse(static_cast<const char*>(msg.data()), msg.size(), nullptr))
                    to = discovery::get_u64(m->root(), "s").value_or(0);
            }
            for (auto& member : members_) {
                if (to != 0 && member.session != to) continue;
                zmq::message_t copy;
                if (to == 0) {
                    copy.copy(msg);
                } else {
                    copy.move(msg);
                }
                {
                    std::lock_guard<std::mutex> inbox_lock(member.inbox->mutex);
                    member.inbox->messages.push_back(std::move(copy));
                }
                // Under our lock: a member leaves before its reactor goes, so the reactor is alive.
                if (member.inbox->reactor && !member.inbox->reactor->on_reactor_thread()) member.inbox->reactor->wake();
                if (to != 0) break;
            }
        }
    } catch (const zmq::error_t&) {
        // The context is terminating.
    }
}

int CoreChannel::fd() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return socket_.get(zmq::sockopt::fd);
}

void CoreChannel::set_linger(int ms) noexcept {
    std::lock_guard<std::mutex> lock(mutex_);
    try {
        socket_.set(zmq::sockopt::linger, ms);
    } catch (const zmq::error_t&) {
    }
}

unsigned CoreChannel::handshake_failures() {
    std::lock_guard<std::mutex> lock(mutex_);
    return handshakes_.failures();
}

std::size_t CoreChannel::members() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return members_.size();
}

}  // namespace gecko::detail
