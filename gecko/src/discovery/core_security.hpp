// SPDX-License-Identifier: Apache-2.0
#pragma once
// Whether a program may join the core that answered it (docs/SECURITY.md §5):
// a core says in its datagrams whether it holds the key's secret, and a
// program whose security differs says why at once, rather than failing
// handshakes without a word. A secured program hears only sealed datagrams
// (§6), so it says why from what its finder refused, once a real core's
// answer has had time to win over a forged one. Used by nodes and by the
// tools' one-shot query.

#include <chrono>
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

/// Why a secured program of `key` joins no core, from the datagrams its
/// `finder` refused (docs/SECURITY.md §6); "" while an authentic answer may
/// still come (none refused that tells, or not for `find_timeout` yet), or
/// once one came.
inline std::string refused_core_verdict(const std::string& key, const net::CoreFinder& finder,
                                        const std::string& secret_path, net::CoreFinder::Clock::time_point now,
                                        std::chrono::milliseconds find_timeout) {
    const auto& refused = finder.refused_answer();
    if (!refused || !finder.guard() || finder.answers() > 0 || now - finder.first_refusal() < find_timeout) return "";
    const auto& a = refused->answer;
    if (refused->why == net::SealCheck::other_secret)
        return "geckocore for key '" + key + "' (at " + wire::printable(a.endpoint) + " on " + wire::printable(a.host) +
               ") holds another secret (fingerprint " + wire::printable(refused->fingerprint) + ") than this node (fingerprint " +
               finder.guard()->key().fingerprint + ", " + secret_path + "): copy the same secret to every machine of the key";
    if (refused->why == net::SealCheck::unsigned_datagram && !a.secured)
        return core_security_mismatch(key, a, true, secret_path);
    return "";
}

/// What a program (`who`: "node" or "program") given a core's address
/// (GECKO_CORE: no datagram said what it is) says when that address refuses
/// its handshake: without the secret, that the core requires one; with it,
/// that the core is not secured or holds another secret, or only the latter
/// when `plain_refused` (asked plainly, as a host door, it refused too).
inline std::string refused_handshake(const std::string& key, const std::string& endpoint, bool secured,
                                     const std::string& secret_path, const char* who, bool plain_refused = false) {
    const std::string core = "geckocore for key '" + key + "' at " + endpoint + " refuses this " + who + "'s ";
    if (!secured) return core + "handshake: it requires authentication; no secret found at " + secret_path;
    return core + "CURVE handshake: it " + (plain_refused ? "holds" : "is not secured, or holds") +
           " another secret than " + secret_path + " (compare `gecko keygen --key " + key +
           " --fingerprint` on both machines)";
}

/// What a secured program (`who`; `holder`: what holds the secret, the
/// node itself or the tool's machine) given a core's address says when,
/// asked plainly as a host door, it answered as a core: a plain one.
inline std::string plain_core_at(const std::string& key, const std::string& endpoint, const std::string& secret_path,
                                 const char* holder, const char* who) {
    return "geckocore for key '" + key + "' at " + endpoint + " is not secured, but this " + holder +
           " has the key's secret (" + secret_path + "): a secured " + who + " never talks to a plain core";
}

}  // namespace gecko::detail
