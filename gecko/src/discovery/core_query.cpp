// SPDX-License-Identifier: Apache-2.0
#include "discovery/core_query.hpp"

#include "discovery/finder.hpp"
#include "discovery/protocol.hpp"
#include "gecko/error.hpp"

#include <zmq.hpp>

namespace gecko::detail {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

const QueryTopic* QueryResult::find(const std::string& name, bool service) const {
    for (const auto& t : topics)
        if (t.name == name && t.service == service) return &t;
    return nullptr;
}

namespace {
std::vector<QueryEntity> read_entities(const msgpack::object& topic, std::string_view field) {
    std::vector<QueryEntity> out;
    const auto* list = proto::find(topic, field);
    if (!list || list->type != msgpack::type::ARRAY) return out;
    for (std::uint32_t i = 0; i < list->via.array.size; ++i) {
        const auto& e = list->via.array.ptr[i];
        auto peer = proto::read_peer(e);
        if (!peer) continue;
        QueryEntity q;
        q.peer = std::move(*peer);
        if (const auto* s = proto::find(e, "stats"); s && s->type == msgpack::type::MAP) q.stats = proto::read_stats(*s);
        q.stats_age_ms = proto::get_i64(e, "stats_age_ms").value_or(0);
        out.push_back(std::move(q));
    }
    return out;
}
}  // namespace

std::optional<QueryResult> decode_list_reply(const char* data, std::size_t size) {
    auto m = proto::Message::parse(data, size, nullptr);
    if (!m || m->type() != "list") return std::nullopt;
    const auto& root = m->root();
    QueryResult r;
    r.raw.assign(data, size);
    r.key = proto::get_str(root, "key").value_or("");
    r.instance = proto::get_u64(root, "instance").value_or(0);
    r.core_host = proto::get_str(root, "host").value_or("");
    r.core_pid = static_cast<std::int32_t>(proto::get_i64(root, "pid").value_or(0));
    if (const auto* nodes = proto::find(root, "nodes"); nodes && nodes->type == msgpack::type::ARRAY) {
        for (std::uint32_t i = 0; i < nodes->via.array.size; ++i) {
            const auto& n = nodes->via.array.ptr[i];
            QueryNode q;
            q.node = proto::get_str(n, "node").value_or("");
            q.host = proto::get_str(n, "host").value_or("");
            q.pid = static_cast<std::int32_t>(proto::get_i64(n, "pid").value_or(0));
            q.session = proto::get_u64(n, "s").value_or(0);
            q.silent_ms = proto::get_i64(n, "silent_ms").value_or(0);
            q.locators = proto::get_str_array(n, "locators").value_or(std::vector<std::string>{});
            q.entities = static_cast<std::size_t>(proto::get_u64(n, "entities").value_or(0));
            r.nodes.push_back(std::move(q));
        }
    }
    for (const char* field : {"topics", "services"}) {
        const auto* list = proto::find(root, field);
        if (!list || list->type != msgpack::type::ARRAY) continue;
        const bool service = std::string_view(field) == "services";
        for (std::uint32_t i = 0; i < list->via.array.size; ++i) {
            const auto& t = list->via.array.ptr[i];
            QueryTopic q;
            q.service = service;
            q.name = proto::get_str(t, "name").value_or("");
            q.type = proto::get_str(t, "type").value_or("");
            q.types = proto::get_str_array(t, "types").value_or(std::vector<std::string>{});
            q.producers = read_entities(t, service ? "servers" : "publishers");
            q.consumers = read_entities(t, service ? "clients" : "subscribers");
            r.topics.push_back(std::move(q));
        }
    }
    if (const auto* list = proto::find(root, "conflicts"); list && list->type == msgpack::type::ARRAY) {
        for (std::uint32_t i = 0; i < list->via.array.size; ++i) {
            const auto& c = list->via.array.ptr[i];
            QueryConflict q;
            q.topic = proto::get_str(c, "topic").value_or("");
            q.service = proto::get_bool(c, "service", false);
            q.types = proto::get_str_array(c, "types").value_or(std::vector<std::string>{});
            q.message = proto::get_str(c, "message").value_or("");
            r.conflicts.push_back(std::move(q));
        }
    }
    if (const auto* counters = proto::find(root, "counters"); counters && counters->type == msgpack::type::MAP) {
        for (std::uint32_t i = 0; i < counters->via.map.size; ++i) {
            const auto& kv = counters->via.map.ptr[i];
            if (kv.key.type == msgpack::type::STR && kv.val.type == msgpack::type::POSITIVE_INTEGER)
                r.counters[std::string(kv.key.via.str.ptr, kv.key.via.str.size)] = kv.val.via.u64;
        }
    }
    return r;
}

QueryResult query_core(const DiscoveryOptions& options, std::chrono::milliseconds timeout) {
    CoreFinder finder(options);
    zmq::context_t context(1);
    std::optional<zmq::socket_t> dealer;
    std::string endpoint;
    std::optional<Clock::time_point> redirected_at;  // when the host door sent us elsewhere
    const auto start = Clock::now();
    const auto deadline = start + timeout;
    proto::Writer request("list", 1);
    request.kv("key", options.key);  // a core of another key refuses; the host door redirects
    auto connect = [&](const std::string& ep) {
        dealer.emplace(context, zmq::socket_type::dealer);
        dealer->set(zmq::sockopt::linger, 0);
        dealer->set(zmq::sockopt::maxmsgsize, proto::max_zmq_message);
        dealer->connect(ep);  // not `immediate`: the request waits in the queue for the connection
        (void)dealer->send(zmq::const_buffer(request.data(), request.size()), zmq::send_flags::dontwait);
        endpoint = ep;
    };
    if (!options.multicast && !finder.explicit_endpoint().empty()) connect(finder.explicit_endpoint());
    std::string wrong_key;
    for (auto now = Clock::now(); now < deadline; now = Clock::now()) {
        auto wake = std::min(deadline, now + milliseconds(100));
        if (redirected_at && now - *redirected_at >= options.find_timeout) {  // a stale door entry: ask again
            redirected_at.reset();
            connect(finder.explicit_endpoint());
        }
        if (!dealer) {
            if (finder.multicast_enabled()) wake = std::min(wake, finder.tick(now));
            if (now - start >= options.find_timeout && !finder.explicit_endpoint().empty()) connect(finder.explicit_endpoint());
        }
        zmq::pollitem_t items[3] = {};
        int n = 0;
        const int dealer_at = dealer ? n : -1;
        if (dealer) items[n++] = {dealer->handle(), 0, ZMQ_POLLIN, 0};
        const int q_at = finder.query_fd() >= 0 ? n : -1;
        if (q_at >= 0) items[n++] = {nullptr, finder.query_fd(), ZMQ_POLLIN, 0};
        const int l_at = finder.listen_fd() >= 0 ? n : -1;
        if (l_at >= 0) items[n++] = {nullptr, finder.listen_fd(), ZMQ_POLLIN, 0};
        zmq::poll(items, static_cast<std::size_t>(n),
                  std::max(milliseconds(0), std::chrono::duration_cast<milliseconds>(wake - Clock::now())));
        for (int at : {q_at, l_at}) {
            if (at < 0 || !(items[at].revents & ZMQ_POLLIN)) continue;
            auto answers = finder.read(static_cast<int>(items[at].fd));
            if (!dealer && !answers.empty()) connect(answers.front().endpoint);
        }
        if (dealer_at >= 0 && (items[dealer_at].revents & ZMQ_POLLIN)) {
            zmq::message_t reply;
            if (!dealer->recv(reply, zmq::recv_flags::dontwait)) continue;
            const char* data = static_cast<const char*>(reply.data());
            if (auto r = decode_list_reply(data, reply.size())) {
                r->core_endpoint = endpoint;
                return *r;
            }
            auto m = proto::Message::parse(data, reply.size(), nullptr);
            if (m && m->type() == "redirect" && endpoint == finder.explicit_endpoint()) {
                const auto target = proto::redirect_target(m->root(), endpoint);
                if (target && target->loopback_only)
                    throw Error(Errc::discovery, "the core of key '" + options.key + "' at " + target->endpoint +
                                                     " (found through the host door at " + endpoint + ") listens on loopback only");
                if (target) {
                    connect(target->endpoint);
                    redirected_at = Clock::now();
                }
                continue;
            }
            if (m && m->type() == "error") {
                const bool door = proto::get_str(m->root(), "code").value_or("") == "no_core" ||
                                  proto::get_str(m->root(), "code").value_or("") == "door";
                throw Error(Errc::discovery, (door ? "the host door at " : "geckocore at ") + endpoint + ": " +
                                                 proto::get_str(m->root(), "message").value_or("error"));
            }
        }
    }
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
