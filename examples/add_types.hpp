// The request and reply of the "add" service used by add_server and add_client.
// Any struct with a type name and GECKO_MSG_FIELDS is a message.
#pragma once
#include <gecko/msgs/codec.hpp>

struct AddRequest {
    static constexpr const char* type_name = "examples.AddRequest";
    double a = 0, b = 0;
    GECKO_MSG_FIELDS(a, b)
};

struct AddReply {
    static constexpr const char* type_name = "examples.AddReply";
    double sum = 0;
    GECKO_MSG_FIELDS(sum)
};
