# SPDX-License-Identifier: Apache-2.0
"""Whether a node may join the core it found (docs/SECURITY.md §5), as C++
gecko/src/discovery/core_security.hpp and core_channel.cpp: a core says in
its datagrams whether it holds the key's secret, and a core reached with
GECKO_CORE shows it by refusing handshakes. A node whose security differs
says why, rather than failing handshakes without a word: a node without
the secret at once, a secured one when no sealed answer (§6) came in time."""

import zmq

HANDSHAKE_EVENTS = (zmq.EVENT_HANDSHAKE_SUCCEEDED | zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL
                    | zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL | zmq.EVENT_HANDSHAKE_FAILED_AUTH)
_SUCCEEDED = int(zmq.EVENT_HANDSHAKE_SUCCEEDED)
_FAILED_NO_DETAIL = int(zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL)
_NO_STORE = "(no key store: neither XDG_CONFIG_HOME nor HOME is set)"


def _path(security):
    return security.path if security is not None and security.path else _NO_STORE


def _where(answer):
    host = answer.get("host")
    return "%s on %s" % (answer.get("endpoint"), host if isinstance(host, str) else "?")


def core_security_mismatch(key, answer, security):
    """Why a program of `key` with `security` (gecko.security.KeySecurity,
    None: plain) cannot join the core whose `core` or `announce` datagram is
    `answer`; "" when their security agrees."""
    secured = security is not None and security.secured
    if (answer.get("secured") is True) == secured:
        return ""
    where = _where(answer)
    if not secured:
        return ("geckocore for key '%s' (at %s) requires authentication; no secret found at %s (copy the key's "
                "secret there, or name it with GECKO_SECRET_FILE)" % (key, where, _path(security)))
    return ("geckocore for key '%s' (at %s) is not secured, but this node has the key's secret (%s): a secured "
            "node never talks to a plain core. Give that core the secret too" % (key, where, _path(security)))


def core_secret_mismatch(key, answer, their_fingerprint, security):
    """What a secured program of `key` says of the core whose datagram
    `answer` is sealed with another secret, of fingerprint `their_fingerprint`
    (docs/SECURITY.md §6)."""
    return ("geckocore for key '%s' (at %s) holds another secret (fingerprint %s) than this node (fingerprint %s, "
            "%s): copy the same secret to every machine of the key"
            % (key, _where(answer), their_fingerprint or "none", security.fingerprint, _path(security)))


def count_handshake_failures(monitor, failures):
    """`failures` updated with the events waiting on a socket's `monitor`
    (HANDSHAKE_EVENTS): a success resets it; a connection lost
    mid-handshake may be a core restarting (one); a protocol or auth
    failure is the core's answer, which ZeroMQ never retries (three)."""
    for _ in range(64):
        try:
            event = monitor.recv_multipart(zmq.NOBLOCK)
        except zmq.ZMQError:
            break
        what = int.from_bytes(event[0][:2], "little") if event and len(event[0]) >= 2 else 0
        if what == _SUCCEEDED:
            failures = 0
        else:
            failures += 1 if what == _FAILED_NO_DETAIL else 3
    return failures


def plain_core_refusal(key, endpoint, security):
    """What a secured node says when the endpoint it was given answers as a plain core."""
    return ("geckocore for key '%s' at %s is not secured, but this node has the key's secret (%s): a secured node "
            "never talks to a plain core. Give that core the secret too" % (key, endpoint, _path(security)))


def handshake_refusal(key, endpoint, security, plain_refused=False, who="node"):
    """What a node (or `who`) says when the core at `endpoint` keeps refusing
    its handshake (`plain_refused`: a plain connection too, when asked as a host door)."""
    if security is not None and security.secured:
        return ("geckocore for key '%s' at %s refuses this %s's CURVE handshake: it %s %s (compare `gecko keygen "
                "--key %s --fingerprint` on both machines)"
                % (key, endpoint, who, "holds another secret than" if plain_refused else
                   "is not secured, or holds another secret than", _path(security), key))
    return ("geckocore for key '%s' at %s refuses this %s's handshake: it requires authentication; no secret "
            "found at %s" % (key, endpoint, who, _path(security)))
