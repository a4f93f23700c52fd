// SPDX-License-Identifier: Apache-2.0
// The bridge's life: its node and directory watch, clients coming and going,
// the threads for blocking work (bridge.hpp).
#include "state.hpp"

#include <gecko/error.hpp>

#include <boost/asio/post.hpp>

#include <random>

namespace gecko::bridge {

/// Threads for what blocks (service calls, graph queries), so that the io
/// thread never waits on Gecko. Bounded: past `max_jobs` waiting, a job is
/// refused (run at once with nothing done is worse than a refusal the
/// caller sees as a failure, so the caller's job is told via `refused`).
struct Bridge::Workers {
    std::mutex mutex;
    std::condition_variable wake;
    std::deque<std::function<void()>> jobs;
    std::vector<std::thread> threads;
    bool stopping = false;
    static constexpr std::size_t max_jobs = 4096;

    explicit Workers(std::size_t n) {
        for (std::size_t i = 0; i < n; ++i)
            threads.emplace_back([this] {
                for (;;) {
                    std::function<void()> job;
                    {
                        std::unique_lock<std::mutex> lock(mutex);
                        wake.wait(lock, [&] { return stopping || !jobs.empty(); });
                        if (stopping) return;
                        job = std::move(jobs.front());
                        jobs.pop_front();
                    }
                    job();
                }
            });
    }
    bool post(std::function<void()> job) {
        {
            std::lock_guard<std::mutex> lock(mutex);
            if (stopping || jobs.size() >= max_jobs) return false;
            jobs.push_back(std::move(job));
        }
        wake.notify_one();
        return true;
    }
    void stop() {
        {
            std::lock_guard<std::mutex> lock(mutex);
            stopping = true;
            jobs.clear();
        }
        wake.notify_all();
        for (auto& t : threads)
            if (t.joinable()) t.join();
        threads.clear();
    }
    ~Workers() { stop(); }
};

Bridge::Bridge(BridgeOptions options, boost::asio::io_context& io)
    : options_(std::move(options)), io_(io), drop_timer_(io), graph_timer_(io), graph_debounce_(io) {
    std::random_device random;
    session_id_ = std::to_string(std::uniform_int_distribution<std::uint64_t>()(random));
}

Bridge::~Bridge() { stop(); }

void Bridge::start() {
    node_ = std::make_unique<Node>(options_.node);
    workers_ = std::make_shared<Workers>(2);
    // Two threads spin the node: one topic's callback (a large image being
    // encoded) does not hold up another's (a small state message).
    node_->spin_in_background();
    std::weak_ptr<Bridge> weak = weak_from_this();
    watch_ = node_->watch_directory([weak, this](const DirectoryEvent& event) {
        if (auto self = weak.lock()) boost::asio::post(io_, [self, event] { self->on_directory(event); });
    });
    spinner_ = std::thread([this] {
        try {
            while (!stopping_.load()) node_->spin_once(std::chrono::milliseconds(100));
        } catch (const std::exception& e) {
            node_->logger().error(std::string("gecko-bridge: a spin thread stopped: ") + e.what());
        }
    });
    schedule_drop_report();
}

void Bridge::schedule_drop_report() {
    drop_timer_.expires_after(options_.drop_report);
    drop_timer_.async_wait([weak = weak_from_this()](const boost::system::error_code& ec) {
        if (auto self = weak.lock(); self && !ec) {
            self->report_drops();
            self->schedule_drop_report();
        }
    });
}

void Bridge::stop() {
    if (!node_) return;
    stopping_.store(true);
    drop_timer_.cancel();
    graph_timer_.cancel();
    graph_debounce_.cancel();
    for (auto& [id, client] : clients_)
        if (client->connection) client->connection->disconnect("the bridge is stopping");
    if (workers_) workers_->stop();
    watch_.reset();
    if (spinner_.joinable()) spinner_.join();
    for (auto& [name, topic] : topics_) topic->feed.reset();
    for (auto& [id, client] : clients_) client->publications.clear();
    for (auto& [name, service] : services_) service->caller.reset();
    node_->stop_spinning();
    node_.reset();
}

void Bridge::run_blocking(std::function<void()> job) {
    if ((!workers_ || !workers_->post(std::move(job))) && node_)
        node_->logger().warn("gecko-bridge: too much blocking work waiting; a call or graph query was not made");
}

std::shared_ptr<Client> Bridge::connect(Connection& connection, std::string subprotocol, std::string remote) {
    auto client = std::make_shared<Client>();
    client->id = next_client_++;
    client->connection = &connection;
    client->subprotocol = std::move(subprotocol);
    client->remote = std::move(remote);
    client->outbox = Outbox(options_.outbox);
    clients_[client->id] = client;
    counters_.connections.fetch_add(1, std::memory_order_relaxed);

    send(*client, server_info(options_.name, {"clientPublish", "services", "connectionGraph"}, {"json", "msgpack"},
                              {{"key", options_.node.key}, {"gecko", "bridge"}}, session_id_));
    std::vector<AdvertisedChannel> channels;
    for (const auto& [name, topic] : topics_)
        if (topic->json_id) {
            auto both = channels_of(*topic);
            channels.insert(channels.end(), both.begin(), both.end());
        }
    if (!channels.empty()) send(*client, advertise(channels));
    std::vector<AdvertisedService> services;
    const wire::Schema empty;
    for (const auto& [name, s] : services_) {
        AdvertisedService a;
        a.id = s->id;
        a.name = s->name;
        a.type = s->type;
        a.request_type = s->request_type;
        a.reply_type = s->reply_type;
        a.request_schema = json_schema_of(s->schema ? *s->schema : empty, s->request_type);
        a.reply_schema = json_schema_of(s->schema ? *s->schema : empty, s->reply_type);
        services.push_back(std::move(a));
    }
    if (!services.empty()) send(*client, advertise_services(services));
    return client;
}

void Bridge::disconnected(Client& client) {
    client.connection = nullptr;
    std::vector<std::uint32_t> subs;
    for (const auto& [id, s] : client.subscriptions) subs.push_back(id);
    for (const auto id : subs) drop_subscription(client, id);
    client.publications.clear();
    clients_.erase(client.id);  // may destroy `client`: last
}

std::optional<Outbox::Next> Bridge::next(Client& client) {
    auto n = client.outbox.next();
    if (n && !n->control) counters_.messages_sent.fetch_add(1, std::memory_order_relaxed);
    return n;
}

void Bridge::sent(Client& client, std::size_t bytes) {
    client.outbox.sent();
    counters_.bytes_sent.fetch_add(bytes, std::memory_order_relaxed);
}

std::string Bridge::stats_json() const {
    std::size_t queued = 0;
    for (const auto& [id, c] : clients_) queued += c->outbox.data_bytes();
    return counters_.json("\"clients\":" + std::to_string(clients_.size()) + ",\"topics\":" +
                          std::to_string(topics_.size()) + ",\"services\":" + std::to_string(services_.size()) +
                          ",\"queued_bytes\":" + std::to_string(queued));
}

}  // namespace gecko::bridge
