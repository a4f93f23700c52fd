// SPDX-License-Identifier: Apache-2.0
#include "academy/process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <stdexcept>
#include <thread>
#include <utility>

extern char** environ;

namespace gecko::bridge::academy {

namespace {

std::vector<std::string> merged_environment(const std::vector<std::string>& extra) {
    std::map<std::string, std::string> vars;
    for (char** e = environ; e && *e; ++e) {
        const std::string s(*e);
        vars[s.substr(0, s.find('='))] = s;
    }
    for (const auto& s : extra) vars[s.substr(0, s.find('='))] = s;
    std::vector<std::string> out;
    for (auto& [name, entry] : vars) out.push_back(std::move(entry));
    return out;
}

std::vector<char*> pointers(std::vector<std::string>& strings) {
    std::vector<char*> out;
    for (auto& s : strings) out.push_back(s.data());
    out.push_back(nullptr);
    return out;
}

void close_fd(int& fd) {
    if (fd >= 0) ::close(fd);
    fd = -1;
}

// `program` as execvp would find it, on the PATH of the child's environment (looked up before
// fork: the child may only make async-signal-safe calls). As given if it names a directory or is not found.
std::string on_path(const std::string& program, const std::vector<std::string>& env) {
    if (program.empty() || program.find('/') != std::string::npos) return program;
    std::string path = "/usr/local/bin:/usr/bin:/bin";
    for (const auto& e : env)
        if (e.compare(0, 5, "PATH=") == 0) path = e.substr(5);
    std::size_t from = 0;
    while (from <= path.size()) {
        const auto to = std::min(path.find(':', from), path.size());
        const std::string dir = to > from ? path.substr(from, to - from) : ".";
        const std::string candidate = dir + "/" + program;
        struct stat st {};
        if (::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(candidate.c_str(), X_OK) == 0)
            return candidate;
        from = to + 1;
    }
    return program;
}

}  // namespace

ChildProcess::ChildProcess(const ProcessOptions& options) {
    if (options.argv.empty()) throw std::runtime_error("no command to run");
    int in[2] = {-1, -1}, out[2] = {-1, -1};
    if (options.pipe_stdin && ::pipe2(in, O_CLOEXEC) != 0) throw std::runtime_error(std::strerror(errno));
    if (options.pipe_stdout && ::pipe2(out, O_CLOEXEC) != 0) {
        close_fd(in[0]);
        close_fd(in[1]);
        throw std::runtime_error(std::strerror(errno));
    }
    auto argv = options.argv;
    auto env = merged_environment(options.environment);
    const std::string path = on_path(argv[0], env);
    auto argv_p = pointers(argv);
    auto env_p = pointers(env);
    int failed[2] = {-1, -1};  // the child writes errno here if exec fails; exec closes it (O_CLOEXEC) if not
    if (::pipe2(failed, O_CLOEXEC) != 0) {
        const int e = errno;
        for (int* fd : {&in[0], &in[1], &out[0], &out[1]}) close_fd(*fd);
        throw std::runtime_error(std::strerror(e));
    }
    const pid_t parent = ::getpid();
    pid_ = ::fork();
    if (pid_ == 0) {
        // The child of a threaded process: async-signal-safe calls only, all prepared above.
        if (options.own_process_group) ::setpgid(0, 0);
        // Ends with the bridge, even one killed with -9 (which cannot end it itself).
        ::prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (::getppid() != parent) ::_exit(127);  // the bridge was gone before the line above
        if (options.pipe_stdin) ::dup2(in[0], STDIN_FILENO);
        if (options.pipe_stdout) ::dup2(out[1], STDOUT_FILENO);
        struct sigaction default_action {};
        default_action.sa_handler = SIG_DFL;
        for (int sig : {SIGINT, SIGTERM, SIGPIPE, SIGUSR1, SIGUSR2, SIGHUP}) ::sigaction(sig, &default_action, nullptr);
        sigset_t none;
        sigemptyset(&none);
        ::sigprocmask(SIG_SETMASK, &none, nullptr);
        ::execve(path.c_str(), argv_p.data(), env_p.data());
        const int e = errno;
        (void)!::write(failed[1], &e, sizeof e);
        ::_exit(127);
    }
    const int fork_errno = errno;
    close_fd(failed[1]);
    close_fd(in[0]);
    close_fd(out[1]);
    int rc = pid_ < 0 ? fork_errno : 0;
    if (pid_ > 0) {
        int child_errno = 0;
        ssize_t n;
        while ((n = ::read(failed[0], &child_errno, sizeof child_errno)) < 0 && errno == EINTR) {
        }
        if (n == static_cast<ssize_t>(sizeof child_errno)) {  // exec failed: reap the child
            rc = child_errno;
            int status = 0;
            ::waitpid(pid_, &status, 0);
        }
    }
    close_fd(failed[0]);
    if (rc != 0) {
        close_fd(in[1]);
        close_fd(out[0]);
        pid_ = -1;
        throw std::runtime_error("cannot start '" + options.argv[0] + "': " + std::strerror(rc));
    }
    stdin_ = in[1];
    stdout_ = out[0];
    group_ = options.own_process_group;
}

ChildProcess::~ChildProcess() { end(); }

ChildProcess::ChildProcess(ChildProcess&& o) noexcept
    : pid_(std::exchange(o.pid_, -1)), stdin_(std::exchange(o.stdin_, -1)), stdout_(std::exchange(o.stdout_, -1)),
      group_(o.group_) {}

ChildProcess& ChildProcess::operator=(ChildProcess&& o) noexcept {
    if (this != &o) {
        end();
        pid_ = std::exchange(o.pid_, -1);
        stdin_ = std::exchange(o.stdin_, -1);
        stdout_ = std::exchange(o.stdout_, -1);
        group_ = o.group_;
    }
    return *this;
}

int ChildProcess::take_stdin() noexcept { return std::exchange(stdin_, -1); }
int ChildProcess::take_stdout() noexcept { return std::exchange(stdout_, -1); }

bool ChildProcess::running() {
    if (pid_ <= 0) return false;
    int status = 0;
    const pid_t r = ::waitpid(pid_, &status, WNOHANG);
    if (r == 0) return true;
    pid_ = -1;
    return false;
}

int ChildProcess::wait() {
    if (pid_ <= 0) return -1;
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
    return status;
}

void ChildProcess::end(std::chrono::milliseconds grace) {
    close_fd(stdin_);
    close_fd(stdout_);
    if (pid_ <= 0) return;
    const pid_t target = group_ ? -pid_ : pid_;
    ::kill(target, SIGTERM);
    const auto deadline = std::chrono::steady_clock::now() + grace;
    int status = 0;
    while (::waitpid(pid_, &status, WNOHANG) == 0) {
        if (std::chrono::steady_clock::now() >= deadline) {
            ::kill(target, SIGKILL);
            ::waitpid(pid_, &status, 0);
            break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));  // waitpid has no timeout
    }
    if (group_) ::kill(target, SIGKILL);  // what it started and left behind
    pid_ = -1;
}

std::string run_with_input(const std::vector<std::string>& argv, const std::string& input,
                           std::chrono::milliseconds timeout, const std::vector<std::string>& environment) {
    ProcessOptions options;
    options.argv = argv;
    options.environment = environment;
    options.pipe_stdin = options.pipe_stdout = true;
    ChildProcess child(options);
    int in = child.take_stdin(), out = child.take_stdout();
    ::fcntl(in, F_SETFL, O_NONBLOCK);
    std::string output;
    std::size_t written = 0;
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    if (input.empty()) close_fd(in);
    while (out >= 0) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0) {
            close_fd(in);
            close_fd(out);
            throw std::runtime_error("'" + argv[0] + "' did not finish within " + std::to_string(timeout.count()) + " ms");
        }
        pollfd fds[2] = {{out, POLLIN, 0}, {in, POLLOUT, 0}};
        if (::poll(fds, in >= 0 ? 2 : 1, static_cast<int>(left.count())) < 0 && errno != EINTR) break;
        if (in >= 0 && (fds[1].revents & (POLLOUT | POLLERR | POLLHUP))) {
            const ssize_t n = ::write(in, input.data() + written, input.size() - written);
            if (n > 0) written += static_cast<std::size_t>(n);
            if (n < 0 && errno != EAGAIN && errno != EINTR) written = input.size();  // it stopped reading
            if (written == input.size()) close_fd(in);
        }
        if (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) {
            char buffer[4096];
            const ssize_t n = ::read(out, buffer, sizeof buffer);
            if (n > 0) output.append(buffer, static_cast<std::size_t>(n));
            else if (n == 0 || errno != EINTR) close_fd(out);
        }
    }
    close_fd(in);
    const int status = child.wait();
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        throw std::runtime_error("'" + argv[0] + "' failed (status " + std::to_string(status) + ")");
    return output;
}

std::string split_command(const std::string& text, std::vector<std::string>& words) {
    words.clear();
    std::string word;
    bool in_word = false;
    char quote = 0;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (quote) {
            if (c == quote) quote = 0;
            else if (c == '\\' && quote == '"' && i + 1 < text.size()) word += text[++i];
            else word += c;
        } else if (c == '\'' || c == '"') {
            quote = c;
            in_word = true;
        } else if (c == '\\' && i + 1 < text.size()) {
            word += text[++i];
            in_word = true;
        } else if (c == ' ' || c == '\t') {
            if (in_word) words.push_back(word);
            word.clear();
            in_word = false;
        } else {
            word += c;
            in_word = true;
        }
    }
    if (quote) return std::string("a ") + quote + " is not closed";
    if (in_word) words.push_back(word);
    return words.empty() ? "empty command" : "";
}

}  // namespace gecko::bridge::academy
