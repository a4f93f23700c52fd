// SPDX-License-Identifier: Apache-2.0
// gecko type NAME: the fields of a message type and their types, like
// `ros2 interface show`. Known exactly for the gecko.msgs types and for the
// types the key's publishers declared (the directory's schemas); for another
// type carried by a live topic, inferred from one message of it.
#include <cstdio>

#include <gecko/node.hpp>
#include <gecko/wire/value.hpp>
#include <gecko/signals.hpp>

#include "cli.hpp"
#include "commands.hpp"
#include "gecko/error.hpp"
#include "known_types.hpp"
#include "query.hpp"
#include "suggest.hpp"

namespace gecko::tools {

namespace {

// A topic with a publisher of `type`, or "".
std::string topic_carrying(const Graph& r, const std::string& type) {
    for (const auto& t : r.topics)
        if (!t.service)
            for (const auto& p : t.producers)
                if (p.type == type) return t.name;
    return "";
}

// Services whose request or reply is `type`: " (the request of service 'add')".
std::string used_by_services(const Graph& r, const std::string& type) {
    std::string s;
    for (const auto& t : r.topics) {
        if (!t.service) continue;
        const auto arrow = t.type.find("->");
        if (arrow == std::string::npos) continue;
        const char* role = t.type.substr(0, arrow) == type ? "request" : t.type.substr(arrow + 2) == type ? "reply" : nullptr;
        if (role) s += std::string(s.empty() ? "" : ", ") + "the " + role + " of service '" + t.name + "'";
    }
    return s.empty() ? "" : " (it is " + s + ": its fields cannot be sampled from a topic)";
}

// Waits up to `timeout` for one message of `type` on `topic` and prints its shape.
int print_inferred(const Connection& connection, const std::string& type, const std::string& topic) {
    install_signal_handlers();
    Node node(connection.node);
    SubscriberOptions options;
    options.type_name = type;
    auto subscriber = node.raw_subscriber(topic, options);
    std::string out, not_a_map;
    const auto deadline = std::chrono::steady_clock::now() + connection.timeout;
    bool got = false;
    while (!got && ok() && std::chrono::steady_clock::now() < deadline) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
        got = subscriber.receive(std::min(left, std::chrono::milliseconds(200)), [&](const RawView& view) {
            const Shape shape = infer_shape(wire::Value::parse(view.payload, view.size));
            if (shape.kind != Shape::Kind::message) {
                not_a_map = shape.type;
                return;
            }
            out = type + " (inferred from one message on topic '" + topic + "': not a gecko.msgs type, so a field\n" +
                  "its publisher left out of that message is not shown, and integers show as int)\n" +
                  render_fields(shape);
        });
    }
    if (!got)
        throw Error(Errc::timeout, "topic '" + topic + "' carries " + type + " but sent no message within " +
                                       std::to_string(connection.timeout.count()) + " ms (--timeout to wait longer)");
    if (!not_a_map.empty())
        throw Error(Errc::decode, "the messages of " + type + " on topic '" + topic + "' are not msgpack maps but " + not_a_map);
    std::fputs(out.c_str(), stdout);
    return exit_ok;
}

}  // namespace

int run_type(const Args& args) {
    Connection connection("gecko_type");
    std::string name;
    bool list = false;
    Parser parser("type", "NAME [options]",
                  "Prints the fields of a message type and their types, nested messages expanded (like\n"
                  "`ros2 interface show`). For the gecko.msgs types the tool knows them (no core needed);\n"
                  "for a type a publisher or server of the key declared, the core's directory has them.\n"
                  "For another type, a live topic that carries it is sampled: one message is read and its\n"
                  "shape printed, marked as inferred. NAME may also be a topic (its type is shown) or a\n"
                  "service (its request and reply types).\n\n"
                  "Examples: gecko type gecko.msgs.Imu\n"
                  "          gecko type imu");
    parser.positional("NAME", "a type name, e.g. gecko.msgs.Imu, or a topic", name, false)
        .flag("--list", "list the gecko.msgs types", list)
        .connection(connection, false);
    if (!parser.parse(args)) return exit_ok;
    if (list) {
        for (const auto& t : known_type_names()) std::printf("%s\n", t.c_str());
        return exit_ok;
    }
    if (name.empty()) throw UsageError("missing NAME (a type such as gecko.msgs.Imu, or a topic); --list lists the types");
    if (const Shape* shape = known_shape(name)) {
        std::printf("%s\n%s", name.c_str(), render_fields(*shape).c_str());
        return exit_ok;
    }
    const std::string hint = did_you_mean(name, known_type_names());
    if (connection.node.key.empty())
        throw UsageError("'" + name + "' is not a gecko.msgs type (to infer its fields from a live topic that carries "
                         "it, pass --key KEY or set GECKO_KEY)" + hint);

    const auto r = query(connection);
    learn_schemas(r);  // the fields the key's publishers and servers declared
    if (const Shape* shape = known_shape(name)) {
        std::printf("%s (as its publishers declared it)\n%s", name.c_str(), render_fields(*shape).c_str());
        return exit_ok;
    }
    if (const auto* s = r.find(name, true); s && !r.find(name, false)) {  // a service: its request and reply
        const auto arrow = s->type.find("->");
        if (arrow != std::string::npos) {
            std::string out;
            for (const auto& [role, type] : {std::pair<const char*, std::string>{"request", s->type.substr(0, arrow)},
                                             {"reply", s->type.substr(arrow + 2)}}) {
                const Shape* shape = known_shape(type);
                if (!shape) {
                    out.clear();
                    break;
                }
                out += type + " (the " + role + " of service '" + name + "')\n" + render_fields(*shape);
            }
            if (!out.empty()) {
                std::fputs(out.c_str(), stdout);
                return exit_ok;
            }
        }
    }
    if (const auto* t = r.find(name); t && !t->type.empty()) {  // a topic: its type
        const std::string type = t->producers.empty() ? t->type : t->producers.front().type;
        if (const Shape* shape = known_shape(type)) {
            std::printf("%s (the type of topic '%s')\n%s", type.c_str(), name.c_str(), render_fields(*shape).c_str());
            return exit_ok;
        }
        if (!t->producers.empty()) return print_inferred(connection, type, name);
    }
    const std::string topic = topic_carrying(r, name);
    if (!topic.empty()) return print_inferred(connection, name, topic);
    std::vector<std::string> live;
    for (const auto& t : r.topics)
        if (!t.service && !t.type.empty()) live.push_back(t.type);
    const std::string live_hint = hint.empty() ? did_you_mean(name, live) : hint;
    throw Error(Errc::no_peer, "no type '" + name + "': not a gecko.msgs type, and no publisher under key '" + r.key +
                                   "' sends it" + used_by_services(r, name) +
                                   " (`gecko type --list` lists the gecko.msgs types)" + live_hint);
}

}  // namespace gecko::tools
