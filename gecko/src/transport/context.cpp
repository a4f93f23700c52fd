#include "transport/context.hpp"

#include <mutex>

namespace gecko::detail {

std::shared_ptr<zmq::context_t> shared_context() {
    static std::mutex mutex;
    static std::weak_ptr<zmq::context_t> current;
    std::lock_guard<std::mutex> lock(mutex);
    auto context = current.lock();
    if (!context) {
        context = std::make_shared<zmq::context_t>(1);
        context->set(zmq::ctxopt::blocky, false);  // close never waits for unsent messages
        current = context;
    }
    return context;
}

}  // namespace gecko::detail
