// SPDX-License-Identifier: Apache-2.0
#include "node/reactor.hpp"

#include <pthread.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "gecko/error.hpp"

namespace gecko::detail {

Reactor::Reactor() {
    epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
    wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (epoll_fd_ < 0 || wake_fd_ < 0) throw Error(Errc::transport, std::string("reactor: ") + std::strerror(errno));
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = wake_fd_;
    ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &ev);
}

Reactor::~Reactor() {
    stop();
    ::close(wake_fd_);
    ::close(epoll_fd_);
}

void Reactor::start(std::function<Clock::time_point(Clock::time_point)> tick) {
    tick_ = std::move(tick);
    // The thread inherits the mask in force when it is created: block every
    // signal for it, then restore ours.
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    thread_ = std::thread([this] { run(); });
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

void Reactor::stop() {
    {
        std::lock_guard<std::mutex> lock(commands_mutex_);
        stopping_ = true;
    }
    wake();
    if (thread_.joinable()) thread_.join();
}

void Reactor::post(std::function<void()> command) {
    {
        std::lock_guard<std::mutex> lock(commands_mutex_);
        commands_.push_back(std::move(command));
    }
    wake();
}

void Reactor::wake() noexcept {
    const std::uint64_t one = 1;
    [[maybe_unused]] auto n = ::write(wake_fd_, &one, sizeof one);
}

void Reactor::watch(int fd, std::function<void()> on_ready, bool edge) {
    if (fd < 0) return;
    const bool known = watches_.count(fd) > 0;
    watches_[fd] = std::move(on_ready);
    epoll_event ev{};
    ev.events = EPOLLIN | (edge ? EPOLLET : 0u);
    ev.data.fd = fd;
    ::epoll_ctl(epoll_fd_, known ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, fd, &ev);
}

void Reactor::unwatch(int fd) {
    if (watches_.erase(fd)) ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
}

void Reactor::run_commands() {
    std::vector<std::function<void()>> todo;
    {
        std::lock_guard<std::mutex> lock(commands_mutex_);
        todo.swap(commands_);
    }
    for (auto& command : todo) command();
}

void Reactor::run() {
    epoll_event events[16];
    for (;;) {
        {
            std::lock_guard<std::mutex> lock(commands_mutex_);
            if (stopping_) break;
        }
        run_commands();
        const auto now = Clock::now();
        const auto next = tick_ ? tick_(now) : now + std::chrono::seconds(1);
        const auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(next - Clock::now()).count() + 1;
        const int n = ::epoll_wait(epoll_fd_, events, 16, static_cast<int>(std::max<long long>(0, std::min<long long>(wait, 1000))));
        for (int i = 0; i < n; ++i) {
            const int fd = events[i].data.fd;
            if (fd == wake_fd_) {
                std::uint64_t v;
                [[maybe_unused]] auto r = ::read(wake_fd_, &v, sizeof v);
                continue;
            }
            const auto it = watches_.find(fd);
            if (it != watches_.end()) {
                auto handler = it->second;  // a handler may unwatch itself
                handler();
            }
        }
    }
    run_commands();  // nothing posted before stop() is lost
}

}  // namespace gecko::detail
