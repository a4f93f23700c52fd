# SPDX-License-Identifier: Apache-2.0
"""The key-wide subscriber, as C++ Node::subscribe_all (gecko/src/node/
subscriber.cpp's key-wide parts): every message of every topic of the key
that its filter takes, whoever publishes it, now or later, over whatever
link. Made by Node.subscribe_all().

It subscribes its directed channel and the key's 4-byte prefix, announces
itself with `wildcard: true`, registers with the core as a key-wide
subscriber (DISCOVERY.md §2.4: `wildcard`, `filter`), which tells it of
every publisher its filter takes (its node links to them), and names each
frame's topic by its channel in the key's directory (§4.1). A frame waits
(at most 2 s) until the directory names its channel."""

import time

from . import message as msgmod
from . import msgs, wire
from ._session.directory import UNSUPPORTED, DirectoryEvent, TopicFilter
from ._session.info import MessageInfo
from ._session.keywide_sink import KeyWideSink
from ._session.names import new_id
from .errors import DecodeError, Error
from .pubsub import _DROPPED, Subscriber, _callback_takes_info

_HOLD_NS = 2_000_000_000  # how long a frame waits for the directory to name its channel


def _describe(f):
    if f.takes_all():
        return "subscriber of every topic"
    return "key-wide subscriber of " + ", ".join("'%s'" % t for t in f.topics)


class KeyWideSubscriber(Subscriber):
    """See the module. receive() gives (msg, MessageInfo) (with_info=False:
    the message alone); info.topic names its topic, info.type_name its type,
    info.channel is the directory's entry (a ChannelInfo). A message of a
    type this process knows (gecko.msgs, or a class an entity of the node
    was made with) decodes as that class, any other as plain dicts."""

    def __init__(self, node, topics=("*",), types=("*",), callback=None, depth=16, max_message_size=None,
                 with_info=None, spin_us=None):
        self.filter = TopicFilter(topics, types)
        self.spin = None if spin_us is None else spin_us * 1e-6
        self.node = node
        self.topic = "*"
        self.cls, self.type_name = None, ""
        self.callback = callback
        self.what = _describe(self.filter)
        self.with_info = (with_info is not False if callback is None
                          else _callback_takes_info(callback, with_info, self.what))
        if depth < 1:
            raise Error("invalid_argument", "%s: depth must be >= 1" % self.what)
        self.id = new_id()
        # Each frame is named by the directory. Without discovery there is none
        # to wait for: everything is taken unnamed, which only a filter of
        # everything allows (another one waits for names that never come).
        resolving = node._discovery is not None or not self.filter.takes_all()
        self.sink = KeyWideSink(node._notice, wire.channel_of(node.key, ""), wire.directed_channel(node.key, self.id),
                                depth, min(max_message_size or node.options.max_message_size,
                                           node.options.max_message_size), self.what, resolving)
        self.announcement = wire.encode_announcement(self.sink.channel, self.id, "subscriber", "*", "*", node.name,
                                                     node.session, depth, wildcard=True)
        self._decoders = {}  # type name -> decode(payload)
        self._inbound = node._inbound
        self.closed = False
        self._routed = True
        self.refused = None
        f = self.filter
        flt = {} if f.takes_all() else {"topics": f.topics, "types": f.types}
        node._add_receiver(self, "subscriber", "*", "", wildcard=True, filter=flt)
        node._ticking.append(self)
        if node._discovery is None:
            if resolving:
                node._notice("error", self.what + ": no directory",
                             "%s cannot apply its filter: node '%s' runs without discovery, so no directory names "
                             "the topics; it takes nothing" % (self.what, node.name))
            return
        node._follow_directory()
        # What the directory knows already (a change meanwhile comes again: naming is idempotent).
        self._directory_changed([DirectoryEvent("added", info) for info in node._directory.snapshot()])
        if node._directory.state == UNSUPPORTED:
            self._directory_unsupported()

    # ---- what the node tells it ----

    def _directory_changed(self, events):
        queued = False
        for e in events:
            info = e.channel
            if info.service:
                continue
            if e.kind == "removed":
                self.sink.unname_channel(info.channel)
                continue
            queued = self.sink.name_channel(info, self.filter.matches(info.topic, info.type_name)) or queued
        if queued:
            self._inbound.wake_all()

    def _directory_unsupported(self):
        # No names to wait for: everything is taken unnamed, which only a filter of everything allows.
        if self.filter.takes_all():
            if self.sink.stop_resolving():
                self._inbound.wake_all()
        else:
            self.node._notice("error", self.what + ": no directory",
                              "%s cannot apply its filter: the key's geckocore keeps no channel directory (an older "
                              "version); it takes nothing until the core is upgraded" % self.what)

    def _tick(self):
        # Held for a channel the directory did not name within 2 s: the directory will not name it.
        self.sink.expire_held(time.time_ns() - _HOLD_NS)

    # ---- reading ----

    def receive(self, timeout=None, with_info=None):
        """The next message as (msg, MessageInfo) (with_info=False: msg), or
        None after `timeout` seconds (None: until the node closes or shutdown)."""
        if self.callback is not None:
            raise Error("invalid_argument", "%s has a callback: its messages arrive through Node.spin()" % self.what)
        if self.sink.queue and time.monotonic() - self._inbound.app_drain > 0.001:
            self._inbound.drain_now()  # keep-last-N: what we return is among the newest (within 1 ms)
        deadline = None if timeout is None else time.monotonic() + timeout
        return self._wait_deliverable(self._deliver, self.with_info if with_info is None else with_info, False,
                                      deadline)

    def receive_payload(self, timeout=None, with_info=None):
        """receive() without the decode: the payload's msgpack bytes."""
        if self.callback is not None:
            raise Error("invalid_argument", "%s has a callback: its messages arrive through Node.spin()" % self.what)
        deadline = None if timeout is None else time.monotonic() + timeout
        return self._wait_deliverable(self._deliver, self.with_info if with_info is None else with_info, True,
                                      deadline)

    def _decoder(self, type_name):
        d = self._decoders.get(type_name)
        if d is None:
            cls = msgs.by_name(type_name) or self.node._class_of(type_name)
            d = self._decoders[type_name] = msgmod.decoder(cls) if cls is not None else msgmod.unpack
        return d

    def _deliver(self, item, with_info, raw):
        frame, receive_ns, info = item
        h = wire.header_of(frame)
        if info is not None and info.type_hash == h.type_hash:
            type_name = info.type_name
        else:
            type_name = self.node._type_name_of(h.sender_id)  # as discovery named it
        payload = self._payload(frame)
        if payload is _DROPPED:
            return _DROPPED
        if raw:
            msg = payload if payload.__class__ is bytes else bytes(payload)
        else:
            try:
                msg = self._decoder(type_name)(payload)
            except DecodeError as e:
                if not e.type_name and type_name:
                    e.named(type_name)
                return self._failed("decode", "%s could not decode a message: %s (further ones are counted in "
                                              "stats().decode_errors)" % (self.what, e))
        if with_info:
            return msg, MessageInfo(h, receive_ns, len(frame), type_name, info.topic if info is not None else "",
                                    info)
        return msg
