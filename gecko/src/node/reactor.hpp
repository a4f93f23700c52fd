// SPDX-License-Identifier: Apache-2.0
#pragma once
// A node's one internal thread. It waits (epoll) on the file descriptors it is
// given, runs what other threads post to it, and calls its services' tick()
// when they are due. It never runs user code and never holds a lock while it
// calls out. Signals are blocked on it: SIGINT reaches the application's threads.

#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

namespace gecko::detail {

class Reactor {
public:
    using Clock = std::chrono::steady_clock;

    Reactor();
    ~Reactor();  ///< stops and joins
    Reactor(const Reactor&) = delete;
    Reactor& operator=(const Reactor&) = delete;

    /// Starts the thread; `tick(now)` runs on every wake-up and returns when it
    /// wants to run next.
    void start(std::function<Clock::time_point(Clock::time_point now)> tick);
    /// Stops the thread and waits for it (never call it from the thread itself).
    void stop();

    /// Runs `command` on the reactor thread, soon, in posting order. From any thread.
    void post(std::function<void()> command);
    /// Makes the thread run its tick now. From any thread; async-signal-unsafe.
    void wake() noexcept;

    /// Calls `on_ready` on the reactor thread when `fd` becomes readable
    /// (`edge`: only on new input, as ZeroMQ's ZMQ_FD wants). Replaces an
    /// earlier watch of the same fd. From the reactor thread or before start().
    void watch(int fd, std::function<void()> on_ready, bool edge);
    void unwatch(int fd);

    bool on_reactor_thread() const noexcept { return std::this_thread::get_id() == thread_.get_id(); }

private:
    void run();
    void run_commands();

    int epoll_fd_ = -1;
    int wake_fd_ = -1;
    std::thread thread_;
    bool stopping_ = false;  // guarded by commands_mutex_
    std::function<Clock::time_point(Clock::time_point)> tick_;
    std::mutex commands_mutex_;
    std::vector<std::function<void()>> commands_;
    std::map<int, std::function<void()>> watches_;  // reactor thread only (or before start)
};

}  // namespace gecko::detail
