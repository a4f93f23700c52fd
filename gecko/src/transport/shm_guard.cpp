// SPDX-License-Identifier: Apache-2.0
// The SIGBUS guard of segment mappings: see shm_guard.hpp.
#include "transport/shm_guard.hpp"

#include <signal.h>
#include <sys/mman.h>

#include <atomic>
#include <cerrno>
#include <mutex>

namespace gecko::detail::shm {
namespace {

constexpr std::size_t max_guarded = 4096;

struct Guarded {
    std::atomic<std::uintptr_t> base{0};
    std::atomic<std::size_t> size{0};
};

Guarded table[max_guarded];
std::atomic<std::uint64_t> faults{0};
struct sigaction previous {};

void on_sigbus(int sig, siginfo_t* info, void* context) {
    const auto at = reinterpret_cast<std::uintptr_t>(info->si_addr);
    for (auto& g : table) {
        const std::uintptr_t base = g.base.load(std::memory_order_acquire);
        if (base == 0 || at < base) continue;
        const std::size_t size = g.size.load(std::memory_order_acquire);
        if (at - base >= size) continue;
        const int saved = errno;
        void* p = ::mmap(reinterpret_cast<void*>(base), size, PROT_READ | PROT_WRITE,
                         MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
        errno = saved;
        if (p == MAP_FAILED) break;
        faults.fetch_add(1, std::memory_order_relaxed);
        return;  // the access is made again, on zeros
    }
    // Not a segment's: whoever handled SIGBUS before us does.
    if (previous.sa_flags & SA_SIGINFO) {
        if (previous.sa_sigaction) return previous.sa_sigaction(sig, info, context);
    } else if (previous.sa_handler != SIG_DFL && previous.sa_handler != SIG_IGN) {
        return previous.sa_handler(sig);
    }
    // Default: the access faults again on return and ends the process, as without us.
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    ::sigaction(SIGBUS, &dfl, nullptr);
}

void install() {
    struct sigaction sa {};
    sa.sa_sigaction = on_sigbus;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    ::sigaction(SIGBUS, &sa, &previous);
}

}  // namespace

bool guard(void* base, std::size_t size) noexcept {
    static std::once_flag once;
    std::call_once(once, install);
    const auto b = reinterpret_cast<std::uintptr_t>(base);
    for (auto& g : table) {
        std::uintptr_t expected = 0;
        if (g.base.load(std::memory_order_relaxed) != 0) continue;
        // Claimed with a sentinel no fault address matches until the size is there.
        if (!g.base.compare_exchange_strong(expected, ~std::uintptr_t{0}, std::memory_order_acq_rel)) continue;
        g.size.store(size, std::memory_order_release);
        g.base.store(b, std::memory_order_release);
        return true;
    }
    return false;
}

void unguard(void* base) noexcept {
    const auto b = reinterpret_cast<std::uintptr_t>(base);
    for (auto& g : table) {
        if (g.base.load(std::memory_order_acquire) != b) continue;
        g.base.store(0, std::memory_order_release);
        return;
    }
}

std::uint64_t guarded_faults() noexcept { return faults.load(std::memory_order_relaxed); }

}  // namespace gecko::detail::shm
