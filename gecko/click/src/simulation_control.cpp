// SPDX-License-Identifier: Apache-2.0
// The control services and status topic of a simulation. A service handler
// runs on the node's spinner, never on the simulation's thread: it leaves its
// operation in the mailbox and waits; the simulation's thread takes the
// operations one at a time between two lockstep requests (so none
// interleaves with a step or with another operation), carries each out and
// wakes its caller, who answers only then.
#include "simulation_control.hpp"

#include <gecko/time.hpp>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <utility>

namespace gecko::click::detail {

namespace {

using ControlService = Service<msgs::sim::ControlRequest, msgs::sim::ControlReply>;

const char* verb_of(ControlOperation operation) {
    switch (operation) {
        case ControlOperation::resume: return "resume";
        case ControlOperation::pause: return "pause";
        case ControlOperation::reset: return "reset";
        case ControlOperation::status: return "status";
    }
    return "?";
}

}  // namespace

struct SimulationControl::Mailbox {
    struct Order {
        ControlOperation operation{ControlOperation::status};
        std::string service;
        std::string requester;
        bool taken = false;  // the simulation's thread is carrying it out
        bool done = false;
        msgs::sim::ControlReply reply;
    };

    std::string simulation;
    std::chrono::milliseconds timeout{10000};
    std::mutex mutex;
    std::condition_variable answered;
    std::deque<std::shared_ptr<Order>> queue;
    std::string closed;  // why operations are refused; empty while open
    std::atomic<bool> waiting{false};
    std::atomic<double> brain_hz{0.0};

    msgs::sim::ControlReply refusal(std::string why) const {
        msgs::sim::ControlReply r;
        r.ok = false;
        r.error = std::move(why);
        r.status.simulation = simulation;
        r.status.stamp_ns = now_ns();
        return r;
    }

    // On the node's spinner: hands `operation` over and waits for its outcome.
    msgs::sim::ControlReply post(ControlOperation operation, const std::string& service, const std::string& requester) {
        auto order = std::make_shared<Order>();
        order->operation = operation;
        order->service = service;
        order->requester = requester;
        std::unique_lock<std::mutex> lock(mutex);
        if (!closed.empty()) return refusal(closed);
        queue.push_back(order);
        waiting.store(true, std::memory_order_release);
        answered.wait_for(lock, timeout, [&] { return order->done || !closed.empty(); });
        if (order->done) return order->reply;
        if (!order->taken) queue.erase(std::remove(queue.begin(), queue.end(), order), queue.end());
        if (!closed.empty() && !order->taken) return refusal(closed);
        return refusal("simulation '" + simulation + "' did not carry out '" + verb_of(operation) + "' within " +
                       std::to_string(timeout.count()) + " ms" +
                       (order->taken ? " (it is still under way)"
                                     : ": its thread is not serving (SimulationServer::spin_once() not called)"));
    }
};

SimulationControl::SimulationControl(Node& node, const std::string& simulation, const SimulationServerOptions& options)
    : mailbox_(std::make_shared<Mailbox>()), period_(options.status_period) {
    mailbox_->simulation = simulation;
    mailbox_->timeout = options.control_timeout;
    const std::pair<const char*, ControlOperation> offered[] = {
        {"start", ControlOperation::resume}, {"resume", ControlOperation::resume},
        {"stop", ControlOperation::pause},   {"pause", ControlOperation::pause},
        {"reset", ControlOperation::reset},  {"status", ControlOperation::status}};
    for (const auto& [verb, operation] : offered) {
        const std::string name = simulation + "/control/" + verb;
        services_.push_back(node.service<msgs::sim::ControlRequest, msgs::sim::ControlReply>(
            name, [mailbox = mailbox_, operation = operation, name](const msgs::sim::ControlRequest& request) {
                return mailbox->post(operation, name, request.requester);
            }));
    }
    status_topic_ = node.publisher<msgs::sim::Status>(simulation + "/status");
    node.spin_in_background();  // the handlers wait for this thread: they must run on another
}

SimulationControl::~SimulationControl() { close("simulation '" + mailbox_->simulation + "' is gone"); }

bool SimulationControl::pending() const noexcept { return mailbox_->waiting.load(std::memory_order_relaxed); }

void SimulationControl::serve(ControlTarget& target) {
    for (;;) {
        std::shared_ptr<Mailbox::Order> order;
        {
            std::lock_guard<std::mutex> lock(mailbox_->mutex);
            if (mailbox_->queue.empty()) {
                mailbox_->waiting.store(false, std::memory_order_relaxed);
                return;
            }
            order = mailbox_->queue.front();
            mailbox_->queue.pop_front();
            order->taken = true;
        }
        msgs::sim::ControlReply reply;
        const auto wrong = target.carry_out(order->operation, order->requester);
        ++operations_;
        reply.ok = !wrong;
        if (wrong) reply.error = *wrong;
        reply.status = status_with_rates(target);
        if (order->operation != ControlOperation::status) status_topic_.publish(reply.status);
        {
            std::lock_guard<std::mutex> lock(mailbox_->mutex);
            order->reply = std::move(reply);
            order->done = true;
        }
        mailbox_->answered.notify_all();
    }
}

msgs::sim::Status SimulationControl::status_with_rates(ControlTarget& target) {
    msgs::sim::Status s = target.status_now();
    s.steps_per_s = steps_per_s_;
    s.real_time_factor = real_time_factor_;
    s.brain_frequency = mailbox_->brain_hz.load(std::memory_order_relaxed);
    return s;
}

void SimulationControl::publish_status(ControlTarget& target, bool force) {
    const auto now = std::chrono::steady_clock::now();
    if (!window_started_) {
        const auto s = target.status_now();
        window_started_ = true;
        window_start_ = now;
        window_steps_ = s.steps;
        window_time_ = s.simulated_time;
        window_resets_ = s.resets;
    }
    const bool due = period_.count() > 0 && now - window_start_ >= period_;
    if (!due && !force) return;
    if (due) {
        // The rates over the period that just ended; a reset within it restarted the simulated clock.
        const auto s = target.status_now();
        const double seconds = std::chrono::duration<double>(now - window_start_).count();
        const double advanced = s.resets != window_resets_ ? s.simulated_time : s.simulated_time - window_time_;
        steps_per_s_ = static_cast<double>(s.steps - window_steps_) / seconds;
        real_time_factor_ = std::max(0.0, advanced) / seconds;
        window_start_ = now;
        window_steps_ = s.steps;
        window_time_ = s.simulated_time;
        window_resets_ = s.resets;
    }
    status_topic_.publish(status_with_rates(target));
}

void SimulationControl::close(const std::string& why) {
    {
        std::lock_guard<std::mutex> lock(mailbox_->mutex);
        if (mailbox_->closed.empty()) mailbox_->closed = why;
    }
    mailbox_->answered.notify_all();
}

void SimulationControl::report_brain_frequency(double hz) noexcept {
    mailbox_->brain_hz.store(hz, std::memory_order_relaxed);
}

}  // namespace gecko::click::detail
