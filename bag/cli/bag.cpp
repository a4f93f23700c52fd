// SPDX-License-Identifier: Apache-2.0
// gecko bag info|echo|doctor|recover FILE: what a recording holds, its
// messages as `gecko echo` prints them, the checks `mcap doctor` makes,
// and the rewrite of a cut file with a summary.
#include <gecko/bag/check.hpp>
#include <gecko/bag/gecko_format.hpp>
#include <gecko/bag/reader.hpp>
#include <gecko/bag/repair.hpp>
#include <gecko/error.hpp>
#include <gecko/wire/json.hpp>
#include <gecko/wire/names.hpp>
#include <gecko/wire/value.hpp>

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

#include <gecko/bag/cli.hpp>
#include "common.hpp"

namespace gecko::bag::cli {

namespace {

struct TopicRow {
    std::string type;
    std::string encoding;
    std::set<std::string> publishers;
    std::uint64_t messages = 0;
    bool twin = false;
};

int info(const std::vector<std::string>& args) {
    std::vector<std::string> files;
    bool json = false;
    OptionParser parser("gecko bag info", "what an MCAP file holds: topics, types, counts, rates, duration, compression, drops");
    parser.flag("--json", json, "one JSON object instead of the table");
    parser.positionals(files, "FILE");
    if (auto done = parse(parser, args)) return *done;
    if (files.size() != 1) {
        std::fprintf(stderr, "gecko bag info: give one FILE\n");
        return exit_usage;
    }
    Reader r(files[0]);
    std::map<std::uint16_t, std::uint64_t> counts;
    std::uint64_t messages = 0, chunks = 0;
    Timestamp start = 0, end = 0;
    std::map<std::string, std::pair<std::uint64_t, std::uint64_t>> compression;  // name -> compressed, uncompressed
    if (r.has_summary() && r.statistics()) {
        const auto& s = *r.statistics();
        counts = s.channel_message_counts;
        messages = s.message_count;
        chunks = s.chunk_count;
        start = s.message_start_time;
        end = s.message_end_time;
        for (const auto& ci : r.chunk_indexes()) {
            auto& c = compression[ci.compression.empty() ? "none" : ci.compression];
            c.first += ci.compressed_size;
            c.second += ci.uncompressed_size;
        }
    } else {
        const auto scan = r.scan();
        counts = scan.channel_message_counts;
        messages = scan.messages;
        chunks = scan.chunks;
        start = scan.message_start_time;
        end = scan.message_end_time;
        for (const auto& [name, n] : scan.compressed_bytes) compression[name] = {n, scan.uncompressed_bytes.at(name)};
    }
    std::map<std::string, TopicRow> topics;
    for (const auto& [id, ch] : r.channels()) {
        auto& row = topics[ch.topic];
        row.type = type_name_of(ch);
        row.encoding = ch.message_encoding;
        row.twin = ch.metadata.count(keys::twin_of) > 0;
        auto node = ch.metadata.find(keys::node), host = ch.metadata.find(keys::host);
        if (node != ch.metadata.end()) row.publishers.insert(node->second + (host != ch.metadata.end() ? "@" + host->second : ""));
        row.messages += counts.count(id) ? counts.at(id) : 0;
    }
    std::string key, recorder;
    StringMap drops;
    for (const auto& m : r.metadata()) {
        if (m.name == keys::file_record) {
            if (m.metadata.count("key")) key = m.metadata.at("key");
            if (m.metadata.count("recorder")) recorder = m.metadata.at("recorder");
        }
        if (m.name == keys::drops_record) drops = m.metadata;  // the last one counts
    }
    const double duration = end > start ? static_cast<double>(end - start) / 1e9 : 0;
    const std::uint64_t dropped = drops.count("total") ? std::stoull(drops.at("total")) : 0;
    if (json) {
        std::string o = "{\"path\":";
        wire::append_json_string(o, r.path());
        o += ",\"size\":" + std::to_string(r.file_size()) + ",\"summary\":" + (r.has_summary() ? "true" : "false");
        o += ",\"library\":";
        wire::append_json_string(o, r.header().library);
        o += ",\"key\":";
        wire::append_json_string(o, key);
        o += ",\"messages\":" + std::to_string(messages) + ",\"chunks\":" + std::to_string(chunks);
        o += ",\"start_ns\":" + std::to_string(start) + ",\"end_ns\":" + std::to_string(end);
        o += ",\"dropped\":" + std::to_string(dropped) + ",\"topics\":{";
        bool first = true;
        for (const auto& [name, row] : topics) {
            if (!first) o += ',';
            first = false;
            wire::append_json_string(o, name);
            o += ":{\"messages\":" + std::to_string(row.messages) + ",\"type\":";
            wire::append_json_string(o, row.type);
            o += ",\"encoding\":";
            wire::append_json_string(o, row.encoding);
            o += ",\"dropped\":" + (drops.count("topic." + name) ? drops.at("topic." + name) : std::string("0")) + "}";
        }
        o += "},\"problems\":[";
        first = true;
        for (const auto& p : r.problems()) {
            if (!first) o += ',';
            first = false;
            wire::append_json_string(o, p.to_string());
        }
        o += "]}\n";
        std::fputs(o.c_str(), stdout);
        return exit_ok;
    }
    std::printf("path:         %s\n", r.path().c_str());
    std::printf("size:         %s\n", format_bytes(static_cast<double>(r.file_size())).c_str());
    std::printf("library:      %s\n", r.header().library.c_str());
    if (!key.empty()) std::printf("key:          %s\n", key.c_str());
    if (!r.has_summary())
        std::printf("summary:      none (the file was cut short?): counted by reading it; `gecko bag recover` rewrites it whole\n");
    std::printf("duration:     %s\n", format_seconds(duration).c_str());
    if (messages) {
        std::printf("start:        %s (%llu.%09llu)\n", format_time(start).c_str(), static_cast<unsigned long long>(start / 1000000000ull),
                    static_cast<unsigned long long>(start % 1000000000ull));
        std::printf("end:          %s (%llu.%09llu)\n", format_time(end).c_str(), static_cast<unsigned long long>(end / 1000000000ull),
                    static_cast<unsigned long long>(end % 1000000000ull));
    }
    std::printf("messages:     %llu\n", static_cast<unsigned long long>(messages));
    std::string comp;
    for (const auto& [name, c] : compression) {
        char part[160];
        std::snprintf(part, sizeof part, "%s%s: %s of %s (%.0f%%)", comp.empty() ? "" : "; ", name.c_str(),
                      format_bytes(static_cast<double>(c.first)).c_str(), format_bytes(static_cast<double>(c.second)).c_str(),
                      c.second ? 100.0 * static_cast<double>(c.first) / static_cast<double>(c.second) : 100.0);
        comp += part;
    }
    std::printf("chunks:       %llu%s%s\n", static_cast<unsigned long long>(chunks), comp.empty() ? "" : ", ", comp.c_str());
    std::printf("dropped:      %s\n", drops.empty() ? "not recorded (not a gecko record file?)"
                                      : dropped == 0 ? "none"
                                                     : (std::to_string(dropped) + " messages the recorder could not keep").c_str());
    std::size_t width = 5;
    for (const auto& [name, row] : topics) width = std::max(width, name.size());
    std::printf("topics:       %zu\n", topics.size());
    for (const auto& [name, row] : topics) {
        const double rate = duration > 0 && row.messages > 1 ? static_cast<double>(row.messages - 1) / duration : 0;
        std::string who;
        for (const auto& p : row.publishers) who += (who.empty() ? "" : ", ") + p;
        const std::string d = drops.count("topic." + name) ? ", " + drops.at("topic." + name) + " dropped" : "";
        std::printf("  %-*s %8llu msgs %10s  %s%s%s%s\n", static_cast<int>(width), name.c_str(),
                    static_cast<unsigned long long>(row.messages), format_rate(rate).c_str(),
                    row.type.empty() ? row.encoding.c_str() : row.type.c_str(), row.twin ? " (json twin)" : "",
                    who.empty() ? "" : (" from " + who).c_str(), d.c_str());
    }
    for (const auto& p : r.problems()) std::printf("problem:      %s\n", p.to_string().c_str());
    return exit_ok;
}

int echo(const std::vector<std::string>& args, const Tool& tool) {
    std::vector<std::string> positional;
    bool json = false;
    long long count = 0;
    double start = 0, end = -1;
    OptionParser parser("gecko bag echo", "prints the messages of a topic of an MCAP file, as `gecko echo` does: "
                                          "gecko bag echo FILE TOPIC (a glob takes several topics)");
    parser.flag("--json", json, "one JSON object per line");
    parser.integer("--count", count, 1, 1LL << 50, "N", "stop after N messages");
    parser.number("--start", start, 0, 1e9, "SECONDS", "skip the first SECONDS of the recording");
    parser.number("--end", end, 0, 1e9, "SECONDS", "stop SECONDS after the recording's start");
    parser.positionals(positional, "FILE TOPIC");
    if (auto done = parse(parser, args)) return *done;
    if (positional.size() != 2) {
        std::fprintf(stderr, "gecko bag echo: give FILE and TOPIC\nTry 'gecko bag echo --help'.\n");
        return exit_usage;
    }
    Reader r(positional[0]);
    MessageFilter f;
    f.topics = {positional[1]};
    Timestamp first = r.statistics() ? r.statistics()->message_start_time : 0;
    if (!first) {
        const auto scan = r.scan();
        first = scan.message_start_time;
    }
    if (start > 0) f.start = first + static_cast<Timestamp>(start * 1e9);
    if (end >= 0) f.end = first + static_cast<Timestamp>(end * 1e9);
    bool any_topic = false;
    for (const auto& [id, ch] : r.channels()) any_topic = any_topic || ch.topic == positional[1] || wire::glob_match(positional[1], ch.topic);
    if (!any_topic) {
        std::string known;
        std::set<std::string> names;
        for (const auto& [id, ch] : r.channels()) names.insert(ch.topic);
        for (const auto& n : names) known += (known.empty() ? "" : ", ") + n;
        std::fprintf(stderr, "gecko bag echo: no topic '%s' in %s (its topics: %s)\n", positional[1].c_str(),
                     positional[0].c_str(), known.empty() ? "none" : known.c_str());
        return exit_failure;
    }
    long long printed = 0;
    std::uint64_t broken = 0;
    std::string out;
    r.read_messages(f, [&](const Channel& ch, const MessageView& m) {
        out.clear();
        try {
            if (ch.message_encoding == msgpack_encoding) {
                const auto v = wire::Value::parse(m.data, m.size);
                if (json) {
                    wire::append_json(out, v);
                    out += '\n';
                } else {
                    out = "--- " + ch.topic + " #" + std::to_string(m.sequence) + " at " + format_time(m.log_time) + " (" +
                          type_name_of(ch) + ", " + format_bytes(static_cast<double>(m.size)) + ")\n";
                    out += tool.to_text ? tool.to_text(v) : wire::to_json(v) + "\n";
                }
            } else if (ch.message_encoding == "json") {
                out.assign(reinterpret_cast<const char*>(m.data), m.size);
                if (!json) out = "--- " + ch.topic + " #" + std::to_string(m.sequence) + " at " + format_time(m.log_time) + "\n" + out;
                out += '\n';
            } else {
                out = "--- " + ch.topic + ": " + std::to_string(m.size) + " bytes of " + ch.message_encoding + "\n";
            }
        } catch (const Error& e) {
            if (broken++ == 0) std::fprintf(stderr, "gecko bag echo: a message of '%s' is not msgpack: %s (further ones are counted)\n", ch.topic.c_str(), e.what());
            return true;
        }
        std::fwrite(out.data(), 1, out.size(), stdout);
        return count == 0 || ++printed < count;
    });
    for (const auto& p : r.problems()) std::fprintf(stderr, "gecko bag echo: %s\n", p.to_string().c_str());
    if (broken) std::fprintf(stderr, "gecko bag echo: %llu messages not shown: not msgpack\n", static_cast<unsigned long long>(broken));
    return broken ? exit_failure : exit_ok;
}

int doctor(const std::vector<std::string>& args) {
    std::vector<std::string> files;
    OptionParser parser("gecko bag doctor", "checks an MCAP file as `mcap doctor` does: CRCs, record order, indexes "
                                            "against chunks, statistics against data; exit 1 on any error");
    parser.positionals(files, "FILE");
    if (auto done = parse(parser, args)) return *done;
    if (files.size() != 1) {
        std::fprintf(stderr, "gecko bag doctor: give one FILE\n");
        return exit_usage;
    }
    const auto report = check(files[0]);
    for (const auto& f : report.findings) std::printf("%s\n", f.to_string().c_str());
    std::printf("%s: %llu records, %llu chunks, %llu messages: %zu errors, %zu warnings\n", files[0].c_str(),
                static_cast<unsigned long long>(report.records), static_cast<unsigned long long>(report.chunks),
                static_cast<unsigned long long>(report.messages), report.errors(), report.warnings());
    return report.ok() ? exit_ok : exit_failure;
}

int recover_command(const std::vector<std::string>& args) {
    std::vector<std::string> files;
    std::string output, compression = "zstd";
    OptionParser parser("gecko bag recover", "rewrites a cut or damaged MCAP file whole: every message that reads, "
                                             "its channels and metadata, a new summary: gecko bag recover FILE [-o OUT]");
    parser.text("--output", output, "OUT", "the file to write (default: FILE with .recovered.mcap)").alias("-o");
    parser.text("--compression", compression, "ALGO", "zstd (default), lz4 or none", [](const std::string& v) {
        return v == "zstd" || v == "lz4" || v == "none" ? std::string() : "expected zstd, lz4 or none";
    });
    parser.positionals(files, "FILE");
    if (auto done = parse(parser, args)) return *done;
    if (files.size() != 1) {
        std::fprintf(stderr, "gecko bag recover: give one FILE\n");
        return exit_usage;
    }
    if (output.empty()) {
        output = files[0];
        if (output.size() > 5 && output.compare(output.size() - 5, 5, ".mcap") == 0) output.resize(output.size() - 5);
        output += ".recovered.mcap";
    }
    WriterOptions o;
    o.compression = compression == "lz4" ? Compression::lz4 : compression == "none" ? Compression::none : Compression::zstd;
    o.library.clear();  // keep the input's
    const auto result = recover(files[0], output, o);
    for (const auto& p : result.problems) std::printf("%s\n", p.to_string().c_str());
    std::printf("recovered %llu messages on %llu channels, %llu metadata records, %llu attachments into %s; %s of the input read, %s lost\n",
                static_cast<unsigned long long>(result.messages), static_cast<unsigned long long>(result.channels),
                static_cast<unsigned long long>(result.metadata), static_cast<unsigned long long>(result.attachments), output.c_str(),
                format_bytes(static_cast<double>(result.bytes_read)).c_str(),
                format_bytes(static_cast<double>(result.bytes_lost)).c_str());
    return exit_ok;
}

const char* usage =
    "usage: gecko bag COMMAND FILE [options]\n\n"
    "Look at MCAP files (gecko record's, or any):\n"
    "  info     topics, types, counts, rates, duration, compression, drops\n"
    "  echo     the messages of a topic, as `gecko echo` prints them (FILE TOPIC)\n"
    "  doctor   the checks `mcap doctor` makes; exit 1 on an error\n"
    "  recover  rewrite a cut or damaged file whole (-o OUT)\n";

}  // namespace

int bag(const std::vector<std::string>& args, const Tool& tool) {
    // The subcommand: the first argument that names one (connection options may come before it).
    static const std::set<std::string> names{"info", "echo", "doctor", "recover"};
    std::vector<std::string> rest;
    std::string command;
    bool help = false;
    for (const auto& a : args) {
        if (command.empty() && names.count(a)) command = a;
        else if (command.empty() && (a == "--help" || a == "-h")) help = true;
        else if (!command.empty()) rest.push_back(a);
    }
    if (command.empty()) {
        std::fputs(usage, help ? stdout : stderr);
        return help ? exit_ok : exit_usage;
    }
    if (command == "info") return info(rest);
    if (command == "echo") return echo(rest, tool);
    if (command == "doctor") return doctor(rest);
    return recover_command(rest);
}

}  // namespace gecko::bag::cli
