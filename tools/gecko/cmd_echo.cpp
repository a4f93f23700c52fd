// SPDX-License-Identifier: Apache-2.0
// gecko echo TOPIC: prints the messages of any topic, decoded generically
// from msgpack (no generated code), as indented text or as JSON lines.
#include <cstdio>
#include <set>

#include <gecko/node.hpp>
#include <gecko/signals.hpp>

#include "cli.hpp"
#include "commands.hpp"
#include "format.hpp"
#include "msgpack_json.hpp"
#include "query.hpp"

namespace gecko::tools {

int run_echo(const Args& args) {
    Connection connection("gecko_echo");
    std::string topic, type;
    long count = 0;
    bool json = false, with_info = false, full = false;
    Parser parser("echo", "TOPIC [options]",
                  "Prints each message of TOPIC. By default as indented text (field: value) under a header\n"
                  "line giving its sequence number, publisher and latency; with --json as one JSON object\n"
                  "per line (bin values become {\"$bin\": \"<base64>\"}, NaN and infinities null).\n"
                  "Any topic can be read: messages are self-describing msgpack maps.");
    parser.positional("TOPIC", "the topic to read", topic)
        .option("--count", "N", "stop after N messages (default: until Ctrl-C)", count, 1, 1L << 40)
        .flag("--json", "one JSON object per line", json)
        .flag("--with-info", "with --json: wrap each message with its metadata (seq, publisher, latency...)", with_info)
        .flag("--full", "text mode: print long arrays whole (default: the first 32 items)", full)
        .option("--type", "NAME", "subscribe with this type instead of the one the core reports (exit 1 if the topic has another)", type)
        .connection(connection);
    if (!parser.parse(args)) return exit_ok;

    install_signal_handlers();
    std::map<std::uint64_t, std::string> names;
    if (type.empty()) {
        type = wait_for_topic_type(connection, "echo", topic, &names);
        if (type.empty()) return exit_ok;  // interrupted while waiting
    } else if (connection.node.discovery) {
        // A type the topic does not have would drop every message: nothing would ever print.
        const auto r = query(connection);
        names = producer_names(r, topic);
        std::string others;
        if (const auto* t = r.find(topic)) {
            std::set<std::string> types;
            for (const auto& p : t->producers) types.insert(p.peer.reg.type_name);
            for (const auto& c : t->consumers) types.insert(c.peer.reg.type_name);
            for (const auto& ty : types)
                if (!ty.empty() && ty != type) others += (others.empty() ? "" : ", ") + ty;
        }
        if (!others.empty()) {
            std::fprintf(stderr, "gecko echo: topic '%s' has type %s, not %s: its messages would be dropped "
                                 "(leave out --type to read it as it is)\n",
                         topic.c_str(), others.c_str(), type.c_str());
            return exit_failure;
        }
    }

    Node node(connection.node);
    SubscriberOptions options;
    options.type_name = type;
    options.depth = 1000;  // printing is slower than receiving: queue rather than skip
    auto subscriber = node.raw_subscriber(topic, options);

    TextOptions text;
    if (full) text.max_array = 0;
    auto last_lookup = std::chrono::steady_clock::now();
    long printed = 0;
    std::string out;
    auto publisher_name = [&](std::uint64_t id) -> std::string {
        auto it = names.find(id);
        // A publisher that appeared since the last answer: ask again, at most every 2 s.
        if (it == names.end() && std::chrono::steady_clock::now() - last_lookup > std::chrono::seconds(2)) {
            last_lookup = std::chrono::steady_clock::now();
            try {
                names = producer_names(query(connection), topic);
            } catch (const std::exception&) {
                // The core is gone: keep printing with ids.
            }
            it = names.find(id);
        }
        return it != names.end() ? it->second : hex_id(id);
    };

    while (ok() && (count == 0 || printed < count)) {
        subscriber.receive(std::chrono::milliseconds(200), [&](const RawView& view) {
            const auto& info = view.info;
            const std::int64_t latency = info.send_time_ns > 0 ? info.receive_time_ns - info.send_time_ns : -1;
            out.clear();
            try {
                auto handle = parse_msgpack(view.payload, view.size);
                if (json && with_info) {
                    out = "{\"topic\":";
                    append_json_string(out, topic);
                    out += ",\"type\":";
                    append_json_string(out, info.type_name);
                    out += ",\"seq\":" + std::to_string(info.sequence) + ",\"publisher\":";
                    append_json_string(out, publisher_name(info.publisher_id));
                    out += ",\"publisher_id\":\"" + hex_id(info.publisher_id) + "\"";
                    out += ",\"send_time_ns\":" + std::to_string(info.send_time_ns);
                    out += ",\"latency_ns\":" + (latency >= 0 ? std::to_string(latency) : std::string("null"));
                    out += ",\"wire_size\":" + std::to_string(info.wire_size) + ",\"message\":";
                    append_json(out, handle.get());
                    out += "}\n";
                } else if (json) {
                    append_json(out, handle.get());
                    out += '\n';
                } else {
                    out = "--- " + topic + " #" + std::to_string(info.sequence) + " from " +
                          publisher_name(info.publisher_id) + ", latency " + format_ns(static_cast<double>(latency)) +
                          " (" + info.type_name + ", " + format_bytes(static_cast<double>(info.wire_size)) +
                          (info.compressed ? " compressed" : "") + ")\n";
                    append_text(out, handle.get(), text);
                }
            } catch (const std::exception& e) {
                std::fprintf(stderr, "gecko echo: message #%llu of '%s' is not readable: %s\n",
                             static_cast<unsigned long long>(info.sequence), topic.c_str(), e.what());
            }
            std::fwrite(out.data(), 1, out.size(), stdout);
            std::fflush(stdout);
            ++printed;
        });
    }
    return exit_ok;
}

}  // namespace gecko::tools
