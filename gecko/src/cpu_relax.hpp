// SPDX-License-Identifier: Apache-2.0
#pragma once
// One turn of a busy-wait loop: tells the CPU so (the other hyperthread gets
// the core, and the loop's exit does not pay for a mispredicted branch).

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace gecko::detail {

inline void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
    _mm_pause();
#elif defined(__aarch64__)
    asm volatile("yield");
#endif
}

}  // namespace gecko::detail
