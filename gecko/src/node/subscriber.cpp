// SPDX-License-Identifier: Apache-2.0
// A subscriber: a sink in its node for its topic's channel (and for its own
// directed channel, where a latched publisher replays its last value), read by
// receive() or, with a callback, by spin().

#include "node/subscriber_impl.hpp"

#include <optional>

#include "gecko/error.hpp"
#include "gecko/time.hpp"
#include "gecko/wire/announcement.hpp"
#include "gecko/wire/names.hpp"
#include "node/inflated.hpp"
#include "node/names.hpp"

namespace gecko {
namespace detail {

namespace {

std::string describe(const std::string& topic, const std::optional<TopicFilter>& key_wide) {
    if (!key_wide) return "subscriber of '" + topic + "'";
    if (key_wide->takes_all()) return "subscriber of every topic";
    std::string what;
    for (const auto& t : key_wide->topics) what += (what.empty() ? "'" : ", '") + t + "'";
    return "key-wide subscriber of " + what;
}

SinkConfig sink_config(NodeImpl& node, const std::string& topic, const SubscriberOptions& o, std::uint64_t id,
                       bool callback, const std::optional<TopicFilter>& key_wide) {
    SinkConfig c;
    c.wildcard = key_wide.has_value();
    // Each frame is named by the directory. Without discovery there is none to
    // wait for: the filter of everything takes frames unnamed, any other nothing.
    c.resolving = c.wildcard && (node.options().discovery || !key_wide->takes_all());
    c.channel = c.wildcard ? wire::channel_of(node.key(), "") : wire::channel_of(node.key(), topic);
    c.directed = wire::directed_channel(node.key(), id);
    c.type_name = o.type_name;
    c.type_hash = o.type_name.empty() ? 0 : wire::type_hash(o.type_name);
    c.depth = o.depth;
    c.max_message_size = std::min(o.max_message_size, node.options().max_message_size);
    c.max_publishers = std::max<std::size_t>(o.max_publishers, 1);
    c.what = describe(topic, key_wide);
    c.callback = callback;
    return c;
}

}  // namespace

SubscriberImpl::SubscriberImpl(std::shared_ptr<NodeImpl> node, std::string topic, SubscriberOptions options,
                               std::function<void(const RawView&)> callback, std::optional<TopicFilter> key_wide)
    : node_(std::move(node)), topic_(std::move(topic)), options_(std::move(options)), callback_(std::move(callback)),
      key_wide_(std::move(key_wide)), id_(node_->new_id()),
      sink_(sink_config(*node_, topic_, options_, id_, static_cast<bool>(callback_), key_wide_), node_->notices()) {
    if (key_wide_) {
        if (!options_.type_name.empty())
            throw Error(Errc::invalid_argument, "a key-wide subscription takes any type: leave type_name empty (filter types with TopicFilter::types)");
        if (key_wide_->topics.empty() || key_wide_->types.empty())
            throw Error(Errc::invalid_argument, "a key-wide subscription needs at least one topic and one type pattern (\"*\": any)");
        for (const auto* list : {&key_wide_->topics, &key_wide_->types})
            for (const auto& p : *list)
                if (auto why = wire::check_pattern(p); !why.empty())
                    throw Error(Errc::invalid_argument, "key-wide subscription: pattern '" + wire::printable(p) + "': " + why);
        topic_ = "*";
        if (!node_->options().discovery && !key_wide_->takes_all())
            node_->notices().add(LogLevel::error, sink_.config().what + ": no directory",
                                 sink_.config().what + " takes nothing: without discovery there is no directory to "
                                 "name each message's topic, so only a subscription of every topic takes messages (unnamed)");
    } else {
        check_topic_name(topic_, "a subscriber");
    }
    if (!options_.type_name.empty()) check_type_name(options_.type_name, "subscriber of '" + topic_ + "'");
    if (options_.depth == 0) throw Error(Errc::invalid_argument, "subscriber of '" + topic_ + "': depth must be >= 1");
    if (node_->closed()) node_->throw_closed("subscriber of '" + topic_ + "'");
    wire::Announcement a;
    a.channel = sink_.config().channel;
    a.wildcard = key_wide_.has_value();
    a.id = id_;
    a.kind = "subscriber";
    a.topic = topic_;
    a.type = options_.type_name.empty() ? "*" : options_.type_name;
    a.node = node_->options().name;
    a.session = node_->session();
    a.depth = static_cast<std::uint32_t>(std::min<std::size_t>(options_.depth, UINT32_MAX));
    announcement_ = wire::encode_announcement(a);
}

void SubscriberImpl::start() {
    node_->inbound().add_sink(sink_, announcement_);
    if (callback_) node_->add_dispatchable(this, weak_from_this());
    Registration r;
    r.id = id_;
    r.kind = EntityKind::subscriber;
    r.topic = topic_;
    r.type_name = options_.type_name;
    if (key_wide_) {
        r.wildcard = true;
        if (!key_wide_->takes_all()) {
            r.topic_filter = key_wide_->topics;
            r.type_filter = key_wide_->types;
        }
        node_->follow_directory();
    }
    node_->attach_watching(*this, r);
    if (!key_wide_) return;
    // What the directory knows already (a change meanwhile comes again as an event: naming is idempotent).
    std::vector<DirectoryEvent> now;
    for (auto& info : node_->directory_state().snapshot()) now.push_back({DirectoryEvent::Kind::added, std::move(info)});
    directory_changed(now);
    if (node_->directory_state().state() == Directory::State::unsupported) directory_unsupported();
}

void SubscriberImpl::directory_changed(const std::vector<DirectoryEvent>& events) {
    if (!key_wide_) return;
    bool queued = false;
    for (const auto& e : events) {
        if (e.channel->service) continue;
        if (e.kind == DirectoryEvent::Kind::removed) {
            sink_.unname_channel(e.channel->channel, now_ns());
            continue;
        }
        const bool wanted = key_wide_->matches(e.channel->topic, e.channel->type_name);
        queued = sink_.name_channel(e.channel, wanted) || queued;
    }
    if (queued) node_->inbound().wake_all();
}

void SubscriberImpl::directory_unsupported() {
    if (!key_wide_) return;
    // No names to wait for: everything is taken unnamed, which only a filter of everything allows.
    if (key_wide_->takes_all()) {
        if (sink_.stop_resolving()) node_->inbound().wake_all();
    } else {
        node_->notices().add(LogLevel::error, sink_.config().what + ": no directory",
                             sink_.config().what + " cannot apply its filter: the key's geckocore keeps no channel "
                             "directory (an older version); it takes nothing until the core is upgraded");
    }
}

void SubscriberImpl::tick() {
    const std::int64_t now = now_ns();
    // Held for a channel the directory did not name within 2 s: the directory will not name it.
    if (key_wide_) sink_.expire_held(now - 2'000'000'000);
    // A topic or publisher gone for 10 s: whatever it sent has arrived, or is counted missing.
    sink_.forget_departed(now - 10'000'000'000);
}

void SubscriberImpl::refused(const std::string& message) {
    (void)message;  // logged by the node
    node_closed();  // its topic's channel is another topic's: taking it would merge the two
}

SubscriberImpl::~SubscriberImpl() {
    if (callback_) node_->remove_dispatchable(this);
    node_closed();
    node_->detach(*this);
}

void SubscriberImpl::node_closed() {
    std::lock_guard<std::mutex> lock(close_mutex_);
    if (closed_) return;
    closed_ = true;
    node_->inbound().remove_sink(sink_, announcement_);
}

TopicStats SubscriberImpl::report() {
    const SubscriberStats s = sink_.stats();
    TopicStats t;
    t.id = id_;
    t.messages_per_s = static_cast<double>(s.received);  // totals; the node turns them into rates
    t.bytes_per_s = static_cast<double>(s.bytes);
    t.drops = s.drops;
    t.latency_ns = s.last_latency_ns;
    return t;
}

bool SubscriberImpl::heard_since(const std::vector<std::uint64_t>& senders, std::int64_t since_ns) const {
    return sink_.heard_since(senders, since_ns);
}

// Publishers discovery no longer lists are gone for good; their state is
// forgotten once their last frames have had time to arrive (a publisher that
// went away cleanly says "end" in-band, after its last frame).
void SubscriberImpl::peers_changed(const std::vector<Peer>& peers) {
    std::set<std::uint64_t> now;
    for (const auto& p : peers) now.insert(p.reg.id);
    std::lock_guard<std::mutex> lock(peers_mutex_);
    for (auto id : listed_)
        if (!now.count(id)) sink_.unlist_publisher(id, now_ns());
    listed_ = std::move(now);
}

bool SubscriberImpl::receive(std::chrono::nanoseconds timeout, RawSubscriber::Visitor visit,
                             std::shared_ptr<const void>* keep) {
    if (callback_)
        throw Error(Errc::invalid_argument,
                    "subscriber of '" + topic_ + "' has a callback: its messages arrive through Node::spin()");
    // keep-last-N: what we return is among the newest as of at most 1 ms
    // ago. (With nothing queued, the wait below looks at the links anyway.)
    if (!sink_.empty()) node_->inbound().drain_now(std::chrono::microseconds(1000));
    // The clock only once we must wait: a stream whose messages are queued
    // already reads it once per receive() (drain_now), not twice.
    std::optional<std::chrono::steady_clock::time_point> deadline;
    for (bool waited = false;; waited = true) {
        Delivery d;
        // A burst being queued right now: wait() returns once it all is
        // (once: see Inbound::wait).
        while ((waited || !node_->inbound().draining()) && sink_.pop(d)) {
            if (deliver(d, visit, keep)) return true;
        }
        if (!deadline) deadline = std::chrono::steady_clock::now() + timeout;
        if (closed() || !node_->inbound().wait([this] { return !sink_.empty(); }, *deadline, options_.spin)) {
            // A last look: something may have arrived with the deadline.
            if (sink_.pop(d) && deliver(d, visit, keep)) return true;
            return false;
        }
    }
}

bool SubscriberImpl::ready() const { return !sink_.empty(); }

std::size_t SubscriberImpl::dispatch(std::size_t budget) {
    std::size_t ran = 0;
    Delivery d;
    while (ran < budget && sink_.pop(d)) {
        if (deliver(d, callback_)) ++ran;
    }
    return ran;
}

namespace {
// What a kept payload lives in: the frame, or the inflated bytes of a compressed one.
struct KeptPayload {
    Frame frame;
    Inflated inflated;
};
}  // namespace

template <class Visit>
bool SubscriberImpl::deliver(Delivery& d, Visit& visit, std::shared_ptr<const void>* keep) {
    const wire::FrameHeader& h = d.view.header;
    // Per thread, not per subscriber: several threads may receive from one
    // subscriber; reused, so a delivery allocates nothing once they have grown.
    thread_local MessageInfo info;
    thread_local Inflated inflated;
    const Inflated::Releasing releasing(inflated);  // a large payload's pages go back too, whatever way this ends
    info.sequence = h.sequence;
    info.publisher_id = h.sender_id;
    info.send_time_ns = h.send_time_ns;
    info.receive_time_ns = d.receive_ns;
    info.wire_size = d.frame.size();
    info.compressed = h.compressed();
    info.latched = h.flags & wire::frame_flags::latched;
    info.type_hash = h.type_hash;
    info.channel = d.channel.get();
    static const std::string unnamed;  // a key-wide message without a directory to name its topic
    const std::string& topic = d.channel ? d.channel->topic : key_wide_ ? unnamed : topic_;
    if (info.topic != topic) info.topic = topic;
    if (!options_.type_name.empty()) {
        if (info.type_name != options_.type_name) info.type_name = options_.type_name;
    } else if (d.channel && d.channel->type_hash == h.type_hash) {
        if (info.type_name != d.channel->type_name) info.type_name = d.channel->type_name;
    } else {
        info.type_name = node_->type_name_of(h.sender_id);  // tools: as discovery named it
    }
    const std::uint8_t* payload = d.view.body;
    std::size_t size = d.view.body_size;
    std::shared_ptr<KeptPayload> kept;
    if (keep) kept = std::make_shared<KeptPayload>();
    if (h.compressed()) {
        // Inflated when the application reads (a burst of large frames that
        // keep-last-N overwrites costs nothing), into storage its declared size bounds.
        auto& out = kept ? kept->inflated : inflated;
        if (out.inflate(d.view) != wire::FrameError::none) {
            sink_.count_decompress_error();
            return false;
        }
        payload = out.data();
        size = out.size();
    } else if (kept) {
        // Moving a frame may move its bytes (a transport keeps small ones
        // inline): find the payload again by its offset.
        const auto offset = static_cast<std::size_t>(payload - d.frame.data());
        kept->frame = std::move(d.frame);
        payload = kept->frame.data() + offset;
    }
    if (keep) *keep = std::move(kept);
    bool ok = true;
    try {
        visit(RawView{info, payload, size});
    } catch (const Error& e) {
        ok = false;
        if (e.code() == Errc::decode) {
            sink_.count_decode_error(e.what());
        } else {
            sink_.count_callback_error(e.what(), h.sequence);
        }
    } catch (const std::exception& e) {
        ok = false;
        sink_.count_callback_error(e.what(), h.sequence);
    }
    d.frame.reset();  // give the bytes back now, not depth messages later
    if (ok) sink_.count_delivered();
    return ok;
}

}  // namespace detail

RawSubscriber::RawSubscriber(std::shared_ptr<detail::SubscriberImpl> impl) : impl_(std::move(impl)) {}
RawSubscriber::~RawSubscriber() = default;
RawSubscriber::RawSubscriber(RawSubscriber&&) noexcept = default;
RawSubscriber& RawSubscriber::operator=(RawSubscriber&&) noexcept = default;

bool RawSubscriber::receive(std::chrono::nanoseconds timeout, Visitor visit) { return impl_->receive(timeout, visit); }
bool RawSubscriber::receive_kept(std::chrono::nanoseconds timeout, Visitor visit, std::shared_ptr<const void>& keep) {
    return impl_->receive(timeout, visit, &keep);
}
const std::string& RawSubscriber::topic() const { return impl_->topic(); }
const std::string& RawSubscriber::type_name() const { return impl_->type_name(); }
std::uint64_t RawSubscriber::id() const { return impl_->id(); }
SubscriberStats RawSubscriber::stats() const { return impl_->stats(); }

}  // namespace gecko
