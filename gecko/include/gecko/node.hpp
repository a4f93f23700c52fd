#pragma once
/// @file node.hpp
/// The node: the explicit context every publisher, subscriber and service
/// hangs off. A node belongs to one key (a robot, a simulation) and has a
/// name. It finds the key's geckocore by itself; nobody types an address.
///
/// Several nodes may live in one process (they share one ZeroMQ context, so
/// `inproc://` endpoints work between them). Handles (Publisher, Subscriber,
/// ...) keep what they need alive; destroy a handle to withdraw it.

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "gecko/log.hpp"
#include "gecko/publisher.hpp"
#include "gecko/service.hpp"
#include "gecko/subscriber.hpp"

namespace gecko {

namespace detail {
class NodeCore;
}

/// Everything a node can be told. Every field has a default;
/// from_env() fills them from GECKO_* variables.
struct NodeOptions {
    std::string key;              ///< the namespace (GECKO_KEY); required
    std::string name;             ///< this node's name, shown by tools; default: the program name
    /// Find geckocore and register with it (GECKO_DISCOVERY=off disables).
    /// Off: publishers and subscribers only use the endpoints given to them.
    bool discovery = true;
    std::string core;             ///< explicit core address "host[:port]" (GECKO_CORE); used when multicast gets no answer
    std::string multicast;        ///< "GROUP:PORT" (GECKO_MULTICAST); empty: the default group
    std::string interface;        ///< interface address for multicast and tcp (GECKO_INTERFACE)
    bool multicast_enabled = true;///< GECKO_NO_MULTICAST=1 turns it off (unicast core only)
    std::chrono::milliseconds lease{3000};  ///< how long the core keeps us without a heartbeat
    std::string ipc_directory;    ///< where ipc sockets are created (GECKO_IPC_DIR); default /tmp
    std::string tcp_address = "0.0.0.0";  ///< address automatic tcp endpoints bind to (GECKO_TCP_ADDRESS)

    /// Options from the environment: GECKO_KEY, GECKO_NODE, GECKO_CORE,
    /// GECKO_MULTICAST, GECKO_INTERFACE, GECKO_NO_MULTICAST, GECKO_DISCOVERY,
    /// GECKO_IPC_DIR, GECKO_TCP_ADDRESS.
    static NodeOptions from_env();

    /// from_env(), then command-line flags on top: `--key K`, `--name N`,
    /// `--core HOST[:PORT]`, `--multicast GROUP:PORT`, `--interface ADDR`,
    /// `--no-multicast`, `--no-discovery`. Other arguments are left for the
    /// program. `default_name` is used when neither GECKO_NODE nor --name is given.
    ///
    /// `--help` or `-h` prints `description` (the program's one-line summary,
    /// with its own flags if it has any; skipped when empty) and these flags on
    /// stdout, then **exits the process with status 0**, as a command-line parser
    /// does. A program with more to say handles `--help` before calling this.
    /// Without a key (neither --key nor GECKO_KEY) it says so on stderr and
    /// **exits with status 2** (a usage error).
    static NodeOptions from_args(int argc, const char* const* argv, const std::string& default_name = "",
                                 const std::string& description = "");
};

class Node {
public:
    /// A node for `key` named `name`; other options from the environment.
    Node(std::string key, std::string name);
    explicit Node(NodeOptions options);
    ~Node();
    Node(Node&&) noexcept;
    Node& operator=(Node&&) noexcept;
    Node(const Node&) = delete;
    Node& operator=(const Node&) = delete;

    /// A publisher of T on `topic`.
    template <class T>
    Publisher<T> publisher(const std::string& topic, PublisherOptions options = {}) {
        return Publisher<T>(raw_publisher(topic, std::string(type_name_of<T>()), std::move(options)));
    }

    /// A subscriber of T on `topic`, read with receive().
    template <class T>
    Subscriber<T> subscriber(const std::string& topic, SubscriberOptions options = {}) {
        options.type_name = std::string(type_name_of<T>());
        return Subscriber<T>(raw_subscriber(topic, std::move(options)));
    }

    /// A subscriber of T whose `callback(const T&)` or `callback(const T&, const MessageInfo&)`
    /// runs from spin(), spin_once() or the background spinner.
    template <class T, class F>
    Subscriber<T> subscriber(const std::string& topic, F callback, SubscriberOptions options = {}) {
        options.type_name = std::string(type_name_of<T>());
        return Subscriber<T>(raw_subscriber(topic, std::move(options), [cb = std::move(callback)](const RawView& view) {
            T message{};
            codec::decode(view.payload, view.size, message);
            if constexpr (std::is_invocable_v<F&, const T&, const MessageInfo&>) {
                cb(message, view.info);
            } else {
                cb(message);
            }
        }));
    }

    /// A service answering Req with Rep through `handler(const Req&) -> Rep`,
    /// from spin(). A handler that throws sends the caller an error.
    template <class Req, class Rep, class F>
    Service<Req, Rep> service(const std::string& name, F handler, ServiceOptions options = {}) {
        return Service<Req, Rep>(raw_server(
            name, std::string(type_name_of<Req>()), std::string(type_name_of<Rep>()),
            [h = std::move(handler)](const RawView& request, Buffer& reply) {
                Req decoded{};
                codec::decode(request.payload, request.size, decoded);
                codec::encode(reply, static_cast<const Rep&>(h(decoded)));
            },
            std::move(options)));
    }

    /// A client of the service `name`.
    template <class Req, class Rep>
    Client<Req, Rep> client(const std::string& name, ClientOptions options = {}) {
        return Client<Req, Rep>(
            raw_client(name, std::string(type_name_of<Req>()), std::string(type_name_of<Rep>()), std::move(options)));
    }

    // The untyped layer (tools, bridges, other languages).
    RawPublisher raw_publisher(const std::string& topic, const std::string& type_name, PublisherOptions options = {});
    RawSubscriber raw_subscriber(const std::string& topic, SubscriberOptions options = {});
    RawSubscriber raw_subscriber(const std::string& topic, SubscriberOptions options,
                                 std::function<void(const RawView&)> callback);
    RawServer raw_server(const std::string& name, const std::string& request_type, const std::string& reply_type,
                         RawHandler handler, ServiceOptions options = {});
    RawClient raw_client(const std::string& name, const std::string& request_type, const std::string& reply_type,
                         ClientOptions options = {});

    /// Runs callbacks until ok() turns false.
    void spin();
    /// Waits up to `timeout` for work and runs what is ready. Returns the
    /// number of callbacks run.
    std::size_t spin_once(std::chrono::milliseconds timeout);
    /// Runs callbacks on a thread the node owns until the node is destroyed or
    /// stop_spinning() is called. Do not also call spin() meanwhile.
    void spin_in_background();
    void stop_spinning();

    /// True once the discovery core acknowledged this node (immediately true
    /// with discovery off). Returns false on timeout.
    bool wait_for_core(std::chrono::milliseconds timeout);

    const std::string& key() const;
    const std::string& name() const;
    const Logger& logger() const;

private:
    std::shared_ptr<detail::NodeCore> core_;
};

}  // namespace gecko
