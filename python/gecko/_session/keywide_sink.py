# SPDX-License-Identifier: Apache-2.0
"""What a key-wide subscriber holds, as C++ gecko/src/node/sink.cpp's
wildcard sink (route, hold, name_channel, expire_held) and
channel_names.hpp: every data frame of the key's channels, each named by
the directory's entry of its topic (docs/PROTOCOL.md §4.1).

A frame is taken once the directory names its channel, and held until
then (at most 256, at most 2 s: then dropped and counted `unlisted`). The
key's service traffic (`request`, `reply`, `error`) and latched replays on another
entity's directed channel pass the links but are no topic's messages: they
are left without a count. A latched replay on this subscriber's own
directed channel is named by its sender's topic. Without a directory to
wait for (`resolving` False) frames are taken as they come, unnamed."""

import collections

from .. import wire
from .sink import Sink

MAX_HELD = 256
_TAKE, _LEAVE, _HOLD = 0, 1, 2


class KeyWideSink(Sink):
    """A Sink whose queue holds (frame, ChannelInfo or None); pop() and
    take() give (frame, receive_ns, ChannelInfo or None)."""

    def __init__(self, notice, channel, directed, depth, max_size, what, resolving):
        Sink.__init__(self, notice, channel, directed, "", depth, max_size, what, wildcard=True)
        self.resolving = resolving
        self._directed = directed
        self._channels = {}    # channel id -> (ChannelInfo, wanted)
        self._senders = {}     # publisher id -> the channel it sends on
        self._held = collections.deque()  # (frame, receive_ns)

    # ---- the in-port's side (io held) ----

    def offer_batch(self, frames, receive_ns, words=None):
        q = self.queue
        with self.lock:
            before = len(q)
            self._queued = 0
            for f in frames:
                self._offer(f, receive_ns)
            self.stats.overwritten += before + self._queued - len(q)

    def _offer(self, frame, receive_ns):
        """lock held: one frame, Sink's checks then the route."""
        try:
            h, _ = wire.parse_frame(frame, self.max_size)
        except wire.FrameError:
            return Sink._offer(self, frame, receive_ns)  # counts and says it
        if h.flags & wire.FLAG_CONTROL:
            return Sink._offer(self, frame, receive_ns)
        r, info = self._route(h)
        if r == _LEAVE:
            return False
        if r == _HOLD:
            if len(self._held) >= MAX_HELD:
                self._held.popleft()
                self.stats.unlisted += 1
            self._held.append((frame, receive_ns))
            return True
        if not self._accept(h, len(frame), receive_ns):
            return False
        self._queue((frame, info), receive_ns)
        return True

    def _route(self, h):
        """lock held: (take, leave or hold, the ChannelInfo of a frame taken)."""
        if h.flags & (wire.FLAG_REQUEST | wire.FLAG_REPLY):
            return _LEAVE, None
        c = h.channel
        if h.flags & wire.FLAG_LATCHED:
            if c != self._directed:
                return _LEAVE, None
            c = self._senders.get(h.sender_id, 0)  # a replay for us: its publisher's topic
            if not c:
                return (_HOLD if self.resolving else _TAKE), None
        if not self.resolving:
            return _TAKE, None
        known = self._channels.get(c)
        if known is None:
            return _HOLD, None
        if not known[1]:
            return _LEAVE, None
        return _TAKE, known[0]

    def _release_held(self):
        """lock held: the held frames that can go now go; True if any was queued."""
        queued = False
        still = collections.deque()
        for frame, receive_ns in self._held:
            h = wire.header_of(frame)
            r, info = self._route(h)
            if r == _HOLD:
                still.append((frame, receive_ns))
            elif r == _TAKE and self._accept(h, len(frame), receive_ns):
                before = len(self.queue)
                self._queue((frame, info), receive_ns)
                self.stats.overwritten += before + 1 - len(self.queue)
                queued = True
        self._held = still
        return queued

    # ---- the directory's side (reactor thread) ----

    def name_channel(self, info, wanted):
        """The directory lists `info`: its frames are taken (`wanted`) or
        left; frames held for it go now. True if something was queued."""
        with self.lock:
            for p in info.publishers:
                self._senders[p.id] = info.channel
            self._channels[info.channel] = (info, wanted)
            return bool(self._held) and self._release_held()

    def unname_channel(self, channel):
        """The directory no longer lists the topic of `channel`."""
        with self.lock:
            known = self._channels.pop(channel, None)
            if known is not None:
                for p in known[0].publishers:
                    self._senders.pop(p.id, None)

    def stop_resolving(self):
        """From now on frames are taken as they come, unnamed (there is no
        directory to wait for); the held ones are queued. True if any was."""
        with self.lock:
            self.resolving = False
            return bool(self._held) and self._release_held()

    def expire_held(self, before_ns):
        """Frames held since before `before_ns` (time.time_ns clock) for a
        channel the directory has not named: dropped and counted `unlisted`."""
        with self.lock:
            dropped = 0
            while self._held and self._held[0][1] < before_ns:
                self._held.popleft()
                dropped += 1
            self.stats.unlisted += dropped
        if dropped:
            self._notice("warning", self.what + ": unlisted",
                         "%s dropped %d message(s) on channels the key's directory does not list (a publisher that "
                         "did not register with geckocore, or a core that is gone); further ones are counted in "
                         "stats().unlisted" % (self.what, dropped))

    # ---- the reader's side ----

    def _pop(self):
        frame, info = self.queue.popleft()
        return frame, self.times.popleft(), info
