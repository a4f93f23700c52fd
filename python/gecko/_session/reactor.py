# SPDX-License-Identifier: Apache-2.0
"""The node's one internal thread, as C++ gecko/src/node/reactor.cpp: it
runs discovery, takes in the out-port's subscription events, reads the
in-port while no application thread does (so queues stay fresh), ticks the
publishers and links, and reports figures to the core. It never runs a
callback: those run in spin(), spin_once() or spin_in_background()."""

import collections
import os
import threading
import time

import zmq  # the discovery client's sockets are ZeroMQ's

from .. import runtime

_TICK = 0.1    # s between publisher and link ticks
_STATS = 3.0   # s between reports to the core


class Reactor:
    def __init__(self, session, name):
        self._session = session
        self._posts = collections.deque()
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)
        runtime._register_wake(self._wake_w)
        self._thread = threading.Thread(target=self._loop, name="gecko-reactor-" + name, daemon=True)

    def start(self):
        self._thread.start()

    def post(self, fn):
        """Runs fn() on the reactor thread, soon."""
        self._posts.append(fn)
        self.wake()

    def post_last(self, fn):
        """Runs fn() on the reactor thread before it ends (the session is closing)."""
        self._posts.append(fn)

    def wake(self):
        try:
            os.write(self._wake_w, b"x")
        except OSError:
            pass

    def _run_posts(self):
        while self._posts:
            fn = self._posts.popleft()
            try:
                fn()
            except Exception as e:
                self._session.log.error("internal: %r", e)

    def _loop(self):
        s = self._session
        poller = zmq.Poller()
        poller.register(self._wake_r, zmq.POLLIN)
        registered = set()
        next_tick = 0.0
        next_stats = time.monotonic() + _STATS
        last_totals = {}
        while True:
            self._run_posts()
            if s.closed:
                self._run_posts()  # what close() posted (the bye) before it set closed
                break
            now = time.monotonic()
            wake = now + 0.05
            d = s._discovery
            if d is not None:
                want = set(d.sockets())
                for sock in registered - want:
                    try:
                        poller.unregister(sock)
                    except KeyError:
                        pass
                for sock in want - registered:
                    poller.register(sock, zmq.POLLIN)
                registered = want
                try:
                    wake = min(wake, d.service(now))
                except Exception as e:
                    s.log.error("discovery: %r", e)
            s._outbound.drain_events()
            s._inbound.drain_if_idle(now)
            if not runtime.ok():
                s._inbound.wake_all()
            if now >= next_tick:
                next_tick = now + _TICK
                s._links.prune(now)
                for p in s._outbound.senders():
                    p._tick()
                for e in list(s._ticking):
                    e._tick()
            if d is not None and now >= next_stats:
                next_stats = now + _STATS
                d.report(s._stats_report(last_totals, _STATS), s._links_report())
            timeout = max(0.0, min(wake, next_tick) - time.monotonic())
            try:
                events = poller.poll(max(1, int(timeout * 1000)))
            except zmq.ZMQError:
                events = []
            for sock, _ in events:
                if sock == self._wake_r:
                    try:
                        os.read(self._wake_r, 4096)
                    except OSError:
                        pass

    def close(self):
        """Ends the thread (the session set `closed` first) and frees its pipe."""
        self.wake()
        if self._thread is not threading.current_thread():
            self._thread.join(2)
        runtime._unregister_wake(self._wake_w)
        for fd in (self._wake_r, self._wake_w):
            try:
                os.close(fd)
            except OSError:
                pass
