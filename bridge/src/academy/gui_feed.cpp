// SPDX-License-Identifier: Apache-2.0
#include "academy/gui_feed.hpp"

#include "academy/jpeg.hpp"
#include "json_text.hpp"

#include <gecko/msgs/sensors.hpp>
#include <gecko/msgs/std.hpp>
#include <gecko/wire/base64.hpp>


#include <iostream>
#include <optional>

namespace gecko::bridge::academy {

using nlohmann::json;

GuiFeed::GuiFeed(Node& node, GuiFeedOptions options, std::function<void(std::string)> deliver)
    : node_(node), options_(std::move(options)), deliver_(std::move(deliver)), thread_([this] { run(); }) {}

GuiFeed::~GuiFeed() {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        stopping_ = true;
    }
    wake_.notify_all();
    thread_.join();
}

void GuiFeed::set_frequency(double hz) {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        hz_ = hz;
    }
    wake_.notify_all();
}

void GuiFeed::set_watching(bool watching) {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        watching_ = watching;
    }
    wake_.notify_all();
}

void GuiFeed::run() {
    auto images = node_.subscriber<gecko::msgs::Image>(options_.image_topic, SubscriberOptions::latest_only());
    auto texts = node_.subscriber<gecko::msgs::String>(options_.text_topic, SubscriberOptions::latest_only());
    auto joints = node_.subscriber<gecko::msgs::JointState>(options_.joints_topic, SubscriberOptions::latest_only());
    std::optional<gecko::msgs::JointState> pose;
    std::string text, jpeg_base64;
    std::uint32_t width = 0, height = 0;
    std::uint64_t frames = 0, window_frames = 0;
    auto window_start = std::chrono::steady_clock::now();
    auto next = window_start;
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
        const auto period = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
            std::chrono::duration<double>(1.0 / hz_));
        next += period;
        const auto now = std::chrono::steady_clock::now();
        if (next < now) next = now;  // late: no burst to catch up
        wake_.wait_until(lock, next, [this] { return stopping_; });
        if (stopping_) return;
        if (!watching_) {
            measured_.store(0.0, std::memory_order_relaxed);
            wake_.wait(lock, [this] { return stopping_ || watching_; });
            if (stopping_) return;
            window_start = next = std::chrono::steady_clock::now();
            window_frames = 0;
            continue;
        }
        lock.unlock();
        // The newest of each topic (a latest-only queue: at most one waits).
        gecko::msgs::Image image;
        if (images.receive(image, std::chrono::milliseconds(0))) {
            try {
                const auto jpeg = encode_jpeg(image, options_.jpeg_quality);
                jpeg_base64.clear();
                gecko::wire::append_base64(jpeg_base64, jpeg.data(), jpeg.size());
                width = image.width;
                height = image.height;
            } catch (const std::exception& e) {
                if (bad_images_.fetch_add(1, std::memory_order_relaxed) == 0)
                    std::clog << "gecko-bridge: academy GUI: " << options_.image_topic << ": " << e.what()
                              << " (shown once; counted)\n";
            }
        }
        if (auto t = texts.receive(std::chrono::milliseconds(0))) text = std::move(t->data);
        if (auto j = joints.receive(std::chrono::milliseconds(0))) pose = std::move(*j);

        json frame{{"frame", ++frames}, {"text", text}};
        if (!jpeg_base64.empty()) frame["shape"] = {height, width, 3};
        if (pose) frame["pose"] = {{"names", pose->names}, {"position", pose->position}};
        std::string message = "#gui" + json_text(frame);
        if (!jpeg_base64.empty()) {  // spliced in: base64 needs no escaping, and the image is most of the frame
            message.pop_back();     // the object's closing brace
            message.reserve(message.size() + jpeg_base64.size() + 12);
            message += ",\"image\":\"";
            message += jpeg_base64;
            message += "\"}";
        }
        deliver_(std::move(message));

        ++window_frames;
        const auto elapsed = std::chrono::steady_clock::now() - window_start;
        if (elapsed >= std::chrono::seconds(1)) {
            measured_.store(static_cast<double>(window_frames) / std::chrono::duration<double>(elapsed).count(),
                            std::memory_order_relaxed);
            window_frames = 0;
            window_start += elapsed;
        }
        lock.lock();
    }
}

}  // namespace gecko::bridge::academy
