# SPDX-License-Identifier: Apache-2.0
"""Session: one node's session on the network, as C++ NodeImpl
(gecko/src/node/node_impl.cpp): the out-port, the in-port, the links to
other nodes, the reactor thread and the discovery client, put together.
gecko.Node is a Session with the API a program calls; entities
(gecko.pubsub, gecko.service) and the reactor call what is here."""

import itertools
import os
import socket
import threading

from .. import discovery as disc
from .._discovery_client import DiscoveryClient
from .. import runtime
from .. import schema as schemas
from ..security import KeySecurity
from .._transport import ZapAdmission, context
from .directory import UNSUPPORTED, Directory
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
        # With the key's secret every ZeroMQ link is CURVE, admitted by this
        # process's ZAP handler (docs/SECURITY.md §5); without it, plain.
        self.security = KeySecurity.find(o.key)
        curve = self.security.curve
        self._zap = ZapAdmission(context(), curve) if curve is not None else None
        try:
            self._outbound = Outbound(o, self.session, self.key, self._notice, curve)
        except BaseException:
            self._release_zap()
            raise
        self.locators = self._outbound.locators
        self._inbound = Inbound(o, self.log, self._notice, curve, self.security.shm_keys)
        self._entities = {}       # entity id -> Publisher, Subscriber, Server, Client
        self._dispatchables = []  # the entities whose queues spin() dispatches
        self._ticking = []        # receiving entities the reactor ticks (key-wide subscribers)
        self._schemas = {}        # type name -> MessageSchema, declared by typed entities
        self._classes = {}        # type name -> the message class an entity was made with
        self._directory = Directory()  # the key's channel directory, once something follows it
        self._following_directory = False
        self._directory_lock = threading.Lock()  # the watches and their events
        self._directory_watches = {}  # watch id -> callback(DirectoryEvent)
        self._directory_watch_ids = itertools.count(1)
        self._directory_events = []   # (watch id, or 0: every watch; DirectoryEvent), for spin()
        self._links = Links(self.session, o, (self.host, self.host_id, self.pid, self.pid_ns), self._inbound,
                            self._entities, self._notice)
        self._reactor = Reactor(self, o.name)
        self._inbound.connect(self.locators[0])  # our own subscribers hear our own publishers (inproc)
        for p in o.peers:
            self._inbound.connect(p)
        self._discovery = None
        if o.discovery:
            self._discovery = DiscoveryClient(o, context(), self.log, self.locators,
                                                   self.session, self.secret, on_error=self._on_core_error,
                                                   security=self.security)
        self._reactor.start()

    # ---- entities ----

    def _declare(self, *classes):
        """The fields of these message classes (and of those they nest) are
        known: entities of those types carry their schema to the directory."""
        for cls in classes:
            if cls is not None:
                self._classes.setdefault(cls.__gecko_type__, cls)
                for t in schemas.schema_of(cls).types:
                    self._schemas.setdefault(t.type_name, t)

    def _class_of(self, type_name):
        """The message class of `type_name` an entity of this node was made with, or None."""
        return self._classes.get(type_name)

    def _register(self, entity, reg, watch=False):
        """Entity `entity` exists: registered with the core (`reg`, with the
        schema of its type when every part of it is declared), and with
        `watch`, told its peers (its links follow them)."""
        self._entities[entity.id] = entity
        if self._discovery is None:
            return
        ident = entity.id
        if not reg.get("wildcard") and not reg.get("schema"):
            s = schemas.schema_for(reg["type"], self._schemas) if reg["type"] else None
            if s is not None:
                reg["schema"] = s.to_tree()

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

    def _add_receiver(self, entity, kind, topic, type_name, **extra):
        """A subscriber, server or client: its sink routed and subscribed, the
        entity registered (`extra`: a key-wide subscriber's wildcard and filter)."""
        self._inbound.add_sink(entity, entity.announcement)
        reg = {"id": entity.id, "kind": kind, "topic": topic, "type": type_name, "latched": False}
        reg.update(extra)
        self._register(entity, reg, watch=True)

    def _remove_receiver(self, entity, routed=True):
        """`routed`: its sink is still routed and subscribed (not after a refusal)."""
        if routed:
            self._inbound.remove_sink(entity, entity.announcement)
        if entity in self._ticking:
            self._ticking.remove(entity)
        self._unregister(entity)

    def _on_core_error(self, ident, code, text):
        self._notice("error", text, text)  # once per distinct text
        if code == "collision":  # its topic's channel is another topic's: no link can tell them apart
            e = self._entities.get(ident)
            if e is not None and hasattr(e, "_refused"):
                e._refused(text)

    # ---- the key's channel directory ----

    def _follow_directory(self):
        """Follows the directory from now on; False without discovery."""
        if self._discovery is None:
            return False
        if not self._following_directory:
            self._following_directory = True
            d = self._discovery
            self._reactor.post(lambda: d.watch_directory(self._on_directory, self._on_directory_unsupported))
        return True

    def _on_directory(self, partial, channels, gone):
        """Reactor thread: a `directory` message merged; its changes go to
        the key-wide subscribers now, to the watch_directory() callbacks from spin()."""
        with self._directory_lock:  # applied and queued at once: a new watch sees each change once
            events = self._directory.apply(partial, channels, gone)
            if self._directory_watches:
                self._directory_events.extend((0, e) for e in events)
        if not events:
            return
        for e in list(self._entities.values()):
            changed = getattr(e, "_directory_changed", None)
            if changed is not None:
                changed(events)
        self._inbound.wake_all()

    def _on_directory_unsupported(self):
        if self._directory.state == UNSUPPORTED:
            return
        self._directory.mark_unsupported()
        self._notice("warning", "no directory",
                     "the geckocore of key '%s' keeps no channel directory (a version older than this node's): "
                     "key-wide subscriptions take every message without its topic's name, and Node.directory() "
                     "fails; upgrade geckocore" % self.key)
        for e in list(self._entities.values()):
            unsupported = getattr(e, "_directory_unsupported", None)
            if unsupported is not None:
                unsupported()

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
        self._release_zap()

    def _release_zap(self):
        if self._zap is not None:
            self._zap.release()
            self._zap = None
