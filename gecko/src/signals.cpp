#include "gecko/signals.hpp"

#include <atomic>
#include <csignal>

namespace gecko {
namespace {

std::atomic<bool> g_shutdown{false};  // a signal handler can only reach static state

extern "C" void on_signal(int sig) {
    if (g_shutdown.exchange(true)) {  // second signal: fall back to the default action
        std::signal(sig, SIG_DFL);
        std::raise(sig);
    }
}

}  // namespace

void install_signal_handlers() {
    struct sigaction action {};
    action.sa_handler = on_signal;
    sigemptyset(&action.sa_mask);
    sigaction(SIGINT, &action, nullptr);
    sigaction(SIGTERM, &action, nullptr);
}

bool ok() noexcept { return !g_shutdown.load(std::memory_order_relaxed); }
void request_shutdown() noexcept { g_shutdown.store(true); }
void reset_shutdown() noexcept { g_shutdown.store(false); }

}  // namespace gecko
