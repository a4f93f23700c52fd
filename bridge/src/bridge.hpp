// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file bridge.hpp
/// The bridge between one Gecko key and its WebSocket clients: the key's
/// topics as Foxglove channels (json with a JSON Schema, and raw msgpack),
/// its services, its graph; each client's subscriptions, publications and
/// calls, and its Outbox (outbox.hpp). Everything a client sees happens on
/// one thread, the io_context's; Gecko's callbacks and the blocking calls
/// (services, graph) run elsewhere and post their results to it.
///
/// The transport (HTTP, WebSocket, TLS) is server.hpp's: it hands the bridge
/// each client's messages and writes what the client's Outbox gives it.

#include "counters.hpp"
#include "outbox.hpp"
#include "protocol.hpp"

#include <gecko/node.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <atomic>
#include <chrono>
#include <optional>
#include <thread>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace gecko::bridge {

struct BridgeOptions {
    NodeOptions node;                                  ///< the key and how to reach it
    std::string name = "gecko-bridge";                 ///< serverInfo's name
    OutboxLimits outbox;                               ///< each client's queues and budget
    std::size_t max_subscriptions = 1024;              ///< per client
    std::size_t max_client_channels = 256;             ///< channels one client may advertise
    std::size_t max_calls_in_flight = 32;              ///< service calls per client at once
    std::chrono::milliseconds call_timeout{5000};      ///< a service call's reply deadline
    std::size_t topic_depth = 64;                      ///< each Gecko subscription's queue (messages)
    std::chrono::milliseconds drop_report{2000};       ///< how often drop counts are told to a client
    std::chrono::milliseconds probe{2000};             ///< how long a schemaless topic is listened to before it is advertised anyway
};

/// What the transport does for a client: write when there is something to
/// write, and close (with a reason the client is told when it can be).
class Connection {
public:
    virtual ~Connection() = default;
    virtual void wake() = 0;
    virtual void disconnect(const std::string& reason) = 0;
};

struct Client;

class Bridge : public std::enable_shared_from_this<Bridge> {
public:
    Bridge(BridgeOptions options, boost::asio::io_context& io);
    ~Bridge();
    Bridge(const Bridge&) = delete;
    Bridge& operator=(const Bridge&) = delete;

    /// Starts the node and follows the key's directory.
    /// @throws gecko::Error if the node cannot start or has no discovery.
    void start();
    /// Closes the node (its subscriptions and publishers) and every client.
    void stop();

    // ---- from the transport, on the io thread
    /// A client connected with `subprotocol`; it gets serverInfo and the key's channels.
    std::shared_ptr<Client> connect(Connection& connection, std::string subprotocol, std::string remote);
    void on_text(Client& client, std::string_view text);
    void on_binary(Client& client, const std::uint8_t* data, std::size_t size);
    void disconnected(Client& client);
    /// The next thing to write to `client`; nothing when its Outbox is empty.
    std::optional<Outbox::Next> next(Client& client);
    /// The last next() was written.
    void sent(Client& client, std::size_t bytes);

    /// The key's topics with their figures, as JSON, for the page (/api/topics).
    void topics_json(std::function<void(std::string)> done);
    Counters& counters() noexcept { return counters_; }
    std::string stats_json() const;
    const BridgeOptions& options() const noexcept { return options_; }
    std::size_t client_count() const noexcept { return clients_.size(); }

    struct Topic;
    struct Service;
    struct Feed;
    struct Frame;

private:
    // topics.cpp: the key's directory as channels, and the Gecko subscriptions behind them
    void on_directory(const DirectoryEvent& event);
    void add_topic(const ChannelInfo& info);
    void update_topic(Topic& topic, const ChannelInfo& info);
    void remove_topic(const std::string& name);
    void advertise_topic(Topic& topic);
    void unadvertise_topic(Topic& topic);
    void readvertise_json(Topic& topic, std::string schema);
    std::vector<AdvertisedChannel> channels_of(const Topic& topic) const;
    void add_service(const ChannelInfo& info);
    void remove_service(const std::string& name);
    void sync_feed(Topic& topic);  // a Gecko subscription exactly while someone wants it
    void open_feed(Topic& topic);
    void deliver_pending(const std::shared_ptr<Feed>& feed);  // the frames the node's thread queued
    void deliver(const std::shared_ptr<Feed>& feed, const std::shared_ptr<const Frame>& frame);
    void refine(const std::shared_ptr<Feed>& feed, std::string schema);
    void probe_done(const std::string& topic, std::uint64_t generation);
    Topic* topic_of_channel(std::uint32_t channel, bool* json = nullptr);

    // requests.cpp: what a client asks
    void subscribe(Client& client, const TextRequest& request);
    void unsubscribe(Client& client, const std::vector<std::uint32_t>& ids);
    void drop_subscription(Client& client, std::uint32_t id);
    void client_advertise(Client& client, const TextRequest& request);
    void client_unadvertise(Client& client, const std::vector<std::uint32_t>& ids);
    void client_message(Client& client, const BinaryRequest& request);
    void service_call(Client& client, const BinaryRequest& request);
    void send(Client& client, std::string frame, bool binary = false);
    void tell(Client& client, StatusLevel level, const std::string& message, const std::string& id = "");
    void broadcast(const std::string& frame);
    void report_drops();
    void after_push(Client& client, std::uint32_t subscription, Outbox::Drop drop, const std::string& topic);

    // graph.cpp: connectionGraph and the page's figures
    void refresh_graph();
    void send_graph(Client& client, const GraphUpdate& update, bool full);

    // Blocking work (service calls, graph queries) on threads of their own.
    void run_blocking(std::function<void()> job);
    void schedule_drop_report();

    BridgeOptions options_;
    boost::asio::io_context& io_;
    std::unique_ptr<Node> node_;
    DirectoryWatch watch_;
    Counters counters_;
    std::string session_id_;

    std::map<std::string, std::unique_ptr<Topic>> topics_;     // by name
    std::map<std::uint32_t, std::pair<Topic*, bool>> channels_;  // channel id -> (topic, json?)
    std::map<std::string, std::unique_ptr<Service>> services_;
    std::map<std::uint32_t, Service*> service_ids_;
    std::uint32_t next_channel_ = 1;
    std::uint32_t next_service_ = 1;
    std::uint64_t next_client_ = 1;
    std::map<std::uint64_t, std::shared_ptr<Client>> clients_;

    boost::asio::steady_timer drop_timer_;
    boost::asio::steady_timer graph_timer_;     // looks at the graph again while clients follow it
    boost::asio::steady_timer graph_debounce_;  // one look per burst of directory events
    bool graph_pending_ = false;
    bool graph_query_running_ = false;
    std::shared_ptr<const GraphUpdate> last_graph_;
    std::string topics_cache_;
    std::chrono::steady_clock::time_point topics_cache_at_{};

    struct Workers;
    std::shared_ptr<Workers> workers_;
    std::thread spinner_;  // the node's second spin thread
    std::atomic<bool> stopping_{false};
};

}  // namespace gecko::bridge
