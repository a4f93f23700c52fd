# SPDX-License-Identifier: Apache-2.0
"""One link per other node this node's entities deal with, as discovery
lists them (their peers): linked through the best locator the transport
seam finds, dropped shortly after no entity wants it. Reactor thread only,
but for the reads noted."""

from .. import _transport


class Links:
    def __init__(self, session, options, here, inbound, entities, notice):
        self._session = session    # this node's session id
        self._options = options
        self._here = here          # (host, host id, pid, pid namespace)
        self._inbound = inbound
        self._entities = entities  # entity id -> entity (the node's)
        self._notice = notice      # Notices.say
        self.directory = {}        # remote entity id -> (type, node, session)
        self._links = {}           # session -> {"locator":, "users": set(), "unlisted": when}
        self._wants = {}           # local entity id -> set(sessions)

    def on_peers(self, entity, peers):
        """The peers discovery lists for local `entity` changed: one link per remote node."""
        sessions = set()
        for p in peers:
            self.directory[p["id"]] = (p.get("type", ""), p.get("node", ""), p.get("session", 0))
            session = p.get("session") or 0
            if not session:
                continue
            sessions.add(session)
            link = self._links.setdefault(session, {"locator": "", "users": set(), "unlisted": 0.0})
            link["users"].add(entity)
            link["unlisted"] = 0.0
            if link["locator"] or session == self._session:
                continue
            locators = self._usable_locators(p)
            if not locators:
                self._notice("warning", "no usable locator", "node '%s' on host %s offers no locator this node can "
                             "use; its messages will not reach us" % (p.get("node"), p.get("host")))
                continue
            link["locator"] = locators[0]
            # The secret the peer's sockets use, when it named one: a rotation's CURVE clients need it.
            link["fp"] = p.get("fp") if isinstance(p.get("fp"), str) else ""
            self._inbound.connect(locators[0], locators[1:], link)
        self._release(entity, self._wants.get(entity, set()) - sessions)
        self._wants[entity] = sessions
        e = self._entities.get(entity)
        if e is not None and hasattr(e, "_peers_changed"):
            e._peers_changed(peers)

    def forget(self, entity):
        """Local `entity` is gone: it uses none of its links any more."""
        self._release(entity, self._wants.pop(entity, ()))

    def _release(self, entity, sessions):
        for session in sessions:
            link = self._links.get(session)
            if link is not None:
                link["users"].discard(entity)

    def _usable_locators(self, p):
        host, host_id, pid, pid_ns = self._here
        there_id = p.get("hostid") or ""
        same_host = there_id == host_id if there_id else p.get("host") == host
        same_process = same_host and p.get("pid") == pid and p.get("pidns") == pid_ns
        out, why = _transport.usable_locators(p.get("locators", []), same_host, same_process,
                                              self._options.shared_memory)
        if why:
            self._notice("error", "shm required", "node '%s' %s: its messages will not reach this node" % (
                p.get("node"), why))
        return out

    def prune(self, now):
        """Drops the links no entity has wanted for 0.2 s."""
        for session, link in list(self._links.items()):
            if link["users"]:
                continue
            if not link["unlisted"]:
                link["unlisted"] = now
                continue
            if now - link["unlisted"] < 0.2:
                continue
            if link["locator"]:
                self._inbound.disconnect(link["locator"])
            for ident in [i for i, d in self.directory.items() if d[2] == session]:
                del self.directory[ident]
            del self._links[session]

    def type_name_of(self, sender):
        """The type remote entity `sender` declared, or "" (any thread)."""
        d = self.directory.get(sender)
        return d[0] if d else ""

    def report(self):
        """(session, scheme) of each other node this one has a link to in use,
        as C++ NodeImpl::report_stats (DISCOVERY.md 2.7): `gecko nodes` shows
        them as RECEIVES FROM, `gecko info` as links."""
        connected = self._inbound.connections.copy()  # the io holder changes it: one copy (atomic under the GIL)
        return [(session, _transport.scheme_of(link["locator"])) for session, link in self._links.items()
                if session != self._session and link["locator"] and link["locator"] in connected]
