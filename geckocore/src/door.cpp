// SPDX-License-Identifier: Apache-2.0
#include "door.hpp"

#include "gecko/wire/discovery.hpp"
#include "router_io.hpp"
#include "gecko/net/zmq_socket.hpp"

#include <signal.h>

#include <algorithm>
#include <cctype>
#include <cerrno>

namespace gecko::core {

using std::chrono::milliseconds;

namespace {

// Registrations come only from cores on this host: over loopback.
bool is_loopback_peer(const std::string& address) {
    return address.rfind("127.", 0) == 0 || address == "::1" || address.rfind("::ffff:127.", 0) == 0;
}

void write_entry(discovery::Writer& w, const DoorEntry& e) {
    w.kv("key", e.key);
    w.kv("instance", e.instance);
    w.kv("endpoint", e.endpoint);
    w.kv("host", e.host);
    w.kv("pid", e.pid);
    w.kv("pidns", e.pidns);
}

std::string lower(std::string s) {
    for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

}  // namespace

HostDoor::HostDoor(zmq::context_t& context, Options options, const Logger& log)
    : context_(context), options_(std::move(options)), log_(log) {}

HostDoor::Clock::time_point HostDoor::tick(Clock::time_point now) {
    if (options_.port == 0) return now + std::chrono::hours(24);
    if (now < next_tick_) return next_tick_;
    next_tick_ = now + options_.period;
    if (!door_) try_take(now);
    if (door_) {
        remember(options_.self, now);
        expire(now);
    } else {
        register_self();
    }
    return next_tick_;
}

void HostDoor::try_take(Clock::time_point now) {
    net::SocketOptions so;
    so.max_message_size = discovery::max_zmq_message;
    zmq::socket_t socket = net::make_socket(context_, zmq::socket_type::router, so);
    try {
        socket.bind("tcp://0.0.0.0:" + std::to_string(options_.port));
    } catch (const zmq::error_t&) {
        return;  // another core holds it (or something else does): register with it instead
    }
    door_.emplace(std::move(socket));
    link_.reset();  // our own registration is direct from now on
    entries_.clear();
    log_.info("holding the host door on tcp port " + std::to_string(options_.port) +
              ": GECKO_CORE=<this host> finds the core of any key here");
    remember(options_.self, now);
}

void HostDoor::register_self() {
    if (!link_) {
        net::SocketOptions so;
        so.immediate = true;  // no queue while no door: the next tick sends afresh
        so.send_queue = 4;
        so.max_message_size = discovery::max_zmq_message;
        link_.emplace(net::make_socket(context_, zmq::socket_type::dealer, so));
        link_->connect("tcp://127.0.0.1:" + std::to_string(options_.port));
    }
    discovery::Writer w("core", 6);
    write_entry(w, options_.self);
    try {
        (void)link_->send(zmq::const_buffer(w.data(), w.size()), zmq::send_flags::dontwait);
    } catch (const zmq::error_t&) {
    }
}

void HostDoor::on_link() {
    if (!link_) return;
    zmq::message_t reply;  // "door" acknowledgements: nothing to do but read them
    for (int budget = 64; budget > 0 && link_->recv(reply, zmq::recv_flags::dontwait); --budget) {
    }
}

void HostDoor::remember(DoorEntry entry, Clock::time_point now) {
    auto [it, inserted] = entries_.try_emplace(entry.instance, std::move(entry));
    if (inserted) {
        it->second.order = next_order_++;
        if (it->first != options_.self.instance)
            log_.debug("door: core of key '" + it->second.key + "' at " + it->second.endpoint + " registered");
    }
    it->second.last_seen = now;
}

// A core that exits leaves its registration behind for up to a lease; one in
// our own pid namespace is checked at once, so a restarted core's successor is
// not shadowed by its dead predecessor.
void HostDoor::expire(Clock::time_point now) {
    for (auto it = entries_.begin(); it != entries_.end();) {
        const DoorEntry& e = it->second;
        const bool dead = !e.pidns.empty() && e.pidns == options_.self.pidns && e.pid > 0 && ::kill(e.pid, 0) != 0 &&
                          errno == ESRCH;
        if (it->first != options_.self.instance && (dead || now - e.last_seen > options_.lease))
            it = entries_.erase(it);
        else
            ++it;
    }
}

std::optional<DoorEntry> HostDoor::lookup(const std::string& key) const {
    const DoorEntry* best = nullptr;
    for (const auto& [instance, e] : entries_)
        if (e.key == key && (!best || e.order < best->order)) best = &e;
    if (!best) return std::nullopt;
    return *best;
}

std::vector<DoorEntry> HostDoor::entries() const {
    std::vector<DoorEntry> out;
    for (const auto& [instance, e] : entries_) out.push_back(e);
    return out;
}

std::string HostDoor::keys_served() const {
    std::vector<std::string> keys;
    for (const auto& [instance, e] : entries_) keys.push_back("'" + e.key + "'");
    std::sort(keys.begin(), keys.end());
    keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
    if (keys.empty()) return "none";
    std::string out;
    for (const auto& k : keys) out += (out.empty() ? "" : ", ") + k;
    return out;
}

void HostDoor::on_door(Clock::time_point now) {
    if (!door_) return;
    RouterRequest request;
    for (int budget = 256; budget > 0 && next_request(*door_, request); --budget) {
        auto send = [&](const discovery::Writer& w) { answer(*door_, request.route, request.req_envelope, w.data(), w.size()); };
        auto error = [&](const std::string& code, const std::string& message) {
            discovery::Writer w("error", 4);
            w.kv("instance", options_.self.instance);
            w.kv("id", std::uint64_t{0});
            w.kv("code", code);
            w.kv("message", message);
            send(w);
        };
        std::string why = "expected one frame after the routing id";
        std::optional<discovery::Message> m;
        if (request.body) m = discovery::Message::parse(static_cast<const char*>(request.body->data()), request.body->size(), &why);
        if (!m) {
            error("malformed", why);
            continue;
        }
        const auto& root = m->root();
        if (m->type() == "core") {
            // A core of this host renews its registration. Only loopback peers may:
            // a remote host must not be able to redirect this host's nodes.
            DoorEntry e;
            e.key = discovery::get_str(root, "key").value_or("");
            e.instance = discovery::get_u64(root, "instance").value_or(0);
            e.endpoint = discovery::get_str(root, "endpoint").value_or("");
            e.host = discovery::get_str(root, "host").value_or("");
            e.pid = static_cast<std::int32_t>(discovery::get_i64(root, "pid").value_or(0));
            e.pidns = discovery::get_str(root, "pidns").value_or("");
            if (!is_loopback_peer(request.peer_address)) {
                ++refused_;
                error("refused", "the door takes registrations from cores on this host only (over loopback)");
                continue;
            }
            if (e.key.empty() || e.instance == 0 || e.endpoint.empty()) {
                error("malformed", "'core' needs key, instance and endpoint");
                continue;
            }
            remember(std::move(e), now);
            discovery::Writer w("door", 1);
            w.kv("instance", options_.self.instance);
            send(w);
            continue;
        }
        // hello (a node), list (a tool), where: "which core serves key K here?"
        const auto key = discovery::get_str(root, "key");
        // A node's registrations sent right behind its hello (DISCOVERY.md
        // §1a, §2.3): the redirect that answers the hello sends them to the core.
        if (!key && discovery::get_u64(root, "s")) continue;
        if (!key) {
            error("door", "this is the door of host " + options_.self.host + " (tcp port " + std::to_string(options_.port) +
                              "): name a key; keys served here: " + keys_served());
            continue;
        }
        expire(now);
        if (const auto target = lookup(*key)) {
            discovery::Writer w("redirect", 6);
            write_entry(w, *target);
            send(w);
            continue;
        }
        std::string hint;
        for (const auto& [instance, e] : entries_)
            if (lower(e.key) == lower(*key)) hint = " (did you mean '" + e.key + "'?)";
        error("no_core", "no geckocore for key '" + *key + "' on host " + options_.self.host + "; keys served here: " +
                             keys_served() + hint);
    }
}

}  // namespace gecko::core
