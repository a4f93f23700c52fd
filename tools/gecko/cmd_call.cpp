// SPDX-License-Identifier: Apache-2.0
// gecko call SERVICE 'JSON': calls a service with a request written as JSON
// and prints the reply. The request and reply types come from the core
// (services register as "<request type>-><reply type>").
#include <cstdio>

#include <gecko/raw_publisher.hpp>
#include <gecko/node.hpp>
#include <gecko/wire/json.hpp>
#include <gecko/wire/value.hpp>

#include "cli.hpp"
#include "commands.hpp"
#include "format.hpp"
#include "gecko/error.hpp"
#include "known_types.hpp"
#include "text.hpp"
#include "query.hpp"

namespace gecko::tools {

namespace {

std::string servers_of(const Graph& graph, const GraphTopic& service) {
    std::string s;
    for (const auto& p : service.producers) {
        std::string eps;
        if (const GraphNode* node = graph.node_of(p.session))
            for (const auto& e : node->locators) eps += (eps.empty() ? "" : ", ") + e;
        s += (s.empty() ? "" : "; ") + where(p) + (eps.empty() ? "" : " at " + eps);
    }
    return s;
}

}  // namespace

int run_call(const Args& args) {
    Connection connection("gecko_call");
    std::string name, json;
    bool as_json = false;
    Parser parser("call", "SERVICE ['JSON'] [options]",
                  "Calls SERVICE with a request written as JSON (default {}: every field at its default)\n"
                  "and prints the reply as text (field: value), or as one JSON line with --json. The request\n"
                  "and reply types are those the service registered with the core; a request is checked\n"
                  "against its type's fields first (a gecko.msgs type, or one its server declared; exit 2). --timeout bounds the\n"
                  "question to the core and then the call itself (connecting and the reply). Exit 1 if no\n"
                  "server answers in time or the server answers with an error.\n\n"
                  "Example: gecko call add '{\"a\": 1, \"b\": 2.5}'");
    parser.positional("SERVICE", "the service to call", name)
        .positional("JSON", "the request, e.g. '{\"a\": 1, \"b\": 2}' (default {})", json, false)
        .flag("--json", "print the reply as one JSON object", as_json)
        .connection(connection);
    if (!parser.parse(args)) return exit_ok;
    const auto request = wire::json_to_msgpack(json.empty() ? "{}" : json);  // a usage error: before any network

    const auto r = query(connection);
    const auto* service = r.find(name, true);
    if (!service) {
        std::string hint = not_found(r, "service", name);
        if (r.find(name, false)) hint += " ('" + name + "' is a topic: gecko echo or gecko pub it)";
        throw Error(Errc::no_peer, hint);
    }
    const auto arrow = service->type.find("->");
    if (arrow == std::string::npos)
        throw Error(Errc::protocol, "service '" + name + "' registered the type '" + service->type +
                                        "', not '<request type>-><reply type>'");
    const std::string request_type = service->type.substr(0, arrow), reply_type = service->type.substr(arrow + 2);
    learn_schemas(r);  // a custom request type its server declared is checked too
    check_known(request_type, request);
    if (service->producers.empty())
        throw Error(Errc::no_peer, "service '" + name + "' has no server under key '" + r.key +
                                       "' (only clients): start its server");

    Node node(connection.node);
    auto client = node.raw_client(name, request_type, reply_type);
    Buffer frame;
    frame.resize(RawPublisher::frame_header_room());
    frame.write(reinterpret_cast<const char*>(request.data()), request.size());
    std::string out;
    try {
        client.call(frame, connection.timeout, [&](const RawView& reply) {
            const auto value = wire::Value::parse(reply.payload, reply.size);
            if (as_json) {
                wire::append_json(out, value);
                out += '\n';
            } else {
                append_text(out, value);
            }
        });
    } catch (const Error& e) {
        const std::string servers = servers_of(r, *service);
        const std::string within = std::to_string(connection.timeout.count()) + " ms";
        switch (e.code()) {
            case Errc::no_peer:
                throw Error(Errc::no_peer, "no server of '" + name + "' could be reached within " + within +
                                               " (the core lists " + servers + "): is it running? (--timeout to wait longer)");
            case Errc::timeout:
                throw Error(Errc::timeout, "the server of '" + name + "' (" + servers + ") did not reply within " +
                                               within + ": it may be busy or stuck (--timeout to wait longer)");
            case Errc::remote:
                throw Error(Errc::remote, "the server of '" + name + "' answered with an error: " + e.what());
            default:
                throw;
        }
    }
    std::fputs(out.c_str(), stdout);
    return exit_ok;
}

}  // namespace gecko::tools
