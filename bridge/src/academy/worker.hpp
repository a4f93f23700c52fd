// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file worker.hpp
/// One thread that runs jobs one at a time, in the order given: the
/// academy's blocking work (service calls, starting a simulation, checking
/// code) off the bridge's I/O thread, never two of a kind interleaved.

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace gecko::bridge::academy {

class Worker {
public:
    Worker() : thread_([this] { run(); }) {}
    ~Worker() {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            stopping_ = true;
        }
        wake_.notify_all();
        thread_.join();
    }
    Worker(const Worker&) = delete;
    Worker& operator=(const Worker&) = delete;

    /// Queues `job` unless `max_waiting` jobs already wait (then false). A
    /// running job does not count as waiting.
    bool post(std::function<void()> job, std::size_t max_waiting) {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            if (stopping_ || jobs_.size() >= max_waiting) return false;
            jobs_.push_back(std::move(job));
        }
        wake_.notify_one();
        return true;
    }

private:
    void run() {
        std::unique_lock<std::mutex> lock(mutex_);
        for (;;) {
            wake_.wait(lock, [this] { return stopping_ || !jobs_.empty(); });
            if (stopping_) return;  // jobs not started are dropped: their askers are gone with the bridge
            auto job = std::move(jobs_.front());
            jobs_.pop_front();
            lock.unlock();
            job();
            lock.lock();
        }
    }

    std::mutex mutex_;
    std::condition_variable wake_;
    std::deque<std::function<void()>> jobs_;
    bool stopping_ = false;
    std::thread thread_;  // last: starts once the rest is built
};

}  // namespace gecko::bridge::academy
