#pragma once
// Runs callbacks: waits on every callback entity's socket at once and lets
// each ready one dispatch. Entities are subscribers with callbacks and
// service servers.

#include <atomic>
#include <chrono>
#include <string>
#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

#include "transport/link.hpp"

namespace gecko::detail {

class Dispatchable {
public:
    virtual ~Dispatchable() = default;
    /// Appends what to wait on.
    virtual void poll_handles(std::vector<PollHandle>& out) = 0;
    /// Guards the entity's sockets; held by the executor while it waits on them.
    virtual std::recursive_mutex& socket_mutex() = 0;
    /// Handles whatever is ready without blocking; returns the callbacks run.
    virtual std::size_t dispatch() = 0;
};

class Executor {
public:
    Executor();
    ~Executor();
    Executor(const Executor&) = delete;
    Executor& operator=(const Executor&) = delete;

    void add(std::shared_ptr<Dispatchable> entity);
    void remove(const Dispatchable* entity);
    /// Interrupts a wait in spin_once (new entity, shutdown, pending connects).
    void wake() noexcept;
    std::size_t spin_once(std::chrono::milliseconds timeout);

private:
    std::mutex mutex_;
    std::vector<std::shared_ptr<Dispatchable>> entities_;
    std::mutex spin_mutex_;  // one spinner at a time
    int wake_fd_ = -1;
};

/// Connects and disconnects asked for by other threads (discovery), applied
/// by the thread that owns the socket. Writing the event fd wakes that thread.
class PendingConnections {
public:
    PendingConnections();
    ~PendingConnections();
    PendingConnections(const PendingConnections&) = delete;
    PendingConnections& operator=(const PendingConnections&) = delete;

    void push(bool connect, const std::string& endpoint);
    /// Applies queued operations with `apply(connect, endpoint)`.
    template <class F>
    void apply(F&& apply) {
        if (!pending_.load(std::memory_order_acquire)) return;
        std::vector<std::pair<bool, std::string>> ops;
        {
            std::lock_guard<std::mutex> lock(mutex_);
            ops.swap(ops_);
            pending_.store(false, std::memory_order_release);
        }
        drain_fd();
        for (auto& [connect, endpoint] : ops) apply(connect, endpoint);
    }
    int fd() const noexcept { return fd_; }

private:
    void drain_fd() noexcept;
    std::mutex mutex_;
    std::vector<std::pair<bool, std::string>> ops_;
    std::atomic<bool> pending_{false};
    int fd_ = -1;
};

}  // namespace gecko::detail
