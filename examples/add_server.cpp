// add_server: a service that adds two numbers.
// Run:  geckocore --key dalek &   ./build/bin/add_server --key dalek &   ./build/bin/add_client --key dalek
#include <gecko/gecko.hpp>

#include "add_types.hpp"

int main(int argc, char** argv) {
    gecko::install_signal_handlers();
    gecko::Node node(gecko::NodeOptions::from_args(argc, argv, "adder", "serves \"add\": adds two numbers"));
    auto service = node.service<AddRequest, AddReply>("add", [](const AddRequest& request) {
        return AddReply{request.a + request.b};
    });
    node.logger().info("serving 'add'; Ctrl-C to stop");
    node.spin();  // handlers run here until SIGINT/SIGTERM
}
