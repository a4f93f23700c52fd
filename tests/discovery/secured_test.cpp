// SPDX-License-Identifier: Apache-2.0
// A core's `secured` flag in its multicast datagrams (docs/SECURITY.md §5):
// a node whose security differs from the core's never joins it and says why
// at once, instead of failing handshakes without a word.

#include "harness.hpp"

#include "discovery/discovery_client.hpp"
#include "gecko/error.hpp"
#include "gecko/security/key_security.hpp"
#include "geckocore/core.hpp"
#include "support/ports.hpp"

#include <catch2/catch.hpp>

#include <cstdlib>

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

gecko::security::Secret a_secret() {
    gecko::security::Secret::Bytes b{};
    for (std::size_t i = 0; i < b.size(); ++i) b[i] = static_cast<std::uint8_t>(7 * i + 1);
    return gecko::security::Secret::from_bytes(b);
}

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
    auto o = multicast_client(key);
    o.curve = std::make_shared<const gecko::net::CurveKeys>(gecko::security::curve_keys(key, a_secret()));
    DiscoveryClient client(o);
    try {
        client.wait_for_core(20s);
        FAIL("joined a plain core with a secret");
    } catch (const gecko::Error& e) {
        CHECK(e.code() == gecko::Errc::security);
        CHECK_THAT(e.what(), Contains("is not secured, but this node has the key's secret"));
    }
}
