// SPDX-License-Identifier: Apache-2.0
#pragma once
// The rig of the `gecko` tool's process tests: one key with its own geckocore
// on loopback (an ephemeral port, read from the core's "listening on" line),
// the environment that points every child (pub_imu, add_server, gecko) at it
// and nowhere else, and helpers to run `gecko` to the end with a deadline.
// Every wait has a deadline; nothing sleeps to synchronise.
#include <catch2/catch.hpp>

#include <gecko/node.hpp>

#include <unistd.h>

#include <chrono>
#include <functional>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "support/ports.hpp"
#include "support/process.hpp"

namespace gecko::tools_test {

using namespace std::chrono_literals;
using gecko::test::Process;
using gecko::test::SpawnOptions;
using gecko::test::Stderr;

struct Run {
    std::optional<int> exit_code;  // nullopt: still running at the deadline (then killed)
    std::string out, err;
    std::vector<std::string> lines;
};

inline bool contains(const std::string& text, const std::string& needle) { return text.find(needle) != std::string::npos; }
inline std::size_t count_of(const std::string& text, const std::string& needle) {
    std::size_t n = 0;
    for (auto at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
    return n;
}

// A TCP port nobody listens on right now.
inline int free_port() { return gecko::test::unused_tcp_port(); }

// Runs a started process to the end (bounded by `timeout`) and collects its output.
inline Run finish(Process p, std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    auto left = [&] {
        return std::max(0ms, std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()));
    };
    while (!p.out().eof() && left() > 0ms) p.out().drain(std::min(left(), 100ms));
    Run r;
    r.exit_code = p.wait(left());
    p.out().drain();
    p.err().drain(100ms);
    r.out = p.out().text();
    r.err = p.err().text();
    r.lines = p.out().lines();
    return r;
}

// Whether this geckocore has --door (the host door on tcp 7651, which is not
// the tests' to take): asked once, from its --help.
inline bool core_has_door_option() {
    static const bool has = [] {
        SpawnOptions o;
        o.stderr_mode = Stderr::discard;
        o.pipe_stdin = false;
        return contains(finish(Process::spawn(GECKOCORE_PATH, {"--help"}, o), 10s).out, "--door");
    }();
    return has;
}

// A multicast group:port of its own, so that parallel tests never hear each other.
inline std::string private_multicast() {
    std::random_device random;
    std::uniform_int_distribution<int> byte(1, 254), port(20000, 60000);
    return "239.255." + std::to_string(byte(random)) + "." + std::to_string(byte(random)) + ":" +
           std::to_string(port(random));
}

// A geckocore started for a test: unicast-only unless `multicast` is given.
// Its endpoint is what its "listening on" line says (an ephemeral port).
struct Core {
    Process process;
    std::string line;      // "geckocore: key 'K' instance N listening on tcp://127.0.0.1:PORT, ..."
    std::string endpoint;  // tcp://127.0.0.1:PORT
    int port = 0;

    /// `secret_file`: the key's secret for the core (GECKO_SECRET_FILE); "": none.
    static Core start(const std::string& key, const std::string& multicast = "", const std::string& secret_file = "") {
        std::vector<std::string> args{"--key", key, "--listen", "tcp://127.0.0.1:*"};
        if (multicast.empty())
            args.push_back("--no-multicast");
        else
            args.insert(args.end(), {"--multicast", multicast});
        if (core_has_door_option()) args.insert(args.end(), {"--door", "0"});
        SpawnOptions o;
        o.stderr_mode = Stderr::inherit;  // its warnings show in ctest --output-on-failure
        o.pipe_stdin = false;
        o.unset_env = {"GECKO_KEY", "GECKO_CORE", "GECKO_MULTICAST", "GECKO_NO_MULTICAST", "GECKO_INTERFACE"};
        if (!secret_file.empty()) o.env["GECKO_SECRET_FILE"] = secret_file;
        Core c;
        c.process = Process::spawn(GECKOCORE_PATH, args, o);
        // "geckocore: key 'K' instance N listening on tcp://127.0.0.1:PORT, ...": the bind is done.
        const auto line = c.process.wait_for_line("listening on", 10s);
        INFO("geckocore said:\n" << c.process.output());
        REQUIRE(line);
        c.line = *line;
        c.endpoint = gecko::test::endpoint_after(*line, "listening on ").value_or("");
        c.port = gecko::test::port_of(c.endpoint);
        REQUIRE(c.port > 0);
        return c;
    }
};

// One key with its own geckocore on loopback, and the environment that points
// every child (pub_imu, gecko) at it and nowhere else, their ipc sockets in a
// directory of the test's own.
class Key {
public:
    Key() : key_(next_key()), core_(Core::start(key_)) {}

    // Background processes end with SIGTERM, as a user's Ctrl-C would end them,
    // so that they withdraw from the core and remove their ipc sockets.
    ~Key() {
        for (auto& c : children_) c.kill(SIGTERM);
        for (auto& c : children_) c.wait(20s);
        core_.process.kill(SIGTERM);
        core_.process.wait(20s);
    }
    Key(const Key&) = delete;
    Key& operator=(const Key&) = delete;

    const std::string& key() const { return key_; }
    int port() const { return core_.port; }
    const std::string& ipc_dir() const { return ipc_dir_.path(); }
    /// Options for a node of the test's own process on this key (its core, no multicast).
    gecko::NodeOptions node_options(const std::string& name) const {
        gecko::NodeOptions o;
        o.key = key_;
        o.name = name;
        o.core = "127.0.0.1:" + std::to_string(port());
        o.multicast_enabled = false;
        o.ipc_directory = ipc_dir();
        return o;
    }
    const std::string& core_line() const { return core_.line; }

    SpawnOptions options(Stderr mode = Stderr::capture) const {
        SpawnOptions o;
        o.env = {{"GECKO_KEY", key_},
                 {"GECKO_CORE", "127.0.0.1:" + std::to_string(core_.port)},
                 {"GECKO_NO_MULTICAST", "1"},
                 {"GECKO_IPC_DIR", ipc_dir_.path()}};
        o.unset_env = {"GECKO_MULTICAST", "GECKO_INTERFACE", "GECKO_NODE", "GECKO_DISCOVERY"};
        o.stderr_mode = mode;
        o.pipe_stdin = false;
        return o;
    }

    /// pub_imu in the background, until the end of the test. Returns its pid.
    pid_t start_pub_imu() { return keep(Process::spawn(PUB_IMU_PATH, {}, options(Stderr::inherit))); }
    /// `program args...` in the background, until the end of the test. Returns its pid.
    pid_t start_background(const std::string& program, const std::vector<std::string>& args = {}) {
        return keep(Process::spawn(program, args, options(Stderr::inherit)));
    }
    /// `gecko args...` in the background, until the end of the test. Returns its pid.
    pid_t start_gecko_background(const std::vector<std::string>& args) { return start_background(GECKO_CLI_PATH, args); }
    /// `gecko args...`, for the test to read and finish(); `stdin_pipe` to write to its stdin.
    Process start_gecko(const std::vector<std::string>& args, bool stdin_pipe = false) const {
        auto o = options();
        o.pipe_stdin = stdin_pipe;
        return Process::spawn(GECKO_CLI_PATH, args, o);
    }

    // Runs `gecko args...` to the end (bounded by `timeout`) and collects its output.
    Run gecko(const std::vector<std::string>& args, std::chrono::milliseconds timeout = 15s) const {
        return finish(Process::spawn(GECKO_CLI_PATH, args, options()), timeout);
    }

    // Polls `gecko list` until its output satisfies `ready` (bounded).
    std::string wait_for_list(const std::function<bool(const std::string&)>& ready, std::chrono::milliseconds timeout = 15s) const {
        const auto deadline = std::chrono::steady_clock::now() + timeout;
        std::string last;
        while (std::chrono::steady_clock::now() < deadline) {
            const auto r = gecko({"list"});
            last = r.out + r.err;
            if (r.exit_code == 0 && ready(r.out)) return r.out;
            std::this_thread::sleep_for(100ms);  // poll period, not a synchronisation
        }
        FAIL("gecko list never showed what was expected; last output:\n" << last);
        return last;
    }

    static std::string next_key() {
        static int instance = 0;
        return "tools-" + std::to_string(::getpid()) + "-" + std::to_string(instance++);
    }

private:
    pid_t keep(Process p) {
        children_.push_back(std::move(p));
        return children_.back().pid();
    }

    std::string key_;
    Core core_;
    gecko::test::TempDir ipc_dir_;  // destroyed after the children (declared before them)
    std::vector<Process> children_;
};

// A list line for topic `name` (it starts the line) that also contains `also`.
inline bool has_topic_line(const std::string& list, const std::string& name, const std::string& also) {
    std::istringstream in(list);
    for (std::string line; std::getline(in, line);)
        if (line.rfind(name + " ", 0) == 0 && contains(line, also)) return true;
    return false;
}

inline bool imu_listed(const std::string& list) { return has_topic_line(list, "imu", "gecko.msgs.Imu"); }

}  // namespace gecko::tools_test
