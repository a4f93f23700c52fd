// pub_imu: publishes a simulated IMU reading at 100 Hz on topic "imu".
// Run:  geckocore --key dalek &
//       ./build/bin/pub_imu --key dalek [--count N]     (and sub_imu in another terminal)
#include <gecko/gecko.hpp>
#include <gecko/msgs/sensors.hpp>

#include <cmath>

int main(int argc, char** argv) {
    gecko::OptionParser args("pub_imu", "publishes a simulated IMU reading at 100 Hz on topic \"imu\"");
    long count = -1;  // forever
    args.integer("--count", count, 1, 1000000000, "N", "stop after N readings");
    gecko::Node node(gecko::NodeOptions::from_args(argc, argv, args, "imu_driver"));
    gecko::install_signal_handlers();
    auto imu = node.publisher<gecko::msgs::Imu>("imu");

    gecko::Rate rate(100.0);  // Hz
    for (long n = 0; gecko::ok() && n != count; ++n) {
        gecko::msgs::Imu msg;
        msg.stamp_ns = gecko::now_ns();
        msg.frame_id = "imu_link";
        msg.accel = {0.1 * std::sin(n * 0.01), 0.0, 9.81};  // m/s²
        msg.gyro = {0.0, 0.0, 0.2};                           // rad/s
        imu.publish(msg);
        rate.sleep();
    }
}
