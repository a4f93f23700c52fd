# SPDX-License-Identifier: Apache-2.0
"""Services on the node's links, as C++ gecko/src/node/service.cpp.

A server listens on its directed channel ("#e:<server id>"): a client sends
each request there (flag REQUEST, sequence = the request id, type hash of the
request type), and the server answers on the client's directed channel (flag
REPLY, the same sequence; with flag ERROR the payload is a msgpack str giving
the reason). Discovery tells each client its servers and each server its
clients, so both nodes link to each other; a server is ready for a client
when the client's out-port has heard the server's announcement (kind
"server") on the server's directed channel.
"""

import itertools
import threading
import time

from . import message as msgmod
from . import runtime, wire
from .errors import DecodeError, Error
from ._session.codec import encode_payload, resolve_type
from ._session.info import MessageInfo
from ._session.names import check_topic, check_type, new_id
from ._session.sink import Sink


def _types(request_type, reply_type):
    req_cls, req_name = resolve_type(request_type)
    rep_cls, rep_name = resolve_type(reply_type)
    if not req_name or not rep_name:
        raise Error("invalid_argument", "a service needs a request type and a reply type")
    return req_cls, req_name, rep_cls, rep_name


def _decode(cls, payload):
    return msgmod.decode(cls, payload) if cls is not None else msgmod.unpack(payload)


class Server:
    """Answers the requests of service `name`: handler(request) returns the reply
    (an instance of the reply type, a dict of its fields, or msgpack bytes).
    Runs in Node.spin(). An exception in the handler is sent back as an error
    reply, "service 'S' failed: <the exception>"; a request that does not
    decode into the request type (or a gecko.Error "decode" from the handler)
    as "service 'S' could not decode the request: <error>" (PROTOCOL.md 5)."""

    def __init__(self, node, name, request_type, reply_type, handler, queue=16):
        check_topic(name, "the service name")
        self.node = node
        self.name = name
        self.req_cls, self.req_name, self.rep_cls, self.rep_name = _types(request_type, reply_type)
        self.type_name = self.req_name + "->" + self.rep_name
        check_type(self.type_name, "the service type")
        if handler is None:
            raise Error("invalid_argument", "service '%s' needs a handler" % name)
        self.handler = handler
        self.id = new_id()
        self.what = "service '%s'" % name
        self.requests = 0
        self.rejected = 0
        self.sink = Sink(node._notice, wire.directed_channel(node.key, self.id), 0, "", queue, node.options.max_message_size,
                          self.what, accept_flags=wire.FLAG_REQUEST, answer_rejected=True)
        self.announcement = wire.encode_announcement(self.sink.channel, self.id, "server", name, self.type_name,
                                                     node.name, node.session, 0)
        self.reply_hash = wire.type_hash(self.rep_name)
        self.req_hash = wire.type_hash(self.req_name)
        self.closed = False
        node._declare(self.req_cls, self.rep_cls)
        node._add_receiver(self, "server", name, self.type_name)

    def _dispatch(self, budget):
        n = 0
        while n < budget:
            item = self.sink.pop_full()
            if item is None:
                break
            self._answer(item)
            n += 1
        return n

    def _answer(self, item):
        h, body, error, receive_ns, size = item
        if error is not None:
            sender, sequence = body
            return self._reply_error(sender, sequence, "%s rejected a request: %s" % (self.what, error))
        client = h.sender_id
        if h.type_hash != self.req_hash:
            theirs = self.node._type_name_of(client)
            return self._reply_error(client, h.sequence, "%s expects %s but got %s" % (
                self.what, self.req_name, theirs or "another type"))
        payload = body
        if h.flags & wire.FLAG_COMPRESSED:
            try:
                payload = wire.inflate(body, h.payload_size)
            except wire.FrameError:
                return self._reply_error(client, h.sequence, "%s: corrupt compressed request" % self.what)
        try:
            request = _decode(self.req_cls, payload)
        except DecodeError as e:
            if not e.type_name:  # untyped reading: the type is the service's
                e.named(self.req_name)
            return self._reply_error(client, h.sequence, "%s could not decode the request: %s" % (self.what, e))
        try:
            reply = self.handler(request)
            reply_payload = encode_payload(self.rep_cls, self.rep_name, reply)
        except Exception as e:
            # gecko.Error "decode": the handler says the request does not decode, as a C++ handler may
            how = "could not decode the request:" if isinstance(e, Error) and e.code == "decode" else "failed:"
            return self._reply_error(client, h.sequence, "%s %s %s" % (self.what, how, e))
        self.requests += 1
        self._send(client, h.sequence, 0, reply_payload)

    def _reply_error(self, client, sequence, reason):
        self.rejected += 1
        self.node._notice("warning", self.what + ": refused", reason)
        self._send(client, sequence, wire.FLAG_ERROR, msgmod._pack(reason))

    def _send(self, client, sequence, flags, payload):
        if self.node.closed:
            return
        channel = wire.directed_channel(self.node.key, client)
        frame = wire.encode_header(channel, wire.FLAG_REPLY | flags, len(payload), sequence, self.id, time.time_ns(),
                                   self.reply_hash) + payload
        self.node._outbound.send_directed(channel, frame)

    def close(self):
        if self.closed:
            return
        self.closed = True
        self.node._remove_receiver(self)


class Client:
    """Calls service `name`: call(request, timeout) returns the reply, or raises
    gecko.Error: "no_peer" (no server), "timeout", "remote" (the server's
    error, its reason as the message), "type_mismatch", "decode"."""

    def __init__(self, node, name, request_type, reply_type):
        check_topic(name, "the service name")
        self.node = node
        self.name = name
        self.req_cls, self.req_name, self.rep_cls, self.rep_name = _types(request_type, reply_type)
        self.type_name = self.req_name + "->" + self.rep_name
        self.id = new_id()
        self.what = "client of '%s'" % name
        self.sink = Sink(node._notice, wire.directed_channel(node.key, self.id), 0, "", 16, node.options.max_message_size,
                          self.what, accept_flags=wire.FLAG_REPLY)
        self.announcement = wire.encode_announcement(self.sink.channel, self.id, "client", name, self.type_name,
                                                     node.name, node.session, 0)
        self.req_hash = wire.type_hash(self.req_name)
        self.rep_hash = wire.type_hash(self.rep_name)
        self.sequence = 0
        self.servers = []
        self.listed = False
        self.slow = set()
        self._next = itertools.count()
        self._lock = threading.Lock()
        self.calls = 0
        self.closed = False
        node._add_receiver(self, "client", name, self.type_name)

    def _peers_changed(self, peers):
        self.servers = [p["id"] for p in peers]
        self.listed = True

    def ready_servers(self):
        """The servers that will get a request now (their node links to ours)."""
        outbound = self.node._outbound
        outbound.drain_events()
        out = []
        servers = list(self.servers)
        with outbound.changed:
            if not servers:  # without discovery: any server that announced itself here
                for subs in outbound.subscribed.values():
                    for a in subs.values():
                        if a.kind == "server" and a.topic == self.name and a.type == self.type_name:
                            out.append(a.id)
                return out
            for s in servers:
                if wire.directed_channel(self.node.key, s) in outbound.subscribed:
                    out.append(s)
        return out

    def wait_for_server(self, timeout=5.0):
        deadline = time.monotonic() + timeout
        while True:
            if self.ready_servers():
                return True
            if self.closed or time.monotonic() >= deadline or not runtime.ok():
                return False
            with self.node._outbound.changed:
                self.node._outbound.changed.wait(0.005)

    def _pick(self, deadline):
        while True:
            ready = self.ready_servers()
            if ready:
                fast = [s for s in ready if s not in self.slow] or ready
                return fast[next(self._next) % len(fast)]
            if self.listed and not self.servers:
                raise Error("no_peer", "no server for service '%s' under key '%s' (geckocore lists none): is it "
                                       "running under that key?" % (self.name, self.node.key))
            if time.monotonic() >= deadline or self.closed or not runtime.ok():
                raise Error("no_peer", "no server for service '%s' under key '%s' became reachable in time" % (
                    self.name, self.node.key))
            with self.node._outbound.changed:
                self.node._outbound.changed.wait(0.002)

    def call(self, request, timeout=3.0, with_info=False):
        """Sends `request` to one server and returns its reply (with
        with_info: (reply, MessageInfo)). One call at a time per client."""
        deadline = time.monotonic() + timeout
        with self._lock:
            if self.closed or self.node.closed:
                raise Error("closed", "%s: its node is closed" % self.what)
            payload = encode_payload(self.req_cls, self.req_name, request)
            server = self._pick(deadline)
            self.sequence += 1
            rid = self.sequence
            frame = wire.encode_header(wire.directed_channel(self.node.key, server), wire.FLAG_REQUEST,
                                       len(payload), rid, self.id, time.time_ns(), self.req_hash) + payload
            self.calls += 1
            self.node._outbound.send(frame)
            sink = self.sink
            while True:
                item = sink.pop_full()
                while item is not None:
                    h, body, _, receive_ns, size = item
                    if h.sequence == rid and h.sender_id == server:
                        self.slow.discard(server)
                        return self._reply(h, body, receive_ns, size, with_info)
                    item = sink.pop_full()
                if not self.node._inbound.wait(sink.__bool__, deadline):
                    if self.closed or self.node.closed:
                        raise Error("closed", "%s: its node was closed during the call" % self.what)
                    self.slow.add(server)
                    raise Error("timeout", "service '%s' did not answer request %d within %d ms" % (
                        self.name, rid, timeout * 1000))

    def _reply(self, h, body, receive_ns, size, with_info):
        if h.flags & wire.FLAG_ERROR:
            raise Error("remote", wire.error_reason(body))
        if h.type_hash != self.rep_hash:
            raise Error("type_mismatch", "service '%s' replied with another type than %s" % (self.name, self.rep_name))
        payload = body
        if h.flags & wire.FLAG_COMPRESSED:
            try:
                payload = wire.inflate(body, h.payload_size)
            except wire.FrameError:
                raise Error("decode", "service '%s': corrupt compressed reply" % self.name)
        try:
            reply = _decode(self.rep_cls, payload)
        except DecodeError as e:
            raise e.named(self.rep_name)
        if with_info:
            return reply, MessageInfo(h, receive_ns, size, self.rep_name, self.name)
        return reply

    def close(self):
        if self.closed:
            return
        self.closed = True
        self.node._remove_receiver(self)
