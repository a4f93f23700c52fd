// SPDX-License-Identifier: Apache-2.0
#include "transport/registry.hpp"

#include "gecko/net/zmq_socket.hpp"
#include "transport/mem_transport.hpp"
#include "transport/shm_transport.hpp"
#include "transport/zmq_transport.hpp"

namespace gecko::detail {

const std::vector<TransportKind>& transport_kinds() {
    static const std::vector<TransportKind> kinds = {
        {"in-process queues",
         {{"mem", Reach::process}},
         [](const std::vector<std::string>&) { return make_mem_transport(); }},
        // Before ZeroMQ: within host reach, shm is preferred over ipc.
        {"shared memory",
         {{"shm", Reach::host}},
         [](const std::vector<std::string>&) { return make_shm_transport(); }},
        {"ZeroMQ",
         {{"inproc", Reach::process}, {"ipc", Reach::host}, {"tcp", Reach::network}},
         [](const std::vector<std::string>& offered) { return make_zmq_transport(net::process_context(), offered); }},
    };
    return kinds;
}

const TransportKind* transport_for(std::string_view scheme) noexcept {
    for (const auto& kind : transport_kinds())
        for (const auto& s : kind.schemes)
            if (s.scheme == scheme) return &kind;
    return nullptr;
}

std::string known_schemes() {
    std::string out;
    for (const auto& kind : transport_kinds())
        for (const auto& s : kind.schemes) {
            if (!out.empty()) out += ", ";
            out += s.scheme;
        }
    return out;
}

namespace {

// The locators whose scheme has exactly this reach, in the registry's order.
void pick_all(const std::vector<std::string>& locators, Reach reach, std::vector<std::string>& out) {
    for (const auto& kind : transport_kinds())
        for (const auto& s : kind.schemes) {
            if (s.reach != reach) continue;
            for (const auto& l : locators)
                if (scheme_of(l) == s.scheme) out.push_back(l);
        }
}

std::string pick(const std::vector<std::string>& locators, Reach reach) {
    std::vector<std::string> all;
    pick_all(locators, reach, all);
    return all.empty() ? std::string() : all.front();
}

}  // namespace

Reach reach_between(const Whereabouts& here, const Whereabouts& there) noexcept {
    // The same /tmp and /dev/shm: equal host ids (boot id + mount namespace);
    // a peer that sent none is compared by host name.
    const bool same_host = there.host_id.empty() ? there.host == here.host : there.host_id == here.host_id;
    if (!same_host) return Reach::network;
    return there.pid == here.pid && there.pid_namespace == here.pid_namespace ? Reach::process : Reach::host;
}

Reach reach_of(std::string_view scheme) noexcept {
    for (const auto& kind : transport_kinds())
        for (const auto& s : kind.schemes)
            if (s.scheme == scheme) return s.reach;
    return Reach::network;
}

std::vector<std::string> usable_locators(const std::vector<std::string>& locators, const Whereabouts& here,
                                         const Whereabouts& there) {
    // The narrowest reach that applies first; a wider one always works too.
    const Reach between = reach_between(here, there);
    std::vector<std::string> out;
    if (between == Reach::process) pick_all(locators, Reach::process, out);
    if (between != Reach::network) pick_all(locators, Reach::host, out);
    pick_all(locators, Reach::network, out);
    return out;
}

std::string self_locator(const std::vector<std::string>& locators) {
    for (Reach reach : {Reach::process, Reach::host, Reach::network})
        if (auto l = pick(locators, reach); !l.empty()) return l;
    return {};
}

}  // namespace gecko::detail
