// SPDX-License-Identifier: Apache-2.0
#include "academy/academy.hpp"

#include "academy/brain_runner.hpp"
#include "academy/gui_feed.hpp"
#include "academy/messages.hpp"
#include "json_text.hpp"

#include <gecko/msgs/sim.hpp>
#include <gecko/service.hpp>

#include <boost/asio/post.hpp>

#include <iostream>
#include <map>
#include <thread>

namespace gecko::bridge::academy {

using nlohmann::json;
namespace sim = gecko::msgs::sim;

std::optional<Endpoint> endpoint_of_path(std::string_view path) {
    if (path == "/academy/manager") return Endpoint::manager;
    if (path == "/academy/code") return Endpoint::code;
    if (path == "/academy/gui") return Endpoint::gui;
    return std::nullopt;
}

std::vector<std::string> node_environment(const NodeOptions& node) {
    std::vector<std::string> env{"GECKO_KEY=" + node.key};
    if (!node.core.empty()) env.push_back("GECKO_CORE=" + node.core);
    if (!node.multicast.empty()) env.push_back("GECKO_MULTICAST=" + node.multicast);
    if (!node.multicast_enabled) env.push_back("GECKO_NO_MULTICAST=1");
    if (!node.ipc_directory.empty()) env.push_back("GECKO_IPC_DIR=" + node.ipc_directory);
    return env;
}

namespace {

json status_json(const sim::Status& s) {
    return {{"stamp_ns", s.stamp_ns},  // the page keeps the newest of these and of the status topic's
            {"simulation", s.simulation},
            {"state", sim::to_string(s.state)},
            {"steps", s.steps},
            {"steps_per_s", s.steps_per_s},
            {"simulated_time", s.simulated_time},
            {"real_time_factor", s.real_time_factor},
            {"resets", s.resets}};
}

std::string done(const std::string& command, const std::string& id, json data = json::object()) {
    data["command"] = command;
    json out{{"command", "PingDone"}, {"data", std::move(data)}};
    if (!id.empty()) out["id"] = json::parse(id);
    return json_text(out);
}

std::string failure(const std::string& command, const std::string& id, const std::string& message) {
    json out{{"command", "error"}, {"data", {{"command", command}, {"message", message}}}};
    if (!id.empty()) out["id"] = json::parse(id);
    return json_text(out);
}

}  // namespace

/// The simulation as the manager orders reach it: its control services, and
/// the process `open` started. Used on the simulation worker only.
struct Academy::Simulation {
    Node* node = nullptr;
    std::string name;
    ChildProcess process;
    std::map<std::string, Client<sim::ControlRequest, sim::ControlReply>> clients;

    Client<sim::ControlRequest, sim::ControlReply>& client(const std::string& operation) {
        auto it = clients.find(operation);
        if (it == clients.end())
            it = clients
                     .emplace(operation, node->client<sim::ControlRequest, sim::ControlReply>(name + "/control/" +
                                                                                             operation))
                     .first;
        return it->second;
    }
};

Academy::Academy(AcademyOptions options, boost::asio::io_context& io) : options_(std::move(options)), io_(io) {}

Academy::~Academy() { stop(); }

void Academy::start() {
    auto node_options = options_.node;
    node_options.name = "gecko_bridge_academy";
    node_ = std::make_unique<Node>(node_options);
    simulation_ = std::make_shared<Simulation>();
    simulation_->node = node_.get();
    simulation_->name = options_.simulation;
    simulation_worker_ = std::make_unique<Worker>();
    check_worker_ = std::make_unique<Worker>();
    BrainRunnerOptions brain;
    brain.argv = {options_.python, "-m", "gecko.academy.runner", "--simulation", options_.simulation,
                  "--image-topic", options_.image_topic};
    brain.environment = node_environment(options_.node);
    brain_ = std::make_unique<BrainRunner>(io_, *this, std::move(brain));
    GuiFeedOptions gui;
    gui.image_topic = options_.image_topic;
    gui.joints_topic = options_.simulation + "/joint_states";
    std::weak_ptr<Academy> weak = shared_from_this();
    gui_ = std::make_unique<GuiFeed>(*node_, gui, [this, weak](std::string frame) {
        boost::asio::post(io_, [weak, frame = std::move(frame)]() mutable {
            if (auto self = weak.lock()) self->to_gui_pages(std::move(frame));
        });
    });
}

double Academy::gui_frequency() const noexcept { return gui_ ? gui_->measured_frequency() : 0.0; }

void Academy::to_gui_pages(std::string frame) {
    const auto pages = gui_pages_;
    for (const auto& page : pages) page->send_latest(frame);
}

void Academy::stop() {
    brain_.reset();
    gui_.reset();
    simulation_worker_.reset();  // joins: the simulation is used by no one after this
    check_worker_.reset();
    if (simulation_) simulation_->process.end();
    simulation_.reset();
    code_pages_.clear();
    gui_pages_.clear();
    node_.reset();
}

std::string Academy::counters_json() const {
    return json_text(json{{"orders", counters_.orders.load()},
                {"refused_orders", counters_.refused_orders.load()},
                {"code_messages", counters_.code_messages.load()},
                {"refused_code", counters_.refused_code.load()},
                {"gui_frames_replaced", counters_.gui_frames_replaced.load()},
                {"bad_images", gui_ ? gui_->bad_images() : 0}});
}

std::string Academy::page_json() const {
    return json_text(
        json{{"academy", true}, {"simulation", options_.simulation}, {"image_topic", options_.image_topic}});
}

void Academy::connected(Endpoint endpoint, const std::shared_ptr<Peer>& peer) {
    if (endpoint == Endpoint::code) code_pages_.insert(peer);
    if (endpoint == Endpoint::gui) {
        gui_pages_.insert(peer);
        if (gui_) gui_->set_watching(true);
    }
}

void Academy::disconnected(Endpoint endpoint, Peer* peer) {
    auto& pages = endpoint == Endpoint::code ? code_pages_ : gui_pages_;
    for (auto it = pages.begin(); it != pages.end(); ++it)
        if (it->get() == peer) {
            pages.erase(it);
            break;
        }
    if (endpoint == Endpoint::gui && gui_pages_.empty() && gui_) gui_->set_watching(false);
}

void Academy::to_code_pages(const std::string& text) {
    const auto pages = code_pages_;  // a page that cannot take it leaves the set
    for (const auto& page : pages) page->send(text);
}

void Academy::on_text(Endpoint endpoint, const std::shared_ptr<Peer>& peer, std::string_view text) {
    if (!node_) return;  // stopped
    switch (endpoint) {
        case Endpoint::manager: manager_order(peer, text); break;
        case Endpoint::code: code_message(peer, text); break;
        case Endpoint::gui: break;  // the GUI endpoint only sends
    }
}

// On the I/O thread: a worker holds no Academy, so the last owner never
// lets it go on a worker (whose destruction would join that worker).
void Academy::complete(boost::asio::io_context& io, std::weak_ptr<Academy> academy, std::weak_ptr<Peer> asker,
                       std::string text, Outcome outcome) {
    boost::asio::post(io, [academy, asker, text = std::move(text), outcome]() mutable {
        if (auto self = academy.lock()) {
            (outcome == Outcome::refused ? self->counters_.refused_orders : self->counters_.orders)
                .fetch_add(1, std::memory_order_relaxed);
            if (outcome == Outcome::opened) self->open_ = true;
        }
        if (auto p = asker.lock()) p->send(std::move(text));
    });
}

// ---------------------------------------------------------------- manager

void Academy::manager_order(const std::shared_ptr<Peer>& peer, std::string_view text) {
    const ManagerOrder order = read_manager_order(text);
    const std::string& id = order.id;
    if (!order.error.empty()) {
        counters_.refused_orders.fetch_add(1, std::memory_order_relaxed);
        peer->send(failure("", id, order.error));
        return;
    }
    const std::string& command = order.command;
    const json& data = order.data;
    if (command == "Ping") {
        counters_.orders.fetch_add(1, std::memory_order_relaxed);
        peer->send(done(command, id, {{"simulation_open", open_}}));
    } else if (command == "open") {
        open(peer, id);
    } else if (command == "stop" || command == "resume" || command == "reset") {
        if (!open_) {
            counters_.refused_orders.fetch_add(1, std::memory_order_relaxed);
            peer->send(failure(command, id, "no simulation is open: send open first"));
            return;
        }
        control(peer, command, id);
    } else if (command == "evaluate") {
        if (!data.is_object() || !data.contains("code") || !data["code"].is_string()) {
            counters_.refused_orders.fetch_add(1, std::memory_order_relaxed);
            peer->send(failure(command, id, "evaluate wants {\"data\": {\"code\": \"...\"}}"));
            return;
        }
        evaluate(peer, data["code"].get<std::string>(), id);
    } else {
        counters_.refused_orders.fetch_add(1, std::memory_order_relaxed);
        peer->send(failure(command, id,
                           "unknown command '" + command + "' (known: open, stop, resume, reset, Ping, evaluate)"));
    }
}

void Academy::open(const std::shared_ptr<Peer>& peer, const std::string& id) {
    std::weak_ptr<Peer> asker = peer;
    auto simulation = simulation_;
    std::weak_ptr<Academy> academy = weak_from_this();
    auto* io = &io_;
    const auto timeout = options_.call_timeout;
    const auto command = options_.simulation_command;
    const auto environment = node_environment(options_.node);
    const bool queued = simulation_worker_->post(
        [io, academy, simulation, asker, id, timeout, command, environment] {
            try {
                if (!command.empty()) {
                    simulation->process.end();
                    ProcessOptions p;
                    p.argv = command;
                    p.environment = environment;
                    simulation->process = ChildProcess(p);
                }
                auto& status = simulation->client("status");
                const auto deadline = std::chrono::steady_clock::now() + timeout;
                while (!status.wait_for_server(std::chrono::milliseconds(100))) {
                    if (!command.empty() && !simulation->process.running())
                        throw std::runtime_error("'" + command[0] + "' exited before its simulation '" +
                                                 simulation->name + "' answered");
                    if (std::chrono::steady_clock::now() >= deadline)
                        throw std::runtime_error("no simulation '" + simulation->name + "' answers on " +
                                                 simulation->name + "/control/status within " +
                                                 std::to_string(timeout.count()) + " ms");
                }
                const auto reply = status.call(sim::ControlRequest{"gecko-bridge academy"}, timeout);
                complete(*io, academy, asker, done("open", id, {{"status", status_json(reply.status)}}), Outcome::opened);
            } catch (const std::exception& e) {
                complete(*io, academy, asker, failure("open", id, e.what()), Outcome::refused);
            }
        },
        options_.max_waiting_orders);
    if (!queued) {
        counters_.refused_orders.fetch_add(1, std::memory_order_relaxed);
        peer->send(failure("open", id, "busy: " + std::to_string(options_.max_waiting_orders) +
                                           " orders already wait; send it again once they are answered"));
    }
}

void Academy::control(const std::shared_ptr<Peer>& peer, const std::string& command, const std::string& id) {
    std::weak_ptr<Peer> asker = peer;
    auto simulation = simulation_;
    std::weak_ptr<Academy> academy = weak_from_this();
    auto* io = &io_;
    const auto timeout = options_.call_timeout;
    const bool queued = simulation_worker_->post(
        [io, academy, simulation, asker, command, id, timeout] {
            try {
                const auto reply = simulation->client(command).call(sim::ControlRequest{"gecko-bridge academy"}, timeout);
                if (!reply.ok) throw std::runtime_error(simulation->name + "/control/" + command + ": " + reply.error);
                complete(*io, academy, asker, done(command, id, {{"status", status_json(reply.status)}}), Outcome::done);
            } catch (const std::exception& e) {
                complete(*io, academy, asker, failure(command, id, e.what()), Outcome::refused);
            }
        },
        options_.max_waiting_orders);
    if (!queued) {
        counters_.refused_orders.fetch_add(1, std::memory_order_relaxed);
        peer->send(failure(command, id, "busy: " + std::to_string(options_.max_waiting_orders) +
                                            " orders already wait; send it again once they are answered"));
    }
}

void Academy::evaluate(const std::shared_ptr<Peer>& peer, const std::string& code, const std::string& id) {
    std::weak_ptr<Peer> asker = peer;
    std::weak_ptr<Academy> academy = weak_from_this();
    auto* io = &io_;
    const std::vector<std::string> argv{options_.python, "-m", "gecko.academy.check"};
    const bool queued = check_worker_->post(
        [io, academy, asker, argv, code, id] {
            try {
                const auto output = run_with_input(argv, code, std::chrono::seconds(30));
                json errors = json::parse(output, nullptr, false);
                if (!errors.is_array())
                    throw std::runtime_error("the checker (" + argv[0] + " -m gecko.academy.check) wrote no list of errors");
                complete(*io, academy, asker, done("evaluate", id, {{"errors", std::move(errors)}}), Outcome::done);
            } catch (const std::exception& e) {
                complete(*io, academy, asker, failure("evaluate", id, e.what()), Outcome::refused);
            }
        },
        options_.max_waiting_orders);
    if (!queued) {
        counters_.refused_orders.fetch_add(1, std::memory_order_relaxed);
        peer->send(failure("evaluate", id, "busy: too many evaluations wait"));
    }
}

// ---------------------------------------------------------------- code

void Academy::code_message(const std::shared_ptr<Peer>& peer, std::string_view text) {
    counters_.code_messages.fetch_add(1, std::memory_order_relaxed);
    auto refuse = [&](const std::string& message) {
        counters_.refused_code.fetch_add(1, std::memory_order_relaxed);
        peer->send("#erro" + json_text(json{{"message", message}}));
    };
    const auto [name, body] = split_code_message(text);
    if (name == "#code") {
        brain_->load(std::string(body));
    } else if (name == "#play") {
        if (!open_) return refuse("no simulation is open: send the manager's open first");
        if (const auto why = brain_->play(); !why.empty()) refuse(why);
    } else if (name == "#stop") {
        brain_->stop();
    } else if (name == "#rest") {
        brain_->reset();
    } else if (name == "#freq") {
        const Frequencies f = read_frequencies(body);
        if (!f.error.empty()) return refuse(f.error);
        if (f.brain) brain_->set_frequency(*f.brain);
        if (f.gui) {
            brain_->set_gui_frequency(*f.gui);
            gui_->set_frequency(*f.gui);
        }
        brain_->report_frequencies();
    } else {
        refuse("unknown message '" + std::string(name) + "' (known: #code, #play, #stop, #rest, #freq)");
    }
}

}  // namespace gecko::bridge::academy
