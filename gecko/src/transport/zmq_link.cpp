// ZeroMQ implementation of the transport seam: XPUB for publishers (so they
// see who subscribes, and of what type), SUB for subscribers.

#include <cstdio>
#include <cstdlib>

#include "gecko/error.hpp"
#include "transport/link.hpp"

namespace gecko::detail {
namespace {

constexpr std::string_view announcement_prefix = "\xff" "gecko-sub ";
// Frames above this are handed to ZeroMQ without a copy; below it a copy is
// cheaper than the allocation it saves.
constexpr std::size_t zero_copy_threshold = 64 * 1024;

class ZmqOutLink final : public OutLink {
public:
    ZmqOutLink(zmq::context_t& context, const std::vector<std::string>& endpoints, const OutLinkOptions& options)
        : socket_(context, zmq::socket_type::xpub) {
        socket_.set(zmq::sockopt::linger, static_cast<int>(options.linger.count()));
        socket_.set(zmq::sockopt::sndhwm, options.send_queue);
        for (const auto& endpoint : endpoints) {
            try {
                socket_.bind(endpoint);
            } catch (const zmq::error_t& e) {
                throw Error(Errc::transport, "cannot bind publisher endpoint '" + endpoint + "': " + e.what());
            }
            bound_.push_back(socket_.get(zmq::sockopt::last_endpoint));
        }
    }

    ~ZmqOutLink() override {
        socket_.close();
        remove_ipc_files(bound_);
    }

    std::vector<std::string> endpoints() const override { return bound_; }

    bool send(Buffer& frame) override {
        if (frame.size() < zero_copy_threshold) return send_copy(frame.data(), frame.size());
        const std::size_t size = frame.size();
        zmq::message_t message(frame.release(), size, [](void* data, void*) { std::free(data); }, nullptr);
        return socket_.send(message, zmq::send_flags::dontwait).has_value();
    }

    bool send_copy(const void* data, std::size_t size) override {
        zmq::message_t message(data, size);
        return socket_.send(message, zmq::send_flags::dontwait).has_value();
    }

    void poll_announcements(std::chrono::milliseconds wait,
                            FunctionRef<void(std::string_view, bool)> on) override {
        if (wait.count() > 0) {
            zmq::pollitem_t item{socket_.handle(), 0, ZMQ_POLLIN, 0};
            poll_interruptible(&item, 1, wait);
        }
        zmq::message_t message;
        while (socket_.recv(message, zmq::recv_flags::dontwait)) {
            if (message.size() == 0) continue;
            const auto* bytes = static_cast<const char*>(message.data());
            on(std::string_view(bytes + 1, message.size() - 1), bytes[0] == 1);
        }
    }

private:
    zmq::socket_t socket_;
    std::vector<std::string> bound_;
};

class ZmqInLink final : public InLink {
public:
    ZmqInLink(zmq::context_t& context, const std::string& announcement, int receive_queue)
        : socket_(context, zmq::socket_type::sub) {
        socket_.set(zmq::sockopt::linger, 0);
        socket_.set(zmq::sockopt::rcvhwm, receive_queue);
        socket_.set(zmq::sockopt::subscribe, "");
        // Never matches a data frame (those start with "GK"); it only tells the
        // publisher who we are and which type we expect.
        socket_.set(zmq::sockopt::subscribe, announcement);
    }

    void connect(const std::string& endpoint) override {
        try {
            socket_.connect(endpoint);
        } catch (const zmq::error_t& e) {
            throw Error(Errc::transport, "cannot connect to '" + endpoint + "': " + e.what());
        }
    }

    void disconnect(const std::string& endpoint) override {
        try {
            socket_.disconnect(endpoint);
        } catch (const zmq::error_t&) {
            // Not connected: nothing to undo.
        }
    }

    bool try_receive(InFrame& frame) override {
        return socket_.recv(frame.message, zmq::recv_flags::dontwait).has_value();
    }

    PollHandle poll_handle() override { return PollHandle{socket_.handle(), -1}; }

    bool wait_receive(InFrame& frame, std::chrono::milliseconds timeout) override {
        const int ms = static_cast<int>(timeout.count());
        if (ms != timeout_ms_) {
            socket_.set(zmq::sockopt::rcvtimeo, ms);
            timeout_ms_ = ms;
        }
        try {
            return socket_.recv(frame.message).has_value();
        } catch (const zmq::error_t& e) {
            if (e.num() == EINTR) return false;
            throw;
        }
    }

private:
    zmq::socket_t socket_;
    int timeout_ms_ = -1;
};

}  // namespace

std::unique_ptr<OutLink> make_out_link(zmq::context_t& context, const std::vector<std::string>& endpoints,
                                       const OutLinkOptions& options) {
    return std::make_unique<ZmqOutLink>(context, endpoints, options);
}

std::unique_ptr<InLink> make_in_link(zmq::context_t& context, const std::string& announcement, int receive_queue) {
    return std::make_unique<ZmqInLink>(context, announcement, receive_queue);
}

std::string make_announcement(std::string_view type_name, std::uint64_t subscriber_id, std::string_view node) {
    char id[17];
    std::snprintf(id, sizeof id, "%016llx", static_cast<unsigned long long>(subscriber_id));
    std::string out(announcement_prefix);
    out.append(type_name).append(" ").append(id).append(" ").append(node);
    return out;
}

bool parse_announcement(std::string_view text, Announcement& out) {
    if (text.substr(0, announcement_prefix.size()) != announcement_prefix) return false;
    text.remove_prefix(announcement_prefix.size());
    const auto first = text.find(' ');
    if (first == std::string_view::npos) return false;
    const auto second = text.find(' ', first + 1);
    if (second == std::string_view::npos) return false;
    out.type_name = std::string(text.substr(0, first));
    out.subscriber_id = std::strtoull(std::string(text.substr(first + 1, second - first - 1)).c_str(), nullptr, 16);
    out.node = std::string(text.substr(second + 1));
    return true;
}

}  // namespace gecko::detail
