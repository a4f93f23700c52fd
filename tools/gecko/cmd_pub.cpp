// SPDX-License-Identifier: Apache-2.0
// gecko pub TOPIC --type NAME 'JSON': publishes a message written as JSON,
// converted to msgpack (objects become maps with field names, integers stay
// integers, other numbers float64) and sent raw with the given type name.
// `gecko pub TOPIC -` and `--file F` publish one message per JSON line.
// For the types it knows (gecko.msgs, and those the key's publishers declared
// a schema for), it first checks the JSON against the type's fields, so that
// a misspelled field is an error rather than a message of defaults.
#include <cstdio>
#include <optional>
#include <set>
#include <vector>

#include <gecko/raw_publisher.hpp>
#include <gecko/node.hpp>
#include <gecko/wire/json.hpp>
#include <gecko/signals.hpp>
#include <gecko/time.hpp>

#include "cli.hpp"
#include "commands.hpp"
#include "format.hpp"
#include "gecko/error.hpp"
#include "known_types.hpp"
#include "line_reader.hpp"
#include "query.hpp"

namespace gecko::tools {
namespace {

// Every type the core has for `topic` (publishers' and subscribers').
std::set<std::string> declared_types(const Graph& r, const std::string& topic) {
    std::set<std::string> types;
    if (const auto* t = r.find(topic)) {
        for (const auto& p : t->producers) types.insert(p.type);
        for (const auto& c : t->consumers) types.insert(c.type);
        if (!t->type.empty()) types.insert(t->type);
    }
    types.erase("");
    types.erase("*");
    return types;
}

// What was sent, for the summary line: payload bytes and frame bytes (header + payload).
struct Sent {
    long messages = 0;
    std::size_t payload = 0, wire = 0;
    void add(std::size_t payload_size, const std::string& /*type*/) {
        ++messages;
        payload += payload_size;
        wire += RawPublisher::frame_header_room() + payload_size;
    }
};

void print_summary(const Sent& sent, const std::string& topic, const std::string& type, std::size_t subscribers,
                   const std::string& from, bool same_payload) {
    const auto bytes = [](std::size_t n) { return format_bytes(static_cast<double>(n)); };
    std::string sizes;
    if (sent.messages == 0)
        sizes = "";
    else if (same_payload && sent.messages > 1)
        sizes = ", " + bytes(sent.payload / static_cast<std::size_t>(sent.messages)) + " payload, " +
                bytes(sent.wire / static_cast<std::size_t>(sent.messages)) + " on the wire, each";
    else
        sizes = ", " + bytes(sent.payload) + " payload, " + bytes(sent.wire) + " on the wire" +
                (sent.messages > 1 ? " in all" : "");
    std::printf("published %ld message%s%s on '%s' (%s%s) to %zu subscriber%s\n", sent.messages,
                sent.messages == 1 ? "" : "s", from.c_str(), topic.c_str(), type.c_str(), sizes.c_str(), subscribers,
                subscribers == 1 ? "" : "s");
}

}  // namespace

int run_pub(const Args& args) {
    Connection connection("gecko_pub");
    std::string topic, json, type, file;
    long count = -1;
    double rate_hz = 0, wait_s = 1.0;
    bool force = false;
    Parser parser("pub", "TOPIC ('JSON' | - | --file F) [--type NAME] [options]",
                  "Publishes JSON as a message of TOPIC: objects become msgpack maps with field names,\n"
                  "integers stay integers, other numbers are float64, {\"$bin\": \"<base64>\"} is bytes.\n"
                  "Without --rate, publishes once; with --rate, until --count messages or Ctrl-C.\n"
                  "With - (stdin) or --file F, publishes one message per line, in order, as lines come\n"
                  "(at --rate if given, else at once); a bad line is reported with its number and\n"
                  "skipped, and the exit code is then 1. Before the first message it waits (up to --wait)\n"
                  "for a subscriber to connect, so that a single message is not lost.\n\n"
                  "Examples: gecko pub chatter --type gecko.msgs.String '{\"data\": \"hello\"}'\n"
                  "          jq -c '.[]' poses.json | gecko pub goal --type gecko.msgs.Pose -");
    parser.positional("TOPIC", "the topic to publish on", topic)
        .positional("JSON", "the message, e.g. '{\"data\": 1.5}'; - reads one message per line from stdin", json, false)
        .option("--file", "F", "publish one message per line of F (JSON lines)", file)
        .option("--type", "NAME", "the type to declare, e.g. gecko.msgs.String (default: the topic's type, if the core knows it)", type)
        .option("--rate", "HZ", "publish at HZ messages per second (default: 1 with --count above 1; lines: at once)", rate_hz, 1e-3, 1e6)
        .option("--count", "N", "publish N messages (default 1 without --rate, unlimited with it; lines: all)", count, 1, 1L << 40)
        .option("--wait", "SECONDS", "wait at most this long for a first subscriber (default 1)", wait_s, 0, 3600)
        .flag("--force", "publish anyway: even if --type differs from the topic's type, or the JSON does not fit its type", force)
        .connection(connection);
    if (!parser.parse(args)) return exit_ok;
    if (!file.empty() && !json.empty()) throw UsageError("give the message as JSON, or --file F, not both");
    if (file.empty() && json.empty())
        throw UsageError("missing JSON (the message; - reads JSON lines from stdin, --file F from a file)");
    const bool lines = json == "-" || !file.empty();
    const bool rate_given = rate_hz > 0;
    if (count < 0) count = rate_given || lines ? 0 : 1;  // 0: unlimited
    if (!rate_given) rate_hz = 1.0;

    // Usage errors before any network: bad JSON, a field the type does not have, a file that cannot be read.
    std::vector<std::uint8_t> payload;
    if (!lines) payload = wire::json_to_msgpack(json);
    std::optional<LineReader> input;
    if (lines) input.emplace(file.empty() ? "-" : file);
    if (!lines && !type.empty() && !force) check_known(type, payload);
    if (type.empty()) {
        const auto r = query(connection);
        learn_schemas(r);
        const auto* t = r.find(topic);
        if (!t || t->type.empty() || t->type == "*")
            throw UsageError("--type NAME is needed: the core of key '" + r.key + "' does not know the type of topic '" +
                             topic + "'");
        type = t->type;
        if (!lines && !force) check_known(type, payload);
    } else if (!force && connection.node.discovery) {
        // Subscribers of another type would drop every message: say so instead.
        const auto r = query(connection);
        learn_schemas(r);
        if (!lines) check_known(type, payload);  // a type the key's publishers declared
        const auto types = declared_types(r, topic);
        if (!types.empty() && (types.size() > 1 || *types.begin() != type)) {
            std::vector<std::string> others;
            for (const auto& t : types)
                if (t != type) others.push_back(t);
            std::string listed;
            for (const auto& t : others) listed += (listed.empty() ? "" : ", ") + t;
            std::fprintf(stderr,
                         "gecko pub: topic '%s' has type %s, not %s: its subscribers would drop these messages "
                         "(use --type %s, or --force to publish anyway)\n",
                         topic.c_str(), listed.c_str(), type.c_str(), others.front().c_str());
            return exit_failure;
        }
    }

    install_signal_handlers();
    NodeOptions node_options = connection.node;
    node_options.linger = std::chrono::milliseconds(2000);  // the last message still goes out as the tool exits
    if (lines) {  // a file is sent at once: queue it rather than drop (its lines are in memory anyway)
        node_options.send_queue = 100000;
        node_options.send_queue_bytes = 0;
    }
    Node node(node_options);
    auto publisher = node.raw_publisher(topic, type);
    const bool heard = publisher.wait_for_subscribers(1, std::chrono::milliseconds(static_cast<long>(wait_s * 1000)));
    if (!heard && wait_s > 0)
        std::fprintf(stderr, "gecko pub: no subscriber of '%s' connected within %g s; publishing anyway\n", topic.c_str(), wait_s);
    const std::size_t subscribers = publisher.subscriber_count();  // when publishing starts (some may leave after)

    Rate rate(rate_hz);
    Sent sent;
    if (!lines) {
        while (ok() && (count == 0 || sent.messages < count)) {
            if (sent.messages > 0) rate.sleep();
            if (!ok()) break;
            publisher.publish(payload.data(), payload.size());
            sent.add(payload.size(), type);
        }
        print_summary(sent, topic, type, subscribers, "", true);
        return exit_ok;
    }

    long bad = 0;
    std::string line;
    while ((count == 0 || sent.messages < count) && input->next(line)) {
        if (line.find_first_not_of(" \t") == std::string::npos) continue;  // blank lines separate nothing
        try {
            payload = wire::json_to_msgpack(line);
            if (!force) check_known(type, payload);
        } catch (const std::exception& e) {  // UsageError (fields) or gecko::Error (JSON syntax)
            std::fprintf(stderr, "gecko pub: %s line %zu: %s; skipped\n", input->name().c_str(), input->line_number(), e.what());
            ++bad;
            continue;
        }
        if (rate_given && sent.messages > 0) rate.sleep();
        if (!ok()) break;
        publisher.publish(payload.data(), payload.size());
        sent.add(payload.size(), type);
    }
    print_summary(sent, topic, type, subscribers, " from " + input->name(), false);
    if (bad > 0) {
        std::fprintf(stderr, "gecko pub: %ld bad line%s of %s skipped (see above)\n", bad, bad == 1 ? "" : "s",
                     input->name().c_str());
        return exit_failure;
    }
    return exit_ok;
}

}  // namespace gecko::tools
