// SPDX-License-Identifier: Apache-2.0
// In-process queues behind the seam. An OutPort is registered by name
// ("mem://<session>"); an InPort that connects to it becomes one of its peers
// and hands it its interests, which the OutPort reports as PortEvents, as an
// XPUB reports subscriptions. send() copies the frame once into a shared
// buffer and queues a reference in each interested peer's bounded queue
// (full: the frame is dropped for that peer, and the drop is reported).

#include "transport/mem_transport.hpp"

#include <sys/eventfd.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <deque>
#include <map>
#include <mutex>
#include <set>

namespace gecko::detail {
namespace {

using Bytes = SharedBytes;

class MemOutPort;
class MemInPort;

// Every OutPort of the process, by locator. Guards the links between ports.
struct Registry {
    std::mutex mutex;
    std::map<std::string, MemOutPort*> out_ports;
};
Registry& registry() {
    static Registry r;
    return r;
}

struct Queue {
    std::mutex mutex;
    std::deque<Bytes> frames;
    std::size_t capacity = 1000;
    int fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    ~Queue() { ::close(fd); }
    bool push(const Bytes& b) {
        {
            std::lock_guard<std::mutex> lock(mutex);
            if (frames.size() >= capacity) return false;
            frames.push_back(b);
        }
        const std::uint64_t one = 1;
        [[maybe_unused]] auto n = ::write(fd, &one, sizeof one);
        return true;
    }
};

bool matches(const Interest& i, wire::Channel channel) {
    return i.wildcard ? wire::key_part(i.channel) == wire::key_part(channel) : i.channel == channel;
}

class MemOutPort final : public OutPort {
public:
    explicit MemOutPort(const PortOptions& o) {
        char name[40];
        std::snprintf(name, sizeof name, "mem://gecko-%016llx", static_cast<unsigned long long>(o.session));
        locator_ = name;
        std::lock_guard<std::mutex> lock(registry().mutex);
        registry().out_ports[locator_] = this;
    }
    ~MemOutPort() override;

    std::vector<std::string> locators() const override { return {locator_}; }

    bool takes_memory() const override { return false; }  // send() copies

    SendResult send(Buffer& frame) override {
        if (frame.size() < 8) return SendResult{false, 0};
        const wire::Channel channel = wire::load_channel(frame.data());
        Bytes bytes;
        SendResult result;
        std::lock_guard<std::mutex> lock(registry().mutex);
        for (auto& [peer, interests] : peers_) {
            bool wanted = false;
            for (const auto& i : interests) wanted = wanted || matches(i, channel);
            if (!wanted) continue;
            if (!bytes) bytes = std::make_shared<const std::vector<std::uint8_t>>(frame.data(), frame.data() + frame.size());
            if (!peer_queue(peer).push(bytes)) ++result.dropped;
        }
        return result;
    }

    void drain_events(FunctionRef<void(const PortEvent&)> on) override {
        std::vector<PortEvent> events;
        {
            std::lock_guard<std::mutex> lock(registry().mutex);
            events.swap(events_);
            std::uint64_t v;
            [[maybe_unused]] auto n = ::read(fd_, &v, sizeof v);
        }
        for (const auto& e : events) on(e);
    }
    bool events_pending() override {
        std::lock_guard<std::mutex> lock(registry().mutex);
        return !events_.empty();
    }
    int event_fd() const override { return fd_; }

    // Called with the registry locked.
    void add_interest(MemInPort* peer, const Interest& i) {
        peers_[peer].push_back(i);
        report(true, i);
    }
    void remove_interest(MemInPort* peer, const Interest& i) {
        auto& v = peers_[peer];
        const auto it = std::find_if(v.begin(), v.end(), [&](const Interest& x) { return x.announcement == i.announcement; });
        if (it == v.end()) return;
        v.erase(it);
        report(false, i);
    }
    void drop_peer(MemInPort* peer) {
        const auto it = peers_.find(peer);
        if (it == peers_.end()) return;
        for (const auto& i : it->second) report(false, i);
        peers_.erase(it);
    }

private:
    void report(bool joined, const Interest& i) {
        auto who = wire::parse_announcement(i.announcement);
        if (!who) return;
        events_.push_back(PortEvent{joined, std::move(*who)});
        const std::uint64_t one = 1;
        [[maybe_unused]] auto n = ::write(fd_, &one, sizeof one);
    }
    static Queue& peer_queue(MemInPort* peer);

    std::string locator_;
    std::map<MemInPort*, std::vector<Interest>> peers_;
    std::vector<PortEvent> events_;
    int fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
};

class MemInPort final : public InPort {
public:
    explicit MemInPort(const PortOptions& o) { queue_.capacity = static_cast<std::size_t>(std::max(1, o.receive_queue)); }
    ~MemInPort() override {
        std::lock_guard<std::mutex> lock(registry().mutex);
        for (const auto& locator : connected_) {
            const auto it = registry().out_ports.find(locator);
            if (it != registry().out_ports.end()) it->second->drop_peer(this);
        }
    }

    bool may_open_later(const std::string& locator) const override { return scheme_of(locator) == "mem"; }

    bool connect(const std::string& locator, std::string& why) override {
        std::lock_guard<std::mutex> lock(registry().mutex);
        const auto it = registry().out_ports.find(locator);
        if (it == registry().out_ports.end()) {
            why = "no in-process port " + locator + " in this process";
            return false;
        }
        if (!connected_.insert(locator).second) return true;
        for (const auto& i : interests_) it->second->add_interest(this, i);
        return true;
    }

    void disconnect(const std::string& locator) override {
        std::lock_guard<std::mutex> lock(registry().mutex);
        if (!connected_.erase(locator)) return;
        const auto it = registry().out_ports.find(locator);
        if (it != registry().out_ports.end()) it->second->drop_peer(this);
    }

    void subscribe(const Interest& i) override {
        std::lock_guard<std::mutex> lock(registry().mutex);
        interests_.push_back(i);
        for_each_connected([&](MemOutPort& out) { out.add_interest(this, i); });
    }

    void unsubscribe(const Interest& i) override {
        std::lock_guard<std::mutex> lock(registry().mutex);
        const auto it = std::find_if(interests_.begin(), interests_.end(),
                                     [&](const Interest& x) { return x.announcement == i.announcement; });
        if (it != interests_.end()) interests_.erase(it);
        for_each_connected([&](MemOutPort& out) { out.remove_interest(this, i); });
    }

    bool take(Frame& out) override {
        Bytes b;
        {
            std::lock_guard<std::mutex> lock(queue_.mutex);
            if (queue_.frames.empty()) return false;
            b = std::move(queue_.frames.front());
            queue_.frames.pop_front();
        }
        out = frame_of(std::move(b));
        return true;
    }

    bool ready_now() override {
        std::lock_guard<std::mutex> lock(queue_.mutex);
        return !queue_.frames.empty();
    }

    unsigned wait(std::chrono::nanoseconds timeout, const std::array<int, 2>& also) override {
        if (ready_now()) return 1;
        pollfd p[3] = {{queue_.fd, POLLIN, 0}, {also[0], POLLIN, 0}, {also[1], POLLIN, 0}};
        const int ms = timeout.count() <= 0 ? 0 : static_cast<int>((timeout.count() + 999999) / 1000000);
        if (::poll(p, 3, ms) <= 0) return 0;
        if (p[0].revents & POLLIN) {
            std::uint64_t v;
            [[maybe_unused]] auto r = ::read(queue_.fd, &v, sizeof v);
        }
        unsigned fired = 0;
        for (unsigned i = 0; i < 3; ++i)
            if (p[i].revents & (POLLIN | POLLERR | POLLHUP)) fired |= 1u << i;
        return fired;
    }

    int event_fd() const override { return queue_.fd; }

    Queue& queue() { return queue_; }

private:
    template <class F>
    void for_each_connected(F&& f) {
        for (const auto& locator : connected_) {
            const auto it = registry().out_ports.find(locator);
            if (it != registry().out_ports.end()) f(*it->second);
        }
    }

    Queue queue_;
    std::set<std::string> connected_;
    std::vector<Interest> interests_;
};

Queue& MemOutPort::peer_queue(MemInPort* peer) { return peer->queue(); }

MemOutPort::~MemOutPort() {
    std::lock_guard<std::mutex> lock(registry().mutex);
    registry().out_ports.erase(locator_);
    ::close(fd_);
}

class MemTransport final : public Transport {
public:
    std::vector<std::string> schemes() const override { return {"mem"}; }
    std::unique_ptr<OutPort> open_out(const PortOptions& o) override { return std::make_unique<MemOutPort>(o); }
    std::unique_ptr<InPort> open_in(const PortOptions& o) override { return std::make_unique<MemInPort>(o); }
};

}  // namespace

std::unique_ptr<Transport> make_mem_transport() { return std::make_unique<MemTransport>(); }

}  // namespace gecko::detail
