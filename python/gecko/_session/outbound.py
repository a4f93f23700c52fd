# SPDX-License-Identifier: Apache-2.0
"""The node's out-port and who listens on it, as C++ gecko/src/node/outbound.cpp:
every frame the node sends; the subscribers (and servers, clients) of other
nodes as their announcements arrive; latched values replayed to a new
subscriber; each subscriber told where its stream from a publisher began
(control `start`, PROTOCOL.md §6); directed frames held until their
receiver has subscribed."""

import threading
import time

from .. import _transport, wire


class Outbound:
    def __init__(self, options, session, key, notice, curve=None):
        self._port = _transport.open_out_port(options, session, curve)
        self.locators = self._port.locators
        self._key = key
        self._notice = notice  # Notices.say
        self._lock = threading.Lock()  # the port: send, events, close
        # `changed` guards what the events tell (below) and is notified when they change
        self.changed = threading.Condition(threading.Lock())
        self.subscribed = {}    # channel -> {entity id: Announcement}
        self._wildcards = {}    # entity id -> Announcement
        self._senders = {}      # channel -> [Publisher]
        self._held = []         # (channel, frame, until): directed frames waiting for their receiver
        self._mismatch_said = set()
        self._starts = {}       # publisher id -> {subscriber id: [after, told again]}

    def send(self, frame):
        """False if the frame did not go out (a full queue, or the port closed)."""
        with self._lock:
            if self._port is None:
                return False
            return self._port.send(frame)

    def send_directed(self, channel, frame, hold=5.0):
        """Sends now if the receiver's subscription arrived, else holds the frame
        until it does (a reply racing the client's subscription), for `hold` s."""
        self.drain_events()
        with self.changed:
            if channel not in self.subscribed:
                self._held.append((channel, frame, time.monotonic() + hold))
                del self._held[:-256]
                return
        self.send(frame)

    def add_sender(self, pub):
        """A new publisher: the subscribers already there are told that its
        stream began with its first message."""
        frames = []
        with self.changed:
            self._senders.setdefault(pub.channel, []).append(pub)
            for a in self.subscribed.get(pub.channel, {}).values():
                if a.type in ("", "*") or a.type == pub.type_name:
                    self._joined(pub, a, frames)
            k = wire.key_part(pub.channel)
            for a in self._wildcards.values():
                if wire.key_part(a.channel) == k:
                    self._joined(pub, a, frames)
        for f in frames:
            self.send(f)

    def remove_sender(self, pub):
        with self.changed:
            lst = self._senders.get(pub.channel, [])
            if pub in lst:
                lst.remove(pub)
            self._starts.pop(pub.id, None)

    def repeat_starts(self, pub, every):
        """Tells `pub`'s subscribers again where their stream began: those
        not told again yet (`every` False: the publisher went quiet), or all
        (it closes). A link that drops its oldest frames may have lost the
        first `start` with the first messages."""
        self.drain_events()  # subscribers that joined and were not told yet
        frames = []
        with self.changed:
            for sub, start in self._starts.get(pub.id, {}).items():
                if start[1] and not every:
                    continue
                start[1] = True
                frames.append(self._start_frame(pub, sub, start[0]))
        for f in frames:
            self.send(f)

    def senders(self):
        """Every publisher of the node (a copy)."""
        with self.changed:
            return [p for pubs in self._senders.values() for p in pubs]

    def subscriber_count(self, channel):
        n = len(self.subscribed.get(channel, ()))
        if self._wildcards:
            k = wire.key_part(channel)
            n += sum(1 for a in self._wildcards.values() if wire.key_part(a.channel) == k)
        return n

    def subscribers_of(self, channel):
        self.drain_events()
        with self.changed:
            return list(self.subscribed.get(channel, {}).values())

    def drain_events(self):
        """Takes in the subscriptions that came or went; replays latched
        values to new subscribers and sends the held frames whose receiver came."""
        with self._lock:
            if self._port is None:
                return
            events = self._port.events()
        if not events:
            return
        replays = []
        with self.changed:
            for joined, a in events:
                self._on_event(joined, a, replays)
            if self._held:
                now = time.monotonic()
                kept = []
                for channel, frame, until in self._held:
                    if channel in self.subscribed:
                        replays.append(frame)
                    elif until > now:
                        kept.append((channel, frame, until))
                self._held = kept
            self.changed.notify_all()
        for frame in replays:
            self.send(frame)

    def _on_event(self, joined, a, replays):
        if a.wildcard:
            if joined:
                self._wildcards[a.id] = a
            else:
                self._wildcards.pop(a.id, None)
            for channel, pubs in self._senders.items():
                if wire.key_part(channel) == wire.key_part(a.channel):
                    for p in pubs:
                        if joined:
                            self._replay(p, a, replays)
                            self._joined(p, a, replays)
                        else:
                            self._starts.get(p.id, {}).pop(a.id, None)
            return
        subs = self.subscribed.setdefault(a.channel, {})
        if joined:
            subs[a.id] = a
        else:
            subs.pop(a.id, None)
            if not subs:
                del self.subscribed[a.channel]
            for p in self._senders.get(a.channel, ()):
                self._starts.get(p.id, {}).pop(a.id, None)
            return
        for p in self._senders.get(a.channel, ()):
            if a.kind == "subscriber" and a.type not in ("", "*") and a.type != p.type_name:
                p.mismatched_subscribers += 1
                if (a.channel, a.type) not in self._mismatch_said:
                    self._mismatch_said.add((a.channel, a.type))
                    self._notice("error", p.what + ": type mismatch",
                                 "%s sends %s but the subscriber of node '%s' expects %s; it will drop every message "
                                 "(`gecko info` shows both)" % (p.what, p.type_name, a.node, a.type))
                continue
            self._replay(p, a, replays)
            self._joined(p, a, replays)  # after the latched value, which a start before it would make look old

    def _joined(self, p, a, frames):
        """changed held: every message `p` numbers after now reaches `a` (the
        port made it a target before its event came): tell it so."""
        after = p.sequence
        self._starts.setdefault(p.id, {})[a.id] = [after, False]
        frames.append(self._start_frame(p, a.id, after))

    def _start_frame(self, p, subscriber, after):
        body = wire.encode_control("start", after)
        return wire.encode_header(wire.directed_channel(self._key, subscriber), wire.FLAG_CONTROL, len(body), after,
                                  p.id, time.time_ns(), 0) + body

    def _replay(self, p, a, replays):
        if not p.latched or p.last_frame is None:
            return
        f = bytearray(p.last_frame)
        f[0:8] = wire.channel_bytes(wire.directed_channel(self._key, a.id))
        f[11] |= wire.FLAG_LATCHED
        replays.append(bytes(f))

    def close(self):
        with self._lock:
            self._port.close()
            self._port = None
