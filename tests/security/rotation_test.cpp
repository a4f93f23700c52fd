// SPDX-License-Identifier: Apache-2.0
// A key's rotation (docs/SECURITY.md §9): a secret file with a second,
// accepted secret, and what accepts it: the datagram guard, the ZAP handler,
// and a CURVE client that names the server key of its peer's secret.

#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <chrono>
#include <fstream>
#include <memory>
#include <string>
#include <thread>

#include "gecko/net/datagram_seal.hpp"
#include "gecko/net/zap_handler.hpp"
#include "gecko/net/zmq_socket.hpp"
#include "gecko/security/key_security.hpp"
#include "gecko/security/secret.hpp"
#include "support/ports.hpp"

using namespace std::chrono_literals;
using gecko::security::Secret;
using gecko::security::SecretFile;
using Catch::Matchers::Contains;

namespace {

// The old and the new secret of a rotation, and a third that nobody accepts.
Secret rotation_secret(char which) {
    Secret::Bytes b{};
    for (std::size_t i = 0; i < b.size(); ++i) b[i] = static_cast<std::uint8_t>(which * 7 + 5 * i);
    return Secret::from_bytes(b);
}

std::string write_text(const gecko::test::TempDir& dir, const std::string& name, const std::string& text) {
    const std::string path = dir.path() + "/" + name;
    std::ofstream(path) << text;
    ::chmod(path.c_str(), 0600);
    return path;
}

gecko::discovery::Writer sealed_announce(const gecko::net::DatagramKey& key, std::uint64_t nonce) {
    gecko::discovery::Writer w("announce", 2 + gecko::net::sealed_fields);
    w.kv("key", std::string("dalek"));
    w.kv("secured", true);
    gecko::net::seal(w, key, gecko::net::wall_clock_ms(), nonce);
    return w;
}

gecko::net::SealCheck check(gecko::net::DatagramGuard& guard, const gecko::discovery::Writer& w) {
    const auto m = gecko::discovery::Message::parse(w.data(), w.size(), nullptr);
    REQUIRE(m);
    return guard.check(w.data(), w.size(), *m, gecko::net::wall_clock_ms()).check;
}

}  // namespace

TEST_CASE("a secret file holds its own secret and, during a rotation, a second one it accepts", "[security][rotation]") {
    gecko::test::TempDir dir;
    const Secret old_one = rotation_secret('o'), new_one = rotation_secret('n');
    const std::string path = dir.path() + "/keys/dalek.secret";
    SecretFile{new_one, old_one}.write(path);
    const auto file = SecretFile::read(path);
    CHECK(file.own.fingerprint() == new_one.fingerprint());
    REQUIRE(file.accepted);
    CHECK(file.accepted->fingerprint() == old_one.fingerprint());
    CHECK(Secret::read_file(path).fingerprint() == new_one.fingerprint());  // what a program uses
    struct stat st {};
    REQUIRE(::stat(path.c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0600);

    SecretFile{new_one, std::nullopt}.write(path, true);
    CHECK_FALSE(SecretFile::read(path).accepted);

    const std::string digits(64, 'a'), others(64, 'b');
    CHECK_THROWS_WITH(SecretFile::read(write_text(dir, "twice", digits + "\n" + digits + "\n")),
                      Contains("the same secret on both lines"));
    CHECK_THROWS_WITH(SecretFile::read(write_text(dir, "three", digits + "\n" + others + "\n" + std::string(64, 'c') + "\n")),
                      Contains("a second such line"));
    CHECK_THROWS_WITH(SecretFile::read(write_text(dir, "one-line", digits + " " + others + "\n")),
                      Contains("a second such line"));
    CHECK_NOTHROW(SecretFile::read(write_text(dir, "crlf", digits + "\r\n" + others + "\r\n")));
}

TEST_CASE("during a rotation a reader accepts datagrams sealed with either secret and no third", "[security][rotation]") {
    const Secret old_one = rotation_secret('o'), new_one = rotation_secret('n'), stranger = rotation_secret('x');
    const auto rotating = std::make_shared<const gecko::net::DatagramKey>(gecko::security::datagram_key(new_one, &old_one));
    gecko::net::DatagramGuard guard(rotating);
    const auto by_old = gecko::security::datagram_key(old_one), by_new = gecko::security::datagram_key(new_one);
    CHECK(check(guard, sealed_announce(by_new, 1)) == gecko::net::SealCheck::authentic);
    CHECK(check(guard, sealed_announce(by_old, 2)) == gecko::net::SealCheck::authentic);
    CHECK(check(guard, sealed_announce(by_old, 2)) == gecko::net::SealCheck::replayed);
    CHECK(check(guard, sealed_announce(gecko::security::datagram_key(stranger), 3)) == gecko::net::SealCheck::other_secret);
    // A forger who names the accepted secret's fingerprint without its key.
    auto forged = by_old;
    forged.mac_key = by_new.mac_key;
    CHECK(check(guard, sealed_announce(forged, 4)) == gecko::net::SealCheck::bad_mac);
    // A program outside the rotation knows only its own.
    gecko::net::DatagramGuard plain(std::make_shared<const gecko::net::DatagramKey>(by_new));
    CHECK(check(plain, sealed_announce(by_old, 5)) == gecko::net::SealCheck::other_secret);
}

TEST_CASE("during a rotation a CURVE server admits clients of either secret that name its server key",
          "[security][rotation][zap]") {
    zmq::context_t context(1);
    const Secret old_one = rotation_secret('o'), new_one = rotation_secret('n'), stranger = rotation_secret('x');
    // The server is still on the old secret and accepts the new (round 1).
    const auto server_keys = std::make_shared<const gecko::net::CurveKeys>(gecko::security::curve_keys("rot", old_one, &new_one));
    gecko::net::ZapAdmission admission(std::shared_ptr<zmq::context_t>(&context, [](zmq::context_t*) {}), *server_keys, "rot");
    gecko::net::SocketOptions server;
    server.curve = server_keys;
    server.curve_role = gecko::net::CurveRole::server;
    auto pub = gecko::net::make_socket(context, zmq::socket_type::pub, server);
    pub.bind("tcp://127.0.0.1:*");
    const std::string endpoint = pub.get(zmq::sockopt::last_endpoint);

    // A client that switched (round 2) names the old secret's server key by the server's fingerprint.
    auto subscribe = [&](const Secret& own, const Secret* accepted, const std::string& server_fingerprint) {
        gecko::net::SocketOptions o;
        o.curve = std::make_shared<const gecko::net::CurveKeys>(gecko::security::curve_keys("rot", own, accepted));
        o.curve_peer_fingerprint = server_fingerprint;
        auto s = gecko::net::make_socket(context, zmq::socket_type::sub, o);
        s.set(zmq::sockopt::subscribe, "");
        s.connect(endpoint);
        return s;
    };
    auto switched = subscribe(new_one, &old_one, old_one.fingerprint());
    auto unswitched = subscribe(old_one, &new_one, old_one.fingerprint());
    // A stranger who learnt the server key: ZAP refuses its client key.
    gecko::net::SocketOptions o;
    auto stranger_keys = gecko::security::curve_keys("rot", stranger);
    stranger_keys.server_public = server_keys->server_public;
    o.curve = std::make_shared<const gecko::net::CurveKeys>(stranger_keys);
    auto outsider = gecko::net::make_socket(context, zmq::socket_type::sub, o);
    outsider.set(zmq::sockopt::subscribe, "");
    outsider.connect(endpoint);

    int got_switched = 0, got_unswitched = 0, leaked = 0;
    const auto deadline = std::chrono::steady_clock::now() + 20s;
    while ((got_switched < 20 || got_unswitched < 20) && std::chrono::steady_clock::now() < deadline) {
        (void)pub.send(zmq::str_buffer("payload"), zmq::send_flags::dontwait);
        zmq::pollitem_t items[] = {{switched.handle(), 0, ZMQ_POLLIN, 0}, {unswitched.handle(), 0, ZMQ_POLLIN, 0}};
        zmq::poll(items, 2, 10ms);
        zmq::message_t m;
        while (switched.recv(m, zmq::recv_flags::dontwait)) ++got_switched;
        while (unswitched.recv(m, zmq::recv_flags::dontwait)) ++got_unswitched;
        while (outsider.recv(m, zmq::recv_flags::dontwait)) ++leaked;
    }
    CHECK(got_switched >= 20);
    CHECK(got_unswitched >= 20);
    CHECK(leaked == 0);
}
