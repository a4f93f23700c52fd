// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file gui_feed.hpp
/// The GUI endpoint's frames: at the GUI frequency, the latest image of the
/// image topic (as a JPEG), the robot's joints (SIM/joint_states) and the
/// latest text of the text topic, as one `#gui` message. A thread of its own
/// reads the topics and encodes; each frame is handed to the I/O thread,
/// where every GUI page keeps only the newest one it has not yet been sent.

#include <gecko/node.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace gecko::bridge::academy {

struct GuiFeedOptions {
    std::string image_topic = "academy/image";     ///< gecko.msgs.Image: what the GUI shows
    std::string text_topic = "academy/text";       ///< gecko.msgs.String: the text beside it
    std::string joints_topic = "sim/joint_states"; ///< gecko.msgs.JointState: the robot's pose
    int jpeg_quality = 80;
};

class GuiFeed {
public:
    /// `deliver(frame)` is called on the feed's thread with each frame.
    GuiFeed(Node& node, GuiFeedOptions options, std::function<void(std::string)> deliver);
    ~GuiFeed();
    GuiFeed(const GuiFeed&) = delete;
    GuiFeed& operator=(const GuiFeed&) = delete;

    /// Frames per second to make (the page's #freq "gui").
    void set_frequency(double hz);
    /// Frames are made only while someone looks.
    void set_watching(bool watching);
    /// Frames made per second, over the last second.
    double measured_frequency() const noexcept { return measured_.load(std::memory_order_relaxed); }
    std::uint64_t bad_images() const noexcept { return bad_images_.load(std::memory_order_relaxed); }

private:
    void run();
    std::string frame();

    Node& node_;
    GuiFeedOptions options_;
    std::function<void(std::string)> deliver_;
    std::mutex mutex_;
    std::condition_variable wake_;
    bool stopping_ = false, watching_ = false;
    double hz_ = 10.0;
    std::atomic<double> measured_{0.0};
    std::atomic<std::uint64_t> bad_images_{0};
    std::thread thread_;  // last: starts once the rest is built
};

}  // namespace gecko::bridge::academy
