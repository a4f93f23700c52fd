// SPDX-License-Identifier: Apache-2.0
// A publisher: frames its payloads (sequence, time, channel, type hash),
// compresses them when asked, and hands them to its node's out-ports.

#include <mutex>

#include "gecko/error.hpp"
#include "gecko/loan.hpp"
#include "gecko/raw_publisher.hpp"
#include "gecko/time.hpp"
#include "gecko/wire/control.hpp"
#include "gecko/wire/frame.hpp"
#include "node/names.hpp"
#include "node/node_impl.hpp"

namespace gecko {
namespace detail {

class PublisherImpl final : public Entity {
public:
    PublisherImpl(std::shared_ptr<NodeImpl> node, std::string topic, std::string type_name, PublisherOptions options)
        : node_(std::move(node)), topic_(std::move(topic)), type_name_(std::move(type_name)),
          options_(std::move(options)), id_(node_->new_id()) {
        check_topic_name(topic_, "a publisher");
        check_type_name(type_name_, "publisher of '" + topic_ + "'");
        if (options_.compression_level < 1 || options_.compression_level > 9)
            throw Error(Errc::invalid_argument, "publisher of '" + topic_ + "': compression_level must be 1..9");
        if (node_->closed()) node_->throw_closed("publisher of '" + topic_ + "'");
        header_.channel = wire::channel_of(node_->key(), topic_);
        header_.sender_id = id_;
        header_.type_hash = wire::type_hash(type_name_);
        sending_.channel = header_.channel;
        sending_.type = type_name_;
        sending_.what = "publisher of '" + topic_ + "'";
        sending_.latched = options_.latched;
        sending_.tells_start = true;
        sending_.sender_id = id_;
        node_->outbound().add(sending_);
        Registration r;
        r.id = id_;
        r.kind = EntityKind::publisher;
        r.topic = topic_;
        r.type_name = type_name_;
        r.latched = options_.latched;
        node_->attach(*this, r);
    }

    ~PublisherImpl() override {
        close();
        node_->detach(*this);
    }

    std::uint64_t id() const override { return id_; }

    TopicStats report() override {
        std::lock_guard<std::mutex> lock(mutex_);
        TopicStats t;
        t.id = id_;
        t.messages_per_s = static_cast<double>(stats_.messages);  // totals; the node turns them into rates
        t.bytes_per_s = static_cast<double>(stats_.bytes);
        t.drops = stats_.dropped;
        t.unheard = stats_.unheard;
        return t;
    }

    void node_closed() override { close(); }

    // Its topic's channel id is another topic's: a frame of it would merge into that topic.
    void refused(const std::string& message) override {
        std::lock_guard<std::mutex> lock(mutex_);
        refused_ = message;
    }

    // Quiet since the last tick after sending: say where the sequence is, so
    // that subscribers count what a link dropped at the end of a burst, and
    // tell those that joined since where their stream began, so that they
    // count what it dropped before the first message they received.
    void tick() override {
        std::lock_guard<std::mutex> lock(mutex_);
        if (closed_ || sequence_ == marked_) return;
        if (sequence_ != seen_at_tick_) {  // still sending: a later message shows any gap
            seen_at_tick_ = sequence_;
            return;
        }
        node_->outbound().repeat_starts(sending_, false);
        // Said only once it reached every subscriber: a link that had no room
        // for it (a shared-memory pool whose chunks a stopped subscriber
        // holds) hears it again at the next quiet tick, so that the tail it
        // lost is counted.
        if (send_control("seq").missed == 0) marked_ = sequence_;
    }

    void publish_frame(Buffer& buffer) {
        const std::size_t room = wire::frame_header_size;
        if (buffer.size() < room) throw Error(Errc::invalid_argument, "publish_frame: the buffer has no header room");
        const std::size_t payload = buffer.size() - room;
        check_payload_size(payload);
        std::lock_guard<std::mutex> lock(mutex_);
        if (closed_) node_->throw_closed("publisher of '" + topic_ + "'");
        const std::int64_t now = stamp(payload);
        Buffer* frame = &buffer;
        if (options_.compress_above && payload > *options_.compress_above) {
            header_.flags = wire::frame_flags::compressed;
            compressed_.resize(room);
            if (!wire::deflate_append(buffer.data() + room, payload, options_.compression_level, compressed_))
                throw Error(Errc::transport, "zlib failed to compress a message on '" + topic_ + "'");
            frame = &compressed_;
            ++stats_.compressed;
        }
        wire::write_frame_header(frame->data(), header_);
        before_send(frame->data(), frame->size());
        after_send(node_->outbound().send(*frame), now);  // may take the frame's memory (large frames)
    }

    Loan loan(std::size_t payload_capacity, std::shared_ptr<PublisherImpl> self) {
        check_payload_size(payload_capacity);
        if (closed()) node_->throw_closed("publisher of '" + topic_ + "'");
        const std::size_t room = wire::frame_header_size;
        Loan l;
        l.owner_ = std::move(self);
        l.capacity_ = payload_capacity;
        FrameLoan f;
        if (node_->outbound().lend(room + payload_capacity, l.port_, f)) {
            l.frame_ = f.data;
            l.lent_capacity_ = f.capacity;
            l.token_ = f.token;
            l.keep_ = std::move(f.keep);
        } else {
            l.heap_.resize(room + payload_capacity);
            l.frame_ = l.heap_.data();
        }
        return l;
    }

    void publish_loan(Loan& l) {
        if (!l) throw Error(Errc::invalid_argument, "publisher of '" + topic_ + "': the loan is empty (published already, or moved from)");
        if (l.owner_.get() != this)
            throw Error(Errc::invalid_argument, "publisher of '" + topic_ + "': the loan is another publisher's");
        const std::size_t room = wire::frame_header_size;
        const std::size_t size = room + l.size_;
        if (!l.keep_) {  // ordinary memory: the Buffer path, with the loan's buffer itself
            Buffer frame = std::move(l.heap_);
            frame.resize(size);
            l.forget();
            publish_frame(frame);
            return;
        }
        if (options_.compress_above && l.size_ > *options_.compress_above) {
            // Compressed into other memory anyway: the chunk goes back.
            Buffer frame;
            frame.write(reinterpret_cast<const char*>(l.frame_), size);
            l.give_back();
            publish_frame(frame);
            return;
        }
        std::lock_guard<std::mutex> lock(mutex_);
        if (closed_) node_->throw_closed("publisher of '" + topic_ + "'");
        const std::int64_t now = stamp(l.size_);
        wire::write_frame_header(l.frame_, header_);
        before_send(l.frame_, size);
        FrameLoan f{l.frame_, l.lent_capacity_, l.token_, std::move(l.keep_)};
        const std::size_t port = l.port_;
        l.forget();  // the port has it from here
        ++stats_.loaned;
        after_send(node_->outbound().send_loan(port, f, size), now);
    }

    void return_loan(Loan& l) noexcept {
        FrameLoan f{l.frame_, l.lent_capacity_, l.token_, l.keep_};
        node_->outbound().return_loan(l.port_, f);
    }

    void publish_payload(const void* payload, std::size_t size) {
        thread_local Buffer buffer;
        buffer.resize(wire::frame_header_size);
        buffer.write(static_cast<const char*>(payload), size);
        publish_frame(buffer);
    }

    std::size_t subscriber_count() {
        node_->outbound().drain_events();
        return sending_.subscribers.load();
    }

    std::vector<SubscriberInfo> subscribers() {
        std::vector<SubscriberInfo> out;
        if (closed()) return out;
        for (const auto& a : node_->outbound().subscribers_of(sending_.channel))
            out.push_back(SubscriberInfo{a.id, a.node, a.session, a.type, static_cast<std::size_t>(a.depth)});
        return out;
    }

    bool wait_for_subscribers(std::size_t count, std::chrono::milliseconds timeout) {
        if (closed()) return false;
        return node_->outbound().wait_for_subscribers(sending_, count, std::chrono::steady_clock::now() + timeout);
    }

    PublisherStats stats() {
        if (!closed()) node_->outbound().drain_events();
        std::lock_guard<std::mutex> lock(mutex_);
        PublisherStats s = stats_;
        s.subscribers = sending_.subscribers.load();
        s.mismatched_subscribers = sending_.mismatched.load();
        return s;
    }

    const std::string& topic() const { return topic_; }
    const std::string& type_name() const { return type_name_; }
    bool closed() {
        std::lock_guard<std::mutex> lock(mutex_);
        return closed_;
    }

private:
    void check_payload_size(std::size_t payload) const {
        if (payload > UINT32_MAX)
            throw Error(Errc::invalid_argument, "publisher of '" + topic_ + "': a payload of " + std::to_string(payload) +
                                                    " bytes does not fit a frame (at most 4 GiB)");
    }

    // The header of the next frame (mutex_ held); returns the send time. One
    // clock read: the send stamp also paces the event check.
    std::int64_t stamp(std::size_t payload) {  // mutex_ held
        if (!refused_.empty()) throw Error(Errc::discovery, "publisher of '" + topic_ + "': " + refused_);
        const std::int64_t now = now_ns();
        header_.sequence = ++sequence_;
        sending_.sequence.store(sequence_, std::memory_order_relaxed);  // before the send: see Outbound::joined
        header_.send_time_ns = now;
        header_.payload_size = static_cast<std::uint32_t>(payload);
        header_.flags = 0;
        return now;
    }

    void before_send(const std::uint8_t* frame, std::size_t size) {
        if (sending_.latched) node_->outbound().keep_last(sending_, frame, size);
        if (sending_.subscribers.load(std::memory_order_relaxed) == 0) ++stats_.unheard;
        stats_.bytes += size;
    }

    void after_send(const SendResult& r, std::int64_t now) {
        ++stats_.messages;
        stats_.dropped += r.dropped;
        // Subscribers that joined while we were sending: the port's fd fired for
        // our send, not the reactor's; tell it now and then.
        if (now - next_event_check_ns_ >= 0) {
            next_event_check_ns_ = now + 20'000'000;
            if (node_->outbound().events_pending()) node_->reactor().wake();
        }
    }

    // Says "end" (with the last sequence) to every subscriber, in order after
    // the data, so that what did not reach them is counted, and stops sending.
    // Before it, each subscriber hears again where its stream began: its
    // first messages may have been lost too (a link that drops the oldest).
    void close() {
        std::lock_guard<std::mutex> lock(mutex_);
        if (closed_) return;
        closed_ = true;
        if (sequence_ > 0) {  // after the node closed its ports this sends nothing
            node_->outbound().drain_events();  // subscribers that joined and were not told yet
            node_->outbound().repeat_starts(sending_, true);
            send_control("end");
        }
        node_->outbound().remove(sending_);
    }

    // A control frame on our channel (mutex_ held): in order after our data.
    SendResult send_control(const char* type) {
        Buffer frame;
        frame.resize(wire::frame_header_size);
        wire::encode_control(wire::Control{type, sequence_}, frame);
        wire::FrameHeader h;
        h.channel = header_.channel;
        h.flags = wire::frame_flags::control;
        h.payload_size = static_cast<std::uint32_t>(frame.size() - wire::frame_header_size);
        h.sequence = sequence_;
        h.sender_id = id_;
        h.send_time_ns = now_ns();
        wire::write_frame_header(frame.data(), h);
        return node_->outbound().send(frame);
    }

    std::shared_ptr<NodeImpl> node_;
    std::string topic_;
    std::string type_name_;
    PublisherOptions options_;
    std::uint64_t id_;
    Sending sending_;
    std::mutex mutex_;
    bool closed_ = false;
    std::string refused_;  // why geckocore refused its topic for good (a channel id collision)
    wire::FrameHeader header_;
    std::uint64_t sequence_ = 0;
    std::uint64_t marked_ = 0;        // the sequence the last "seq" control frame said
    std::uint64_t seen_at_tick_ = 0;  // the sequence at the last tick
    std::int64_t next_event_check_ns_ = 0;
    Buffer compressed_;
    PublisherStats stats_;
};

std::shared_ptr<PublisherImpl> make_publisher_impl(std::shared_ptr<NodeImpl> node, const std::string& topic,
                                                   const std::string& type_name, PublisherOptions options) {
    return std::make_shared<PublisherImpl>(std::move(node), topic, type_name, std::move(options));
}

}  // namespace detail

RawPublisher::RawPublisher(std::shared_ptr<detail::PublisherImpl> impl) : impl_(std::move(impl)) {}
RawPublisher::~RawPublisher() = default;
RawPublisher::RawPublisher(RawPublisher&&) noexcept = default;
RawPublisher& RawPublisher::operator=(RawPublisher&&) noexcept = default;

void RawPublisher::publish(const void* payload, std::size_t size) { impl_->publish_payload(payload, size); }
void RawPublisher::publish_frame(Buffer& buffer) { impl_->publish_frame(buffer); }
std::size_t RawPublisher::frame_header_room() noexcept { return wire::frame_header_size; }
const std::string& RawPublisher::topic() const { return impl_->topic(); }
const std::string& RawPublisher::type_name() const { return impl_->type_name(); }
std::uint64_t RawPublisher::id() const { return impl_->id(); }
std::size_t RawPublisher::subscriber_count() const { return impl_->subscriber_count(); }
std::vector<SubscriberInfo> RawPublisher::subscribers() const { return impl_->subscribers(); }
bool RawPublisher::wait_for_subscribers(std::size_t count, std::chrono::milliseconds timeout) {
    return impl_->wait_for_subscribers(count, timeout);
}
PublisherStats RawPublisher::stats() const { return impl_->stats(); }
Loan RawPublisher::loan(std::size_t payload_capacity) { return impl_->loan(payload_capacity, impl_); }
void RawPublisher::publish(Loan&& loan) { impl_->publish_loan(loan); }

Loan::~Loan() { give_back(); }

Loan::Loan(Loan&& other) noexcept
    : owner_(std::move(other.owner_)), frame_(std::exchange(other.frame_, nullptr)), size_(std::exchange(other.size_, 0)),
      capacity_(std::exchange(other.capacity_, 0)), keep_(std::move(other.keep_)), token_(other.token_),
      port_(other.port_), lent_capacity_(other.lent_capacity_), heap_(std::move(other.heap_)) {}

Loan& Loan::operator=(Loan&& other) noexcept {
    if (this != &other) {
        give_back();
        owner_ = std::move(other.owner_);
        frame_ = std::exchange(other.frame_, nullptr);
        size_ = std::exchange(other.size_, 0);
        capacity_ = std::exchange(other.capacity_, 0);
        keep_ = std::move(other.keep_);
        token_ = other.token_;
        port_ = other.port_;
        lent_capacity_ = other.lent_capacity_;
        heap_ = std::move(other.heap_);
    }
    return *this;
}

void Loan::overflow(std::size_t n) const {
    throw Error(Errc::invalid_argument, "a loan of " + std::to_string(capacity_) + " bytes has " +
                                            std::to_string(capacity_ - size_) + " left, " + std::to_string(n) +
                                            " more were written: ask loan() for more");
}

void Loan::give_back() noexcept {
    if (keep_ && owner_) owner_->return_loan(*this);
    forget();
}

void Loan::forget() noexcept {
    owner_.reset();
    keep_.reset();
    frame_ = nullptr;
    size_ = capacity_ = 0;
    heap_ = Buffer{};
}

}  // namespace gecko
