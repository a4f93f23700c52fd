// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file brain_runner.hpp
/// The code endpoint's other side: the brain runner, a Python process
/// (`python3 -m gecko.academy.runner`, python/gecko/academy/runner.py) that
/// loads the page's code and runs it against the simulation. The bridge
/// talks to it in JSON lines over its stdin and stdout, asynchronously on
/// the I/O thread: a brain that hangs or dies cannot block the bridge.
///
/// To the runner: {"op": "load", "code": ...}, {"op": "play"},
/// {"op": "stop"}, {"op": "reset"}, {"op": "frequency", "hz": F}.
/// From it: {"event": "loaded" | "playing" | "stopped" | "reset"},
/// {"event": "error", "phase": "load" | "run", "line": N, "message": ...},
/// {"event": "frequency", "brain": HZ, "target": HZ, "rtf": R}.

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

namespace gecko::bridge::academy {

class Academy;

struct BrainRunnerOptions {
    std::vector<std::string> argv;                ///< the runner's command
    std::vector<std::string> environment;         ///< added to the bridge's (the key)
    std::chrono::milliseconds stop_grace{2000};   ///< a brain not stopped this long after #stop: the runner is killed
};

class BrainRunner {
public:
    BrainRunner(boost::asio::io_context& io, Academy& academy, BrainRunnerOptions options);
    ~BrainRunner();
    BrainRunner(const BrainRunner&) = delete;
    BrainRunner& operator=(const BrainRunner&) = delete;

    /// #code: loads `code` (stopping a running brain first); answered #exec or #erro.
    void load(std::string code);
    /// #play: "" when asked of the runner (answered #play or #erro), else why not.
    std::string play();
    /// #stop: answered #stop once the brain has stopped.
    void stop();
    /// #rest: stops the brain and forgets its state; answered #rest.
    void reset();
    /// #freq: the brain's frequency (answered with a #freq report) and the GUI's.
    void set_frequency(double hz);
    void set_gui_frequency(double hz) { gui_hz_ = hz; }
    double gui_frequency() const noexcept { return gui_hz_; }
    /// Sends the pages a #freq report now.
    void report_frequencies();

    struct Link;

private:
    bool ensure_started();
    void write(std::string line);
    void on_line(const std::string& line);
    void on_exit();
    void stop_timed_out();

    boost::asio::io_context& io_;
    Academy& academy_;
    BrainRunnerOptions options_;
    std::shared_ptr<Link> link_;
    boost::asio::steady_timer stop_timer_;
    bool loaded_ = false, playing_ = false, stopping_ = false;
    double brain_hz_ = 10.0, gui_hz_ = 10.0;
    double measured_brain_ = 0.0, rtf_ = 0.0;
};

}  // namespace gecko::bridge::academy
