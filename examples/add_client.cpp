// add_client: calls the "add" service a few times; every call has a timeout.
// Run:  geckocore --key dalek &   ./build/bin/add_server --key dalek &   ./build/bin/add_client --key dalek
#include <gecko/gecko.hpp>

#include <chrono>
#include <cstdio>

#include "add_types.hpp"

int main(int argc, char** argv) {
    gecko::Node node(gecko::NodeOptions::from_args(argc, argv, "add_client",
        "calls the \"add\" service a few times"));
    auto add = node.client<AddRequest, AddReply>("add");
    add.wait_for_server(std::chrono::seconds(5));  // discovery connects us in the background
    for (int i = 1; i <= 3; ++i) {
        try {
            const AddReply reply = add.call(AddRequest{double(i), 0.5}, std::chrono::milliseconds(500));
            std::printf("%d + 0.5 = %g\n", i, reply.sum);
        } catch (const gecko::Error& e) {  // timeout, no server, remote failure...
            std::printf("call failed (%s): %s\n", gecko::to_string(e.code()), e.what());
            return 1;
        }
    }
}
