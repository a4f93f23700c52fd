// Publishes one message to itself over inproc: proves headers, library and
// dependencies all come from the installed package.
#include <gecko/gecko.hpp>
#include <gecko/msgs/sensors.hpp>

int main() {
    gecko::NodeOptions options;
    options.key = "package-test";
    options.discovery = false;
    gecko::Node node(options);
    gecko::PublisherOptions po;
    po.endpoints = {"inproc://imu"};
    auto pub = node.publisher<gecko::msgs::Imu>("imu", po);
    gecko::SubscriberOptions so;
    so.endpoints = {"inproc://imu"};
    auto sub = node.subscriber<gecko::msgs::Imu>("imu", so);
    if (!pub.wait_for_subscribers(1, std::chrono::seconds(2))) return 1;
    gecko::msgs::Imu msg;
    msg.accel.z = 9.81;
    pub.publish(msg);
    auto got = sub.receive(std::chrono::seconds(2));
    return got && *got == msg ? 0 : 1;
}
