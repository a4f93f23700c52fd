// SPDX-License-Identifier: Apache-2.0
// Sealed discovery datagrams (docs/SECURITY.md §6): the test vector, computed
// with Python's msgpack and hashlib rather than with Gecko, and each reason a
// reader refuses a datagram for.

#include <catch2/catch.hpp>

#include <cstdio>
#include <string>

#include "gecko/net/datagram_seal.hpp"
#include "gecko/security/key_security.hpp"
#include "gecko/security/secret.hpp"

using gecko::net::DatagramGuard;
using gecko::net::DatagramKey;
using gecko::net::SealCheck;
using gecko::security::Secret;

namespace {

Secret counting_secret(std::uint8_t first, std::uint8_t step) {
    Secret::Bytes b{};
    for (std::size_t i = 0; i < b.size(); ++i) b[i] = static_cast<std::uint8_t>(first + step * i);
    return Secret::from_bytes(b);
}

constexpr std::int64_t vector_ts = 1800000000000;

gecko::discovery::Writer vector_announce(const DatagramKey& key, std::int64_t ts = vector_ts, std::uint64_t nonce = 42) {
    gecko::discovery::Writer w("announce", 6 + gecko::net::sealed_fields);
    w.kv("key", std::string("dalek"));
    w.kv("instance", std::uint64_t{1});
    w.kv("endpoint", std::string("tcp://192.0.2.1:40000"));
    w.kv("host", std::string("h"));
    w.kv("pid", std::int32_t{7});
    w.kv("secured", true);
    gecko::net::seal(w, key, ts, nonce);
    return w;
}

std::string hex(const std::string& bytes) {
    std::string out;
    char two[3];
    for (unsigned char c : bytes) {
        std::snprintf(two, sizeof two, "%02x", c);
        out += two;
    }
    return out;
}

SealCheck check(DatagramGuard& guard, const std::string& bytes, std::int64_t now = vector_ts) {
    const auto m = gecko::discovery::Message::parse(bytes.data(), bytes.size(), nullptr);
    REQUIRE(m);
    return guard.check(bytes.data(), bytes.size(), *m, now).check;
}

}  // namespace

TEST_CASE("a sealed announce is the test vector of docs/SECURITY.md §6", "[security][seal]") {
    const auto key = gecko::security::datagram_key(counting_secret(0, 1));
    CHECK(key.fingerprint == "b7bab9d6740a8a76");
    CHECK(hex(vector_announce(key).str()) ==
          "8ca17602a174a8616e6e6f756e6365a36b6579a564616c656ba8696e7374616e636501"
          "a8656e64706f696e74b57463703a2f2f3139322e302e322e313a3430303030a4686f73"
          "74a168a370696407a773656375726564c3a27473cf000001a3185c5000a56e6f6e6365"
          "2aa26670b062376261623964363734306138613736a36d6163c420d42b445b328426c7"
          "ba91bfb4bd36ea4de3c2ec680b624073c378df610f044981");
}

TEST_CASE("a reader refuses unsigned, other-secret, forged, stale and replayed datagrams", "[security][seal]") {
    const auto key = std::make_shared<const DatagramKey>(gecko::security::datagram_key(counting_secret(0, 1)));
    DatagramGuard guard(key);
    const auto sealed = vector_announce(*key).str();

    CHECK(check(guard, sealed) == SealCheck::authentic);
    CHECK(check(guard, sealed) == SealCheck::replayed);  // the same nonce again

    gecko::discovery::Writer plain("announce", 1);
    plain.kv("key", std::string("dalek"));
    CHECK(check(guard, plain.str()) == SealCheck::unsigned_datagram);

    const auto other = gecko::security::datagram_key(counting_secret(9, 3));
    DatagramGuard::Verdict v;
    {
        const auto bytes = vector_announce(other, vector_ts, 43).str();
        const auto m = gecko::discovery::Message::parse(bytes.data(), bytes.size(), nullptr);
        REQUIRE(m);
        v = guard.check(bytes.data(), bytes.size(), *m, vector_ts);
    }
    CHECK(v.check == SealCheck::other_secret);
    CHECK(v.fingerprint == other.fingerprint);
    CHECK_THAT(guard.explain(v), Catch::Contains("fingerprint " + other.fingerprint) &&
                                     Catch::Contains("this program's is b7bab9d6740a8a76"));

    auto forged = vector_announce(*key, vector_ts, 44).str();
    forged[40] ^= 0x01;  // a byte of the endpoint: the MAC no longer matches
    CHECK(check(guard, forged) == SealCheck::bad_mac);

    // Another key with this one's fingerprint: the MAC itself must tell.
    auto impostor = gecko::security::datagram_key(counting_secret(9, 3));
    impostor.fingerprint = key->fingerprint;
    CHECK(check(guard, vector_announce(impostor, vector_ts, 45).str()) == SealCheck::bad_mac);

    CHECK(check(guard, vector_announce(*key, vector_ts - 31'000, 46).str()) == SealCheck::stale);
    CHECK(check(guard, vector_announce(*key, vector_ts + 31'000, 47).str()) == SealCheck::stale);
    CHECK(check(guard, vector_announce(*key, vector_ts + 29'000, 48).str()) == SealCheck::authentic);

    CHECK(guard.refused(SealCheck::unsigned_datagram) == 1);
    CHECK(guard.refused(SealCheck::other_secret) == 1);
    CHECK(guard.refused(SealCheck::bad_mac) == 2);
    CHECK(guard.refused(SealCheck::stale) == 2);
    CHECK(guard.refused(SealCheck::replayed) == 1);
    CHECK(guard.refused_total() == 7);
    CHECK(guard.describe_refused() == "unsigned 1, other secret 1, bad mac 2, stale 2, replayed 1");
}

TEST_CASE("a nonce is forgotten only once a datagram that carries it would be stale", "[security][seal]") {
    const auto key = std::make_shared<const DatagramKey>(gecko::security::datagram_key(counting_secret(0, 1)));
    DatagramGuard guard(key);
    const auto sealed = vector_announce(*key).str();
    CHECK(check(guard, sealed, vector_ts) == SealCheck::authentic);
    CHECK(check(guard, sealed, vector_ts + 30'000) == SealCheck::replayed);  // still within the window
    CHECK(check(guard, sealed, vector_ts + 30'001) == SealCheck::stale);     // past it: stale, whatever the nonce
}
