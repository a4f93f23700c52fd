# SPDX-License-Identifier: Apache-2.0
"""ZeroMQ links (inproc, ipc, tcp), as C++ gecko/src/transport/zmq_transport.cpp.

The out-port is one XPUB bound on inproc, ipc and tcp: every frame it sends
goes to the subscribers of its channel (a frame's first 8 bytes). A
receiving entity subscribes its channel and announces itself in the
subscription bytes (wire.encode_announcement); the XPUB reports those
(events()), so a publisher knows its subscribers and their types.

The in-port is one SUB connected to each node it receives from. Its take()
is the receive path's innermost step: see there for what each call costs.
"""

import os
import threading
from time import monotonic as _monotonic

import zmq

from .. import wire
from ..errors import Error
from ..names import locator_problem
from ..security import server_public_for

# Plain ints: pyzmq's constants are enums, and an enum's & is a Python call.
_NOBLOCK = int(zmq.NOBLOCK)
_POLLIN = int(zmq.POLLIN)
_zmq_poll = zmq.zmq_poll  # zmq_poll([(socket, POLLIN)], 0): ~0.7 us; getsockopt(ZMQ_EVENTS) ~1.6 us (an enum per call)


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


# A draft option of libzmq 4.3 that Debian's libzmq accepts; older pyzmq has no name for it.
_ZAP_ENFORCE_DOMAIN = int(getattr(zmq, "ZAP_ENFORCE_DOMAIN", 93))


def secure(sock, curve, server, peer_fingerprint=""):
    """Makes `sock` CURVE with the key's pairs (security.CurveKeys), before
    it binds or connects (docs/SECURITY.md §5): a `server` (it binds) takes
    subkey 1's pair and asks the process's ZAP handler about every client;
    a client takes subkey 2's pair and expects subkey 1's public key. A
    None `curve` (no secret) leaves it plain. During a rotation a client
    expects the server key of the secret `peer_fingerprint` names
    (security.server_public_for), set again before each connect()."""
    if curve is None:
        return
    if server:
        sock.setsockopt(zmq.CURVE_SERVER, 1)
        sock.setsockopt(zmq.CURVE_SECRETKEY, curve.server_secret)
        sock.setsockopt(zmq.CURVE_PUBLICKEY, curve.server_public)
        # Without a ZAP answer CURVE admits any client key: ask, and refuse when nobody answers.
        sock.setsockopt(zmq.ZAP_DOMAIN, curve.zap_domain.encode())
        sock.setsockopt(_ZAP_ENFORCE_DOMAIN, 1)
    else:
        sock.setsockopt(zmq.CURVE_SERVERKEY, server_public_for(curve, peer_fingerprint))
        sock.setsockopt(zmq.CURVE_PUBLICKEY, curve.client_public)
        sock.setsockopt(zmq.CURVE_SECRETKEY, curve.client_secret)


def new_poller(handles):
    """A poller of ZeroMQ sockets and file descriptors for reading (a
    ZeroMQ socket can be polled only by ZeroMQ)."""
    poller = zmq.Poller()
    for h in handles:
        poller.register(h, zmq.POLLIN)
    return poller


def _sanitize(text, limit):
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in text)[:limit]


def _acknowledged_every(mark):
    """How many frames the reader of a queue told the high-water mark `mark`
    reads before it tells the writer so (libzmq's low-water mark, pipe.cpp
    compute_lwm): at every multiple of it, counted from the queue's start."""
    return mark - 1024 if mark > 2048 else (mark + 1) // 2


def _lowest_mark_after(mark):
    """The lowest mark a queue told `mark` can be given later and still never
    be full while its reader has emptied it (_SendBudget); None: no lower one."""
    if mark <= 0 or mark > 2048:
        return None
    # Its reader may owe up to acknowledged_every(mark) - 1 frames; told m,
    # it tells the writer within the next acknowledged_every(m) frames it
    # reads, which must fit under m with them: m // 2 >= owed.
    return max(1, 2 * (_acknowledged_every(mark) - 1))


_RAISE_AFTER = 10.0  # s without an accounted frame before the mark may rise (once peers came)


class _SendBudget:
    """Holds what the XPUB queues for each peer to `nbytes` (C++
    gecko/src/transport/zmq_send_budget.hpp, where the reasoning is): ZeroMQ
    counts a peer's queue in frames, so before each frame the high-water mark
    is set to the budget divided by the largest frame ZeroMQ may still hold.
    Frames of more than nbytes / frames bytes are sent tracked (pyzmq's
    MessageTracker says when ZeroMQ let go of them).

    A lower mark is not always safe. ZeroMQ's writer counts a queue as the
    frames it wrote less the frames its reader last said it read, and the
    reader says so only at every multiple of _acknowledged_every(the mark it
    was told): a queue its reader has emptied may still count up to that
    many less one. Told a mark that count reaches, the queue is full for the
    writer, and the first frame it refuses stops it for good (libzmq 4.3
    waits for word from a reader that has nothing left to read): that peer
    hears nothing from this node again. A reader owes only for frames it
    read, so once a peer came, the mark never goes below
    _lowest_mark_after(any mark a frame was sent under since: sent())
    (`floor`), which leaves one step of the reader's acknowledgement at most;
    it does not rise while accounted frames keep coming, and once it rose
    (back to the cap, after _RAISE_AFTER s without them) it does not come
    down again. The price: a node that sent its peers small frames under the
    full mark before its first large one keeps nearly that mark; its peers'
    queues are then bounded in frames, as without the budget, not in bytes."""

    def __init__(self, nbytes, frames):
        self.bytes = nbytes
        self.initial = frames                       # ZMQ_SNDHWM without the budget (0: no bound)
        self.cap = frames if frames > 0 else 2 ** 31 - 1
        self.untracked = nbytes // self.cap         # frames this small need no accounting
        self.mark = self.cap
        self._held = []                             # [(size, tracker)] of tracked frames
        self.peers = False                          # a peer subscribed: its queue may owe acknowledgements
        self.floor = 1                              # the lowest mark that cannot stop a peer's queue
        self._told = frames                         # ZMQ_SNDHWM as last set (0: no bound)
        self._accounted_at = float("-inf")          # when the last accounted frame was sent (time.monotonic())

    def accounted(self, size):
        return self.bytes > 0 and size > self.untracked

    def mark_for(self, size, now):
        """The mark the socket must have to send a frame of `size` bytes."""
        if self.bytes > 0 and (size > self.untracked or self.mark < self.cap):
            self._held = held = [h for h in self._held if not h[1].done]
            largest = max(size, self.untracked, 1, max((h[0] for h in held), default=0))
            wanted = min(self.cap, max(1, self.bytes // largest))
            if self.peers and wanted > self.mark:
                # Up only back to the cap, after a quiet while, and only from
                # a mark whose queues' debts fit under the cap's: told a
                # higher mark, a reader may owe what it owed plus the new
                # mark's worth. Then never down again (told() sets the floor).
                quiet = now - self._accounted_at >= _RAISE_AFTER
                fits = self.mark - 1 + _acknowledged_every(self.cap) - 1 < self.cap
                wanted = self.cap if quiet and fits else self.mark
            if size > self.untracked:
                self._accounted_at = now
            wanted = max(wanted, self.floor)
            # Down at once; up by a quarter at least, or back to the cap.
            if wanted < self.mark or wanted == self.cap or wanted >= self.mark + self.mark // 4 + 1:
                self.mark = wanted
        return self._sockopt()

    def _sockopt(self):
        return 0 if self.mark == self.cap and self.initial <= 0 else self.mark

    def told(self, value):
        """The socket's ZMQ_SNDHWM was set to `value` (every queue hears it)."""
        raised = value <= 0 or 0 < self._told < value
        self._told = value
        if self.peers and raised:
            self.floor = self.cap  # frames sent before may be read under it

    def sent(self):
        """A frame was sent under the mark last told: a reader may owe for it."""
        if self.peers and self.floor < self.cap:
            lowest = _lowest_mark_after(self._told)
            self.floor = self.cap if lowest is None else max(self.floor, min(lowest, self.cap))

    def heard(self):
        """A peer subscribed; returns the mark the socket must have now (never
        lower than before). One frame at most reached a pipe ZeroMQ attached
        during the last send before it was heard: it owes one."""
        if not self.peers:
            self.peers = True
            self.floor = max(self.floor, min(2, self.cap))
            self.mark = max(self.mark, self.floor)
        return self._sockopt()

    def hold(self, size, tracker):
        self._held.append((size, tracker))


class ZmqOutPort:
    """The node's out-port. Not thread-safe: the node serialises it."""

    def __init__(self, options, session, curve=None):
        o = options
        self._budget = _SendBudget(o.send_queue_bytes, o.send_queue)
        self._mark = o.send_queue
        self._xpub = context().socket(zmq.XPUB)
        self._xpub.setsockopt(zmq.XPUB_VERBOSER, 1)
        self._xpub.setsockopt(zmq.SNDHWM, o.send_queue)
        self._xpub.setsockopt(zmq.LINGER, 200)
        secure(self._xpub, curve, server=True)
        self.locators = []  # the first is inproc: the node's own subscribers hear its publishers through it
        endpoints = ["inproc://gecko-%016x" % session]
        if "ipc" in o.transports:
            path = os.path.join(o.ipc_directory, "gecko-%s-%s-%016x.sock" % (
                _sanitize(o.key, 12), _sanitize(o.name, 16), session))
            if len(path) > 107:
                path = os.path.join(o.ipc_directory, "gecko-%016x.sock" % session)
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

    def send(self, frame):
        """False if the frame was not sent (the port closed). A subscriber
        whose queue is at the mark does not get it; it counts the gap as drops."""
        size = len(frame)
        budget = self._budget
        mark = budget.mark_for(size, _monotonic())
        try:
            pending = 0
            if mark != budget.initial or mark != self._mark or not budget.peers:
                # Asking for events attaches the connections accepted since the
                # mark was last set (they have the initial mark: set it again),
                # and tells of a first peer (how low the mark may go: _SendBudget).
                pending = self._xpub.getsockopt(zmq.EVENTS) & _POLLIN
                if pending and not budget.peers:
                    mark = budget.heard()
            if mark != self._mark or (pending and mark != budget.initial):
                self._xpub.setsockopt(zmq.SNDHWM, mark)
                self._mark = mark
                budget.told(mark)
            if budget.accounted(size):
                budget.hold(size, self._xpub.send(zmq.Frame(frame, track=True, copy=False), _NOBLOCK, copy=False,
                                                  track=True))
            else:
                self._xpub.send(frame, _NOBLOCK, copy=size < 65536)
            budget.sent()
        except zmq.ZMQError:  # closing
            return False
        return True

    def events(self, limit=4096):
        """[(joined, wire.Announcement)]: subscribers that came or went since the last call."""
        out = []
        recv = self._xpub.recv
        heard = False
        for _ in range(limit):
            try:
                m = recv(_NOBLOCK)
            except zmq.ZMQError:  # Again: none left, or closing
                break
            heard = True
            if len(m) > 1:
                a = wire.parse_announcement(m[1:])
                if a is not None:
                    out.append((m[0] == 1, a))
        if heard:
            mark = self._budget.heard()
            if mark != self._budget.initial or mark != self._mark:
                # A connection that subscribed is attached by now, with the initial mark.
                try:
                    self._xpub.setsockopt(zmq.SNDHWM, mark)
                except zmq.ZMQError:  # closing
                    return out
                self._mark = mark
                self._budget.told(mark)
        return out

    def close(self):
        self._xpub.close(200)
        for l in self.locators:
            if l.startswith("ipc://"):
                try:
                    os.unlink(l[6:])
                except OSError:
                    pass


class ZmqInPort:
    """The node's ZeroMQ in-port (the transport seam's in-port: _transport/__init__.py).
    No prepare_wait(): a poll of the socket returns at once when a frame waits."""

    schemes = ("inproc", "ipc", "tcp")
    dropped_locators = ()  # a ZeroMQ link never drops itself: the socket reconnects

    def __init__(self, options, curve=None):
        o = options
        self._sub = context().socket(zmq.SUB)
        self._curve = curve
        secure(self._sub, curve, server=False)
        self._sub.setsockopt(zmq.RCVHWM, o.receive_queue)
        self._sub.setsockopt(zmq.MAXMSGSIZE, o.max_message_size + wire.HEADER_SIZE)
        self._sub.setsockopt(zmq.LINGER, 0)
        self._ready = [(self._sub, _POLLIN)]  # for _zmq_poll(..., 0): does a frame wait?
        self._address = self._sub.underlying  # the libzmq socket, for gecko_speedups.drain()
        self._readable = False                # a poll just said a frame waits
        self.handle = self._sub

    def connect(self, locator, peer_fingerprint=""):
        """Links to `locator`: "" if linked, else why not. `peer_fingerprint`:
        the secret the peer's sockets use, when it named one (a rotation)."""
        why = locator_problem(locator)  # it came from another node, or a core
        if not why and locator.partition("://")[0] not in self.schemes:
            why = "not a ZeroMQ locator"
        if why:
            return why
        try:
            if self._curve is not None:  # libzmq takes the server key when it connects
                self._sub.setsockopt(zmq.CURVE_SERVERKEY, server_public_for(self._curve, peer_fingerprint))
            self._sub.connect(locator)
        except zmq.ZMQError as e:
            return str(e)
        return ""

    def disconnect(self, locator):
        try:
            self._sub.disconnect(locator)
        except zmq.ZMQError:
            pass

    def subscribe(self, channel, wildcard, announcement):
        self._sub.setsockopt(zmq.SUBSCRIBE, wire.channel_bytes(channel)[:4 if wildcard else 8])
        if announcement:
            self._sub.setsockopt(zmq.SUBSCRIBE, announcement)

    def unsubscribe(self, channel, wildcard, announcement):
        if announcement:
            self._sub.setsockopt(zmq.UNSUBSCRIBE, announcement)
        self._sub.setsockopt(zmq.UNSUBSCRIBE, wire.channel_bytes(channel)[:4 if wildcard else 8])

    def take_dropped(self):
        return ()

    def fired(self):
        self._readable = True

    def take(self, limit):
        """Every frame waiting, up to `limit`. The end of a batch costs
        something either way in pyzmq: a zero-timeout poll ~0.7 us, a recv
        that finds nothing raises zmq.Again, ~4 us. So: poll once (unless a
        poll just said a frame waits), take one, poll once more, and if more
        wait, take frames until zmq.Again: two polls for a lone frame
        (lockstep), a flat cost for a burst (streaming). With the compiled
        helper (gecko_speedups), one call of its drain() instead: ~0.1 us a
        frame against ~0.2, no poll, no exception."""
        readable, self._readable = self._readable, False
        if _drain is not None:
            return _drain(self._address, limit)
        frames = []
        ask = self._ready
        if readable or _zmq_poll(ask, 0):
            append = frames.append
            recv = self._sub.recv
            try:
                append(recv(_NOBLOCK))
                if _zmq_poll(ask, 0):
                    for _ in range(limit - 1):
                        append(recv(_NOBLOCK))
            except zmq.ZMQError:  # Again: drained, or closing
                pass
        return frames

    def info(self):
        return None

    def close(self):
        self._sub.close(0)
