#pragma once
/// @file node.hpp
/// The node: the explicit context every publisher, subscriber and service
/// hangs off, and one *session* on the network, like a zenoh session or a DDS
/// participant. A node belongs to one key (a robot, a simulation) and has a
/// name. It finds the key's geckocore by itself; nobody types an address.
///
/// A node sends every message through one socket per transport and receives
/// through one more; it keeps one link to each other node it talks to,
/// whatever the number of topics, and the transport of that link is chosen
/// once, from where the two nodes run (same process, same host, elsewhere).
///
/// Threads. A node runs one internal thread (its reactor: discovery, links,
/// keeping queues fresh); ZeroMQ adds its own I/O thread, shared by every node
/// of the process. Callbacks run on the thread that calls spin(), spin_once()
/// or spin_in_background()'s thread, never on an internal one.
///
/// Several threads may spin one node at once (spin_in_background() and
/// spin(), or a pool calling spin_once()). Each subscriber's callback, each
/// service's handler and the graph watches run on **one thread at a time**,
/// in arrival order (ROS's mutually exclusive callback group, one per
/// entity); different entities' callbacks may run in parallel. Callbacks do
/// not nest: spin() or spin_once() called from inside a callback throws
/// gecko::Error (Errc::invalid_argument).
///
/// Lifetime. The node owns its entities: when it is destroyed, it withdraws
/// them, and the handles (Publisher, Subscriber, ...) that outlive it become
/// inert: receive() returns nothing at once, publish() and call() throw
/// gecko::Error (Errc::closed), destroying them is always safe.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "gecko/directory.hpp"
#include "gecko/graph.hpp"
#include "gecko/log.hpp"
#include "gecko/publisher.hpp"
#include "gecko/service.hpp"
#include "gecko/subscriber.hpp"
#include "gecko/wire/schema_of.hpp"

namespace gecko {

namespace detail {
class NodeImpl;
}
class OptionParser;
class Node;
namespace testing {
void send_raw(Node& node, const void* bytes, std::size_t size);
}

/// Everything a node can be told. Every field has a default;
/// from_env() fills them from GECKO_* variables.
struct NodeOptions {
    std::string key;              ///< the namespace (GECKO_KEY); required
    std::string name;             ///< this node's name, shown by tools; default: the program name
    /// Find geckocore and register with it (GECKO_DISCOVERY=off disables).
    /// Off: the node reaches only the nodes given in `peers` or to connect().
    bool discovery = true;
    std::string core;             ///< explicit core address "host[:port]" (GECKO_CORE); used when multicast gets no answer
    std::string multicast;        ///< "GROUP:PORT" (GECKO_MULTICAST); empty: the default group
    std::string interface;        ///< interface address for multicast and tcp (GECKO_INTERFACE)
    bool multicast_enabled = true;///< GECKO_NO_MULTICAST=1 turns it off (unicast core only)
    std::chrono::milliseconds lease{3000};  ///< how long the core keeps us without a heartbeat

    /// Where this node can be reached, by locator scheme: "inproc" (other nodes
    /// of this process), "shm" (shared memory: this host), "ipc" (this host),
    /// "tcp" (other hosts), "mem" (in-process queues: deterministic tests).
    /// GECKO_TRANSPORTS=ipc,tcp. Each pair of nodes uses the narrowest that
    /// reaches: inproc, then shm, then ipc, then tcp.
    std::vector<std::string> transports{"inproc", "shm", "ipc", "tcp"};

    /// Shared memory between the nodes of one host (GECKO_SHM=auto|off|require).
    enum class SharedMemory {
        automatic,  ///< used where both nodes offer it and it opens; else ipc (said once in the log)
        off,        ///< never: this node neither offers nor uses it
        required,   ///< a node on this host is reached over shared memory or not at all (said in the log)
    };
    SharedMemory shared_memory = SharedMemory::automatic;
    /// Shared memory this node creates is readable and writable by its group
    /// too (mode 0660, not 0600), so that nodes of other users in that group
    /// link over it (GECKO_SHM_GROUP=1). Without it they fall back to ipc.
    bool shared_memory_group = false;
    /// The most shared memory this node's publishers hold at once, in bytes
    /// (GECKO_SHM_SIZE, e.g. 64M): the pages of its segment in /dev/shm. Past
    /// it, idle pages are given back first; then, while subscribers still hold
    /// the rest, the oldest queued frames are dropped, counted and logged.
    /// Raise it for large messages (a 4 MiB image stream with subscribers that
    /// keep a few wants several times 4 MiB); 0: no bound.
    std::size_t shared_memory_size = 8u << 20;
    /// How long a thread waiting for a message over shared memory keeps
    /// polling before it sleeps (GECKO_SPIN_US); 0 sleeps at once. A bounded
    /// busy-wait: it wins a lockstep exchange when both sides are awake, at
    /// the cost of a core while it lasts.
    std::chrono::microseconds spin{0};
    /// Exact locators to bind instead (e.g. {"tcp://127.0.0.1:*"}; "*" port: any free one).
    std::vector<std::string> listen;
    /// Other nodes' locators to connect to from the start (with discovery off,
    /// the only way to reach them; see also Node::connect).
    std::vector<std::string> peers;
    std::string ipc_directory;    ///< where ipc sockets are created (GECKO_IPC_DIR); default /tmp
    std::string tcp_address = "0.0.0.0";  ///< address automatic tcp locators bind to (GECKO_TCP_ADDRESS)

    /// Frames queued per link before the transport drops them (ZeroMQ's
    /// high-water marks: what this node sends to each other node, and what it
    /// receives from each). The node drains its links continuously, so these
    /// fill only when a reader falls behind the wire itself; every frame lost
    /// there is counted by its subscriber as a drop.
    int send_queue = 1000;
    int receive_queue = 1000;
    /// Bytes queued per link to each other node (ipc, tcp) before frames are
    /// dropped (GECKO_SEND_QUEUE_BYTES, e.g. 32M): ZeroMQ counts its queues in
    /// frames, so a subscriber that stops reading 1 MiB frames would hold
    /// 1,000 MiB of this node's memory. With this bound, the frames queued
    /// for one node take at most this many bytes (plus the frame being
    /// written); past it that node loses frames, counted as drops by its
    /// subscribers, and the others are not slowed. Raise it for large
    /// messages sent in bursts (8 MiB holds seven 1 MiB frames); 0: frames
    /// only (send_queue). Shared memory has its own bound (shared_memory_size).
    std::size_t send_queue_bytes = 8u << 20;
    /// Frames above this many bytes are refused where they arrive: a link that
    /// sends one is dropped by the transport before the frame is read whole
    /// (and comes back by itself). Subscribers may set a lower limit each.
    std::size_t max_message_size = 64u << 20;
    /// How long frames still queued when the node is destroyed may keep going
    /// out (the last Node of the process waits for them, at most this long).
    std::chrono::milliseconds linger{200};

    /// Options from the environment: GECKO_KEY, GECKO_NODE, GECKO_CORE,
    /// GECKO_MULTICAST, GECKO_INTERFACE, GECKO_NO_MULTICAST, GECKO_DISCOVERY,
    /// GECKO_IPC_DIR, GECKO_TCP_ADDRESS, GECKO_TRANSPORTS, GECKO_SHM, GECKO_SHM_GROUP, GECKO_SHM_SIZE,
    /// GECKO_SEND_QUEUE_BYTES, GECKO_SPIN_US. The booleans take gecko::parse_flag's values (gecko/options.hpp).
    /// @throws gecko::Error (Errc::invalid_argument) naming a variable whose value is malformed.
    static NodeOptions from_env();

    /// from_env(), then the command line on top: the node's flags (`--key K`,
    /// `-k K`, `--name N`, `--core HOST[:PORT]`, `--multicast GROUP:PORT`,
    /// `--interface ADDR`, `--no-multicast`, `--no-discovery`, `--peer LOCATOR`)
    /// and the program's own, declared on `parser` beforehand (gecko/options.hpp):
    ///
    ///     gecko::OptionParser args("sub_imu", "prints the IMU readings of topic \"imu\"");
    ///     long count = -1;
    ///     args.integer("--count", count, 1, 1000000000, "N", "stop after N readings");
    ///     gecko::Node node(gecko::NodeOptions::from_args(argc, argv, args, "imu_monitor"));
    ///
    /// `default_name` is used when neither GECKO_NODE nor --name is given.
    /// `--help` or `-h` prints the summary and every option on stdout, then
    /// **exits the process with status 0**, as a command-line parser does. An
    /// unknown option, a malformed value, or no key at all (neither --key nor
    /// GECKO_KEY) is said on stderr and **exits with status 2** (a usage error).
    static NodeOptions from_args(int argc, const char* const* argv, OptionParser& parser,
                                 const std::string& default_name = "");
    /// The same for a program without options of its own; `description` is
    /// its one-line summary for --help.
    static NodeOptions from_args(int argc, const char* const* argv, const std::string& default_name = "",
                                 const std::string& description = "");
};

/// Adds the node options (--key/-k, --name, --core, --multicast, --interface,
/// --no-multicast, --no-discovery, --peer) to a program's parser, writing into
/// `options` (fill it with NodeOptions::from_env() first). Returns `options`.
NodeOptions& node_options(OptionParser& parser, NodeOptions& options);

class Node {
public:
    /// A node for `key` named `name`; other options from the environment.
    Node(std::string key, std::string name);
    /// @throws gecko::Error: Errc::invalid_argument for a bad option,
    ///         Errc::transport if its sockets cannot be bound.
    explicit Node(NodeOptions options);
    ~Node();
    Node(Node&&) noexcept;
    Node& operator=(Node&&) noexcept;
    Node(const Node&) = delete;
    Node& operator=(const Node&) = delete;

    /// A publisher of T on `topic`.
    /// @throws gecko::Error (Errc::invalid_argument) for an empty or invalid topic name.
    template <class T>
    [[nodiscard]] Publisher<T> publisher(const std::string& topic, PublisherOptions options = {}) {
        declare_schema<T>();
        return Publisher<T>(raw_publisher(topic, std::string(type_name_of<T>()), std::move(options)));
    }

    /// A subscriber of T on `topic`, read with receive().
    template <class T>
    [[nodiscard]] Subscriber<T> subscriber(const std::string& topic, SubscriberOptions options = {}) {
        declare_schema<T>();
        options.type_name = std::string(type_name_of<T>());
        return Subscriber<T>(raw_subscriber(topic, std::move(options)));
    }

    /// A subscriber of T whose `callback(const T&)` or
    /// `callback(const T&, const MessageInfo&)` runs from spin(), spin_once()
    /// or the background spinner, on one of those threads at a time. Each call
    /// gets the same T object, decoded anew (its vectors and strings keep
    /// their capacity): copy what you keep.
    template <class T, class F>
    [[nodiscard]] Subscriber<T> subscriber(const std::string& topic, F callback, SubscriberOptions options = {}) {
        static_assert(std::is_invocable_v<F&, const T&> || std::is_invocable_v<F&, const T&, const MessageInfo&>,
                      "gecko: a subscriber callback takes (const T&) or (const T&, const gecko::MessageInfo&)");
        declare_schema<T>();
        options.type_name = std::string(type_name_of<T>());
        return Subscriber<T>(raw_subscriber(
            topic, std::move(options),
            [cb = std::move(callback), message = std::make_shared<T>()](const RawView& view) mutable {
                if constexpr (codec::decodes_in_place<T>::value) {
                    codec::decode(view.payload, view.size, *message);
                } else {
                    *message = T{};
                    codec::decode(view.payload, view.size, *message);
                }
                if constexpr (std::is_invocable_v<F&, const T&, const MessageInfo&>) {
                    cb(static_cast<const T&>(*message), view.info);
                } else {
                    cb(static_cast<const T&>(*message));
                }
            }));
    }

    /// A service answering Req with Rep through `handler(const Req&) -> Rep`,
    /// from spin(). A handler that throws sends the caller an error.
    template <class Req, class Rep, class F>
    [[nodiscard]] Service<Req, Rep> service(const std::string& name, F handler, ServiceOptions options = {}) {
        static_assert(std::is_invocable_r_v<Rep, F&, const Req&>,
                      "gecko: a service handler takes (const Req&) and returns a Rep");
        declare_schema<Req>();
        declare_schema<Rep>();
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
    [[nodiscard]] Client<Req, Rep> client(const std::string& name, ClientOptions options = {}) {
        return Client<Req, Rep>(
            raw_client(name, std::string(type_name_of<Req>()), std::string(type_name_of<Rep>()), std::move(options)));
    }

    /// Every message of every topic of the key that `filter` takes, whoever
    /// publishes it, now or later, over whatever link: a recorder's, a
    /// bridge's, `gecko echo '*'`'s subscription. Each message's MessageInfo
    /// names its topic, its type and its directory entry (schema,
    /// publishers); read them with receive().
    ///
    /// A message waits (up to 2 s) until the key's directory names its
    /// channel; one it never names is dropped and counted
    /// (SubscriberStats::unlisted). Without discovery there is no directory:
    /// messages come unnamed, and only TopicFilter::all() takes any.
    /// `options.type_name` must be empty (filter types with `filter.types`).
    /// @throws gecko::Error (Errc::invalid_argument) for an invalid pattern.
    [[nodiscard]] RawSubscriber subscribe_all(TopicFilter filter = TopicFilter::all(), SubscriberOptions options = {});
    /// The same, delivering to `callback` from spin() (as raw_subscriber's).
    [[nodiscard]] RawSubscriber subscribe_all(TopicFilter filter, std::function<void(const RawView&)> callback,
                                              SubscriberOptions options = {});

    // The untyped layer (tools, bridges, other languages).
    [[nodiscard]] RawPublisher raw_publisher(const std::string& topic, const std::string& type_name,
                                             PublisherOptions options = {});
    [[nodiscard]] RawSubscriber raw_subscriber(const std::string& topic, SubscriberOptions options = {});
    [[nodiscard]] RawSubscriber raw_subscriber(const std::string& topic, SubscriberOptions options,
                                               std::function<void(const RawView&)> callback);
    [[nodiscard]] RawServer raw_server(const std::string& name, const std::string& request_type,
                                       const std::string& reply_type, RawHandler handler, ServiceOptions options = {});
    [[nodiscard]] RawClient raw_client(const std::string& name, const std::string& request_type,
                                       const std::string& reply_type, ClientOptions options = {});

    /// Runs callbacks until ok() turns false (returns at once when it does).
    /// @throws gecko::Error (Errc::invalid_argument) when called from inside a callback.
    void spin();
    /// Waits up to `timeout` for work and runs what is ready: callbacks of
    /// entities no other thread is running now. Returns the number of
    /// callbacks run (0 on timeout, or at once on shutdown).
    /// @throws gecko::Error (Errc::invalid_argument) when called from inside a
    /// callback: a nested spin would overwrite what the outer callback reads.
    std::size_t spin_once(std::chrono::milliseconds timeout);
    /// Runs callbacks on a thread the node owns until the node is destroyed or
    /// stop_spinning() is called. Other threads may spin meanwhile (see Threads above).
    void spin_in_background();
    void stop_spinning();

    /// True once the discovery core acknowledged this node (immediately true
    /// with discovery off). Returns false on timeout.
    bool wait_for_core(std::chrono::milliseconds timeout);

    /// Links this node to another node's locator (one of its locators()), as
    /// discovery does by itself: its publishers' messages reach our
    /// subscribers, our requests reach its servers. Thread-safe.
    void connect(const std::string& locator);
    /// Where other nodes reach this node (ports resolved), by transport.
    std::vector<std::string> locators() const;

    /// The key's graph now: topics and services with their types, publishers,
    /// subscribers, servers and clients, as the core knows them.
    /// @throws gecko::Error (Errc::discovery) if no core answers within `timeout`.
    Graph graph(std::chrono::milliseconds timeout = std::chrono::milliseconds(2000));
    /// Calls `callback` when a topic or service of the key appears or goes,
    /// and once for each that exists when it is registered. Like subscriber
    /// callbacks, it runs on the thread that spins the node (spin(),
    /// spin_once(), spin_in_background()). Destroy the returned handle to stop.
    [[nodiscard]] GraphWatch on_graph_change(std::function<void(const GraphEvent&)> callback);

    /// Calls `callback` for each change of the key's channel directory
    /// (directory.hpp), first with `added` for every entry that exists, from
    /// the thread that spins the node. Destroy the returned handle to stop.
    /// @throws gecko::Error (Errc::discovery) for a node without discovery.
    [[nodiscard]] DirectoryWatch watch_directory(std::function<void(const DirectoryEvent&)> callback);
    /// The key's directory now: every topic and service, with its channel,
    /// type, schema and publishers (waits up to `timeout` for the core's
    /// first whole answer; a core that just started gives it at the end of
    /// its warm-up, one lease after it started).
    /// @throws gecko::Error (Errc::discovery) if none came, or the core keeps none (an older geckocore).
    std::vector<std::shared_ptr<const ChannelInfo>> directory(std::chrono::milliseconds timeout = std::chrono::milliseconds(5000));

    /// Declares the fields of the types in `schema` (schema.hpp): this
    /// node's publishers, servers and subscribers of those types carry them
    /// to the key's directory, where tools, bridges and recorders read them.
    /// Typed entities (publisher<T>(), service<Req, Rep>(), subscriber<T>())
    /// declare theirs by themselves; raw ones of a type declared here do too.
    void declare_schema(const wire::Schema& schema);
    template <class T>
    void declare_schema() {
        if constexpr (wire::is_message_v<T>) {  // else type_name_of<T> says what T lacks, once
            static const wire::Schema schema = wire::schema_of<T>();
            declare_schema(schema);
        }
    }

    const std::string& key() const;
    const std::string& name() const;
    const Logger& logger() const;
    /// This node's discovery session id (random, shown by `gecko nodes`).
    std::uint64_t session() const;

private:
    friend void testing::send_raw(Node& node, const void* bytes, std::size_t size);
    std::shared_ptr<detail::NodeImpl> impl_;
};

}  // namespace gecko
