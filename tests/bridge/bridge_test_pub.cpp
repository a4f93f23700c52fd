// SPDX-License-Identifier: Apache-2.0
// A publisher for the bridge's tests and benchmark: gecko.msgs.Imu or
// gecko.msgs.Image on a topic at a rate, each stamped with the time it is
// published (stamp_ns, ns since the epoch), so that a WebSocket client can
// tell how long the message took to reach it.
//   bridge_test_pub --key K --topic imu --rate 1000
//   bridge_test_pub --key K --topic camera --image 1920x1080 --rate 30
#include <gecko/gecko.hpp>
#include <gecko/msgs/sensors.hpp>

#include <cstdio>

int main(int argc, char** argv) {
    gecko::OptionParser args("bridge_test_pub", "publishes stamped IMU readings or images at a rate");
    std::string topic = "imu", image;
    double rate_hz = 1000;
    long count = -1;
    args.text("--topic", topic, "NAME", "topic (default imu)");
    args.number("--rate", rate_hz, 0.1, 100000, "HZ", "messages per second (default 1000)");
    args.text("--image", image, "WxH", "publish rgb8 images of this size instead of IMU readings");
    args.integer("--count", count, 1, 1000000000, "N", "stop after N messages");
    gecko::Node node(gecko::NodeOptions::from_args(argc, argv, args, "bridge_test_pub"));
    gecko::install_signal_handlers();
    gecko::Rate rate(rate_hz);
    unsigned width = 0, height = 0;
    if (!image.empty() && std::sscanf(image.c_str(), "%ux%u", &width, &height) != 2) {
        std::fprintf(stderr, "bridge_test_pub: --image wants WxH, e.g. 640x480\n");
        return 2;
    }
    std::printf("bridge_test_pub: publishing on %s\n", topic.c_str());
    std::fflush(stdout);
    if (width) {
        auto pub = node.publisher<gecko::msgs::Image>(topic);
        gecko::msgs::Image msg;
        msg.frame_id = "camera";
        msg.width = width;
        msg.height = height;
        msg.encoding = "rgb8";
        msg.step = width * 3;
        msg.data.resize(std::size_t(width) * height * 3);
        for (long n = 0; gecko::ok() && n != count; ++n) {
            for (std::size_t i = 0; i < msg.data.size(); i += 4096) msg.data[i] = static_cast<std::uint8_t>(n + i);
            msg.stamp_ns = gecko::now_ns();
            pub.publish(msg);
            rate.sleep();
        }
    } else {
        auto pub = node.publisher<gecko::msgs::Imu>(topic);
        gecko::msgs::Imu msg;
        msg.frame_id = "imu_link";
        for (long n = 0; gecko::ok() && n != count; ++n) {
            msg.accel = {static_cast<double>(n % 1000) / 1000.0, 0.0, 9.81};
            msg.stamp_ns = gecko::now_ns();
            pub.publish(msg);
            rate.sleep();
        }
    }
}
