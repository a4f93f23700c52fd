// pub_lidar_compressed: publishes a 2,000-point lidar sweep at 20 Hz on "scan",
// zlib-compressing payloads above 4 KiB (subscribers decompress transparently).
// Run:  geckocore --key dalek &   ./build/bin/pub_lidar_compressed --key dalek
//       gecko echo --key dalek scan --count 1     (or any Subscriber<gecko::msgs::Lidar>)
#include <gecko/gecko.hpp>
#include <gecko/msgs/sensors.hpp>

#include <cmath>

int main(int argc, char** argv) {
    gecko::install_signal_handlers();
    gecko::Node node(gecko::NodeOptions::from_args(argc, argv, "lidar_driver",
        "publishes a compressed 2,000-point lidar sweep at 20 Hz on \"scan\""));

    gecko::PublisherOptions options;
    options.compress_above = 4096;  // bytes; the subscriber reads the flag, never guesses
    auto scan = node.publisher<gecko::msgs::Lidar>("scan", options);

    gecko::Rate rate(20.0);  // Hz
    for (int sweep = 0; gecko::ok(); ++sweep) {
        gecko::msgs::Lidar msg;
        msg.stamp_ns = gecko::now_ns();
        msg.frame_id = "laser";
        for (int i = 0; i < 2000; ++i) {
            msg.angles.push_back(static_cast<float>(i * 2 * M_PI / 2000));  // rad
            msg.ranges.push_back(i % 100 < 50 ? 4.0f : 2.5f);              // m: two walls
        }
        scan.publish(msg);
        if (sweep % 20 == 0) {
            const auto s = scan.stats();
            node.logger().info("sent " + std::to_string(s.messages) + " sweeps, " + std::to_string(s.bytes / (s.messages ? s.messages : 1)) +
                               " bytes each on the wire (" + std::to_string(msg.angles.size() * 10) + " before compression)");
        }
        rate.sleep();
    }
}
