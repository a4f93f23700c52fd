// SPDX-License-Identifier: Apache-2.0
// The discovery client's half that reads what the core sends: peer sets,
// graph events, directory updates, redirects and errors.
#include "discovery/discovery_client_impl.hpp"
#include "discovery/core_security.hpp"

namespace gecko::detail {


namespace {

bool same_peers(const std::vector<Peer>& a, const std::vector<Peer>& b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i) {
        const auto& x = a[i];
        const auto& y = b[i];
        if (x.reg.id != y.reg.id || x.locators != y.locators || x.reg.type_name != y.reg.type_name ||
            x.session != y.session || x.node != y.node || x.host != y.host || x.host_id != y.host_id || x.pid != y.pid)
            return false;
    }
    return true;
}

}  // namespace

void DiscoveryClient::Impl::deliver(std::uint64_t id, Watch& w) {
    (void)id;
    if (!w.callback || !w.known) return;
    w.delivered = true;
    try {
        w.callback(w.peers);
    } catch (const std::exception& e) {
        log.error(std::string("discovery: peer callback threw: ") + e.what());
    }
}

void DiscoveryClient::Impl::on_peers(const wire::Value& root) {
    const auto id = discovery::get_u64(root, "id");
    const auto list = discovery::find(root, "peers");
    if (!id || !list || list->type() != wire::Type::array) {
        on_malformed("a 'peers' without an id or a peers array");
        return;
    }
    if (registrations.find(*id) == registrations.end()) return;  // removed meanwhile
    std::vector<Peer> fresh;
    for (const wire::Value& item : list->items()) {
        if (auto p = discovery::read_peer(item)) fresh.push_back(std::move(*p));
    }
    auto& w = watches[*id];
    std::map<std::uint64_t, Peer> merged;
    // During a core's warm-up (`partial`), its table may still lack peers whose
    // nodes have not re-registered yet: add what it reports, remove only what it
    // says is gone, never infer a departure from an absence.
    if (discovery::get_bool(root, "partial", false)) {
        for (auto& p : w.peers) merged.emplace(p.reg.id, p);
        if (const auto gone = discovery::find(root, "gone")) {
            for (const wire::Value& item : gone->items())
                if (const auto id_gone = item.as_uint()) merged.erase(*id_gone);
        }
    }
    for (auto& p : fresh) merged[p.reg.id] = std::move(p);
    std::vector<Peer> next;
    next.reserve(merged.size());
    for (auto& [pid_, p] : merged) next.push_back(std::move(p));
    const bool changed = !w.known || !same_peers(w.peers, next);
    w.peers = std::move(next);
    w.known = true;
    if (changed || !w.delivered) deliver(*id, w);
}

void DiscoveryClient::Impl::on_message(const zmq::message_t& msg, Clock::time_point now) {
    std::string why;
    auto m = discovery::Message::parse(static_cast<const char*>(msg.data()), msg.size(), &why);
    if (!m) {
        on_malformed(why);
        return;
    }
    last_rx = now;
    const auto& root = m->root();
    const auto& t = m->type();
    const auto inst = discovery::get_u64(root, "instance").value_or(0);
    if (t == "welcome") {
        const bool restarted = ever_acked && inst != instance;
        instance = inst;
        core_lease = milliseconds(discovery::get_i64(root, "lease_ms").value_or(opt.lease.count()));
        heartbeat_period = std::max(milliseconds(50), std::min(opt.lease, core_lease) / 3);
        // Unless every add and remove since this connection's only hello
        // (the one welcomed) went out behind it, the core hears them all now.
        if (!(early_adds && hellos_sent == 1))
            for (const auto& [id, r] : registrations) send_add(r);
        early_adds = false;
        if (!stats.empty()) send_stats();
        send_watch_graph();
        send_watch_directory();
        next_heartbeat = now + heartbeat_period;
        next_stats = now + milliseconds(3000);
        finder->note_unicast(core_endpoint == finder->explicit_endpoint() ? "answered" : "");
        if (restarted)
            log.info("discovery: geckocore restarted (instance " + std::to_string(inst) + "); re-registered " +
                     std::to_string(registrations.size()) + " entities");
        else if (warned)
            log.info("discovery: found geckocore for key '" + opt.key + "' at " + core_endpoint);
        else if (!ever_acked)
            log.debug("discovery: registered with geckocore at " + core_endpoint);
        ever_acked = true;
        {
            std::lock_guard<std::mutex> lock(state_mutex);
            acked = true;
        }
        state_cv.notify_all();
        refresh_attempts();
    } else if (t == "unknown") {
        // The core does not know us: it restarted, or expired our lease.
        if (acked) log.info("discovery: geckocore does not know this node (restart?); registering again");
        register_again(now);
    } else if (t == "hb") {
        if (acked && inst != 0 && inst != instance) {
            register_again(now);
        } else if (acked) {
            // The core's view of our entities (count, digest of ids) must be ours:
            // if a registration got lost on its side, say everything again.
            // The core answers in order: an entity added since our hb left is
            // not in its answer yet, and is not lost. So the answer must match
            // what we said, or what we have now.
            const auto n = discovery::get_u64(root, "n");
            const auto digest = discovery::get_u64(root, "digest");
            const auto mine = ids();
            const std::pair<std::uint64_t, std::uint64_t> now_said{mine.size(), discovery::entity_digest(mine)};
            if (n && digest && std::make_pair(*n, *digest) != last_hb && std::make_pair(*n, *digest) != now_said) {
                log.info("discovery: geckocore's view of this node differs from ours (" + std::to_string(*n) + " entities, we have " +
                         std::to_string(mine.size()) + "); registering everything again");
                register_again(now);
            }
        }
    } else if (t == "graph") {
        on_graph(root);
    } else if (t == "directory") {
        on_directory(root);
    } else if (t == "peers") {
        on_peers(root);
    } else if (t == "redirect") {
        on_redirect(root, now);
    } else if (t == "list" && plain_door_channel()) {
        // Asked as a host door, it answered as a core: a plain one.
        fail_security(plain_core_at(opt.key, core_endpoint, opt.secret_path, "node", "node") + ". Give that core the secret too");
    } else if (t == "error") {
        const auto id = discovery::get_u64(root, "id").value_or(0);
        const auto code = discovery::get_str(root, "code").value_or("error");
        if (id == 0) early_adds = false;  // perhaps our hello refused: the welcome, if any, hears everything again
        const auto text = discovery::get_str(root, "message").value_or("(no message)");
        if (code == "no_core") {  // the host door knows no core of our key (yet): keep asking it
            if (!door_warned) log.warn("discovery: " + text + "; waiting for it to start");
            door_warned = true;
            finder->note_unicast("the host door there: " + text);
            refresh_attempts();
            return;
        }
        if (code == "refused" && id == 0 && share && channel && channel->members() > 1) {
            // A core that takes fewer nodes per connection than we put on one
            // (--max-sessions-per-connection): this node gets a connection of its own.
            log.debug("discovery: geckocore refused this node on a shared connection (" + text + "); connecting on its own");
            share = false;
            const auto endpoint = core_endpoint;
            const bool door = via_door;
            leave_channel();
            connect_to(endpoint, now);
            via_door = door;
            return;
        }
        if (code == "unknown_type" && text.find("'watch_directory'") != std::string::npos) {
            // A core older than the channel directory: said once by whoever asked for it.
            if (directory_unsupported) directory_unsupported();
            return;
        }
        if (code == "wrong_key") {
            if (!wrong_key) log.error("discovery: " + text);
            wrong_key = true;
            finder->note_unicast("the core there serves another key: " + text);
            refresh_attempts();
            return;
        }
        // A colliding name is refused for good: the entity is no longer ours to
        // register (nor to count in the heartbeat's digest, which would make us
        // register everything again every heartbeat).
        if (code == "collision" && id != 0) {
            registrations.erase(id);
            watches.erase(id);
        }
        // An error about one of our entities goes to its owner, who logs it once;
        // only the rest is logged here.
        if (!error_callback || id == 0) log.warn("discovery: geckocore reports " + code + ": " + text);
        if (error_callback && id != 0) {
            try {
                error_callback(id, code, text);
            } catch (const std::exception& e) {
                log.error(std::string("discovery: error callback threw: ") + e.what());
            }
        }
    }
}

void DiscoveryClient::Impl::on_graph(const wire::Value& root) {
    if (!graph_callback) return;
    const auto event = discovery::get_str(root, "event").value_or("");
    const auto name = discovery::get_str(root, "name");
    if (!name || (event != "appeared" && event != "gone")) {
        on_malformed("a 'graph' event without a name, or neither appeared nor gone");
        return;
    }
    graph_callback(event == "appeared", discovery::get_bool(root, "service", false), *name,
                   discovery::get_str(root, "type").value_or(""));
}

void DiscoveryClient::Impl::on_directory(const wire::Value& root) {
    if (!directory_callback) return;
    DirectoryUpdate u;
    u.partial = discovery::get_bool(root, "partial", false);
    const auto channels = discovery::find(root, "channels");
    const auto gone = discovery::find(root, "gone");
    if (!channels || channels->type() != wire::Type::array || (gone && gone->type() != wire::Type::array)) {
        on_malformed("a 'directory' message without its 'channels' array");
        return;
    }
    for (const wire::Value& item : channels->items())
        if (auto e = discovery::read_channel_entry(item)) u.channels.push_back(std::move(*e));
    if (gone)
        for (const wire::Value& item : gone->items())
            if (auto name = discovery::get_str(item, "name"))
                u.gone.emplace_back(discovery::get_bool(item, "service", false), std::move(*name));
    directory_callback(u);
}

// The host door (the well-known port of GECKO_CORE=host) names the core of our
// key on that host: connect there, and come back to the door if it is lost.
void DiscoveryClient::Impl::on_redirect(const wire::Value& root, Clock::time_point now) {
    const auto door = finder->explicit_endpoint();
    if (door.empty() || core_endpoint != door) return;  // only the door we asked redirects us
    const auto target = net::redirect_target(root, door);
    if (!target) {
        on_malformed("a 'redirect' without a usable endpoint");
        return;
    }
    if (target->loopback_only) {
        finder->note_unicast("the core of key '" + opt.key + "' on that host listens on loopback only (" + target->endpoint + ")");
        refresh_attempts();
        return;
    }
    finder->note_unicast("the host door sent us to " + target->endpoint);
    log.debug("discovery: the host door at " + door + " sends us to " + target->endpoint);
    connect_to(target->endpoint, now);
    via_door = true;
    door_warned = false;
    refresh_attempts();
}

}  // namespace gecko::detail
