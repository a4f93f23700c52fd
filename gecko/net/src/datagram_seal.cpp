// SPDX-License-Identifier: Apache-2.0
#include "gecko/net/datagram_seal.hpp"

#include <sodium.h>

#include <chrono>
#include <cstring>

namespace gecko::net {

namespace {

// The str "mac" and a 32-byte bin header: every sealed datagram ends with
// them and the MAC, which covers every byte before them.
constexpr std::uint8_t mac_marker[] = {0xa3, 'm', 'a', 'c', 0xc4, 0x20};
constexpr std::size_t mac_size = 32;
constexpr std::size_t sealed_tail = sizeof mac_marker + mac_size;
constexpr std::int64_t replay_memory_ms = 2 * seal_window_ms;  // a nonce older than this is stale anyway
constexpr std::size_t replay_capacity = 4096;

void mac_of(const void* data, std::size_t size, const std::array<std::uint8_t, 32>& key, std::uint8_t* out) {
    crypto_generichash(out, mac_size, static_cast<const unsigned char*>(data), size, key.data(), key.size());
}

std::uint64_t random_nonce() {
    static const int ready = sodium_init();  // idempotent and thread-safe; < 0 only without an entropy source
    (void)ready;
    std::uint64_t n = 0;
    randombytes_buf(&n, sizeof n);
    return n;
}

}  // namespace

std::int64_t wall_clock_ms() noexcept {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
        .count();
}

void seal(discovery::Writer& w, const DatagramKey& key) { seal(w, key, wall_clock_ms(), random_nonce()); }

void seal(discovery::Writer& w, const DatagramKey& key, std::int64_t ts_ms, std::uint64_t nonce) {
    w.kv("ts", static_cast<std::uint64_t>(ts_ms < 0 ? 0 : ts_ms));
    w.kv("nonce", nonce);
    w.kv("fp", key.fingerprint);
    std::uint8_t mac[mac_size];
    mac_of(w.data(), w.size(), key.mac_key, mac);
    w.key("mac");
    w.packer().pack_bin(mac_size);
    w.packer().pack_bin_body(reinterpret_cast<const char*>(mac), mac_size);
}

const char* to_string(SealCheck check) noexcept {
    switch (check) {
        case SealCheck::authentic: return "authentic";
        case SealCheck::unsigned_datagram: return "unsigned";
        case SealCheck::other_secret: return "other secret";
        case SealCheck::bad_mac: return "bad mac";
        case SealCheck::stale: return "stale";
        case SealCheck::replayed: return "replayed";
    }
    return "?";
}

DatagramGuard::DatagramGuard(std::shared_ptr<const DatagramKey> key) : key_(std::move(key)) {}

DatagramGuard::Verdict DatagramGuard::refuse(Verdict v) {
    ++refused_[static_cast<std::size_t>(v.check)];
    return v;
}

DatagramGuard::Verdict DatagramGuard::check(const char* data, std::size_t size, const discovery::Message& message,
                                            std::int64_t now_ms) {
    Verdict v;
    const auto* bytes = reinterpret_cast<const std::uint8_t*>(data);
    const auto mac_field = discovery::find(message.root(), "mac");
    const auto mac_bytes = mac_field ? mac_field->as_bin() : std::nullopt;
    if (size < sealed_tail || std::memcmp(bytes + size - sealed_tail, mac_marker, sizeof mac_marker) != 0 ||
        !mac_bytes || mac_bytes->size() != mac_size) {
        v.check = SealCheck::unsigned_datagram;
        return refuse(v);
    }
    v.fingerprint = discovery::get_str(message.root(), "fp").value_or("");
    const bool own = v.fingerprint == key_->fingerprint;
    if (!own && (key_->accepted_fingerprint.empty() || v.fingerprint != key_->accepted_fingerprint)) {
        v.check = SealCheck::other_secret;
        return refuse(v);
    }
    std::uint8_t expected[mac_size];
    mac_of(bytes, size - sealed_tail, own ? key_->mac_key : key_->accepted_mac_key, expected);
    if (sodium_memcmp(expected, bytes + size - mac_size, mac_size) != 0) {
        v.check = SealCheck::bad_mac;
        return refuse(v);
    }
    const auto ts = discovery::get_i64(message.root(), "ts");
    const auto nonce = discovery::get_u64(message.root(), "nonce");
    if (!ts || !nonce) {  // authentic but incomplete: a sender that does not follow §6
        v.check = SealCheck::unsigned_datagram;
        return refuse(v);
    }
    v.skew_ms = *ts - now_ms;
    if (v.skew_ms > seal_window_ms || v.skew_ms < -seal_window_ms) {
        v.check = SealCheck::stale;
        return refuse(v);
    }
    while (!accepted_.empty() &&
           (accepted_.front().first < now_ms - replay_memory_ms || accepted_.size() >= replay_capacity)) {
        nonces_.erase(accepted_.front().second);
        accepted_.pop_front();
    }
    if (!nonces_.insert(*nonce).second) {
        v.check = SealCheck::replayed;
        return refuse(v);
    }
    accepted_.emplace_back(now_ms, *nonce);
    v.check = SealCheck::authentic;
    return v;
}

std::string DatagramGuard::explain(const Verdict& v) const {
    switch (v.check) {
        case SealCheck::authentic: return "it is authentic";
        case SealCheck::unsigned_datagram: return "it has no MAC: a program without the key's secret, or a forgery";
        case SealCheck::other_secret: {
            std::string fp;  // shown, never trusted: keep it printable
            for (char c : v.fingerprint.substr(0, 64)) fp += (c > 0x20 && c < 0x7f) ? c : '?';
            return "it is sealed with another secret (fingerprint " + fp + "; this program's is " + key_->fingerprint +
                   (key_->accepted_fingerprint.empty() ? "" : ", and it accepts " + key_->accepted_fingerprint) + ")";
        }
        case SealCheck::bad_mac: return "its MAC is wrong: forged, or damaged";
        case SealCheck::stale:
            return "its time is " + std::to_string(v.skew_ms / 1000) + " s off this host's clock (more than " +
                   std::to_string(seal_window_ms / 1000) + " s): synchronise the clocks of the key's machines (chrony, NTP)";
        case SealCheck::replayed: return "it was heard before: a replay, or a network that duplicates datagrams";
    }
    return "?";
}

std::uint64_t DatagramGuard::refused_total() const noexcept {
    std::uint64_t n = 0;
    for (auto r : refused_) n += r;
    return n;
}

std::string DatagramGuard::describe_refused() const {
    std::string s;
    for (std::size_t i = 1; i < seal_check_count; ++i) {
        if (refused_[i] == 0) continue;
        if (!s.empty()) s += ", ";
        s += std::string(to_string(static_cast<SealCheck>(i))) + " " + std::to_string(refused_[i]);
    }
    return s;
}

}  // namespace gecko::net
