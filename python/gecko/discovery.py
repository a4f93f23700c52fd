# SPDX-License-Identifier: Apache-2.0
"""The node side of discovery, protocol version 2 (C++: gecko/src/discovery/
discovery_client.cpp, gecko/net/src/finder.cpp; docs/DISCOVERY.md).

Finds the geckocore of a key by UDP multicast (queries with back-off, and
announcements), or at an explicit address (GECKO_CORE: a core, or the host
door on tcp 7651 that redirects to the core of the key), keeps a DEALER
session to it (hello/welcome, heartbeats with a digest of the entity ids,
add/remove, stats, bye) and merges the `peers` pushes of each watched entity.

Everything here runs on the node's reactor thread (DiscoveryClient.service);
other threads talk to it through the node, which posts to that thread.
"""

import os
import socket
import time

import msgpack
import zmq

from ._core_security import (HANDSHAKE_EVENTS, core_security_mismatch, count_handshake_failures,
                             handshake_refusal)
from ._datagram_seal import REASONS, SealedSearch, seal
from ._transport import secure

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


def hello_msg(s, secret, key, node, host, hostid, pid, pidns, lease_ms, ids, locators, tool=False):
    return pack("hello", s=s, secret=secret, key=key, node=node, host=host, hostid=hostid, pid=pid, pidns=pidns,
                lease_ms=lease_ms, ids=list(ids), locators=list(locators), tool=tool)


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


class Watch:
    __slots__ = ("callback", "peers", "known", "delivered")

    def __init__(self, callback):
        self.callback = callback
        self.peers = {}  # id -> peer dict
        self.known = False
        self.delivered = False


def _peer_tuple(p):
    return (p.get("id"), tuple(p.get("locators") or ()), p.get("type"), p.get("session"), p.get("node"),
            p.get("host"), p.get("hostid"), p.get("pid"))


class DiscoveryClient:
    """See the module's docstring. Only the reactor thread calls it."""

    def __init__(self, opts, context, log, locators, session, secret, on_error=None, security=None):
        self.opts = opts
        self.security = security  # gecko.security.KeySecurity: with a secret, the DEALER is a CURVE client
        self.ctx = context
        self.log = log
        self.locators = locators
        self.session = session
        self.secret = secret
        self.on_error = on_error
        self.host = socket.gethostname()
        self.host_id = host_id()
        self.pid = os.getpid()
        self.pid_ns = read_link("/proc/self/ns/pid")
        self.registrations = {}  # id -> registration dict (id kind topic type latched)
        self.watches = {}        # id -> Watch
        self.on_directory = None              # callback(partial, channels, gone): the key's directory
        self.on_directory_unsupported = None  # callback(): the core keeps none (an older one)
        self.stats = None
        self.links = []
        self.finder = Finder(opts, log, security)
        self.explicit = normalize_core_address(opts.core)
        self.dealer = None
        self.monitor = None           # the DEALER's handshake events (check_handshakes)
        self.handshake_failures = 0
        self._handshake_error = ""
        self.core_endpoint = ""
        self.acked = False
        self.ever_acked = False
        self.last_hb = None  # what our last hb said: (entity count, digest)
        self.instance = 0
        self.core_lease = opts.lease
        self.hb_period = max(0.05, opts.lease / 3)
        now = time.monotonic()
        self.search_started = now
        self.connected_at = now
        self.last_rx = now
        self.next_hello = now
        self.next_hb = now
        self.next_stats = now
        self.warned = False
        self.via_door = False
        self.closed = False
        self.malformed = 0
        self.wrong_key = False
        self.other_cores = set()
        if not opts.multicast_enabled and self.explicit:
            self.connect_to(self.explicit, now)

    @property
    def security_error(self):
        """Why this node never joins the core it found ("" if nothing was said)."""
        return self._handshake_error or self.finder.security_error

    def check_handshakes(self):
        """A core reached without a datagram (GECKO_CORE) says nothing of its
        security: a handshake it keeps refusing is the sign (three failures
        in a row: count_handshake_failures). Then this node says why and
        stops trying (docs/SECURITY.md §5)."""
        if self.monitor is None or self.security_error:
            return
        self.handshake_failures = count_handshake_failures(self.monitor, self.handshake_failures)
        if self.handshake_failures < 3:
            return
        why = handshake_refusal(self.opts.key, self.core_endpoint, self.security)
        self.log.error("discovery: %s", why)  # first: whoever sees the error finds it logged
        self._handshake_error = why
        try:  # no more handshakes for the core to refuse (the socket is closed with the node)
            self.dealer.disconnect(self.core_endpoint)
        except zmq.ZMQError:
            pass

    # ---- sockets ----

    def sockets(self):
        """What the reactor polls for us: the DEALER and the UDP sockets."""
        out = list(self.finder.fds())
        if self.dealer is not None:
            out.append(self.dealer)
        return out

    def connect_to(self, endpoint, now):
        if (self.dealer is not None and endpoint == self.core_endpoint) or self.security_error:
            return
        self.via_door = False
        s = self.ctx.socket(zmq.DEALER)
        s.setsockopt(zmq.LINGER, 0)
        s.setsockopt(zmq.IMMEDIATE, 1)
        s.setsockopt(zmq.MAXMSGSIZE, MAX_ZMQ_MESSAGE)
        s.setsockopt(zmq.RECONNECT_IVL, 100)
        s.setsockopt(zmq.RECONNECT_IVL_MAX, 0)
        if self.security is not None:
            secure(s, self.security.curve, server=False)
        try:
            monitor = s.get_monitor_socket(HANDSHAKE_EVENTS)
        except zmq.ZMQError:
            monitor = None  # the handshake is then not read: a refusal shows as no answer
        try:
            s.connect(endpoint)
        except zmq.ZMQError as e:
            self._close_dealer(s, monitor)
            self.log.warning("discovery: cannot connect to %s: %s", endpoint, e)
            return
        if self.dealer is not None:
            self._close_dealer(self.dealer, self.monitor)
        self.dealer = s
        self.monitor = monitor
        self.handshake_failures = 0
        self.core_endpoint = endpoint
        self.acked = False
        self.connected_at = now
        self.next_hello = now
        self.log.debug("discovery: connecting to geckocore at %s", endpoint)

    @staticmethod
    def _close_dealer(dealer, monitor):
        if monitor is not None:
            try:
                dealer.disable_monitor()
            except zmq.ZMQError:
                pass
            monitor.close(0)
        dealer.close()

    def send(self, data):
        if self.dealer is None:
            return False
        try:
            self.dealer.send(data, zmq.NOBLOCK)
            return True
        except zmq.ZMQError:
            return False

    def local_endpoint_for(self, bound):
        host, port = split_tcp(bound)
        if not port or not is_wildcard(host):
            return bound
        local = None
        ch, _ = split_tcp(self.core_endpoint)
        if ch and not is_loopback(ch):
            try:
                local = local_address_towards(socket.gethostbyname(ch))
            except OSError:
                local = None
        if not local and self.opts.interface:
            local = self.opts.interface
        if not local:
            local = local_address_towards(self.opts.group)
        return "tcp://%s:%d" % (local or "127.0.0.1", port)

    # ---- messages out ----

    def send_hello(self):
        return self.send(hello_msg(self.session, self.secret, self.opts.key, self.opts.name, self.host, self.host_id,
                                   self.pid, self.pid_ns, int(self.opts.lease * 1000), sorted(self.registrations),
                                   [self.local_endpoint_for(l) for l in self.locators]))

    def send_add(self, r):
        self.send(add_msg(self.session, self.secret, r))

    def send_stats(self):
        if self.stats:
            self.send(stats_msg(self.session, self.secret, self.stats, self.links))

    # ---- the node's requests (reactor thread) ----

    def add(self, reg):
        self.registrations[reg["id"]] = reg
        if self.acked:
            self.send_add(reg)

    def remove(self, ident):
        self.registrations.pop(ident, None)
        self.watches.pop(ident, None)
        if self.acked:
            self.send(remove_msg(self.session, self.secret, ident))

    def watch(self, ident, callback):
        w = self.watches[ident] = Watch(callback)
        return w

    def watch_directory(self, on_update, on_unsupported):
        """Follows the key's channel directory (DISCOVERY.md 4.1), from now
        and after every welcome: on_update(partial, channels, gone) for each
        `directory` message (channels: entry dicts; gone: (service, name)),
        on_unsupported() when the core keeps none."""
        was = self.on_directory is not None
        self.on_directory = on_update
        self.on_directory_unsupported = on_unsupported
        if self.acked and not was:
            self.send(watch_directory_msg(self.session, self.secret))

    def report(self, stats, links=()):
        """The figures of the node's entities and its links in use, (session,
        scheme) each: sent with the next stats (every 3 s)."""
        self.stats = stats
        self.links = list(links)

    def bye(self):
        if self.closed:
            return
        self.closed = True
        if self.dealer is not None:
            # Also while registering again: the core may still hold our session.
            if self.ever_acked:
                self.dealer.setsockopt(zmq.LINGER, 200)
                self.send(bye_msg(self.session, self.secret))
            self._close_dealer(self.dealer, self.monitor)
            self.dealer = self.monitor = None
        for s in self.finder.fds():
            s.close()

    # ---- one turn ----

    def register_again(self, now):
        self.acked = False
        self.search_started = now
        self.warned = False
        self.next_hello = now

    def lose_core(self, now, why):
        if self.acked:
            self.log.warning("discovery: lost geckocore at %s (%s); keeping the known peers and searching again",
                             self.core_endpoint, why)
        if self.via_door and self.explicit:
            self.connect_to(self.explicit, now)
        self.acked = False
        self.instance = 0
        self.search_started = now
        self.warned = False
        self.next_hello = now
        self.finder.restart()

    def service(self, now):
        """Reads what arrived, sends what is due; returns when to run again."""
        if self.closed:
            return now + 3600
        self.read_dealer(now)
        for sock in self.finder.fds():
            for endpoint, instance in self.finder.read(sock):
                if endpoint != self.core_endpoint:
                    if not self.acked:
                        self.connect_to(endpoint, now)
                    elif instance != self.instance and instance not in self.other_cores:
                        self.other_cores.add(instance)
                        self.log.warning("discovery: a second geckocore for key '%s' answers at %s; this node "
                                         "uses the one at %s", self.opts.key, endpoint, self.core_endpoint)
                elif self.acked and instance != self.instance:
                    self.register_again(now)
        wake = now + 0.2
        if not self.acked and self.dealer is not None:
            self.check_handshakes()
        if not self.acked:
            # Datagrams decide only while no core is being tried (a GECKO_CORE one has its handshake reading).
            decision = self.finder.decide(now) if self.dealer is None else None
            if decision is not None:
                wake = min(wake, decision)
            if self.finder.sender is not None:
                wake = min(wake, self.finder.tick(now))
            fallback_due = not self.opts.multicast_enabled or now - self.search_started >= self.opts.find_timeout
            if self.dealer is None and fallback_due and self.explicit:
                self.connect_to(self.explicit, now)
            later = self.opts.multicast_enabled and bool(self.explicit)
            # No "still trying" while a refused core's datagram is about to be the error.
            if (not self.warned and not self.security_error and not self.finder.deciding()
                    and now - self.search_started >= self.opts.find_timeout * (2 if later else 1)):
                self.warned = True
                self.log.warning("discovery: no geckocore for key '%s' yet (%s); still trying", self.opts.key,
                                 self.finder.describe())
            if self.dealer is not None and self.via_door and now - self.connected_at >= self.opts.find_timeout:
                self.connect_to(self.explicit, now)
            if self.dealer is not None and now >= self.next_hello:
                self.send_hello()
                self.next_hello = now + (0.05 if now - self.connected_at < 1.0 else 0.25)
            wake = min(wake, self.next_hello)
        else:
            lease = max(self.opts.lease, self.core_lease)
            if now - self.last_rx > lease:
                self.lose_core(now, "no answer for %d ms" % (lease * 1000))
                wake = now
            else:
                if now >= self.next_hb:
                    ids = list(self.registrations)
                    self.last_hb = (len(ids), entity_digest(ids))
                    self.send(hb_msg(self.session, self.secret, ids))
                    self.next_hb = now + self.hb_period
                if now >= self.next_stats:
                    self.send_stats()
                    self.next_stats = now + 3.0
                wake = min(wake, self.next_hb, self.next_stats)
        self.read_dealer(now)
        return wake

    def read_dealer(self, now):
        for _ in range(256):
            if self.dealer is None:
                return
            try:
                frames = self.dealer.recv_multipart(zmq.NOBLOCK)
            except zmq.Again:
                return
            except zmq.ZMQError:
                return
            self.on_message(frames[-1], now)

    def on_message(self, data, now):
        m = parse(data)
        if m is None:
            self.malformed += 1
            return
        self.last_rx = now
        t = m["t"]
        inst = m.get("instance") if type(m.get("instance")) is int else 0
        if t == "welcome":
            restarted = self.ever_acked and inst != self.instance
            self.instance = inst
            lease = m.get("lease_ms")
            self.core_lease = lease / 1000.0 if type(lease) is int and lease > 0 else self.opts.lease
            self.hb_period = max(0.05, min(self.opts.lease, self.core_lease) / 3)
            for r in self.registrations.values():
                self.send_add(r)
            self.send_stats()
            if self.on_directory is not None:  # the whole directory again: this core may be a new one
                self.send(watch_directory_msg(self.session, self.secret))
            self.next_hb = now + self.hb_period
            self.next_stats = now + 3.0
            if restarted:
                self.log.info("discovery: geckocore restarted (instance %d); re-registered %d entities", inst,
                              len(self.registrations))
            elif self.warned:
                self.log.info("discovery: found geckocore for key '%s' at %s", self.opts.key, self.core_endpoint)
            self.ever_acked = True
            self.acked = True
            self.finder.found()
        elif t == "unknown":
            if self.acked:
                self.log.info("discovery: geckocore does not know this node (restart?); registering again")
            self.register_again(now)
        elif t == "hb":
            if self.acked and inst and inst != self.instance:
                self.register_again(now)
            elif self.acked:
                # The core answers in order: an entity added since our hb left
                # is not in its answer yet, and is not lost. So the answer must
                # match what we said, or what we have now.
                n, digest = m.get("n"), m.get("digest")
                ids = list(self.registrations)
                if (type(n) is int and type(digest) is int and (n, digest) != self.last_hb
                        and (n, digest) != (len(ids), entity_digest(ids))):
                    self.log.info("discovery: geckocore's view of this node differs from ours; registering again")
                    self.register_again(now)
        elif t == "peers":
            self.on_peers(m)
        elif t == "directory":
            self.on_directory_message(m)
        elif t == "redirect":
            self.on_redirect(m, now)
        elif t == "error":
            code = m.get("code") if isinstance(m.get("code"), str) else "error"
            text = m.get("message") if isinstance(m.get("message"), str) else "(no message)"
            ident = m.get("id") if type(m.get("id")) is int else 0
            if code == "no_core":
                if not self.warned:
                    self.log.warning("discovery: %s; waiting for it to start", text)
                return
            if code == "unknown_type" and "'watch_directory'" in text:
                if self.on_directory_unsupported is not None:  # a core older than the directory
                    self.on_directory_unsupported()
                return
            if code == "wrong_key":
                if not self.wrong_key:
                    self.log.error("discovery: %s", text)
                self.wrong_key = True
                return
            if self.on_error is not None and ident:
                self.on_error(ident, code, text)
            else:
                self.log.warning("discovery: geckocore reports %s: %s", code, text)

    def on_directory_message(self, m):
        if self.on_directory is None:
            return
        channels, gone = m.get("channels"), m.get("gone", [])
        if not isinstance(channels, list) or not isinstance(gone, list):
            self.malformed += 1
            return
        entries = [e for e in channels if isinstance(e, dict) and isinstance(e.get("name"), str) and e["name"]]
        names = [(g.get("service") is True, g["name"]) for g in gone
                 if isinstance(g, dict) and isinstance(g.get("name"), str)]
        try:
            self.on_directory(m.get("partial") is True, entries, names)
        except Exception as e:  # a watcher's bug must not stop discovery
            self.log.error("discovery: a directory callback raised: %r", e)

    def on_redirect(self, m, now):
        if not self.explicit or self.core_endpoint != self.explicit:
            return
        endpoint = m.get("endpoint")
        host, port = split_tcp(endpoint) if isinstance(endpoint, str) else ("", 0)
        door_host, _ = split_tcp(self.explicit)
        if not port:
            self.malformed += 1
            return
        if is_wildcard(host):
            endpoint = "tcp://%s:%d" % (door_host, port)
        elif is_loopback(host) and not is_loopback(door_host):
            self.log.warning("discovery: the core of key '%s' on that host listens on loopback only (%s)",
                             self.opts.key, endpoint)
            return
        self.connect_to(endpoint, now)
        self.via_door = True

    def on_peers(self, m):
        ident = m.get("id")
        lst = m.get("peers")
        if type(ident) is not int or not isinstance(lst, list):
            self.malformed += 1
            return
        if ident not in self.registrations:
            return
        w = self.watches.get(ident)
        if w is None:
            return
        fresh = {}
        for p in lst:
            if isinstance(p, dict) and type(p.get("id")) is int and p["id"] and isinstance(p.get("kind"), str):
                if not isinstance(p.get("locators"), list):
                    p["locators"] = []
                fresh[p["id"]] = p
        if m.get("partial") is True:
            merged = dict(w.peers)
            gone = m.get("gone")
            if isinstance(gone, list):
                for g in gone:
                    merged.pop(g, None)
        else:
            merged = {}
        merged.update(fresh)
        changed = not w.known or sorted(map(_peer_tuple, merged.values())) != sorted(
            map(_peer_tuple, w.peers.values()))
        w.peers = merged
        w.known = True
        if changed or not w.delivered:
            w.delivered = True
            try:
                w.callback(list(merged.values()))
            except Exception as e:  # a watcher's bug must not stop discovery
                self.log.error("discovery: a peers callback raised: %r", e)
