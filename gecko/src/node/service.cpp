// SPDX-License-Identifier: Apache-2.0
// Services on the node's links. A server listens on its directed channel
// ("#e:<server id>"): clients send requests there, each to one server. It
// answers on the client's directed channel, with the request's id as the
// sequence. Discovery gives each server its clients and each client its
// servers, so both nodes link to each other; a server is ready for a client
// when the client's out-port hears its announcement.

#include <algorithm>
#include <cstring>
#include <mutex>
#include <set>

#include "gecko/error.hpp"
#include "gecko/raw_service.hpp"
#include "gecko/time.hpp"
#include "gecko/wire/announcement.hpp"
#include "gecko/wire/frame.hpp"
#include "node/inflated.hpp"
#include "node/names.hpp"
#include "node/node_impl.hpp"

namespace gecko {
namespace detail {
namespace {

// An error reply's payload is a msgpack str; written by hand (fixstr/str8/16/32).
void append_msgpack_string(Buffer& out, const std::string& text) {
    const std::size_t n = text.size();
    if (n < 32) {
        const char tag = static_cast<char>(0xa0 | n);
        out.write(&tag, 1);
    } else if (n < 256) {
        const char tag[2] = {static_cast<char>(0xd9), static_cast<char>(n)};
        out.write(tag, 2);
    } else if (n < 65536) {
        const char tag[3] = {static_cast<char>(0xda), static_cast<char>(n >> 8), static_cast<char>(n)};
        out.write(tag, 3);
    } else {
        const char tag[5] = {static_cast<char>(0xdb), static_cast<char>(n >> 24), static_cast<char>(n >> 16),
                             static_cast<char>(n >> 8), static_cast<char>(n)};
        out.write(tag, 5);
    }
    out.write(text.data(), n);
}

std::string read_msgpack_string(const std::uint8_t* p, std::size_t n) {
    if (n == 0) return "(no reason given)";
    std::size_t len = 0, skip = 0;
    if ((p[0] & 0xe0) == 0xa0) {
        len = p[0] & 0x1f;
        skip = 1;
    } else if (p[0] == 0xd9 && n >= 2) {
        len = p[1];
        skip = 2;
    } else if (p[0] == 0xda && n >= 3) {
        len = (std::size_t(p[1]) << 8) | p[2];
        skip = 3;
    } else if (p[0] == 0xdb && n >= 5) {
        len = (std::size_t(p[1]) << 24) | (std::size_t(p[2]) << 16) | (std::size_t(p[3]) << 8) | p[4];
        skip = 5;
    } else {
        return "(unreadable reason)";
    }
    if (skip + len > n) return "(truncated reason)";
    return std::string(reinterpret_cast<const char*>(p + skip), len);
}

std::string announce(NodeImpl& node, wire::Channel channel, std::uint64_t id, const char* kind, const std::string& name,
                     const std::string& type) {
    wire::Announcement a;
    a.channel = channel;
    a.id = id;
    a.kind = kind;
    a.topic = name;
    a.type = type;
    a.node = node.options().name;
    a.session = node.session();
    return wire::encode_announcement(a);
}

}  // namespace

// ---- the server ------------------------------------------------------------------------------------

class ServerImpl final : public Entity, public Dispatchable, public std::enable_shared_from_this<ServerImpl> {
public:
    ServerImpl(std::shared_ptr<NodeImpl> node, std::string name, std::string request_type, std::string reply_type,
               RawHandler handler, ServiceOptions options)
        : node_(std::move(node)), name_(std::move(name)), request_type_(std::move(request_type)),
          reply_type_(std::move(reply_type)), handler_(std::move(handler)), options_(std::move(options)),
          id_(node_->new_id()), sink_(config(), node_->notices()) {
        check_topic_name(name_, "a service");
        check_type_name(request_type_ + "->" + reply_type_, "service '" + name_ + "'");
        if (!handler_) throw Error(Errc::invalid_argument, "service '" + name_ + "' needs a handler");
        if (node_->closed()) node_->throw_closed("service '" + name_ + "'");
        announcement_ = announce(*node_, sink_.config().channel, id_, "server", name_, request_type_ + "->" + reply_type_);
        reply_header_.sender_id = id_;
        reply_header_.type_hash = wire::type_hash(reply_type_);
    }

    void start() {
        node_->inbound().add_sink(sink_, announcement_);
        node_->add_dispatchable(this, weak_from_this());
        Registration r;
        r.id = id_;
        r.kind = EntityKind::server;
        r.topic = name_;
        r.type_name = request_type_ + "->" + reply_type_;
        node_->attach_watching(*this, r);  // its clients: their nodes must hear our replies
    }

    ~ServerImpl() override {
        node_->remove_dispatchable(this);
        node_closed();
        node_->detach(*this);
    }

    std::uint64_t id() const override { return id_; }
    TopicStats report() override {
        TopicStats t;
        t.id = id_;
        t.messages_per_s = static_cast<double>(requests_.load());
        t.drops = lost_replies_->load();
        return t;
    }
    void node_closed() override {
        std::lock_guard<std::mutex> lock(close_mutex_);
        if (closed_) return;
        closed_ = true;
        node_->inbound().remove_sink(sink_, announcement_);
    }
    bool ready() const override { return !sink_.empty(); }

    std::size_t dispatch(std::size_t budget) override {
        std::size_t handled = 0;
        Delivery d;
        while (handled < budget && sink_.pop(d)) {
            answer(d);
            ++handled;
        }
        return handled;
    }

    const std::string& name() const { return name_; }
    std::uint64_t requests() const { return requests_.load(); }
    std::uint64_t rejected() const { return rejected_.load(); }
    std::uint64_t lost_replies() const { return lost_replies_->load(); }

private:
    SinkConfig config() {
        SinkConfig c;
        c.channel = wire::directed_channel(node_->key(), id_);
        c.depth = std::max<std::size_t>(options_.queue, 1);
        c.max_message_size = std::min(options_.max_message_size, node_->options().max_message_size);
        c.accept_flags = wire::frame_flags::request;
        c.what = "service '" + name_ + "'";
        c.callback = true;
        c.answer_rejected = true;
        return c;  // any type hash: a request of the wrong type gets an error reply, not silence
    }

    void answer(Delivery& d) {
        const wire::FrameHeader& h = d.view.header;
        const std::uint64_t client = h.sender_id;
        if (d.error != wire::FrameError::none) {
            reply_error(client, h.sequence, std::string("service '") + name_ + "' rejected a request: " + wire::to_string(d.error));
            return;
        }
        if (h.type_hash != wire::type_hash(request_type_)) {
            const auto theirs = node_->type_name_of(client);
            reply_error(client, h.sequence, "service '" + name_ + "' expects " + request_type_ + " but got " +
                                                (theirs.empty() ? "another type" : theirs));
            return;
        }
        const std::uint8_t* payload = d.view.body;
        std::size_t size = d.view.body_size;
        thread_local Inflated inflated;
        const Inflated::Releasing releasing(inflated);  // whatever way this ends
        if (h.compressed()) {
            if (inflated.inflate(d.view) != wire::FrameError::none) {
                reply_error(client, h.sequence, "service '" + name_ + "': corrupt compressed request");
                return;
            }
            payload = inflated.data();
            size = inflated.size();
        }
        thread_local MessageInfo info;
        info.sequence = h.sequence;
        info.publisher_id = client;
        info.send_time_ns = h.send_time_ns;
        info.receive_time_ns = d.receive_ns;
        info.wire_size = d.frame.size();
        info.compressed = h.compressed();
        info.type_hash = h.type_hash;
        if (info.type_name != request_type_) info.type_name = request_type_;
        thread_local Buffer reply;
        reply.resize(wire::frame_header_size);
        try {
            handler_(RawView{info, payload, size}, reply);  // no Gecko lock held
        } catch (const Error& e) {
            // Errc::decode: the request is not a request_type_ (the typed
            // handler decodes it first); the handler itself ran otherwise.
            reply_error(client, h.sequence,
                        "service '" + name_ + (e.code() == Errc::decode ? "' could not decode the request: " : "' failed: ") +
                            e.what());
            return;
        } catch (const std::exception& e) {
            reply_error(client, h.sequence, "service '" + name_ + "' failed: " + e.what());
            return;
        }
        ++requests_;  // before sending: the caller may read it as soon as the reply lands
        send_reply(client, h.sequence, 0, reply);
    }

    void reply_error(std::uint64_t client, std::uint64_t sequence, const std::string& reason) {
        ++rejected_;
        node_->notices().add(LogLevel::warn, "service '" + name_ + "': refused", reason);
        Buffer reply;
        reply.resize(wire::frame_header_size);
        append_msgpack_string(reply, reason);
        send_reply(client, sequence, wire::frame_flags::error, reply);
    }

    void send_reply(std::uint64_t client, std::uint64_t sequence, std::uint8_t flags, Buffer& frame) {
        std::lock_guard<std::mutex> lock(send_mutex_);
        if (node_->closed()) return;
        reply_header_.channel = wire::directed_channel(node_->key(), client);
        reply_header_.flags = static_cast<std::uint8_t>(wire::frame_flags::reply | flags);
        reply_header_.sequence = sequence;
        reply_header_.send_time_ns = now_ns();
        reply_header_.payload_size = static_cast<std::uint32_t>(frame.size() - wire::frame_header_size);
        wire::write_frame_header(frame.data(), reply_header_);
        // The client's subscription to this node may still be on its way
        // (both nodes link when discovery tells them of each other): the
        // reply waits for it, as long as a client waits for a reply by default.
        node_->outbound().send_or_hold(frame, reply_header_.channel, reply_hold, lost_replies_);
    }

    static constexpr std::chrono::milliseconds reply_hold{5000};

    std::shared_ptr<NodeImpl> node_;
    std::string name_, request_type_, reply_type_;
    RawHandler handler_;
    ServiceOptions options_;
    std::uint64_t id_;
    Sink sink_;
    std::string announcement_;
    std::mutex close_mutex_;
    bool closed_ = false;
    std::mutex send_mutex_;
    wire::FrameHeader reply_header_;
    std::atomic<std::uint64_t> requests_{0}, rejected_{0};
    std::shared_ptr<std::atomic<std::uint64_t>> lost_replies_ = std::make_shared<std::atomic<std::uint64_t>>(0);
};

// ---- the client ------------------------------------------------------------------------------------

class ClientImpl final : public Entity {
public:
    ClientImpl(std::shared_ptr<NodeImpl> node, std::string name, std::string request_type, std::string reply_type,
               ClientOptions options)
        : node_(std::move(node)), name_(std::move(name)), request_type_(std::move(request_type)),
          reply_type_(std::move(reply_type)), options_(std::move(options)), id_(node_->new_id()),
          sink_(config(), node_->notices()) {
        check_topic_name(name_, "a client");
        check_type_name(request_type_ + "->" + reply_type_, "client of '" + name_ + "'");
        if (node_->closed()) node_->throw_closed("client of '" + name_ + "'");
        announcement_ = announce(*node_, sink_.config().channel, id_, "client", name_, request_type_ + "->" + reply_type_);
        header_.sender_id = id_;
        header_.type_hash = wire::type_hash(request_type_);
        header_.flags = wire::frame_flags::request;
    }

    void start() {
        node_->inbound().add_sink(sink_, announcement_);
        Registration r;
        r.id = id_;
        r.kind = EntityKind::client;
        r.topic = name_;
        r.type_name = request_type_ + "->" + reply_type_;
        node_->attach_watching(*this, r);
    }

    ~ClientImpl() override {
        node_closed();
        node_->detach(*this);
    }

    std::uint64_t id() const override { return id_; }
    TopicStats report() override {
        TopicStats t;
        t.id = id_;
        t.messages_per_s = static_cast<double>(calls_.load());
        return t;
    }
    void node_closed() override {
        std::lock_guard<std::mutex> lock(state_mutex_);
        if (closed_) return;
        closed_ = true;
        node_->inbound().remove_sink(sink_, announcement_);
    }

    void peers_changed(const std::vector<Peer>& peers) override {
        std::lock_guard<std::mutex> lock(state_mutex_);
        servers_.clear();
        for (const auto& p : peers) servers_.push_back(p.reg.id);
        listed_ = true;
    }

    void call(Buffer& request, std::chrono::nanoseconds timeout, RawSubscriber::Visitor on_reply) {
        const auto start = std::chrono::steady_clock::now();
        const auto deadline = start + timeout;
        std::lock_guard<std::mutex> serial(call_mutex_);
        if (closed()) node_->throw_closed("client of '" + name_ + "'");
        if (request.size() < wire::frame_header_size)
            throw Error(Errc::invalid_argument, "call: the request buffer has no header room");
        const std::uint64_t server = pick_server(deadline);
        const std::uint64_t request_id = ++sequence_;
        header_.channel = wire::directed_channel(node_->key(), server);
        header_.sequence = request_id;
        header_.send_time_ns = now_ns();
        header_.payload_size = static_cast<std::uint32_t>(request.size() - wire::frame_header_size);
        wire::write_frame_header(request.data(), header_);
        ++calls_;
        node_->outbound().send(request);

        Delivery d;
        for (;;) {
            while (sink_.pop(d)) {
                const wire::FrameHeader& h = d.view.header;
                if (h.sequence != request_id || h.sender_id != server) continue;  // a late reply to an earlier call
                slow_.erase(server);
                if (h.flags & wire::frame_flags::error) throw Error(Errc::remote, read_msgpack_string(d.view.body, d.view.body_size));
                if (h.type_hash != wire::type_hash(reply_type_))
                    throw Error(Errc::type_mismatch, "service '" + name_ + "' replied with another type than " + reply_type_);
                deliver(d, on_reply);
                return;
            }
            if (!node_->inbound().wait([this] { return !sink_.empty(); }, deadline)) {
                if (closed()) node_->throw_closed("client of '" + name_ + "'");
                slow_.insert(server);  // the next call prefers another server
                const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(timeout).count();
                throw Error(Errc::timeout, "service '" + name_ + "' did not answer request " + std::to_string(request_id) +
                                               " within " + std::to_string(ms) + " ms");
            }
        }
    }

    bool wait_for_server(std::chrono::milliseconds timeout) {
        const auto deadline = std::chrono::steady_clock::now() + timeout;
        for (;;) {
            if (!ready_servers().empty()) return true;
            if (closed() || std::chrono::steady_clock::now() >= deadline) return false;
            std::unique_lock<std::mutex> lock(state_mutex_);
            state_cv_.wait_until(lock, std::min(deadline, std::chrono::steady_clock::now() + std::chrono::milliseconds(10)));
        }
    }

    std::size_t server_count() { return ready_servers().size(); }
    const std::string& name() const { return name_; }
    const std::string& request_type() const { return request_type_; }
    const std::string& reply_type() const { return reply_type_; }

private:
    SinkConfig config() {
        SinkConfig c;
        c.channel = wire::directed_channel(node_->key(), id_);
        c.depth = 16;
        c.max_message_size = std::min(options_.max_message_size, node_->options().max_message_size);
        c.accept_flags = wire::frame_flags::reply;
        c.what = "client of '" + name_ + "'";
        return c;
    }

    bool closed() {
        std::lock_guard<std::mutex> lock(state_mutex_);
        return closed_;
    }

    // The servers whose announcement our out-port heard: they will get a request now.
    std::vector<std::uint64_t> ready_servers() {
        std::vector<std::uint64_t> out;
        std::vector<std::uint64_t> candidates;
        {
            std::lock_guard<std::mutex> lock(state_mutex_);
            candidates = servers_;
        }
        if (candidates.empty() || !node_->options().discovery) {
            // Without discovery, any server that announced itself on one of our links.
            // (Their directed channels are unknown to us: ask the out-port.)
            return announced_servers();
        }
        for (auto id : candidates)
            if (!node_->outbound().subscribers_of(wire::directed_channel(node_->key(), id)).empty()) out.push_back(id);
        return out;
    }

    std::vector<std::uint64_t> announced_servers() {
        return node_->outbound().announced_servers(name_, request_type_ + "->" + reply_type_);
    }

    // One server for this call: round robin over the ready ones, preferring
    // those that did not time out last; waits for one while discovery says
    // there are some, fails at once when it says there are none.
    std::uint64_t pick_server(std::chrono::steady_clock::time_point deadline) {
        for (;;) {
            auto ready = ready_servers();
            if (!ready.empty()) {
                std::stable_partition(ready.begin(), ready.end(), [&](std::uint64_t id) { return !slow_.count(id); });
                const std::size_t fast = std::count_if(ready.begin(), ready.end(), [&](std::uint64_t id) { return !slow_.count(id); });
                const std::size_t pool = fast > 0 ? fast : ready.size();
                return ready[next_server_++ % pool];
            }
            bool listed_none;
            {
                std::lock_guard<std::mutex> lock(state_mutex_);
                listed_none = listed_ && servers_.empty();
            }
            if (listed_none)
                throw Error(Errc::no_peer, "no server for service '" + name_ + "' under key '" + node_->key() +
                                               "' (geckocore lists none): is it running under that key?");
            if (std::chrono::steady_clock::now() >= deadline)
                throw Error(Errc::no_peer, "no server for service '" + name_ + "' under key '" + node_->key() +
                                               "' became reachable in time" +
                                               (node_->options().discovery ? "" : " (discovery is off: connect to its node)"));
            std::unique_lock<std::mutex> lock(state_mutex_);
            // Bounded poll interval of a bounded wait: readiness comes from the out-port's events.
            state_cv_.wait_until(lock, std::min(deadline, std::chrono::steady_clock::now() + std::chrono::milliseconds(2)));
        }
    }

    void deliver(Delivery& d, RawSubscriber::Visitor& on_reply) {
        const wire::FrameHeader& h = d.view.header;
        const std::uint8_t* payload = d.view.body;
        std::size_t size = d.view.body_size;
        thread_local Inflated inflated;
        const Inflated::Releasing releasing(inflated);  // whatever way this ends
        if (h.compressed()) {
            if (inflated.inflate(d.view) != wire::FrameError::none)
                throw Error(Errc::decode, "service '" + name_ + "': corrupt compressed reply");
            payload = inflated.data();
            size = inflated.size();
        }
        thread_local MessageInfo info;
        info.sequence = h.sequence;
        info.publisher_id = h.sender_id;
        info.send_time_ns = h.send_time_ns;
        info.receive_time_ns = d.receive_ns;
        info.wire_size = d.frame.size();
        info.compressed = h.compressed();
        info.type_hash = h.type_hash;
        if (info.type_name != reply_type_) info.type_name = reply_type_;
        try {
            on_reply(RawView{info, payload, size});
        } catch (const Error&) {
            throw;
        } catch (const std::exception& e) {
            throw Error(Errc::decode, "service '" + name_ + "': reply does not decode as " + reply_type_ + ": " + e.what());
        }
    }

    std::shared_ptr<NodeImpl> node_;
    std::string name_, request_type_, reply_type_;
    ClientOptions options_;
    std::uint64_t id_;
    Sink sink_;
    std::string announcement_;
    std::mutex call_mutex_;  // one call at a time
    wire::FrameHeader header_;
    std::uint64_t sequence_ = 0;
    std::set<std::uint64_t> slow_;  // servers that timed out (call_mutex_)
    std::size_t next_server_ = 0;   // call_mutex_
    std::atomic<std::uint64_t> calls_{0};
    std::mutex state_mutex_;
    std::condition_variable state_cv_;
    bool closed_ = false;
    bool listed_ = false;  // discovery has answered for this client
    std::vector<std::uint64_t> servers_;
};

}  // namespace detail

RawServer::RawServer(std::shared_ptr<detail::ServerImpl> impl) : impl_(std::move(impl)) {}
RawServer::~RawServer() = default;
RawServer::RawServer(RawServer&&) noexcept = default;
RawServer& RawServer::operator=(RawServer&&) noexcept = default;
const std::string& RawServer::name() const { return impl_->name(); }
std::uint64_t RawServer::id() const { return impl_->id(); }
std::uint64_t RawServer::requests() const { return impl_->requests(); }
std::uint64_t RawServer::rejected() const { return impl_->rejected(); }
std::uint64_t RawServer::lost_replies() const { return impl_->lost_replies(); }

RawClient::RawClient(std::shared_ptr<detail::ClientImpl> impl) : impl_(std::move(impl)) {}
RawClient::~RawClient() = default;
RawClient::RawClient(RawClient&&) noexcept = default;
RawClient& RawClient::operator=(RawClient&&) noexcept = default;
void RawClient::call(Buffer& request, std::chrono::nanoseconds timeout, RawSubscriber::Visitor on_reply) {
    impl_->call(request, timeout, on_reply);
}
const std::string& RawClient::name() const { return impl_->name(); }
const std::string& RawClient::request_type() const { return impl_->request_type(); }
const std::string& RawClient::reply_type() const { return impl_->reply_type(); }
bool RawClient::wait_for_server(std::chrono::milliseconds timeout) { return impl_->wait_for_server(timeout); }
std::size_t RawClient::server_count() const { return impl_->server_count(); }

std::shared_ptr<detail::ServerImpl> make_server_impl(std::shared_ptr<detail::NodeImpl> node, const std::string& name,
                                                     const std::string& request_type, const std::string& reply_type,
                                                     RawHandler handler, ServiceOptions options) {
    auto impl = std::make_shared<detail::ServerImpl>(std::move(node), name, request_type, reply_type, std::move(handler),
                                                     std::move(options));
    impl->start();
    return impl;
}

std::shared_ptr<detail::ClientImpl> make_client_impl(std::shared_ptr<detail::NodeImpl> node, const std::string& name,
                                                     const std::string& request_type, const std::string& reply_type,
                                                     ClientOptions options) {
    auto impl = std::make_shared<detail::ClientImpl>(std::move(node), name, request_type, reply_type, std::move(options));
    impl->start();
    return impl;
}

}  // namespace gecko
