# SPDX-License-Identifier: Apache-2.0
"""What one receiving entity holds, as C++ gecko/src/node/sink.cpp: the
queue of frames that arrived for it, checked and counted (SubscriberStats)."""

import collections
import itertools
import sys
import threading
import time

from .. import wire

_SERVICE_FLAGS = wire.FLAG_REQUEST | wire.FLAG_REPLY | wire.FLAG_ERROR
# Sequence numbers a sink counts as lost, at most (PROTOCOL.md 2.2): a budget
# that refills at _GAP_RATE a second up to _GAP_BUDGET; a larger jump is an epoch.
_GAP_RATE = 1 << 24
_GAP_BUDGET = 1 << 26
_monotonic_ns = time.monotonic_ns
_unpack_check = wire.unpack_check
_HEADER_SIZE = wire.HEADER_SIZE
_repeat = itertools.repeat
LITTLE_ENDIAN = sys.byteorder == "little"


def joined_words(frames):
    """The frames, all of one size (a multiple of 8), joined and read as
    native u64 words (frame i's header word k at i * size / 8 + k); None if
    their sizes differ."""
    if len(set(map(len, frames))) != 1:
        return None
    return memoryview(b"".join(frames)).cast("Q")


class SubscriberStats:
    """The counters of a subscriber (C++ gecko::SubscriberStats)."""
    FIELDS = ("received", "bytes", "delivered", "drops", "overwritten", "type_mismatches", "malformed",
              "unsupported_version", "oversized", "decode_errors", "callback_errors", "epochs", "unlisted")

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




class Sink:
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

    def __init__(self, notice, channel, directed, type_name, depth, max_size, what, accept_flags=0,
                 answer_rejected=False, wildcard=False):
        self._notice = notice  # Notices.say
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
        # sender -> [last_sequence, received, first_sequence, start known] (first: the first received, when taken
        # as the start of our stream; start known: it said where our stream began, or that can no longer matter)
        self.publishers = {}
        self._gap_credit = _GAP_BUDGET  # sequence numbers it may still count as lost (_plausible_loss)
        self._gap_credit_at = _monotonic_ns()
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
        n_ok = n_bytes = 0
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
                            if seq == last + 1:  # a gap takes _offer: the loss budget
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
        other batch, which that loop then takes. `words`: joined_words(frames)
        if the caller has it."""
        f = frames[0]
        size = len(f)
        if size < _HEADER_SIZE or size & 7 or not LITTLE_ENDIAN:  # the u64 cast below reads native order
            return False
        mvf, psize, seq, sender, t, th = _unpack_check(f)
        if (mvf != self.fast_mvf or psize != size - _HEADER_SIZE or psize > self.max_size
                or (th != self.type_hash and self.type_hash)):
            return False
        if words is None:
            words = joined_words(frames)
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
            if p is None or seq != p[0] + 1:  # a gap takes the per-frame path: the loss budget
                return False
            before = len(q)
            s = self.stats
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
            self._notice("warning", self.what + ": " + e.reason,
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
        # The frame's kind must be the sink's: a server takes requests, a
        # client replies (error replies among them), a subscriber data frames only.
        want = self.accept_flags
        wrong_kind = (h.flags & want) != want if want else h.flags & _SERVICE_FLAGS
        if wrong_kind:
            if not want and self.wildcard:
                return False  # its key's service traffic: not data, not malformed either
            s.malformed += 1
            kind = "request" if want & wire.FLAG_REQUEST else "reply" if want & wire.FLAG_REPLY else "data frame"
            self._notice("warning", self.what + ": wrong kind",
                         "dropped a frame on %s that is not a %s (flags %d); further ones are counted in stats()"
                         % (self.what, kind, h.flags))
            return False
        if self.type_hash and h.type_hash != self.type_hash:
            s.type_mismatches += 1
            self._notice("error", self.what + ": type mismatch",
                              "%s expects %s but publisher %016x sends another type (type hash %016x); its "
                              "messages are dropped, not decoded (`gecko info` shows both types)" % (
                                  self.what, self.type_name, h.sender_id, h.type_hash))
            return False
        p = self.publishers.get(h.sender_id)
        latched = h.flags & wire.FLAG_LATCHED
        if p is None:
            # Joined mid-stream, as far as we know: earlier messages were not
            # ours, unless the publisher's "start" says otherwise (_start_after).
            p = self._new_publisher(h.sender_id, h.sequence, False)
        elif p[1] == 0 and h.sequence <= p[0]:
            pass  # after our start, yet ours: in flight as the publisher saw us join, or its latched value
        elif h.sequence <= p[0]:
            if latched:
                return False
            s.epochs += 1
            p[0] = h.sequence
            p[3] = True  # a start said later belongs to the earlier stream
        else:
            gap = h.sequence - p[0] - 1
            if gap and not latched:
                if self._plausible_loss(gap):
                    s.drops += gap
                else:
                    s.epochs += 1  # more than its publishers could have sent: a restart or a forgery
            p[0] = h.sequence
        p[1] += 1
        s.received += 1
        s.bytes += size
        s.last_latency_ns = receive_ns - h.send_time_ns
        return True

    def _plausible_loss(self, lost):
        """lock held: whether `lost` more sequence numbers fit the loss budget (taken if so)."""
        now = _monotonic_ns()
        refill = (now - self._gap_credit_at) * _GAP_RATE // 1_000_000_000
        credit = self._gap_credit
        if refill > 0 or credit == _GAP_BUDGET:  # else the fraction of one accrues until the next call
            credit = min(_GAP_BUDGET, credit + refill)
            self._gap_credit_at = now
        if lost > credit:
            self._gap_credit = credit
            return False
        self._gap_credit = credit - lost
        return True

    def _control(self, h, body):
        if h.flags & wire.FLAG_COMPRESSED:
            return
        c = wire.parse_control(body)
        if c is None:
            self.stats.malformed += 1
            self._notice("warning", self.what + ": malformed control",
                              "dropped a control frame on %s that is not a msgpack map with 't'" % self.what)
            return
        t, last = c
        if t == "start":
            # Directed at one subscriber: a key-wide sink of this node sees the others' too.
            if self.directed and h.channel == self.directed:
                self._start_after(h.sender_id, last)
            return
        if t not in ("end", "seq"):
            return
        p = self.publishers.get(h.sender_id)
        if p is None:
            return
        if last > p[0] and self._plausible_loss(last - p[0]):
            self.stats.drops += last - p[0]
            p[0] = last
        if t == "end":
            del self.publishers[h.sender_id]

    def _new_publisher(self, sender, last, start_known):
        if len(self.publishers) >= 1024:
            self.publishers.pop(next(iter(self.publishers)))
        p = self.publishers[sender] = [last, 0, last, start_known]
        return p

    def _start_after(self, sender, after):
        """lock held: publisher `sender` says it sent us every message after
        `after`. Before its first message: gaps count from there. After it:
        the messages between `after` and the first we received, which we took
        for ones sent before we joined, were lost (the link dropped its
        oldest), and are counted now."""
        p = self.publishers.get(sender)
        if p is None:
            self._new_publisher(sender, after, True)
            return
        if p[3]:
            return  # told already (it is said more than once)
        p[3] = True
        if p[1] == 0 or after + 1 >= p[2]:
            return
        lost = p[2] - 1 - after
        if self._plausible_loss(lost):
            self.stats.drops += lost

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
