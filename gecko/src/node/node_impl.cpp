// SPDX-License-Identifier: Apache-2.0
#include "node/node_impl.hpp"

#include "discovery/core_query.hpp"

#include <unistd.h>

#include <algorithm>
#include <fstream>

#include "gecko/net/net.hpp"
#include "gecko/error.hpp"
#include "gecko/net/zmq_socket.hpp"
#include "gecko/signals.hpp"
#include "gecko/time.hpp"
#include "transport/registry.hpp"

namespace gecko::detail {
namespace {

std::string pid_namespace() {
    char buf[128] = {};
    const auto n = ::readlink("/proc/self/ns/pid", buf, sizeof buf - 1);
    return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string();
}

bool has(const std::vector<std::string>& v, const std::string& x) { return std::find(v.begin(), v.end(), x) != v.end(); }

}  // namespace

NodeImpl::NodeImpl(NodeOptions options)
    : options_(std::move(options)), logger_(options_.name), notices_(logger_), random_(std::random_device{}()) {
    if (options_.key.empty())
        throw Error(Errc::invalid_argument, "gecko::Node needs a key (the robot's name): pass one or set GECKO_KEY");
    if (options_.ipc_directory.empty()) options_.ipc_directory = "/tmp";
    here_.host = net::hostname();
    here_.host_id = net::host_id();
    here_.pid = static_cast<std::int32_t>(::getpid());
    here_.pid_namespace = pid_namespace();
    session_ = net::random_id();
    // The key's secret, if this machine has one, secures every ZeroMQ link
    // (docs/SECURITY.md §5); an unusable secret file stops the node here.
    security_ = security::KeySecurity::find(options_.key);
    if (security_.secured()) zap_.emplace(net::process_context(), *security_.curve(), options_.name);
    // Discovery first: its search for the core (a multicast query, or the
    // connection to GECKO_CORE) is under way while the ports open below.
    // The hello that carries their locators leaves from the reactor, later.
    if (options_.discovery) {
        discovery_ = std::make_unique<DiscoveryClient>(discovery_options(), &reactor_);
        discovery_->on_error([this](std::uint64_t id, const std::string& code, const std::string& message) {
            notices_.add(LogLevel::error, message, message);  // logged once per distinct conflict
            if (code != "collision") return;
            std::lock_guard<std::mutex> lock(entities_mutex_);
            if (const auto it = entities_.find(id); it != entities_.end()) it->second->refused(message);
        });
        session_ = discovery_->session();  // one id for the node, its ports and its core session
    }

    // Transports: which schemes this node offers (or the exact locators to bind).
    std::vector<std::string> schemes = options_.transports;
    for (const auto& l : options_.listen) {
        const std::string s(scheme_of(l));
        if (!has(schemes, s)) schemes.push_back(s);
    }
    PortOptions po;
    po.node = options_.name;
    po.session = session_;
    po.key = options_.key;
    po.curve = security_.curve();
    po.segment_key = security_.segment_key();
    po.accepted_segment_key = security_.accepted_segment_key();
    po.ipc_directory = options_.ipc_directory;
    po.tcp_address = options_.tcp_address;
    po.send_queue = options_.send_queue;
    po.send_queue_bytes = options_.send_queue_bytes;
    po.receive_queue = options_.receive_queue;
    po.max_message_size = options_.max_message_size;
    po.linger = options_.linger;
    po.spin = options_.spin;
    po.group_access = options_.shared_memory_group;
    po.memory = options_.shared_memory_size;
    po.notice = [this](LogLevel level, const std::string& reason, const std::string& message) {
        notices_.add(level, reason, message);  // queued: the reactor writes it, with no lock held
    };
    if (options_.shared_memory == NodeOptions::SharedMemory::off)
        schemes.erase(std::remove(schemes.begin(), schemes.end(), "shm"), schemes.end());

    // One transport per registered kind this node offers a scheme of. With
    // nothing named (explicit peers only, say), the registry's network
    // transport opens anyway: it connects to what it is told to.
    std::vector<std::unique_ptr<OutPort>> outs;
    std::vector<std::unique_ptr<InPort>> ins;
    std::vector<std::vector<std::string>> in_schemes;
    for (const auto& s : schemes)
        if (!transport_for(s))
            throw Error(Errc::invalid_argument, "node '" + options_.name + "': unknown transport '" + s +
                                                    "' (known: " + known_schemes() + ")");
    for (const auto& kind : transport_kinds()) {
        std::vector<std::string> offered, all;
        for (const auto& s : kind.schemes) {
            all.emplace_back(s.scheme);
            if (has(schemes, std::string(s.scheme))) offered.emplace_back(s.scheme);
        }
        const bool reaches_network = std::any_of(kind.schemes.begin(), kind.schemes.end(),
                                                 [](const SchemeInfo& s) { return s.reach == Reach::network; });
        if (offered.empty() && !(schemes.empty() && reaches_network)) continue;
        PortOptions kind_po = po;
        for (const auto& l : options_.listen)
            if (transport_for(scheme_of(l)) == &kind) kind_po.listen.push_back(l);
        transports_.push_back(kind.open(offered));
        outs.push_back(transports_.back()->open_out(kind_po));
        ins.push_back(transports_.back()->open_in(kind_po));
        in_schemes.push_back(std::move(all));  // an in-port connects to any of its schemes, offered or not
    }
    outbound_ = std::make_unique<Outbound>(std::move(outs), options_.key, notices_);
    inbound_ = std::make_unique<Inbound>(std::move(ins), std::move(in_schemes), notices_, reactor_, options_.spin);
    notices_.on_added([this] { reactor_.wake(); });

    // Our own subscribers hear our own publishers through a link to ourselves.
    if (const auto self = self_locator(outbound_->locators()); !self.empty()) inbound_->connect(self);
    for (const auto& peer : options_.peers) inbound_->connect(peer);

    if (discovery_) discovery_->set_locators(outbound_->locators());
    for (int fd : outbound_->event_fds())
        reactor_.watch(fd, [this] { outbound_->drain_events(); }, true);
    tidy_at_ = Reactor::Clock::now() + std::chrono::milliseconds(100);
    reactor_.start([this](Reactor::Clock::time_point now) { return tick(now); });
}

NodeImpl::~NodeImpl() { close(); }

Graph NodeImpl::graph(std::chrono::milliseconds timeout) {
    if (!options_.discovery) throw Error(Errc::invalid_argument, "graph(): node '" + options_.name + "' runs without discovery");
    net::FinderOptions f = finder_options(options_);
    if (discovery_) {
        const auto endpoint = discovery_->core_endpoint();
        if (!endpoint.empty()) {  // the core we already talk to, without searching
            f.multicast = false;
            f.core = endpoint;
        }
    }
    return query_core(f, timeout);
}

void NodeImpl::throw_closed(const std::string& what) const {
    throw Error(Errc::closed, what + " outlived its node '" + options_.name + "' (key '" + options_.key +
                                  "'): the Node was destroyed, so it no longer sends or receives");
}

std::uint64_t NodeImpl::new_id() {
    std::lock_guard<std::mutex> lock(random_mutex_);
    std::uint64_t id = 0;
    while (id == 0) id = random_();
    return id;
}

DiscoveryOptions NodeImpl::discovery_options() const {
    DiscoveryOptions d;
    static_cast<net::FinderOptions&>(d) = finder_options(options_);
    d.lease = options_.lease;
    d.curve = security_.curve();
    d.seal = security_.datagram_key();
    d.secret_path = security_.path();
    return d;
}

void NodeImpl::close() {
    std::lock_guard<std::mutex> guard(close_mutex_);
    if (closed_.exchange(true)) return;
    stop_spinner();
    inbound_->close();
    // Entities first: publishers say "end" to their subscribers while the links are up.
    std::vector<Entity*> entities;
    {
        std::lock_guard<std::mutex> lock(entities_mutex_);
        for (auto& [id, e] : entities_) entities.push_back(e);
    }
    for (Entity* e : entities) e->node_closed();
    if (discovery_) {
        discovery_->close();  // posts the goodbye; stop() below runs it
    }
    reactor_.stop();
    notices_.flush();
    discovery_.reset();
    outbound_->close();
}

// ---- entities -----------------------------------------------------------------------------------

void NodeImpl::attach(Entity& e, const Registration& registration) {
    {
        std::lock_guard<std::mutex> lock(entities_mutex_);
        entities_[e.id()] = &e;
    }
    if (!discovery_) return;
    if (registration.wildcard || !registration.schema.empty()) return discovery_->add(registration);
    Registration r = registration;
    r.schema = schema_for(r.type_name);
    discovery_->add(r);
}

void NodeImpl::declare_schema(const wire::Schema& schema) {
    std::lock_guard<std::mutex> lock(schemas_mutex_);
    for (const auto& t : schema.types()) schemas_.try_emplace(t.type_name, t);
}

std::string NodeImpl::schema_for(const std::string& type_name) const {
    std::vector<std::string> roots{type_name};
    if (const auto arrow = type_name.find("->"); arrow != std::string::npos)
        roots = {type_name.substr(0, arrow), type_name.substr(arrow + 2)};
    std::lock_guard<std::mutex> lock(schemas_mutex_);
    // The declared types and every message type their fields name, as far as declared.
    std::vector<wire::MessageSchema> types;
    std::set<std::string> seen;
    std::vector<std::string> todo(roots.rbegin(), roots.rend());
    while (!todo.empty()) {
        const std::string name = todo.back();
        todo.pop_back();
        if (!seen.insert(name).second) continue;
        const auto it = schemas_.find(name);
        if (it == schemas_.end()) return "";  // part of it undeclared: a schema must be complete

        types.push_back(it->second);
        std::vector<const wire::FieldType*> fields;
        for (const auto& f : it->second.fields) fields.push_back(&f.type);
        while (!fields.empty()) {
            const wire::FieldType* t = fields.back();
            fields.pop_back();
            if (t->kind == wire::FieldType::Kind::message) todo.push_back(t->name);
            for (const auto& i : t->item) fields.push_back(&i);
            for (const auto& f : t->fields) fields.push_back(&f.type);
        }
    }
    const auto bytes = wire::Schema(std::move(types)).encode();
    if (bytes.size() > wire::Schema::max_encoded_size) return "";
    return std::string(bytes.begin(), bytes.end());
}

void NodeImpl::attach_watching(Entity& e, const Registration& registration) {
    attach(e, registration);
    if (!discovery_) return;
    const std::uint64_t id = e.id();
    discovery_->watch(id, [this, id](const std::vector<Peer>& peers) {
        on_peers(id, peers);
        std::lock_guard<std::mutex> lock(entities_mutex_);  // detach() waits for this
        const auto it = entities_.find(id);
        if (it != entities_.end()) it->second->peers_changed(peers);
    });
}

void NodeImpl::detach(Entity& e) {
    const std::uint64_t id = e.id();
    {
        std::lock_guard<std::mutex> lock(entities_mutex_);
        entities_.erase(id);
    }
    if (closed()) return;
    if (discovery_) discovery_->remove(id);
    reactor_.post([this, id] {
        // Its links go when no other entity needs them (prune_links).
        const auto it = wants_.find(id);
        if (it == wants_.end()) return;
        for (auto session : it->second) {
            const auto l = links_.find(session);
            if (l != links_.end()) l->second.users.erase(id);
        }
        wants_.erase(it);
    });
}

void NodeImpl::add_dispatchable(const Dispatchable* self, std::weak_ptr<Dispatchable> d) {
    std::lock_guard<std::mutex> lock(entities_mutex_);
    dispatchables_.emplace_back(self, std::move(d));
}

void NodeImpl::remove_dispatchable(const Dispatchable* d) {
    std::lock_guard<std::mutex> lock(entities_mutex_);
    dispatchables_.erase(std::remove_if(dispatchables_.begin(), dispatchables_.end(),
                                        [&](const auto& entry) { return entry.first == d || entry.second.expired(); }),
                         dispatchables_.end());
}

// Whether a dispatchable is ready; with `out`, every ready one goes there (else
// the first ends the look). The strong references taken under the lock are
// released after it (see dispatchables_), from a per-thread list that keeps its
// capacity: no allocation per call once warm.
bool NodeImpl::collect_ready(std::vector<std::shared_ptr<Dispatchable>>* out) {
    thread_local std::vector<std::shared_ptr<Dispatchable>> held;
    bool any = false;
    {
        std::lock_guard<std::mutex> lock(entities_mutex_);
        for (const auto& entry : dispatchables_) {
            auto d = entry.second.lock();
            if (!d) continue;
            const bool ready = d->runnable();
            any = any || ready;
            if (ready && out) {
                out->push_back(std::move(d));
                continue;
            }
            held.push_back(std::move(d));
            if (ready) break;
        }
    }
    held.clear();
    return any;
}

std::string NodeImpl::type_name_of(std::uint64_t entity) const {
    std::lock_guard<std::mutex> lock(directory_mutex_);
    const auto it = directory_.find(entity);
    return it == directory_.end() ? std::string() : it->second.type;
}

// ---- links (reactor thread) -------------------------------------------------------------------------

// Discovery names the remote entities one of ours deals with; we keep one link
// per remote node, on the locator chosen for that pair, for as long as some
// local entity needs it.
void NodeImpl::on_peers(std::uint64_t entity, const std::vector<Peer>& peers) {
    std::set<std::uint64_t> sessions;
    {
        std::lock_guard<std::mutex> lock(directory_mutex_);
        for (const auto& p : peers) directory_[p.reg.id] = RemoteEntity{p.reg.type_name, p.node, p.session};
    }
    for (const auto& p : peers) {
        if (p.session == 0) continue;
        sessions.insert(p.session);
        auto [it, fresh] = links_.try_emplace(p.session);
        Link& link = it->second;
        link.users.insert(entity);
        link.unlisted_since = {};
        if (!fresh && !link.locator.empty()) continue;
        if (p.session == session_) {
            continue;  // ourselves: the self-link made at start serves
        }
        Whereabouts there{p.host, p.host_id, p.pid, p.pid_ns};
        auto usable = usable_locators(p.locators, here_, there);
        if (!restrict_to_shared_memory(usable, p, there)) continue;
        link.locator = usable.empty() ? std::string() : usable.front();
        if (link.locator.empty()) {
            notices_.add(LogLevel::warn, "no usable locator",
                         "node '" + p.node + "' on host " + p.host + " offers no locator this node can use (" +
                             std::to_string(p.locators.size()) + " offered); its messages will not reach us");
            continue;
        }
        inbound_->connect(usable, p.fingerprint);
    }
    auto& wanted = wants_[entity];
    for (auto session : wanted)
        if (!sessions.count(session))
            if (auto l = links_.find(session); l != links_.end()) l->second.users.erase(entity);
    wanted = std::move(sessions);
}

bool NodeImpl::restrict_to_shared_memory(std::vector<std::string>& usable, const Peer& peer, const Whereabouts& there) {
    using SharedMemory = NodeOptions::SharedMemory;
    auto is_shm = [](const std::string& l) { return scheme_of(l) == "shm"; };
    if (options_.shared_memory == SharedMemory::off) {
        usable.erase(std::remove_if(usable.begin(), usable.end(), is_shm), usable.end());
        return true;
    }
    if (options_.shared_memory != SharedMemory::required) return true;
    const Reach between = reach_between(here_, there);
    if (between == Reach::network) return true;
    // On this host: shared memory, or the same process's own transports (narrower still).
    usable.erase(std::remove_if(usable.begin(), usable.end(),
                                [&](const std::string& l) {
                                    const bool process_local = between == Reach::process && reach_of(scheme_of(l)) == Reach::process;
                                    return !is_shm(l) && !process_local;
                                }),
                 usable.end());
    if (!usable.empty()) return true;
    notices_.add(LogLevel::error, "shared memory required",
                 "node '" + peer.node + "' on this host offers no shared memory (its transports exclude shm, or it "
                 "is a client that has none): shared memory is required here (GECKO_SHM=require), so this node "
                 "does not link to it");
    return false;
}

bool NodeImpl::heard_from(std::uint64_t session, std::chrono::milliseconds within) {
    std::vector<std::uint64_t> senders;
    {
        std::lock_guard<std::mutex> lock(directory_mutex_);
        for (const auto& [id, r] : directory_)
            if (r.session == session) senders.push_back(id);
    }
    if (senders.empty()) return false;
    const std::int64_t since = now_ns() - std::chrono::duration_cast<std::chrono::nanoseconds>(within).count();
    std::lock_guard<std::mutex> lock(entities_mutex_);
    for (auto& [id, e] : entities_)
        if (e->heard_since(senders, since)) return true;
    return false;
}

// A link nobody needs any more is closed, unless we still hear from that node:
// the core may have lost it (a partition between it and the core) while its
// data still reaches us. It is reconciled when the core lists it again.
void NodeImpl::prune_links(Reactor::Clock::time_point now) {
    for (auto it = links_.begin(); it != links_.end();) {
        Link& link = it->second;
        if (!link.users.empty()) {
            ++it;
            continue;
        }
        if (link.unlisted_since == Reactor::Clock::time_point{}) link.unlisted_since = now;
        if (heard_from(it->first, options_.lease)) {
            ++it;
            continue;
        }
        if (now - link.unlisted_since < std::chrono::milliseconds(200)) {
            ++it;
            continue;
        }
        if (!link.locator.empty() && it->first != session_) inbound_->disconnect(link.locator);
        {
            std::lock_guard<std::mutex> lock(directory_mutex_);
            for (auto d = directory_.begin(); d != directory_.end();)
                d = d->second.session == it->first ? directory_.erase(d) : std::next(d);
        }
        it = links_.erase(it);
    }
}

void NodeImpl::connect(const std::string& locator) {
    if (closed()) throw_closed("Node::connect");
    inbound_->connect(locator);
}

// ---- the reactor's tick ---------------------------------------------------------------------------

Reactor::Clock::time_point NodeImpl::tick(Reactor::Clock::time_point now) {
    auto next = now + std::chrono::seconds(1);
    if (discovery_) next = std::min(next, discovery_->service(now));
    next = std::min(next, inbound_->reactor_tick(now));
    if (outbound_->events_pending()) outbound_->drain_events();
    if (!gecko::ok()) inbound_->wake_all();  // shutdown: every waiting thread returns
    prune_links(now);
    if (now >= next_entity_tick_) {
        next_entity_tick_ = now + std::chrono::milliseconds(100);
        std::lock_guard<std::mutex> lock(entities_mutex_);
        for (auto& [id, e] : entities_) e->tick();
    }
    next = std::min(next, next_entity_tick_);
    if (now >= tidy_at_) {
        // Again now and then: a node that runs for days outlives many that crash.
        tidy_at_ = now + std::chrono::minutes(10);
        outbound_->tidy();
    }
    next = std::min(next, tidy_at_);
    if (discovery_ && now >= next_report_) report_stats(now);
    if (discovery_) next = std::min(next, next_report_);
    notices_.flush();
    return std::max(now, std::min(next, now + std::chrono::milliseconds(100)));
}

// Every ~3 s: per-entity rates since the last report, for `gecko list` and `top`.
void NodeImpl::report_stats(Reactor::Clock::time_point now) {
    next_report_ = now + std::chrono::seconds(3);
    const double seconds =
        last_report_ == Reactor::Clock::time_point{} ? 0 : std::chrono::duration<double>(now - last_report_).count();
    last_report_ = now;
    std::vector<TopicStats> report;
    {
        std::lock_guard<std::mutex> lock(entities_mutex_);
        for (auto& [id, e] : entities_) {
            TopicStats t = e->report();  // totals: messages in messages_per_s, bytes in bytes_per_s
            TopicStats& last = last_figures_[id];
            TopicStats rate = t;
            rate.messages_per_s = seconds > 0 ? (t.messages_per_s - last.messages_per_s) / seconds : 0;
            rate.bytes_per_s = seconds > 0 ? (t.bytes_per_s - last.bytes_per_s) / seconds : 0;
            last = t;
            report.push_back(rate);
        }
    }
    if (report.empty()) return;
    // Which transport each link to another node uses (`gecko info` shows them).
    std::vector<std::pair<std::uint64_t, std::string>> links;
    const auto in_use = inbound_->links_in_use();
    for (const auto& [session, link] : links_) {
        if (session == session_ || link.locator.empty()) continue;
        const auto used = in_use.find(link.locator);
        if (used != in_use.end()) links.emplace_back(session, std::string(scheme_of(used->second)));
    }
    discovery_->report(std::move(report), std::move(links));
}

// ---- spinning -----------------------------------------------------------------------------------

bool NodeImpl::any_ready() {
    {
        std::lock_guard<std::mutex> lock(graph_mutex_);
        if (!graph_events_.empty() && !graph_dispatching_) return true;
    }
    {
        std::lock_guard<std::mutex> lock(directory_watch_mutex_);
        if (!directory_events_.empty() && !directory_dispatching_) return true;
    }
    return collect_ready(nullptr);
}

// Graph watches run on one thread at a time too (see dispatchable.hpp): the
// thread that runs them takes what comes meanwhile before it lets go.
std::size_t NodeImpl::dispatch_graph_events() {
    std::size_t ran = 0;
    bool mine = false;
    std::vector<GraphEvent> events;
    std::vector<std::function<void(const GraphEvent&)>> watchers;
    for (;;) {
        {
            std::lock_guard<std::mutex> lock(graph_mutex_);
            if (!mine && graph_dispatching_) return 0;
            if (graph_events_.empty()) {
                graph_dispatching_ = false;
                return ran;
            }
            graph_dispatching_ = mine = true;
            events.clear();
            events.swap(graph_events_);
            watchers.clear();
            for (auto& [id, cb] : graph_watches_) watchers.push_back(cb);
        }
        for (const auto& e : events)
            for (auto& cb : watchers) {
                try {
                    cb(e);
                } catch (const std::exception& ex) {
                    logger_.error(std::string("a graph watch callback threw: ") + ex.what());
                }
                ++ran;
            }
    }
}

// Directory watches, one thread at a time as well, in the order the changes came.
std::size_t NodeImpl::dispatch_directory_events() {
    std::size_t ran = 0;
    bool mine = false;
    std::vector<DirectoryNote> notes;
    std::map<std::uint64_t, std::function<void(const DirectoryEvent&)>> watchers;
    for (;;) {
        {
            std::lock_guard<std::mutex> lock(directory_watch_mutex_);
            if (!mine && directory_dispatching_) return 0;
            if (directory_events_.empty()) {
                directory_dispatching_ = false;
                return ran;
            }
            directory_dispatching_ = mine = true;
            notes.clear();
            notes.swap(directory_events_);
            watchers = directory_watches_;
        }
        for (const auto& note : notes)
            for (auto& [id, cb] : watchers) {
                if (note.watch != 0 && note.watch != id) continue;
                try {
                    cb(note.event);
                } catch (const std::exception& ex) {
                    logger_.error(std::string("a directory watch callback threw: ") + ex.what());
                }
                ++ran;
            }
    }
}

std::size_t NodeImpl::dispatch_ready() {
    // Graph and directory events first: a recorder subscribes to a topic before its messages.
    std::size_t ran = dispatch_graph_events();
    ran += dispatch_directory_events();
    std::vector<std::shared_ptr<Dispatchable>> ready;
    collect_ready(&ready);
    bool wake = false;
    for (auto& d : ready) ran += d->try_dispatch(64, wake);  // no lock held: callbacks may do anything
    if (wake) inbound_->wake_all();  // work another spinning thread passed over: it looks again
    return ran;
}

namespace {
// Whether this thread is in spin_once() (of any node): callbacks do not nest.
thread_local bool in_spin = false;
}  // namespace

std::size_t NodeImpl::spin_once(std::chrono::milliseconds timeout, bool background) {
    // A nested spin would run callbacks inside a callback, over the
    // per-thread MessageInfo and inflated payload the outer one still reads.
    if (in_spin)
        throw Error(Errc::invalid_argument,
                    "spin() or spin_once() called from inside a callback (a subscriber's, a service handler or a "
                    "graph watch) that spin() runs: callbacks do not nest; return from the callback instead");
    in_spin = true;
    struct Leave {
        ~Leave() { in_spin = false; }
    } leave;
    if (closed()) return 0;
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
        if (const auto ran = dispatch_ready()) return ran;
        if (!inbound_->wait([this] { return any_ready(); }, deadline, std::nullopt, background)) return dispatch_ready();
    }
}

void NodeImpl::start_spinner() {
    if (spinning_.exchange(true)) return;
    spinner_ = std::thread([this] {
        while (spinning_.load() && !closed()) spin_once(std::chrono::milliseconds(100), true);
    });
}

void NodeImpl::stop_spinner() {
    if (!spinning_.exchange(false)) return;
    inbound_->wake_all();
    if (spinner_.joinable()) spinner_.join();
}

bool NodeImpl::wait_for_core(std::chrono::milliseconds timeout) {
    if (!discovery_) return !options_.discovery;
    return discovery_->wait_for_core(timeout);
}

GraphWatch NodeImpl::on_graph_change(std::function<void(const GraphEvent&)> callback) {
    if (closed()) throw_closed("Node::on_graph_change");
    if (!discovery_) throw Error(Errc::discovery, "on_graph_change needs discovery (the node runs without a core)");
    std::uint64_t id;
    bool first;
    {
        std::lock_guard<std::mutex> lock(graph_mutex_);
        id = next_graph_watch_++;
        first = graph_watches_.empty();
        graph_watches_[id] = std::move(callback);
    }
    if (first) {
        discovery_->watch_graph([this](bool appeared, bool service, const std::string& name, const std::string& type) {
            {
                std::lock_guard<std::mutex> lock(graph_mutex_);
                graph_events_.push_back(GraphEvent{appeared ? GraphEvent::Kind::appeared : GraphEvent::Kind::gone, name,
                                                   service, type});
            }
            inbound_->wake_all();  // spin() delivers it
        });
    }
    return GraphWatch([weak = weak_from_this(), id] {
        if (auto self = weak.lock()) {
            std::lock_guard<std::mutex> lock(self->graph_mutex_);
            self->graph_watches_.erase(id);
        }
    });
}

// ---- the channel directory ------------------------------------------------------------------------

bool NodeImpl::follow_directory() {
    if (!discovery_) return false;
    if (following_directory_.exchange(true)) return true;
    discovery_->watch_directory([this](const DirectoryUpdate& u) { on_directory(u); },
                                [this] { on_directory_unsupported(); });
    return true;
}

void NodeImpl::on_directory(const DirectoryUpdate& update) {
    std::vector<DirectoryEvent> events;
    {
        // Applied and queued at once: a watch registered meanwhile sees each change once.
        std::lock_guard<std::mutex> lock(directory_watch_mutex_);
        events = key_directory_.apply(update);
        if (!directory_watches_.empty())
            for (const auto& e : events) directory_events_.push_back(DirectoryNote{0, e});
    }
    if (events.empty()) return;
    {
        std::lock_guard<std::mutex> lock(entities_mutex_);
        for (auto& [id, e] : entities_) e->directory_changed(events);
    }
    inbound_->wake_all();  // spin() delivers the events; readers see what the directory released
}

void NodeImpl::on_directory_unsupported() {
    if (key_directory_.state() == Directory::State::unsupported) return;
    key_directory_.mark_unsupported();
    notices_.add(LogLevel::warn, "no directory",
                 "the geckocore of key '" + options_.key + "' keeps no channel directory (a version older than this "
                 "node's): key-wide subscriptions take every message without its topic's name, and Node::directory() "
                 "fails; upgrade geckocore");
    std::lock_guard<std::mutex> lock(entities_mutex_);
    for (auto& [id, e] : entities_) e->directory_unsupported();
}

std::vector<std::shared_ptr<const ChannelInfo>> NodeImpl::directory(std::chrono::milliseconds timeout) {
    if (closed()) throw_closed("Node::directory");
    if (!follow_directory())
        throw Error(Errc::discovery, "Node::directory(): node '" + options_.name + "' runs without discovery: there is no directory");
    switch (key_directory_.wait(timeout)) {
        case Directory::State::known: return key_directory_.snapshot();
        case Directory::State::unsupported:
            throw Error(Errc::discovery, "the geckocore of key '" + options_.key +
                                             "' keeps no channel directory (a version older than this node's)");
        case Directory::State::unknown: break;
    }
    throw Error(Errc::discovery, "no directory from the geckocore of key '" + options_.key + "' within " +
                                     std::to_string(timeout.count()) + " ms (" + discovery_->describe_attempts() + ")");
}

DirectoryWatch NodeImpl::watch_directory(std::function<void(const DirectoryEvent&)> callback) {
    if (closed()) throw_closed("Node::watch_directory");
    if (!follow_directory()) throw Error(Errc::discovery, "watch_directory needs discovery (the node runs without a core)");
    std::uint64_t id;
    {
        std::lock_guard<std::mutex> lock(directory_watch_mutex_);
        id = next_directory_watch_++;
        directory_watches_[id] = std::move(callback);
        // What exists already, to this watch alone (as the core does for a new watcher).
        for (auto& info : key_directory_.snapshot())
            directory_events_.push_back(DirectoryNote{id, DirectoryEvent{DirectoryEvent::Kind::added, std::move(info)}});
    }
    inbound_->wake_all();
    return DirectoryWatch([weak = weak_from_this(), id] {
        if (auto self = weak.lock()) {
            std::lock_guard<std::mutex> lock(self->directory_watch_mutex_);
            self->directory_watches_.erase(id);
        }
    });
}

}  // namespace gecko::detail
