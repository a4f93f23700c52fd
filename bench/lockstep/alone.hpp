// SPDX-License-Identifier: Apache-2.0
#pragma once
// gecko_lockstep_bench --alone: the shared-memory lockstep stacks one at a
// time, each with only its two processes alive (this one and its peer),
// which is what a user with an otherwise idle robot computer gets. The
// rotation (main.cpp) keeps every stack's processes alive at once.
//
// Stacks: Gecko shm blocking, Gecko shm spin, iceoryx WaitSet, iceoryx
// busy-poll (when built with iceoryx), and the floor: a raw futex ping-pong
// over a shared mapping (the request's and reply's bytes copied in and out,
// each side sleeping in FUTEX_WAIT and woken with FUTEX_WAKE, nothing else).
//
// Each run visits every stack in both wake regimes: spread (every process
// may run on every CPU this program may use) and one CPU (every process of
// the pairing pinned to the first of them, as `taskset -c N` does). The
// order of stacks and regimes rotates from run to run. Per step it reports
// the round trip and what transfers between machines better than a time
// does: the CPU time and the times a thread was scheduled in, summed over
// both processes' threads (/proc/PID/task/*/schedstat).

#include "lockstep.hpp"

#include <string>

namespace lockstep {

struct AloneOptions {
    int reps = 5;
    int rounds = 2000;
    bool markdown = false;
    bool quick = false;
    std::string only;  ///< run only the stacks whose name contains this (e.g. for perf); empty: all
};

/// Runs the pairings and prints their table. Throws Stall on a stall.
void run_alone(const Scene& scene, const AloneOptions& options);

}  // namespace lockstep
