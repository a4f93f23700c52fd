# SPDX-License-Identifier: Apache-2.0
"""Publishers and subscribers, as C++ gecko/src/node/publisher.cpp and
subscriber.cpp: made by Node.publisher() and Node.subscriber()."""

import inspect
import threading
import time
import zlib

from . import message as msgmod
from . import runtime, wire
from ._session.codec import encode_payload, resolve_type
from ._session.info import MessageInfo
from ._session.names import check_topic, check_type, new_id
from ._session.sink import Sink
from .errors import DecodeError, Error

_DROPPED = object()  # what Subscriber._deliver returns for a message it could not deliver
_unpack_header = wire.unpack_header
_monotonic = time.monotonic
_HEADER_SIZE = wire.HEADER_SIZE
# A payload up to this size is sliced out of its frame (a copy, cheaper than a
# memoryview for small frames); a larger one is read in place.
_SLICE_MAX = 4096


def _callback_takes_info(callback, with_info, what):
    """Whether `callback` is called (msg, info) rather than (msg), decided
    once, from its signature, as C++ decides from the callable's type: its
    required positional parameters say it (two: with info; one, or none
    and room for one: without). `with_info` True or False overrides; a
    callable that can take neither one nor two positional arguments is
    refused here rather than failing on every message."""
    if not callable(callback):
        raise Error("invalid_argument", "%s: the callback %r is not callable" % (what, callback))
    try:
        params = inspect.signature(callback).parameters.values()
    except (TypeError, ValueError):  # a builtin without a signature: as it was given
        return bool(with_info)
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    required = sum(1 for p in positional if p.default is p.empty)
    most = float("inf") if any(p.kind == p.VAR_POSITIONAL for p in params) else len(positional)
    keyword_only = [p.name for p in params if p.kind == p.KEYWORD_ONLY and p.default is p.empty]

    def takes(n):
        return required <= n <= most and not keyword_only

    name = getattr(callback, "__qualname__", None) or repr(callback)
    if with_info is not None:
        if not takes(2 if with_info else 1):
            raise Error("invalid_argument", "%s: with_info=%s calls the callback %s with %s, but it takes %s" % (
                what, with_info, name, "(msg, info)" if with_info else "(msg)", _arity(required, most, keyword_only)))
        return bool(with_info)
    if required == 2 and takes(2):
        return True
    if takes(1):
        return False
    raise Error("invalid_argument", "%s: the callback %s takes %s; a subscriber callback takes (msg) or (msg, info)"
                % (what, name, _arity(required, most, keyword_only)))


def _arity(required, most, keyword_only):
    if keyword_only:
        return "the keyword-only argument%s %s" % ("s" if len(keyword_only) > 1 else "", ", ".join(keyword_only))
    if most == required:
        return "%d positional argument%s" % (required, "" if required == 1 else "s")
    return "%d to %s positional arguments" % (required, "any number of" if most == float("inf") else most)




class Publisher:
    """Publishes messages of one type on one topic. Made by Node.publisher()."""

    def __init__(self, node, topic, msg_type, latched=False, compress_above=None, compression_level=6):
        check_topic(topic)
        self.node = node
        self.topic = topic
        self.cls, self.type_name = resolve_type(msg_type)
        if not self.type_name:
            raise Error("invalid_argument", "publisher of '%s' needs a type" % topic)
        check_type(self.type_name)
        if not 1 <= compression_level <= 9:
            raise Error("invalid_argument", "publisher of '%s': compression_level must be 1..9" % topic)
        self.id = new_id()
        self.channel = wire.channel_of(node.key, topic)
        self.type_hash = wire.type_hash(self.type_name)
        self.latched = latched
        self.compress_above = compress_above
        self.compression_level = compression_level
        self.sequence = 0
        self.marked = 0
        self.seen_at_tick = 0
        self.last_frame = None
        self.messages = 0
        self.bytes = 0
        self.unheard = 0
        self.compressed = 0
        self.mismatched_subscribers = 0
        self.closed = False
        self.refused = None  # the core's reason, once it refused this publisher for good (collision)
        self._lock = threading.Lock()
        self.what = "publisher of '%s'" % topic
        self._out = node._outbound
        self._out.add_sender(self)
        node._declare(self.cls)
        node._register(self, {"id": self.id, "kind": "publisher", "topic": topic, "type": self.type_name,
                              "latched": latched})

    def publish(self, msg):
        """Sends `msg`: an instance of the type, a dict of its fields, or
        msgpack bytes (sent as they are)."""
        payload = encode_payload(self.cls, self.type_name, msg)
        self.publish_payload(payload)

    def publish_payload(self, payload):
        if self.refused is not None:
            raise Error("discovery", self.refused)
        size = len(payload)
        flags = 0
        if self.compress_above is not None and size > self.compress_above:
            payload = zlib.compress(payload, self.compression_level)
            flags = wire.FLAG_COMPRESSED
        with self._lock:
            if self.closed:
                raise Error("closed", "%s outlived its node '%s'" % (self.what, self.node.name))
            self.sequence += 1
            frame = wire.encode_header(self.channel, flags, size, self.sequence, self.id, time.time_ns(),
                                       self.type_hash) + payload
            if flags:
                self.compressed += 1
            if self.latched:
                self.last_frame = frame
            if not self._out.subscriber_count(self.channel):
                self.unheard += 1
            self.messages += 1
            self.bytes += len(frame)
            self._out.send(frame)

    def subscriber_count(self):
        self._out.drain_events()
        return self._out.subscriber_count(self.channel)

    def wait_for_subscribers(self, count=1, timeout=5.0):
        """True once `count` subscribers are connected; False after `timeout` s."""
        deadline = time.monotonic() + timeout
        while True:
            if self.subscriber_count() >= count:
                return True
            if self.closed or time.monotonic() >= deadline or not runtime.ok():
                return False
            with self._out.changed:
                self._out.changed.wait(min(0.01, max(0.0, deadline - time.monotonic())))

    def stats(self):
        self._out.drain_events()
        return {"messages": self.messages, "bytes": self.bytes, "compressed": self.compressed,
                "unheard": self.unheard, "subscribers": self._out.subscriber_count(self.channel),
                "mismatched_subscribers": self.mismatched_subscribers}

    def _figures(self):
        """(messages, bytes, drops), for the node's report to the core."""
        return self.messages, self.bytes, 0

    def _refused(self, reason):
        """The core refused it for good (its topic's channel id is another
        topic's): publish() raises `reason` from now on."""
        self.refused = reason

    def _tick(self):
        # Quiet since the last tick after sending: say where the sequence is
        # so subscribers count what a link dropped at the end of a burst.
        with self._lock:
            if self.closed or self.sequence == self.marked:
                return
            if self.sequence != self.seen_at_tick:
                self.seen_at_tick = self.sequence
                return
            self.marked = self.sequence
            self._out.repeat_starts(self, False)
            self._control("seq")

    def _control(self, kind):
        body = wire.encode_control(kind, self.sequence)
        self._out.send(wire.encode_header(self.channel, wire.FLAG_CONTROL, len(body), self.sequence, self.id,
                                           time.time_ns(), 0) + body)

    def close(self):
        with self._lock:
            if self.closed:
                return
            self.closed = True
            if self.sequence:  # each subscriber hears again where its stream began: its first messages may be lost too
                self._out.repeat_starts(self, True)
                self._control("end")
        self._out.remove_sender(self)
        self.node._unregister(self)


class Subscriber:
    """Receives the messages of one topic. Made by Node.subscriber().

    receive(timeout) returns the oldest queued message (keep-last-`depth`),
    or None; with a callback, messages go to it from spin() instead."""

    def __init__(self, node, topic, msg_type=None, callback=None, depth=16, latest_only=False,
                 max_message_size=None, with_info=None, spin_us=None):
        check_topic(topic)
        # receive() busy-polls shared-memory links this long before it sleeps (None: the node's `spin`)
        self.spin = None if spin_us is None else spin_us * 1e-6
        self.node = node
        self.topic = topic
        self.cls, self.type_name = resolve_type(msg_type)
        self.callback = callback
        self.what = "subscriber of '%s'" % topic
        # without a callback, receive()'s default; with one, how it is called
        self.with_info = (bool(with_info) if callback is None
                          else _callback_takes_info(callback, with_info, self.what))
        self.id = new_id()
        if latest_only:
            depth = 1
        if depth < 1:
            raise Error("invalid_argument", "subscriber of '%s': depth must be >= 1" % topic)
        self.sink = Sink(node._notice, wire.channel_of(node.key, topic), wire.directed_channel(node.key, self.id),
                          self.type_name, depth, min(max_message_size or node.options.max_message_size,
                                                     node.options.max_message_size), self.what)
        self.announcement = wire.encode_announcement(self.sink.channel, self.id, "subscriber", topic,
                                                     self.type_name or "*", node.name, node.session, depth)
        self._decode = msgmod.decoder(self.cls) if self.cls is not None else msgmod.unpack
        # the same on a whole frame (the payload starts at 48): no copy of the payload first
        self._decode_frame = (msgmod.decoder(self.cls, _HEADER_SIZE) if self.cls is not None
                              else lambda frame: msgmod.unpack(frame[_HEADER_SIZE:]))
        # receive()'s fast path: no callback, no info by default; the sink's parts
        self._plain = callback is None and not self.with_info
        self._queue, self._times, self._lock, self._stats = (self.sink.queue, self.sink.times, self.sink.lock,
                                                             self.sink.stats)
        self._inbound = node._inbound
        self.closed = False
        self._routed = True  # its sink takes frames (not after a refusal)
        self.refused = None  # the core's reason, once it refused this subscriber for good (collision)
        if self.type_name:
            check_type(self.type_name, "subscriber of '%s': the type name" % topic)
        node._declare(self.cls)
        node._add_receiver(self, "subscriber", topic, self.type_name)

    def receive(self, timeout=None, with_info=None):
        """The next message, or None after `timeout` seconds (None: wait until
        the node closes or shutdown). With with_info, (message, MessageInfo)."""
        if self._plain if with_info is None else not with_info and self.callback is None:
            q = self._queue
            if q and _monotonic() - self._inbound.app_drain <= 0.001:
                # The common case in one frame: a message waits, the in-port was read
                # within 1 ms (keep-last-N: it is among the newest), small, uncompressed.
                lock = self._lock
                lock.acquire()  # (not `with`: ~30 ns less; nothing below raises)
                if q:
                    self._stats.delivered += 1
                    frame = q.popleft()  # a subscriber's queue holds frames only (no refusals)
                    receive_ns = self._times.popleft()
                else:
                    frame = None
                lock.release()
                if frame is not None:
                    if not frame[11] and len(frame) <= _SLICE_MAX:
                        try:
                            return self._decode_frame(frame)
                        except DecodeError:
                            pass
                    out = self._deliver((frame, receive_ns), False, False)  # counts and says why it cannot
                    if out is not _DROPPED:
                        return out
            return self._receive(timeout, False, False)
        if self.callback is not None:
            raise Error("invalid_argument", "%s has a callback: its messages arrive through Node.spin()" % self.what)
        if with_info is None:
            with_info = self.with_info
        return self._receive(timeout, with_info, False)

    def receive_payload(self, timeout=None, with_info=None):
        """receive() without the decode: the next message's msgpack payload as
        bytes (inflated if it travelled compressed), or None after `timeout`.
        Every check and counter of receive() applies (type, sequence, drops,
        keep-last-N) except the decode, which is the caller's:
        gecko.decode(cls, payload) gives the message receive() would have.
        The cheapest way to take messages in Python; with with_info,
        (payload, MessageInfo)."""
        if self.callback is not None:
            raise Error("invalid_argument", "%s has a callback: its messages arrive through Node.spin()" % self.what)
        return self._receive(timeout, self.with_info if with_info is None else with_info, True)

    def _receive(self, timeout, with_info, raw):
        sink = self.sink
        inbound = self._inbound
        if sink.queue and time.monotonic() - inbound.app_drain > 0.001:
            inbound.drain_now()  # keep-last-N: what we return is among the newest (within 1 ms)
        deliver = self._deliver
        deadline = None if timeout is None else time.monotonic() + timeout
        if not with_info:
            # the common case inline: an uncompressed, small frame taken and decoded
            lock = sink.lock
            q = sink.queue
            times = sink.times
            stats = sink.stats
            decode = self._decode_frame
            while q:
                with lock:
                    if not q:
                        break
                    stats.delivered += 1
                    frame = q.popleft()  # a subscriber's queue holds frames only (no refusals)
                    item = frame, times.popleft()
                if frame[11] or len(frame) > _SLICE_MAX:
                    out = deliver(item, False, raw)
                    if out is not _DROPPED:
                        return out
                    continue
                if raw:
                    return frame[_HEADER_SIZE:]
                try:
                    return decode(frame)
                except DecodeError:
                    out = deliver(item, False, raw)  # fails the same way: counts it and says it once
                    if out is not _DROPPED:
                        return out
        return self._wait_deliverable(deliver, with_info, raw, deadline)

    def _wait_deliverable(self, deliver, with_info, raw, deadline):
        """The first queued item that delivers, waiting for one until `deadline` (None: no end)."""
        sink = self.sink
        take = sink.take
        while True:
            out = self._first_deliverable(take, deliver, with_info, raw)
            if out is not _DROPPED:
                return out
            if self.closed or not self._inbound.wait(sink.__bool__, deadline, self.spin):
                out = self._first_deliverable(take, deliver, with_info, raw)  # a last look
                return None if out is _DROPPED else out

    @staticmethod
    def _first_deliverable(take, deliver, with_info, raw):
        """The first queued item that delivers, or _DROPPED once the queue is empty."""
        item = take()
        while item is not None:
            out = deliver(item, with_info, raw)
            if out is not _DROPPED:
                return out
            item = take()
        return _DROPPED

    def _deliver(self, item, with_info, raw):
        """An item taken by sink.take() (counted delivered) as the message,
        (message, info) with with_info, or _DROPPED (counted, said once)."""
        frame, receive_ns = item
        size = len(frame)
        payload = self._payload(frame)
        if payload is _DROPPED:
            return _DROPPED
        if raw:
            msg = payload if payload.__class__ is bytes else bytes(payload)
        else:
            try:
                msg = self._decode(payload)
            except DecodeError as e:
                type_name = self.type_name or self.node._type_name_of(_unpack_header(frame)[6])
                if not e.type_name and type_name:
                    e.named(type_name)
                return self._failed("decode", "%s could not decode a message: %s (further ones are counted in "
                                              "stats().decode_errors)" % (self.what, e))
        if with_info:
            h = wire.header_of(frame)
            return msg, MessageInfo(h, receive_ns, size, self.type_name or self.node._type_name_of(h.sender_id),
                                    self.topic)
        return msg

    def _payload(self, frame):
        """The payload of `frame` as on the wire, inflated if it travelled
        compressed; _DROPPED (counted, said once) if it does not inflate."""
        if frame[11] & wire.FLAG_COMPRESSED:
            try:
                return wire.inflate(memoryview(frame)[_HEADER_SIZE:], _unpack_header(frame)[4])
            except wire.FrameError:
                return self._failed("inflate", "dropped a frame on %s: corrupt compressed payload (further ones are "
                                               "counted in stats().decode_errors)" % self.what)
        if len(frame) <= _SLICE_MAX:
            return frame[_HEADER_SIZE:]
        return memoryview(frame)[_HEADER_SIZE:]

    def _refused(self, reason):
        """The core refused it for good (its topic's channel id is another
        topic's, which would merge the two): it takes nothing from now on."""
        self.refused = reason
        if self._routed:
            self._routed = False
            self._inbound.remove_sink(self, self.announcement)
            with self.sink.lock:
                self.sink.queue.clear()
                self.sink.times.clear()

    def _failed(self, reason, text):
        with self.sink.lock:
            self.sink.stats.decode_errors += 1
            self.sink.stats.delivered -= 1
        self.node._notice("warning", self.what + ": " + reason, text)
        return _DROPPED

    def _dispatch(self, budget):
        n = 0
        take = self.sink.take
        with_info = self.with_info
        while n < budget:
            item = take()
            if item is None:
                break
            out = self._deliver(item, with_info, False)
            if out is _DROPPED:
                continue
            n += 1
            try:
                if with_info:
                    self.callback(out[0], out[1])
                else:
                    self.callback(out)
            except Exception as e:
                with self.sink.lock:
                    self.sink.stats.callback_errors += 1
                    self.sink.stats.delivered -= 1
                self.node._notice("error", self.what + ": callback", "the callback of %s raised on message #%d: "
                                  "%r (the subscriber goes on; further errors are counted in "
                                  "stats().callback_errors)" % (self.what, _unpack_header(item[0])[5], e))
        return n

    def stats(self):
        with self.sink.lock:
            return self.sink.stats.copy()

    def _figures(self):
        """(messages, bytes, drops), for the node's report to the core."""
        s = self.sink.stats
        return s.received, s.bytes, s.drops

    def close(self):
        if self.closed:
            return
        self.closed = True
        self.node._remove_receiver(self, self._routed)
