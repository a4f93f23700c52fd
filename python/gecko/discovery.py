# SPDX-License-Identifier: Apache-2.0
"""The node side of discovery, protocol version 2 (C++: gecko/wire/
discovery.hpp, gecko/net/src/finder.cpp; docs/DISCOVERY.md): the messages,
addresses and host identity, and the Finder, which finds the geckocore of a
key by UDP multicast (queries with back-off, and announcements). The
session with the core that the Finder found (or GECKO_CORE names: a core,
or the host door on tcp 7651) is _discovery_client.DiscoveryClient.
"""

import os
import socket
import time

import msgpack

from ._core_security import core_security_mismatch
from ._datagram_seal import REASONS, SealedSearch, seal

VERSION = 2
DEFAULT_GROUP = "239.255.71.67"
DEFAULT_PORT = 7650
DOOR_PORT = 7651
MAX_DATAGRAM = 8192
MAX_ZMQ_MESSAGE = 4 * 1024 * 1024
M64 = 0xFFFFFFFFFFFFFFFF


def pack(t, **fields):
    d = {"v": VERSION, "t": t}
    d.update(fields)
    return msgpack.packb(d, use_bin_type=True)


def parse(data):
    """A discovery message (a dict with v == 2 and a str t), or None."""
    try:
        m = msgpack.unpackb(data, raw=False, strict_map_key=False, unicode_errors="replace")
    except Exception:
        return None
    if not isinstance(m, dict) or m.get("v") != VERSION or not isinstance(m.get("t"), str):
        return None
    return m


# ---- the messages a node sends (field order as C++ writes them) ----

def query_msg(key, node, host, pid, security=None):
    """Sealed (docs/SECURITY.md §6) when `security` (KeySecurity) holds the key's secret."""
    if security is not None and security.secured:
        return seal([("v", VERSION), ("t", "query"), ("key", key), ("node", node), ("host", host), ("pid", pid)],
                    security.mac_key, security.fingerprint)
    return pack("query", key=key, node=node, host=host, pid=pid)


def hello_msg(s, secret, key, node, host, hostid, pid, pidns, lease_ms, ids, locators, tool=False, fp=""):
    """`fp`: a secured node's fingerprint (docs/SECURITY.md §9), sent only when given."""
    fields = dict(s=s, secret=secret, key=key, node=node, host=host, hostid=hostid, pid=pid, pidns=pidns,
                  lease_ms=lease_ms, ids=list(ids), locators=list(locators), tool=tool)
    if fp:
        fields["fp"] = fp
    return pack("hello", **fields)


def add_msg(s, secret, reg):
    """`reg`: id kind topic type latched, and optionally `schema` (the
    schema's map, PROTOCOL.md 3.1), `wildcard` (a key-wide subscriber) with
    `filter` ({"topics": [...], "types": [...]}; empty arrays: any)."""
    extra = {}
    if reg.get("schema"):
        extra["schema"] = reg["schema"]
    if reg.get("wildcard"):
        extra["wildcard"] = True
        f = reg.get("filter") or {}
        extra["filter"] = {"topics": list(f.get("topics", ())), "types": list(f.get("types", ()))}
    return pack("add", s=s, secret=secret, id=reg["id"], kind=reg["kind"], topic=reg["topic"], type=reg["type"],
                latched=bool(reg.get("latched", False)), **extra)


def watch_directory_msg(s, secret):
    return pack("watch_directory", s=s, secret=secret)


def remove_msg(s, secret, ident):
    return pack("remove", s=s, secret=secret, id=ident)


def hb_msg(s, secret, ids):
    ids = list(ids)
    return pack("hb", s=s, secret=secret, n=len(ids), digest=entity_digest(ids))


def stats_msg(s, secret, stats, links=()):
    """`links`: (session, scheme) of each node this one receives from (DISCOVERY.md 2.7)."""
    return pack("stats", s=s, secret=secret, stats=stats, links=[{"s": peer, "via": via} for peer, via in links])


def bye_msg(s, secret):
    return pack("bye", s=s, secret=secret)


def _mix(x):
    x = (x + 0x9E3779B97F4A7C15) & M64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & M64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & M64
    return x ^ (x >> 31)


def entity_digest(ids):
    """The digest of a set of entity ids that heartbeats carry."""
    d = 0
    for i in ids:
        d ^= _mix(i)
    return d


def normalize_core_address(text):
    """"host" / "host:port" / "tcp://host:port" -> "tcp://host:port" (port 7651,
    the host door, if omitted); "" if malformed."""
    if not text:
        return ""
    if text.startswith("tcp://"):
        host, port = split_tcp(text)
        return text if host and port else ""
    if "://" in text:
        return ""
    if ":" not in text:
        return "tcp://%s:%d" % (text, DOOR_PORT)
    host, port = split_tcp("tcp://" + text)
    return "tcp://" + text if host and port else ""


def split_tcp(endpoint):
    """("host", port) of tcp://host:port, else ("", 0)."""
    if not endpoint.startswith("tcp://"):
        return "", 0
    rest = endpoint[6:]
    host, _, port = rest.rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        return "", 0
    return host, int(port)


def is_wildcard(host):
    return host in ("0.0.0.0", "*", "")


def is_loopback(host):
    try:
        return socket.inet_aton(socket.gethostbyname(host))[0] == 127
    except OSError:
        return False


def local_address_towards(address):
    try:
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            s.connect((address, 9))
            return s.getsockname()[0]
        finally:
            s.close()
    except OSError:
        return None


def read_link(path):
    try:
        return os.readlink(path)
    except OSError:
        return ""


def host_id():
    """boot id + "/" + mount namespace: equal means the same /tmp (ipc works)."""
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            boot = f.read().strip()
    except OSError:
        return ""
    mnt = read_link("/proc/self/ns/mnt")
    return boot + "/" + mnt if boot and mnt else ""


def parse_multicast(text):
    """(group, port) from "GROUP[:PORT]"; raises ValueError."""
    group, _, port = text.partition(":")
    try:
        packed = socket.inet_aton(group)
    except OSError:
        raise ValueError("'%s' is not an IPv4 multicast group" % group)
    if not 224 <= packed[0] <= 239 or group.count(".") != 3:
        raise ValueError("'%s' is not an IPv4 multicast group" % group)
    if port:
        if not port.isdigit() or not 0 < int(port) < 65536:
            raise ValueError("'%s' is not a port 1-65535" % port)
        return group, int(port)
    return group, DEFAULT_PORT


class Finder:
    """Multicast queries with back-off (at once, then 100, 200, 400, 800 ms,
    then every second) and the answers and announcements for our key. With
    the key's secret, queries are sealed and only authentic answers count
    (docs/SECURITY.md §6: self.search)."""

    def __init__(self, opts, log, security=None):
        self.opts = opts
        self.log = log
        self.security = security  # gecko.security.KeySecurity, or None: plain
        self.sender = None
        self.listener = None
        self.queries = 0
        self.answers = 0
        self.core_fingerprints = {}  # core endpoint -> the fingerprint its sealed datagram named
        self.error = ""
        self.security_error = ""  # a core whose security differs from ours was heard: said once, never joined
        # A secured node's search: refused datagrams decide only after find_timeout, so the real core's
        # answer wins over a forged plain one.
        self.search = (SealedSearch(opts.key, security, log, getattr(opts, "find_timeout", 1.5))
                       if security is not None and security.secured else None)
        self.backoff = 0.0
        self.next_query = 0.0
        if not opts.multicast_enabled:
            return
        try:
            iface = socket.inet_aton(opts.interface) if opts.interface else socket.inet_aton("0.0.0.0")
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.setblocking(False)
            s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_TTL, 1)
            s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_LOOP, 1)
            if opts.interface:
                s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, iface)
            s.bind(("0.0.0.0", 0))
            self.sender = s
        except OSError as e:
            self.error = "cannot open a multicast socket: %s" % e
            return
        try:  # hears announcements: speeds things up, queries work without it
            l = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            l.setblocking(False)
            l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if hasattr(socket, "SO_REUSEPORT"):
                l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
            l.bind((opts.group, opts.port))
            mreq = socket.inet_aton(opts.group) + iface
            try:
                l.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP, mreq)
            except OSError:
                l.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP,
                             socket.inet_aton(opts.group) + socket.inet_aton("127.0.0.1"))
            self.listener = l
        except OSError:
            self.listener = None

    def fds(self):
        return [s for s in (self.sender, self.listener) if s is not None]

    @property
    def refused(self):
        """Datagrams refused per reason (§6): all 0 for a node without the secret."""
        return dict(self.search.guard.refused) if self.search is not None else dict.fromkeys(REASONS, 0)

    def restart(self):
        self.backoff = 0.0
        self.next_query = 0.0
        if self.search is not None:
            self.search.restart()

    def found(self):
        """The node joined a core: datagrams refused from now on decide nothing."""
        if self.search is not None:
            self.search.found()

    def deciding(self):
        """Whether a refused datagram will be the error unless an authentic one comes first."""
        return self.search is not None and bool(self.search.why)

    def decide(self, now):
        """A secured node that heard only refused datagrams for find_timeout
        says why, for good (§6); returns when to look again (None: no need)."""
        if self.search is None or self.security_error:
            return None
        why = self.search.verdict(now)
        if why:
            self.log.error("discovery: %s", why)  # first: whoever sees the error finds it logged
            self.security_error = why
            return None
        return self.search.deadline()

    def tick(self, now):
        if self.sender is None:
            return now + 3600
        if now >= self.next_query:
            try:
                self.sender.sendto(query_msg(self.opts.key, self.opts.name, socket.gethostname(), os.getpid(),
                                             self.security), (self.opts.group, self.opts.port))
                self.error = ""
            except OSError as e:
                self.error = "cannot send (%s)" % e
            self.queries += 1
            self.backoff = min(max(self.backoff * 2, 0.1), 1.0)
            self.next_query = now + self.backoff
        return self.next_query

    def read(self, sock):
        """[(endpoint, instance)] of the answers for our key waiting on `sock`."""
        out = []
        for _ in range(64):
            try:
                data, (addr, sender_port) = sock.recvfrom(MAX_DATAGRAM + 1)
            except (BlockingIOError, InterruptedError):
                break
            except OSError:
                break
            if len(data) > MAX_DATAGRAM:
                continue
            m = parse(data)
            if m is None or m["t"] not in ("core", "announce") or m.get("key") != self.opts.key:
                continue
            endpoint, instance = m.get("endpoint"), m.get("instance")
            if not isinstance(endpoint, str) or type(instance) is not int:
                continue
            if self.search is not None:
                if not self.search.admit(data, m, "%s:%d" % (addr, sender_port), time.monotonic()):
                    continue
            else:
                why = core_security_mismatch(self.opts.key, m, self.security)
                if why:
                    # Say so once rather than fail handshakes without a word.
                    if not self.security_error:
                        self.log.error("discovery: %s", why)  # first: whoever sees the error finds it logged
                        self.security_error = why
                    continue
            host, port = split_tcp(endpoint)
            if not port:
                continue
            if is_wildcard(host):
                endpoint = "tcp://%s:%d" % (addr, port)
            # Its secret (during a rotation, maybe the one this node accepts): the server key to expect.
            self.core_fingerprints[endpoint] = m.get("fp") if isinstance(m.get("fp"), str) else ""
            self.answers += 1
            out.append((endpoint, instance))
        return out

    def describe(self):
        o = self.opts
        if o.multicast_enabled:
            s = "multicast %s:%d: " % (o.group, o.port)
            if self.error:
                s += "unusable (%s)" % self.error
            elif self.answers:
                s += "answered"
            else:
                s += "no answer to %d queries" % self.queries
        else:
            s = "multicast disabled"
        refused = self.search.guard.refused_total() if self.search is not None else 0
        if refused:  # heard, but nothing authentic: why there is no answer
            s += "; refused %d datagram%s (%s)" % (refused, "" if refused == 1 else "s",
                                                   self.search.guard.describe_refused())
        explicit = normalize_core_address(o.core)
        s += "; unicast " + (explicit if explicit else "not configured (GECKO_CORE unset)")
        return s + "; check that `geckocore --key %s` runs" % o.key
