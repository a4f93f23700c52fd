// SPDX-License-Identifier: Apache-2.0
#pragma once
// A WebSocket client of the benchmark (Boost.Beast): of gecko-bridge (the
// Foxglove protocol: it subscribes to topics by name and encoding) or of the
// forwarder (it names the topics it wants). It records, per message, when it
// arrived, when the server's Gecko subscriber had it, and the publisher's stamp.
#include <boost/asio/io_context.hpp>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace bench_bridge {

struct Want {
    std::string topic;
    std::string encoding = "msgpack";  ///< bridge: "json" or "msgpack"
    unsigned depth = 0;                ///< bridge: the queue asked for (Gecko extension); 0: the bridge's default
};

struct Sample {
    std::int64_t received_ns;  ///< this client's clock when the message arrived
    std::int64_t gecko_ns;     ///< the server's Gecko subscriber's receive time
    std::int64_t stamp_ns;     ///< the publisher's stamp_ns (when it published)
};

class WsClient {
public:
    enum class Server { bridge, forwarder };
    WsClient(boost::asio::io_context& io, int port, Server server, std::vector<Want> wants);
    ~WsClient();
    void start();
    bool subscribed() const { return subscribed_.load(); }
    /// Records samples from now on (earlier messages are only counted).
    void record(bool on) { recording_.store(on); }
    std::vector<std::vector<Sample>> take();  ///< per want; clears
    std::uint64_t received(std::size_t want) const { return counts_[want]->load(); }
    std::string error() const;

    struct Impl;

private:
    std::shared_ptr<Impl> impl_;
    std::atomic<bool> subscribed_{false}, recording_{false};
    std::vector<std::unique_ptr<std::atomic<std::uint64_t>>> counts_;
};

}  // namespace bench_bridge
