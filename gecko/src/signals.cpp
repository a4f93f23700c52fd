#include "gecko/signals.hpp"

#include "shutdown_fd.hpp"

#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdint>

namespace gecko {
namespace {

std::atomic<bool> g_shutdown{false};  // a signal handler can only reach static state
// Readable once shutdown is requested: every wait of every node polls it, so
// a signal wakes spin() and receive() at once, whichever thread it lands on.
// Made at load time: the handler must not create it (not async-signal-safe).
const int g_shutdown_fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);

void raise_fd() noexcept {
    if (g_shutdown_fd < 0) return;
    const std::uint64_t one = 1;
    [[maybe_unused]] const auto n = ::write(g_shutdown_fd, &one, sizeof one);  // async-signal-safe
}

extern "C" void on_signal(int sig) {
    if (g_shutdown.exchange(true)) {  // second signal: fall back to the default action
        std::signal(sig, SIG_DFL);
        std::raise(sig);
        return;
    }
    raise_fd();
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

void request_shutdown() noexcept {
    if (!g_shutdown.exchange(true)) raise_fd();
}

void reset_shutdown() noexcept {
    g_shutdown.store(false);
    if (g_shutdown_fd < 0) return;
    std::uint64_t v;
    [[maybe_unused]] const auto n = ::read(g_shutdown_fd, &v, sizeof v);
}

namespace detail {
int shutdown_fd() noexcept { return g_shutdown_fd; }
}  // namespace detail

}  // namespace gecko
