// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file process.hpp
/// Child processes for multi-process tests: spawn a program with arguments and
/// extra environment, write to its stdin, read its stdout (and stderr) line by
/// line with a deadline, kill it (SIGKILL by default), wait for it with a
/// deadline. Every wait is bounded; nothing here sleeps a fixed time.
///
/// **Example**:
/// ```
/// auto core = gecko::test::Process::spawn(GECKOCORE_PATH, {"--key", "k"});
/// REQUIRE(core.wait_for_line("listening on", 10s));
/// core.kill();                       // SIGKILL
/// CHECK(core.wait(10s) == 128 + 9);  // exit code, or 128 + signal
/// ```
/// A Process that is still running when destroyed is killed and reaped.

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <functional>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

extern char** environ;

namespace gecko::test {

/// What to do with a child's stderr.
enum class Stderr {
    inherit,  ///< goes to the test's stderr (visible in ctest --output-on-failure)
    merge,    ///< interleaved into stdout, read with the same calls
    capture,  ///< its own pipe, read with err().read_line() and friends
    discard,  ///< /dev/null
};

struct SpawnOptions {
    std::map<std::string, std::string> env;  ///< added to (or overriding) the test's environment
    std::vector<std::string> unset_env;      ///< removed from the environment (e.g. "GECKO_CORE")
    Stderr stderr_mode = Stderr::inherit;
    bool pipe_stdin = true;                  ///< false: stdin is /dev/null
};

/// Reads one pipe line by line. Keeps every line read, for diagnostics.
class LineReader {
public:
    LineReader() = default;
    explicit LineReader(int fd) : fd_(fd) {}
    LineReader(LineReader&& o) noexcept { *this = std::move(o); }
    LineReader& operator=(LineReader&& o) noexcept {
        if (this != &o) {
            close();
            fd_ = std::exchange(o.fd_, -1);
            buffer_ = std::move(o.buffer_);
            lines_ = std::move(o.lines_);
            next_ = o.next_;
            eof_ = o.eof_;
        }
        return *this;
    }
    LineReader(const LineReader&) = delete;
    LineReader& operator=(const LineReader&) = delete;
    ~LineReader() { close(); }

    /// The next unread line (without '\n'), or nullopt at the deadline or end of file.
    std::optional<std::string> read_line(std::chrono::milliseconds timeout) {
        const auto deadline = std::chrono::steady_clock::now() + timeout;
        while (next_ >= lines_.size()) {
            if (eof_) return std::nullopt;
            const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
            if (left.count() < 0 || !fill(left)) {
                if (next_ < lines_.size()) break;
                return std::nullopt;
            }
        }
        return lines_[next_++];
    }
    /// Skips lines until one satisfies `match`; returns it, or nullopt at the deadline.
    std::optional<std::string> wait_for(const std::function<bool(const std::string&)>& match, std::chrono::milliseconds timeout) {
        const auto deadline = std::chrono::steady_clock::now() + timeout;
        for (;;) {
            const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
            auto line = read_line(std::max(left, std::chrono::milliseconds(0)));
            if (!line) return std::nullopt;
            if (match(*line)) return line;
        }
    }
    /// Skips lines until one contains `needle`.
    std::optional<std::string> wait_for(const std::string& needle, std::chrono::milliseconds timeout) {
        return wait_for([&](const std::string& l) { return l.find(needle) != std::string::npos; }, timeout);
    }
    /// Reads whatever is already available without waiting (or up to `timeout`).
    void drain(std::chrono::milliseconds timeout = std::chrono::milliseconds(0)) {
        const auto deadline = std::chrono::steady_clock::now() + timeout;
        while (!eof_) {
            const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
            if (!fill(std::max(left, std::chrono::milliseconds(0)))) break;
        }
    }
    /// Every line read so far (read or skipped).
    const std::vector<std::string>& lines() const noexcept { return lines_; }
    /// All lines read so far, joined, for failure messages.
    std::string text() const {
        std::string s;
        for (const auto& l : lines_) s += l + "\n";
        if (!buffer_.empty()) s += buffer_ + " (no newline yet)\n";
        return s;
    }
    /// Marks every line read so far as consumed.
    void skip_all() noexcept { next_ = lines_.size(); }
    bool eof() const noexcept { return eof_; }
    int fd() const noexcept { return fd_; }
    void close() {
        if (fd_ >= 0) ::close(fd_);
        fd_ = -1;
    }

private:
    // Waits up to `timeout` for input and splits it into lines. False if nothing came.
    bool fill(std::chrono::milliseconds timeout) {
        if (fd_ < 0 || eof_) return false;
        pollfd p{fd_, POLLIN, 0};
        const int n = ::poll(&p, 1, static_cast<int>(timeout.count()));
        if (n <= 0) return false;
        char buf[4096];
        const auto got = ::read(fd_, buf, sizeof buf);
        if (got < 0) return errno == EINTR || errno == EAGAIN;
        if (got == 0) {
            eof_ = true;
            if (!buffer_.empty()) lines_.push_back(std::exchange(buffer_, {}));
            return true;
        }
        buffer_.append(buf, static_cast<std::size_t>(got));
        for (auto nl = buffer_.find('\n'); nl != std::string::npos; nl = buffer_.find('\n')) {
            lines_.push_back(buffer_.substr(0, nl));
            buffer_.erase(0, nl + 1);
        }
        return true;
    }

    int fd_ = -1;
    std::string buffer_;
    std::vector<std::string> lines_;
    std::size_t next_ = 0;
    bool eof_ = false;
};

class Process {
public:
    /// Starts `path` with `args` (argv[0] is `path`).
    /// @throws std::runtime_error if the program cannot be started.
    static Process spawn(const std::string& path, const std::vector<std::string>& args = {}, const SpawnOptions& options = {}) {
        int out[2], err[2] = {-1, -1}, in[2] = {-1, -1}, exec_status[2];
        if (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(exec_status, O_CLOEXEC) != 0) throw std::runtime_error("pipe2 failed");
        if (options.stderr_mode == Stderr::capture && ::pipe2(err, O_CLOEXEC) != 0) throw std::runtime_error("pipe2 failed");
        if (options.pipe_stdin && ::pipe2(in, O_CLOEXEC) != 0) throw std::runtime_error("pipe2 failed");

        // Everything the child needs is prepared before fork (no allocation after it).
        std::vector<std::string> argv_s{path};
        argv_s.insert(argv_s.end(), args.begin(), args.end());
        std::vector<char*> argv;
        for (auto& a : argv_s) argv.push_back(a.data());
        argv.push_back(nullptr);
        std::vector<std::string> env_s;
        for (char** e = environ; *e; ++e) {
            const std::string entry = *e;
            const std::string name = entry.substr(0, entry.find('='));
            bool drop = options.env.count(name) > 0;
            for (const auto& u : options.unset_env) drop = drop || u == name;
            if (!drop) env_s.push_back(entry);
        }
        for (const auto& [k, v] : options.env) env_s.push_back(k + "=" + v);
        std::vector<char*> envp;
        for (auto& e : env_s) envp.push_back(e.data());
        envp.push_back(nullptr);

        const pid_t pid = ::fork();
        if (pid < 0) throw std::runtime_error(std::string("fork failed: ") + std::strerror(errno));
        if (pid == 0) {
            ::setpgid(0, 0);  // own process group: a kill reaches only it
            const int devnull = ::open("/dev/null", O_RDWR);
            ::dup2(options.pipe_stdin ? in[0] : devnull, 0);
            ::dup2(out[1], 1);
            switch (options.stderr_mode) {
                case Stderr::inherit: break;
                case Stderr::merge: ::dup2(out[1], 2); break;
                case Stderr::capture: ::dup2(err[1], 2); break;
                case Stderr::discard: ::dup2(devnull, 2); break;
            }
            ::execve(path.c_str(), argv.data(), envp.data());
            const int e = errno;
            [[maybe_unused]] auto n = ::write(exec_status[1], &e, sizeof e);
            ::_exit(127);
        }
        ::close(out[1]);
        ::close(exec_status[1]);
        if (err[1] >= 0) ::close(err[1]);
        if (in[0] >= 0) ::close(in[0]);
        int child_errno = 0;
        const auto n = ::read(exec_status[0], &child_errno, sizeof child_errno);
        ::close(exec_status[0]);
        Process p;
        p.pid_ = pid;
        p.out_ = LineReader(out[0]);
        if (err[0] >= 0) p.err_ = LineReader(err[0]);
        p.stdin_ = in[1];
        if (n == static_cast<ssize_t>(sizeof child_errno)) {
            p.wait(std::chrono::milliseconds(1000));
            throw std::runtime_error("cannot run " + path + ": " + std::strerror(child_errno));
        }
        return p;
    }

    Process() = default;
    Process(Process&& o) noexcept { *this = std::move(o); }
    Process& operator=(Process&& o) noexcept {
        if (this != &o) {
            reap();
            pid_ = std::exchange(o.pid_, -1);
            status_ = std::exchange(o.status_, std::nullopt);
            out_ = std::move(o.out_);
            err_ = std::move(o.err_);
            stdin_ = std::exchange(o.stdin_, -1);
        }
        return *this;
    }
    Process(const Process&) = delete;
    Process& operator=(const Process&) = delete;
    ~Process() { reap(); }

    pid_t pid() const noexcept { return pid_; }
    /// Its stdout (and stderr with Stderr::merge).
    LineReader& out() noexcept { return out_; }
    /// Its stderr with Stderr::capture.
    LineReader& err() noexcept { return err_; }

    /// Shorthands for out().
    std::optional<std::string> read_line(std::chrono::milliseconds timeout) { return out_.read_line(timeout); }
    std::optional<std::string> wait_for_line(const std::string& needle, std::chrono::milliseconds timeout) {
        return out_.wait_for(needle, timeout);
    }
    std::optional<std::string> wait_for_line(const std::function<bool(const std::string&)>& match, std::chrono::milliseconds timeout) {
        return out_.wait_for(match, timeout);
    }
    /// Everything read from stdout so far, for failure messages.
    std::string output() const { return out_.text(); }

    /// Writes `line` + '\n' to its stdin. False if it is closed (e.g. the child died).
    bool write_line(const std::string& line) {
        if (stdin_ < 0) return false;
        const std::string s = line + "\n";
        struct sigaction ignore {}, old{};
        ignore.sa_handler = SIG_IGN;
        ::sigaction(SIGPIPE, &ignore, &old);  // a dead child must fail the write, not kill the test
        const auto n = ::write(stdin_, s.data(), s.size());
        ::sigaction(SIGPIPE, &old, nullptr);
        return n == static_cast<ssize_t>(s.size());
    }
    /// Closes its stdin (many programs exit on end of input).
    void close_stdin() {
        if (stdin_ >= 0) ::close(stdin_);
        stdin_ = -1;
    }

    /// Sends `sig` (SIGKILL by default: the process gets no chance to clean up).
    void kill(int sig = SIGKILL) {
        if (pid_ > 0 && !status_) ::kill(pid_, sig);
    }
    /// True until it has exited (and been reaped).
    bool running() {
        poll_status();
        return pid_ > 0 && !status_;
    }
    /// Waits for it to exit: its exit code, 128 + signal if a signal ended it,
    /// or nullopt if it is still running at the deadline.
    std::optional<int> wait(std::chrono::milliseconds timeout) {
        const auto deadline = std::chrono::steady_clock::now() + timeout;
        for (auto pause = std::chrono::milliseconds(1);; pause = std::min(pause * 2, std::chrono::milliseconds(20))) {
            poll_status();
            if (status_ || pid_ <= 0) return status_;
            if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
            std::this_thread::sleep_for(pause);  // polling waitpid, bounded by the deadline
        }
    }

private:
    void poll_status() {
        if (pid_ <= 0 || status_) return;
        int st = 0;
        const pid_t r = ::waitpid(pid_, &st, WNOHANG);
        if (r == pid_) status_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    }
    void reap() {
        close_stdin();
        if (pid_ > 0 && !status_) {
            ::kill(pid_, SIGKILL);
            int st = 0;
            ::waitpid(pid_, &st, 0);
        }
        pid_ = -1;
    }

    pid_t pid_ = -1;
    std::optional<int> status_;
    LineReader out_;
    LineReader err_;
    int stdin_ = -1;
};

}  // namespace gecko::test
