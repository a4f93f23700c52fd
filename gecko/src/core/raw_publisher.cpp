#include "gecko/raw_publisher.hpp"

#include <map>
#include <mutex>
#include <set>

#include "core/node_core.hpp"
#include "gecko/error.hpp"
#include "gecko/frame.hpp"
#include "gecko/time.hpp"
#include "transport/link.hpp"

namespace gecko {
namespace detail {

class PublisherCore {
public:
    PublisherCore(std::shared_ptr<NodeCore> node, std::string topic, std::string type_name, PublisherOptions options)
        : node_(std::move(node)), topic_(std::move(topic)), type_name_(std::move(type_name)),
          options_(std::move(options)), id_(node_->new_id()) {
        if (topic_.empty()) throw Error(Errc::invalid_argument, "a publisher needs a topic name");
        if (type_name_.empty() || type_name_.size() > 255) {
            throw Error(Errc::invalid_argument, "publisher of '" + topic_ + "': type name must be 1..255 characters");
        }
        auto endpoints = options_.endpoints.empty() ? node_->automatic_endpoints(topic_, id_) : options_.endpoints;
        link_ = make_out_link(node_->context(), endpoints, OutLinkOptions{options_.send_queue, options_.linger});
        header_.type_name = type_name_;
        header_.sender_id = id_;
        node_->advertise(Role::publisher, id_, topic_, type_name_, link_->endpoints());
        node_->add_stats_source(id_, [this] {
            const PublisherStats s = stats();
            return NodeCore::Counters{s.messages, s.bytes, s.send_failures, -1};
        });
    }

    ~PublisherCore() {
        node_->remove_stats_source(id_);
        node_->withdraw(id_);
    }

    void publish_frame(Buffer& buffer) {
        const std::size_t room = frame_header_size(type_name_);
        if (buffer.size() < room) throw Error(Errc::invalid_argument, "publish_frame: buffer has no header room");
        const std::size_t payload = buffer.size() - room;
        std::lock_guard<std::mutex> lock(mutex_);
        // One clock read per message (a vDSO call costs ~50-100 ns on a VM): the
        // send stamp also paces the reading of subscription announcements.
        const std::int64_t now = now_ns();
        constexpr std::int64_t announcement_period_ns = 20'000'000;
        if (now >= next_announcements_ns_ || now < next_announcements_ns_ - announcement_period_ns) {
            take_announcements(std::chrono::milliseconds(0));
            next_announcements_ns_ = now + announcement_period_ns;
        }
        header_.sequence = ++sequence_;
        header_.send_time_ns = now;
        header_.payload_size = static_cast<std::uint32_t>(payload);
        bool sent;
        if (options_.compress_above && payload > *options_.compress_above) {
            header_.flags = frame_flags::compressed;
            compressed_.resize(room);
            if (!deflate_append(buffer.data() + room, payload, options_.compression_level, compressed_)) {
                throw Error(Errc::transport, "zlib failed to compress a message on '" + topic_ + "'");
            }
            write_frame_header(compressed_.data(), header_);
            sent = link_->send_copy(compressed_.data(), compressed_.size());
            stats_.bytes += compressed_.size();
            ++stats_.compressed;
        } else {
            header_.flags = 0;
            write_frame_header(buffer.data(), header_);
            stats_.bytes += buffer.size();
            sent = link_->send(buffer);
        }
        if (sent) {
            ++stats_.messages;
        } else {
            ++stats_.send_failures;
        }
    }

    void publish_payload(const void* payload, std::size_t size) {
        thread_local Buffer buffer;
        buffer.resize(frame_header_size(type_name_));
        buffer.write(static_cast<const char*>(payload), size);
        publish_frame(buffer);
    }

    void publish_raw_bytes(const void* bytes, std::size_t size) {
        std::lock_guard<std::mutex> lock(mutex_);
        link_->send_copy(bytes, size);
    }

    std::size_t subscriber_count() {
        std::lock_guard<std::mutex> lock(mutex_);
        take_announcements(std::chrono::milliseconds(0));
        return subscribers_.size();
    }

    bool wait_for_subscribers(std::size_t count, std::chrono::milliseconds timeout) {
        const auto deadline = std::chrono::steady_clock::now() + timeout;
        std::lock_guard<std::mutex> lock(mutex_);
        for (;;) {
            take_announcements(std::chrono::milliseconds(0));
            if (subscribers_.size() >= count) return true;
            const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
            if (left.count() <= 0) return false;
            take_announcements(std::min(left, std::chrono::milliseconds(50)));
        }
    }

    PublisherStats stats() {
        std::lock_guard<std::mutex> lock(mutex_);
        take_announcements(std::chrono::milliseconds(0));
        PublisherStats out = stats_;
        out.subscribers = subscribers_.size();
        return out;
    }

    const std::string& topic() const { return topic_; }
    const std::string& type_name() const { return type_name_; }
    std::uint64_t id() const { return id_; }
    std::vector<std::string> endpoints() const { return link_->endpoints(); }

private:
    // Subscribers announce themselves (and their type) through the
    // subscription channel; that is how a publisher counts them and learns of
    // a subscriber expecting another type.
    void take_announcements(std::chrono::milliseconds wait) {
        link_->poll_announcements(wait, [this](std::string_view text, bool subscribed) {
            Announcement a;
            if (!parse_announcement(text, a)) return;
            if (!subscribed) {
                subscribers_.erase(a.subscriber_id);
                return;
            }
            subscribers_.insert(a.subscriber_id);
            if (a.type_name != "*" && a.type_name != type_name_ && warned_.insert(a.subscriber_id).second) {
                ++stats_.mismatched_subscribers;
                node_->logger().error("publisher of '" + topic_ + "' sends " + type_name_ + " but subscriber of node '" +
                                      a.node + "' expects " + a.type_name + "; it will drop every message");
            }
        });
    }

    std::shared_ptr<NodeCore> node_;
    std::string topic_;
    std::string type_name_;
    PublisherOptions options_;
    std::uint64_t id_;
    std::mutex mutex_;
    std::unique_ptr<OutLink> link_;
    FrameHeader header_;
    std::uint64_t sequence_ = 0;
    std::int64_t next_announcements_ns_ = 0;
    std::vector<std::uint8_t> compressed_;
    PublisherStats stats_;
    std::set<std::uint64_t> subscribers_;
    std::set<std::uint64_t> warned_;
};

}  // namespace detail

RawPublisher::RawPublisher(std::shared_ptr<detail::PublisherCore> core) : core_(std::move(core)) {}
RawPublisher::~RawPublisher() = default;
RawPublisher::RawPublisher(RawPublisher&&) noexcept = default;
RawPublisher& RawPublisher::operator=(RawPublisher&&) noexcept = default;

void RawPublisher::publish(const void* payload, std::size_t size) { core_->publish_payload(payload, size); }
void RawPublisher::publish_frame(Buffer& buffer) { core_->publish_frame(buffer); }
void RawPublisher::publish_raw_bytes(const void* bytes, std::size_t size) { core_->publish_raw_bytes(bytes, size); }
const std::string& RawPublisher::topic() const { return core_->topic(); }
const std::string& RawPublisher::type_name() const { return core_->type_name(); }
std::uint64_t RawPublisher::id() const { return core_->id(); }
std::vector<std::string> RawPublisher::endpoints() const { return core_->endpoints(); }
std::size_t RawPublisher::subscriber_count() { return core_->subscriber_count(); }
bool RawPublisher::wait_for_subscribers(std::size_t count, std::chrono::milliseconds timeout) {
    return core_->wait_for_subscribers(count, timeout);
}
PublisherStats RawPublisher::stats() { return core_->stats(); }

RawPublisher Node::raw_publisher(const std::string& topic, const std::string& type_name, PublisherOptions options) {
    return RawPublisher(std::make_shared<detail::PublisherCore>(core_, topic, type_name, std::move(options)));
}

}  // namespace gecko
