// Publishes one message to itself (no discovery): proves headers, library and
// dependencies all come from the installed package.
#include <gecko/gecko.hpp>
#include <gecko/msgs/sensors.hpp>

#include <cstdio>

int main() {
    gecko::NodeOptions options;
    options.key = "package-test";
    options.discovery = false;
    gecko::Node node(options);
    auto pub = node.publisher<gecko::msgs::Imu>("imu");
    auto sub = node.subscriber<gecko::msgs::Imu>("imu");
    // Generous bounds: CI runs this beside other tests on two cores.
    if (!pub.wait_for_subscribers(1, std::chrono::seconds(20))) {
        std::fprintf(stderr, "consumer: no subscriber connected within 20 s\n");
        return 1;
    }
    gecko::msgs::Imu msg;
    msg.accel.z = 9.81;
    pub.publish(msg);
    auto got = sub.receive(std::chrono::seconds(20));
    if (!got) {
        std::fprintf(stderr, "consumer: no message within 20 s\n");
        return 1;
    }
    if (!(*got == msg)) {
        std::fprintf(stderr, "consumer: received message differs from the one sent\n");
        return 1;
    }
    std::printf("consumer: installed gecko works\n");
    return 0;
}
