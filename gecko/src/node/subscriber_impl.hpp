// SPDX-License-Identifier: Apache-2.0
#pragma once
// The implementation behind RawSubscriber (subscriber.cpp).

#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>

#include "gecko/raw_subscriber.hpp"
#include "node/node_impl.hpp"
#include "node/sink.hpp"

namespace gecko::detail {

class SubscriberImpl final : public Entity, public Dispatchable, public std::enable_shared_from_this<SubscriberImpl> {
public:
    /// `key_wide`: a subscription of every topic of the key it takes
    /// (`topic` is then unused), else one of `topic`.
    SubscriberImpl(std::shared_ptr<NodeImpl> node, std::string topic, SubscriberOptions options,
                   std::function<void(const RawView&)> callback, std::optional<TopicFilter> key_wide = std::nullopt);
    ~SubscriberImpl() override;
    /// Routes and registers it; once the shared_ptr exists.
    void start();

    /// `keep`: if not null, the payload outlives the call while *keep is held.
    bool receive(std::chrono::nanoseconds timeout, RawSubscriber::Visitor visit,
                 std::shared_ptr<const void>* keep = nullptr);
    SubscriberStats stats() const { return sink_.stats(); }
    const std::string& topic() const { return topic_; }
    const std::string& type_name() const { return options_.type_name; }

    // Entity
    std::uint64_t id() const override { return id_; }
    TopicStats report() override;
    void node_closed() override;
    bool heard_since(const std::vector<std::uint64_t>& senders, std::int64_t since_ns) const override;
    void peers_changed(const std::vector<Peer>& peers) override;
    void tick() override;
    void refused(const std::string& message) override;
    void directory_changed(const std::vector<DirectoryEvent>& events) override;
    void directory_unsupported() override;
    // Dispatchable
    bool ready() const override;
    std::size_t dispatch(std::size_t budget) override;

private:
    template <class Visit>
    bool deliver(Delivery& d, Visit& visit, std::shared_ptr<const void>* keep = nullptr);
    bool closed() {
        std::lock_guard<std::mutex> lock(close_mutex_);
        return closed_;
    }

    std::shared_ptr<NodeImpl> node_;
    std::string topic_;
    SubscriberOptions options_;
    std::function<void(const RawView&)> callback_;
    std::optional<TopicFilter> key_wide_;
    std::uint64_t id_;
    Sink sink_;
    std::string announcement_;
    std::mutex close_mutex_;
    bool closed_ = false;
    std::mutex peers_mutex_;
    std::set<std::uint64_t> listed_;
};

}  // namespace gecko::detail
