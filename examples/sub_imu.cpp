// sub_imu: prints the IMU readings published on "imu" under a key.
// Run:  geckocore --key dalek &   ./build/bin/pub_imu --key dalek &
//       ./build/bin/sub_imu --key dalek [--count N]
#include <gecko/gecko.hpp>
#include <gecko/msgs/sensors.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

int main(int argc, char** argv) {
    gecko::install_signal_handlers();
    gecko::Node node(gecko::NodeOptions::from_args(argc, argv, "imu_monitor",
        "prints the IMU readings published on \"imu\" (--count N: stop after N)"));
    auto imu = node.subscriber<gecko::msgs::Imu>("imu");

    long count = -1;  // forever
    for (int i = 1; i + 1 < argc; ++i)
        if (std::string(argv[i]) == "--count") count = std::atol(argv[i + 1]);

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
