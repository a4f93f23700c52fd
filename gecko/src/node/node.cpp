// SPDX-License-Identifier: Apache-2.0
// gecko::Node and NodeOptions: the public face of NodeImpl.

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <optional>

#include "gecko/error.hpp"
#include "gecko/net/finder.hpp"
#include "gecko/node.hpp"
#include "gecko/options.hpp"
#include "gecko/signals.hpp"
#include "gecko/testing.hpp"
#include "gecko/wire/names.hpp"
#include "transport/registry.hpp"
#include "node/node_impl.hpp"
#include "node/subscriber_impl.hpp"

namespace gecko {

std::shared_ptr<detail::ServerImpl> make_server_impl(std::shared_ptr<detail::NodeImpl> node, const std::string& name,
                                                     const std::string& request_type, const std::string& reply_type,
                                                     RawHandler handler, ServiceOptions options);
std::shared_ptr<detail::ClientImpl> make_client_impl(std::shared_ptr<detail::NodeImpl> node, const std::string& name,
                                                     const std::string& request_type, const std::string& reply_type,
                                                     ClientOptions options);
namespace detail {
std::shared_ptr<PublisherImpl> make_publisher_impl(std::shared_ptr<NodeImpl> node, const std::string& topic,
                                                   const std::string& type_name, PublisherOptions options);
}

namespace {

std::string env(const char* name) {
    const char* value = std::getenv(name);
    return (value && *value) ? std::string(value) : std::string();
}

std::string program_name() {
    std::ifstream comm("/proc/self/comm");
    std::string name;
    std::getline(comm, name);
    return name.empty() ? "gecko" : name;
}

std::vector<std::string> split(const std::string& text) {
    std::vector<std::string> out;
    std::string item;
    for (char c : text) {
        if (c == ',') {
            if (!item.empty()) out.push_back(item);
            item.clear();
        } else if (c != ' ') {
            item += c;
        }
    }
    if (!item.empty()) out.push_back(item);
    return out;
}

std::string check_core(const std::string& v) {
    return net::normalize_core_address(v).empty() ? "'" + v + "' is not host, host:port or tcp://host:port" : "";
}

std::string check_multicast(const std::string& v) {
    std::string g;
    std::uint16_t p = 0;
    return parse_multicast(v, g, p);
}

// Bytes, or with a binary suffix (512K, 64M, 1G); at most 1 TiB.
std::optional<std::size_t> parse_bytes(const std::string& v) {
    if (v.empty() || v[0] < '0' || v[0] > '9') return std::nullopt;
    char* end = nullptr;
    errno = 0;
    const unsigned long long n = std::strtoull(v.c_str(), &end, 10);
    const std::string suffix(end);
    const unsigned shift = suffix.empty() ? 0 : suffix == "K" ? 10 : suffix == "M" ? 20 : suffix == "G" ? 30 : 64;
    if (errno != 0 || shift == 64 || n > (std::uint64_t{1} << 40) >> shift) return std::nullopt;
    return static_cast<std::size_t>(n << shift);
}

std::string check_transports(const std::string& v) {
    for (const auto& t : split(v))
        if (!detail::transport_for(t)) return "unknown transport '" + t + "' (known: " + detail::known_schemes() + ")";
    return split(v).empty() ? "no transport named" : "";
}

}  // namespace

NodeOptions NodeOptions::from_env() {
    NodeOptions o;
    auto checked = [](const char* name, const std::string& value, const std::string& why) {
        if (!why.empty()) throw Error(Errc::invalid_argument, std::string(name) + "='" + value + "': " + why);
        return value;
    };
    o.key = env("GECKO_KEY");
    o.name = env("GECKO_NODE").empty() ? program_name() : env("GECKO_NODE");
    if (auto v = env("GECKO_CORE"); !v.empty()) o.core = checked("GECKO_CORE", v, check_core(v));
    if (auto v = env("GECKO_MULTICAST"); !v.empty()) o.multicast = checked("GECKO_MULTICAST", v, check_multicast(v));
    o.interface = env("GECKO_INTERFACE");
    o.multicast_enabled = !env_flag("GECKO_NO_MULTICAST", false);
    o.discovery = env_flag("GECKO_DISCOVERY", true);
    o.ipc_directory = env("GECKO_IPC_DIR").empty() ? "/tmp" : env("GECKO_IPC_DIR");
    o.tcp_address = env("GECKO_TCP_ADDRESS").empty() ? "0.0.0.0" : env("GECKO_TCP_ADDRESS");
    if (auto v = env("GECKO_TRANSPORTS"); !v.empty()) o.transports = split(checked("GECKO_TRANSPORTS", v, check_transports(v)));
    if (auto v = env("GECKO_SHM"); !v.empty()) {
        if (v == "auto") o.shared_memory = SharedMemory::automatic;
        else if (v == "off" || v == "0") o.shared_memory = SharedMemory::off;
        else if (v == "require") o.shared_memory = SharedMemory::required;
        else checked("GECKO_SHM", v, "expected auto, off or require");
    }
    o.shared_memory_group = env_flag("GECKO_SHM_GROUP", false);
    if (auto v = env("GECKO_SHM_SIZE"); !v.empty()) {
        const auto bytes = parse_bytes(v);
        if (!bytes) checked("GECKO_SHM_SIZE", v, "expected bytes, or with K, M or G (e.g. 64M); 0: no bound");
        o.shared_memory_size = *bytes;
    }
    if (auto v = env("GECKO_SEND_QUEUE_BYTES"); !v.empty()) {
        const auto bytes = parse_bytes(v);
        if (!bytes) checked("GECKO_SEND_QUEUE_BYTES", v, "expected bytes, or with K, M or G (e.g. 32M); 0: no bound");
        o.send_queue_bytes = *bytes;
    }
    if (auto v = env("GECKO_SPIN_US"); !v.empty()) {
        char* end = nullptr;
        errno = 0;
        const long long us = std::strtoll(v.c_str(), &end, 10);
        if (errno != 0 || end == v.c_str() || *end != '\0' || us < 0 || us > 1000000)
            checked("GECKO_SPIN_US", v, "expected microseconds, 0 to 1000000");
        o.spin = std::chrono::microseconds(us);
    }
    return o;
}

NodeOptions& node_options(OptionParser& parser, NodeOptions& o) {
    parser.text("--key", o.key, "KEY", "the key (robot, simulation) to join (GECKO_KEY)", [](const std::string& v) {
        return wire::check_key(v);
    }).alias("-k");
    parser.text("--name", o.name, "NAME", "this node's name (GECKO_NODE; default: the program's)",
                [](const std::string& v) { return wire::check_node_name(v); });
    parser.text("--core", o.core, "HOST[:PORT]", "the geckocore's address, when multicast gets no answer (GECKO_CORE)",
                check_core);
    parser.text("--multicast", o.multicast, "GROUP:PORT", "the discovery multicast group (GECKO_MULTICAST)", check_multicast);
    parser.text("--interface", o.interface, "ADDR", "the interface for multicast and tcp (GECKO_INTERFACE)");
    parser.custom("--no-multicast", "", "find the core at --core only (GECKO_NO_MULTICAST=1)", [&o](const std::string&) {
        o.multicast_enabled = false;
        return std::string();
    });
    parser.custom("--no-discovery", "", "no core: only nodes given with --peer (GECKO_DISCOVERY=off)",
                  [&o](const std::string&) {
                      o.discovery = false;
                      return std::string();
                  });
    parser.custom("--peer", "LOCATOR", "connect to another node's locator (repeatable)", [&o](const std::string& v) {
        o.peers.push_back(v);
        return std::string();
    });
    return o;
}

NodeOptions NodeOptions::from_args(int argc, const char* const* argv, OptionParser& parser,
                                   const std::string& default_name) {
    NodeOptions o;
    try {
        o = from_env();
    } catch (const Error& e) {
        const std::string text = parser.program() + ": " + e.what() + "\n";
        [[maybe_unused]] const auto n = ::write(STDERR_FILENO, text.data(), text.size());
        std::exit(2);
    }
    if (!default_name.empty() && env("GECKO_NODE").empty()) o.name = default_name;
    node_options(parser, o);
    parser.parse_or_exit(argc, argv);
    if (o.key.empty()) {
        // A usage error, reported as a command-line parser does (not an uncaught exception).
        const std::string text = parser.program() + ": no key: give --key KEY or set GECKO_KEY (--help lists the options)\n";
        [[maybe_unused]] const auto n = ::write(STDERR_FILENO, text.data(), text.size());
        std::exit(2);
    }
    return o;
}

NodeOptions NodeOptions::from_args(int argc, const char* const* argv, const std::string& default_name,
                                   const std::string& description) {
    const std::string program = argc > 0 && argv[0] ? std::string(argv[0]).substr(std::string(argv[0]).rfind('/') + 1)
                                                    : program_name();
    OptionParser parser(program, description);
    return from_args(argc, argv, parser, default_name);
}

Node::Node(std::string key, std::string name) : Node([&] {
    NodeOptions o = NodeOptions::from_env();
    o.key = std::move(key);
    if (!name.empty()) o.name = std::move(name);
    return o;
}()) {}

Node::Node(NodeOptions options) {
    if (options.name.empty()) options.name = program_name();
    if (const auto why = wire::check_key(options.key); !options.key.empty() && !why.empty())
        throw Error(Errc::invalid_argument, "gecko::Node: invalid key '" + wire::printable(options.key) + "': " + why);
    if (const auto why = wire::check_node_name(options.name); !why.empty())
        throw Error(Errc::invalid_argument, "gecko::Node: invalid name '" + wire::printable(options.name) + "': " + why);
    impl_ = std::make_shared<detail::NodeImpl>(std::move(options));
}

Node::~Node() {
    if (impl_) impl_->close();
}
Node::Node(Node&&) noexcept = default;
Node& Node::operator=(Node&& other) noexcept {
    if (this != &other) {
        if (impl_) impl_->close();
        impl_ = std::move(other.impl_);
    }
    return *this;
}

RawPublisher Node::raw_publisher(const std::string& topic, const std::string& type_name, PublisherOptions options) {
    return RawPublisher(detail::make_publisher_impl(impl_, topic, type_name, std::move(options)));
}

RawSubscriber Node::raw_subscriber(const std::string& topic, SubscriberOptions options) {
    auto impl = std::make_shared<detail::SubscriberImpl>(impl_, topic, std::move(options), nullptr);
    impl->start();
    return RawSubscriber(std::move(impl));
}

RawSubscriber Node::raw_subscriber(const std::string& topic, SubscriberOptions options,
                                   std::function<void(const RawView&)> callback) {
    if (!callback) throw Error(Errc::invalid_argument, "raw_subscriber: empty callback");
    auto impl = std::make_shared<detail::SubscriberImpl>(impl_, topic, std::move(options), std::move(callback));
    impl->start();
    return RawSubscriber(std::move(impl));
}

RawSubscriber Node::subscribe_all(TopicFilter filter, SubscriberOptions options) {
    auto impl = std::make_shared<detail::SubscriberImpl>(impl_, "*", std::move(options), nullptr, std::move(filter));
    impl->start();
    return RawSubscriber(std::move(impl));
}

RawSubscriber Node::subscribe_all(TopicFilter filter, std::function<void(const RawView&)> callback, SubscriberOptions options) {
    if (!callback) throw Error(Errc::invalid_argument, "subscribe_all: empty callback");
    auto impl = std::make_shared<detail::SubscriberImpl>(impl_, "*", std::move(options), std::move(callback), std::move(filter));
    impl->start();
    return RawSubscriber(std::move(impl));
}

RawServer Node::raw_server(const std::string& name, const std::string& request_type, const std::string& reply_type,
                           RawHandler handler, ServiceOptions options) {
    return RawServer(make_server_impl(impl_, name, request_type, reply_type, std::move(handler), std::move(options)));
}

RawClient Node::raw_client(const std::string& name, const std::string& request_type, const std::string& reply_type,
                           ClientOptions options) {
    return RawClient(make_client_impl(impl_, name, request_type, reply_type, std::move(options)));
}

void Node::spin() {
    while (ok() && !impl_->closed()) impl_->spin_once(std::chrono::milliseconds(1000));
}
std::size_t Node::spin_once(std::chrono::milliseconds timeout) { return impl_->spin_once(timeout); }
void Node::spin_in_background() { impl_->start_spinner(); }
void Node::stop_spinning() { impl_->stop_spinner(); }
bool Node::wait_for_core(std::chrono::milliseconds timeout) { return impl_->wait_for_core(timeout); }
void Node::connect(const std::string& locator) { impl_->connect(locator); }
std::vector<std::string> Node::locators() const { return impl_->locators(); }
GraphWatch Node::on_graph_change(std::function<void(const GraphEvent&)> callback) {
    return impl_->on_graph_change(std::move(callback));
}
Graph Node::graph(std::chrono::milliseconds timeout) { return impl_->graph(timeout); }
DirectoryWatch Node::watch_directory(std::function<void(const DirectoryEvent&)> callback) {
    return impl_->watch_directory(std::move(callback));
}
std::vector<std::shared_ptr<const ChannelInfo>> Node::directory(std::chrono::milliseconds timeout) {
    return impl_->directory(timeout);
}
void Node::declare_schema(const wire::Schema& schema) { impl_->declare_schema(schema); }
const std::string& Node::key() const { return impl_->options().key; }
const std::string& Node::name() const { return impl_->options().name; }
const Logger& Node::logger() const { return impl_->logger(); }
std::uint64_t Node::session() const { return impl_->session(); }

namespace testing {
void send_raw(Node& node, const void* bytes, std::size_t size) {
    Buffer frame;
    frame.write(static_cast<const char*>(bytes), size);
    node.impl_->outbound().send(frame);
}
}  // namespace testing

}  // namespace gecko
