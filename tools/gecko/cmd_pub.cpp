// SPDX-License-Identifier: Apache-2.0
// gecko pub TOPIC --type NAME 'JSON': publishes a message written as JSON,
// converted to msgpack (objects become maps with field names, integers stay
// integers, other numbers float64) and sent raw with the given type name.
#include <cstdio>

#include <gecko/node.hpp>
#include <gecko/signals.hpp>
#include <gecko/time.hpp>

#include "cli.hpp"
#include "commands.hpp"
#include "msgpack_json.hpp"
#include "query.hpp"

namespace gecko::tools {

int run_pub(const Args& args) {
    Connection connection("gecko_pub");
    std::string topic, json, type;
    long count = -1;
    double rate_hz = 0, wait_s = 1.0;
    Parser parser("pub", "TOPIC 'JSON' [--type NAME] [options]",
                  "Publishes JSON as a message of TOPIC: objects become msgpack maps with field names,\n"
                  "integers stay integers, other numbers are float64, {\"$bin\": \"<base64>\"} is bytes.\n"
                  "Without --rate, publishes once; with --rate, until --count messages or Ctrl-C.\n"
                  "Before the first message it waits (up to --wait) for a subscriber to connect, so\n"
                  "that a single message is not lost.\n\n"
                  "Example: gecko pub chatter --type gecko.msgs.String '{\"data\": \"hello\"}'");
    parser.positional("TOPIC", "the topic to publish on", topic)
        .positional("JSON", "the message, e.g. '{\"data\": 1.5}'", json)
        .option("--type", "NAME", "the type to declare, e.g. gecko.msgs.String (default: the topic's type, if the core knows it)", type)
        .option("--rate", "HZ", "publish repeatedly at HZ messages per second (default 1 with --count above 1)", rate_hz, 1e-3, 1e6)
        .option("--count", "N", "publish N messages (default 1 without --rate, unlimited with it)", count, 1, 1L << 40)
        .option("--wait", "SECONDS", "wait at most this long for a first subscriber (default 1)", wait_s, 0, 3600)
        .connection(connection);
    if (!parser.parse(args)) return exit_ok;
    if (count < 0) count = rate_hz > 0 ? 0 : 1;  // 0: unlimited
    if (rate_hz <= 0) rate_hz = 1.0;

    const auto payload = json_to_msgpack(json);  // bad JSON is a usage error: check it before any network
    if (type.empty()) {
        const auto r = query(connection);
        const auto* t = r.find(topic);
        if (!t || t->type.empty())
            throw UsageError("--type NAME is needed: the core of key '" + r.key + "' does not know topic '" + topic + "'");
        type = t->type;
    }

    install_signal_handlers();
    Node node(connection.node);
    PublisherOptions options;
    options.linger = std::chrono::milliseconds(2000);  // the last message still goes out as the tool exits
    auto publisher = node.raw_publisher(topic, type, options);
    const bool heard = publisher.wait_for_subscribers(1, std::chrono::milliseconds(static_cast<long>(wait_s * 1000)));
    if (!heard && wait_s > 0)
        std::fprintf(stderr, "gecko pub: no subscriber of '%s' connected within %g s; publishing anyway\n", topic.c_str(), wait_s);
    const std::size_t subscribers = publisher.subscriber_count();  // when publishing starts (some may leave after)

    Rate rate(rate_hz);
    long sent = 0;
    for (; ok() && (count == 0 || sent < count); ++sent) {
        if (sent > 0) rate.sleep();
        if (!ok()) break;
        publisher.publish(payload.data(), payload.size());
    }
    std::printf("published %ld message%s of %zu bytes on '%s' (%s) to %zu subscriber%s\n", sent, sent == 1 ? "" : "s",
                payload.size(), topic.c_str(), type.c_str(), subscribers, subscribers == 1 ? "" : "s");
    return exit_ok;
}

}  // namespace gecko::tools
