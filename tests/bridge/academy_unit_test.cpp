// SPDX-License-Identifier: Apache-2.0
// The academy's pieces without sockets (bridge/src/academy): JPEG frames
// decoded back by libjpeg, the worker's order and its bound, child processes
// run with input, killed at their deadline, and their failures.
#include <catch2/catch.hpp>

#include "academy/academy.hpp"
#include "academy/jpeg.hpp"
#include "academy/process.hpp"
#include "academy/worker.hpp"

#include <cstdio>
#include <jpeglib.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <future>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

using namespace gecko::bridge::academy;

namespace {

struct Decoded {
    unsigned width = 0, height = 0, channels = 0;
    std::vector<unsigned char> pixels;
};

Decoded decode(const std::vector<std::uint8_t>& jpeg) {
    jpeg_decompress_struct info{};
    jpeg_error_mgr errors{};
    info.err = jpeg_std_error(&errors);
    jpeg_create_decompress(&info);
    jpeg_mem_src(&info, jpeg.data(), static_cast<unsigned long>(jpeg.size()));
    REQUIRE(jpeg_read_header(&info, TRUE) == JPEG_HEADER_OK);
    jpeg_start_decompress(&info);
    Decoded d{info.output_width, info.output_height, static_cast<unsigned>(info.output_components), {}};
    d.pixels.resize(static_cast<std::size_t>(d.width) * d.height * d.channels);
    while (info.output_scanline < info.output_height) {
        JSAMPROW row = d.pixels.data() + static_cast<std::size_t>(info.output_scanline) * d.width * d.channels;
        jpeg_read_scanlines(&info, &row, 1);
    }
    jpeg_finish_decompress(&info);
    jpeg_destroy_decompress(&info);
    return d;
}

gecko::msgs::Image solid(const std::string& encoding, unsigned channels, std::vector<std::uint8_t> pixel,
                         unsigned padding = 0) {
    gecko::msgs::Image image;
    image.width = 32;
    image.height = 16;
    image.encoding = encoding;
    image.step = image.width * channels + padding;
    image.data.assign(static_cast<std::size_t>(image.step) * image.height, 0);
    for (unsigned y = 0; y < image.height; ++y)
        for (unsigned x = 0; x < image.width; ++x)
            for (unsigned c = 0; c < channels; ++c) image.data[y * image.step + x * channels + c] = pixel[c];
    return image;
}

bool near(unsigned char a, int b) { return std::abs(static_cast<int>(a) - b) <= 8; }

}  // namespace

TEST_CASE("a JPEG frame decodes to the image's size and colour, whatever its channel order", "[bridge][academy]") {
    struct Case {
        std::string encoding;
        unsigned channels;
        std::vector<std::uint8_t> pixel;
    };
    // Each is red: r=220, g=30, b=40.
    const std::vector<Case> cases{{"rgb8", 3, {220, 30, 40}},
                                  {"bgr8", 3, {40, 30, 220}},
                                  {"rgba8", 4, {220, 30, 40, 255}},
                                  {"bgra8", 4, {40, 30, 220, 0}}};
    for (const auto& c : cases) {
        INFO(c.encoding);
        const auto d = decode(encode_jpeg(solid(c.encoding, c.channels, c.pixel, 5)));
        REQUIRE(d.width == 32);
        REQUIRE(d.height == 16);
        REQUIRE(d.channels == 3);
        const auto* middle = &d.pixels[(8 * 32 + 16) * 3];
        CHECK(near(middle[0], 220));
        CHECK(near(middle[1], 30));
        CHECK(near(middle[2], 40));
    }
    const auto grey = decode(encode_jpeg(solid("mono8", 1, {200})));
    REQUIRE(grey.channels == 1);
    CHECK(near(grey.pixels[8 * 32 + 16], 200));
}

TEST_CASE("an image the GUI cannot show is refused with the reason", "[bridge][academy]") {
    auto image = solid("rgb8", 3, {1, 2, 3});
    auto yuv = image;
    yuv.encoding = "yuv422";
    CHECK_THROWS_WITH(encode_jpeg(yuv), Catch::Contains("yuv422"));
    auto short_data = image;
    short_data.data.resize(short_data.data.size() - 1);
    CHECK_THROWS_WITH(encode_jpeg(short_data), Catch::Contains("short"));
    auto empty = image;
    empty.width = 0;
    CHECK_THROWS_AS(encode_jpeg(empty), std::invalid_argument);
    auto narrow_step = image;
    narrow_step.step = 10;
    CHECK_THROWS_AS(encode_jpeg(narrow_step), std::invalid_argument);
}

TEST_CASE("the worker runs jobs one at a time in order and refuses past its bound", "[bridge][academy]") {
    Worker worker;
    std::promise<void> release;
    auto gate = release.get_future().share();
    std::mutex mutex;
    std::vector<int> order;
    std::atomic<int> running{0}, most{0};
    auto job = [&](int n) {
        return [&, n] {
            const int now = ++running;
            int seen = most.load();
            while (now > seen && !most.compare_exchange_weak(seen, now)) {
            }
            gate.wait();
            {
                std::lock_guard<std::mutex> lock(mutex);
                order.push_back(n);
            }
            --running;
        };
    };
    REQUIRE(worker.post(job(0), 2));
    REQUIRE(worker.post(job(1), 2));
    // Job 0 waits or runs: a third job fits only if it runs (two wait then),
    // a fourth never while job 0 is held.
    std::promise<void> marker;
    auto marked = marker.get_future();
    const bool third = worker.post(job(2), 2);
    CHECK(!worker.post(job(3), 2));
    release.set_value();
    REQUIRE(worker.post([&] { marker.set_value(); }, 16));
    REQUIRE(marked.wait_for(std::chrono::seconds(30)) == std::future_status::ready);
    CHECK(most.load() == 1);
    std::vector<int> expected{0, 1};
    if (third) expected.push_back(2);
    CHECK(order == expected);
}

TEST_CASE("a child process gets its input and gives its output", "[bridge][academy]") {
    CHECK(run_with_input({"cat"}, "hello\n", std::chrono::seconds(30)) == "hello\n");
    const std::string big(1 << 20, 'x');  // more than a pipe holds both ways
    CHECK(run_with_input({"cat"}, big, std::chrono::seconds(30)).size() == big.size());
    CHECK(run_with_input({"sh", "-c", "echo $ACADEMY_TEST"}, "", std::chrono::seconds(30), {"ACADEMY_TEST=42"}) ==
          "42\n");
}

TEST_CASE("a child process that fails, does not exist or overruns is an error", "[bridge][academy]") {
    CHECK_THROWS_WITH(run_with_input({"sh", "-c", "exit 3"}, "", std::chrono::seconds(30)), Catch::Contains("failed"));
    CHECK_THROWS_WITH(run_with_input({"no-such-program-gecko"}, "", std::chrono::seconds(30)),
                      Catch::Contains("no-such-program-gecko"));
    const auto start = std::chrono::steady_clock::now();
    CHECK_THROWS_WITH(run_with_input({"sleep", "60"}, "", std::chrono::milliseconds(300)),
                      Catch::Contains("did not finish"));
    CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(30));  // killed, not waited for
}

TEST_CASE("a child process is ended with its process group", "[bridge][academy]") {
    ProcessOptions options;
    options.argv = {"sh", "-c", "sleep 60 & echo $! ; wait"};
    options.pipe_stdout = true;
    ChildProcess child(options);
    REQUIRE(child.running());
    FILE* out = fdopen(child.take_stdout(), "r");
    REQUIRE(out);
    long grandchild = 0;
    REQUIRE(std::fscanf(out, "%ld", &grandchild) == 1);
    std::fclose(out);
    child.end(std::chrono::milliseconds(5000));
    CHECK(!child.running());
    // The grandchild was in the group: it is gone (or a zombie of init's about to be reaped).
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    bool gone = false;
    while (!gone && std::chrono::steady_clock::now() < deadline) {
        std::FILE* stat = std::fopen(("/proc/" + std::to_string(grandchild) + "/stat").c_str(), "r");
        if (!stat) {
            gone = true;
            break;
        }
        char state = 0;
        std::fscanf(stat, "%*d %*s %c", &state);
        std::fclose(stat);
        gone = state == 'Z';
        if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(20));  // polls /proc: no event to await
    }
    CHECK(gone);
}

TEST_CASE("the academy's paths name its endpoints, and no other path does", "[bridge][academy]") {
    CHECK(endpoint_of_path("/academy/manager") == Endpoint::manager);
    CHECK(endpoint_of_path("/academy/code") == Endpoint::code);
    CHECK(endpoint_of_path("/academy/gui") == Endpoint::gui);
    CHECK(!endpoint_of_path("/"));
    CHECK(!endpoint_of_path("/academy"));
    CHECK(!endpoint_of_path("/academy/manager/x"));
}

TEST_CASE("a simulation command is split into words as a shell splits them, with nothing expanded", "[bridge][academy]") {
    using gecko::bridge::academy::split_command;
    std::vector<std::string> words;
    CHECK(split_command("gecko-sim --robots arm", words).empty());
    CHECK(words == std::vector<std::string>{"gecko-sim", "--robots", "arm"});
    CHECK(split_command("'/tmp/a clone/gecko-sim'  --name \"my sim\" a\\ b $HOME ''", words).empty());
    CHECK(words == std::vector<std::string>{"/tmp/a clone/gecko-sim", "--name", "my sim", "a b", "$HOME", ""});
    CHECK(split_command("gecko-sim 'open", words) == "a ' is not closed");
    CHECK(split_command("   ", words) == "empty command");
}
