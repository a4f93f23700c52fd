#include "gecko/raw_subscriber.hpp"

#include <mutex>
#include <optional>
#include <set>

#include "core/node_core.hpp"
#include "gecko/error.hpp"
#include "gecko/frame.hpp"
#include "gecko/time.hpp"
#include "transport/link.hpp"

namespace gecko {
namespace detail {

class SubscriberCore final : public Dispatchable, public std::enable_shared_from_this<SubscriberCore> {
public:
    SubscriberCore(std::shared_ptr<NodeCore> node, std::string topic, SubscriberOptions options,
                   std::function<void(const RawView&)> callback)
        : node_(std::move(node)), topic_(std::move(topic)), options_(std::move(options)),
          callback_(std::move(callback)), id_(node_->new_id()) {
        if (topic_.empty()) throw Error(Errc::invalid_argument, "a subscriber needs a topic name");
        if (options_.depth == 0) throw Error(Errc::invalid_argument, "subscriber of '" + topic_ + "': depth must be >= 1");
        if (options_.receive_queue < 0)
            throw Error(Errc::invalid_argument, "subscriber of '" + topic_ + "': receive_queue must be >= 0 (0: unbounded)");
        link_ = make_in_link(node_->context(),
                             make_announcement(options_.type_name.empty() ? "*" : options_.type_name, id_,
                                               node_->options().name),
                             options_.receive_queue);
        ring_.resize(options_.depth);
        for (const auto& endpoint : options_.endpoints) apply(true, endpoint);
    }

    // Called once the shared_ptr exists (discovery and the executor hold weak/strong refs).
    void start() {
        std::weak_ptr<SubscriberCore> weak = shared_from_this();
        node_->watch(Role::subscriber, id_, topic_, options_.type_name, [weak](const std::vector<std::string>& eps) {
            if (auto self = weak.lock()) self->set_discovered(eps);
        });
        if (callback_) node_->executor().add(shared_from_this());
        node_->add_stats_source(id_, [weak] {
            auto self = weak.lock();
            if (!self) return NodeCore::Counters{};
            const SubscriberStats s = self->stats();
            return NodeCore::Counters{s.received, s.bytes, s.drops, s.last_latency_ns};
        });
    }

    void close() {
        node_->remove_stats_source(id_);
        node_->withdraw(id_);
        if (callback_) node_->executor().remove(this);
        std::lock_guard<std::recursive_mutex> lock(socket_mutex_);
        closed_ = true;
    }

    bool receive(std::chrono::nanoseconds timeout, RawSubscriber::Visitor visit) {
        if (callback_) {
            throw Error(Errc::invalid_argument,
                        "subscriber of '" + topic_ + "' has a callback: its messages arrive through Node::spin()");
        }
        std::lock_guard<std::recursive_mutex> lock(socket_mutex_);
        // The clock is read only once there is nothing to deliver: a busy
        // subscriber pays no deadline arithmetic per message.
        std::optional<std::chrono::steady_clock::time_point> deadline;
        for (;;) {
            pending_.apply([this](bool connect, const std::string& e) { apply(connect, e); });
            // Reading an empty socket costs a poll(2) inside ZeroMQ, so the ring is
            // refilled from the socket (keeping the newest `depth`) every
            // refill_every deliveries or refill_period, whichever comes first; in
            // between, frames are taken one by one. A reader that keeps up pays
            // the poll once per 16 messages; a slow reader refills on every call,
            // so it never reads further back than the newest `depth`.
            // Latest-only (depth 1) refills every time: it must skip to the newest.
            const std::int64_t now = now_ns();
            if (since_drain_ >= refill_every || now - last_drain_ns_ >= refill_period_ns ||
                (options_.depth == 1 && count_ == 0)) {
                drain();
                since_drain_ = 0;
                last_drain_ns_ = now;
            }
            while (count_ > 0) {
                ++since_drain_;
                if (deliver_front(visit)) return true;
            }
            std::chrono::nanoseconds left = timeout;
            if (!deadline) {
                deadline = std::chrono::steady_clock::now() + timeout;
            } else {
                left = *deadline - std::chrono::steady_clock::now();
            }
            if (!wait_for_frame(std::max(left, std::chrono::nanoseconds(0))) && left <= std::chrono::nanoseconds(0))
                return false;
        }
    }

    // Dispatchable (callback subscribers).
    void poll_handles(std::vector<PollHandle>& out) override {
        out.push_back(link_->poll_handle());
        out.push_back(PollHandle{nullptr, pending_.fd()});
    }
    std::recursive_mutex& socket_mutex() override { return socket_mutex_; }
    std::size_t dispatch() override {
        std::lock_guard<std::recursive_mutex> lock(socket_mutex_);
        if (closed_) return 0;
        pending_.apply([this](bool connect, const std::string& e) { apply(connect, e); });
        drain();
        std::size_t delivered = 0;
        while (count_ > 0 && !closed_) {
            if (deliver_front(callback_)) ++delivered;
        }
        return delivered;
    }

    void connect(const std::string& endpoint, bool add) {
        // Apply now if no one is using the socket; otherwise hand it to the
        // thread that is (it wakes on the event fd).
        std::unique_lock<std::recursive_mutex> lock(socket_mutex_, std::try_to_lock);
        if (lock.owns_lock()) {
            pending_.apply([this](bool c, const std::string& e) { apply(c, e); });
            apply(add, endpoint);
        } else {
            pending_.push(add, endpoint);
        }
    }

    std::vector<std::string> connections() const {
        std::lock_guard<std::mutex> lock(stats_mutex_);
        return {connected_.begin(), connected_.end()};
    }

    SubscriberStats stats() const {
        std::lock_guard<std::mutex> lock(stats_mutex_);
        return stats_;
    }

    const std::string& topic() const { return topic_; }
    const std::string& type_name() const { return options_.type_name; }
    std::uint64_t id() const { return id_; }

private:
    struct Slot {
        InFrame frame;
        FrameView view;
        std::int64_t receive_ns = 0;
    };

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

    // Waits up to `left` for a frame (the ring is empty); true if one was taken into the ring.
    // With no publisher connected yet, polls the socket and the event fd, so a
    // publisher found by discovery is connected at once. Once connected,
    // blocks in the socket itself (one wake-up per message, no zmq_poll) in
    // slices of at most 20 ms, after which queued connections are applied.
    bool wait_for_frame(std::chrono::nanoseconds left) {
        // Round up: ZeroMQ counts whole milliseconds.
        const auto wait = std::max(std::chrono::milliseconds(0),
                                   std::chrono::duration_cast<std::chrono::milliseconds>(left + std::chrono::microseconds(999)));
        Slot& slot = ring_[head_];
        if (connected_count_ == 0) {
            const auto handle = link_->poll_handle();
            zmq::pollitem_t items[] = {{handle.socket, handle.fd, ZMQ_POLLIN, 0}, {nullptr, pending_.fd(), ZMQ_POLLIN, 0}};
            poll_interruptible(items, 2, wait);
            if (!link_->try_receive(slot.frame)) return false;  // woken by a new connection, or timed out
        } else if (!link_->wait_receive(slot.frame, std::min(std::chrono::milliseconds(20), wait))) {
            return false;
        }
        slot.receive_ns = now_ns();
        std::lock_guard<std::mutex> lock(stats_mutex_);
        if (accept(slot)) ++count_;
        return true;
    }

    void apply(bool add, const std::string& endpoint) {
        if (add) {
            link_->connect(endpoint);
        } else {
            link_->disconnect(endpoint);
        }
        std::lock_guard<std::mutex> lock(stats_mutex_);
        if (add) {
            connected_.insert(endpoint);
        } else {
            connected_.erase(endpoint);
        }
        connected_count_ = connected_.size();
    }

    // Reads everything the transport holds into the keep-last-N ring.
    // One clock read per call: frames taken together share a receive time.
    void drain() {
        std::lock_guard<std::mutex> lock(stats_mutex_);
        std::int64_t received_at = 0;
        for (;;) {
            Slot& slot = ring_[(head_ + count_) % ring_.size()];
            if (count_ == ring_.size()) {
                // Full: read into a scratch slot, then overwrite the oldest if accepted.
                if (!link_->try_receive(scratch_.frame)) return;
                if (received_at == 0) received_at = now_ns();
                scratch_.receive_ns = received_at;
                if (!accept(scratch_)) continue;
                ++stats_.overwritten;
                std::swap(ring_[head_], scratch_);
                // The swap moved the frame: a small one (ZeroMQ keeps those inside
                // the message object) has moved bytes, so point the view at them again.
                parse_frame(ring_[head_].frame.data(), ring_[head_].frame.size(), options_.max_message_size,
                            ring_[head_].view);
                head_ = (head_ + 1) % ring_.size();
                continue;
            }
            if (!link_->try_receive(slot.frame)) return;
            if (received_at == 0) received_at = now_ns();
            slot.receive_ns = received_at;
            if (accept(slot)) ++count_;
        }
    }

    // What the log line says beyond the reason: the numbers a user needs to act.
    std::string frame_error_detail(FrameError error, const InFrame& frame) const {
        std::string detail = std::to_string(frame.size()) + " bytes";
        const std::uint8_t* bytes = frame.data();
        if (error == FrameError::oversized) {
            if (frame.size() >= 32) {
                std::uint32_t payload = 0;
                for (int i = 3; i >= 0; --i) payload = (payload << 8) | bytes[28 + i];
                detail += ", payload " + std::to_string(payload) + " bytes";
                if (bytes[3] & frame_flags::compressed) detail += " once inflated";
            }
            detail += "; the limit is SubscriberOptions::max_message_size = " + std::to_string(options_.max_message_size);
        } else if (error == FrameError::unsupported_version && frame.size() > 2) {
            detail += "; version " + std::to_string(bytes[2]) + ", this build reads version " +
                      std::to_string(frame_version);
        }
        if (frame.size() >= 20 && error != FrameError::bad_magic && error != FrameError::truncated) {
            std::uint64_t sender = 0;
            for (int i = 7; i >= 0; --i) sender = (sender << 8) | bytes[12 + i];
            detail += "; from publisher " + std::to_string(sender);
        }
        return detail;
    }

    // Header, size and type checks; counts and logs (once per reason) what it rejects.
    bool accept(Slot& slot) {
        const FrameError error = parse_frame(slot.frame.data(), slot.frame.size(), options_.max_message_size, slot.view);
        if (error != FrameError::none) {
            if (error == FrameError::oversized) {
                ++stats_.oversized;
            } else if (error == FrameError::unsupported_version) {
                ++stats_.unsupported_version;
            } else {
                ++stats_.malformed;
            }
            warn_once(static_cast<int>(error), std::string("dropped a frame on '") + topic_ + "': " + to_string(error) +
                                                   " (" + frame_error_detail(error, slot.frame) + ")");
            return false;
        }
        const FrameHeader& h = slot.view.header;
        if (!options_.type_name.empty() && h.type_name != options_.type_name) {
            ++stats_.type_mismatches;
            if (mismatch_warned_.insert(h.sender_id).second) {
                node_->logger().error("subscriber of '" + topic_ + "' expects " + options_.type_name +
                                      " but a publisher sends " + std::string(h.type_name) +
                                      "; its messages are dropped, not decoded");
            }
            return false;
        }
        // Messages come in runs from one publisher: remember the last one's entry
        // (std::map nodes never move) instead of a lookup per message.
        if (!last_peer_ || h.sender_id != last_sender_) {
            last_peer_ = &stats_.publishers[h.sender_id];
            last_sender_ = h.sender_id;
        }
        PeerStats& peer = *last_peer_;
        if (peer.last_sequence != 0 && h.sequence > peer.last_sequence + 1) {
            const std::uint64_t gap = h.sequence - peer.last_sequence - 1;
            peer.drops += gap;
            stats_.drops += gap;
        }
        if (h.sequence > peer.last_sequence) peer.last_sequence = h.sequence;
        ++peer.received;
        ++stats_.received;
        stats_.bytes += slot.frame.size();
        stats_.last_latency_ns = slot.receive_ns - h.send_time_ns;
        return true;
    }

    // Hands the oldest queued message to `visit`; false if it could not be decoded.
    template <class Visit>
    bool deliver_front(Visit& visit) {
        Slot& slot = ring_[head_];
        head_ = (head_ + 1) % ring_.size();
        --count_;
        // slot.view was filled by accept() (or again after a swap in drain()).
        const FrameHeader& h = slot.view.header;
        info_.sequence = h.sequence;
        info_.publisher_id = h.sender_id;
        info_.send_time_ns = h.send_time_ns;
        info_.receive_time_ns = slot.receive_ns;
        info_.wire_size = slot.frame.size();
        info_.compressed = h.compressed();
        info_.type_name.assign(h.type_name.data(), h.type_name.size());
        const std::uint8_t* payload = slot.view.body;
        std::size_t size = slot.view.body_size;
        if (h.compressed()) {
            if (inflate_body(slot.view, inflated_) != FrameError::none) {
                std::lock_guard<std::mutex> lock(stats_mutex_);
                ++stats_.malformed;
                warn_once(static_cast<int>(FrameError::decompress_failed),
                          "dropped a frame on '" + topic_ + "': " + to_string(FrameError::decompress_failed));
                return false;
            }
            payload = inflated_.data();
            size = inflated_.size();
        }
        try {
            visit(RawView{info_, payload, size});
            slot.frame.message.rebuild();  // give the bytes back now, not depth messages later
        } catch (const Error& e) {
            slot.frame.message.rebuild();
            if (e.code() != Errc::decode) {
                callback_failed(e.what());
                return false;
            }
            std::lock_guard<std::mutex> lock(stats_mutex_);
            ++stats_.decode_errors;
            warn_once(1000, "subscriber of '" + topic_ + "' could not decode a " + info_.type_name + ": " + e.what());
            return false;
        } catch (const std::exception& e) {
            // Decoding throws gecko::Error(decode) only: anything else came from the application's callback.
            slot.frame.message.rebuild();
            callback_failed(e.what());
            return false;
        }
        std::lock_guard<std::mutex> lock(stats_mutex_);
        ++stats_.delivered;
        return true;
    }

    // A callback that throws is the application's bug, not bad input: each
    // distinct error is logged once (the first few), every one is counted.
    void callback_failed(const std::string& what) {
        std::lock_guard<std::mutex> lock(stats_mutex_);
        ++stats_.callback_errors;
        if (callback_errors_logged_.size() < 8 && callback_errors_logged_.insert(what).second) {
            node_->logger().error("the callback of subscriber of '" + topic_ + "' threw on message #" +
                                  std::to_string(info_.sequence) + ": " + what +
                                  " (the subscriber goes on; further identical errors are only counted in "
                                  "stats().callback_errors)");
        }
    }

    void warn_once(int reason, const std::string& message) {
        if (warned_.insert(reason).second) node_->logger().warn(message + " (further ones are only counted)");
    }

    std::shared_ptr<NodeCore> node_;
    std::string topic_;
    SubscriberOptions options_;
    std::function<void(const RawView&)> callback_;
    std::uint64_t id_;
    std::unique_ptr<InLink> link_;
    std::recursive_mutex socket_mutex_;
    PendingConnections pending_;
    bool closed_ = false;

    std::vector<Slot> ring_;
    Slot scratch_;
    std::size_t head_ = 0;
    std::size_t count_ = 0;
    static constexpr std::size_t refill_every = 16;
    std::size_t since_drain_ = refill_every;  // deliveries by receive() since its last drain(): the first one drains
    static constexpr std::int64_t refill_period_ns = 1'000'000;
    std::int64_t last_drain_ns_ = 0;
    MessageInfo info_;
    std::vector<std::uint8_t> inflated_;

    mutable std::mutex stats_mutex_;
    SubscriberStats stats_;
    PeerStats* last_peer_ = nullptr;  // &stats_.publishers[last_sender_]
    std::uint64_t last_sender_ = 0;
    std::set<std::string> connected_;
    std::size_t connected_count_ = 0;  // connected_.size(), read under socket_mutex_ alone
    std::set<int> warned_;
    std::set<std::string> callback_errors_logged_;
    std::set<std::uint64_t> mismatch_warned_;

    std::mutex discovered_mutex_;
    std::set<std::string> discovered_;
};

}  // namespace detail

RawSubscriber::RawSubscriber(std::shared_ptr<detail::SubscriberCore> core) : core_(std::move(core)) {}
RawSubscriber::~RawSubscriber() {
    if (core_) core_->close();
}
RawSubscriber::RawSubscriber(RawSubscriber&&) noexcept = default;
RawSubscriber& RawSubscriber::operator=(RawSubscriber&& other) noexcept {
    if (this != &other) {
        if (core_) core_->close();
        core_ = std::move(other.core_);
    }
    return *this;
}

bool RawSubscriber::receive(std::chrono::nanoseconds timeout, Visitor visit) { return core_->receive(timeout, visit); }
void RawSubscriber::connect(const std::string& endpoint) { core_->connect(endpoint, true); }
void RawSubscriber::disconnect(const std::string& endpoint) { core_->connect(endpoint, false); }
std::vector<std::string> RawSubscriber::connections() const { return core_->connections(); }
const std::string& RawSubscriber::topic() const { return core_->topic(); }
const std::string& RawSubscriber::type_name() const { return core_->type_name(); }
std::uint64_t RawSubscriber::id() const { return core_->id(); }
SubscriberStats RawSubscriber::stats() const { return core_->stats(); }

RawSubscriber Node::raw_subscriber(const std::string& topic, SubscriberOptions options) {
    auto core = std::make_shared<detail::SubscriberCore>(core_, topic, std::move(options), nullptr);
    core->start();
    return RawSubscriber(std::move(core));
}

RawSubscriber Node::raw_subscriber(const std::string& topic, SubscriberOptions options,
                                   std::function<void(const RawView&)> callback) {
    if (!callback) throw Error(Errc::invalid_argument, "raw_subscriber: empty callback");
    auto core = std::make_shared<detail::SubscriberCore>(core_, topic, std::move(options), std::move(callback));
    core->start();
    return RawSubscriber(std::move(core));
}

}  // namespace gecko
