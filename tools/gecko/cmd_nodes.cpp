// SPDX-License-Identifier: Apache-2.0
// gecko nodes: the nodes registered with the key's core.
#include <cstdio>

#include "cli.hpp"
#include "commands.hpp"
#include "format.hpp"
#include "query.hpp"

namespace gecko::tools {

int run_nodes(const Args& args) {
    Connection connection;
    Parser parser("nodes", "[options]",
                  "Lists the nodes registered with the key's geckocore: name, host, pid, how long ago the\n"
                  "core last heard from each (nodes silent for a lease, 3 s by default, are dropped), and\n"
                  "the topics each publishes and subscribes to, and the nodes it receives from with the\n"
                  "transport of each link (shm, ipc, tcp, inproc; reported every ~3 s).");
    parser.connection(connection);
    if (!parser.parse(args)) return exit_ok;

    const auto r = query(connection);
    Table table({"NODE", "HOST", "PID", "LAST HEARD", "PUBLISHES", "SUBSCRIBES", "SERVICES", "RECEIVES FROM"});
    for (const auto& n : r.nodes) {
        std::string pubs, subs, services;
        auto mine = [&](const GraphEntity& e) { return e.session == n.session; };
        auto add = [](std::string& list, const std::string& item) { list += (list.empty() ? "" : ", ") + item; };
        for (const auto& t : r.topics) {
            for (const auto& e : t.producers)
                if (mine(e)) add(t.service ? services : pubs, t.service ? t.name + " (server)" : t.name);
            for (const auto& e : t.consumers)
                if (mine(e)) add(t.service ? services : subs, t.service ? t.name + " (client)" : t.name);
        }
        std::string links;  // "sim over shm": the node each link reaches, and its transport
        for (const auto& l : n.links) add(links, (l.node.empty() ? "?" : l.node) + " over " + l.transport);
        table.add({n.name, n.host, std::to_string(n.pid), format_age_ms(n.silent_ms) + " ago", pubs.empty() ? "-" : pubs,
                   subs.empty() ? "-" : subs, services.empty() ? "-" : services, links.empty() ? "-" : links});
    }
    std::printf("key '%s': %zu node%s (core %s)\n\n", r.key.c_str(), r.nodes.size(), r.nodes.size() == 1 ? "" : "s",
                r.core_endpoint.c_str());
    if (table.rows() > 0) std::fputs(table.render().c_str(), stdout);
    return exit_ok;
}

}  // namespace gecko::tools
