// SPDX-License-Identifier: Apache-2.0
#include "gecko/net/finder.hpp"

#include "gecko/wire/discovery.hpp"
#include "gecko/log.hpp"

#include <arpa/inet.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>

namespace gecko::net {

std::string normalize_core_address(const std::string& text) {
    if (text.empty()) return "";
    std::string host;
    std::uint16_t port = 0;
    if (text.rfind("tcp://", 0) == 0) return split_tcp_endpoint(text, host, port) && port != 0 ? text : "";
    if (text.find("://") != std::string::npos) return "";
    const auto colon = text.rfind(':');
    if (colon == std::string::npos) return "tcp://" + text + ":" + std::to_string(discovery::default_core_port);
    const std::string candidate = "tcp://" + text;
    return split_tcp_endpoint(candidate, host, port) && port != 0 ? candidate : "";
}

std::optional<RedirectTarget> redirect_target(const wire::Value& redirect, const std::string& door_endpoint) {
    const auto endpoint = discovery::get_str(redirect, "endpoint");
    std::string host, door_host;
    std::uint16_t port = 0, door_port = 0;
    if (!endpoint || !split_tcp_endpoint(*endpoint, host, port) || port == 0 ||
        !split_tcp_endpoint(door_endpoint, door_host, door_port))
        return std::nullopt;
    RedirectTarget t;
    if (is_wildcard_host(host)) {
        t.endpoint = "tcp://" + door_host + ":" + std::to_string(port);
        return t;
    }
    const auto address = parse_ipv4(host);
    const auto door_address = resolve_ipv4(door_host);
    t.loopback_only = address && is_loopback(*address) && !(door_address && is_loopback(*door_address));
    t.endpoint = *endpoint;
    return t;
}



namespace {
std::string lowercase(std::string s) {
    for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
}
}  // namespace

CoreFinder::CoreFinder(const FinderOptions& options)
    : options_(options), explicit_(normalize_core_address(options.core)), host_(hostname()) {
    if (options_.seal) guard_.emplace(options_.seal);
    if (!options_.multicast) return;
    const auto group = parse_ipv4(options_.multicast_group);
    const auto iface = interface_address(options_.interface);
    if (!group || !IN_MULTICAST(ntohl(group->s_addr))) {
        setup_error_ = "'" + options_.multicast_group + "' is not an IPv4 multicast group";
        return;
    }
    if (!iface) {
        setup_error_ = "unknown interface '" + options_.interface + "'";
        return;
    }
    group_.sin_family = AF_INET;
    group_.sin_port = htons(options_.multicast_port);
    group_.sin_addr = *group;
    group_ok_ = true;
    std::string error;
    sender_ = open_multicast_sender(*iface, options_.ttl, error);
    if (!sender_) {
        setup_error_ = error;
        group_ok_ = false;
        return;
    }
    // The listener only speeds things up (announcements); queries work without it.
    std::string listen_error;
    listener_ = open_multicast_listener(*group, options_.multicast_port, *iface, listen_error);
}

void CoreFinder::restart() {
    backoff_ = std::chrono::milliseconds(0);
    next_query_ = Clock::time_point{};
}

CoreFinder::Clock::time_point CoreFinder::tick(Clock::time_point now) {
    if (!group_ok_) return now + std::chrono::hours(1);
    if (now >= next_query_) {
        send_query();
        backoff_ = std::clamp(backoff_ * 2, std::chrono::milliseconds(100), std::chrono::milliseconds(1000));
        next_query_ = now + backoff_;
    }
    return next_query_;
}

void CoreFinder::send_query() {
    discovery::Writer w("query", 4 + (guard_ ? sealed_fields : 0));
    w.kv("key", options_.key);
    w.kv("node", options_.node);
    w.kv("host", host_);
    w.kv("pid", static_cast<std::int32_t>(::getpid()));
    if (guard_) seal(w, guard_->key());
    send_error_ = send_to(sender_.get(), group_, w.data(), w.size());
    ++queries_;
}

std::vector<CoreAnswer> CoreFinder::read(int fd) {
    std::vector<CoreAnswer> out;
    if (fd < 0) return out;
    char buf[discovery::max_datagram];
    for (int budget = 64; budget > 0; --budget) {
        sockaddr_in from{};
        socklen_t len = sizeof from;
        const auto n = ::recvfrom(fd, buf, sizeof buf, MSG_TRUNC, reinterpret_cast<sockaddr*>(&from), &len);
        if (n < 0) break;  // EAGAIN: drained
        std::string why;
        std::optional<discovery::Message> msg;
        if (static_cast<std::size_t>(n) > sizeof buf)
            why = "oversized datagram (" + std::to_string(n) + " bytes)";
        else
            msg = discovery::Message::parse(buf, static_cast<std::size_t>(n), &why);
        if (!msg) {
            ++malformed_;
            const auto now = Clock::now();
            if (now - last_malformed_log_ > std::chrono::seconds(10)) {
                last_malformed_log_ = now;
                Logger("gecko.discovery").debug("ignored datagram from " + to_string(from) + ": " + why + " (" +
                                                std::to_string(malformed_) + " so far)");
            }
            continue;
        }
        const bool reply = msg->type() == "core";
        if (!reply && msg->type() != "announce") continue;  // queries from other nodes: not for us
        const auto key = discovery::get_str(msg->root(), "key");
        auto endpoint = discovery::get_str(msg->root(), "endpoint");
        const auto instance = discovery::get_u64(msg->root(), "instance");
        if (!key || !endpoint || !instance) {
            ++malformed_;
            continue;
        }
        if (*key != options_.key) {
            if (reply) {  // a core of another key answered us: only possible with a buggy core; remember it
                ++other_key_answers_;
                other_keys_ = *key;
            } else if (keys_heard_.size() < 32) {
                keys_heard_.insert(*key);
            }
            continue;
        }
        std::string host;
        std::uint16_t port = 0;
        if (!split_tcp_endpoint(*endpoint, host, port)) {
            ++malformed_;
            continue;
        }
        CoreAnswer a;
        a.endpoint = is_wildcard_host(host) ? "tcp://" + to_string(from.sin_addr) + ":" + std::to_string(port) : *endpoint;
        a.instance = *instance;
        a.host = discovery::get_str(msg->root(), "host").value_or("");
        a.pid = static_cast<std::int32_t>(discovery::get_i64(msg->root(), "pid").value_or(0));
        a.announcement = !reply;
        a.secured = discovery::get_bool(msg->root(), "secured", false);
        a.fingerprint = discovery::get_str(msg->root(), "fp").value_or("");
        if (guard_ && !admit(buf, static_cast<std::size_t>(n), *msg, a, from)) continue;
        ++answers_;
        out.push_back(std::move(a));
    }
    return out;
}

// A secured finder takes only authentic core datagrams (docs/SECURITY.md §6).
// A refused one is counted, its reason logged once, and the telling one kept
// so that the node can say why it joins no core.
bool CoreFinder::admit(const char* data, std::size_t size, const discovery::Message& msg, const CoreAnswer& answer,
                       const sockaddr_in& from) {
    const auto v = guard_->check(data, size, msg, wall_clock_ms());
    if (v.authentic()) return true;
    const auto now = Clock::now();
    if (!refused_answer_) first_refusal_ = now;
    const bool telling = v.check == SealCheck::other_secret || (v.check == SealCheck::unsigned_datagram && !answer.secured);
    if (!refused_answer_ || (telling && refused_answer_->why != SealCheck::other_secret))
        refused_answer_ = RefusedAnswer{answer, v.check, v.fingerprint};
    const auto bit = 1u << static_cast<unsigned>(v.check);
    if ((refusals_logged_ & bit) == 0) {
        refusals_logged_ |= bit;
        Logger("gecko.discovery").warn("discovery: ignored a '" + msg.type() + "' datagram for key '" + options_.key +
                                       "' from " + to_string(from) + ": " + guard_->explain(v) + " (docs/SECURITY.md §6; further " +
                                       to_string(v.check) + " datagrams are only counted)");
    }
    return false;
}

std::string CoreFinder::describe() const {
    std::string s;
    if (options_.multicast) {
        s = "multicast " + options_.multicast_group + ":" + std::to_string(options_.multicast_port) + " on " +
            (options_.interface.empty() ? std::string("the default interface") : "'" + options_.interface + "'") + ": ";
        if (!setup_error_.empty())
            s += "unusable (" + setup_error_ + ")";
        else if (!send_error_.empty())
            s += "cannot send (" + send_error_ + ")";
        else if (answers_ > 0)
            s += "answered";
        else
            s += "no answer to " + std::to_string(queries_) + " queries";
        if (other_key_answers_ > 0) s += " (a core of key '" + other_keys_ + "' answered)";
        if (guard_ && guard_->refused_total() > 0)
            s += " (refused " + std::to_string(guard_->refused_total()) + " core datagrams: " + guard_->describe_refused() +
                 "; docs/SECURITY.md §6)";
        if (answers_ == 0 && !keys_heard_.empty()) {
            std::string keys, hint;
            for (const auto& k : keys_heard_) {
                keys += (keys.empty() ? "'" : ", '") + k + "'";
                if (lowercase(k) == lowercase(options_.key)) hint = "; did you mean '" + k + "'?";
            }
            s += " (cores heard on the group serve " + keys + hint + ")";
        }
    } else {
        s = "multicast disabled";
    }
    s += "; unicast ";
    if (explicit_.empty()) {
        s += options_.core.empty() ? std::string("not configured (GECKO_CORE unset)") : "'" + options_.core + "' is not a valid address";
    } else {
        s += explicit_ + ": " + (unicast_result_.empty() ? std::string("not tried yet") : unicast_result_);
    }
    s += "; check that `geckocore --key " + options_.key + "` runs";
    if (options_.multicast) s += ", that multicast reaches it (or set GECKO_CORE=host:port)";
    return s;
}

}  // namespace gecko::net
