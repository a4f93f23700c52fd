// SPDX-License-Identifier: Apache-2.0
#pragma once
// Whether a program may join the core that answered it (docs/SECURITY.md §5):
// a core says in its datagrams whether it holds the key's secret, and a
// program whose security differs says why at once, rather than failing
// handshakes without a word. Used by nodes and by the tools' one-shot query.

#include <string>

#include "gecko/net/finder.hpp"
#include "gecko/wire/names.hpp"

namespace gecko::detail {

/// Why a program of `key` (which holds the key's secret if `secured`; it was
/// looked for at `secret_path`) cannot join the core that sent `answer`;
/// "" when their security agrees.
inline std::string core_security_mismatch(const std::string& key, const net::CoreAnswer& answer, bool secured,
                                          const std::string& secret_path) {
    if (answer.secured == secured) return "";
    const std::string where = wire::printable(answer.endpoint) + " on " + wire::printable(answer.host);
    if (answer.secured)
        return "geckocore for key '" + key + "' (at " + where + ") requires authentication; no secret found at " +
               secret_path + " (copy the key's secret there, or name it with GECKO_SECRET_FILE)";
    return "geckocore for key '" + key + "' (at " + where + ") is not secured, but this node has the key's secret (" +
           secret_path + "): a secured node never talks to a plain core. Give that core the secret too";
}

}  // namespace gecko::detail
