# SPDX-License-Identifier: Apache-2.0
"""gecko.Node: one session on the network, as C++ gecko::Node (gecko/src/node/).

A node sends every frame through its out-port (a ZeroMQ XPUB bound on
inproc, ipc and tcp) and receives through its in-ports, linked to each
node it receives from on the locator chosen for that pair: inproc in one
process, shared memory (shm, read from C++ publishers) then ipc on one
host, tcp across hosts (gecko/_transport/). A receiving entity subscribes
its channel and announces itself in the subscription bytes, so a publisher
knows its subscribers and their types, replays a latched value, and a
service client knows which servers are reachable.

Threads. One internal thread (the reactor) runs discovery and keeps queues
fresh. A thread that waits for a message (receive(), spin(), call()) reads the
in-port itself when nobody else does (the leader), so a message reaches it
without a hand-off between threads. Callbacks run in spin(), spin_once() or
the thread of spin_in_background(), never on the reactor.

The parts are in gecko/_session/ (the session), gecko/_transport/ (the
links), gecko/pubsub.py and gecko/service.py (the entities).
"""

import os
import sys
import threading
import time

from . import runtime
from ._session.directory import KNOWN, UNSUPPORTED, ChannelInfo, DirectoryEvent, PublisherInfo
from ._session.info import MessageInfo
from ._session.names import check_printable, check_topic, new_id
from ._session.session import Session
from ._session.sink import SubscriberStats
from ._transport import context, speedups
from .errors import Error
from .keywide import KeyWideSubscriber
from .options import Options
from .pubsub import Publisher, Subscriber
from .service import Client, Server

__all__ = ["Node", "Options", "Publisher", "Subscriber", "KeyWideSubscriber", "MessageInfo", "SubscriberStats",
           "ChannelInfo", "PublisherInfo", "DirectoryEvent", "DirectoryWatch", "check_topic", "context", "new_id",
           "speedups"]


class DirectoryWatch:
    """Keeps a Node.watch_directory() callback registered; close() it (or
    leave its with block) to stop."""

    def __init__(self, node, ident):
        self._node = node
        self._id = ident

    def close(self):
        node = self._node
        with node._directory_lock:
            node._directory_watches.pop(self._id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class Node(Session):
    """One session under `key`, named `name`:

        with gecko.Node("dalek", "monitor") as node:
            imu = node.subscriber("imu", gecko.msgs.Imu)
            msg = imu.receive(timeout=1.0)

    Other options as keyword arguments (core="host:port", multicast="G:P",
    multicast_enabled=False, discovery=False, lease=3.0, ipc_directory=...),
    the rest from GECKO_* variables. Close it (or leave the with block): its
    entities are withdrawn, publishers say "end", the core hears "bye".
    """

    def __init__(self, key=None, name=None, options=None, **kwargs):
        self._spinner = None
        self._spinning = False
        o = options or Options.from_env(key=key, name=name, **kwargs)
        if not o.key:
            raise Error("invalid_argument", "gecko.Node needs a key (the robot's name): pass one or set GECKO_KEY")
        check_printable(o.key, "the key", 128)
        if not o.name:
            o.name = os.path.basename(os.path.splitext(os.path.abspath(sys.argv[0] or "python"))[0]) or "python"
        Session.__init__(self, o)

    # ---- context manager ----

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            if not self.closed:
                self.close()
        except Exception:
            pass

    # ---- entities ----

    def publisher(self, topic, msg_type, latched=False, compress_above=None, compression_level=6):
        """A Publisher of `msg_type` (a gecko.msgs class, a define()d class, or a
        type name) on `topic`. compress_above=N: payloads above N bytes travel zlib-compressed."""
        self._check_open("publisher of '%s'" % topic)
        return Publisher(self, topic, msg_type, latched, compress_above, compression_level)

    def subscriber(self, topic, msg_type=None, callback=None, depth=16, latest_only=False, max_message_size=None,
                   with_info=None, spin_us=None):
        """A Subscriber of `topic`. msg_type None: any type, as dicts (a tool).
        A callback runs in spin(): callback(msg), or callback(msg, info) when
        it has two required positional parameters (with_info=True or False
        says which instead). Without a callback, with_info=True makes
        receive() return (msg, MessageInfo).
        spin_us: how long receive() busy-polls shared-memory links before it
        sleeps (None: the node's `spin`, GECKO_SPIN_US, 0 by default)."""
        self._check_open("subscriber of '%s'" % topic)
        s = Subscriber(self, topic, msg_type, callback, depth, latest_only, max_message_size, with_info, spin_us)
        if callback is not None:
            self._dispatchables.append(s)
        return s

    def subscribe_all(self, topics=("*",), types=("*",), callback=None, depth=16, max_message_size=None,
                      with_info=None, spin_us=None):
        """A key-wide subscriber: every message of every topic of the key
        whose name matches one of `topics` and whose type one of `types`
        (each a name, or a glob: '*' any run of characters, '/' included;
        '?' any one character), whoever publishes it, now or later: a
        recorder's, a bridge's, `echo '*'`'s subscription.

            everything = node.subscribe_all()
            msg, info = everything.receive(timeout=1.0)   # info.topic, info.type_name, info.channel

        receive() gives (msg, MessageInfo) (a callback: callback(msg, info)
        when it takes two arguments); a message of a known type decodes as
        its class, any other as dicts. A message waits (up to 2 s) until
        the key's directory names its channel; one it never names is
        dropped and counted (stats().unlisted). Without discovery there is
        no directory: messages come unnamed, and only topics=("*",),
        types=("*",) takes any."""
        self._check_open("subscribe_all")
        s = KeyWideSubscriber(self, topics, types, callback, depth, max_message_size, with_info, spin_us)
        if callback is not None:
            self._dispatchables.append(s)
        return s

    def service(self, name, request_type, reply_type, handler, queue=16):
        """A service server: handler(request) -> reply runs in spin()."""
        self._check_open("service '%s'" % name)
        s = Server(self, name, request_type, reply_type, handler, queue)
        self._dispatchables.append(s)
        return s

    def client(self, name, request_type, reply_type):
        """A client of service `name`: client.call(request, timeout) -> reply."""
        self._check_open("client of '%s'" % name)
        return Client(self, name, request_type, reply_type)

    def connect(self, locator):
        """Links to another node's locator (without discovery, the way to reach it)."""
        self._check_open("Node.connect")
        self._inbound.connect(locator)

    def _check_open(self, what):
        if self.closed:
            raise Error("closed", "%s: node '%s' is closed" % (what, self.name))

    # ---- spinning ----

    def _any_ready(self):
        if self._directory_events:
            return True
        for d in self._dispatchables:
            if d.sink.queue:
                return True
        return False

    def _dispatch_ready(self):
        ran = 0
        if self._directory_events:
            with self._directory_lock:
                notes, self._directory_events = self._directory_events, []
                watches = dict(self._directory_watches)
            for ident, event in notes:
                for wid, callback in watches.items():
                    if ident and ident != wid:
                        continue
                    try:
                        callback(event)
                    except Exception as e:  # a watcher's bug must not stop spin()
                        self.log.error("a directory watch callback raised: %r", e)
                    ran += 1
        for d in list(self._dispatchables):
            if d.sink.queue:
                ran += d._dispatch(64)
        return ran

    def spin_once(self, timeout=0.1):
        """Runs the callbacks of what has arrived, waiting up to `timeout` s
        for something; returns how many ran."""
        if self.closed:
            return 0
        deadline = time.monotonic() + timeout
        while True:
            ran = self._dispatch_ready()
            if ran:
                return ran
            if not self._inbound.wait(self._any_ready, deadline):
                return self._dispatch_ready()

    def spin(self, timeout=None):
        """Runs callbacks until ok() turns false, the node closes, or `timeout` s pass."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while runtime.ok() and not self.closed:
            left = 0.1 if deadline is None else min(0.1, deadline - time.monotonic())
            if left <= 0:
                return
            self.spin_once(left)

    def spin_in_background(self):
        """Runs the callbacks on a thread of the node's own, until close()."""
        if self._spinner is not None:
            return
        self._spinning = True

        def run():
            while self._spinning and not self.closed:
                self.spin_once(0.1)

        self._spinner = threading.Thread(target=run, name="gecko-spin-" + self.name, daemon=True)
        self._spinner.start()

    # ---- discovery ----

    def wait_for_core(self, timeout=5.0):
        """True once a geckocore acknowledged this node, False after `timeout`
        s. Raises gecko.Error ("security") when the core it heard is secured
        and this node has no secret, or the other way round: it never joins
        that core (the error says why and what to do)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and not self.closed:
            if self._discovery is not None and self._discovery.acked:
                return True
            if self._discovery is not None and self._discovery.security_error:
                raise Error("security", self._discovery.security_error)
            time.sleep(0.005)
        return self._discovery is not None and self._discovery.acked

    def core_connected(self):
        return self._discovery is not None and self._discovery.acked

    # ---- the key's channel directory ----

    def watch_directory(self, callback):
        """Calls callback(event) for each change of the key's channel
        directory, first with "added" for every entry that exists, from the
        thread that spins the node (spin(), spin_once(),
        spin_in_background()). event.kind: "added", "removed" or "changed";
        event.channel: a ChannelInfo (topic, service, channel, type_name,
        type_hash, schema, publishers). Returns a DirectoryWatch: close()
        it to stop. Raises gecko.Error ("discovery") without discovery."""
        self._check_open("Node.watch_directory")
        if not self._follow_directory():
            raise Error("discovery", "watch_directory needs discovery (the node runs without a core)")
        with self._directory_lock:
            ident = next(self._directory_watch_ids)
            self._directory_watches[ident] = callback
            # What exists already, to this watch alone (as the core does for a new watcher).
            self._directory_events.extend((ident, DirectoryEvent("added", info))
                                          for info in self._directory.snapshot())
        self._inbound.wake_all()
        return DirectoryWatch(self, ident)

    def directory(self, timeout=2.0):
        """The key's directory now: a ChannelInfo for every topic, then
        every service, by name (waits up to `timeout` s for the core's first
        answer). Raises gecko.Error ("discovery") if none came, the core
        keeps none (an older geckocore), or the node runs without discovery."""
        self._check_open("Node.directory")
        if not self._follow_directory():
            raise Error("discovery", "Node.directory(): node '%s' runs without discovery: there is no directory"
                        % self.name)
        state = self._directory.wait(timeout)
        if state == KNOWN:
            return self._directory.snapshot()
        if state == UNSUPPORTED:
            raise Error("discovery", "the geckocore of key '%s' keeps no channel directory (a version older than "
                                     "this node's)" % self.key)
        raise Error("discovery", "no directory from the geckocore of key '%s' within %d ms (%s)" % (
            self.key, timeout * 1000, self._discovery.finder.describe()))

    # ---- what the node sees ----

    def subscribers_of(self, channel):
        """The announcements of the subscribers of `channel` this node's out-port has heard."""
        return self._outbound.subscribers_of(channel)

    def shm_info(self):
        """The shared-memory in-port's counters: links, links_dropped,
        corrupt, oversized, frames (None if this node reads no shared memory)."""
        port = self._shm
        return port.info() if port is not None else None

    @property
    def unrouted(self):
        """Frames that arrived for no entity of this node."""
        return self._inbound.unrouted

    # ---- closing ----

    def close(self):
        """Withdraws every entity (publishers say "end"), says goodbye to the core."""
        if self.closed:
            return
        self._spinning = False
        self._close(self._join_spinner)

    def _join_spinner(self):
        if self._spinner is not None and self._spinner is not threading.current_thread():
            self._spinner.join(2)
