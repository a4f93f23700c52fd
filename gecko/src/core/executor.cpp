#include "core/executor.hpp"

#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "gecko/error.hpp"

namespace gecko::detail {
namespace {

int make_eventfd() {
    const int fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (fd < 0) throw Error(Errc::transport, std::string("eventfd: ") + std::strerror(errno));
    return fd;
}

void signal_fd(int fd) noexcept {
    const std::uint64_t one = 1;
    [[maybe_unused]] auto n = ::write(fd, &one, sizeof one);
}

void drain(int fd) noexcept {
    std::uint64_t value;
    [[maybe_unused]] auto n = ::read(fd, &value, sizeof value);
}

}  // namespace

Executor::Executor() : wake_fd_(make_eventfd()) {}
Executor::~Executor() { ::close(wake_fd_); }

void Executor::add(std::shared_ptr<Dispatchable> entity) {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        entities_.push_back(std::move(entity));
    }
    wake();
}

void Executor::remove(const Dispatchable* entity) {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        entities_.erase(std::remove_if(entities_.begin(), entities_.end(),
                                       [&](const auto& e) { return e.get() == entity; }),
                        entities_.end());
    }
    wake();
}

void Executor::wake() noexcept { signal_fd(wake_fd_); }

std::size_t Executor::spin_once(std::chrono::milliseconds timeout) {
    std::lock_guard<std::mutex> spin_lock(spin_mutex_);
    std::vector<std::shared_ptr<Dispatchable>> entities;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        entities = entities_;
    }
    std::vector<zmq::pollitem_t> items;
    std::vector<std::size_t> owner;  // items[i] belongs to entities[owner[i]]
    items.push_back({nullptr, wake_fd_, ZMQ_POLLIN, 0});
    owner.push_back(SIZE_MAX);
    std::vector<PollHandle> handles;
    for (std::size_t i = 0; i < entities.size(); ++i) {
        handles.clear();
        entities[i]->poll_handles(handles);
        for (const auto& h : handles) {
            items.push_back({h.socket, h.fd, ZMQ_POLLIN, 0});
            owner.push_back(i);
        }
    }
    {
        // Hold every entity's socket while waiting on it: another thread may
        // only touch a socket that no one is polling.
        std::vector<std::unique_lock<std::recursive_mutex>> locks;
        locks.reserve(entities.size());
        for (auto& e : entities) locks.emplace_back(e->socket_mutex());
        poll_interruptible(items.data(), items.size(), timeout);
    }
    if (items[0].revents & ZMQ_POLLIN) drain(wake_fd_);
    std::vector<bool> ready(entities.size(), false);
    for (std::size_t i = 1; i < items.size(); ++i) {
        if (items[i].revents & ZMQ_POLLIN) ready[owner[i]] = true;
    }
    std::size_t callbacks = 0;
    for (std::size_t i = 0; i < entities.size(); ++i) {
        if (ready[i]) callbacks += entities[i]->dispatch();
    }
    return callbacks;
}

PendingConnections::PendingConnections() : fd_(make_eventfd()) {}
PendingConnections::~PendingConnections() { ::close(fd_); }

void PendingConnections::push(bool connect, const std::string& endpoint) {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        ops_.emplace_back(connect, endpoint);
        pending_.store(true, std::memory_order_release);
    }
    signal_fd(fd_);
}

void PendingConnections::drain_fd() noexcept { drain(fd_); }

}  // namespace gecko::detail
