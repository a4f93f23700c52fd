// SPDX-License-Identifier: Apache-2.0
// Loaned messages (gecko/loan.hpp) through the public API: written in place
// in shared memory, read in place by a MessageView, and the same calls over
// ZeroMQ where there is no shared memory.

#include <catch2/catch.hpp>

#include <gecko/gecko.hpp>
#include <gecko/msgs/sensors.hpp>
#include <gecko/msgs/std.hpp>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "unit/test_support.hpp"

using namespace std::chrono_literals;

namespace {

struct ImageOut {  // gecko.msgs.Image, pixels filled in place
    static constexpr const char* type_name = "gecko.msgs.Image";
    std::uint32_t width = 0, height = 0;
    std::string encoding;
    gecko::BytesToFill data;
    GECKO_MSG_FIELDS(width, height, encoding, data)
};

struct ImageRef {  // gecko.msgs.Image, pixels read in place
    static constexpr const char* type_name = "gecko.msgs.Image";
    std::uint32_t width = 0, height = 0;
    std::string encoding;
    gecko::BytesView data;
    GECKO_MSG_FIELDS(width, height, encoding, data)
};

gecko::Node node(const std::string& name, std::vector<std::string> transports) {
    return test::make_node(name, std::move(transports));
}

// The file /proc/self/maps says `p` lies in ("" if none, or anonymous memory).
std::string mapped_file_of(const void* p) {
    std::ifstream maps("/proc/self/maps");
    const auto at = reinterpret_cast<std::uintptr_t>(p);
    for (std::string line; std::getline(maps, line);) {
        unsigned long long lo = 0, hi = 0;
        if (std::sscanf(line.c_str(), "%llx-%llx", &lo, &hi) != 2 || at < lo || at >= hi) continue;
        const auto slash = line.find('/');
        return slash == std::string::npos ? "" : line.substr(slash);
    }
    return "";
}

void fill(std::uint8_t* p, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) p[i] = static_cast<std::uint8_t>(i * 7 + 3);
}

bool filled(const std::uint8_t* p, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i)
        if (p[i] != static_cast<std::uint8_t>(i * 7 + 3)) return false;
    return true;
}

}  // namespace

TEST_CASE("a loan filled in place is read in place from the publisher's segment", "[shm][loans]") {
    auto a = node("cam", {"shm"});
    auto b = node("viewer", {"shm"});
    const std::string segment = a.locators().front().substr(6);  // shm://<segment>
    b.connect(a.locators().front());
    auto camera = a.publisher<ImageOut>("camera");
    auto viewer = b.subscriber<ImageRef>("camera");
    REQUIRE(camera.wait_for_subscribers(1, 5s));

    const std::size_t bytes = 640 * 480 * 3;
    ImageOut image{640, 480, "rgb8", gecko::BytesToFill(bytes)};
    auto loan = camera.loan(bytes + 64);
    REQUIRE(loan);
    CHECK(loan.in_shared_memory());
    CHECK(loan.capacity() == bytes + 64);
    loan.encode(image);
    REQUIRE(image.data.data() != nullptr);
    CHECK(image.data.data() > loan.data());
    CHECK(image.data.data() + bytes == loan.data() + loan.size());  // the last field: the payload's end
    CHECK(mapped_file_of(image.data.data()) == "/dev/shm/" + segment);
    fill(image.data.data(), bytes);
    camera.publish(std::move(loan));
    CHECK_FALSE(loan);  // NOLINT(bugprone-use-after-move): published, empty

    auto view = viewer.receive_view(5s);
    REQUIRE(view);
    CHECK(view->width == 640);
    CHECK(view->encoding == "rgb8");
    REQUIRE(view->data.size() == bytes);
    CHECK(filled(view->data.data(), bytes));
    // Zero copy end to end: the subscriber's bytes are its mapping of the same segment.
    CHECK(mapped_file_of(view->data.data()) == "/dev/shm/" + segment);
    CHECK(camera.stats().loaned == 1);
    CHECK(camera.stats().messages == 1);

    // The same type name read into an owning vector: a full gecko.msgs.Image.
    auto full = b.subscriber<gecko::msgs::Image>("camera");
    REQUIRE(camera.wait_for_subscribers(2, 5s));
    ImageOut small{4, 2, "mono8", gecko::BytesToFill(8)};
    auto l2 = camera.loan(100);
    l2.encode(small);
    fill(small.data.data(), 8);
    camera.publish(std::move(l2));
    auto img = full.receive(5s);
    REQUIRE(img);
    CHECK(img->width == 4);
    REQUIRE(img->data.size() == 8);
    CHECK(filled(img->data.data(), 8));
}

TEST_CASE("loans over ZeroMQ and to subscribers on other transports work the same", "[shm][loans]") {
    SECTION("no shared memory at all: the loan is ordinary memory") {
        auto a = node("p", {"ipc"});
        auto b = node("s", {"ipc"});
        b.connect(a.locators().front());
        auto pub = a.publisher<gecko::msgs::String>("text");
        auto sub = b.subscriber<gecko::msgs::String>("text");
        REQUIRE(pub.wait_for_subscribers(1, 5s));
        auto loan = pub.loan(1000);
        CHECK_FALSE(loan.in_shared_memory());
        loan.encode(gecko::msgs::String{"over ipc"});
        pub.publish(std::move(loan));
        auto m = sub.receive(5s);
        REQUIRE(m);
        CHECK(m->data == "over ipc");
        CHECK(pub.stats().loaned == 0);
    }
    SECTION("a loan in shared memory reaches an ipc subscriber as a copy, and an shm one in place") {
        auto a = node("p", {"shm", "ipc"});
        auto over_ipc = node("s1", {"ipc"});
        auto over_shm = node("s2", {"shm"});
        for (const auto& l : a.locators()) {
            if (l.rfind("ipc://", 0) == 0) over_ipc.connect(l);
            if (l.rfind("shm://", 0) == 0) over_shm.connect(l);
        }
        auto pub = a.publisher<gecko::msgs::String>("text");
        auto s1 = over_ipc.subscriber<gecko::msgs::String>("text");
        auto s2 = over_shm.subscriber<gecko::msgs::String>("text");
        REQUIRE(pub.wait_for_subscribers(2, 5s));
        for (int i = 0; i < 3; ++i) {
            auto loan = pub.loan(100);
            CHECK(loan.in_shared_memory());
            loan.encode(gecko::msgs::String{"both " + std::to_string(i)});
            pub.publish(std::move(loan));
        }
        for (int i = 0; i < 3; ++i) {
            auto m1 = s1.receive(5s);
            auto m2 = s2.receive(5s);
            REQUIRE(m1);
            REQUIRE(m2);
            CHECK(m1->data == "both " + std::to_string(i));
            CHECK(m2->data == "both " + std::to_string(i));
        }
    }
}

TEST_CASE("loan misuse is a clear error, and an unpublished loan gives its memory back", "[shm][loans]") {
    auto a = node("p", {"shm"});
    auto pub = a.publisher<gecko::msgs::String>("text");
    auto other = a.publisher<gecko::msgs::String>("other");

    auto loan = pub.loan(16);
    CHECK_THROWS_WITH(loan.encode(gecko::msgs::String{std::string(100, 'x')}),
                      Catch::Contains("a loan of 16 bytes") && Catch::Contains("ask loan() for more"));
    gecko::Loan empty;
    CHECK_THROWS_WITH(pub.publish(std::move(empty)), Catch::Contains("the loan is empty"));
    auto theirs = other.loan(16);
    CHECK_THROWS_WITH(pub.publish(std::move(theirs)), Catch::Contains("another publisher's"));

    // Far more loans than the pool holds, each given back: nothing runs out.
    for (int i = 0; i < 2000; ++i) {
        auto l = pub.loan(200);
        REQUIRE(l.in_shared_memory());
        l.encode(gecko::msgs::String{"dropped"});
    }
    // Held at once, the lent share runs out and loans become ordinary memory.
    std::vector<gecko::Loan> held;
    for (int i = 0; i < 400; ++i) held.push_back(pub.loan(200));
    CHECK(held.front().in_shared_memory());
    CHECK_FALSE(held.back().in_shared_memory());
    held.clear();
    CHECK(pub.loan(200).in_shared_memory());

    // A plain publish of a BytesToFill field sends zeros.
    auto plain = a.publisher<ImageOut>("plain");
    auto seen = a.subscriber<gecko::msgs::Image>("plain");
    REQUIRE(plain.wait_for_subscribers(1, 5s));
    plain.publish(ImageOut{2, 2, "mono8", gecko::BytesToFill(4)});
    auto img = seen.receive(5s);
    REQUIRE(img);
    CHECK(img->data == std::vector<std::uint8_t>(4, 0));
}

TEST_CASE("a loan taken before its node closes stays writable, and publishing it then says closed", "[shm][loans]") {
    gecko::Loan loan;
    gecko::Publisher<gecko::msgs::String> pub;
    {
        auto a = node("p", {"shm"});
        pub = a.publisher<gecko::msgs::String>("text");
        loan = pub.loan(4096);
        REQUIRE(loan.in_shared_memory());
    }
    loan.encode(gecko::msgs::String{std::string(4000, 'y')});  // the mapping is still there
    CHECK_THROWS_AS(pub.publish(std::move(loan)), gecko::Error);
}

TEST_CASE("a loan above the compression threshold is compressed like any message", "[shm][loans]") {
    auto a = node("p", {"shm"});
    auto b = node("s", {"shm"});
    b.connect(a.locators().front());
    gecko::PublisherOptions po;
    po.compress_above = 64;
    auto pub = a.publisher<gecko::msgs::String>("text", po);
    auto sub = b.subscriber<gecko::msgs::String>("text");
    REQUIRE(pub.wait_for_subscribers(1, 5s));
    const std::string text(4000, 'c');
    auto loan = pub.loan(5000);
    REQUIRE(loan.in_shared_memory());
    loan.encode(gecko::msgs::String{text});
    pub.publish(std::move(loan));
    auto m = sub.receive(5s);
    REQUIRE(m);
    CHECK(m->data == text);
    CHECK(pub.stats().compressed == 1);
    CHECK(pub.stats().loaned == 0);
}
