// SPDX-License-Identifier: Apache-2.0
#pragma once
// What the tests of gecko record and play share: sample messages, a
// recorder started and awaited, a file's messages by topic, its last
// gecko.drops record, and a program run on a pseudo-terminal (for what
// record and play do only on a terminal: progress lines, space to pause).
#include <catch2/catch.hpp>

#include <gecko/bag/gecko_format.hpp>
#include <gecko/bag/reader.hpp>
#include <gecko/msgs/sensors.hpp>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "bag_files.hpp"
#include "tools/key_fixture.hpp"

extern char** environ;

namespace gecko::bag_test {

using namespace std::chrono_literals;

inline msgs::Imu imu_sample(int i) {
    msgs::Imu m;
    m.stamp_ns = 1000 + i;
    m.frame_id = "imu_link";
    m.accel = {0.1 * i, 0.0, 9.81};
    return m;
}

inline msgs::JointState joints_sample(int i) {
    msgs::JointState j;
    j.stamp_ns = 2000 + i;
    j.names = {"a", "b"};
    j.position = {0.01 * i, -0.01 * i};
    return j;
}

// The recorder's start line says it subscribed and read the key's directory: publishers started after it link to it.
inline test::Process start_recorder(const tools_test::Key& k, const std::vector<std::string>& args) {
    auto o = k.options(tools_test::Stderr::merge);
    test::Process p = test::Process::spawn(GECKO_CLI_PATH, args, o);
    const auto line = p.wait_for_line("gecko record: recording", 20s);
    INFO(p.output());
    REQUIRE(line);
    return p;
}

// Messages of a file by topic (msgpack channels): payloads in order.
inline std::map<std::string, std::vector<Bytes>> by_topic(const std::string& path, std::uint64_t* count = nullptr) {
    bag::Reader r(path);
    std::map<std::string, std::vector<Bytes>> out;
    const auto n = r.read_messages({}, [&](const bag::Channel& ch, const bag::MessageView& m) {
        if (ch.message_encoding == "msgpack") out[ch.topic].emplace_back(m.data, m.data + m.size);
        return true;
    });
    if (count) *count = n;
    return out;
}

// The last gecko.drops record of a file (empty if none).
inline bag::StringMap drops_of(const std::string& path) {
    bag::Reader r(path);
    bag::StringMap last;
    for (const auto& m : r.metadata())
        if (m.name == bag::keys::drops_record) last = m.metadata;
    return last;
}

inline std::uint64_t number(const bag::StringMap& m, const std::string& key) {
    auto it = m.find(key);
    return it == m.end() ? 0 : std::stoull(it->second);
}

// A program whose stdin, stdout and stderr are a pseudo-terminal: what it
// writes is collected; keys are typed into it. Killed (SIGKILL) if still
// running when destroyed.
class OnTerminal {
public:
    OnTerminal(const std::string& program, const std::vector<std::string>& args,
               const std::vector<std::pair<std::string, std::string>>& env) {
        master_ = ::posix_openpt(O_RDWR | O_NOCTTY);
        REQUIRE(master_ >= 0);
        REQUIRE(::grantpt(master_) == 0);
        REQUIRE(::unlockpt(master_) == 0);
        const std::string slave = ::ptsname(master_);
        std::vector<std::string> argv_s{program};
        argv_s.insert(argv_s.end(), args.begin(), args.end());
        std::vector<std::string> env_s;  // made before fork: the child only calls what is safe there
        for (char** e = environ; *e; ++e) {
            const std::string entry = *e, name = entry.substr(0, entry.find('='));
            bool drop = false;
            for (const auto& [k, v] : env) drop = drop || k == name;
            for (const char* u : {"GECKO_MULTICAST", "GECKO_INTERFACE", "GECKO_NODE", "GECKO_DISCOVERY"}) drop = drop || name == u;
            if (!drop) env_s.push_back(entry);
        }
        for (const auto& [k, v] : env) env_s.push_back(k + "=" + v);
        std::vector<char*> argv, envp;
        for (auto& a : argv_s) argv.push_back(a.data());
        argv.push_back(nullptr);
        for (auto& e : env_s) envp.push_back(e.data());
        envp.push_back(nullptr);
        pid_ = ::fork();
        REQUIRE(pid_ >= 0);
        if (pid_ == 0) {
            ::setsid();
            const int fd = ::open(slave.c_str(), O_RDWR);  // the session's controlling terminal
            if (fd < 0) ::_exit(127);
            ::dup2(fd, 0);
            ::dup2(fd, 1);
            ::dup2(fd, 2);
            ::execve(program.c_str(), argv.data(), envp.data());
            ::_exit(127);
        }
        reader_ = std::thread([this] {
            char buf[4096];
            for (;;) {
                pollfd p{master_, POLLIN, 0};
                if (::poll(&p, 1, 100) < 0) break;
                if (p.revents & POLLIN) {
                    const auto n = ::read(master_, buf, sizeof buf);
                    if (n <= 0) break;  // EIO: the terminal's last user closed it
                    {
                        std::lock_guard<std::mutex> lock(mutex_);
                        text_.append(buf, static_cast<std::size_t>(n));
                    }
                    grew_.notify_all();
                } else if (p.revents & (POLLHUP | POLLERR)) {
                    break;
                } else if (stop_) {
                    break;
                }
            }
        });
    }
    ~OnTerminal() {
        if (pid_ > 0 && !reaped_) {
            ::kill(pid_, SIGKILL);
            ::waitpid(pid_, nullptr, 0);
        }
        stop_ = true;
        if (reader_.joinable()) reader_.join();
        if (master_ >= 0) ::close(master_);
    }
    OnTerminal(const OnTerminal&) = delete;
    OnTerminal& operator=(const OnTerminal&) = delete;

    void type(const std::string& keys) { REQUIRE(::write(master_, keys.data(), keys.size()) == static_cast<ssize_t>(keys.size())); }
    std::string text() const {
        std::lock_guard<std::mutex> lock(mutex_);
        return text_;
    }
    /// Waits (bounded) until the output contains `needle`.
    bool wait_for(const std::string& needle, std::chrono::milliseconds timeout) const {
        std::unique_lock<std::mutex> lock(mutex_);
        return grew_.wait_for(lock, timeout, [&] { return text_.find(needle) != std::string::npos; });
    }
    void signal(int sig) { ::kill(pid_, sig); }
    /// Its exit code (128 + signal), or -1 if it did not end within `timeout`.
    int wait(std::chrono::milliseconds timeout) {
        const auto deadline = std::chrono::steady_clock::now() + timeout;
        int status = 0;
        while (std::chrono::steady_clock::now() < deadline) {
            const pid_t r = ::waitpid(pid_, &status, WNOHANG);
            if (r == pid_) {
                reaped_ = true;
                return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
            }
            std::this_thread::sleep_for(20ms);
        }
        return -1;
    }

private:
    int master_ = -1;
    pid_t pid_ = -1;
    bool reaped_ = false;
    std::atomic<bool> stop_{false};
    mutable std::mutex mutex_;
    mutable std::condition_variable grew_;  // the reader appended to text_
    std::string text_;
    std::thread reader_;
};

// The environment of gecko processes on key `k`, for OnTerminal.
inline std::vector<std::pair<std::string, std::string>> key_env(const tools_test::Key& k) {
    std::vector<std::pair<std::string, std::string>> env;
    for (const auto& [name, value] : k.options().env) env.emplace_back(name, value);
    return env;
}

}  // namespace gecko::bag_test
