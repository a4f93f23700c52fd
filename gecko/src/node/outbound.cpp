// SPDX-License-Identifier: Apache-2.0
#include "node/outbound.hpp"

#include <algorithm>

#include "gecko/time.hpp"
#include "gecko/wire/control.hpp"
#include "gecko/wire/frame.hpp"
#include "gecko/wire/hash.hpp"
#include "node/notices.hpp"

namespace gecko::detail {

Outbound::Outbound(std::vector<std::unique_ptr<OutPort>> ports, std::string key, Notices& notices)
    : key_(std::move(key)), notices_(notices) {
    for (auto& p : ports) {
        auto port = std::make_unique<Port>();
        port->port = std::move(p);
        ports_.push_back(std::move(port));
    }
}

Outbound::~Outbound() { close(); }

void Outbound::close() {
    closed_ = true;
    for (auto& p : ports_) {
        std::lock_guard<std::mutex> lock(p->mutex);
        p->port.reset();
    }
    table_cv_.notify_all();
}

std::vector<std::string> Outbound::locators() const {
    std::vector<std::string> out;
    for (const auto& p : ports_) {
        if (!p->port) continue;
        auto l = p->port->locators();
        out.insert(out.end(), l.begin(), l.end());
    }
    return out;
}

std::vector<int> Outbound::event_fds() const {
    std::vector<int> out;
    for (const auto& p : ports_)
        if (p->port) out.push_back(p->port->event_fd());
    return out;
}

SendResult Outbound::send(Buffer& frame) {
    SendResult total{false, 0};
    const std::size_t n = ports_.size();
    for (std::size_t i = 0; i < n; ++i) {
        Port& p = *ports_[i];
        std::lock_guard<std::mutex> lock(p.mutex);
        if (!p.port) continue;
        // A port may take the buffer's memory: every such port but the last gets a copy.
        SendResult r;
        if (i + 1 < n && p.port->takes_memory()) {
            Buffer copy;
            copy.write(reinterpret_cast<const char*>(frame.data()), frame.size());
            r = p.port->send(copy);
        } else {
            r = p.port->send(frame);
        }
        total.sent = total.sent || r.sent;
        total.dropped += r.dropped;
        total.missed += r.missed;
    }
    return total;
}

bool Outbound::lend(std::size_t capacity, std::size_t& port, FrameLoan& loan) {
    for (std::size_t i = 0; i < ports_.size(); ++i) {
        Port& p = *ports_[i];
        std::lock_guard<std::mutex> lock(p.mutex);
        if (p.port && p.port->lend(capacity, loan)) {
            port = i;
            return true;
        }
    }
    return false;
}

SendResult Outbound::send_loan(std::size_t port, FrameLoan& loan, std::size_t size) {
    SendResult total{false, 0};
    if (port >= ports_.size()) return total;
    const wire::Channel channel = wire::load_channel(loan.data);
    for (std::size_t i = 0; i < ports_.size(); ++i) {
        if (i == port || !heard_on(i, channel)) continue;  // no copy for a port nobody listens on
        Buffer copy;
        copy.write(reinterpret_cast<const char*>(loan.data), size);
        Port& p = *ports_[i];
        std::lock_guard<std::mutex> lock(p.mutex);
        if (!p.port) continue;
        const SendResult r = p.port->send(copy);
        total.sent = total.sent || r.sent;
        total.dropped += r.dropped;
    }
    Port& p = *ports_[port];
    std::lock_guard<std::mutex> lock(p.mutex);
    if (p.port) {
        const SendResult r = p.port->send_loan(loan, size);
        total.sent = total.sent || r.sent;
        total.dropped += r.dropped;
    }
    return total;
}

void Outbound::return_loan(std::size_t port, FrameLoan& loan) {
    if (port >= ports_.size()) return;
    Port& p = *ports_[port];
    std::lock_guard<std::mutex> lock(p.mutex);
    if (p.port) p.port->return_loan(loan);
}

bool Outbound::heard_on(std::size_t port, wire::Channel channel) {
    std::lock_guard<std::mutex> lock(table_mutex_);
    if (const auto it = subscribed_.find(channel); it != subscribed_.end())
        for (const auto& [id, s] : it->second)
            if (s.port == port) return true;
    for (const auto& [id, w] : wildcards_)
        if (w.port == port && wire::key_part(w.who.channel) == wire::key_part(channel)) return true;
    return false;
}

void Outbound::add(Sending& s) {
    std::lock_guard<std::mutex> lock(table_mutex_);
    senders_.emplace(s.channel, &s);
    count_for(s);
    if (!s.tells_start) return;
    if (const auto it = subscribed_.find(s.channel); it != subscribed_.end())
        for (const auto& [id, who] : it->second)
            if (who.who.type.empty() || who.who.type == "*" || who.who.type == s.type) joined(s, who);
    for (const auto& [id, w] : wildcards_)
        if (wire::key_part(w.who.channel) == wire::key_part(s.channel)) joined(s, w);
}

void Outbound::remove(Sending& s) {
    std::lock_guard<std::mutex> lock(table_mutex_);
    for (auto it = senders_.lower_bound(s.channel); it != senders_.end() && it->first == s.channel; ++it) {
        if (it->second == &s) {
            senders_.erase(it);
            break;
        }
    }
}

void Outbound::keep_last(Sending& s, const std::uint8_t* frame, std::size_t size) {
    std::lock_guard<std::mutex> lock(latch_mutex_);
    s.last.assign(frame, frame + size);
}

bool Outbound::events_pending() {
    for (auto& p : ports_) {
        std::lock_guard<std::mutex> lock(p->mutex);
        if (p->port && p->port->events_pending()) return true;
    }
    return false;
}

void Outbound::tidy() {
    for (auto& p : ports_) {
        std::lock_guard<std::mutex> lock(p->mutex);
        if (p->port) p->port->tidy();
    }
}

void Outbound::drain_events() {
    for (std::size_t i = 0; i < ports_.size(); ++i) {
        std::vector<PortEvent> events;
        {
            std::lock_guard<std::mutex> lock(ports_[i]->mutex);
            if (!ports_[i]->port) continue;
            ports_[i]->port->drain_events([&](const PortEvent& e) { events.push_back(e); });
        }
        if (events.empty()) continue;
        {
            std::lock_guard<std::mutex> lock(table_mutex_);
            for (const auto& e : events) on_event(i, e);
            if (!held_.empty()) expire_held(Clock::now());
        }
        table_cv_.notify_all();
    }
}

void Outbound::on_event(std::size_t port, const PortEvent& e) {
    const auto& who = e.who;
    if (who.wildcard) {
        if (e.joined) {
            wildcards_[who.id] = Subscribed{who, port};
        } else {
            wildcards_.erase(who.id);
        }
        for (auto& [channel, s] : senders_) {
            if (wire::key_part(channel) != wire::key_part(who.channel)) continue;
            if (!e.joined) {
                s->starts.erase(who.id);
            } else {
                if (s->latched) replay(*s, Subscribed{who, port});
                joined(*s, Subscribed{who, port});
            }
            count_for(*s);  // last: see below
        }
        return;
    }
    auto& on_channel = subscribed_[who.channel];
    if (e.joined) {
        on_channel[who.id] = Subscribed{who, port};
        if (!held_.empty()) release_held(who.channel, port);
    } else {
        on_channel.erase(who.id);
        if (on_channel.empty()) subscribed_.erase(who.channel);
    }
    for (auto it = senders_.lower_bound(who.channel); it != senders_.end() && it->first == who.channel; ++it) {
        Sending& s = *it->second;
        if (!e.joined) {
            s.starts.erase(who.id);
            count_for(s);
            continue;
        }
        const bool any_type = who.type.empty() || who.type == "*";
        if (!any_type && who.kind == "subscriber" && who.type != s.type) {
            s.mismatched.fetch_add(1);
            if (mismatch_said_.emplace(who.channel, who.type).second) {
                notices_.add(LogLevel::error, s.what + ": type mismatch",
                             s.what + " sends " + s.type + " but the subscriber of node '" + who.node + "' expects " +
                                 who.type + "; it will drop every message (`gecko info` shows both)");
            }
            count_for(s);
            continue;  // it drops every message: no start to tell
        }
        if (s.latched) replay(s, Subscribed{who, port});
        // After the latched value: a start that came first would make the
        // subscriber take that value for an old copy.
        joined(s, Subscribed{who, port});
        // Counted last: a publisher that waits for this subscriber sends its
        // next message after the start was read, so none it sends to it can
        // fall before the start and be lost uncounted.
        count_for(s);
    }
}

void Outbound::count_for(Sending& s) {
    std::size_t n = 0;
    if (const auto it = subscribed_.find(s.channel); it != subscribed_.end()) n = it->second.size();
    for (const auto& [id, w] : wildcards_)
        if (wire::key_part(w.who.channel) == wire::key_part(s.channel)) ++n;
    s.subscribers = n;
}

// A subscriber that joins a latched topic gets the publisher's last frame,
// directed at it alone and marked `latched`; it arrives before any later
// message of that publisher (same link, same order).
void Outbound::replay(Sending& s, const Subscribed& to) {
    Buffer frame;
    {
        std::lock_guard<std::mutex> lock(latch_mutex_);
        if (s.last.size() < wire::frame_header_size) return;
        frame.write(reinterpret_cast<const char*>(s.last.data()), s.last.size());
    }
    wire::store_channel(frame.data(), wire::directed_channel(key_, to.who.id));
    frame.data()[11] |= wire::frame_flags::latched;
    send_to_port(to.port, frame);
}

// Read after the port made `who` a target of the sender's channel (its event
// comes after): every message stamped later reaches it, so what was lost
// after `after` and before the first it receives is counted, and nothing
// sent before it subscribed is. A message in flight as this is read may
// reach it too: the subscriber takes that one without calling it an epoch.
void Outbound::joined(Sending& s, const Subscribed& who) {
    if (!s.tells_start) return;
    Sending::Start& start = s.starts[who.who.id];
    start = Sending::Start{s.sequence.load(std::memory_order_relaxed), who.port, false};
    tell_start(s, who.who.id, start);
}

void Outbound::repeat_starts(Sending& s, bool every) {
    std::lock_guard<std::mutex> lock(table_mutex_);
    for (auto& [id, start] : s.starts) {
        if (start.repeated && !every) continue;
        start.repeated = true;
        tell_start(s, id, start);
    }
}

// Directed at the subscriber: on its directed channel, from the publisher.
void Outbound::tell_start(Sending& s, std::uint64_t subscriber, const Sending::Start& start) {
    Buffer frame;
    frame.resize(wire::frame_header_size);
    wire::encode_control(wire::Control{"start", start.after}, frame);
    wire::FrameHeader h;
    h.channel = wire::directed_channel(key_, subscriber);
    h.flags = wire::frame_flags::control;
    h.payload_size = static_cast<std::uint32_t>(frame.size() - wire::frame_header_size);
    h.sequence = start.after;
    h.sender_id = s.sender_id;
    h.send_time_ns = now_ns();
    wire::write_frame_header(frame.data(), h);
    send_to_port(start.port, frame);
}

void Outbound::send_to_port(std::size_t port, Buffer& frame) {
    if (port >= ports_.size()) return;
    Port& p = *ports_[port];
    std::lock_guard<std::mutex> lock(p.mutex);
    if (p.port) p.port->send(frame);
}

void Outbound::send_or_hold(Buffer& frame, wire::Channel channel, std::chrono::milliseconds hold,
                            std::shared_ptr<std::atomic<std::uint64_t>> lost) {
    drain_events();
    {
        std::lock_guard<std::mutex> lock(table_mutex_);
        const auto now = Clock::now();
        if (!held_.empty()) expire_held(now);
        if (subscribed_.find(channel) == subscribed_.end()) {
            if (held_.size() >= max_held) {
                // The oldest waiting frame makes room: counted where it came from.
                auto oldest = std::min_element(held_.begin(), held_.end(),
                                               [](const auto& a, const auto& b) { return a.second.until < b.second.until; });
                if (oldest->second.lost) oldest->second.lost->fetch_add(1);
                held_.erase(oldest);
            }
            held_.emplace(channel, Held{std::vector<std::uint8_t>(frame.data(), frame.data() + frame.size()), now + hold,
                                        std::move(lost)});
            return;
        }
    }
    send(frame);
}

void Outbound::release_held(wire::Channel channel, std::size_t port) {
    auto [first, last] = held_.equal_range(channel);
    for (auto it = first; it != last; ++it) {
        Buffer frame;
        frame.write(reinterpret_cast<const char*>(it->second.frame.data()), it->second.frame.size());
        send_to_port(port, frame);
    }
    held_.erase(first, last);
}

void Outbound::expire_held(Clock::time_point now) {
    std::size_t expired = 0;
    for (auto it = held_.begin(); it != held_.end();) {
        if (it->second.until > now) {
            ++it;
            continue;
        }
        if (it->second.lost) it->second.lost->fetch_add(1);
        ++expired;
        it = held_.erase(it);
    }
    if (expired > 0)
        notices_.add(LogLevel::warn, "directed frames lost",
                     std::to_string(expired) + " directed frame(s) (service replies) were dropped: their receiver's "
                     "subscription never arrived (the client left, or its node cannot reach this one)");
}

bool Outbound::wait_for_subscribers(Sending& s, std::size_t count, Clock::time_point deadline) {
    for (;;) {
        drain_events();
        std::unique_lock<std::mutex> lock(table_mutex_);
        if (s.subscribers.load() >= count) return true;
        if (closed_.load()) return false;
        const auto now = Clock::now();
        if (now >= deadline) return false;
        // The reactor drains events when a port's fd fires and wakes us; the
        // bounded slice covers an edge consumed by a concurrent send.
        table_cv_.wait_until(lock, std::min(deadline, now + std::chrono::milliseconds(20)));
    }
}

std::vector<wire::Announcement> Outbound::subscribers_of(wire::Channel channel) {
    drain_events();
    std::lock_guard<std::mutex> lock(table_mutex_);
    std::vector<wire::Announcement> out;
    if (const auto it = subscribed_.find(channel); it != subscribed_.end())
        for (const auto& [id, s] : it->second) out.push_back(s.who);
    for (const auto& [id, w] : wildcards_)
        if (wire::key_part(w.who.channel) == wire::key_part(channel)) out.push_back(w.who);
    return out;
}

}  // namespace gecko::detail

namespace gecko::detail {

std::vector<std::uint64_t> Outbound::announced_servers(const std::string& name, const std::string& type) {
    drain_events();
    std::lock_guard<std::mutex> lock(table_mutex_);
    std::vector<std::uint64_t> out;
    for (const auto& [channel, subs] : subscribed_)
        for (const auto& [id, s] : subs)
            if (s.who.kind == "server" && s.who.topic == name && s.who.type == type) out.push_back(id);
    return out;
}

}  // namespace gecko::detail
