// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file datagram_seal.hpp
/// Discovery datagrams of a secured key carry a time, a nonce, the secret's
/// fingerprint and a MAC (docs/SECURITY.md §6): seal() adds them, and a
/// DatagramGuard checks them and refuses replays.
///
///     discovery::Writer w("query", 4 + net::sealed_fields);
///     ...                       // the query's own four fields
///     net::seal(w, *key);       // ts, nonce, fp, mac
///
///     DatagramGuard guard(key);
///     if (guard.check(data, size, message, net::wall_clock_ms()).authentic()) ...

#include <gecko/wire/discovery.hpp>

#include <array>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <unordered_set>

namespace gecko::net {

/// What seals and checks the datagrams of one key: subkey 3 of its secret
/// and the secret's fingerprint; during a rotation (docs/SECURITY.md §9),
/// also those of the secret accepted beside it, which checks but never seals.
struct DatagramKey {
    std::array<std::uint8_t, 32> mac_key{};
    std::string fingerprint;  ///< 16 hexadecimal digits
    std::array<std::uint8_t, 32> accepted_mac_key{};
    std::string accepted_fingerprint;  ///< "" outside a rotation
};

/// Fields seal() adds: ts, nonce, fp, mac.
inline constexpr std::uint32_t sealed_fields = 4;
/// A sealed datagram's `ts` may be this far from the reader's clock.
inline constexpr std::int64_t seal_window_ms = 30'000;

/// Milliseconds since the Unix epoch (CLOCK_REALTIME): what `ts` holds.
std::int64_t wall_clock_ms() noexcept;

/// Appends ts, nonce, fp and mac to `w`, which must have been made with
/// sealed_fields more fields than its own, all of them written already.
void seal(discovery::Writer& w, const DatagramKey& key);
/// The same with a given time and nonce (for test vectors).
void seal(discovery::Writer& w, const DatagramKey& key, std::int64_t ts_ms, std::uint64_t nonce);

/// Why a datagram was refused (docs/SECURITY.md §6), or that it was not.
enum class SealCheck : std::uint8_t { authentic, unsigned_datagram, other_secret, bad_mac, stale, replayed };
inline constexpr std::size_t seal_check_count = 6;
/// "unsigned", "other secret", "bad mac", "stale", "replayed" ("authentic").
const char* to_string(SealCheck check) noexcept;

/// Checks sealed datagrams for one reader, remembering the nonces it
/// accepted. Not thread-safe: owned by the thread that reads the socket.
class DatagramGuard {
public:
    struct Verdict {
        SealCheck check = SealCheck::unsigned_datagram;
        std::string fingerprint;  ///< the datagram's `fp` ("" if none)
        std::int64_t skew_ms = 0; ///< its `ts` minus the reader's clock
        bool authentic() const noexcept { return check == SealCheck::authentic; }
    };

    explicit DatagramGuard(std::shared_ptr<const DatagramKey> key);

    /// Checks the datagram `data` (`message` is its parse), at `now_ms`
    /// (wall_clock_ms()). Counts a refusal per reason.
    Verdict check(const char* data, std::size_t size, const discovery::Message& message, std::int64_t now_ms);

    /// Why `v` was refused, for a log line ("it has no MAC: ...").
    std::string explain(const Verdict& v) const;

    std::uint64_t refused(SealCheck reason) const noexcept { return refused_[static_cast<std::size_t>(reason)]; }
    std::uint64_t refused_total() const noexcept;
    /// "unsigned 3, stale 1" ("" when nothing was refused).
    std::string describe_refused() const;
    const DatagramKey& key() const noexcept { return *key_; }

private:
    Verdict refuse(Verdict v);

    std::shared_ptr<const DatagramKey> key_;
    std::array<std::uint64_t, seal_check_count> refused_{};
    std::deque<std::pair<std::int64_t, std::uint64_t>> accepted_;  // (when, nonce), oldest first
    std::unordered_set<std::uint64_t> nonces_;
};

}  // namespace gecko::net
