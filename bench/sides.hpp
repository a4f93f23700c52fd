#pragma once
// One end of a benchmark link, raw ZeroMQ, Gecko or iceoryx, behind one interface so
// that the latency and throughput drivers run the very same loop for both.
//
// Payloads are opaque bytes whose first 8 bytes carry a tag (a sequence
// number) so that stale or probe messages can be told apart.
//
// - raw: a ZeroMQ PUB socket bound to `pub_endpoint`, a SUB socket connected
//   to `sub_endpoint` (subscribed to everything). A send copies the
//   application's bytes into a zmq message (zmq_send-style); a receive leaves
//   the payload in the zmq message and reads the tag from it in place, as a
//   raw ZeroMQ application would.
// - gecko: a Node without discovery, Publisher<gecko::msgs::Bytes> with
//   a node bound to exactly {pub_endpoint} (NodeOptions.listen) and linked to
//   {sub_endpoint} (NodeOptions.peers), Subscriber<Bytes>; receive(msg, timeout)
//   decodes into a reused struct.
// - gecko_raw (diagnostic): the same Node, RawPublisher::publish() of the
//   msgpack-encoded Bytes and RawSubscriber::receive() with a visitor that
//   reads the tag in place: Gecko's framing and socket handling without the
//   typed layer's decode copy.
// - iceoryx (bench/iceoryx.cpp, when built): UntypedPublisher/UntypedSubscriber
//   of iceoryx 2.0, the endpoints being instance names. A send loans a chunk,
//   copies the application's bytes into it and publishes; a receive takes a
//   chunk and reads the tag in place (held until the next receive); it waits on
//   a WaitSet, or spins on take() with `busy_poll`.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "common.hpp"

namespace bench {

struct SideOptions {
    std::string pub_endpoint;  ///< empty: no publisher
    std::string sub_endpoint;  ///< empty: no subscriber
    int send_hwm = 1000;       ///< raw ZMQ_SNDHWM; gecko NodeOptions.send_queue
    int recv_hwm = 10000;      ///< raw ZMQ_RCVHWM and gecko NodeOptions.receive_queue
    std::size_t depth = 16;    ///< gecko SubscriberOptions.depth
    std::string name = "bench";
    bool busy_poll = false;              ///< iceoryx: spin on take() instead of waiting on a WaitSet
    std::uint64_t queue_capacity = 256;  ///< iceoryx SubscriberOptions.queueCapacity (at most 256)
};

class Side {
public:
    virtual ~Side() = default;
    /// Gecko: waits until the publisher sees `count` subscribers. Raw
    /// ZeroMQ PUB cannot know: returns true (the drivers probe instead).
    virtual bool wait_subscribers(std::size_t count, milliseconds timeout) = 0;
    /// Publishes `size` (>= 8) bytes tagged with `tag`.
    virtual void send(std::uint64_t tag, std::size_t size) = 0;
    /// Waits up to `timeout` for one message; false on timeout.
    virtual bool receive(milliseconds timeout) = 0;
    /// Tag and size of the message last received.
    virtual std::uint64_t tag() const = 0;
    virtual std::size_t size() const = 0;
    /// Publishes the message last received, as it is.
    virtual void echo() = 0;
    /// receive() then echo() (the gecko raw layer echoes from inside its
    /// visitor, while the received bytes are still valid).
    virtual bool receive_and_echo(milliseconds timeout) {
        if (!receive(timeout)) return false;
        echo();
        return true;
    }
    /// Gecko subscriber counters (sequence gaps, ring overwrites); 0 for raw.
    virtual std::uint64_t drops() const { return 0; }
    virtual std::uint64_t overwritten() const { return 0; }
    /// iceoryx: sends that found no free chunk (loan failed), the message not sent; 0 for the others.
    virtual std::uint64_t send_failures() const { return 0; }
};

std::unique_ptr<Side> make_side(Impl impl, const SideOptions& options);

}  // namespace bench
