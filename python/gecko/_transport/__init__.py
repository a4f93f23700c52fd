# SPDX-License-Identifier: Apache-2.0
"""The transport seam of a Python node, as C++ gecko/src/transport/
(transport.hpp, registry.hpp): the one place that names locator schemes.

A node sends through one out-port (ZeroMQ: zmq.py) and receives through one
in-port per transport: ZeroMQ (inproc, ipc, tcp: zmq.py) and, where this
process can read it, shared memory (shm: shm.py). Which of a peer's
locators a node links through is chosen here (usable_locators), and a
locator goes to the in-port serving its scheme (InPorts.port_for). Nothing
above this package knows what a ZeroMQ socket or a shared-memory ring is.

An in-port (not thread-safe: the node calls it holding its in-port lock):

    schemes                  the locator schemes it serves
    connect(locator)         "" once linked, else why not (a peer's locator is no exception)
    disconnect(locator)
    subscribe(channel, wildcard, announcement), unsubscribe(...)
    take(limit)              the frames waiting (bytes), up to `limit`; never blocks
    handle                   what to poll for reading (a ZeroMQ socket or a file descriptor)
    fired()                  the poll said `handle` is readable
    prepare_wait(spin)       only where a poll of `handle` alone would miss frames (shm):
                             before sleeping on it, busy-polls up to `spin` s, arms the
                             port; False if frames may be waiting already
    dropped_locators         links the port dropped by itself (its peer gone, corrupt),
    take_dropped()           taken by the node to link through the peer's next locator
    info()                   its counters, or None
    close()
"""

from . import shm, zmq
from .zap import ZapAdmission, zap_counters
from .zmq import ZmqOutPort, context, new_poller, secure, speedups

__all__ = ["InPorts", "ZapAdmission", "context", "new_poller", "open_out_port", "scheme_of", "secure", "speedups",
           "usable_locators", "zap_counters"]


def open_out_port(options, session, curve=None):
    """The node's out-port (ZeroMQ): locators, send(frame), events(), close().
    `curve` (security.CurveKeys, or None): its CURVE server keys."""
    return ZmqOutPort(options, session, curve)


def scheme_of(locator):
    """"tcp" for "tcp://host:port"; "" without a scheme."""
    scheme, sep, _ = locator.partition("://")
    return scheme if sep else ""


class InPorts:
    """Every in-port of a node, and which serves a locator."""

    def __init__(self, options, log, curve=None, segment_key=None):
        self.ports = [zmq.ZmqInPort(options, curve)]
        self._unavailable = {}  # scheme -> why this node has no port for it
        port, why = shm.open_port(options, log, segment_key)
        if port is not None:
            self.ports.append(port)
        else:
            self._unavailable.update((s, why) for s in shm.ShmPort.schemes)
        self._by_scheme = {s: p for p in self.ports for s in p.schemes}

    def port_for(self, locator):
        """(the port serving `locator`, "") or (None, why none does)."""
        scheme = scheme_of(locator)
        port = self._by_scheme.get(scheme)
        if port is not None:
            return port, ""
        return None, self._unavailable.get(scheme) or "no transport for '%s' locators (this node has %s)" % (
            scheme, ", ".join(sorted(self._by_scheme)))

    def port_of_scheme(self, scheme):
        return self._by_scheme.get(scheme)


def usable_locators(locators, same_host, same_process, shared_memory):
    """A peer's locators this node can link through, best first (PROTOCOL.md
    7, "Choosing a locator"): the same process: inproc; the same host: shm,
    then ipc; any host: tcp. `shared_memory` is Options.shared_memory (off:
    no shm; require: shm only, between processes of one host). Returns
    (locators, "" or why the peer cannot be reached as required)."""
    mode = shared_memory
    allowed = {"inproc": same_process, "shm": same_host and mode != "off",
               "ipc": same_host and mode != "require", "tcp": not same_host or mode != "require"}
    schemes = [scheme_of(l) if isinstance(l, str) else "" for l in locators]
    out = [l for want in ("inproc", "shm", "ipc", "tcp") if allowed[want]
           for l, s in zip(locators, schemes) if s == want]
    why = ""
    if same_host and not same_process and mode == "require" and "shm" not in map(scheme_of, out):
        why = "offers no shared-memory locator, and shared memory is required here (GECKO_SHM=require)"
    return out, why
