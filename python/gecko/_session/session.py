# SPDX-License-Identifier: Apache-2.0
"""Session: one node's session on the network, as C++ NodeImpl
(gecko/src/node/node_impl.cpp): the out-port, the in-port, the links to
other nodes, the reactor thread and the discovery client, put together.
gecko.Node is a Session with the API a program calls; entities
(gecko.pubsub, gecko.service) and the reactor call what is here."""

import os
import socket

from .. import discovery as disc
from .. import runtime
from .._transport import context
from .inbound import Inbound
from .links import Links
from .names import new_id
from .notices import Notices
from .outbound import Outbound
from .reactor import Reactor


class Session:
    def __init__(self, options):
        o = options
        self.options = o
        self.key = o.key
        self.name = o.name
        self.log = runtime.logger(o.name)
        self.session = new_id()
        self.secret = new_id()
        self.closed = False
        self.host = socket.gethostname()
        self.host_id = disc.host_id()
        self.pid = os.getpid()
        self.pid_ns = disc.read_link("/proc/self/ns/pid")
        self._notices = Notices(self.log)
        self._notice = self._notices.say
        self._outbound = Outbound(o, self.session, self.key, self._notice)
        self.locators = self._outbound.locators
        self._inbound = Inbound(o, self.log, self._notice)
        self._entities = {}       # entity id -> Publisher, Subscriber, Server, Client
        self._dispatchables = []  # the entities whose queues spin() dispatches
        self._links = Links(self.session, o, (self.host, self.host_id, self.pid, self.pid_ns), self._inbound,
                            self._entities, self._notice)
        self._reactor = Reactor(self, o.name)
        self._inbound.connect(self.locators[0])  # our own subscribers hear our own publishers (inproc)
        for p in o.peers:
            self._inbound.connect(p)
        self._discovery = None
        if o.discovery:
            self._discovery = disc.DiscoveryClient(o, context(), self.log, self.locators,
                                                   self.session, self.secret, on_error=self._on_core_error)
        self._reactor.start()

    # ---- entities ----

    def _register(self, entity, reg, watch=False):
        """Entity `entity` exists: registered with the core (`reg`), and with
        `watch`, told its peers (its links follow them)."""
        self._entities[entity.id] = entity
        if self._discovery is None:
            return
        ident = entity.id

        def do():
            self._discovery.add(reg)
            if watch:
                self._discovery.watch(ident, lambda peers: self._links.on_peers(ident, peers))
        self._reactor.post(do)

    def _unregister(self, entity):
        self._entities.pop(entity.id, None)
        if self._dispatchables and entity in self._dispatchables:
            self._dispatchables.remove(entity)
        if self.closed or self._discovery is None:
            return
        ident = entity.id

        def do():
            self._discovery.remove(ident)
            self._links.forget(ident)
        self._reactor.post(do)

    def _add_receiver(self, entity, kind, topic, type_name):
        """A subscriber, server or client: its sink routed and subscribed, the entity registered."""
        self._inbound.add_sink(entity, entity.announcement)
        self._register(entity, {"id": entity.id, "kind": kind, "topic": topic, "type": type_name,
                                 "latched": False}, watch=True)

    def _remove_receiver(self, entity):
        self._inbound.remove_sink(entity, entity.announcement)
        self._unregister(entity)

    def _on_core_error(self, ident, code, text):
        self._notice("error", text, text)

    def _type_name_of(self, sender):
        """The type a remote entity declared, or "" if discovery has not said."""
        return self._links.type_name_of(sender)

    # ---- reports (reactor thread) ----

    def _stats_report(self, last, period):
        out = []
        for e in list(self._entities.values()):
            figures = getattr(e, "_figures", None)
            if figures is None:
                continue
            m, b, drops = figures()
            pm, pb = last.get(e.id, (m, b))
            last[e.id] = (m, b)
            out.append({"id": e.id, "messages_per_s": (m - pm) / period, "bytes_per_s": (b - pb) / period,
                        "drops": drops, "latency_ns": -1, "unheard": 0})
        return out

    def _links_report(self):
        return self._links.report()

    @property
    def _shm(self):
        """The shared-memory in-port, or None."""
        return self._inbound.port("shm")

    # ---- closing ----

    def _close(self, join_spinner):
        """Withdraws the publishers (they say "end"), says goodbye to the
        core, wakes and ends every thread (`join_spinner`: the caller's
        own), closes the ports."""
        if self.closed:
            return
        for p in self._outbound.senders():
            p.close()
        # The bye is posted before `closed` is set: the reactor runs what was
        # posted once more when it sees `closed`, so the bye is never skipped.
        d = self._discovery
        if d is not None:
            self._reactor.post_last(d.bye)
        self.closed = True
        self._inbound.closed = True
        self._inbound.wake_all()
        join_spinner()
        self._reactor.close()
        self._inbound.close()
        self._outbound.close()
