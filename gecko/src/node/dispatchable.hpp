// SPDX-License-Identifier: Apache-2.0
#pragma once
// An entity whose work spin() runs: a callback subscriber, a server.
//
// One thread at a time. However many threads spin the node (two threads in
// spin_once(), spin_in_background() and spin()), an entity's callbacks run on
// one of them at a time, in arrival order: a thread that finds another one
// running them passes over it to other work (ROS's mutually exclusive
// callback group, one per entity). So the one T a typed callback decodes
// into, and a handler's state, are never used by two threads at once;
// different entities' callbacks may run in parallel.
//
// A thread that passed over an entity with work queued sleeps while the
// other runs it; should work be left when that one is done (it arrived
// meanwhile), the spinners are woken to look again (try_dispatch's `wake`).

#include <atomic>
#include <cstddef>

namespace gecko::detail {

class Dispatchable {
public:
    virtual ~Dispatchable() = default;

    /// Work is queued (whichever thread will run it). Cheap and thread-safe.
    virtual bool ready() const = 0;
    /// Runs what is queued (at most `budget` items); returns how many
    /// callbacks ran. Only ever called through try_dispatch().
    virtual std::size_t dispatch(std::size_t budget) = 0;

    /// Work is queued and no other thread runs this entity now.
    bool runnable() const {
        if (!ready()) return false;
        if (!running_.load()) return true;
        // Asked first, looked again after: either this thread sees the runner
        // done, or the runner sees the request when it is (both sequentially
        // consistent, as in Inbound's follower registration).
        wanted_.store(true);
        return !running_.load();
    }

    /// dispatch(), unless another thread runs this entity now: then 0 at
    /// once. Sets `wake` if work is left that another thread passed over
    /// while this one ran (the caller wakes the spinners).
    std::size_t try_dispatch(std::size_t budget, bool& wake) {
        if (running_.exchange(true)) {
            wanted_.store(true);
            return 0;
        }
        struct Release {
            Dispatchable& self;
            bool& wake;
            ~Release() {
                self.running_.store(false);
                if (self.wanted_.exchange(false) && self.ready()) wake = true;
            }
        } release{*this, wake};
        return dispatch(budget);
    }

private:
    std::atomic<bool> running_{false};
    mutable std::atomic<bool> wanted_{false};
};

}  // namespace gecko::detail
