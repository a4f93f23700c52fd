# SPDX-License-Identifier: Apache-2.0
"""The node's session with its geckocore (C++: gecko/src/discovery/
discovery_client.cpp; docs/DISCOVERY.md §2-3): finds the core with a
discovery.Finder, keeps a DEALER session to it (hello/welcome, heartbeats
with a digest of the entity ids, add/remove, stats, bye) and merges the
`peers` pushes of each watched entity.

Everything here runs on the node's reactor thread (DiscoveryClient.service);
other threads talk to it through the node, which posts to that thread.
"""

import os
import socket
import time

import zmq

from ._core_security import HANDSHAKE_EVENTS, count_handshake_failures, handshake_refusal, plain_core_refusal
from ._transport import secure
from .discovery import (MAX_ZMQ_MESSAGE, Finder, add_msg, bye_msg, entity_digest, hb_msg, hello_msg, host_id, pack,
                        is_loopback, is_wildcard, local_address_towards, normalize_core_address, parse, read_link,
                        remove_msg, split_tcp, stats_msg, watch_directory_msg)


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
        self.core_secret = ""  # the fingerprint whose server key the DEALER expects ("": the key's own)
        # A secured node given GECKO_CORE whose CURVE handshake the endpoint refused asks it as a host door,
        # which is plain (docs/SECURITY.md §5): over a plain DEALER, with a `list` question that names only the key.
        self.door_plain = False
        self.door_probed = False
        self.dealer_plain = False  # the DEALER is that plain one
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
        curve = self.security.curve if self.security is not None else None
        if curve is not None and self._plain_door_dealer():
            self.door_plain = False  # asked as a door, it refuses a plain connection too: a secured core
            self._fail_handshake(handshake_refusal(self.opts.key, self.core_endpoint, self.security, True))
            return
        if curve is not None and curve.accepted_fingerprint and self.core_secret != curve.accepted_fingerprint:
            # During a rotation the core may use the accepted secret: try its server key before giving up.
            self.log.info("discovery: geckocore at %s refuses this node's own secret; trying the one it accepts "
                          "(fingerprint %s)", self.core_endpoint, curve.accepted_fingerprint)
            via_door = self.via_door
            self.connect_to(self.core_endpoint, time.monotonic(), curve.accepted_fingerprint)
            self.via_door = via_door
            return
        if curve is not None and not self.door_probed and self.core_endpoint == self.explicit:
            self.door_probed = self.door_plain = True  # GECKO_CORE may name a host door: ask it as one, once
            self.log.debug("discovery: %s refuses this node's CURVE handshake; asking it as a host door",
                           self.core_endpoint)
            self.connect_to(self.explicit, time.monotonic())
            return
        self._fail_handshake(handshake_refusal(self.opts.key, self.core_endpoint, self.security))

    def _plain_door_dealer(self):
        return self.dealer is not None and self.dealer_plain

    def _fail_handshake(self, why):
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

    def connect_to(self, endpoint, now, core_fingerprint=None):
        """`core_fingerprint`: the secret whose server key to expect; None:
        the one the core's datagram named, if any ("" : the key's own)."""
        if core_fingerprint is None:
            core_fingerprint = self.finder.core_fingerprints.get(endpoint, "")
        plain_door = self.door_plain and endpoint == self.explicit
        if (self.dealer is not None and endpoint == self.core_endpoint and core_fingerprint == self.core_secret
                and plain_door == self.dealer_plain) or self.security_error:
            return
        self.via_door = False
        s = self.ctx.socket(zmq.DEALER)
        s.setsockopt(zmq.LINGER, 0)
        s.setsockopt(zmq.IMMEDIATE, 1)
        s.setsockopt(zmq.MAXMSGSIZE, MAX_ZMQ_MESSAGE)
        s.setsockopt(zmq.RECONNECT_IVL, 100)
        s.setsockopt(zmq.RECONNECT_IVL_MAX, 0)
        if self.security is not None and not plain_door:
            secure(s, self.security.curve, server=False, peer_fingerprint=core_fingerprint)
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
        self.core_secret = core_fingerprint
        self.dealer_plain = plain_door
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
        secured = self.security is not None and self.security.secured
        return self.send(hello_msg(self.session, self.secret, self.opts.key, self.opts.name, self.host, self.host_id,
                                   self.pid, self.pid_ns, int(self.opts.lease * 1000), sorted(self.registrations),
                                   [self.local_endpoint_for(l) for l in self.locators],
                                   fp=self.security.fingerprint if secured else ""))

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
            if self.dealer is not None and now >= self.next_hello and self._plain_door_dealer():
                self.send(pack("list", key=self.opts.key))  # the door redirects any question that names a key
                self.next_hello = now + 0.25
            elif self.dealer is not None and now >= self.next_hello:
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
        elif t == "list" and self._plain_door_dealer():  # asked as a door, it answered as a core: a plain one
            self._fail_handshake(plain_core_refusal(self.opts.key, self.core_endpoint, self.security))
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
