#pragma once
// What every entity of a node shares: the ZeroMQ context, the logger, the
// executor, and the discovery client. Entities hold it by shared_ptr, so a
// handle outliving its Node still works until it is destroyed.

#include <atomic>
#include <condition_variable>
#include <map>
#include <mutex>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "core/executor.hpp"
#include "gecko/log.hpp"
#include "gecko/node.hpp"
#include "transport/context.hpp"

namespace gecko::detail {

class DiscoveryClient;

/// Kinds of entity, as registered with the core.
enum class Role { publisher, subscriber, server, client };

class NodeCore {
public:
    explicit NodeCore(NodeOptions options);
    ~NodeCore();

    const NodeOptions& options() const noexcept { return options_; }
    const Logger& logger() const noexcept { return logger_; }
    zmq::context_t& context() noexcept { return *context_; }
    Executor& executor() noexcept { return executor_; }

    /// A fresh random 64-bit id for an entity.
    std::uint64_t new_id();

    /// Endpoints to bind for an entity that was given none: an ipc socket
    /// (same-host peers) and a tcp port (other hosts).
    std::vector<std::string> automatic_endpoints(const std::string& name, std::uint64_t id) const;

    /// Registers an entity with the discovery core (no-op without discovery).
    void advertise(Role role, std::uint64_t id, const std::string& topic, const std::string& type_name,
                   const std::vector<std::string>& endpoints);
    /// Registers interest; `on_endpoints` gets the endpoints to be connected
    /// to (ipc for same-host peers, tcp otherwise) whenever they change, from
    /// the discovery thread.
    void watch(Role role, std::uint64_t id, const std::string& topic, const std::string& type_name,
               std::function<void(const std::vector<std::string>&)> on_endpoints);
    void withdraw(std::uint64_t id);
    bool wait_for_core(std::chrono::milliseconds timeout);

    /// Counters an entity exposes for the periodic report to the core.
    struct Counters {
        std::uint64_t messages = 0, bytes = 0, drops = 0;
        std::int64_t latency_ns = -1;
    };
    /// Reports `source()` to the core every ~3 s (rates from the differences)
    /// until remove_stats_source(id). No-op without discovery.
    void add_stats_source(std::uint64_t id, std::function<Counters()> source);
    void remove_stats_source(std::uint64_t id);

    void start_background_spinner();
    void stop_background_spinner();

private:
    NodeOptions options_;
    Logger logger_;
    std::shared_ptr<zmq::context_t> context_;
    Executor executor_;
    std::mt19937_64 random_;
    std::mutex random_mutex_;
    std::string hostname_;
    std::string host_id_;  // net::host_id(): decides whether a peer's ipc endpoint is reachable
    std::unique_ptr<DiscoveryClient> discovery_;
    void report_loop();
    struct Source {
        std::function<Counters()> read;
        Counters last;
    };
    std::mutex sources_mutex_;
    std::map<std::uint64_t, Source> sources_;
    std::condition_variable reporter_wake_;
    bool reporter_stop_ = false;
    std::thread reporter_;
    std::thread spinner_;
    std::atomic<bool> spinning_{false};
};

}  // namespace gecko::detail
