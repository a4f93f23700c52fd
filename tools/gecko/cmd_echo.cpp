// SPDX-License-Identifier: Apache-2.0
// gecko echo TOPIC: prints the messages of any topic, decoded generically
// from msgpack (no generated code), as indented text or as JSON lines.
// Subscribes as a tool (any type, announced as `*`), so it reads every
// publisher of the topic; a frame that breaks its type's schema is reported
// once and counted. A TOPIC with `*` or `?` is a glob: a key-wide
// subscription (Node::subscribe_all) prints every topic it matches.
#include <cstdio>
#include <set>

#include <gecko/node.hpp>
#include <gecko/buffer.hpp>
#include <gecko/wire/json.hpp>
#include <gecko/wire/names.hpp>
#include <gecko/wire/packer.hpp>
#include <gecko/wire/value.hpp>
#include <gecko/signals.hpp>

#include "cli.hpp"
#include "commands.hpp"
#include "field_path.hpp"
#include "format.hpp"
#include "known_types.hpp"
#include "text.hpp"
#include "query.hpp"

namespace gecko::tools {

namespace {

// Refuses (exit 1) a --type the topic does not have: every message would be dropped.
bool topic_has_other_type(const Connection& connection, const std::string& topic, const std::string& type,
                          std::map<std::uint64_t, std::string>& names) {
    const auto r = query(connection);
    names = producer_names(r, topic);
    std::string others;
    if (const auto* t = r.find(topic)) {
        std::set<std::string> types;
        for (const auto& p : t->producers) types.insert(p.type);
        for (const auto& c : t->consumers) types.insert(c.type);
        for (const auto& ty : types)
            if (!ty.empty() && ty != "*" && ty != type) others += (others.empty() ? "" : ", ") + ty;
    }
    if (others.empty()) return false;
    std::fprintf(stderr, "gecko echo: topic '%s' has type %s, not %s: its messages would be dropped "
                         "(leave out --type to read it as it is)\n",
                 topic.c_str(), others.c_str(), type.c_str());
    return true;
}

// Messages not shown, each reason said once on stderr, counted, and totalled at exit.
struct NotShown {
    std::string what;
    std::uint64_t count = 0;
    template <class Report>
    void add(const Report& first_report) {
        if (count++ == 0) std::fprintf(stderr, "gecko echo: %s\n", first_report().c_str());
    }
    bool total(const std::string& topic) const {
        if (count > 0)
            std::fprintf(stderr, "gecko echo: %llu message%s of '%s' not shown: %s\n", static_cast<unsigned long long>(count),
                         count == 1 ? "" : "s", topic.c_str(), what.c_str());
        return count > 0;
    }
};

}  // namespace

int run_echo(const Args& args) {
    Connection connection("gecko_echo");
    std::string topic, type, field;
    long count = 0;
    bool json = false, with_info = false, full = false;
    Parser parser("echo", "TOPIC [options]",
                  "Prints each message of TOPIC. By default as indented text (field: value) under a header\n"
                  "line giving its sequence number, publisher, latency, type and size; with --json as one\n"
                  "JSON object per line (bin values become {\"$bin\": \"<base64>\"}, NaN and infinities null).\n"
                  "Any topic can be read: messages are self-describing msgpack maps, and echo subscribes\n"
                  "to any type. Waits for the topic if it has no publisher yet. A message that breaks its\n"
                  "type (not a map, or a field of the wrong kind for a gecko.msgs type) or lacks --field is\n"
                  "said once on stderr, counted, and not shown; the exit code is then 1.\n\n"
                  "TOPIC may be a glob (* any run of characters, / included; ? one character): echo then\n"
                  "prints every topic of the key it matches, each message under its topic's name, topics\n"
                  "that appear later too. Examples: gecko echo '*'    gecko echo 'arm1/*'");
    parser.positional("TOPIC", "the topic to read, or a glob of topics", topic)
        .option("--count", "N", "stop after N messages (default: until Ctrl-C)", count, 1, 1L << 40)
        .option("--field", "PATH", "print only this field: a dotted path, e.g. accel.x or position.0", field)
        .flag("--json", "one JSON object per line", json)
        .flag("--with-info", "with --json: wrap each message with its metadata (seq, publisher, latency...)", with_info)
        .flag("--full", "text mode: print long arrays whole (default: the first 32 items)", full)
        .option("--type", "NAME", "read only messages of this type (exit 1 if the topic has another)", type)
        .connection(connection);
    if (!parser.parse(args)) return exit_ok;
    const auto path = field.empty() ? std::vector<std::string>{} : parse_field_path(field);

    install_signal_handlers();
    std::map<std::uint64_t, std::string> names;
    const bool glob = wire::is_glob(topic);
    if (glob) {
        if (const auto why = wire::check_pattern(topic); !why.empty()) throw UsageError("'" + topic + "': " + why);
        if (connection.node.discovery) {
            const auto r = query(connection);
            learn_schemas(r);
            bool any = false;
            for (const auto& t : names_of(r, false, true)) any = any || wire::glob_match(topic, t);
            if (!any)
                std::fprintf(stderr, "gecko echo: no topic matching '%s' under key '%s' yet; waiting (Ctrl-C to stop)\n",
                             topic.c_str(), r.key.c_str());
        }
    } else if (type.empty()) {
        const auto glance = connection.node.discovery ? glance_at_topic(connection, "echo", topic) : TopicGlance{};
        names = glance.names;
        const Shape* shape = known_shape(glance.type);
        if (shape && !path.empty())
            if (const auto why = check_path(*shape, path); !why.empty()) throw UsageError("--field " + field + ": " + why);
    } else {
        if (const Shape* shape = known_shape(type); shape && !path.empty())
            if (const auto why = check_path(*shape, path); !why.empty()) throw UsageError("--field " + field + ": " + why);
        if (connection.node.discovery && topic_has_other_type(connection, topic, type, names)) return exit_failure;
    }

    Node node(connection.node);
    SubscriberOptions options;
    options.depth = 1000;  // printing is slower than receiving: queue rather than skip
    RawSubscriber subscriber;
    if (glob) {
        subscriber = node.subscribe_all(TopicFilter{{topic}, {type.empty() ? std::string("*") : type}}, options);
    } else {
        options.type_name = type;  // empty: any type, announced as "*" (PROTOCOL.md §4)
        subscriber = node.raw_subscriber(topic, options);
    }

    TextOptions text;
    if (full) text.max_array = 0;
    auto last_lookup = std::chrono::steady_clock::now();
    std::set<std::uint64_t> asked;
    auto publisher_name = [&](const MessageInfo& info) -> std::string {
        const std::uint64_t id = info.publisher_id;
        if (info.channel)  // a key-wide subscription's message: its directory entry names its publishers
            for (const auto& p : info.channel->publishers)
                if (p.id == id) return p.node + "@" + p.host;
        if (glob) return hex_id(id);
        auto it = names.find(id);
        // A publisher that appeared since the last answer: ask again, at once for
        // an id not asked about yet, else at most every 2 s.
        if (it == names.end() && (asked.insert(id).second ||
                                  std::chrono::steady_clock::now() - last_lookup > std::chrono::seconds(2))) {
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

    NotShown broken{"they broke their type's schema"};
    NotShown missing{"they had no field '" + field + "'"};
    long printed = 0;
    std::string out;
    while (ok() && (count == 0 || printed < count)) {
        subscriber.receive(std::chrono::milliseconds(200), [&](const RawView& view) {
            const auto& info = view.info;
            const std::string& name = glob ? info.topic : topic;
            auto which = [&] {  // only for the first message not shown: not built for every message
                return "message #" + std::to_string(info.sequence) + " of '" + name + "' from " + publisher_name(info) +
                       " (" + info.type_name + ")";
            };
            std::string why;
            try {
                why = schema_violation(info.type_name, view.payload, view.size);
            } catch (const std::exception& e) {  // not msgpack at all
                why = e.what();
            }
            if (!why.empty())
                return broken.add([&] { return which() + " breaks its type: " + why + "; not shown (further ones are counted)"; });
            std::optional<wire::Value> value = wire::Value::parse(view.payload, view.size);
            if (!path.empty() && !(value = find_field(*value, path, why)))
                return missing.add([&] {
                    return which() + " has no field '" + field + "': " + why +
                           "; messages without it are not shown (further ones are counted)";
                });
            const std::int64_t latency = info.send_time_ns > 0 ? info.receive_time_ns - info.send_time_ns : -1;
            out.clear();
            if (json && with_info) {
                out = "{\"topic\":";
                wire::append_json_string(out, name);
                out += ",\"type\":";
                wire::append_json_string(out, info.type_name);
                out += ",\"seq\":" + std::to_string(info.sequence) + ",\"publisher\":";
                wire::append_json_string(out, publisher_name(info));
                out += ",\"publisher_id\":\"" + hex_id(info.publisher_id) + "\"";
                out += ",\"send_time_ns\":" + std::to_string(info.send_time_ns);
                out += ",\"latency_ns\":" + (latency >= 0 ? std::to_string(latency) : std::string("null"));
                out += ",\"payload_size\":" + std::to_string(view.size);
                out += ",\"wire_size\":" + std::to_string(info.wire_size) + ",\"message\":";
                wire::append_json(out, *value);
                out += "}\n";
            } else if (json) {
                wire::append_json(out, *value);
                out += '\n';
            } else {
                out = "--- " + name + " #" + std::to_string(info.sequence) + " from " + publisher_name(info) +
                      ", latency " + format_ns(static_cast<double>(latency)) + " (" + info.type_name + ", " +
                      format_bytes(static_cast<double>(view.size)) + " payload, " +
                      format_bytes(static_cast<double>(info.wire_size)) + " on the wire" +
                      (info.compressed ? " compressed" : "") + ")\n";
                if (path.empty()) {
                    append_text(out, *value, text);
                } else {  // as the one field of a message: "accel.x: 9.81", or "accel:" and indented lines
                    Buffer one;
                    wire::Packer pk(one);
                    pk.pack_map(1);
                    pk.pack(std::string_view(field));
                    one.write(reinterpret_cast<const char*>(value->bytes().data()), value->bytes().size());
                    append_text(out, wire::Value::parse(one.data(), one.size()), text);
                }
            }
            std::fwrite(out.data(), 1, out.size(), stdout);
            std::fflush(stdout);
            ++printed;
        });
    }
    const bool any_broken = broken.total(topic);
    const bool any_missing = missing.total(topic);
    return any_broken || any_missing ? exit_failure : exit_ok;
}

}  // namespace gecko::tools
