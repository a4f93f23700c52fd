// SPDX-License-Identifier: Apache-2.0
// The table's sessions: hello and welcome, the checks every session message
// passes (known session, its secret), the messages themselves, and how a
// session leaves (bye, lease, a dead process). docs/DISCOVERY.md §2.

#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "gecko/shm/segment.hpp"
#include "gecko/wire/names.hpp"
#include "table.hpp"
#include "text.hpp"

namespace gecko::core {
namespace {

// A peer address for a log line or an answer ("" is a connection over ipc).
std::string shown_address(const std::string& address) { return address.empty() ? "(ipc)" : shown(address); }

// A locator a node may offer: wire::check_locator, and for shm:// a segment
// name as the nodes' readers accept it (a file name in the shm directory, so
// never a path such as shm://../../etc/passwd).
std::string check_offered_locator(const std::string& locator) {
    if (auto why = wire::check_locator(locator); !why.empty()) return why;
    constexpr std::string_view shm = "shm://";
    if (locator.compare(0, shm.size(), shm) == 0 && !detail::shm::valid_name(locator.substr(shm.size())))
        return "a shm segment name is 1-200 bytes of letters, digits, '-', '_' and '.', not starting with '.'";
    return {};
}

// A link's transport as a node reports it: a scheme name ("shm", "ipc", ...),
// kept only if it is one (it is shown by `gecko nodes` and `gecko info`).
bool is_scheme_name(const std::string& via) {
    if (via.empty() || via.size() > 16) return false;
    for (char c : via)
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' || c == '-')) return false;
    return true;
}

// The socket file of an ipc:// locator if nobody listens on it any more (its
// node was killed and could not unlink it): removed. Only gecko's own socket
// files (gecko-*.sock) are touched, and only when connecting is refused.
bool remove_stale_ipc(const std::string& locator) {
    constexpr std::string_view scheme = "ipc://";
    if (locator.compare(0, scheme.size(), scheme) != 0) return false;
    const std::string path = locator.substr(scheme.size());
    const auto slash = path.rfind('/');
    const std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
    sockaddr_un a{};
    if (name.rfind("gecko-", 0) != 0 || name.size() < 11 || name.compare(name.size() - 5, 5, ".sock") != 0 ||
        path.size() >= sizeof a.sun_path)
        return false;
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0 || !S_ISSOCK(st.st_mode)) return false;
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return false;
    a.sun_family = AF_UNIX;
    std::memcpy(a.sun_path, path.c_str(), path.size() + 1);
    const bool refused = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 && errno == ECONNREFUSED;
    ::close(fd);
    return refused && ::unlink(path.c_str()) == 0;
}

}  // namespace

// ---- answers ---------------------------------------------------------------------------------

void Table::reply_error(const std::string& route, bool req_envelope, std::uint64_t id, const std::string& code,
                        const std::string& message, std::uint64_t session) {
    discovery::Writer w("error", session != 0 ? 5 : 4);
    if (session != 0) w.kv("s", session);
    w.kv("instance", me_.instance);
    w.kv("id", id);
    w.kv("code", code);
    w.kv("message", message);
    out_.answer(route, req_envelope, w);
}

void Table::error_to(const Session& s, std::uint64_t id, const std::string& code, const std::string& message) {
    reply_error(s.route, s.req_envelope, id, code, message, s.id);
}

void Table::notify_error(std::uint64_t entity, const std::string& code, const std::string& message) {
    const auto e = entities_.find(entity);
    if (e == entities_.end()) return;
    const auto s = sessions_.find(e->second.session);
    if (s == sessions_.end()) return;
    error_to(s->second, entity, code, message);
}

std::string Table::describe(const Entity& e) const {
    const auto s = sessions_.find(e.session);
    return std::string(discovery::to_string(e.reg.kind)) + " on node '" + (s != sessions_.end() ? s->second.node : "?") + "'";
}

// Moves a session to the connection of `from`: the counts of sessions per
// connection and per peer address follow it (a session with no route is in neither).
void Table::set_route(Session& s, const Origin& from) {
    auto release = [](std::map<std::string, std::size_t>& counts, const std::string& k) {
        if (auto c = counts.find(k); c != counts.end() && --c->second == 0) counts.erase(c);
    };
    if (!s.route.empty()) {
        release(sessions_per_route_, s.route);
        release(sessions_per_address_, s.address);
    }
    s.route = from.route;
    s.address = from.address;
    if (!s.route.empty()) {
        ++sessions_per_route_[s.route];
        ++sessions_per_address_[s.address];
    }
}

// ---- hello -----------------------------------------------------------------------------------

void Table::hello(const Origin& from, const wire::Value& root, std::uint64_t sid, Clock::time_point now) {
    const std::string& route = from.route;
    const bool env = from.req_envelope;
    auto key = discovery::get_str(root, "key");
    if (!key || *key != me_.key) {
        reply_error(route, env, 0, "wrong_key",
                    "geckocore at " + me_.endpoint + " on " + me_.host + " serves key '" + me_.key + "', not '" +
                        shown(key.value_or("")) + "'",
                    sid);
        return;
    }
    const auto secret = discovery::get_u64(root, "secret");
    const auto node = discovery::get_str(root, "node").value_or("");
    const auto node_host = discovery::get_str(root, "host").value_or("");
    auto locators = discovery::get_str_array(root, "locators");
    // hostid and pidns travel in every peer map of this node's entities:
    // unbounded, two registrations would make a push exceed a node's limit.
    auto host_id = discovery::get_str(root, "hostid").value_or("");
    auto pid_ns = discovery::get_str(root, "pidns").value_or("");
    auto fingerprint = discovery::get_str(root, "fp").value_or("");
    std::string why = !secret || *secret == 0 ? "hello needs a secret" : "";
    if (why.empty()) why = check_node_text(node);
    if (why.empty() && !(why = check_node_text(node_host)).empty()) why = "host: " + why;
    if (why.empty() && !host_id.empty() && !(why = check_node_text(host_id)).empty()) why = "hostid: " + why;
    if (why.empty() && !pid_ns.empty() && !(why = check_node_text(pid_ns)).empty()) why = "pidns: " + why;
    if (why.empty() && !fingerprint_text(fingerprint)) why = "fp: not 16 hexadecimal digits";
    if (why.empty() && !locators) why = "'locators' is not an array of strings";
    if (why.empty() && locators->size() > wire::max_locators)
        why = std::to_string(locators->size()) + " locators (at most " + std::to_string(wire::max_locators) + ")";
    if (why.empty())
        for (const auto& l : *locators)
            if (auto w = check_offered_locator(l); !w.empty()) {
                why = "locator '" + shown(l) + "': " + w;
                break;
            }
    if (!why.empty()) {
        out_.count(&CoreCounters::refused);
        out_.say(LogLevel::warn, "refused hello", "refused a node's hello: " + wire::printable(why));
        reply_error(route, env, 0, "refused", "geckocore refused this node: " + why, sid);
        return;
    }
    const auto known = sessions_.find(sid);
    if (known != sessions_.end() && known->second.secret != *secret) {
        // Someone else's session id: it is not theirs to speak for.
        out_.count(&CoreCounters::auth_failures);
        out_.say(LogLevel::warn, "auth", "refused a hello for node '" + shown(known->second.node) +
                                             "' without its secret (another program reusing its session id)");
        reply_error(route, env, 0, "auth", "session " + std::to_string(sid) + " belongs to another node", sid);
        return;
    }
    if (known == sessions_.end())
        if (const auto claimed = claims_.secrets.find(sid); claimed != claims_.secrets.end() && claimed->second != *secret) {
            // A session of the previous run whose node has not come back yet: it is still that node's.
            out_.count(&CoreCounters::auth_failures);
            out_.say(LogLevel::warn, "auth", "refused a hello for a session of the core's previous run without its secret");
            reply_error(route, env, 0, "auth", "session " + std::to_string(sid) + " belongs to another node", sid);
            return;
        }
    // The quotas count what a peer cannot choose: its connection, and the
    // address that connection comes from (not the host name it claims).
    if (known == sessions_.end()) {
        const auto a = sessions_per_address_.find(from.address);
        if (a != sessions_per_address_.end() && a->second >= opt_.max_sessions_per_host) {
            out_.count(&CoreCounters::refused);
            out_.say(LogLevel::warn, "sessions per host",
                     "refused node '" + shown(node) + "': address " + shown_address(from.address) + " already has " +
                         std::to_string(opt_.max_sessions_per_host) + " nodes");
            reply_error(route, env, 0, "refused",
                        "address " + shown_address(from.address) + " already has " +
                            std::to_string(opt_.max_sessions_per_host) +
                            " nodes registered (geckocore --max-sessions-per-host)",
                        sid);
            return;
        }
        const auto r = sessions_per_route_.find(route);
        if (r != sessions_per_route_.end() && r->second >= opt_.max_sessions_per_connection) {
            out_.count(&CoreCounters::refused);
            out_.say(LogLevel::warn, "sessions per connection",
                     "refused node '" + shown(node) + "': its connection already carries " +
                         std::to_string(opt_.max_sessions_per_connection) + " nodes");
            reply_error(route, env, 0, "refused",
                        "this connection already carries " + std::to_string(opt_.max_sessions_per_connection) +
                            " nodes (geckocore --max-sessions-per-connection)",
                        sid);
            return;
        }
    }
    auto& s = sessions_[sid];
    const bool fresh = s.id == 0;
    if (fresh) ++changes_;
    set_route(s, from);
    s.id = sid;
    s.secret = *secret;
    s.node = node;
    s.host = node_host;
    s.host_id = std::move(host_id);
    s.pid = static_cast<std::int32_t>(discovery::get_i64(root, "pid").value_or(0));
    s.pidns = std::move(pid_ns);
    s.fingerprint = std::move(fingerprint);
    s.locators = std::move(*locators);
    s.local = s.host == me_.host && !s.pidns.empty() && s.pidns == me_.pidns && s.pid > 0;
    s.req_envelope = env;
    s.last_seen = now;
    if (!fresh) {
        // The node lists everything it has: drop what it withdrew while we could not hear it.
        std::set<std::uint64_t> keep;
        if (const auto ids = discovery::find(root, "ids"))
            for (const wire::Value& item : ids->items())
                if (const auto id = item.as_uint()) keep.insert(*id);
        const auto mine = s.entities;
        for (auto id : mine)
            if (!keep.count(id)) remove_entity(id);
    } else {
        out_.say(LogLevel::info, "joined", "node '" + shown(s.node) + "' joined (host " + shown(s.host) +
                                               ", pid " + std::to_string(s.pid) + ")");
    }
    discovery::Writer w("welcome", 7);
    w.kv("s", sid);
    w.kv("instance", me_.instance);
    w.kv("lease_ms", static_cast<std::int64_t>(opt_.lease.count()));
    w.kv("host", me_.host);
    w.kv("pid", me_.pid);
    w.kv("key", me_.key);
    w.kv("warm", warm_);
    out_.answer(route, env, w);
}

// ---- the other session messages ----------------------------------------------------------------

void Table::handle(const Origin& from, const std::string& t, const wire::Value& root, std::uint64_t sid,
                   Clock::time_point now) {
    const std::string& route = from.route;
    const bool env = from.req_envelope;
    const auto it = sessions_.find(sid);
    if (it == sessions_.end()) {
        if (t == "bye") return;
        discovery::Writer w("unknown", 2);
        w.kv("s", sid);
        w.kv("instance", me_.instance);
        out_.answer(route, env, w);
        return;
    }
    Session& s = it->second;
    if (discovery::get_u64(root, "secret").value_or(0) != s.secret) {
        out_.count(&CoreCounters::auth_failures);
        out_.say(LogLevel::warn, "auth", "refused '" + t + "' for node '" + shown(s.node) +
                                             "' without its secret (another program reusing its session id)");
        reply_error(route, env, 0, "auth", "session " + std::to_string(sid) + " belongs to another node", sid);
        return;
    }
    // A new routing id means the node's TCP link was re-established: pushes sent
    // meanwhile may be lost, so its watchers get their current peer sets again.
    const bool reconnected = s.route != route;
    set_route(s, from);
    s.req_envelope = env;
    s.last_seen = now;
    if (reconnected) {
        for (auto id : s.entities)
            if (watched_kind(entities_.at(id).reg.kind)) push_full(id);
        if (s.watch_directory) push_directory(s);
    }
    if (t == "hb") {
        discovery::Writer w("hb", 4);
        w.kv("s", s.id);
        w.kv("instance", me_.instance);
        w.kv("n", static_cast<std::uint64_t>(s.entities.size()));
        w.kv("digest", s.digest);
        send_to(s, w);
    } else if (t == "add") {
        auto reg = discovery::read_registration(root);
        if (!reg) {
            out_.count(&CoreCounters::malformed_messages);
            error_to(s, discovery::get_u64(root, "id").value_or(0), "malformed", "'add' needs id, kind, topic, type");
            return;
        }
        add(s, std::move(*reg));
    } else if (t == "remove") {
        const auto id = discovery::get_u64(root, "id");
        const auto e = id ? entities_.find(*id) : entities_.end();
        if (e != entities_.end() && e->second.session == s.id) remove_entity(*id);
    } else if (t == "stats") {
        stats(s, root, now);
    } else if (t == "watch_graph") {
        s.watch_graph = true;
        for (const auto& [key, topic] : topics_) {
            const auto first = entities_.find(topic.by_order.begin()->second);
            graph_event_to(s, true, key, first == entities_.end() ? "" : first->second.reg.type_name);
        }
    } else if (t == "watch_directory") {
        if (!s.watch_directory) ++directory_watchers_;
        s.watch_directory = true;
        push_directory(s);
    } else if (t == "bye") {
        remove_session(s.id, "said goodbye");
    } else {
        out_.count(&CoreCounters::malformed_messages);
        error_to(s, 0, "unknown_type", "unknown message type '" + shown(t) + "'");
    }
}

void Table::stats(Session& s, const wire::Value& root, Clock::time_point now) {
    const auto list = discovery::find(root, "stats");
    if (!list || list->type() != wire::Type::array) {
        out_.count(&CoreCounters::malformed_messages);
        return;
    }
    for (const wire::Value& item : list->items()) {
        const auto st = discovery::read_stats(item);
        if (!st) continue;
        const auto e = entities_.find(st->id);
        if (e == entities_.end() || e->second.session != s.id) continue;
        e->second.stats = st;
        e->second.stats_at = now;
    }
    // Optional (nodes before it send none): replaces the session's links when present.
    if (const auto links = discovery::find(root, "links"); links && links->type() == wire::Type::array) {
        std::size_t bad_links = 0;
        s.links.clear();
        for (const wire::Value& item : links->items()) {
            if (s.links.size() >= max_links_per_session) break;
            const auto peer = discovery::get_u64(item, "s");
            const auto via = discovery::get_str(item, "via");
            if (!peer || !via) continue;
            if (!is_scheme_name(*via)) {
                ++bad_links;
                continue;
            }
            s.links.emplace_back(*peer, *via);
        }
        if (bad_links > 0) {
            out_.count(&CoreCounters::malformed_messages);
            out_.say(LogLevel::warn, "bad link",
                     "node '" + shown(s.node) + "' reported " + std::to_string(bad_links) +
                         " link(s) whose transport is not a scheme name (skipped)");
        }
    }
}

// ---- leaving ---------------------------------------------------------------------------------

void Table::expire(Clock::time_point now, bool check_pids) {
    std::vector<std::uint64_t> expired, dead;
    for (const auto& [id, s] : sessions_) {
        if (now - s.last_seen > opt_.lease)
            expired.push_back(id);
        else if (check_pids && s.local && ::kill(s.pid, 0) != 0 && errno == ESRCH)
            dead.push_back(id);
    }
    for (auto id : expired) {
        out_.count(&CoreCounters::leases_expired);
        remove_session(id, "lease expired (no heartbeat for " + std::to_string(opt_.lease.count()) + " ms)");
    }
    for (auto id : dead) {
        out_.count(&CoreCounters::dead_processes);
        remove_session(id, "process is gone");
    }
}

void Table::end_warm_up() {
    warm_ = false;
    if (!claims_.secrets.empty() || !claims_.entities.empty()) ++changes_;
    claims_ = {};
    for (const auto& [id, e] : entities_)
        if (watched_kind(e.reg.kind)) push_full(id);
    for (const auto& [id, s] : sessions_)
        if (s.watch_directory) push_directory(s);
}

Claims Table::claims() const {
    Claims c = claims_;
    for (const auto& [id, s] : sessions_) c.secrets[id] = s.secret;
    for (const auto& [id, e] : entities_) c.entities[id] = e.session;
    return c;
}

void Table::remove_session(std::uint64_t id, const std::string& why) {
    const auto it = sessions_.find(id);
    if (it == sessions_.end()) return;
    ++changes_;
    out_.say(LogLevel::info, "left", "node '" + shown(it->second.node) + "' (host " + shown(it->second.host) +
                                         ", pid " + std::to_string(it->second.pid) + ") left: " + why);
    // One push per remaining watcher for everything the node had, not one per entity.
    std::map<std::uint64_t, std::vector<std::uint64_t>> gone_for;
    const auto mine = it->second.entities;
    for (auto e : mine) {
        const auto en = entities_.find(e);
        if (en == entities_.end()) continue;
        for (auto w : watchers_of(en->second))
            if (!mine.count(w)) gone_for[w].push_back(e);
    }
    std::set<std::string> names;
    std::set<TopicKey> keys;
    for (auto e : mine) {
        // Remove without pushing: the batched pushes below say it all.
        const auto en = entities_.find(e);
        if (en == entities_.end()) continue;
        if (key_wide_.erase(e) > 0) {
            entities_.erase(en);
            continue;
        }
        const TopicKey key{is_service(en->second.reg.kind), en->second.reg.topic};
        keys.insert(key);
        names.insert(key.name);
        if (auto t = topics_.find(key); t != topics_.end()) {
            t->second.erase(en->second);
            if (t->second.by_order.empty()) {
                const std::string type = en->second.reg.type_name;
                topics_.erase(t);
                graph_event(false, key, type);
            }
        }
        entities_.erase(en);
    }
    if (it->second.watch_directory) --directory_watchers_;
    set_route(it->second, Origin{});
    // A node of this host that died (kill -9) leaves its ipc socket file behind.
    if (it->second.local)
        for (const auto& l : it->second.locators)
            if (remove_stale_ipc(l)) out_.say(LogLevel::debug, "stale ipc", "removed the stale socket file of " + l);
    sessions_.erase(it);
    for (const auto& [w, gone] : gone_for) push_delta(w, {}, gone);
    for (const auto& key : keys) directory_changed(key);
    out_.names_changed(names);
}

}  // namespace gecko::core
