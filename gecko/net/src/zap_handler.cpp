// SPDX-License-Identifier: Apache-2.0
#include "gecko/net/zap_handler.hpp"

#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "gecko/error.hpp"
#include "gecko/log.hpp"

namespace gecko::net {

namespace {

std::atomic<std::uint64_t> admitted_total{0};
std::atomic<std::uint64_t> refused_total{0};

constexpr const char* zap_endpoint = "inproc://zeromq.zap.01";

std::string printable_address(const std::string& a) { return a.empty() ? "an unknown address" : a; }

}  // namespace

ZapCounters zap_counters() noexcept { return ZapCounters{admitted_total.load(), refused_total.load()}; }

/// One context's handler: the domain table and the thread that answers.
class ZapHandler {
public:
    ZapHandler(std::shared_ptr<zmq::context_t> context, std::string log_name)
        : context_(std::move(context)), log_(std::move(log_name)), wake_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
        if (wake_ < 0) throw Error(Errc::security, "cannot start the ZAP handler: eventfd failed");
        socket_ = zmq::socket_t(*context_, zmq::socket_type::rep);
        socket_.set(zmq::sockopt::linger, 0);
        // A handler that stopped a moment ago releases the name when libzmq's
        // reaper gets to its socket, not at close(): give it a bounded while.
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
        for (;;) {
            try {
                socket_.bind(zap_endpoint);
                break;
            } catch (const zmq::error_t& e) {
                if (e.num() != EADDRINUSE || std::chrono::steady_clock::now() >= deadline) {
                    ::close(wake_);
                    throw Error(Errc::security, std::string("cannot start the ZAP handler on ") + zap_endpoint + ": " +
                                                    e.what() + " (another ZAP handler runs on this ZeroMQ context)");
                }
                std::this_thread::sleep_for(std::chrono::milliseconds(1));
            }
        }
        thread_ = std::thread([this] { run(); });
    }

    ~ZapHandler() {
        const std::uint64_t one = 1;
        (void)!::write(wake_, &one, sizeof one);
        thread_.join();
        socket_.close();
        ::close(wake_);
    }

    ZapHandler(const ZapHandler&) = delete;
    ZapHandler& operator=(const ZapHandler&) = delete;

    void add(const std::string& domain, const std::string& client_key) {
        std::lock_guard<std::mutex> lock(mutex_);
        ++table_[domain][client_key];
    }

    void remove(const std::string& domain, const std::string& client_key) {
        std::lock_guard<std::mutex> lock(mutex_);
        auto d = table_.find(domain);
        if (d == table_.end()) return;
        auto k = d->second.find(client_key);
        if (k != d->second.end() && --k->second == 0) d->second.erase(k);
        if (d->second.empty()) table_.erase(d);
    }

private:
    void run() {
        zmq::pollitem_t items[] = {{socket_.handle(), 0, ZMQ_POLLIN, 0}, {nullptr, wake_, ZMQ_POLLIN, 0}};
        for (;;) {
            try {
                zmq::poll(items, 2, std::chrono::milliseconds(-1));
            } catch (const zmq::error_t& e) {
                if (e.num() == EINTR) continue;
                return;  // the context is terminating
            }
            if (items[1].revents & ZMQ_POLLIN) return;
            if (items[0].revents & ZMQ_POLLIN) answer_one();
        }
    }

    // RFC 27: version, request id, domain, address, routing id, mechanism,
    // credentials (CURVE: the client's 32-byte public key).
    void answer_one() {
        std::vector<zmq::message_t> request;
        try {
            for (;;) {
                zmq::message_t part;
                if (!socket_.recv(part, zmq::recv_flags::dontwait)) break;
                const bool more = part.more();
                request.push_back(std::move(part));
                if (!more || request.size() > 16) break;
            }
        } catch (const zmq::error_t&) {
            return;
        }
        if (request.empty()) return;
        std::string request_id = request.size() > 1 ? request[1].to_string() : std::string();
        std::string domain = request.size() > 2 ? request[2].to_string() : std::string();
        std::string address = request.size() > 3 ? request[3].to_string() : std::string();
        std::string mechanism = request.size() > 5 ? request[5].to_string() : std::string();
        const char* code = "400";
        std::string reason;
        if (request.size() < 7 || request[0].to_string() != "1.0") {
            code = "500";
            reason = "malformed ZAP request";
        } else if (mechanism != "CURVE") {
            reason = "not a CURVE client (mechanism " + mechanism + ")";
        } else {
            const std::string key = request[6].to_string();
            std::lock_guard<std::mutex> lock(mutex_);
            const auto d = table_.find(domain);
            if (d == table_.end()) {
                reason = "no key of this process admits domain '" + domain + "'";
            } else if (!d->second.count(key)) {
                reason = "its key is not the client key of '" + domain + "' (it does not hold that key's secret)";
            } else {
                code = "200";
            }
        }
        if (code[0] == '2') {
            ++admitted_total;
        } else {
            const auto n = ++refused_total;
            std::string more;
            if (limiter_.admit(reason, LogLimiter::Clock::now(), &more))
                log_.warn("refused a connection from " + printable_address(address) + ": " + reason + " (" +
                          std::to_string(n) + " refused so far)" + more);
        }
        try {
            const std::string user = code[0] == '2' ? domain : std::string();
            socket_.send(zmq::str_buffer("1.0"), zmq::send_flags::sndmore);
            socket_.send(zmq::buffer(request_id), zmq::send_flags::sndmore);
            socket_.send(zmq::buffer(std::string(code)), zmq::send_flags::sndmore);
            socket_.send(zmq::buffer(code[0] == '2' ? std::string("OK") : reason), zmq::send_flags::sndmore);
            socket_.send(zmq::buffer(user), zmq::send_flags::sndmore);
            socket_.send(zmq::const_buffer(nullptr, 0), zmq::send_flags::none);
        } catch (const zmq::error_t&) {
            // The context is terminating: nobody waits for the answer.
        }
    }

    std::shared_ptr<zmq::context_t> context_;  // outlives socket_
    Logger log_;
    LogLimiter limiter_;
    int wake_ = -1;
    zmq::socket_t socket_;
    std::thread thread_;
    std::mutex mutex_;
    std::map<std::string, std::map<std::string, int>> table_;  // domain -> admitted client key -> admissions
};

namespace {

// The running handler of each context. Guarded by its mutex, which is also
// held while a handler starts or stops, so that a new one never races an old
// one's release of the inproc name.
struct Handlers {
    std::mutex mutex;
    std::map<const zmq::context_t*, std::weak_ptr<ZapHandler>> by_context;
};

Handlers& handlers() {
    static Handlers* h = new Handlers;  // never destroyed: admissions may go during static destruction
    return *h;
}

}  // namespace

ZapAdmission::ZapAdmission(std::shared_ptr<zmq::context_t> context, const CurveKeys& keys, std::string log_name)
    : domain_(keys.zap_domain) {
    for (const std::string* z85 : {&keys.client_public, &keys.accepted_client_public}) {
        if (z85 != &keys.client_public && z85->empty()) continue;  // no rotation
        std::string key(32, '\0');
        if (z85->size() != 40 || !zmq_z85_decode(reinterpret_cast<std::uint8_t*>(key.data()), z85->c_str()))
            throw Error(Errc::security, "ZAP admission for '" + keys.zap_domain + "': a client key is not 40 Z85 characters");
        client_keys_.push_back(std::move(key));
    }
    auto& h = handlers();
    std::lock_guard<std::mutex> lock(h.mutex);
    auto& slot = h.by_context[context.get()];
    handler_ = slot.lock();
    if (!handler_) {
        handler_ = std::make_shared<ZapHandler>(std::move(context), std::move(log_name));
        slot = handler_;
    }
    for (const auto& key : client_keys_) handler_->add(domain_, key);
}

ZapAdmission::~ZapAdmission() {
    auto& h = handlers();
    std::lock_guard<std::mutex> lock(h.mutex);
    for (const auto& key : client_keys_) handler_->remove(domain_, key);
    handler_.reset();  // the last admission stops the handler here, under the lock
    for (auto it = h.by_context.begin(); it != h.by_context.end();)
        it = it->second.expired() ? h.by_context.erase(it) : std::next(it);
}

}  // namespace gecko::net
