// Must NOT compile: a struct without type_name and GECKO_MSG_FIELDS used as a
// message. check_not_a_message.cmake expects one error line that says what to add.
#include <gecko/gecko.hpp>

struct Plain {
    double x = 0.0;
};

int main() {
    gecko::Node node(gecko::NodeOptions{});
    auto publisher = node.publisher<Plain>("plain");
    (void)publisher;
}
