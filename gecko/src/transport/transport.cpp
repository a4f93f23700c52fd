// SPDX-License-Identifier: Apache-2.0
#include "transport/transport.hpp"

namespace gecko::detail {

std::string_view scheme_of(std::string_view locator) noexcept {
    const auto at = locator.find("://");
    return at == std::string_view::npos ? std::string_view() : locator.substr(0, at);
}

std::string choose_locator(const std::vector<std::string>& locators, const Whereabouts& here, const Whereabouts& there) {
    // The same /tmp and /dev/shm: equal host ids (boot id + mount namespace);
    // a peer that sent none is compared by host name.
    const bool same_host = there.host_id.empty() ? there.host == here.host : there.host_id == here.host_id;
    const bool same_process = same_host && there.pid == here.pid && there.pid_namespace == here.pid_namespace;
    auto find = [&](std::string_view scheme) -> std::string {
        for (const auto& l : locators)
            if (scheme_of(l) == scheme) return l;
        return {};
    };
    std::string pick;
    if (same_process) pick = find("mem");
    if (pick.empty() && same_process) pick = find("inproc");
    if (pick.empty() && same_host) pick = find("ipc");
    if (pick.empty()) pick = find("tcp");
    return pick;
}

}  // namespace gecko::detail
