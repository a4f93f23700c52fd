// sub_imu: prints the IMU readings published on "imu" under a key.
// Run:  geckocore --key dalek &   ./build/bin/pub_imu --key dalek &
//       ./build/bin/sub_imu --key dalek [--count N]
#include <gecko/gecko.hpp>
#include <gecko/msgs/sensors.hpp>

#include <chrono>
#include <cstdio>

int main(int argc, char** argv) {
    gecko::OptionParser args("sub_imu", "prints the IMU readings published on topic \"imu\"");
    long count = -1;  // forever
    args.integer("--count", count, 1, 1000000000, "N", "stop after N readings");
    gecko::Node node(gecko::NodeOptions::from_args(argc, argv, args, "imu_monitor"));
    gecko::install_signal_handlers();
    auto imu = node.subscriber<gecko::msgs::Imu>("imu");

    for (long n = 0; gecko::ok() && n != count;) {
        gecko::MessageInfo info;
        auto msg = imu.receive(std::chrono::milliseconds(500), &info);
        if (!msg) continue;  // nothing yet: a publisher may not have started
        ++n;
        std::printf("imu #%llu accel=(%.3f, %.3f, %.3f) m/s^2  latency %.0f us\n",
                    static_cast<unsigned long long>(info.sequence), msg->accel.x, msg->accel.y, msg->accel.z,
                    (info.receive_time_ns - info.send_time_ns) / 1e3);
        std::fflush(stdout);
    }
}
