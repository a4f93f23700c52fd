// SPDX-License-Identifier: Apache-2.0
// A core's `secured` flag in its multicast datagrams (docs/SECURITY.md §5):
// a node whose security differs from the core's never joins it and says why,
// instead of failing handshakes without a word. The datagrams of a secured
// key are sealed (§6): a secured node acts only on authentic ones.

#include "harness.hpp"

#include "discovery/discovery_client.hpp"
#include "gecko/error.hpp"
#include "gecko/security/key_security.hpp"
#include "geckocore/core.hpp"
#include "support/ports.hpp"

#include <catch2/catch.hpp>

#include <atomic>
#include <cstdlib>
#include <optional>
#include <thread>

using namespace gecko::detail;
using namespace std::chrono_literals;
using Catch::Matchers::Contains;

namespace {

gecko::core::CoreOptions multicast_core(const std::string& key) {
    gecko::core::CoreOptions o;
    o.key = key;
    o.multicast_port = gecko::test::test_multicast_port();
    o.listen = "tcp://127.0.0.1:*";
    o.door_port = 0;
    return o;
}

DiscoveryOptions multicast_client(const std::string& key) {
    DiscoveryOptions o;
    o.key = key;
    o.node = "secured-test";
    o.multicast_port = gecko::test::test_multicast_port();
    o.secret_path = "/nowhere/" + key + ".secret";
    return o;
}

gecko::security::Secret a_secret(std::uint8_t step = 7) {
    gecko::security::Secret::Bytes b{};
    for (std::size_t i = 0; i < b.size(); ++i) b[i] = static_cast<std::uint8_t>(step * i + 1);
    return gecko::security::Secret::from_bytes(b);
}

// A node that holds `secret` for `key` (and accepts `accepted`, during a
// rotation): CURVE links and sealed datagrams, as gecko::Node sets them.
DiscoveryOptions secured_client(const std::string& key, const gecko::security::Secret& secret,
                                const gecko::security::Secret* accepted = nullptr) {
    auto o = multicast_client(key);
    o.curve = std::make_shared<const gecko::net::CurveKeys>(gecko::security::curve_keys(key, secret, accepted));
    o.seal = std::make_shared<const gecko::net::DatagramKey>(gecko::security::datagram_key(secret, accepted));
    return o;
}

// A core that finds `secret` (and `accepted`) for its key when it is made
// (GECKO_SECRET_FILE, then unset again).
std::unique_ptr<gecko::core::Core> secured_core(const std::string& key, const gecko::security::Secret& secret,
                                                const gecko::test::TempDir& dir,
                                                const gecko::security::Secret* accepted = nullptr) {
    const std::string file = dir.path() + "/core.secret";
    gecko::security::SecretFile{secret, accepted ? std::optional<gecko::security::Secret>(*accepted) : std::nullopt}.write(file);
    ::setenv("GECKO_SECRET_FILE", file.c_str(), 1);
    std::unique_ptr<gecko::core::Core> core;
    try {
        core = std::make_unique<gecko::core::Core>(multicast_core(key));
    } catch (...) {
        ::unsetenv("GECKO_SECRET_FILE");
        throw;
    }
    ::unsetenv("GECKO_SECRET_FILE");
    REQUIRE(core->secured_fingerprint() == secret.fingerprint());
    return core;
}

// Sends a plain `announce` of `key` to the test group every 20 ms until stopped
// (bounded): a forger without the secret, pointing nodes at a dead endpoint.
class Forger {
public:
    explicit Forger(const std::string& key) {
        std::string error;
        const auto iface = gecko::net::interface_address("");
        REQUIRE(iface);
        fd_ = gecko::net::open_multicast_sender(*iface, 1, error);
        REQUIRE(fd_);
        group_.sin_family = AF_INET;
        group_.sin_port = htons(gecko::test::test_multicast_port());
        group_.sin_addr = *gecko::net::parse_ipv4(gecko::discovery::default_multicast_group);
        gecko::discovery::Writer w("announce", 5);
        w.kv("key", key);
        w.kv("instance", std::uint64_t{0xf0f0});
        w.kv("endpoint", std::string("tcp://127.0.0.1:9"));
        w.kv("host", std::string("forger"));
        w.kv("pid", std::int32_t{1});
        datagram_ = w.str();
        thread_ = std::thread([this] {
            for (int i = 0; i < 1500 && !stop_; ++i) {  // 30 s at most
                (void)gecko::net::send_to(fd_.get(), group_, datagram_.data(), datagram_.size());
                ++sent_;
                std::this_thread::sleep_for(20ms);  // a pace, not a synchronisation
            }
        });
    }
    ~Forger() {
        stop_ = true;
        thread_.join();
    }
    int sent() const { return sent_; }

private:
    gecko::net::Fd fd_;
    sockaddr_in group_{};
    std::string datagram_;
    std::atomic<bool> stop_{false};
    std::atomic<int> sent_{0};
    std::thread thread_;
};

}  // namespace

TEST_CASE("a node without the secret hears a secured core by multicast and says it requires authentication",
          "[discovery][security]") {
    const auto key = gecko::test::test_key("secured-mc");
    gecko::test::TempDir dir;
    const std::string file = dir.path() + "/key.secret";
    a_secret().write_file(file);
    // The core finds its secret when it is made (setup), then the variable goes: the client has none.
    ::setenv("GECKO_SECRET_FILE", file.c_str(), 1);
    std::optional<gecko::core::Core> core;
    try {
        core.emplace(multicast_core(key));
    } catch (...) {
        ::unsetenv("GECKO_SECRET_FILE");
        throw;
    }
    ::unsetenv("GECKO_SECRET_FILE");
    REQUIRE_FALSE(core->secured_fingerprint().empty());
    core->start();
    DiscoveryClient client(multicast_client(key));
    REQUIRE_THROWS_WITH(client.wait_for_core(20s),
                        Contains("geckocore for key '" + key + "'") &&
                            Contains("requires authentication; no secret found at /nowhere/"));
    CHECK(client.core_endpoint().empty());  // it never joined
}

TEST_CASE("a node with the secret hears a plain core by multicast and refuses it", "[discovery][security]") {
    const auto key = gecko::test::test_key("plain-mc");
    gecko::core::Core core(multicast_core(key));
    REQUIRE(core.secured_fingerprint().empty());
    core.start();
    DiscoveryClient client(secured_client(key, a_secret()));
    try {
        client.wait_for_core(20s);
        FAIL("joined a plain core with a secret");
    } catch (const gecko::Error& e) {
        CHECK(e.code() == gecko::Errc::security);
        CHECK_THAT(e.what(), Contains("is not secured, but this node has the key's secret"));
    }
}

TEST_CASE("a node with another secret hears a secured core by multicast and says the fingerprints", "[discovery][security]") {
    const auto key = gecko::test::test_key("other-mc");
    gecko::test::TempDir dir;
    auto core = secured_core(key, a_secret(7), dir);
    core->start();
    DiscoveryClient client(secured_client(key, a_secret(11)));
    try {
        client.wait_for_core(20s);
        FAIL("joined a core of another secret");
    } catch (const gecko::Error& e) {
        CHECK(e.code() == gecko::Errc::security);
        CHECK_THAT(e.what(), Contains("holds another secret (fingerprint " + a_secret(7).fingerprint() +
                                      ") than this node (fingerprint " + a_secret(11).fingerprint()));
    }
    CHECK(client.core_endpoint().empty());
    // The core answered the node's queries all the same, and counted them as not authentic.
    CHECK(core->counters().datagrams_refused >= 1);
}

TEST_CASE("during a rotation a node finds by multicast a core that uses the secret it accepts, and joins it",
          "[discovery][security][rotation]") {
    const auto key = gecko::test::test_key("rotation-mc");
    gecko::test::TempDir dir;
    const auto old_one = a_secret(7), new_one = a_secret(13);
    auto core = secured_core(key, old_one, dir, &new_one);  // round 1: the old secret, accepting the new
    core->start();
    DiscoveryClient switched(secured_client(key, new_one, &old_one));  // round 2: the new, accepting the old
    REQUIRE_NOTHROW(switched.wait_for_core(20s));
    CHECK(switched.core_endpoint() == core->endpoint());
    CHECK(switched.security_error().empty());
    // Its query was sealed with the new secret, which the core accepts: nothing refused.
    CHECK(core->counters().datagrams_refused == 0);
    // A node that finished the rotation early (the new secret alone) is told the fingerprints.
    DiscoveryClient early(secured_client(key, new_one));
    CHECK_THROWS_WITH(early.wait_for_core(20s), Contains("holds another secret (fingerprint " + old_one.fingerprint()));
}

TEST_CASE("forged plain announcements keep a secured node neither from its core nor make the core see another",
          "[discovery][security]") {
    const auto key = gecko::test::test_key("forged-mc");
    gecko::test::TempDir dir;
    auto core = secured_core(key, a_secret(), dir);
    Forger forger(key);
    core->start();
    DiscoveryClient client(secured_client(key, a_secret()));
    REQUIRE_NOTHROW(client.wait_for_core(20s));
    CHECK(client.core_endpoint() == core->endpoint());
    CHECK(client.security_error().empty());
    // The core heard the forgeries too: refused, and no "another geckocore" for them.
    for (int i = 0; i < 2000 && core->counters().datagrams_refused == 0; ++i) std::this_thread::sleep_for(10ms);
    CHECK(core->counters().datagrams_refused >= 1);
    CHECK(core->counters().duplicate_cores == 0);
    CHECK(forger.sent() > 0);
}
