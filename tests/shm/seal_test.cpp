// SPDX-License-Identifier: Apache-2.0
// A segment's header sealed under the key's secret (docs/SECURITY.md §8): in
// a secured key a reader maps only segments sealed with the key's subkey 4,
// says why it refuses the others and counts them; a plain reader maps any.
// The seal covers the header's fields and the segment's name, so a copy of
// a sealed segment under another name, or a header with one field changed,
// is refused.

#include <catch2/catch.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <cstddef>
#include <fstream>
#include <iterator>
#include <memory>

#include "rig.hpp"
#include "shm_support.hpp"

using namespace shmtest;

namespace {

std::shared_ptr<const shm::SealKey> seal_key(std::uint8_t fill) {
    shm::SealKey k;
    k.fill(fill);
    return std::make_shared<const shm::SealKey>(k);
}

PortOptions sealed_with(std::shared_ptr<const shm::SealKey> key) {
    PortOptions o = options();
    o.segment_key = std::move(key);
    return o;
}

std::uint64_t unsealed(InPort& in) {
    ShmInInfo i;
    REQUIRE(shm_in_info(in, i));
    return i.unsealed;
}

// Copies the segment at `from` to `to` in the same directory, mode 0600.
void copy_segment(const std::string& from, const std::string& to) {
    std::ifstream in(from, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    REQUIRE(bytes.size() > 4096);
    const int fd = ::open(to.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    REQUIRE(fd >= 0);
    REQUIRE(::write(fd, bytes.data(), bytes.size()) == static_cast<ssize_t>(bytes.size()));
    ::close(fd);
}

}  // namespace

TEST_CASE("a secured reader maps a segment sealed with its key's secret and refuses others, saying why",
          "[shm][security]") {
    Dir dir;
    auto transport = make_shm_transport(config(dir.path()));
    const auto a = seal_key(0xa1), b = seal_key(0xb2);
    auto sealed_out = transport->open_out(sealed_with(a));
    auto plain_out = transport->open_out(options(0x5eee));
    const std::string sealed_segment = sealed_out->locators().front(), plain_segment = plain_out->locators().front();

    auto same = transport->open_in(sealed_with(a));
    std::string why;
    CHECK(same->connect(sealed_segment, why));
    CHECK(unsealed(*same) == 0);
    // ...and the link carries frames.
    const auto ch = channel("sealed");
    same->subscribe(interest(ch, 1));
    sealed_out->drain_events([](const PortEvent&) {});
    auto f = frame(ch, 100, 0x42, 7);
    sealed_out->send(f);
    Frame got;
    REQUIRE(same->take(got));
    CHECK(got.size() == 100);

    auto other = transport->open_in(sealed_with(b));
    CHECK_FALSE(other->connect(sealed_segment, why));
    CHECK(why.find("is sealed with another secret than this node's") != std::string::npos);
    CHECK(unsealed(*other) == 1);

    CHECK_FALSE(same->connect(plain_segment, why));
    CHECK(why.find("is not sealed: its publisher holds no secret of this key") != std::string::npos);
    CHECK(unsealed(*same) == 1);

    // A reader without a secret does not look at seals (a plain key).
    auto plain_in = transport->open_in(options());
    CHECK(plain_in->connect(sealed_segment, why));
    CHECK(plain_in->connect(plain_segment, why));
}

TEST_CASE("a sealed segment copied under another name, or with a header field changed, is refused", "[shm][security]") {
    Dir dir;
    auto transport = make_shm_transport(config(dir.path()));
    const auto key = seal_key(0x5c);
    auto out = transport->open_out(sealed_with(key));
    const std::string name = out->locators().front().substr(6);
    auto in = transport->open_in(sealed_with(key));
    std::string why;

    // Another name: the seal binds the name, so the copy is not the publisher's segment.
    copy_segment(dir.path() + "/" + name, dir.path() + "/gecko-copied-segment");
    CHECK_FALSE(in->connect("shm://gecko-copied-segment", why));
    CHECK(why.find("is sealed with another secret") != std::string::npos);

    CHECK(unsealed(*in) == 1);

    // Any field changed under the right name: one byte of the session word.
    const int fd = ::open((dir.path() + "/" + name).c_str(), O_RDONLY | O_CLOEXEC);
    REQUIRE(fd >= 0);
    shm::HeaderCopy h;
    REQUIRE(shm::read_header(fd, h));
    ::close(fd);
    CHECK(shm::check_seal(h, name, *key) == shm::SealCheck::sealed);
    h.sealed_bytes[offsetof(shm::Header, session) - shm::sealed_from] ^= 0x01;
    CHECK(shm::check_seal(h, name, *key) == shm::SealCheck::other_secret);

    // The original still maps.
    CHECK(in->connect("shm://" + name, why));
}
