# SPDX-License-Identifier: Apache-2.0
"""The ZAP handler of the process's ZeroMQ context (docs/SECURITY.md §5), as
C++ gecko/net/src/zap_handler.cpp.

A CURVE server alone admits any client key, so every server socket of a
secured key sets a ZAP domain ("gecko/KEY") and ZMQ_ZAP_ENFORCE_DOMAIN, and
this handler (a thread answering on inproc://zeromq.zap.01) admits a client
only if its public key is the client key of that domain's key. It runs
while a node of a secured key lives (ZapAdmission); a process may hold
nodes of several keys: one entry per domain.
"""

import errno
import os
import threading
import time

import zmq
from zmq.utils import z85

from .. import runtime
from ..errors import Error

ENDPOINT = "inproc://zeromq.zap.01"
_LOG_PERIOD = 10.0  # s between two lines of one refusal reason (the first is logged at once)

_counts_lock = threading.Lock()
_admitted = 0
_refused = 0


def zap_counters():
    """(admitted, refused): the ZAP answers this process gave so far."""
    with _counts_lock:
        return _admitted, _refused


def _count(admitted):
    global _admitted, _refused
    with _counts_lock:
        if admitted:
            _admitted += 1
            return _admitted
        _refused += 1
        return _refused


class _LogLimiter:
    """The first line of each reason at once, then at most one per period."""

    def __init__(self, period=_LOG_PERIOD):
        self.period = period
        self._states = {}  # reason -> [when last logged, lines held back since]

    def admit(self, reason, now):
        """(log now?, note on the lines held back)."""
        state = self._states.get(reason)
        if state is None:
            self._states[reason] = [now, 0]
            return True, ""
        if now - state[0] < self.period:
            state[1] += 1
            return False, ""
        held, state[0], state[1] = state[1], now, 0
        return True, (" (%d more like this in the last %d s)" % (held, self.period)) if held else ""


class _Handler:
    """One context's handler: the domain table and the thread that answers."""

    def __init__(self, context):
        self._log = runtime.logger("zap")
        self._limiter = _LogLimiter()
        self._lock = threading.Lock()
        self._table = {}  # domain -> {admitted client key (32 raw bytes): admissions}
        self._socket = context.socket(zmq.REP)
        self._socket.setsockopt(zmq.LINGER, 0)
        # A handler that stopped a moment ago releases the name when libzmq's
        # reaper gets to its socket, not at close(): give it a bounded while.
        deadline = time.monotonic() + 5.0
        while True:
            try:
                self._socket.bind(ENDPOINT)
                break
            except zmq.ZMQError as e:
                if e.errno != errno.EADDRINUSE or time.monotonic() >= deadline:
                    self._socket.close(0)
                    raise Error("security", "cannot start the ZAP handler on %s: %s (another ZAP handler runs on "
                                            "this ZeroMQ context)" % (ENDPOINT, e))
                time.sleep(0.001)
        self._wake_r, self._wake_w = os.pipe()
        self._thread = threading.Thread(target=self._run, name="gecko-zap", daemon=True)
        self._thread.start()

    def add(self, domain, client_key):
        with self._lock:
            keys = self._table.setdefault(domain, {})
            keys[client_key] = keys.get(client_key, 0) + 1

    def remove(self, domain, client_key):
        """True when no domain is left (the handler may stop)."""
        with self._lock:
            keys = self._table.get(domain)
            if keys is not None and client_key in keys:
                keys[client_key] -= 1
                if keys[client_key] == 0:
                    del keys[client_key]
                if not keys:
                    del self._table[domain]
            return not self._table

    def stop(self):
        os.write(self._wake_w, b"x")
        self._thread.join(5.0)
        os.close(self._wake_r)
        os.close(self._wake_w)

    def _run(self):
        poller = zmq.Poller()
        poller.register(self._socket, zmq.POLLIN)
        poller.register(self._wake_r, zmq.POLLIN)
        try:
            while True:
                try:
                    ready = dict(poller.poll())
                except zmq.ZMQError as e:
                    if e.errno == errno.EINTR:
                        continue
                    return  # the context is terminating
                if self._wake_r in ready:
                    return
                if self._socket in ready:
                    self._answer_one()
        finally:
            self._socket.close(0)

    def _answer_one(self):
        # RFC 27: version, request id, domain, address, routing id, mechanism,
        # credentials (CURVE: the client's 32-byte public key).
        try:
            request = self._socket.recv_multipart(zmq.NOBLOCK)
        except zmq.ZMQError:
            return
        part = lambda i: request[i] if len(request) > i else b""  # noqa: E731
        text = lambda i: part(i).decode("utf-8", "replace")  # noqa: E731
        domain, address, mechanism = text(2), text(3), text(5)
        code, reason = b"400", ""
        if len(request) < 7 or request[0] != b"1.0":
            code, reason = b"500", "malformed ZAP request"
        elif mechanism != "CURVE":
            reason = "not a CURVE client (mechanism %s)" % mechanism
        else:
            with self._lock:
                keys = self._table.get(domain)
                if keys is None:
                    reason = "no key of this process admits domain '%s'" % domain
                elif part(6) not in keys:
                    reason = "its key is not the client key of '%s' (it does not hold that key's secret)" % domain
                else:
                    code = b"200"
        admitted = code == b"200"
        n = _count(admitted)
        if not admitted:
            log_now, note = self._limiter.admit(reason, time.monotonic())
            if log_now:
                self._log.warning("refused a connection from %s: %s (%d refused so far)%s",
                                  address or "an unknown address", reason, n, note)
        try:
            self._socket.send_multipart([b"1.0", part(1), code, b"OK" if admitted else reason.encode(),
                                         part(2) if admitted else b"", b""])
        except zmq.ZMQError:
            pass  # the context is terminating: nobody waits for the answer


_handlers_lock = threading.Lock()  # also held while a handler starts or stops (the inproc name)
_handlers = {}  # id(context) -> _Handler


class ZapAdmission:
    """Admits the client key of `curve` (security.CurveKeys; during a
    rotation, the accepted secret's too) to its domain on `context` while it
    lives; the first admission starts the context's handler, the last one's
    release() stops it."""

    def __init__(self, context, curve):
        self._context = context
        self._domain = curve.zap_domain
        self._client_keys = [z85.decode(k) for k in (curve.client_public, curve.accepted_client_public) if k]
        with _handlers_lock:
            h = _handlers.get(id(context))
            if h is None:
                h = _handlers[id(context)] = _Handler(context)
            for k in self._client_keys:
                h.add(self._domain, k)
        self._released = False

    def release(self):
        with _handlers_lock:
            if self._released:
                return
            self._released = True
            h = _handlers.get(id(self._context))
            if h is not None and [h.remove(self._domain, k) for k in self._client_keys][-1]:
                del _handlers[id(self._context)]
                h.stop()
