#include <zmq.hpp>
void f(zmq::context_t& c) { zmq::socket_t s(c, zmq::socket_type::pub); }
