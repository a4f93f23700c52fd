// SPDX-License-Identifier: Apache-2.0
#include "node/sink.hpp"

#include <algorithm>
#include <cstdio>

#include "gecko/wire/control.hpp"
#include "node/notices.hpp"

namespace gecko::detail {
namespace {

// Sequence numbers a sink counts as lost, at most (PROTOCOL.md §2.2): a
// budget that refills at gap_rate a second of the sink's life, up to
// gap_budget. No publisher sends 2^24 (16.7 M) frames a second (Gecko's
// fastest send 4-5 M/s, raw ZeroMQ 16 M/s of 64-byte frames on the
// development machine), so frames a sink's publishers really lost never
// exceed it; a jump beyond what is left (a forger adding 2^32 a frame) is a
// new epoch, not a loss. The cap bounds what a long quiet lets one frame claim:
// 2^26 is a 1 kHz topic lost for 18 hours, a 1 MHz one for a minute.
constexpr std::uint64_t gap_rate = std::uint64_t{1} << 24;    // per second
constexpr std::uint64_t gap_budget = std::uint64_t{1} << 26;  // at most, and at the start
// Frames a wildcard sink holds at most while the directory has not named their channel.
constexpr std::size_t max_held = 256;

std::string hex(std::uint64_t v) {
    char s[19];
    std::snprintf(s, sizeof s, "%016llx", static_cast<unsigned long long>(v));
    return s;
}

}  // namespace

Sink::Sink(SinkConfig config, Notices& notices)
    : config_(std::move(config)), notices_(notices), gap_credit_(gap_budget), gap_credit_at_(Clock::now()) {
    config_.depth = std::max<std::size_t>(config_.depth, 1);
    ring_.resize(config_.depth);
}

bool Sink::plausible_loss(std::uint64_t lost) {
    const auto now = Clock::now();
    const auto elapsed_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(now - gap_credit_at_).count();
    if (elapsed_ns > 0) {
        // Whole seconds and the rest apart: no overflow however long the sink lived.
        const auto s = static_cast<std::uint64_t>(elapsed_ns / 1'000'000'000);
        const auto rest = static_cast<std::uint64_t>(elapsed_ns % 1'000'000'000);
        const std::uint64_t refill = s >= gap_budget / gap_rate ? gap_budget : s * gap_rate + rest * gap_rate / 1'000'000'000;
        if (refill > 0 || gap_credit_ == gap_budget) {  // else the fraction of one accrues until the next call
            gap_credit_ = std::min(gap_budget, gap_credit_ + refill);
            gap_credit_at_ = now;
        }
    }
    if (lost > gap_credit_) return false;
    gap_credit_ -= lost;
    return true;
}

bool Sink::offer(Frame& frame, std::int64_t receive_ns, bool last) {
    wire::FrameView view;
    std::lock_guard<std::mutex> lock(mutex_);
    const wire::FrameError error = wire::parse_frame(frame.data(), frame.size(), config_.max_message_size, view);
    if (error != wire::FrameError::none) {
        std::string detail = std::to_string(frame.size()) + " bytes";
        if (error == wire::FrameError::oversized) {
            ++stats_.oversized;
            detail += ", payload " + std::to_string(view.header.payload_size) + " bytes" +
                      (view.header.compressed() ? " once inflated" : "") +
                      "; the limit is SubscriberOptions::max_message_size = " + std::to_string(config_.max_message_size);
        } else if (error == wire::FrameError::unsupported_version) {
            ++stats_.unsupported_version;
            detail += "; version " + std::to_string(frame.size() > 10 ? frame.data()[10] : 0) +
                      ", this build reads version " + std::to_string(wire::frame_version);
        } else {
            ++stats_.malformed;
        }
        notices_.add(LogLevel::warn, config_.what + ": " + wire::to_string(error),
                     "dropped a frame on " + config_.what + ": " + wire::to_string(error) + " (" + detail +
                         "); further ones are counted in stats()");
        std::uint64_t sender = 0, sequence = 0;
        if (config_.answer_rejected && wire::peek_sender(frame.data(), frame.size(), sender, sequence)) {
            Frame copy = frame.share();
            if (!copy.empty()) queue(std::move(copy), receive_ns, error);
        }
        return false;
    }
    if (view.header.flags & wire::frame_flags::control) {
        control(view);
        return false;
    }
    std::shared_ptr<const ChannelInfo> channel;
    if (config_.wildcard) {
        const Route r = route(view.header, channel);
        if (r == Route::leave) return false;
        if (r == Route::hold) {
            Frame kept = last ? std::move(frame) : frame.share();
            if (kept.empty()) return false;
            if (held_.size() >= max_held) {
                held_.pop_front();
                ++stats_.unlisted;
            }
            held_.push_back(Held{std::move(kept), receive_ns});
            return true;
        }
    }
    if (!accept(view, frame.size(), receive_ns)) return false;
    if (last) {
        queue(std::move(frame), receive_ns, wire::FrameError::none, std::move(channel));
        return true;
    }
    Frame copy = frame.share();
    if (copy.empty()) return false;
    queue(std::move(copy), receive_ns, wire::FrameError::none, std::move(channel));
    return true;
}

Sink::Route Sink::route(const wire::FrameHeader& h, std::shared_ptr<const ChannelInfo>& channel) const {
    // The key's service traffic, and other subscribers' latched replays, pass
    // every link this sink listens on: they are no topic's messages.
    if (h.flags & (wire::frame_flags::request | wire::frame_flags::reply)) return Route::leave;
    wire::Channel c = h.channel;
    if (h.flags & wire::frame_flags::latched) {
        if (c != config_.directed) return Route::leave;
        c = names_.channel_of(h.sender_id);  // a replay for us: its publisher's topic
        if (c == 0) return config_.resolving ? Route::hold : Route::take;
    }
    if (!config_.resolving) return Route::take;
    const ChannelNames::Known* known = names_.find(c);
    if (!known) return Route::hold;
    if (!known->wanted) return Route::leave;
    channel = known->info;
    return Route::take;
}

bool Sink::release_held() {
    bool queued = false;
    std::deque<Held> still;
    for (auto& h : held_) {
        wire::FrameView view;
        wire::parse_frame(h.frame.data(), h.frame.size(), config_.max_message_size, view);  // checked when offered
        std::shared_ptr<const ChannelInfo> channel;
        const Route r = route(view.header, channel);
        if (r == Route::hold) {
            still.push_back(std::move(h));
        } else if (r == Route::take && accept(view, h.frame.size(), h.receive_ns)) {
            queue(std::move(h.frame), h.receive_ns, wire::FrameError::none, std::move(channel));
            queued = true;
        }
    }
    held_.swap(still);
    return queued;
}

bool Sink::name_channel(std::shared_ptr<const ChannelInfo> info, bool wanted) {
    std::lock_guard<std::mutex> lock(mutex_);
    names_.set(std::move(info), wanted);
    return !held_.empty() && release_held();
}

void Sink::unname_channel(wire::Channel channel, std::int64_t now_ns) {
    std::lock_guard<std::mutex> lock(mutex_);
    names_.retire(channel, now_ns);
}

void Sink::forget_departed(std::int64_t before_ns) {
    std::lock_guard<std::mutex> lock(mutex_);
    names_.forget_retired(before_ns);
    for (auto it = publishers_.begin(); it != publishers_.end();) {
        const Publisher& p = it->second;
        const bool departed = p.unlisted_ns != 0 && p.unlisted_ns < before_ns && p.last_receive_ns < before_ns;
        if (departed)
            depart(it++);
        else
            ++it;
    }
}

void Sink::depart(std::unordered_map<std::uint64_t, Publisher>::iterator it) {
    const Publisher& p = it->second;
    if (departed_.size() >= max_departed) departed_.pop_front();
    departed_.emplace_back(it->first, PeerStats{p.received, p.drops, p.last_sequence, p.start_said, p.start_after, true});
    publishers_.erase(it);
}

bool Sink::stop_resolving() {
    std::lock_guard<std::mutex> lock(mutex_);
    config_.resolving = false;
    return !held_.empty() && release_held();
}

void Sink::expire_held(std::int64_t before_ns) {
    std::size_t dropped = 0;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        while (!held_.empty() && held_.front().receive_ns < before_ns) {
            held_.pop_front();
            ++dropped;
        }
        stats_.unlisted += dropped;
    }
    if (dropped > 0)
        notices_.add(LogLevel::warn, config_.what + ": unlisted",
                     config_.what + " dropped " + std::to_string(dropped) +
                         " message(s) on channels the key's directory does not list (a publisher that did not "
                         "register with geckocore, or a core that is gone); further ones are counted in stats().unlisted");
}

void Sink::queue(Frame&& frame, std::int64_t receive_ns, wire::FrameError error, std::shared_ptr<const ChannelInfo> channel) {
    std::size_t count = count_.load(std::memory_order_relaxed);
    if (count == ring_.size()) {  // full: the oldest unread message makes room
        ring_[head_].frame.reset();
        ring_[head_].channel.reset();
        head_ = (head_ + 1) % ring_.size();
        --count;
        ++stats_.overwritten;
    }
    Slot& slot = ring_[(head_ + count) % ring_.size()];
    slot.frame = std::move(frame);
    slot.receive_ns = receive_ns;
    slot.error = error;
    slot.channel = std::move(channel);
    count_.store(count + 1, std::memory_order_release);
}

bool Sink::accept(const wire::FrameView& view, std::size_t wire_size, std::int64_t receive_ns) {
    const wire::FrameHeader& h = view.header;
    // The frame's kind must be the sink's: a server takes requests, a client
    // replies (error replies among them), a subscriber data frames only.
    constexpr std::uint8_t service_flags = wire::frame_flags::request | wire::frame_flags::reply | wire::frame_flags::error;
    const bool data_sink = config_.accept_flags == 0;
    if (data_sink ? (h.flags & service_flags) != 0 : (h.flags & config_.accept_flags) != config_.accept_flags) {
        if (data_sink && config_.wildcard) return false;  // its key's service traffic: not data, not malformed either
        ++stats_.malformed;
        const char* kind = (config_.accept_flags & wire::frame_flags::request) ? "request"
                           : (config_.accept_flags & wire::frame_flags::reply) ? "reply"
                                                                                 : "data frame";
        notices_.add(LogLevel::warn, config_.what + ": wrong kind",
                     "dropped a frame on " + config_.what + " that is not a " + kind + " (flags " +
                         std::to_string(h.flags) + "); further ones are counted in stats()");
        return false;
    }
    if (config_.type_hash != 0 && h.type_hash != config_.type_hash) {
        ++stats_.type_mismatches;
        notices_.add(LogLevel::error, config_.what + ": type mismatch",
                     config_.what + " expects " + config_.type_name + " but publisher " + hex(h.sender_id) +
                         " sends another type (type hash " + hex(h.type_hash) +
                         "); its messages are dropped, not decoded (`gecko info` shows both types)");
        return false;
    }
    Publisher& p = publisher(h.sender_id);
    const bool latched = h.flags & wire::frame_flags::latched;
    if (p.received == 0 && !p.start_known) {
        // Joined mid-stream, as far as we know: earlier messages were not
        // ours, unless the publisher's "start" says otherwise (control()).
        p.last_sequence = h.sequence;
        p.first_sequence = h.sequence;
    } else if (p.received == 0 && h.sequence <= p.last_sequence) {
        // Not after our start, yet ours: the message in flight as the publisher
        // saw us join, or its latched value replayed to us (held until named).
    } else if (h.sequence <= p.last_sequence) {
        if (latched) return false;  // a replayed last value we already have a newer one of
        ++stats_.epochs;            // the publisher started over (or a forgery): not drops
        p.last_sequence = h.sequence;
        p.start_known = true;       // a start said later belongs to the earlier stream
    } else if (const std::uint64_t gap = h.sequence - p.last_sequence - 1; gap == 0 || latched) {
        p.last_sequence = h.sequence;
    } else if (!plausible_loss(gap)) {
        ++stats_.epochs;  // more than its publishers could have sent: a restart or a forgery
        p.last_sequence = h.sequence;
    } else {
        p.drops += gap;
        stats_.drops += gap;
        p.last_sequence = h.sequence;
    }
    ++p.received;
    p.last_receive_ns = receive_ns;
    ++stats_.received;
    stats_.bytes += wire_size;
    stats_.last_latency_ns = receive_ns - h.send_time_ns;
    return true;
}

void Sink::control(const wire::FrameView& view) {
    if (view.header.compressed()) return;
    const auto c = wire::parse_control(view.body, view.body_size);
    if (!c) {
        ++stats_.malformed;
        notices_.add(LogLevel::warn, config_.what + ": malformed control",
                     "dropped a control frame on " + config_.what + " that is not a msgpack map with 't'");
        return;
    }
    if (c->type == "start") {
        // Directed at one subscriber: another key-wide sink of this node sees it too.
        if (view.header.channel == config_.directed && config_.directed != 0) start_after(view.header.sender_id, c->last);
        return;
    }
    if (c->type != "end" && c->type != "seq") return;  // control frames of later versions: not for us
    const auto it = publishers_.find(view.header.sender_id);
    if (it == publishers_.end()) return;
    if (c->last > it->second.last_sequence && plausible_loss(c->last - it->second.last_sequence)) {
        const std::uint64_t tail = c->last - it->second.last_sequence;
        it->second.drops += tail;
        stats_.drops += tail;
        it->second.last_sequence = c->last;
    }
    if (c->type == "end") depart(it);
}

// Publisher `sender` says it sent us every message after `after`. Before its
// first message: gaps count from there. After it: the messages between
// `after` and the first we received, which we took for ones sent before we
// joined, were lost (the link dropped its oldest), and are counted now.
void Sink::start_after(std::uint64_t sender, std::uint64_t after) {
    const bool heard_before = publishers_.count(sender) != 0;
    Publisher& p = publisher(sender);
    if (p.start_known) return;  // told already (it is said more than once)
    p.start_known = true;
    p.start_said = true;
    p.start_after = after;
    if (!heard_before) {  // before its first message: gaps count from here
        p.last_sequence = after;
        return;
    }
    if (p.received == 0 || after + 1 >= p.first_sequence) return;
    const std::uint64_t lost = p.first_sequence - 1 - after;
    if (!plausible_loss(lost)) return;
    p.drops += lost;
    stats_.drops += lost;
}

Sink::Publisher& Sink::publisher(std::uint64_t sender) {
    ++offers_;
    auto it = publishers_.find(sender);
    if (it == publishers_.end()) {
        if (publishers_.size() >= config_.max_publishers) {
            auto oldest = std::min_element(publishers_.begin(), publishers_.end(),
                                           [](const auto& a, const auto& b) { return a.second.last_seen < b.second.last_seen; });
            publishers_.erase(oldest);
            ++stats_.publishers_forgotten;
        }
        it = publishers_.emplace(sender, Publisher{}).first;
    }
    it->second.last_seen = offers_;
    return it->second;
}

void Sink::unlist_publisher(std::uint64_t sender, std::int64_t now_ns) {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto it = publishers_.find(sender);
    if (it != publishers_.end() && it->second.unlisted_ns == 0) it->second.unlisted_ns = now_ns;
}

bool Sink::pop(Delivery& out) {
    if (empty()) return false;  // no lock for nothing
    std::lock_guard<std::mutex> lock(mutex_);
    const std::size_t count = count_.load(std::memory_order_relaxed);
    if (count == 0) return false;
    Slot& slot = ring_[head_];
    out.frame = std::move(slot.frame);
    out.receive_ns = slot.receive_ns;
    out.error = slot.error;
    out.channel = std::move(slot.channel);
    head_ = (head_ + 1) % ring_.size();
    count_.store(count - 1, std::memory_order_release);
    if (out.error != wire::FrameError::none) {
        out.view = wire::FrameView{};
        wire::peek_sender(out.frame.data(), out.frame.size(), out.view.header.sender_id, out.view.header.sequence);
        return true;
    }
    // Checked when offered; parsed again here because views do not survive moves.
    wire::parse_frame(out.frame.data(), out.frame.size(), config_.max_message_size, out.view);
    return true;
}

bool Sink::heard_since(const std::vector<std::uint64_t>& senders, std::int64_t since_ns) const {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto id : senders) {
        const auto it = publishers_.find(id);
        if (it != publishers_.end() && it->second.last_receive_ns >= since_ns) return true;
    }
    return false;
}

bool Sink::empty() const { return count_.load(std::memory_order_acquire) == 0; }

std::size_t Sink::size() const { return count_.load(std::memory_order_acquire); }

void Sink::count_delivered() {
    std::lock_guard<std::mutex> lock(mutex_);
    ++stats_.delivered;
}

void Sink::count_decode_error(const std::string& what) {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        ++stats_.decode_errors;
    }
    // The decoder's errors start with the type's name ("gecko.msgs.Imu: field ...").
    notices_.add(LogLevel::warn, config_.what + ": decode",
                 config_.what + " could not decode a message: " + what +
                     " (further ones are counted in stats().decode_errors)");
}

void Sink::count_decompress_error() {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        ++stats_.decode_errors;
    }
    notices_.add(LogLevel::warn, config_.what + ": inflate",
                 "dropped a frame on " + config_.what + ": " + wire::to_string(wire::FrameError::decompress_failed) +
                     " (further ones are counted in stats().decode_errors)");
}

void Sink::count_callback_error(const std::string& what, std::uint64_t sequence) {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        ++stats_.callback_errors;
    }
    notices_.add(LogLevel::error, config_.what + ": callback",
                 "the callback of " + config_.what + " threw on message #" + std::to_string(sequence) + ": " + what +
                     " (the subscriber goes on; further errors are counted in stats().callback_errors)");
}

SubscriberStats Sink::stats() const {
    std::lock_guard<std::mutex> lock(mutex_);
    SubscriberStats s = stats_;
    for (const auto& [id, p] : departed_) s.publishers[id] = p;
    for (const auto& [id, p] : publishers_)
        s.publishers[id] = PeerStats{p.received, p.drops, p.last_sequence, p.start_said, p.start_after, false};
    return s;
}

}  // namespace gecko::detail
