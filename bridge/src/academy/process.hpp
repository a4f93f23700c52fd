// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file process.hpp
/// A child process the academy endpoints start (the simulation's command,
/// the brain runner, the code checker): spawned without a shell, with its
/// stdin and stdout as pipes when asked, ended (TERM, then KILL) and reaped
/// when its handle goes. It also gets SIGTERM when the bridge dies, however
/// it dies (PR_SET_PDEATHSIG: a bridge killed with -9 leaves no simulation
/// running). Linux sends that signal when the *thread* that started the
/// child ends: start children from threads that live as long as they do
/// (the I/O thread, the academy's workers).

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

namespace gecko::bridge::academy {

struct ProcessOptions {
    std::vector<std::string> argv;                 ///< argv[0] is looked up on PATH
    std::vector<std::string> environment;          ///< NAME=VALUE added to (or replacing in) the bridge's own
    bool pipe_stdin = false, pipe_stdout = false;  ///< else inherited from the bridge
    bool own_process_group = true;                 ///< so that ending it ends what it started too
};

class ChildProcess {
public:
    ChildProcess() = default;
    /// @throws std::runtime_error naming the program when it cannot start.
    explicit ChildProcess(const ProcessOptions& options);
    ~ChildProcess();
    ChildProcess(ChildProcess&& other) noexcept;
    ChildProcess& operator=(ChildProcess&& other) noexcept;
    ChildProcess(const ChildProcess&) = delete;
    ChildProcess& operator=(const ChildProcess&) = delete;

    pid_t pid() const noexcept { return pid_; }
    explicit operator bool() const noexcept { return pid_ > 0; }
    /// The pipes, -1 unless asked for; take_*() hands the descriptor over (the caller closes it).
    int take_stdin() noexcept;
    int take_stdout() noexcept;
    /// True while it runs (reaps it when it has ended).
    bool running();
    /// Waits for it to exit and returns waitpid's status (-1 if none runs).
    int wait();
    /// SIGTERM, up to `grace` for it to exit, then SIGKILL; reaps it. Idempotent.
    void end(std::chrono::milliseconds grace = std::chrono::milliseconds(3000));

private:
    pid_t pid_ = -1;
    int stdin_ = -1, stdout_ = -1;
    bool group_ = false;
};

/// Runs `argv` with `input` on its stdin and returns what it wrote on stdout;
/// a run past `timeout` is killed. Blocks: call it off the I/O thread.
/// @throws std::runtime_error if it cannot start, times out or exits non-zero.
std::string run_with_input(const std::vector<std::string>& argv, const std::string& input,
                           std::chrono::milliseconds timeout, const std::vector<std::string>& environment = {});

/// `text`'s words as a shell splits a command, without expanding anything:
/// quotes ('...' or "...") and backslashes keep spaces (a path with spaces).
/// Returns why it cannot (an unclosed quote, no word), or "".
std::string split_command(const std::string& text, std::vector<std::string>& words);

}  // namespace gecko::bridge::academy
