# SPDX-License-Identifier: Apache-2.0
"""Sealed discovery datagrams (docs/SECURITY.md §6), as C++
gecko/net/datagram_seal.hpp: in a secured key every `query`, `core` and
`announce` ends with ts, nonce, fp and a MAC, so a forged or replayed one
cannot send a node to another endpoint.

    data = seal([("v", 2), ("t", "query"), ...], security.mac_key, security.fingerprint)
    guard = DatagramGuard(security.mac_key, security.fingerprint, log)
    if guard.check(data, parse(data), "10.0.0.5:7650").authentic: ...

A reader never re-encodes: the MAC is over the bytes before the `mac` key.
"""

import collections
import hashlib
import hmac
import os
import time

import msgpack

from ._core_security import core_secret_mismatch, core_security_mismatch

# The str "mac" and the header of a 32-byte bin: what a sealed datagram ends
# with, before the MAC itself.
MAC_MARKER = b"\xa3mac\xc4\x20"
MAC_SIZE = 32
SEALED_FIELDS = 4      # ts, nonce, fp, mac
WINDOW_MS = 30000      # how far `ts` may be from this host's clock
REPLAY_MS = 60000      # how long an accepted nonce is remembered
MAX_NONCES = 4096      # a bound on that memory, whatever the rate of datagrams

REASONS = ("unsigned", "other secret", "bad mac", "stale", "replayed")


def wall_clock_ms():
    """Milliseconds since the Unix epoch: what `ts` holds."""
    return time.time_ns() // 1000000


def printable(text, limit=64):
    """`text` as a log or an error may show it: a datagram's field is shown, never trusted."""
    return "".join(c if "\x20" < c < "\x7f" else "?" for c in text[:limit])


def mac_of(signed, mac_key):
    return hashlib.blake2b(signed, digest_size=MAC_SIZE, key=mac_key).digest()


def _map_header(n):
    return bytes([0x80 | n]) if n < 16 else b"\xde" + n.to_bytes(2, "big")


def seal(fields, mac_key, fingerprint, ts_ms=None, nonce=None):
    """The datagram of `fields` ((name, value) pairs in order, `v` and `t`
    first) sealed with `mac_key` (subkey 3): its fields, then ts, nonce, fp
    and mac. `ts_ms` and `nonce` are given by test vectors only."""
    fields = list(fields.items()) if isinstance(fields, dict) else list(fields)
    if ts_ms is None:
        ts_ms = wall_clock_ms()
    if nonce is None:
        nonce = int.from_bytes(os.urandom(8), "little")
    fields += [("ts", ts_ms), ("nonce", nonce), ("fp", fingerprint)]
    # The header counts `mac` too: the MAC covers it, so it is written first.
    signed = _map_header(len(fields) + 1) + b"".join(
        msgpack.packb(k, use_bin_type=True) + msgpack.packb(v, use_bin_type=True) for k, v in fields)
    return signed + MAC_MARKER + mac_of(signed, mac_key)


class Verdict(collections.namedtuple("Verdict", "refused fingerprint skew_ms")):
    """refused: a reason of REASONS, or "" when authentic; fingerprint: the
    datagram's `fp` ("" if none); skew_ms: its `ts` minus this host's clock."""

    @property
    def authentic(self):
        return not self.refused


class DatagramGuard:
    """Checks the sealed datagrams one reader acts on, remembering the nonces
    it accepted; counts refusals per reason and logs the first of each."""

    def __init__(self, mac_key, fingerprint, log=None, accepted_mac_key=None, accepted_fingerprint=""):
        self.mac_key = mac_key
        self.fingerprint = fingerprint
        # During a rotation (docs/SECURITY.md §9) the secret accepted beside it checks too, never seals.
        self.accepted_mac_key = accepted_mac_key
        self.accepted_fingerprint = accepted_fingerprint
        self.log = log
        self.refused = dict.fromkeys(REASONS, 0)
        self._accepted = {}  # nonce -> when (ms), oldest first (dicts keep insertion order)

    def check(self, data, message, sender="?", now_ms=None):
        """The Verdict on the datagram `data` (`message`: its parse, a dict)
        from `sender`, at `now_ms` (wall_clock_ms()), for the first reason
        that refuses it, in the order of §6's table."""
        now_ms = wall_clock_ms() if now_ms is None else now_ms
        fp = message.get("fp") if isinstance(message.get("fp"), str) else ""
        ts, nonce = message.get("ts"), message.get("nonce")
        skew = ts - now_ms if type(ts) is int else None
        mac = message.get("mac")
        if (len(data) < len(MAC_MARKER) + MAC_SIZE or data[-MAC_SIZE - len(MAC_MARKER):-MAC_SIZE] != MAC_MARKER
                or not isinstance(mac, bytes) or len(mac) != MAC_SIZE):
            return self._refuse("unsigned", fp, skew, message, sender)
        own = fp == self.fingerprint
        if not own and not (self.accepted_fingerprint and fp == self.accepted_fingerprint):
            return self._refuse("other secret", fp, skew, message, sender)
        key = self.mac_key if own else self.accepted_mac_key
        if not hmac.compare_digest(mac_of(data[:-MAC_SIZE - len(MAC_MARKER)], key), data[-MAC_SIZE:]):
            return self._refuse("bad mac", fp, skew, message, sender)
        if skew is None or type(nonce) is not int:  # authentic but incomplete: a sender that does not follow §6
            return self._refuse("unsigned", fp, skew, message, sender)
        if abs(skew) > WINDOW_MS:
            return self._refuse("stale", fp, skew, message, sender)
        self._forget(now_ms)
        if nonce in self._accepted:
            return self._refuse("replayed", fp, skew, message, sender)
        if len(self._accepted) >= MAX_NONCES:
            del self._accepted[next(iter(self._accepted))]
        self._accepted[nonce] = now_ms
        return Verdict("", fp, skew)

    def _forget(self, now_ms):
        while self._accepted:
            oldest = next(iter(self._accepted))
            if now_ms - self._accepted[oldest] <= REPLAY_MS:
                break
            del self._accepted[oldest]

    def _refuse(self, reason, fp, skew, message, sender):
        self.refused[reason] += 1
        if self.refused[reason] == 1 and self.log is not None:
            self.log.warning("discovery: refused a datagram (`%s`) from %s: %s (the first %s one: the next are only "
                             "counted)", printable(message.get("t")), sender, self._why(reason, fp, skew), reason)
        return Verdict(reason, fp, skew if skew is not None else 0)

    def _why(self, reason, fp, skew):
        if reason == "unsigned":
            return "it is not sealed (a program without the key's secret, or a forgery), and this key is secured"
        if reason == "other secret":
            return "it is sealed with another secret (fingerprint %s; this program's is %s)" % (
                printable(fp) or "none", self.fingerprint)
        if reason == "bad mac":
            return "its MAC is wrong (forged, or damaged)"
        if reason == "stale":
            return "its time is %.1f s %s this host's clock (more than %d s): synchronise the clocks of the " \
                   "key's machines (chrony, NTP)" % (abs(skew) / 1000.0, "ahead of" if skew > 0 else "behind",
                                                     WINDOW_MS // 1000)
        return "its nonce was accepted in the last %d s (a replay, or a network that duplicates datagrams)" % (
            REPLAY_MS // 1000)

    def refused_total(self):
        return sum(self.refused.values())

    def describe_refused(self):
        """"unsigned 3, stale 1" ("" when nothing was refused)."""
        return ", ".join("%s %d" % (r, n) for r, n in self.refused.items() if n)


class SealedSearch:
    """A secured program's search for its core (§6): only authentic `core` and
    `announce` datagrams count. When none came `find_timeout` s after the
    first refused one, a plain core's datagram or one sealed with another
    secret is the reason to stop for good; the other refusals are only
    counted, and an authentic answer before that wins over a forged one."""

    def __init__(self, key, security, log, find_timeout):
        self.key = key
        self.security = security
        self.find_timeout = find_timeout
        self.guard = DatagramGuard(security.mac_key, security.fingerprint, log, security.accepted_mac_key,
                                   security.accepted_fingerprint)
        self.searching = True
        self.first_refused = None  # monotonic time of the first refusal since the last authentic answer
        self.why = ""              # what this program will say at the deadline ("": nothing to say)

    def admit(self, data, message, sender, now):
        """Whether the datagram `data` (parsed: `message`) is authentic."""
        verdict = self.guard.check(data, message, sender)
        if verdict.authentic:
            self.first_refused, self.why = None, ""
            return True
        if not self.searching:
            return False
        if self.first_refused is None:
            self.first_refused = now
        if self.why:
            return False
        if verdict.refused == "unsigned" and "mac" not in message and message.get("secured") is not True:
            self.why = core_security_mismatch(self.key, message, self.security)
        elif verdict.refused == "other secret":
            self.why = core_secret_mismatch(self.key, message, printable(verdict.fingerprint), self.security)
        return False

    def deadline(self):
        """When the decision falls (monotonic), or None."""
        return self.first_refused + self.find_timeout if self.first_refused is not None else None

    def verdict(self, now):
        """Why to stop searching, once due ("" until then, or if nothing decides)."""
        due = self.deadline()
        return self.why if due is not None and now >= due else ""

    def found(self):
        """The program joined a core: refusals no longer decide anything."""
        self.searching, self.first_refused, self.why = False, None, ""

    def restart(self):
        self.searching, self.first_refused, self.why = True, None, ""
