// SPDX-License-Identifier: Apache-2.0
#include "discovery/core_query.hpp"

#include "discovery/core_security.hpp"
#include "discovery/handshake_watch.hpp"

#include "gecko/error.hpp"
#include "gecko/net/zmq_socket.hpp"
#include "gecko/security/key_security.hpp"
#include "gecko/wire/discovery.hpp"
#include "gecko/wire/schema.hpp"

#include <zmq.hpp>

#include <optional>

namespace gecko::detail {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

namespace {

std::vector<GraphEntity> read_entities(const wire::Value& topic, std::string_view field) {
    std::vector<GraphEntity> out;
    const auto list = discovery::find(topic, field);
    if (!list) return out;
    for (const wire::Value& item : list->items()) {
        auto peer = discovery::read_peer(item);
        if (!peer) continue;
        GraphEntity e;
        e.id = peer->reg.id;
        e.kind = discovery::to_string(peer->reg.kind);
        e.topic = std::move(peer->reg.topic);
        e.type = std::move(peer->reg.type_name);
        e.latched = peer->reg.latched;
        e.node = std::move(peer->node);
        e.session = peer->session;
        e.host = std::move(peer->host);
        e.pid = peer->pid;
        if (const auto s = discovery::find(item, "stats")) {
            if (const auto stats = discovery::read_stats(*s)) {
                GraphFigures f;
                f.messages_per_s = stats->messages_per_s;
                f.bytes_per_s = stats->bytes_per_s;
                f.drops = stats->drops;
                f.latency_ns = stats->latency_ns;
                f.unheard = stats->unheard;
                f.age_ms = discovery::get_i64(item, "stats_age_ms").value_or(0);
                e.figures = f;
            }
        }
        out.push_back(std::move(e));
    }
    return out;
}

std::vector<std::string> strings(const wire::Value& obj, std::string_view key) {
    return discovery::get_str_array(obj, key).value_or(std::vector<std::string>{});
}

}  // namespace

bool read_list_page(const char* data, std::size_t size, Graph& g, std::uint64_t& next) {
    auto m = discovery::Message::parse(data, size, nullptr);
    if (!m || m->type() != "list") return false;
    const auto& root = m->root();
    g.key = discovery::get_str(root, "key").value_or("");
    g.core_instance = discovery::get_u64(root, "instance").value_or(0);
    g.core_host = discovery::get_str(root, "host").value_or("");
    g.core_pid = static_cast<std::int32_t>(discovery::get_i64(root, "pid").value_or(0));
    next = discovery::get_u64(root, "next").value_or(0);
    if (const auto nodes = discovery::find(root, "nodes")) {
        for (const wire::Value& n : nodes->items()) {
            GraphNode node;
            node.name = discovery::get_str(n, "node").value_or("");
            node.host = discovery::get_str(n, "host").value_or("");
            node.pid = static_cast<std::int32_t>(discovery::get_i64(n, "pid").value_or(0));
            node.session = discovery::get_u64(n, "s").value_or(0);
            node.silent_ms = discovery::get_i64(n, "silent_ms").value_or(0);
            node.locators = strings(n, "locators");
            node.entities = static_cast<std::size_t>(discovery::get_u64(n, "entities").value_or(0));
            if (const auto links = discovery::find(n, "links"); links && links->type() == wire::Type::array) {
                for (const wire::Value& l : links->items()) {
                    GraphLink link;
                    link.session = discovery::get_u64(l, "s").value_or(0);
                    link.node = discovery::get_str(l, "node").value_or("");
                    link.transport = discovery::get_str(l, "via").value_or("");
                    if (link.session != 0 && !link.transport.empty()) node.links.push_back(std::move(link));
                }
            }
            g.nodes.push_back(std::move(node));
        }
    }
    for (const char* field : {"topics", "services"}) {
        const auto list = discovery::find(root, field);
        if (!list) continue;
        const bool service = std::string_view(field) == "services";
        for (const wire::Value& t : list->items()) {
            GraphTopic topic;
            topic.service = service;
            topic.name = discovery::get_str(t, "name").value_or("");
            topic.type = discovery::get_str(t, "type").value_or("");
            topic.types = strings(t, "types");
            topic.channel = discovery::get_u64(t, "channel").value_or(0);
            if (const auto schema = discovery::find(t, "schema"); schema && schema->type() == wire::Type::map) {
                try {
                    topic.schema = std::make_shared<const wire::Schema>(wire::Schema::decode(*schema));
                } catch (const std::exception&) {
                    // The core checked it; one that does not decode here is left out rather than trusted.
                }
            }
            topic.producers = read_entities(t, service ? "servers" : "publishers");
            topic.consumers = read_entities(t, service ? "clients" : "subscribers");
            g.topics.push_back(std::move(topic));
        }
    }
    if (const auto list = discovery::find(root, "key_wide"); list && list->type() == wire::Type::array) {
        auto entities = read_entities(root, "key_wide");
        g.key_wide.insert(g.key_wide.end(), entities.begin(), entities.end());
    }
    if (const auto list = discovery::find(root, "conflicts")) {
        for (const wire::Value& c : list->items()) {
            GraphConflict conflict;
            conflict.topic = discovery::get_str(c, "topic").value_or("");
            conflict.service = discovery::get_bool(c, "service", false);
            conflict.types = strings(c, "types");
            conflict.message = discovery::get_str(c, "message").value_or("");
            g.conflicts.push_back(std::move(conflict));
        }
    }
    if (const auto counters = discovery::find(root, "counters")) {
        for (const auto& [name, count] : counters->entries()) {
            const auto text = name.as_str();
            const auto n = count.as_uint();
            if (text && n) g.counters[std::string(*text)] = *n;
        }
    }
    return true;
}

Graph query_core(const net::FinderOptions& options, milliseconds timeout) {
    const milliseconds find_timeout = options.find_timeout;
    // The key's secret, if this machine has one: then the core must be secured too (docs/SECURITY.md §5-6).
    const auto security = security::KeySecurity::find(options.key);
    net::FinderOptions finder_options = options;
    finder_options.seal = security.datagram_key();
    net::CoreFinder finder(finder_options);
    const auto context = net::process_context();
    std::optional<zmq::socket_t> dealer;
    std::string endpoint;
    bool redirected = false;         // the host door sent us elsewhere...
    Clock::time_point redirected_at;  // ...then
    const auto start = Clock::now();
    const auto deadline = start + timeout;
    auto send_list = [&](std::uint64_t offset) {
        discovery::Writer request("list", offset == 0 ? 1 : 2);
        request.kv("key", options.key);  // a core of another key refuses; the host door redirects
        if (offset != 0) request.kv("offset", offset);
        (void)dealer->send(zmq::const_buffer(request.data(), request.size()), zmq::send_flags::dontwait);
    };
    std::string core_secret;  // the core's fingerprint, from its sealed datagram ("": the key's own)
    // A secured query given GECKO_CORE asks it as a host door too, which is
    // plain (docs/SECURITY.md §5): over a plain connection of its own, the
    // same `list` question, which a door answers with a redirect.
    std::optional<zmq::socket_t> door_dealer;
    // Their handshakes: a core that refuses ours (security differs) says nothing else.
    HandshakeWatch handshakes, door_handshakes;
    auto connect = [&](const std::string& ep, const std::string& fingerprint = {}) {
        door_handshakes = HandshakeWatch();
        door_dealer.reset();
        if (security.secured() && ep == finder.explicit_endpoint()) {
            net::SocketOptions plain;
            plain.max_message_size = discovery::max_zmq_message;
            door_dealer.emplace(net::make_socket(*context, zmq::socket_type::dealer, plain));
            door_handshakes = HandshakeWatch(*context, *door_dealer);
            door_dealer->connect(ep);
            discovery::Writer question("list", 1);
            question.kv("key", options.key);
            (void)door_dealer->send(zmq::const_buffer(question.data(), question.size()), zmq::send_flags::dontwait);
        }
        net::SocketOptions so;
        so.max_message_size = discovery::max_zmq_message;
        so.curve = security.curve();
        so.curve_role = net::CurveRole::client;
        so.curve_peer_fingerprint = fingerprint;  // during a rotation, the core may use the accepted secret
        core_secret = fingerprint;
        handshakes = HandshakeWatch();
        dealer.emplace(net::make_socket(*context, zmq::socket_type::dealer, so));
        handshakes = HandshakeWatch(*context, *dealer);
        dealer->connect(ep);  // not `immediate`: the request waits in the queue for the connection
        endpoint = ep;
        send_list(0);
    };
    Graph graph;
    std::size_t pages = 0;
    constexpr std::size_t max_pages = 4096;  // 2 MiB each: far above any table a core accepts
    if (!options.multicast && !finder.explicit_endpoint().empty()) connect(finder.explicit_endpoint());
    for (auto now = Clock::now(); now < deadline; now = Clock::now()) {
        auto wake = std::min(deadline, now + milliseconds(100));
        if (redirected && pages == 0 && now - redirected_at >= find_timeout) {  // a stale door entry: ask again
            redirected = false;
            connect(finder.explicit_endpoint());
        }
        if (!dealer) {
            if (finder.multicast_enabled()) wake = std::min(wake, finder.tick(now));
            if (now - start >= find_timeout && !finder.explicit_endpoint().empty()) connect(finder.explicit_endpoint());
        }
        zmq::pollitem_t items[4] = {};
        int n = 0;
        const int dealer_at = dealer ? n : -1;
        if (dealer) items[n++] = {dealer->handle(), 0, ZMQ_POLLIN, 0};
        const int door_at = door_dealer ? n : -1;
        if (door_dealer) items[n++] = {door_dealer->handle(), 0, ZMQ_POLLIN, 0};
        const int q_at = finder.query_fd() >= 0 ? n : -1;
        if (q_at >= 0) items[n++] = {nullptr, finder.query_fd(), ZMQ_POLLIN, 0};
        const int l_at = finder.listen_fd() >= 0 ? n : -1;
        if (l_at >= 0) items[n++] = {nullptr, finder.listen_fd(), ZMQ_POLLIN, 0};
        zmq::poll(items, static_cast<std::size_t>(n),
                  std::max(milliseconds(0), std::chrono::duration_cast<milliseconds>(wake - Clock::now())));
        for (int at : {q_at, l_at}) {
            if (at < 0 || !(items[at].revents & ZMQ_POLLIN)) continue;
            auto answers = finder.read(static_cast<int>(items[at].fd));
            for (const auto& a : answers)
                if (auto why = core_security_mismatch(options.key, a, security.secured(), security.path()); !why.empty())
                    throw Error(Errc::security, why);
            if (!dealer && !answers.empty()) connect(answers.front().endpoint, answers.front().fingerprint);
        }
        if (!dealer)
            if (auto why = refused_core_verdict(options.key, finder, security.path(), Clock::now(), find_timeout); !why.empty())
                throw Error(Errc::security, why);
        if (dealer && endpoint == finder.explicit_endpoint() && handshakes.failures() >= 3) {
            if (!security.secured())
                throw Error(Errc::security, refused_handshake(options.key, endpoint, false, security.path(), "program"));
            const auto& curve = *security.curve();
            if (!curve.accepted_fingerprint.empty() && core_secret != curve.accepted_fingerprint) {
                connect(endpoint, curve.accepted_fingerprint);  // during a rotation the core may use the accepted secret
                continue;
            }
            if (door_handshakes.failures() >= 3)  // a plain connection is refused too: a secured core
                throw Error(Errc::security,
                            refused_handshake(options.key, endpoint, true, security.path(), "program", true));
        }
        zmq::message_t reply;
        bool from_door = false;
        if (door_at >= 0 && (items[door_at].revents & ZMQ_POLLIN) && door_dealer->recv(reply, zmq::recv_flags::dontwait)) {
            from_door = true;
        } else if (dealer_at < 0 || !(items[dealer_at].revents & ZMQ_POLLIN) ||
                   !dealer->recv(reply, zmq::recv_flags::dontwait)) {
            continue;
        }
        const char* data = static_cast<const char*>(reply.data());
        std::uint64_t next = 0;
        if (from_door) {
            const auto m = discovery::Message::parse(data, reply.size(), nullptr);
            if (m && m->type() == "list")  // asked plainly, it answered as a core: a plain one
                throw Error(Errc::security, plain_core_at(options.key, endpoint, security.path(), "machine", "program"));
            if (!m) continue;
        } else if (read_list_page(data, reply.size(), graph, next)) {
            graph.core_endpoint = endpoint;
            // The CURVE handshake with it succeeded: with this secret, or during a rotation the accepted one.
            if (security.secured())
                graph.secured_fingerprint = core_secret.empty() ? security.fingerprint() : core_secret;
            if (next == 0 || ++pages >= max_pages) return graph;
            send_list(next);
            continue;
        }
        auto m = discovery::Message::parse(data, reply.size(), nullptr);
        if (m && m->type() == "redirect" && endpoint == finder.explicit_endpoint()) {
            const auto target = net::redirect_target(m->root(), endpoint);
            if (target && target->loopback_only)
                throw Error(Errc::discovery, "the core of key '" + options.key + "' at " + target->endpoint +
                                                 " (found through the host door at " + endpoint + ") listens on loopback only");
            if (target) {
                connect(target->endpoint);
                redirected = true;
                redirected_at = Clock::now();
            }
            continue;
        }
        if (m && m->type() == "error") {
            const auto code = discovery::get_str(m->root(), "code").value_or("");
            const bool door = code == "no_core" || code == "door";
            throw Error(Errc::discovery, (door ? "the host door at " : "geckocore at ") + endpoint + ": " +
                                             discovery::get_str(m->root(), "message").value_or("error"));
        }
    }
    if (pages > 0)
        throw Error(Errc::discovery, "geckocore at " + endpoint + " stopped answering after " + std::to_string(pages) +
                                         " pages of its table (within " + std::to_string(timeout.count()) + " ms)");
    if (!endpoint.empty()) {
        std::string h;
        std::uint16_t p = 0;
        if (net::split_tcp_endpoint(endpoint, h, p)) {
            const auto probe = net::tcp_probe(h, p, milliseconds(100));
            finder.note_unicast(probe.empty() ? "TCP connects but no geckocore answers" : probe);
        }
    }
    throw Error(Errc::discovery, "no answer from a geckocore for key '" + options.key + "' within " +
                                     std::to_string(timeout.count()) + " ms: " + finder.describe());
}

}  // namespace gecko::detail
