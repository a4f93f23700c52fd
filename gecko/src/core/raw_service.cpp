#include "gecko/raw_service.hpp"

#include <mutex>
#include <set>

#include "core/node_core.hpp"
#include "gecko/error.hpp"
#include "gecko/frame.hpp"
#include "gecko/time.hpp"

namespace gecko {
namespace detail {
namespace {

// An error reply's payload is a msgpack string; write one by hand (fixstr/str8/16/32).
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

}  // namespace

class ServerCore final : public Dispatchable, public std::enable_shared_from_this<ServerCore> {
public:
    ServerCore(std::shared_ptr<NodeCore> node, std::string name, std::string request_type, std::string reply_type,
               RawHandler handler, ServiceOptions options)
        : node_(std::move(node)), name_(std::move(name)), request_type_(std::move(request_type)),
          reply_type_(std::move(reply_type)), handler_(std::move(handler)), options_(std::move(options)),
          id_(node_->new_id()), socket_(node_->context(), zmq::socket_type::router) {
        if (name_.empty()) throw Error(Errc::invalid_argument, "a service needs a name");
        socket_.set(zmq::sockopt::linger, 0);
        auto endpoints = options_.endpoints.empty() ? node_->automatic_endpoints("srv-" + name_, id_) : options_.endpoints;
        for (const auto& e : endpoints) {
            try {
                socket_.bind(e);
            } catch (const zmq::error_t& err) {
                throw Error(Errc::transport, "cannot bind service endpoint '" + e + "': " + err.what());
            }
            bound_.push_back(socket_.get(zmq::sockopt::last_endpoint));
        }
        reply_header_.type_name = reply_type_;
        reply_header_.sender_id = id_;
    }

    ~ServerCore() override {
        socket_.close();
        remove_ipc_files(bound_);
    }

    void start() {
        node_->advertise(Role::server, id_, name_, request_type_ + "->" + reply_type_, bound_);
        node_->executor().add(shared_from_this());
    }

    void close() {
        node_->withdraw(id_);
        node_->executor().remove(this);
        std::lock_guard<std::recursive_mutex> lock(mutex_);
        closed_ = true;
    }

    void poll_handles(std::vector<PollHandle>& out) override { out.push_back(PollHandle{socket_.handle(), -1}); }
    std::recursive_mutex& socket_mutex() override { return mutex_; }

    std::size_t dispatch() override {
        std::lock_guard<std::recursive_mutex> lock(mutex_);
        std::size_t handled = 0;
        zmq::message_t identity, request;
        while (!closed_ && socket_.recv(identity, zmq::recv_flags::dontwait)) {
            if (!identity.more() || !socket_.recv(request, zmq::recv_flags::dontwait)) continue;
            // Drop extra frames a foreign peer might send after the request.
            for (bool more = request.more(); more;) {
                zmq::message_t extra;
                if (!socket_.recv(extra, zmq::recv_flags::dontwait)) break;
                more = extra.more();
            }
            answer(identity, request);
            ++handled;
        }
        return handled;
    }

    std::vector<std::string> endpoints() const { return bound_; }
    const std::string& name() const { return name_; }
    std::uint64_t requests() const { return requests_.load(); }
    std::uint64_t rejected() const { return rejected_.load(); }

private:
    void answer(zmq::message_t& identity, zmq::message_t& request) {
        FrameView view;
        const FrameError error = parse_frame(static_cast<const std::uint8_t*>(request.data()), request.size(),
                                             options_.max_message_size, view);
        std::uint64_t sequence = view.header.sequence;
        if (error != FrameError::none) {
            // Answer even a broken request where it says which call it is, so that
            // its client learns why instead of timing out.
            sequence = 0;
            const auto* bytes = static_cast<const std::uint8_t*>(request.data());
            if (request.size() >= 12)
                for (int i = 7; i >= 0; --i) sequence = (sequence << 8) | bytes[4 + i];
        }
        if (error != FrameError::none) {
            reply_error(identity, sequence, std::string("service '") + name_ + "' rejected a request: " + to_string(error));
            return;
        }
        if (view.header.type_name != request_type_) {
            reply_error(identity, sequence, "service '" + name_ + "' expects " + request_type_ + " but got " +
                                                std::string(view.header.type_name));
            return;
        }
        const std::uint8_t* payload = view.body;
        std::size_t size = view.body_size;
        if (view.header.compressed()) {
            if (inflate_body(view, inflated_) != FrameError::none) {
                reply_error(identity, sequence, "service '" + name_ + "': corrupt compressed request");
                return;
            }
            payload = inflated_.data();
            size = inflated_.size();
        }
        info_.sequence = sequence;
        info_.publisher_id = view.header.sender_id;
        info_.send_time_ns = view.header.send_time_ns;
        info_.receive_time_ns = now_ns();
        info_.wire_size = request.size();
        info_.type_name = request_type_;
        const std::size_t room = frame_header_size(reply_type_);
        reply_.resize(room);
        try {
            handler_(RawView{info_, payload, size}, reply_);
        } catch (const std::exception& e) {
            reply_error(identity, sequence, "service '" + name_ + "' failed: " + e.what());
            return;
        }
        reply_header_.flags = frame_flags::reply;
        reply_header_.sequence = sequence;
        reply_header_.send_time_ns = now_ns();
        reply_header_.payload_size = static_cast<std::uint32_t>(reply_.size() - room);
        write_frame_header(reply_.data(), reply_header_);
        ++requests_;  // before sending: the caller may read it as soon as the reply lands
        send(identity, reply_);
    }

    void reply_error(zmq::message_t& identity, std::uint64_t sequence, const std::string& reason) {
        ++rejected_;  // before sending, as above
        if (warned_.insert(reason).second) node_->logger().warn(reason);
        const std::size_t room = frame_header_size(reply_type_);
        reply_.resize(room);
        append_msgpack_string(reply_, reason);
        reply_header_.flags = frame_flags::reply | frame_flags::error;
        reply_header_.sequence = sequence;
        reply_header_.send_time_ns = now_ns();
        reply_header_.payload_size = static_cast<std::uint32_t>(reply_.size() - room);
        write_frame_header(reply_.data(), reply_header_);
        send(identity, reply_);
    }

    void send(zmq::message_t& identity, Buffer& frame) {
        socket_.send(identity, zmq::send_flags::sndmore | zmq::send_flags::dontwait);
        socket_.send(zmq::buffer(frame.data(), frame.size()), zmq::send_flags::dontwait);
    }

    std::shared_ptr<NodeCore> node_;
    std::string name_, request_type_, reply_type_;
    RawHandler handler_;
    ServiceOptions options_;
    std::uint64_t id_;
    std::recursive_mutex mutex_;
    zmq::socket_t socket_;
    std::vector<std::string> bound_;
    bool closed_ = false;
    FrameHeader reply_header_;
    Buffer reply_;
    MessageInfo info_;
    std::vector<std::uint8_t> inflated_;
    std::atomic<std::uint64_t> requests_{0}, rejected_{0};
    std::set<std::string> warned_;
};

class ClientCore final : public std::enable_shared_from_this<ClientCore> {
public:
    ClientCore(std::shared_ptr<NodeCore> node, std::string name, std::string request_type, std::string reply_type,
               ClientOptions options)
        : node_(std::move(node)), name_(std::move(name)), request_type_(std::move(request_type)),
          reply_type_(std::move(reply_type)), options_(std::move(options)), id_(node_->new_id()),
          socket_(node_->context(), zmq::socket_type::dealer) {
        if (name_.empty()) throw Error(Errc::invalid_argument, "a client needs a service name");
        socket_.set(zmq::sockopt::linger, 0);
        // Queue requests only to servers actually connected, so a call with no
        // server fails fast with no_peer instead of waiting for one to appear.
        socket_.set(zmq::sockopt::immediate, 1);
        header_.type_name = request_type_;
        header_.sender_id = id_;
        for (const auto& e : options_.endpoints) apply(true, e);
    }

    void start() {
        std::weak_ptr<ClientCore> weak = shared_from_this();
        node_->watch(Role::client, id_, name_, request_type_ + "->" + reply_type_,
                     [weak](const std::vector<std::string>& eps) {
                         if (auto self = weak.lock()) self->set_discovered(eps);
                     });
    }

    void close() { node_->withdraw(id_); }

    void call(Buffer& request, std::chrono::nanoseconds timeout, RawSubscriber::Visitor on_reply) {
        const auto deadline = std::chrono::steady_clock::now() + timeout;
        std::lock_guard<std::recursive_mutex> lock(mutex_);
        pending_.apply([this](bool c, const std::string& e) { apply(c, e); });
        const std::size_t room = frame_header_size(request_type_);
        if (request.size() < room) throw Error(Errc::invalid_argument, "call: request buffer has no header room");
        header_.sequence = ++sequence_;
        header_.send_time_ns = now_ns();
        header_.payload_size = static_cast<std::uint32_t>(request.size() - room);
        write_frame_header(request.data(), header_);

        if (!wait_for(ZMQ_POLLOUT, deadline)) {
            throw Error(Errc::no_peer, "no server for service '" + name_ + "' is reachable (" + describe_endpoints() +
                                           "); is it running under key '" + node_->options().key + "'?");
        }
        if (!socket_.send(zmq::buffer(request.data(), request.size()), zmq::send_flags::dontwait)) {
            throw Error(Errc::no_peer, "service '" + name_ + "': request could not be queued");
        }
        zmq::message_t reply;
        for (;;) {
            if (!wait_for(ZMQ_POLLIN, deadline)) {
                const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(timeout).count();
                throw Error(Errc::timeout, "service '" + name_ + "' did not answer request " +
                                               std::to_string(sequence_) + " within " + std::to_string(ms) + " ms");
            }
            if (!socket_.recv(reply, zmq::recv_flags::dontwait)) continue;
            FrameView view;
            const FrameError error = parse_frame(static_cast<const std::uint8_t*>(reply.data()), reply.size(),
                                                 options_.max_message_size, view);
            if (error != FrameError::none) {
                throw Error(Errc::protocol, "service '" + name_ + "' sent a bad reply: " + to_string(error));
            }
            if (!(view.header.flags & frame_flags::reply) || view.header.sequence != sequence_) {
                continue;  // a late reply to an earlier call that timed out
            }
            if (view.header.flags & frame_flags::error) {
                throw Error(Errc::remote, read_msgpack_string(view.body, view.body_size));
            }
            if (view.header.type_name != reply_type_) {
                throw Error(Errc::type_mismatch, "service '" + name_ + "' replied with " +
                                                     std::string(view.header.type_name) + " but this client expects " +
                                                     reply_type_);
            }
            const std::uint8_t* payload = view.body;
            std::size_t size = view.body_size;
            if (view.header.compressed()) {
                if (inflate_body(view, inflated_) != FrameError::none) {
                    throw Error(Errc::decode, "service '" + name_ + "': corrupt compressed reply");
                }
                payload = inflated_.data();
                size = inflated_.size();
            }
            info_.sequence = view.header.sequence;
            info_.publisher_id = view.header.sender_id;
            info_.send_time_ns = view.header.send_time_ns;
            info_.receive_time_ns = now_ns();
            info_.wire_size = reply.size();
            info_.type_name = reply_type_;
            try {
                on_reply(RawView{info_, payload, size});
            } catch (const Error&) {
                throw;
            } catch (const std::exception& e) {
                throw Error(Errc::decode, "service '" + name_ + "': reply does not decode as " + reply_type_ + ": " + e.what());
            }
            return;
        }
    }

    void connect(const std::string& endpoint, bool add) {
        std::unique_lock<std::recursive_mutex> lock(mutex_, std::try_to_lock);
        if (lock.owns_lock()) {
            pending_.apply([this](bool c, const std::string& e) { apply(c, e); });
            apply(add, endpoint);
        } else {
            pending_.push(add, endpoint);
        }
    }

    bool wait_for_server(std::chrono::milliseconds timeout) {
        std::lock_guard<std::recursive_mutex> lock(mutex_);
        return wait_for(ZMQ_POLLOUT, std::chrono::steady_clock::now() + timeout);
    }

    const std::string& name() const { return name_; }
    const std::string& request_type() const { return request_type_; }
    const std::string& reply_type() const { return reply_type_; }

private:
    bool wait_for(short events, std::chrono::steady_clock::time_point deadline) {
        for (;;) {
            pending_.apply([this](bool c, const std::string& e) { apply(c, e); });
            zmq::pollitem_t items[] = {{socket_.handle(), -1, events, 0}, {nullptr, pending_.fd(), ZMQ_POLLIN, 0}};
            const auto left = deadline - std::chrono::steady_clock::now();
            const auto wait = std::max(std::chrono::milliseconds(0),
                                       std::chrono::duration_cast<std::chrono::milliseconds>(left + std::chrono::microseconds(999)));
            poll_interruptible(items, 2, wait);
            if (items[0].revents & events) return true;
            if (std::chrono::steady_clock::now() >= deadline) return false;
        }
    }

    void set_discovered(const std::vector<std::string>& endpoints) {
        std::set<std::string> wanted(endpoints.begin(), endpoints.end());
        std::vector<std::pair<bool, std::string>> ops;
        {
            std::lock_guard<std::mutex> lock(discovered_mutex_);
            for (const auto& e : discovered_) if (!wanted.count(e)) ops.emplace_back(false, e);
            for (const auto& e : wanted) if (!discovered_.count(e)) ops.emplace_back(true, e);
            discovered_ = std::move(wanted);
        }
        for (const auto& [add, e] : ops) connect(e, add);
    }

    void apply(bool add, const std::string& endpoint) {
        try {
            if (add) {
                socket_.connect(endpoint);
                connected_.insert(endpoint);
            } else {
                socket_.disconnect(endpoint);
                connected_.erase(endpoint);
            }
        } catch (const zmq::error_t& e) {
            node_->logger().warn("service client '" + name_ + "': cannot " + (add ? "connect to " : "disconnect from ") +
                                 endpoint + ": " + e.what());
        }
    }

    std::string describe_endpoints() const {
        if (connected_.empty()) return "no server endpoint known yet";
        std::string out = "endpoints: ";
        for (const auto& e : connected_) out += e + " ";
        out.pop_back();
        return out;
    }

    std::shared_ptr<NodeCore> node_;
    std::string name_, request_type_, reply_type_;
    ClientOptions options_;
    std::uint64_t id_;
    std::recursive_mutex mutex_;
    zmq::socket_t socket_;
    PendingConnections pending_;
    FrameHeader header_;
    std::uint64_t sequence_ = 0;
    MessageInfo info_;
    std::vector<std::uint8_t> inflated_;
    std::set<std::string> connected_;
    std::mutex discovered_mutex_;
    std::set<std::string> discovered_;
};

}  // namespace detail

RawServer::RawServer(std::shared_ptr<detail::ServerCore> core) : core_(std::move(core)) {}
RawServer::~RawServer() {
    if (core_) core_->close();
}
RawServer::RawServer(RawServer&&) noexcept = default;
RawServer& RawServer::operator=(RawServer&& other) noexcept {
    if (this != &other) {
        if (core_) core_->close();
        core_ = std::move(other.core_);
    }
    return *this;
}
std::vector<std::string> RawServer::endpoints() const { return core_->endpoints(); }
const std::string& RawServer::name() const { return core_->name(); }
std::uint64_t RawServer::requests() const { return core_->requests(); }
std::uint64_t RawServer::rejected() const { return core_->rejected(); }

RawClient::RawClient(std::shared_ptr<detail::ClientCore> core) : core_(std::move(core)) {}
RawClient::~RawClient() {
    if (core_) core_->close();
}
RawClient::RawClient(RawClient&&) noexcept = default;
RawClient& RawClient::operator=(RawClient&& other) noexcept {
    if (this != &other) {
        if (core_) core_->close();
        core_ = std::move(other.core_);
    }
    return *this;
}
void RawClient::call(Buffer& request, std::chrono::nanoseconds timeout, RawSubscriber::Visitor on_reply) {
    core_->call(request, timeout, on_reply);
}
void RawClient::connect(const std::string& endpoint) { core_->connect(endpoint, true); }
const std::string& RawClient::name() const { return core_->name(); }
const std::string& RawClient::request_type() const { return core_->request_type(); }
const std::string& RawClient::reply_type() const { return core_->reply_type(); }
bool RawClient::wait_for_server(std::chrono::milliseconds timeout) { return core_->wait_for_server(timeout); }

RawServer Node::raw_server(const std::string& name, const std::string& request_type, const std::string& reply_type,
                           RawHandler handler, ServiceOptions options) {
    auto core = std::make_shared<detail::ServerCore>(core_, name, request_type, reply_type, std::move(handler),
                                                     std::move(options));
    core->start();
    return RawServer(std::move(core));
}

RawClient Node::raw_client(const std::string& name, const std::string& request_type, const std::string& reply_type,
                           ClientOptions options) {
    auto core = std::make_shared<detail::ClientCore>(core_, name, request_type, reply_type, std::move(options));
    core->start();
    return RawClient(std::move(core));
}

}  // namespace gecko
