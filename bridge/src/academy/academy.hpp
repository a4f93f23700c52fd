// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file academy.hpp
/// The RoboticsAcademy endpoints of gecko-bridge (docs/ACADEMY.md):
/// - manager: JSON orders {"command": NAME, "data": {...}} (open, stop,
///   resume, reset, Ping, evaluate), each answered with
///   {"command": "PingDone", "data": {...}} once it has taken effect, or
///   {"command": "error", "data": {"command": NAME, "message": WHY}};
/// - code: text messages whose first five characters name them (#code,
///   #play, #stop, #rest, #freq), carried out by a brain runner process
///   (python -m gecko.academy.runner, brain_runner.hpp);
/// - gui: `#gui` frames (gui_feed.hpp) of the latest image, as a JPEG, the
///   robot's joints and a text, at the GUI frequency, latest-only.
///
/// Everything here runs on the bridge's I/O thread; the blocking work
/// (service calls, starting the simulation, checking code) runs on worker
/// threads and posts its answer back. Uses only Gecko's public API.

#include "academy/process.hpp"
#include "academy/worker.hpp"

#include <gecko/node.hpp>

#include <boost/asio/io_context.hpp>

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace gecko::bridge::academy {

struct AcademyOptions {
    NodeOptions node;                             ///< the key, as the bridge's
    std::string simulation = "sim";               ///< the simulation's name: services SIM/control/*, topic SIM/status
    std::vector<std::string> simulation_command;  ///< what `open` starts; empty: open waits for a running simulation
    std::string python = "python3";               ///< runs the brain runner and the code checker (imports gecko)
    std::chrono::milliseconds call_timeout{15000};   ///< a control service's deadline; open's wait for the simulation
    std::size_t max_waiting_orders = 4;           ///< manager orders queued behind a running one; more are refused
    std::string image_topic = "academy/image";    ///< what the GUI shows (gecko.msgs.Image; the brain's GUI.show_image)
};

/// The three endpoints, by their WebSocket paths.
enum class Endpoint { manager, code, gui };
/// The endpoint of "/academy/manager", "/academy/code", "/academy/gui"; none for any other path.
std::optional<Endpoint> endpoint_of_path(std::string_view path);

/// GECKO_* variables that put a child process on the same key and core as `node`.
std::vector<std::string> node_environment(const NodeOptions& node);

/// A connected page, as the academy writes to it (session.hpp).
class Peer {
public:
    virtual ~Peer() = default;
    /// Queues a text message.
    virtual void send(std::string text) = 0;
    /// Sends a frame of a stream of which only the newest matters: it
    /// replaces one that waits unsent (a slow page never queues frames).
    virtual void send_latest(std::string frame) = 0;
};

class BrainRunner;
class GuiFeed;

/// Bad input and what was done, for the bridge's log at exit.
struct AcademyCounters {
    std::atomic<std::uint64_t> orders{0};          ///< manager orders answered with PingDone
    std::atomic<std::uint64_t> refused_orders{0};  ///< answered with an error (bad, unknown, too early, busy, failed)
    std::atomic<std::uint64_t> code_messages{0};   ///< code messages received
    std::atomic<std::uint64_t> refused_code{0};    ///< code messages refused
    std::atomic<std::uint64_t> gui_frames_replaced{0};  ///< GUI frames a slow page never got: a newer one replaced them
};

class Academy : public std::enable_shared_from_this<Academy> {
public:
    Academy(AcademyOptions options, boost::asio::io_context& io);
    ~Academy();
    Academy(const Academy&) = delete;
    Academy& operator=(const Academy&) = delete;

    /// Starts the academy's node.
    /// @throws gecko::Error if it cannot.
    void start();
    /// Ends the brain runner and the simulation it started.
    void stop();

    // ---- from the sessions, on the I/O thread
    void connected(Endpoint endpoint, const std::shared_ptr<Peer>& peer);
    void disconnected(Endpoint endpoint, Peer* peer);
    void on_text(Endpoint endpoint, const std::shared_ptr<Peer>& peer, std::string_view text);

    const AcademyOptions& options() const noexcept { return options_; }
    AcademyCounters& counters() noexcept { return counters_; }
    std::string counters_json() const;
    /// What the bridge's page needs to show the simulation: {"academy": true,
    /// "simulation": NAME, "image_topic": TOPIC} (served at /api/academy).
    std::string page_json() const;

    // ---- from the brain runner, on the I/O thread
    /// Sends `text` to every page on the code endpoint.
    void to_code_pages(const std::string& text);
    /// Sends `frame` to every page on the GUI endpoint, latest-only.
    void to_gui_pages(std::string frame);
    bool simulation_open() const noexcept { return open_; }
    /// GUI frames made per second (0 while no GUI page looks).
    double gui_frequency() const noexcept;

private:
    void manager_order(const std::shared_ptr<Peer>& peer, std::string_view text);
    void code_message(const std::shared_ptr<Peer>& peer, std::string_view text);
    void control(const std::shared_ptr<Peer>& peer, const std::string& command, const std::string& id);
    void open(const std::shared_ptr<Peer>& peer, const std::string& id);
    void evaluate(const std::shared_ptr<Peer>& peer, const std::string& code, const std::string& id);
    enum class Outcome { done, opened, refused };
    static void complete(boost::asio::io_context& io, std::weak_ptr<Academy> academy, std::weak_ptr<Peer> asker,
                         std::string text, Outcome outcome);  // from a worker

    AcademyOptions options_;
    boost::asio::io_context& io_;
    AcademyCounters counters_;
    std::unique_ptr<Node> node_;
    bool open_ = false;
    std::set<std::shared_ptr<Peer>> code_pages_, gui_pages_;
    std::unique_ptr<BrainRunner> brain_;
    std::unique_ptr<GuiFeed> gui_;

    struct Simulation;                     // used only on simulation_worker_
    std::shared_ptr<Simulation> simulation_;
    std::unique_ptr<Worker> simulation_worker_;  // open, stop, resume, reset: one at a time
    std::unique_ptr<Worker> check_worker_;       // evaluate
};

}  // namespace gecko::bridge::academy
