# SPDX-License-Identifier: Apache-2.0
"""gecko.Node: one session on the network, as C++ gecko::Node (gecko/src/node/).

A node has one ZeroMQ XPUB (its out-port: every frame it sends, filtered by
channel, the first 8 bytes of a frame) bound on inproc, ipc and tcp, and one
SUB (its in-port) connected to each node it receives from, on the locator
chosen for that pair (ipc on one host, else tcp). A receiving entity
subscribes its channel and announces itself in the subscription bytes
(wire.encode_announcement); the XPUB reports those, so a publisher knows its
subscribers and their types, replays a latched value, and a service client
knows which servers are reachable.

Threads. One internal thread (the reactor) runs discovery and keeps queues
fresh. A thread that waits for a message (receive(), spin(), call()) reads the
in-port itself when nobody else does (the leader), so a message reaches it
without a hand-off between threads. Callbacks run in spin(), spin_once() or
the thread of spin_in_background(), never on the reactor.
"""

import collections
import inspect
import itertools
import os
import random
import select
import socket
import sys
import threading
import time
import zlib

import msgpack
import zmq

from . import discovery as disc
from . import message as msgmod
from . import env as envmod
from . import runtime, shm, wire
from .errors import DecodeError, Error

# Plain ints: pyzmq's constants are enums, and an enum's & is a Python call.
_NOBLOCK = int(zmq.NOBLOCK)
_POLLIN = int(zmq.POLLIN)
_zmq_poll = zmq.zmq_poll  # zmq_poll([(socket, POLLIN)], 0): ~0.7 us; getsockopt(ZMQ_EVENTS) ~1.6 us (an enum per call)
_BATCH = range(4096)  # frames taken from the in-port per batch, at most (1 + 4096)
_BATCH_SIZE = 4097
_startswith = bytes.startswith
_repeat = itertools.repeat
_LITTLE_ENDIAN = sys.byteorder == "little"


def _joined_words(frames):
    """The frames, all of one size (a multiple of 8), joined and read as
    native u64 words (frame i's header word k at i * size / 8 + k); None if
    their sizes differ."""
    if len(set(map(len, frames))) != 1:
        return None
    return memoryview(b"".join(frames)).cast("Q")


def _load_speedups():
    """The optional compiled helper (python/speedups/, built by the project's
    CMake into build/python/), or None: not on sys.path, GECKO_PYTHON_SPEEDUPS=0,
    or another libzmq than pyzmq's (its drain() takes pyzmq's socket pointers,
    so both must be one library: the only libzmq the process has mapped)."""
    if os.environ.get("GECKO_PYTHON_SPEEDUPS", "1") == "0":
        return None
    try:
        import gecko_speedups
    except ImportError:
        return None
    try:
        with open("/proc/self/maps") as f:
            mapped = {os.path.realpath(line.split(None, 5)[5].strip()) for line in f
                      if "libzmq" in line and len(line.split(None, 5)) == 6}
    except OSError:
        return None
    if mapped != {gecko_speedups.libzmq_path()}:
        return None
    return gecko_speedups


speedups = _load_speedups()
_drain = speedups.drain if speedups is not None else None

_context = None
_context_lock = threading.Lock()


def context():
    """The process's ZeroMQ context (shared by every node)."""
    global _context
    with _context_lock:
        if _context is None:
            _context = zmq.Context()
        return _context


_rng = random.SystemRandom()


def new_id():
    while True:
        v = _rng.getrandbits(64)
        if v:
            return v


def _check_printable(name, what, limit=256):
    if not isinstance(name, str) or not name:
        raise Error("invalid_argument", "%s is empty" % what)
    raw = name.encode("utf-8", "surrogateescape")
    if len(raw) > limit:
        raise Error("invalid_argument", "%s is %d bytes long (at most %d)" % (what, len(raw), limit))
    for i, c in enumerate(raw):
        if c < 0x21 or c > 0x7E:
            raise Error("invalid_argument", "%s has a space or a non-printable byte (0x%02x) at byte %d; names are "
                                            "printable ASCII" % (what, c, i))


def check_topic(name, what="the topic name"):
    _check_printable(name, what)
    if name.startswith("#"):
        raise Error("invalid_argument", "%s starts with '#', which Gecko reserves" % what)


class MessageInfo:
    """What came with a message: sequence, publisher, times, size, flags."""
    __slots__ = ("sequence", "publisher_id", "send_time_ns", "receive_time_ns", "wire_size", "compressed",
                 "latched", "type_hash", "type_name", "topic")

    def __init__(self, h, receive_ns, size, type_name, topic):
        self.sequence = h.sequence
        self.publisher_id = h.sender_id
        self.send_time_ns = h.send_time_ns
        self.receive_time_ns = receive_ns
        self.wire_size = size
        self.compressed = bool(h.flags & wire.FLAG_COMPRESSED)
        self.latched = bool(h.flags & wire.FLAG_LATCHED)
        self.type_hash = h.type_hash
        self.type_name = type_name
        self.topic = topic

    @property
    def latency_ns(self):
        return self.receive_time_ns - self.send_time_ns

    def __repr__(self):
        return "MessageInfo(sequence=%d, publisher_id=%016x, latency_ns=%d, wire_size=%d)" % (
            self.sequence, self.publisher_id, self.latency_ns, self.wire_size)


_SHM_MODES = ("auto", "off", "require")  # NodeOptions::shared_memory, GECKO_SHM


class Options:
    """A node's options; from_env() reads the GECKO_* variables (as C++ NodeOptions::from_env)."""

    def __init__(self, key="", name="", core="", multicast="", interface="", multicast_enabled=True,
                 discovery=True, lease=3.0, find_timeout=1.5, ipc_directory="", tcp_address="0.0.0.0",
                 transports=("inproc", "ipc", "tcp"), peers=(), send_queue=1000, receive_queue=1000,
                 max_message_size=64 << 20, shared_memory="auto", shm_directory="/dev/shm", shm_group=False,
                 spin=0):
        self.key = key
        self.name = name
        self.core = core
        self.interface = interface
        self.multicast_enabled = multicast_enabled
        self.discovery = discovery
        self.lease = lease
        self.find_timeout = find_timeout
        self.ipc_directory = ipc_directory or "/tmp"
        self.tcp_address = tcp_address
        self.transports = tuple(transports)
        self.peers = tuple(peers)
        self.send_queue = send_queue
        self.receive_queue = receive_queue
        self.max_message_size = max_message_size
        if shared_memory not in _SHM_MODES:
            raise Error("invalid_argument", "shared_memory='%s': expected auto, off or require" % shared_memory)
        self.shared_memory = shared_memory  # reading shm:// links of C++ publishers on this host
        self.shm_directory = shm_directory
        self.shm_group = shm_group
        if not 0 <= spin <= 1000000:
            raise Error("invalid_argument", "spin=%r: expected microseconds, 0 to 1000000" % spin)
        self.spin = spin  # us a waiting in-port busy-polls its shm links before it sleeps (GECKO_SPIN_US)
        self.group, self.port = disc.parse_multicast(multicast) if multicast else (disc.DEFAULT_GROUP, disc.DEFAULT_PORT)

    @classmethod
    def from_env(cls, **overrides):
        env = os.environ.get
        o = dict(key=env("GECKO_KEY", ""), name=env("GECKO_NODE", ""), core=env("GECKO_CORE", ""),
                 multicast=env("GECKO_MULTICAST", ""), interface=env("GECKO_INTERFACE", ""),
                 multicast_enabled=not envmod.flag("GECKO_NO_MULTICAST", False),
                 discovery=envmod.flag("GECKO_DISCOVERY", True),
                 ipc_directory=env("GECKO_IPC_DIR", ""), tcp_address=env("GECKO_TCP_ADDRESS", "") or "0.0.0.0")
        if env("GECKO_SHM"):
            v = env("GECKO_SHM").strip().lower()
            o["shared_memory"] = {"0": "off"}.get(v, v)
            if o["shared_memory"] not in _SHM_MODES:
                raise Error("invalid_argument", "GECKO_SHM='%s': expected auto, off or require" % v)
        o["shm_group"] = envmod.flag("GECKO_SHM_GROUP", False)
        if env("GECKO_SPIN_US"):
            try:
                o["spin"] = int(env("GECKO_SPIN_US"))
            except ValueError:
                raise Error("invalid_argument", "GECKO_SPIN_US='%s': expected microseconds, 0 to 1000000"
                            % env("GECKO_SPIN_US"))
        if env("GECKO_TRANSPORTS"):
            o["transports"] = [t.strip() for t in env("GECKO_TRANSPORTS").split(",") if t.strip()]
        for k, v in overrides.items():
            if v is not None:
                o[k] = v
        if o["core"] and not disc.normalize_core_address(o["core"]):
            raise Error("invalid_argument", "GECKO_CORE='%s': not host, host:port or tcp://host:port" % o["core"])
        try:
            return cls(**o)
        except ValueError as e:
            raise Error("invalid_argument", "GECKO_MULTICAST='%s': %s" % (o["multicast"], e))


def _resolve_type(t):
    """(class or None, type name) of what a publisher/subscriber was given:
    a message class, a type name (its class if gecko.msgs knows it), or
    None / "*" / "" for any type."""
    if t is None or t in ("", "*"):
        return None, ""
    if isinstance(t, str):
        from . import msgs
        return msgs.by_name(t), t
    if msgmod.is_message_class(t):
        return t, t.__gecko_type__
    raise Error("invalid_argument", "%r is not a message type (a class from gecko.msgs or gecko.define(), or a "
                                    "type name)" % (t,))


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


def _encode_payload(cls, type_name, msg):
    if isinstance(msg, (bytes, bytearray, memoryview)):
        return bytes(msg)  # already msgpack
    if cls is not None:
        if isinstance(msg, cls):
            return msgmod.encode(msg)
        if isinstance(msg, dict):
            return msgmod.encode(msgmod.from_dict(cls, msg))
        raise Error("invalid_argument", "publisher of %s got a %s" % (type_name, type(msg).__name__))
    return msgpack.packb(msgmod.to_plain(msg), use_bin_type=True)


# ===========================================================================
# Sinks: what one receiving entity holds (C++ gecko/src/node/sink.cpp)
# ===========================================================================

class SubscriberStats:
    """The counters of a subscriber (C++ gecko::SubscriberStats)."""
    FIELDS = ("received", "bytes", "delivered", "drops", "overwritten", "type_mismatches", "malformed",
              "unsupported_version", "oversized", "decode_errors", "callback_errors", "epochs")

    def __init__(self):
        for f in self.FIELDS:
            setattr(self, f, 0)
        self.last_latency_ns = -1

    def copy(self):
        c = SubscriberStats()
        for f in self.FIELDS:
            setattr(c, f, getattr(self, f))
        c.last_latency_ns = self.last_latency_ns
        return c

    def __repr__(self):
        return "SubscriberStats(%s)" % ", ".join("%s=%d" % (f, getattr(self, f)) for f in self.FIELDS)


_MAX_GAP = 1 << 32
_DROPPED = object()  # what Subscriber._deliver returns for a message it could not deliver
_unpack_header = wire.unpack_header
_monotonic = time.monotonic
_unpack_check = wire.unpack_check
_HEADER_SIZE = wire.HEADER_SIZE
# A payload up to this size is sliced out of its frame (a copy, cheaper than a
# memoryview for small frames); a larger one is read in place.
_SLICE_MAX = 4096


class _Sink:
    """The queue and counters of one receiving entity.

    The queue holds the frames as they arrived (bytes), their headers
    checked and counted; the header is read again (one unpack) only when a
    consumer asks for it. A frame refused by a sink that answers refusals
    (a service server) is queued as (frame, error, (sender, sequence)).
    `times` holds each item's receive_ns, in step with `queue` (both
    keep-last-N of the same depth, both changed under `lock`): ints and
    bytes only, so a full queue of 100,000 is nothing to the cyclic garbage
    collector (a tuple per item cost a stream of 64 B messages ~0.27 us a
    frame in collections). pop() and take() give (frame, receive_ns) or
    (frame, receive_ns, error, (sender, sequence))."""

    def __init__(self, node, channel, directed, type_name, depth, max_size, what, accept_flags=0,
                 answer_rejected=False, wildcard=False):
        self.node = node
        self.channel = channel
        self.key_bytes = wire.channel_bytes(channel)[:4]
        self.directed = directed
        self.type_name = type_name
        self.type_hash = wire.type_hash(type_name) if type_name else 0
        self.depth = max(1, depth)
        self.max_size = max_size
        self.what = what
        self.accept_flags = accept_flags
        self.fast_mvf = wire.magic_version_flags(accept_flags)  # offer_batch's fast path: exactly these flags
        self.answer_rejected = answer_rejected
        self.wildcard = wildcard
        self.queue = collections.deque(maxlen=self.depth)  # keep-last-N: a full queue drops its oldest
        self.times = collections.deque(maxlen=self.depth)  # receive_ns of each item of queue
        self.lock = threading.Lock()
        self.stats = SubscriberStats()
        self.publishers = {}  # sender -> [last_sequence, received]
        self._queued = 0      # items _queue() added in the current offer_batch

    def offer(self, frame, receive_ns):
        self.offer_batch((frame,), receive_ns)

    def offer_batch(self, frames, receive_ns, words=None):
        """Queues the frames of one batch from the in-port (io held). The
        common frame (this sink's flags and type, the next sequence of a known
        publisher) takes the fast path: one header unpack, counters summed
        per batch; any other goes through _offer, the one-frame path with
        every check and case. What the full queue (maxlen) dropped is counted
        once at the end: before + queued - after. `words`: the frames
        joined, as u64 (see _offer_run), if the caller has them."""
        q = self.queue
        if len(frames) >= 8 and self._offer_run(frames, receive_ns, words):
            return
        append = q.append
        append_time = self.times.append
        pubs = self.publishers
        want_hash = self.type_hash
        want_mvf = self.fast_mvf
        max_size = self.max_size
        n_ok = n_bytes = drops = 0
        last_t = None
        sender_p = p = None  # the last fast frame's publisher and its entry: a batch is mostly one publisher's
        with self.lock:
            before = len(q)
            self._queued = 0
            for f in frames:
                size = len(f)
                if size >= _HEADER_SIZE:
                    mvf, psize, seq, sender, t, th = _unpack_check(f)
                    if (mvf == want_mvf and psize == size - _HEADER_SIZE and psize <= max_size
                            and (th == want_hash or not want_hash)):
                        if sender != sender_p:
                            p = pubs.get(sender)
                            sender_p = sender
                        if p is not None:
                            last = p[0]
                            if last < seq <= last + _MAX_GAP:
                                drops += seq - last - 1
                                p[0] = seq
                                p[1] += 1
                                n_ok += 1
                                n_bytes += size
                                last_t = t
                                append(f)  # maxlen: a full queue drops its oldest
                                append_time(receive_ns)
                                continue
                self._offer(f, receive_ns)
                sender_p = p = None  # _offer may have added or removed a publisher
            s = self.stats
            if n_ok:
                s.received += n_ok
                s.bytes += n_bytes
                s.drops += drops
                s.last_latency_ns = receive_ns - last_t
            s.overwritten += before + n_ok + self._queued - len(q)

    def _offer_run(self, frames, receive_ns, words=None):
        """offer_batch's streaming case, checked for the whole batch at once
        in C-level calls, no Python code per frame: frames of one size (a
        multiple of 8), joined and read as u64 words, all with the first
        one's header words 1 (magic, version, flags, payload size: this
        sink's flags and a size it takes), 3 (the sender: a known publisher)
        and 5 (the type hash it wants), and sequences (word 2) that follow
        one another from the publisher's next one (or after a gap: drops).
        The same outcome as the per-frame loop; False (nothing done) for any
        other batch, which that loop then takes. `words`: _joined_words(frames)
        if the caller has it."""
        f = frames[0]
        size = len(f)
        if size < _HEADER_SIZE or size & 7 or not _LITTLE_ENDIAN:  # the u64 cast below reads native order
            return False
        mvf, psize, seq, sender, t, th = _unpack_check(f)
        if (mvf != self.fast_mvf or psize != size - _HEADER_SIZE or psize > self.max_size
                or (th != self.type_hash and self.type_hash)):
            return False
        if words is None:
            words = _joined_words(frames)
            if words is None:
                return False
        n = len(frames)
        w = size >> 3
        # a column is constant when it equals itself shifted by one frame (memoryview ==: C, ~2 ns a frame)
        if (words[1:-w:w] != words[1 + w::w] or words[3:-w:w] != words[3 + w::w]
                or words[5:-w:w] != words[5 + w::w] or words[2::w].tolist() != list(range(seq, seq + n))):
            return False
        last_t = _unpack_check(frames[-1])[4]
        q = self.queue
        with self.lock:
            p = self.publishers.get(sender)
            if p is None or not p[0] < seq <= p[0] + _MAX_GAP:
                return False
            before = len(q)
            s = self.stats
            s.drops += seq - p[0] - 1
            p[0] = seq + n - 1
            p[1] += n
            q.extend(frames)  # maxlen: a full queue drops its oldest
            self.times.extend(_repeat(receive_ns, n))
            s.received += n
            s.bytes += n * size
            s.last_latency_ns = receive_ns - last_t
            s.overwritten += before + n - len(q)
        return True

    def _offer(self, frame, receive_ns):
        """lock held: one frame, every check and case (C++ sink.cpp's order)."""
        try:
            h, body = wire.parse_frame(frame, self.max_size)
        except wire.FrameError as e:
            s = self.stats
            if e.reason == "oversized":
                s.oversized += 1
            elif e.reason == "unsupported_version":
                s.unsupported_version += 1
            else:
                s.malformed += 1
            self.node._notice("warning", self.what + ": " + e.reason,
                              "dropped a frame on %s: %s (%d bytes); further ones are counted in stats()" % (
                                  self.what, e, len(frame)))
            if self.answer_rejected:
                peek = wire.peek_sender(frame)
                if peek is not None:
                    self._queue((frame, e, peek), receive_ns)
            return False
        if h.flags & wire.FLAG_CONTROL:
            self._control(h, body)
            return False
        if not self._accept(h, len(frame), receive_ns):
            return False
        self._queue(frame, receive_ns)
        return True

    def _queue(self, item, receive_ns):
        """lock held, within offer_batch (which counts what maxlen drops)."""
        self._queued += 1
        self.queue.append(item)  # maxlen: a full queue drops its oldest
        self.times.append(receive_ns)

    def _pop(self):
        """lock held, queue not empty: the oldest item as pop() gives it."""
        item = self.queue.popleft()
        if item.__class__ is bytes:
            return item, self.times.popleft()
        return item[0], self.times.popleft(), item[1], item[2]

    def _accept(self, h, size, receive_ns):
        s = self.stats
        if (h.flags & self.accept_flags) != self.accept_flags:
            s.malformed += 1
            self.node._notice("warning", self.what + ": wrong kind",
                              "dropped a frame on %s that is not a %s (flags %d)" % (
                                  self.what, "request" if self.accept_flags & wire.FLAG_REQUEST else "reply",
                                  h.flags))
            return False
        if self.type_hash and h.type_hash != self.type_hash:
            s.type_mismatches += 1
            self.node._notice("error", self.what + ": type mismatch",
                              "%s expects %s but publisher %016x sends another type (type hash %016x); its "
                              "messages are dropped, not decoded (`gecko info` shows both types)" % (
                                  self.what, self.type_name, h.sender_id, h.type_hash))
            return False
        p = self.publishers.get(h.sender_id)
        latched = h.flags & wire.FLAG_LATCHED
        if p is None:
            if len(self.publishers) >= 1024:
                self.publishers.pop(next(iter(self.publishers)))
            p = self.publishers[h.sender_id] = [h.sequence, 0]
        elif h.sequence <= p[0]:
            if latched:
                return False
            s.epochs += 1
            p[0] = h.sequence
        elif h.sequence - p[0] > _MAX_GAP:
            s.epochs += 1
            p[0] = h.sequence
        else:
            if not latched:
                s.drops += h.sequence - p[0] - 1
            p[0] = h.sequence
        p[1] += 1
        s.received += 1
        s.bytes += size
        s.last_latency_ns = receive_ns - h.send_time_ns
        return True

    def _control(self, h, body):
        if h.flags & wire.FLAG_COMPRESSED:
            return
        c = wire.parse_control(body)
        if c is None:
            self.stats.malformed += 1
            self.node._notice("warning", self.what + ": malformed control",
                              "dropped a control frame on %s that is not a msgpack map with 't'" % self.what)
            return
        t, last = c
        if t not in ("end", "seq"):
            return
        p = self.publishers.get(h.sender_id)
        if p is None:
            return
        if last > p[0] and last - p[0] <= _MAX_GAP:
            self.stats.drops += last - p[0]
            p[0] = last
        if t == "end":
            del self.publishers[h.sender_id]

    def pop(self):
        """The oldest item, (frame, receive_ns) or a refusal (see the class), or None."""
        with self.lock:
            return self._pop() if self.queue else None

    def take(self):
        """pop() for a consumer that delivers the item: counted delivered at
        once (a consumer that then drops it takes it back)."""
        with self.lock:
            if self.queue:
                self.stats.delivered += 1
                return self._pop()
            return None

    def pop_full(self):
        """pop() as (header, body, error, receive_ns, size): header a
        wire.FrameHeader, body the payload as on the wire; for a refusal
        (None, (sender, sequence), error, receive_ns, size)."""
        item = self.pop()
        if item is None:
            return None
        frame, receive_ns = item[0], item[1]
        if len(item) > 2:
            return None, item[3], item[2], receive_ns, len(frame)
        return wire.header_of(frame), memoryview(frame)[_HEADER_SIZE:], None, receive_ns, len(frame)

    def __bool__(self):
        return bool(self.queue)


# ===========================================================================
# Entities
# ===========================================================================

class Publisher:
    """Publishes messages of one type on one topic. Made by Node.publisher()."""

    def __init__(self, node, topic, msg_type, latched=False, compress_above=None, compression_level=6):
        check_topic(topic)
        self.node = node
        self.topic = topic
        self.cls, self.type_name = _resolve_type(msg_type)
        if not self.type_name:
            raise Error("invalid_argument", "publisher of '%s' needs a type" % topic)
        _check_printable(self.type_name, "the type name")
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
        self._lock = threading.Lock()
        self.what = "publisher of '%s'" % topic
        node._add_sender(self)
        node._register(self, {"id": self.id, "kind": "publisher", "topic": topic, "type": self.type_name,
                              "latched": latched})

    def publish(self, msg):
        """Sends `msg`: an instance of the type, a dict of its fields, or
        msgpack bytes (sent as they are)."""
        payload = _encode_payload(self.cls, self.type_name, msg)
        self.publish_payload(payload)

    def publish_payload(self, payload):
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
            if not self.node._subscriber_count(self.channel):
                self.unheard += 1
            self.messages += 1
            self.bytes += len(frame)
            self.node._send(frame)

    def subscriber_count(self):
        self.node._drain_out_events()
        return self.node._subscriber_count(self.channel)

    def wait_for_subscribers(self, count=1, timeout=5.0):
        """True once `count` subscribers are connected; False after `timeout` s."""
        deadline = time.monotonic() + timeout
        while True:
            if self.subscriber_count() >= count:
                return True
            if self.closed or time.monotonic() >= deadline or not runtime.ok():
                return False
            with self.node._out_changed:
                self.node._out_changed.wait(min(0.01, max(0.0, deadline - time.monotonic())))

    def stats(self):
        self.node._drain_out_events()
        return {"messages": self.messages, "bytes": self.bytes, "compressed": self.compressed,
                "unheard": self.unheard, "subscribers": self.node._subscriber_count(self.channel),
                "mismatched_subscribers": self.mismatched_subscribers}

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
            self._control("seq")

    def _control(self, kind):
        body = wire.encode_control(kind, self.sequence)
        self.node._send(wire.encode_header(self.channel, wire.FLAG_CONTROL, len(body), self.sequence, self.id,
                                           time.time_ns(), 0) + body)

    def close(self):
        with self._lock:
            if self.closed:
                return
            self.closed = True
            if self.sequence:
                self._control("end")
        self.node._remove_sender(self)
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
        self.cls, self.type_name = _resolve_type(msg_type)
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
        self.sink = _Sink(node, wire.channel_of(node.key, topic), wire.directed_channel(node.key, self.id),
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
        self.closed = False
        node._add_sink(self, self.announcement)
        node._register(self, {"id": self.id, "kind": "subscriber", "topic": topic, "type": self.type_name,
                              "latched": False}, watch=True)

    def receive(self, timeout=None, with_info=None):
        """The next message, or None after `timeout` seconds (None: wait until
        the node closes or shutdown). With with_info, (message, MessageInfo)."""
        if self._plain if with_info is None else not with_info and self.callback is None:
            q = self._queue
            if q and _monotonic() - self.node._app_drain <= 0.001:
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
        node = self.node
        if sink.queue and time.monotonic() - node._app_drain > 0.001:
            node._drain_now()  # keep-last-N: what we return is among the newest (within 1 ms)
        deliver = self._deliver
        take = sink.take
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
        while True:
            out = self._first_deliverable(take, deliver, with_info, raw)
            if out is not _DROPPED:
                return out
            if self.closed or not node._wait(sink.__bool__, deadline, self.spin):
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
        flags = frame[11]
        if flags & wire.FLAG_COMPRESSED:
            try:
                payload = wire.inflate(memoryview(frame)[_HEADER_SIZE:], _unpack_header(frame)[4])
            except wire.FrameError:
                return self._failed("inflate", "dropped a frame on %s: corrupt compressed payload (further ones are "
                                               "counted in stats().decode_errors)" % self.what)
        elif size <= _SLICE_MAX:
            payload = frame[_HEADER_SIZE:]
        else:
            payload = memoryview(frame)[_HEADER_SIZE:]
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

    def close(self):
        if self.closed:
            return
        self.closed = True
        self.node._remove_sink(self, self.announcement)
        self.node._unregister(self)


# ===========================================================================
# The node
# ===========================================================================

class Node:
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
        o = options or Options.from_env(key=key, name=name, **kwargs)
        if not o.key:
            raise Error("invalid_argument", "gecko.Node needs a key (the robot's name): pass one or set GECKO_KEY")
        _check_printable(o.key, "the key", 128)
        if not o.name:
            o.name = os.path.basename(os.path.splitext(os.path.abspath(__import__("sys").argv[0] or "python"))[0]) or "python"
        self.options = o
        self.key = o.key
        self.name = o.name
        self.log = runtime.logger(o.name)
        self.session = new_id()
        self.secret = new_id()
        self.closed = False
        self._ctx = context()
        self.host = socket.gethostname()
        self.host_id = disc.host_id()
        self.pid = os.getpid()
        self.pid_ns = disc.read_link("/proc/self/ns/pid")

        # out-port
        self._out_lock = threading.Lock()
        self._out_changed = threading.Condition(threading.Lock())
        self._xpub = self._ctx.socket(zmq.XPUB)
        self._xpub.setsockopt(zmq.XPUB_VERBOSER, 1)
        self._xpub.setsockopt(zmq.SNDHWM, o.send_queue)
        self._xpub.setsockopt(zmq.LINGER, 200)
        self.locators = []
        endpoints = ["inproc://gecko-%016x" % self.session]
        if "ipc" in o.transports:
            path = os.path.join(o.ipc_directory, "gecko-%s-%s-%016x.sock" % (
                _sanitize(o.key, 12), _sanitize(o.name, 16), self.session))
            if len(path) > 107:
                path = os.path.join(o.ipc_directory, "gecko-%016x.sock" % self.session)
            if len(path) <= 107:
                endpoints.append("ipc://" + path)
        if "tcp" in o.transports:
            endpoints.append("tcp://%s:*" % o.tcp_address)
        for e in endpoints:
            try:
                self._xpub.bind(e)
            except zmq.ZMQError as err:
                self._xpub.close(0)
                raise Error("transport", "cannot bind the node's data socket on '%s': %s" % (e, err))
            self.locators.append(self._xpub.getsockopt_string(zmq.LAST_ENDPOINT))
        self._xpub_fd = self._xpub.getsockopt(zmq.FD)
        self._subscribed = {}   # channel -> {entity id: Announcement}
        self._wildcards = {}    # entity id -> Announcement
        self._senders = {}      # channel -> [Publisher]
        self._held = []         # (channel, frame, until): directed frames waiting for their receiver
        self._mismatch_said = set()

        # in-port
        self._io = threading.Lock()
        self._sub = self._ctx.socket(zmq.SUB)
        self._sub.setsockopt(zmq.RCVHWM, o.receive_queue)
        self._sub.setsockopt(zmq.MAXMSGSIZE, o.max_message_size + wire.HEADER_SIZE)
        self._sub.setsockopt(zmq.LINGER, 0)
        self._sub_ready = [(self._sub, _POLLIN)]  # for _zmq_poll(..., 0): does a frame wait?
        self._sub_address = self._sub.underlying  # the libzmq socket, for gecko_speedups.drain()
        self._sub_poller = zmq.Poller()
        self._sub_poller.register(self._sub, zmq.POLLIN)
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)
        runtime._register_wake(self._wake_w)
        self._sub_poller.register(self._wake_r, zmq.POLLIN)
        # The shared-memory in-port: frames from C++ publishers on this host.
        self._shm = None
        self._shm_why = "GECKO_SHM=off" if o.shared_memory == "off" else ""
        self._shm_fallbacks = {}  # shm locator -> (the locators after it, its link)
        if o.shared_memory != "off":
            try:
                self._shm = shm.ShmInPort(o.shm_directory, o.max_message_size + wire.HEADER_SIZE,
                                          lambda level, reason, text: getattr(self.log, level)(text), o.shm_group)
                self._sub_poller.register(self._shm.fd, zmq.POLLIN)
            except OSError as e:
                self._shm_why = "this node cannot read shared memory: %s" % (e.strerror or e)
        self._routes = {}       # channel (its 8 bytes, as a frame starts) -> [sink owner]
        self._wildcard_routes = []
        self._connections = {}  # locator -> users
        self._pending = collections.deque()  # operations on the in-port, for the io holder
        self._followers = threading.Condition(threading.Lock())
        self._generation = 0
        self._n_followers = 0   # threads waiting on _followers (under its lock)
        self._app_drain = 0.0
        self.unrouted = 0

        # entities and links
        self._entities = {}
        self._dispatchables = []
        self._directory = {}    # remote entity id -> (type, node, session)
        self._links = {}        # session -> {"locator":, "users": set()}
        self._wants = {}        # local entity -> set(sessions)
        self._notices_said = {}
        self._reactor_posts = collections.deque()
        self._reactor_wake_r, self._reactor_wake_w = os.pipe()
        os.set_blocking(self._reactor_wake_r, False)
        os.set_blocking(self._reactor_wake_w, False)
        runtime._register_wake(self._reactor_wake_w)
        self._spinner = None
        self._spinning = False

        self._connect(self.locators[0])  # our own subscribers hear our own publishers (inproc)
        for p in o.peers:
            self._connect(p)
        self._discovery = None
        if o.discovery:
            self._discovery = disc.DiscoveryClient(o, self._ctx, self.log, self.locators, self.session,
                                                   self.secret, on_error=self._on_core_error)
        self._reactor = threading.Thread(target=self._reactor_loop, name="gecko-reactor-" + o.name, daemon=True)
        self._reactor.start()

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

    def service(self, name, request_type, reply_type, handler, queue=16):
        """A service server: handler(request) -> reply runs in spin()."""
        from .service import Server
        self._check_open("service '%s'" % name)
        s = Server(self, name, request_type, reply_type, handler, queue)
        self._dispatchables.append(s)
        return s

    def client(self, name, request_type, reply_type):
        """A client of service `name`: client.call(request, timeout) -> reply."""
        from .service import Client
        self._check_open("client of '%s'" % name)
        return Client(self, name, request_type, reply_type)

    def connect(self, locator):
        """Links to another node's locator (without discovery, the way to reach it)."""
        self._check_open("Node.connect")
        self._connect(locator)

    def _check_open(self, what):
        if self.closed:
            raise Error("closed", "%s: node '%s' is closed" % (what, self.name))

    # ---- spinning ----

    def _any_ready(self):
        for d in self._dispatchables:
            if d.sink.queue:
                return True
        return False

    def spin_once(self, timeout=0.1):
        """Runs the callbacks of what has arrived, waiting up to `timeout` s
        for something; returns how many ran."""
        if self.closed:
            return 0
        deadline = time.monotonic() + timeout
        while True:
            ran = 0
            for d in list(self._dispatchables):
                if d.sink.queue:
                    ran += d._dispatch(64)
            if ran:
                return ran
            if not self._wait(self._any_ready, deadline):
                ran = 0
                for d in list(self._dispatchables):
                    if d.sink.queue:
                        ran += d._dispatch(64)
                return ran

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
        """True once a geckocore acknowledged this node."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and not self.closed:
            if self._discovery is not None and self._discovery.acked:
                return True
            time.sleep(0.005)
        return self._discovery is not None and self._discovery.acked

    def core_connected(self):
        return self._discovery is not None and self._discovery.acked

    def _post(self, fn):
        self._reactor_posts.append(fn)
        try:
            os.write(self._reactor_wake_w, b"x")
        except OSError:
            pass

    def _register(self, entity, reg, watch=False):
        self._entities[entity.id] = entity
        if self._discovery is None:
            return
        ident = entity.id

        def do():
            self._discovery.add(reg)
            if watch:
                self._discovery.watch(ident, lambda peers: self._on_peers(ident, peers))
        self._post(do)

    def _unregister(self, entity):
        self._entities.pop(entity.id, None)
        if self._dispatchables and entity in self._dispatchables:
            self._dispatchables.remove(entity)
        if self.closed or self._discovery is None:
            return
        ident = entity.id

        def do():
            self._discovery.remove(ident)
            for session in self._wants.pop(ident, ()):
                link = self._links.get(session)
                if link is not None:
                    link["users"].discard(ident)
        self._post(do)

    def _on_core_error(self, ident, code, text):
        self._notice("error", text, text)

    def _on_peers(self, entity, peers):
        """Reactor thread: one link per remote node an entity deals with."""
        sessions = set()
        for p in peers:
            self._directory[p["id"]] = (p.get("type", ""), p.get("node", ""), p.get("session", 0))
            session = p.get("session") or 0
            if not session:
                continue
            sessions.add(session)
            link = self._links.setdefault(session, {"locator": "", "users": set(), "unlisted": 0.0})
            link["users"].add(entity)
            link["unlisted"] = 0.0
            if link["locator"] or session == self.session:
                continue
            locators = self._usable_locators(p)
            if not locators:
                self._notice("warning", "no usable locator", "node '%s' on host %s offers no locator this node can "
                             "use; its messages will not reach us" % (p.get("node"), p.get("host")))
                continue
            link["locator"] = locators[0]
            self._connect(locators[0], locators[1:], link)
        for session in self._wants.get(entity, set()) - sessions:
            link = self._links.get(session)
            if link is not None:
                link["users"].discard(entity)
        self._wants[entity] = sessions
        e = self._entities.get(entity)
        if e is not None and hasattr(e, "_peers_changed"):
            e._peers_changed(peers)

    def _usable_locators(self, p):
        """A peer's locators this node can link through, best first
        (PROTOCOL.md 7, "Choosing a locator"): the same process: inproc; the
        same host: shm, then ipc; any host: tcp."""
        there_id = p.get("hostid") or ""
        same_host = there_id == self.host_id if there_id else p.get("host") == self.host
        same_process = same_host and p.get("pid") == self.pid and p.get("pidns") == self.pid_ns
        locs = [l for l in p.get("locators", []) if isinstance(l, str)]
        mode = self.options.shared_memory
        order = [("inproc", same_process), ("shm", same_host and mode != "off"),
                 ("ipc", same_host and mode != "require"), ("tcp", not same_host or mode != "require")]
        out = [l for scheme, allowed in order if allowed for l in locs if l.startswith(scheme + "://")]
        if same_host and not same_process and mode == "require" and not any(l.startswith("shm://") for l in out):
            self._notice("error", "shm required", "node '%s' offers no shared-memory locator, and shared memory is "
                         "required here (GECKO_SHM=require): its messages will not reach this node" % p.get("node"))
        return out

    def _prune_links(self, now):
        for session, link in list(self._links.items()):
            if link["users"]:
                continue
            if not link["unlisted"]:
                link["unlisted"] = now
                continue
            if now - link["unlisted"] < 0.2:
                continue
            if link["locator"]:
                self._disconnect(link["locator"])
            for ident in [i for i, d in self._directory.items() if d[2] == session]:
                del self._directory[ident]
            del self._links[session]

    def _type_name_of(self, sender):
        d = self._directory.get(sender)
        return d[0] if d else ""

    # ---- the out-port ----

    def _send(self, frame):
        with self._out_lock:
            if self.closed and self._xpub is None:
                return False
            try:
                self._xpub.send(frame, zmq.NOBLOCK, copy=len(frame) < 65536)
            except zmq.Again:
                return False
            except zmq.ZMQError:
                return False
        return True

    def _send_directed(self, channel, frame, hold=5.0):
        """Sends now if the receiver's subscription arrived, else holds the frame
        until it does (a reply racing the client's subscription), for `hold` s."""
        self._drain_out_events()
        with self._out_changed:
            if channel not in self._subscribed:
                self._held.append((channel, frame, time.monotonic() + hold))
                del self._held[:-256]
                return
        self._send(frame)

    def _add_sender(self, pub):
        with self._out_changed:
            self._senders.setdefault(pub.channel, []).append(pub)

    def _remove_sender(self, pub):
        with self._out_changed:
            lst = self._senders.get(pub.channel, [])
            if pub in lst:
                lst.remove(pub)

    def _subscriber_count(self, channel):
        n = len(self._subscribed.get(channel, ()))
        if self._wildcards:
            k = wire.key_part(channel)
            n += sum(1 for a in self._wildcards.values() if wire.key_part(a.channel) == k)
        return n

    def subscribers_of(self, channel):
        self._drain_out_events()
        with self._out_changed:
            return list(self._subscribed.get(channel, {}).values())

    def _drain_out_events(self):
        events = []
        with self._out_lock:
            if self._xpub is None:
                return
            for _ in range(4096):
                try:
                    m = self._xpub.recv(zmq.NOBLOCK)
                except zmq.Again:
                    break
                except zmq.ZMQError:
                    break
                if len(m) > 1:
                    a = wire.parse_announcement(m[1:])
                    if a is not None:
                        events.append((m[0] == 1, a))
        if not events:
            return
        replays = []
        with self._out_changed:
            for joined, a in events:
                self._on_out_event(joined, a, replays)
            if self._held:
                now = time.monotonic()
                kept = []
                for channel, frame, until in self._held:
                    if channel in self._subscribed:
                        replays.append(frame)
                    elif until > now:
                        kept.append((channel, frame, until))
                self._held = kept
            self._out_changed.notify_all()
        for frame in replays:
            self._send(frame)

    def _on_out_event(self, joined, a, replays):
        if a.wildcard:
            if joined:
                self._wildcards[a.id] = a
            else:
                self._wildcards.pop(a.id, None)
            if joined:
                for channel, pubs in self._senders.items():
                    if wire.key_part(channel) == wire.key_part(a.channel):
                        for p in pubs:
                            self._replay(p, a, replays)
            return
        subs = self._subscribed.setdefault(a.channel, {})
        if joined:
            subs[a.id] = a
        else:
            subs.pop(a.id, None)
            if not subs:
                del self._subscribed[a.channel]
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

    def _replay(self, p, a, replays):
        if not p.latched or p.last_frame is None:
            return
        f = bytearray(p.last_frame)
        f[0:8] = wire.channel_bytes(wire.directed_channel(self.key, a.id))
        f[11] |= wire.FLAG_LATCHED
        replays.append(bytes(f))

    # ---- the in-port ----

    def _run_io(self, op):
        """Runs `op` on the in-port now if free, else queues it for its holder."""
        if self._io.acquire(blocking=False):
            try:
                self._apply_pending()
                op()
            finally:
                self._io.release()
        else:
            self._pending.append(op)
            try:
                os.write(self._wake_w, b"x")
            except OSError:
                pass

    def _apply_pending(self):
        while self._pending and self._sub is not None:
            try:
                op = self._pending.popleft()
            except IndexError:
                return
            op()

    def _connect(self, locator, fallbacks=(), link=None):
        """Links the in-port to `locator`; if it does not open, to the first
        of `fallbacks` that does (`link`, the peer's entry in _links, then
        says which)."""
        self._run_io(lambda: self._connect_now(locator, fallbacks, link))

    def _connect_now(self, locator, fallbacks=(), link=None):
        """io held."""
        if self._sub is None:
            return
        n = self._connections.get(locator, 0)
        if n:
            self._connections[locator] = n + 1
            return
        if locator.startswith("shm://"):
            why = self._shm.connect(locator) if self._shm is not None else self._shm_why
            if not why:
                self._connections[locator] = 1
                self._shm_fallbacks[locator] = (tuple(fallbacks), link)
                return
            nxt = fallbacks[0] if fallbacks else ""
            self._notice("warning", "cannot use shm", "cannot use %s (%s); using %s instead" % (
                locator, why, nxt or "no other locator: its messages will not reach this node"))
            if nxt:
                if link is not None and link.get("locator") == locator:
                    link["locator"] = nxt
                self._connect_now(nxt, fallbacks[1:], link)
            return
        self._connections[locator] = 1
        try:
            self._sub.connect(locator)
        except zmq.ZMQError as e:
            del self._connections[locator]
            self._notice("warning", "unusable locator", "cannot connect to another node at '%s': %s; its "
                         "messages will not reach this node" % (locator, e))

    def _disconnect(self, locator):
        def op():
            if self._connections.pop(locator, None) and self._sub is not None:
                if locator.startswith("shm://"):
                    self._shm_fallbacks.pop(locator, None)
                    if self._shm is not None:
                        self._shm.disconnect(locator)
                    return
                try:
                    self._sub.disconnect(locator)
                except zmq.ZMQError:
                    pass
        self._run_io(op)

    def _shm_links_dropped(self):
        """io held: the shm port dropped links (publisher gone, segment
        corrupt): forget them, and link through the next locator while the
        peer is still wanted."""
        dropped, self._shm.dropped_locators = self._shm.dropped_locators, []
        for locator in dropped:
            self._connections.pop(locator, None)
            fallbacks, link = self._shm_fallbacks.pop(locator, ((), None))
            if fallbacks and link is not None and link.get("locator") == locator and link.get("users"):
                link["locator"] = fallbacks[0]
                self._connect_now(fallbacks[0], fallbacks[1:], link)

    def shm_info(self):
        """The shared-memory in-port's counters: links, links_dropped,
        corrupt, oversized, frames (None if this node reads no shared memory)."""
        port = self._shm  # read without the in-port (a leader may hold it 100 ms): counters, a copy
        return port.info() if port is not None else None

    def _add_sink(self, owner, announcement):
        sink = owner.sink
        if sink.wildcard:
            self._wildcard_routes.append(owner)
        else:
            for c in (sink.channel, sink.directed):
                if c:
                    self._routes.setdefault(wire.channel_bytes(c), []).append(owner)

        def op():
            if self._sub is None:
                return
            self._sub.setsockopt(zmq.SUBSCRIBE, wire.channel_bytes(sink.channel)[:4 if sink.wildcard else 8])
            if announcement:
                self._sub.setsockopt(zmq.SUBSCRIBE, announcement)
            if sink.directed:
                self._sub.setsockopt(zmq.SUBSCRIBE, wire.channel_bytes(sink.directed))
            if self._shm is not None:
                self._shm.subscribe(sink.channel, sink.wildcard, announcement or b"")
                if sink.directed:
                    self._shm.subscribe(sink.directed, False, b"")
        self._run_io(op)

    def _remove_sink(self, owner, announcement):
        sink = owner.sink
        for c in (sink.channel, sink.directed):
            if not c:
                continue
            k = wire.channel_bytes(c)
            lst = self._routes.get(k)
            if lst and owner in lst:
                lst.remove(owner)
                if not lst:
                    del self._routes[k]
        if owner in self._wildcard_routes:
            self._wildcard_routes.remove(owner)

        def op():
            if self._sub is None:
                return
            if announcement:
                self._sub.setsockopt(zmq.UNSUBSCRIBE, announcement)
            self._sub.setsockopt(zmq.UNSUBSCRIBE, wire.channel_bytes(sink.channel)[:4 if sink.wildcard else 8])
            if sink.directed:
                self._sub.setsockopt(zmq.UNSUBSCRIBE, wire.channel_bytes(sink.directed))
            if self._shm is not None:
                self._shm.unsubscribe(sink.channel, sink.wildcard, announcement or b"")
                if sink.directed:
                    self._shm.unsubscribe(sink.directed, False, b"")
        self._run_io(op)

    def _drain_sub(self, readable=False):
        """io held: moves every frame waiting on the in-port into its sinks;
        `readable`: a poll just said a frame waits. True if any came.

        One batch, one clock read, then the frames grouped by channel and
        handed to each sink at once (one lock per sink and batch). The end of
        a batch costs something either way in pyzmq: a zero-timeout poll
        ~0.7 us, a recv that finds nothing raises zmq.Again, ~4 us. So: poll
        once (unless a poll just said a frame waits), take one, poll once
        more, and if more wait, take frames until zmq.Again: two polls for a
        lone frame (lockstep), a flat cost for a burst (streaming). With the
        compiled helper (gecko_speedups), one call of its drain() instead:
        ~0.1 us a frame against ~0.2, no poll, no exception."""
        sub = self._sub
        if sub is None:
            return False
        if _drain is not None:  # the compiled helper: recv until none waits, in one call
            frames = _drain(self._sub_address, _BATCH_SIZE)
        else:
            ask = self._sub_ready
            frames = []
            if readable or _zmq_poll(ask, 0):
                append = frames.append
                recv = sub.recv
                try:
                    append(recv(_NOBLOCK))
                    if _zmq_poll(ask, 0):
                        for _ in _BATCH:
                            append(recv(_NOBLOCK))
                except zmq.ZMQError:  # Again: drained, or closing
                    pass
        shm_port = self._shm
        if shm_port is not None:
            got = shm_port.take(_BATCH_SIZE) if shm_port.links else None
            if shm_port.dropped_locators:
                self._shm_links_dropped()
            if got:
                frames = got if not frames else frames + got
        if not frames:
            return False
        now = time.time_ns()
        routes = self._routes
        first = frames[0][:8]
        words = None
        if len(frames) >= 8 and len(frames[0]) >= _HEADER_SIZE and not len(frames[0]) & 7 and _LITTLE_ENDIAN:
            # a stream of frames of one size: one channel if word 0 is the same in all (see _Sink._offer_run)
            words = _joined_words(frames)
            w = len(frames[0]) >> 3
            if words is not None and words[0:-w:w] != words[w::w]:
                words = None
        if words is not None or (len(first) == 8 and (len(frames) == 1 or all(map(_startswith, frames,
                                                                                   _repeat(first))))):
            groups = ((first, frames),)
        else:
            by = {}
            for f in frames:
                k = f[:8]
                g = by.get(k)
                if g is None:
                    by[k] = [f]
                else:
                    g.append(f)
            groups = by.items()
        wildcards = self._wildcard_routes
        for k, group in groups:
            owners = routes.get(k) if len(k) == 8 else None
            routed = False
            if owners:
                for o in owners:
                    o.sink.offer_batch(group, now, words)
                routed = True
            if wildcards and len(k) == 8:
                kp = k[:4]
                for o in wildcards:
                    if o.sink.key_bytes == kp:
                        o.sink.offer_batch(group, now, words)
                        routed = True
            if not routed:
                self.unrouted += len(group)
        return True

    def _delivered(self):
        """Tells waiting followers that queues changed (or the leader left).
        Without followers, an increment: the common single-thread case pays
        no Condition. A follower counts itself in before it reads the
        generation, so either it sees this increment or this sees it."""
        self._generation += 1
        if self._n_followers:
            with self._followers:
                self._followers.notify_all()

    def _drain_now(self):
        if self._io.acquire(blocking=False):
            try:
                self._apply_pending()
                if self._drain_sub():
                    self._delivered()
                self._app_drain = time.monotonic()
            finally:
                self._io.release()

    def _wait(self, ready, deadline, spin=None):
        """Waits until ready() (cheap, thread-safe), `deadline` (monotonic; None:
        none), close or shutdown. Leads the in-port when nobody else does;
        `spin` (s): busy-polls shared memory that long first (None: the node's)."""
        while True:
            if ready():
                return True
            if self.closed or not runtime.ok():
                return False
            now = time.monotonic()
            if deadline is not None and now >= deadline:
                return False
            if self._io.acquire(blocking=False):
                try:
                    got = self._lead(ready, deadline, spin)
                finally:
                    self._io.release()
                self._delivered()
                if got:
                    return True
                continue
            with self._followers:
                self._n_followers += 1
                try:
                    seen = self._generation
                    left = 0.05 if deadline is None else min(0.05, deadline - now)
                    self._followers.wait_for(lambda: self._generation != seen or self.closed, max(left, 0))
                finally:
                    self._n_followers -= 1

    def _lead(self, ready, deadline, spin=None):
        """io held: waits on the in-port (and the wake pipe) and drains it
        until ready(), the deadline, close or shutdown. It waits first: a
        poll returns at once when a frame is already there, so asking
        beforehand would only add a system call to every wait."""
        poll = self._sub_poller.poll
        sub = self._sub
        wake = self._wake_r
        shm_port = self._shm
        bell = shm_port.fd if shm_port is not None else -1
        if spin is None:
            spin = self.options.spin * 1e-6
        while True:
            self._apply_pending()
            if deadline is None:
                ms = 100  # wakes now and then for ok() and close
            else:
                left = deadline - _monotonic()
                ms = max(1, int(min(0.1, left) * 1000 + 0.999)) if left > 0 else 0
            # shm: arm the links (publishers ring the doorbell), then look once more
            shm_links = shm_port is not None and bool(shm_port.links)
            if shm_links and ms and ((spin and shm_port.spin(spin)) or not shm_port.prepare_wait()):
                ms = 0
            readable = False
            for sock, _ in poll(ms):
                if sock is sub:
                    readable = True
                elif sock == wake:
                    try:
                        os.read(wake, 4096)
                    except OSError:
                        pass
                elif sock == bell:
                    shm_port.drain_bell()
                    shm_links = True
            if (readable or shm_links) and self._drain_sub(readable):
                self._delivered()
            self._app_drain = _monotonic()
            if ready():
                return True
            if self.closed or not runtime.ok():
                return False
            if deadline is not None and _monotonic() >= deadline:
                return False

    # ---- the reactor ----

    def _run_reactor_posts(self):
        while self._reactor_posts:
            fn = self._reactor_posts.popleft()
            try:
                fn()
            except Exception as e:
                self.log.error("internal: %r", e)

    def _reactor_loop(self):
        poller = zmq.Poller()
        poller.register(self._reactor_wake_r, zmq.POLLIN)
        registered = set()
        next_tick = 0.0
        next_stats = time.monotonic() + 3.0
        last_totals = {}
        while True:
            self._run_reactor_posts()
            if self.closed:
                self._run_reactor_posts()  # what close() posted (the bye) before it set closed
                break
            now = time.monotonic()
            wake = now + 0.05
            d = self._discovery
            if d is not None:
                want = set(d.sockets())
                for s in registered - want:
                    try:
                        poller.unregister(s)
                    except KeyError:
                        pass
                for s in want - registered:
                    poller.register(s, zmq.POLLIN)
                registered = want
                try:
                    wake = min(wake, d.service(now))
                except Exception as e:
                    self.log.error("discovery: %r", e)
            self._drain_out_events()
            if now - self._app_drain > 0.01 and self._io.acquire(blocking=False):
                try:
                    self._apply_pending()
                    if self._drain_sub():
                        self._delivered()
                finally:
                    self._io.release()
            if not runtime.ok():
                self._wake_all()
            if now >= next_tick:
                next_tick = now + 0.1
                self._prune_links(now)
                for e in list(self._entities.values()):
                    if isinstance(e, Publisher):
                        e._tick()
            if d is not None and now >= next_stats:
                next_stats = now + 3.0
                d.report(self._stats_report(last_totals), self._links_report())
            timeout = max(0.0, min(wake, next_tick) - time.monotonic())
            try:
                events = poller.poll(max(1, int(timeout * 1000)))
            except zmq.ZMQError:
                events = []
            for s, _ in events:
                if s == self._reactor_wake_r:
                    try:
                        os.read(self._reactor_wake_r, 4096)
                    except OSError:
                        pass

    def _stats_report(self, last):
        out = []
        for e in list(self._entities.values()):
            if isinstance(e, Publisher):
                m, b, drops = e.messages, e.bytes, 0
            elif isinstance(e, Subscriber):
                s = e.sink.stats
                m, b, drops = s.received, s.bytes, s.drops
            else:
                continue
            pm, pb = last.get(e.id, (m, b))
            last[e.id] = (m, b)
            out.append({"id": e.id, "messages_per_s": (m - pm) / 3.0, "bytes_per_s": (b - pb) / 3.0,
                        "drops": drops, "latency_ns": -1, "unheard": 0})
        return out

    def _links_report(self):
        """Reactor thread: (session, scheme) of each other node this one has a
        link to in use, as C++ NodeImpl::report_stats (DISCOVERY.md 2.7):
        `gecko nodes` shows them as RECEIVES FROM, `gecko info` as links."""
        connected = self._connections.copy()  # the io holder changes it: one copy (atomic under the GIL)
        return [(session, link["locator"].split("://", 1)[0]) for session, link in self._links.items()
                if session != self.session and link["locator"] and link["locator"] in connected]

    def _wake_all(self):
        try:
            os.write(self._wake_w, b"x")
        except OSError:
            pass
        self._delivered()

    def _notice(self, level, reason, text):
        """Logs `text` once per reason (further ones are counted where they happen)."""
        if reason in self._notices_said:
            return
        self._notices_said[reason] = True
        getattr(self.log, level)(text)

    # ---- closing ----

    def close(self):
        """Withdraws every entity (publishers say "end"), says goodbye to the core."""
        if self.closed:
            return
        for e in list(self._entities.values()):
            if isinstance(e, Publisher):
                e.close()
        # The bye is posted before `closed` is set: the reactor runs what was
        # posted once more when it sees `closed`, so the bye is never skipped.
        d = self._discovery
        if d is not None:
            self._reactor_posts.append(d.bye)
        self._spinning = False
        self.closed = True
        self._wake_all()
        if self._spinner is not None and self._spinner is not threading.current_thread():
            self._spinner.join(2)
        try:
            os.write(self._reactor_wake_w, b"x")
        except OSError:
            pass
        if self._reactor is not threading.current_thread():
            self._reactor.join(2)
        runtime._unregister_wake(self._wake_w)
        runtime._unregister_wake(self._reactor_wake_w)
        with self._io:
            self._sub.close(0)
            self._sub = None
            if self._shm is not None:
                self._shm.close()
        with self._out_lock:
            self._xpub.close(200)
            self._xpub = None
        for l in self.locators:
            if l.startswith("ipc://"):
                try:
                    os.unlink(l[6:])
                except OSError:
                    pass
        for fd in (self._wake_r, self._wake_w, self._reactor_wake_r, self._reactor_wake_w):
            try:
                os.close(fd)
            except OSError:
                pass


def _sanitize(text, limit):
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in text)[:limit]
