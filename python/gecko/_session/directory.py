# SPDX-License-Identifier: Apache-2.0
"""The key's channel directory (docs/DISCOVERY.md §4.1), as C++
gecko/directory.hpp and gecko/src/node/directory.cpp: every topic and
service of the key with its channel id, type, the schema its publisher
declared and its publishers, as geckocore vouches for them. A node's copy
is merged from the core's `directory` messages on the reactor thread and
read from any thread; each change is a DirectoryEvent (to the node's
key-wide subscribers at once, to Node.watch_directory() callbacks from
spin()). TopicFilter says which topics a key-wide subscription takes."""

import threading
import time
from collections import namedtuple

from ..names import check_pattern, glob_match
from ..schema import Schema
from ..errors import Error

PublisherInfo = namedtuple("PublisherInfo", "id node host type_name latched")
PublisherInfo.__doc__ = """A publisher of a topic (a server of a service), as the directory lists it:
its entity id (MessageInfo.publisher_id of its messages), its node's name and host, its type, latched."""


class ChannelInfo:
    """One topic or service of the key: `topic` (its name), `service`,
    `channel` (the channel id its frames carry; 0 for a service),
    `type_name` (the first publisher's, else the first subscriber's),
    `type_hash`, `schema` (a gecko.schema.Schema, or None: none declared)
    and `publishers` (PublisherInfo each, in registration order)."""
    __slots__ = ("topic", "service", "channel", "type_name", "type_hash", "schema", "publishers")

    def __init__(self, topic, service, channel, type_name, type_hash, schema, publishers):
        self.topic = topic
        self.service = service
        self.channel = channel
        self.type_name = type_name
        self.type_hash = type_hash
        self.schema = schema
        self.publishers = publishers

    def __repr__(self):
        return "ChannelInfo(%s%s, channel=%016x, type=%s, publishers=%d%s)" % (
            "service " if self.service else "", self.topic, self.channel, self.type_name or "-",
            len(self.publishers), ", schema" if self.schema is not None else "")


class DirectoryEvent:
    """A change of the directory: `kind` "added", "removed" (its last
    entry in `channel`) or "changed" (type, schema or publishers), and
    `channel`, a ChannelInfo."""
    __slots__ = ("kind", "channel")

    def __init__(self, kind, channel):
        self.kind = kind
        self.channel = channel

    def __repr__(self):
        return "DirectoryEvent(%s, %r)" % (self.kind, self.channel)


class TopicFilter:
    """Which topics a key-wide subscription takes: a topic whose name
    matches one of `topics` and whose type one of `types`; each an exact
    name, or a glob ('*' any run of characters, '/' included; '?' any one)."""

    def __init__(self, topics=("*",), types=("*",)):
        self.topics = [topics] if isinstance(topics, str) else list(topics)
        self.types = [types] if isinstance(types, str) else list(types)
        if not self.topics or not self.types:
            raise Error("invalid_argument", "a key-wide subscription needs at least one topic and one type pattern "
                                            "(\"*\": any)")
        for p in self.topics + self.types:
            try:
                check_pattern(p)
            except Error as e:
                raise Error("invalid_argument", "key-wide subscription: pattern '%s': %s" % (p, e))

    def matches(self, topic, type_name):
        return (any(glob_match(p, topic) for p in self.topics)
                and any(glob_match(p, type_name) for p in self.types))

    def takes_all(self):
        """True when it takes every topic of every type."""
        return "*" in self.topics and "*" in self.types


UNKNOWN, KNOWN, UNSUPPORTED = "unknown", "known", "unsupported"


def _publishers(entry):
    out = []
    for p in entry.get("producers") or ():
        if isinstance(p, dict) and type(p.get("id")) is int:
            out.append(PublisherInfo(p["id"], _s(p.get("node")), _s(p.get("host")), _s(p.get("type")),
                                     p.get("latched") is True))
    return tuple(out)


def _s(v):
    return v if isinstance(v, str) else ""


def _u(v):
    return v if type(v) is int and v >= 0 else 0


class Directory:
    """A node's copy of the directory (see the module)."""

    def __init__(self):
        self._entries = {}  # (service, name) -> (ChannelInfo, the schema map as the core sent it)
        self._changed = threading.Condition(threading.Lock())
        self.state = UNKNOWN  # KNOWN: the core sent its directory; UNSUPPORTED: it keeps none

    def _make(self, e, before):
        raw = e.get("schema") if isinstance(e.get("schema"), dict) else None
        schema = None
        if before is not None and before[1] == raw:
            schema = before[0].schema
        elif raw is not None:
            try:
                schema = Schema.from_tree(raw)
            except Error:
                pass  # the core checked it; one that does not decode here is left out rather than trusted
        return ChannelInfo(e["name"], e.get("service") is True, _u(e.get("channel")), _s(e.get("type")),
                           _u(e.get("type_hash")), schema, _publishers(e)), raw

    def apply(self, partial, channels, gone):
        """Merges one `directory` message (reactor thread); returns the DirectoryEvents it made."""
        events = []
        with self._changed:
            listed = set()
            for e in channels:
                key = (e.get("service") is True, e["name"])
                listed.add(key)
                before = self._entries.get(key)
                nxt = self._make(e, before)
                if before is None:
                    events.append(DirectoryEvent("added", nxt[0]))
                    self._entries[key] = nxt
                    continue
                was, now = before[0], nxt[0]
                if (was.type_name != now.type_name or was.channel != now.channel or before[1] != nxt[1]
                        or was.publishers != now.publishers):
                    events.append(DirectoryEvent("changed", now))
                    self._entries[key] = nxt
            # A full set replaces what was known; a delta removes what it says is gone.
            gone = set(gone) - listed
            for key in list(self._entries):
                if (not partial and key not in listed) or key in gone:
                    events.append(DirectoryEvent("removed", self._entries.pop(key)[0]))
            if not partial or self.state == UNSUPPORTED:
                self.state = KNOWN
            self._changed.notify_all()
        return events

    def mark_unsupported(self):
        with self._changed:
            self.state = UNSUPPORTED
            self._changed.notify_all()

    def wait(self, timeout):
        """Waits until the state is not UNKNOWN, at most `timeout` s; returns the state."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while self.state == UNKNOWN:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._changed.wait(min(left, 0.1))
            return self.state

    def snapshot(self):
        """Every entry now, topics then services, by name."""
        with self._changed:
            return [self._entries[k][0] for k in sorted(self._entries)]

    def topic(self, name):
        """The entry of topic `name` (not a service), or None."""
        with self._changed:
            e = self._entries.get((False, name))
            return e[0] if e else None
