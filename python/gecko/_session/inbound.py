# SPDX-License-Identifier: Apache-2.0
"""The node's in-port, as C++ gecko/src/node/inbound.cpp: every link it
receives through (one port per transport, gecko._transport), the routes
from a frame's channel to the sinks that want it, and the wait.

A thread that waits for a message (receive(), spin(), call()) reads the
in-port itself when nobody else does (the leader, holding `io`), so a
message reaches it without a hand-off between threads; other waiting
threads (followers) sleep until the leader says queues changed. Work on
the ports from a thread that does not hold `io` (connect, subscribe) is
queued for the holder (run_io)."""

import collections
import itertools
import os
import threading
import time

from .. import _transport, runtime, wire
from .sink import LITTLE_ENDIAN, joined_words

_BATCH_SIZE = 4097  # frames taken from a port per batch, at most
_HEADER_SIZE = wire.HEADER_SIZE
_startswith = bytes.startswith
_repeat = itertools.repeat
_monotonic = time.monotonic


def _interests(sink, announcement):
    """(channel, wildcard, announcement) a port subscribes for `sink`, in
    order (PROTOCOL.md 4.1): its directed channel if it has one (a
    publisher that hears the announcement may replay a latched value there
    at once), then its channel, announced."""
    out = [(sink.directed, False, b"")] if sink.directed else []
    out.append((sink.channel, sink.wildcard, announcement or b""))
    return out


class Inbound:
    def __init__(self, options, log, notice, curve=None, segment_key=None):
        self._ports = _transport.InPorts(options, log, curve, segment_key)
        self.ports = self._ports.ports
        self._notice = notice  # Notices.say
        self._spin = options.spin * 1e-6  # s a leader busy-polls before it sleeps (ports that can)
        self.io = threading.Lock()
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)
        runtime._register_wake(self._wake_w)
        self._poller = _transport.new_poller([p.handle for p in self.ports] + [self._wake_r])
        self._port_of = {p.handle: p for p in self.ports}
        self._arm = [p.prepare_wait for p in self.ports if hasattr(p, "prepare_wait")]
        self.routes = {}        # channel (its 8 bytes, as a frame starts) -> [sink owner]
        self.wildcard_routes = []
        self.connections = {}   # locator -> users
        self._fallbacks = {}    # locator -> (the locators after it, its link)
        self._pending = collections.deque()  # operations on the ports, for the io holder
        self._followers = threading.Condition(threading.Lock())
        self._generation = 0
        self._n_followers = 0   # threads waiting on _followers (under its lock)
        self.app_drain = 0.0    # when an application thread last read the in-port (monotonic)
        self.unrouted = 0
        self.closed = False

    def port(self, scheme):
        """The port serving `scheme`, or None (for its counters: info() needs no `io`)."""
        return self._ports.port_of_scheme(scheme)

    # ---- work on the ports ----

    def run_io(self, op):
        """Runs `op` on the ports now if free, else queues it for the io holder."""
        if self.io.acquire(blocking=False):
            try:
                self._apply_pending()
                op()
            finally:
                self.io.release()
        else:
            self._pending.append(op)
            try:
                os.write(self._wake_w, b"x")
            except OSError:
                pass

    def _apply_pending(self):
        while self._pending and self.ports:
            try:
                op = self._pending.popleft()
            except IndexError:
                return
            op()

    def connect(self, locator, fallbacks=(), link=None):
        """Links to `locator`; if it does not open, to the first of
        `fallbacks` that does (`link`, the peer's entry in Links, then says which)."""
        self.run_io(lambda: self._connect_now(locator, fallbacks, link))

    def _connect_now(self, locator, fallbacks=(), link=None):
        """io held."""
        if not self.ports:
            return
        n = self.connections.get(locator, 0)
        if n:
            self.connections[locator] = n + 1
            return
        port, why = self._ports.port_for(locator)
        if port is not None:
            fp = link.get("fp", "") if link is not None else ""
            why = port.connect(locator, fp)
        if not why:
            self.connections[locator] = 1
            self._fallbacks[locator] = (tuple(fallbacks), link)
            return
        nxt = fallbacks[0] if fallbacks else ""
        if nxt:
            self._notice("warning", "cannot use " + _transport.scheme_of(locator),
                         "cannot use %s (%s); using %s instead" % (locator, why, nxt))
            if link is not None and link.get("locator") == locator:
                link["locator"] = nxt
            self._connect_now(nxt, fallbacks[1:], link)
        else:
            self._notice("warning", "unusable locator", "cannot connect to another node at '%s': %s; its messages "
                                                        "will not reach this node" % (locator, why))

    def disconnect(self, locator):
        def op():
            if self.connections.pop(locator, None) and self.ports:
                self._fallbacks.pop(locator, None)
                port, _ = self._ports.port_for(locator)
                if port is not None:
                    port.disconnect(locator)
        self.run_io(op)

    def _links_dropped(self, port):
        """io held: `port` dropped links (publisher gone, segment corrupt):
        forget them, and link through the next locator while the peer is
        still wanted."""
        for locator in port.take_dropped():
            self.connections.pop(locator, None)
            fallbacks, link = self._fallbacks.pop(locator, ((), None))
            if fallbacks and link is not None and link.get("locator") == locator and link.get("users"):
                link["locator"] = fallbacks[0]
                self._connect_now(fallbacks[0], fallbacks[1:], link)

    def add_sink(self, owner, announcement):
        """Routes the frames of `owner.sink`'s channels to it and subscribes them on every port."""
        sink = owner.sink
        if sink.wildcard:
            self.wildcard_routes.append(owner)
        else:
            for c in (sink.channel, sink.directed):
                if c:
                    self.routes.setdefault(wire.channel_bytes(c), []).append(owner)
        interests = _interests(sink, announcement)
        self.run_io(lambda: self._tell_ports("subscribe", interests))

    def remove_sink(self, owner, announcement):
        sink = owner.sink
        for c in (sink.channel, sink.directed):
            if not c:
                continue
            k = wire.channel_bytes(c)
            lst = self.routes.get(k)
            if lst and owner in lst:
                lst.remove(owner)
                if not lst:
                    del self.routes[k]
        if owner in self.wildcard_routes:
            self.wildcard_routes.remove(owner)
        interests = _interests(sink, announcement)[::-1]  # the announcement withdrawn first
        self.run_io(lambda: self._tell_ports("unsubscribe", interests))

    def _tell_ports(self, what, interests):
        """io held: port.subscribe or port.unsubscribe of each interest, on every port."""
        for port in self.ports:
            for i in interests:
                getattr(port, what)(*i)

    # ---- the drain ----

    def _drain(self):
        """io held: moves every frame waiting on the ports into their sinks.
        True if any came.

        One batch, one clock read, then the frames grouped by channel and
        handed to each sink at once (one lock per sink and batch)."""
        frames = None
        for port in self.ports:
            got = port.take(_BATCH_SIZE)
            if port.dropped_locators:
                self._links_dropped(port)
            if got:
                frames = got if not frames else frames + got
        if not frames:
            return False
        now = time.time_ns()
        routes = self.routes
        first = frames[0][:8]
        words = None
        if len(frames) >= 8 and len(frames[0]) >= _HEADER_SIZE and not len(frames[0]) & 7 and LITTLE_ENDIAN:
            # a stream of frames of one size: one channel if word 0 is the same in all (see Sink._offer_run)
            words = joined_words(frames)
            w = len(frames[0]) >> 3
            if words is not None and words[0:-w:w] != words[w::w]:
                words = None
        if words is not None or (len(first) == 8 and (len(frames) == 1 or all(map(_startswith, frames,
                                                                                   _repeat(first))))):
            groups = ((first, frames),)
        else:
            by = {}
            for f in frames:
                k = f[:8]
                g = by.get(k)
                if g is None:
                    by[k] = [f]
                else:
                    g.append(f)
            groups = by.items()
        wildcards = self.wildcard_routes
        for k, group in groups:
            owners = routes.get(k) if len(k) == 8 else None
            routed = False
            if owners:
                for o in owners:
                    o.sink.offer_batch(group, now, words)
                routed = True
            if wildcards and len(k) == 8:
                kp = k[:4]
                for o in wildcards:
                    if o.sink.key_bytes == kp:
                        o.sink.offer_batch(group, now, words)
                        routed = True
            if not routed:
                self.unrouted += len(group)
        return True

    def delivered(self):
        """Tells waiting followers that queues changed (or the leader left).
        Without followers, an increment: the common single-thread case pays
        no Condition. A follower counts itself in before it reads the
        generation, so either it sees this increment or this sees it."""
        self._generation += 1
        if self._n_followers:
            with self._followers:
                self._followers.notify_all()

    def drain_now(self):
        """An application thread reads the ports now, unless another holds them."""
        if self.io.acquire(blocking=False):
            try:
                self._apply_pending()
                if self._drain():
                    self.delivered()
                self.app_drain = time.monotonic()
            finally:
                self.io.release()

    def drain_if_idle(self, now):
        """The reactor reads the ports when no application thread did for 10 ms."""
        if now - self.app_drain > 0.01 and self.io.acquire(blocking=False):
            try:
                self._apply_pending()
                if self._drain():
                    self.delivered()
            finally:
                self.io.release()

    # ---- the wait ----

    def wait(self, ready, deadline, spin=None):
        """Waits until ready() (cheap, thread-safe), `deadline` (monotonic; None:
        none), close or shutdown. Leads the in-port when nobody else does;
        `spin` (s): busy-polls shared memory that long first (None: the node's)."""
        while True:
            if ready():
                return True
            if self.closed or not runtime.ok():
                return False
            now = time.monotonic()
            if deadline is not None and now >= deadline:
                return False
            if self.io.acquire(blocking=False):
                try:
                    got = self._lead(ready, deadline, spin)
                finally:
                    self.io.release()
                self.delivered()
                if got:
                    return True
                continue
            with self._followers:
                self._n_followers += 1
                try:
                    seen = self._generation
                    left = 0.05 if deadline is None else min(0.05, deadline - now)
                    self._followers.wait_for(lambda: self._generation != seen or self.closed, max(left, 0))
                finally:
                    self._n_followers -= 1

    def _lead(self, ready, deadline, spin=None):
        """io held: waits on the ports (and the wake pipe) and drains them
        until ready(), the deadline, close or shutdown. It waits first: a
        poll returns at once when a frame is already there, so asking
        beforehand would only add a system call to every wait."""
        poll = self._poller.poll
        port_of = self._port_of
        arming = self._arm
        wake = self._wake_r
        if spin is None:
            spin = self._spin
        while True:
            self._apply_pending()
            if deadline is None:
                ms = 100  # wakes now and then for ok() and close
            else:
                left = deadline - _monotonic()
                ms = max(1, int(min(0.1, left) * 1000 + 0.999)) if left > 0 else 0
            if ms:
                for arm in arming:
                    if not arm(spin):  # shm: arms the links (publishers ring), looks once more
                        ms = 0
                        break
            for handle, _ in poll(ms):
                port = port_of.get(handle)
                if port is not None:
                    port.fired()
                else:
                    try:
                        os.read(wake, 4096)
                    except OSError:
                        pass
            if self._drain():
                self.delivered()
            self.app_drain = _monotonic()
            if ready():
                return True
            if self.closed or not runtime.ok():
                return False
            if deadline is not None and _monotonic() >= deadline:
                return False

    def wake_all(self):
        """Wakes the leader's poll and every follower (close, shutdown)."""
        try:
            os.write(self._wake_w, b"x")
        except OSError:
            pass
        self.delivered()

    def close(self):
        """After wake_all() and the threads that wait have gone."""
        runtime._unregister_wake(self._wake_w)
        with self.io:
            for port in self.ports:
                port.close()
            self.ports = []
        for fd in (self._wake_r, self._wake_w):
            try:
                os.close(fd)
            except OSError:
                pass
