# SPDX-License-Identifier: Apache-2.0
"""The subscriber's receive path in one process, fed frame by frame from a raw
ZeroMQ PUB socket (inproc): the batch drain and its fast path keep every
counter and case of the one-frame-at-a-time path (keep-last-N, drops, type
mismatches, malformed, compressed, latched), a subscriber takes data frames
only (a key-wide one leaves service frames uncounted), receive_payload() gives the
payload receive() decodes, and the Bytes fast decode agrees with decode()."""

import itertools
import time
import zlib

import pytest
import zmq

from conftest import eventually

import gecko
from gecko import wire
from gecko.msgs import Bytes, Float64, String

_ids = itertools.count()


class Feed:
    """A raw PUB socket the node links to; frame() builds gecko frames."""

    def __init__(self, node, topic, type_name):
        self.node = node
        self.pub = gecko.node.context().socket(zmq.PUB)
        self.pub.setsockopt(zmq.SNDHWM, 0)
        self.endpoint = "inproc://test-receive-path-%d" % next(_ids)
        self.pub.bind(self.endpoint)
        node.connect(self.endpoint)
        self.channel = wire.channel_of(node.key, topic)
        self.type_hash = wire.type_hash(type_name)
        self.sender = gecko.node.new_id()

    def frame(self, payload, seq, flags=0, type_hash=None, sender=None, size=None):
        if flags & wire.FLAG_COMPRESSED:
            body = zlib.compress(payload)
        else:
            body = payload
        return wire.encode_header(self.channel, flags, len(payload) if size is None else size, seq,
                                  self.sender if sender is None else sender, gecko.now_ns() if hasattr(gecko, "now_ns")
                                  else 0, self.type_hash if type_hash is None else type_hash) + body

    def send(self, *frames):
        for f in frames:
            self.pub.send(f)

    def close(self):
        self.pub.close(0)


@pytest.fixture
def node():
    with gecko.Node("recvpath%d" % next(_ids), "sub", discovery=False, transports=("inproc",)) as n:
        yield n


def linked(node, sub, feed, payload):
    """Sends frames until the subscriber receives one (the link is up), returns the next sequence."""
    seq = 1
    while True:
        feed.send(feed.frame(payload, seq))
        seq += 1
        if sub.receive(0.05) is not None:
            return seq


def test_keep_last_n_counts_what_a_batch_overwrites(node):
    sub = node.subscriber("v", Float64, depth=3)
    feed = Feed(node, "v", Float64.__gecko_type__)
    seq = linked(node, sub, feed, gecko.encode(Float64(data=0.0)))
    before = sub.stats()
    feed.send(*[feed.frame(gecko.encode(Float64(data=float(i))), seq + i) for i in range(10)])
    eventually(lambda: sub.stats().received == before.received + 10, 5, "the reactor's drain")
    got = [sub.receive(0).data for _ in range(3)]
    assert got == [7.0, 8.0, 9.0] and sub.receive(0) is None
    s = sub.stats()
    assert (s.overwritten - before.overwritten, s.drops, s.delivered - before.delivered) == (7, 0, 3)
    feed.close()


def test_drops_mismatches_and_malformed_are_counted_and_the_subscriber_goes_on(node):
    sub = node.subscriber("v", Float64, depth=64)
    feed = Feed(node, "v", Float64.__gecko_type__)
    payload = gecko.encode(Float64(data=1.5))
    seq = linked(node, sub, feed, payload)
    feed.send(feed.frame(payload, seq + 5),                                   # 5 lost on the way
              feed.frame(payload, seq + 6, type_hash=wire.type_hash("other.Type")),
              feed.frame(payload, seq + 7)[:40],                              # cut short
              feed.frame(payload, seq + 8, size=len(payload) + 1),           # size mismatch
              feed.frame(b"\xc1", seq + 9),                                   # not msgpack
              feed.frame(payload, seq + 10))
    assert sub.receive(2.0).data == 1.5
    assert sub.receive(2.0).data == 1.5
    assert sub.receive(0.2) is None
    s = sub.stats()
    assert (s.drops, s.type_mismatches, s.malformed, s.decode_errors) == (5 + 2 + 1, 1, 2, 1)
    assert s.delivered == s.received - s.decode_errors
    feed.close()


SERVICE_KINDS = [wire.FLAG_REQUEST, wire.FLAG_REPLY, wire.FLAG_REPLY | wire.FLAG_ERROR, wire.FLAG_ERROR]


@pytest.mark.parametrize("typed", [True, False])
def test_a_subscriber_takes_data_frames_only(node, log_lines, typed):
    # PROTOCOL.md 2.1 step 9: request, reply or error on a topic's channel is malformed, said once
    sub = node.subscriber("v", Float64 if typed else None, depth=64)
    feed = Feed(node, "v", Float64.__gecko_type__)
    payload = gecko.encode(Float64(data=1.5))
    seq = linked(node, sub, feed, payload)
    before = sub.stats()
    feed.send(*[feed.frame(payload, seq + i, flags=f) for i, f in enumerate(SERVICE_KINDS)])
    feed.send(feed.frame(payload, seq + len(SERVICE_KINDS)))
    got = sub.receive(2.0)
    assert (got.data if typed else got["data"]) == 1.5
    s = sub.stats()
    assert s.malformed - before.malformed == len(SERVICE_KINDS)
    assert (s.received - before.received, s.delivered - before.delivered) == (1, 1)
    said = [text for level, text in log_lines if "not a data frame" in text]
    assert said == ["dropped a frame on subscriber of 'v' that is not a data frame (flags %d); further ones are "
                    "counted in stats()" % wire.FLAG_REQUEST], log_lines
    feed.close()


def test_a_key_wide_subscriber_leaves_service_frames_uncounted(node, log_lines):
    everything = node.subscribe_all()  # no discovery: frames taken as they come, unnamed
    feed = Feed(node, "v", Float64.__gecko_type__)
    payload = gecko.encode(Float64(data=1.5))
    seq = 1
    while everything.receive(0.05) is None:  # the link is up
        feed.send(feed.frame(payload, seq))
        seq += 1
    while everything.receive(0) is not None:
        pass
    before = everything.stats()
    feed.send(*[feed.frame(payload, seq + i, flags=f) for i, f in enumerate(SERVICE_KINDS)])
    feed.send(feed.frame(payload, seq + len(SERVICE_KINDS)))
    assert everything.receive(2.0, with_info=False) == {"data": 1.5}
    s = everything.stats()
    assert (s.malformed, s.received - before.received) == (before.malformed, 1)
    assert not [text for _, text in log_lines if "not a data frame" in text], log_lines
    feed.close()


def test_a_server_and_a_client_say_the_wrong_kind_once(node, log_lines):
    server = node.service("svc", Float64, Float64, lambda r: r)
    client = node.client("svc", Float64, Float64)
    payload = gecko.encode(Float64(data=1.5))
    for entity, kind in ((server, "request"), (client, "reply")):
        frames = [wire.encode_header(entity.sink.channel, 0, len(payload), i, 5, 0, wire.type_hash("gecko.msgs.Float64"))
                  + payload for i in (1, 2)]
        entity.sink.offer_batch(frames, 1)
        assert entity.sink.stats.malformed == 2
        said = [text for level, text in log_lines if "that is not a " + kind in text]
        assert said == ["dropped a frame on %s that is not a %s (flags 0); further ones are counted in stats()"
                        % (entity.what, kind)], log_lines


KEY_TWICE = b"\x82\xa4data\xcb\x3f\xf8" + bytes(6) + b"\xa4data\xcb\x3f\xf8" + bytes(6)  # {data: 1.5, data: 1.5}


@pytest.mark.parametrize("key_wide", [False, True])
def test_untyped_reading_refuses_a_key_twice(node, log_lines, key_wide):
    # PROTOCOL.md 3: dicts of an untyped or key-wide subscriber, as C++ wire::Value reads
    sub = node.subscribe_all() if key_wide else node.subscriber("v", None, depth=64)
    feed = Feed(node, "v", Float64.__gecko_type__)
    payload = gecko.encode(Float64(data=1.5))
    seq = 1
    while sub.receive(0.05) is None:  # the link is up
        feed.send(feed.frame(payload, seq))
        seq += 1
    while sub.receive(0) is not None:
        pass
    feed.send(feed.frame(KEY_TWICE, seq), feed.frame(KEY_TWICE, seq + 1), feed.frame(payload, seq + 2))
    assert sub.receive(2.0, with_info=False) == {"data": 1.5}
    assert sub.stats().decode_errors == 2
    what = "subscriber of every topic" if key_wide else "subscriber of 'v'"
    said = [text for level, text in log_lines if "could not decode" in text]
    assert said == ["%s could not decode a message: field 'data' appears twice in the map (further ones are counted "
                    "in stats().decode_errors)" % what], log_lines
    feed.close()


@pytest.mark.parametrize("with_callback", [False, True])
def test_the_decode_error_lines(node, log_lines, with_callback):
    # PROTOCOL.md 2.5, steps 12 and 13: the decoder's error (type and field) in C++'s words
    got = []
    sub = node.subscriber("v", Float64, callback=got.append if with_callback else None, depth=64)
    feed = Feed(node, "v", Float64.__gecko_type__)
    payload = gecko.encode(Float64(data=1.5))
    seq = 1
    while not got and (with_callback or sub.receive(0.05) is None):  # the link is up
        feed.send(feed.frame(payload, seq))
        seq += 1
        if with_callback:
            node.spin_once(0.05)
    feed.send(feed.frame(gecko.encode(String(data="x")), seq),       # {"data": "x"}, said once for both
              feed.frame(b"\x81\xa4data\xa1y", seq + 1),
              feed.frame(b"not zlib", seq + 2, flags=wire.FLAG_COMPRESSED, size=10),
              feed.frame(payload, seq + 3))
    if with_callback:
        eventually(lambda: node.spin_once(0.05) is not None and sub.stats().decode_errors == 3, 10, "the spin")
    else:
        assert sub.receive(2.0) == Float64(data=1.5)
    said = sorted(text for level, text in log_lines if level == "WARNING" and "decode" in text)
    assert said == [
        "dropped a frame on subscriber of 'v': corrupt compressed payload (further ones are counted in "
        "stats().decode_errors)",
        "subscriber of 'v' could not decode a message: gecko.msgs.Float64: field 'data' has msgpack type str, "
        "expected a number (further ones are counted in stats().decode_errors)"], log_lines


def test_a_sequence_jump_beyond_any_plausible_loss_is_an_epoch(node):
    # PROTOCOL.md 2.2: a forger adding 2^32 a frame adds no drops; one adding
    # 2^24 a frame, in a batch or not, at most the budget (2^26) and its refill.
    sub = node.subscriber("v", Float64, depth=4)
    feed = Feed(node, "v", Float64.__gecko_type__)
    payload = gecko.encode(Float64(data=2.5))
    seq = linked(node, sub, feed, payload)
    before = sub.stats()
    feed.send(*[feed.frame(payload, seq + i * (1 << 32)) for i in range(11)])
    eventually(lambda: sub.stats().received == before.received + 11, 5, "the reactor's drain")
    s = sub.stats()
    assert (s.drops, s.epochs - before.epochs) == (0, 10)
    started = time.monotonic()
    base = seq + 11 * (1 << 32)
    feed.send(*[feed.frame(payload, base + i * (1 << 24)) for i in range(100)])
    eventually(lambda: sub.stats().received == s.received + 100, 5, "the reactor's drain")
    t = sub.stats()
    assert 0 < t.drops <= (1 << 26) + (1 << 24) * (time.monotonic() - started + 0.01)
    assert t.epochs > s.epochs + 90
    feed.close()


def test_compressed_and_latched_frames_take_the_full_path(node):
    sub = node.subscriber("s", String, depth=64, with_info=True)
    feed = Feed(node, "s", String.__gecko_type__)
    seq = linked(node, sub, feed, gecko.encode(String(data="x")))
    big = gecko.encode(String(data="y" * 5000))
    feed.send(feed.frame(big, seq, flags=wire.FLAG_COMPRESSED),
              feed.frame(gecko.encode(String(data="l")), seq + 1, flags=wire.FLAG_LATCHED),
              feed.frame(big, seq + 2))
    m, info = sub.receive(2.0)
    assert m.data == "y" * 5000 and info.compressed and info.sequence == seq
    m, info = sub.receive(2.0)
    assert m.data == "l" and info.latched and not info.compressed
    m, info = sub.receive(2.0)
    assert m.data == "y" * 5000 and info.wire_size == wire.HEADER_SIZE + len(big)
    assert info.publisher_id == feed.sender and info.topic == "s"
    feed.close()


def test_receive_payload_gives_what_receive_decodes(node):
    sub = node.subscriber("b", Bytes, depth=64)
    feed = Feed(node, "b", Bytes.__gecko_type__)
    seq = linked(node, sub, feed, gecko.encode(Bytes(data=b"")))
    payloads = [gecko.encode(Bytes(data=bytes(range(n % 256)) * (1 + n // 256))) for n in (0, 64, 255, 300, 70000)]
    feed.send(*[feed.frame(p, seq + i) for i, p in enumerate(payloads)])
    for p in payloads:
        assert sub.receive_payload(2.0) == p
    feed.send(*[feed.frame(p, seq + len(payloads) + i) for i, p in enumerate(payloads)])
    for p in payloads:
        assert sub.receive(2.0) == gecko.decode(Bytes, p)
    feed.close()


def test_two_subscribers_of_a_topic_and_a_callback(node):
    a = node.subscriber("v", Float64, depth=64)
    got = []
    node.subscriber("v", Float64, callback=lambda m: got.append(m.data), depth=64)
    feed = Feed(node, "v", Float64.__gecko_type__)
    seq = linked(node, a, feed, gecko.encode(Float64(data=0.0)))
    feed.send(*[feed.frame(gecko.encode(Float64(data=float(i))), seq + i) for i in range(5)])
    assert [a.receive(2.0).data for _ in range(5)] == [0.0, 1.0, 2.0, 3.0, 4.0]
    eventually(lambda: node.spin_once(0.05) >= 0 and got[-5:] == [0.0, 1.0, 2.0, 3.0, 4.0], 5, "the callback")
    feed.close()


@pytest.mark.parametrize("payload", [
    b"\x81\xa4data\xc4\x03abc",          # as C++ writes it
    b"\x81\xa4data\xc5\x00\x03abc",      # bin 16 for a short one: valid, the slow way
    b"\x81\xa4data\xc4\x04abc",          # cut short
    b"\x81\xa4data\xc4\x02abc",          # trailing byte
    b"\x81\xa4data\xa3abc",              # a str, not a bin
    b"\x82\xa4data\xc4\x01a\xa4data\xc4\x01b",  # a key twice
    b"\x81\xa4datb\xc4\x01a",            # an unknown field
])
def test_the_bytes_fast_decode_agrees_with_decode(payload):
    fast = gecko.message.decoder(Bytes)
    framed = gecko.message.decoder(Bytes, 48)

    def outcome(f, data):
        try:
            return f(data)
        except gecko.DecodeError as e:
            return str(e)
    exact = outcome(lambda d: gecko.decode(Bytes, d), payload)
    assert outcome(fast, payload) == exact
    assert outcome(framed, bytes(48) + payload) == exact


def test_a_whole_batch_and_frame_by_frame_agree(node):
    """Sink.offer_batch checks a streaming batch at once (_offer_run) and
    falls back to its per-frame loop for anything else: random batches of
    one publisher's frames, with gaps, repeats, a second publisher, other
    types, sizes and flags mixed in, give the same counters and queue
    (frames and receive times) as the same frames offered one by one."""
    import random
    rnd = random.Random(12)
    sub_batch = node.subscriber("mix", Bytes, depth=300)
    sub_one = node.subscriber("mix2", Bytes, depth=300)
    feed = Feed(node, "mix", Bytes.__gecko_type__)
    other = gecko.node.new_id()
    payload = gecko.encode(Bytes(bytes(64)))  # 48 + 72 = 120 B frames: the u64 path
    seq = {feed.sender: 0, other: 0}
    for s in (sub_batch.sink, sub_one.sink):  # known publishers, as after their first frame
        for sender in seq:
            s.publishers[sender] = [0, 0, 0, False]
    for round_ in range(300):
        frames = []
        for _ in range(rnd.choice((1, 7, 8, 9, 40, 200))):
            sender = other if rnd.random() < 0.02 else feed.sender
            seq[sender] = max(1, seq[sender] + (1 if rnd.random() < 0.97 else rnd.choice((0, 2, 5, -3))))
            kind = rnd.random()
            if kind < 0.01:
                frames.append(feed.frame(payload, seq[sender], sender=sender, type_hash=1))
            elif kind < 0.02:
                frames.append(feed.frame(payload + b"\x00", seq[sender], sender=sender))
            elif kind < 0.03:
                frames.append(feed.frame(payload, seq[sender], sender=sender, flags=wire.FLAG_LATCHED))
            else:
                frames.append(feed.frame(payload, seq[sender], sender=sender))
        if rnd.random() < 0.5 and len(frames) >= 8:
            base = seq[feed.sender]
            frames = [feed.frame(payload, base + i + 1) for i in range(len(frames))]  # a clean run
            seq[feed.sender] += len(frames)
        ns = 1000 + round_
        sub_batch.sink.offer_batch(frames, ns)
        for f in frames:
            sub_one.sink.offer(f, ns)
    a, b = sub_batch.stats(), sub_one.stats()
    assert repr(a) == repr(b) and a.last_latency_ns == b.last_latency_ns
    assert a.received > 10000 and a.drops > 0 and a.overwritten > 0 and a.epochs > 0
    assert list(sub_batch.sink.queue) == list(sub_one.sink.queue)
    assert list(sub_batch.sink.times) == list(sub_one.sink.times)
    assert sub_batch.sink.publishers == sub_one.sink.publishers


def _start(node, feed, sub, after):
    """A publisher's `start` control (PROTOCOL.md §6), directed at `sub`: every message after `after` was sent to it."""
    body = wire.encode_control("start", after)
    return wire.encode_header(wire.directed_channel(node.key, sub.id), wire.FLAG_CONTROL, len(body), after,
                              feed.sender, 0, 0) + body


def test_a_start_told_after_the_first_messages_counts_those_lost_before_them(node):
    sub = node.subscriber("s", Float64, depth=100)
    feed = Feed(node, "s", Float64.__gecko_type__)
    payload = gecko.encode(Float64(data=1.0))
    # Linked first with another sender, so that every frame below reaches the subscriber.
    linked(node, sub, feed, payload)
    feed.sender = gecko.node.new_id()  # a new publisher: its messages 1..5 were lost on the link
    feed.send(*[feed.frame(payload, s) for s in range(6, 11)])
    eventually(lambda: sub.stats().received >= 5, 5, "the five frames")
    assert sub.stats().drops == 0  # taken for a subscriber that joined mid-stream, so far
    feed.send(_start(node, feed, sub, 0))
    eventually(lambda: sub.stats().drops == 5, 5, "the start's count")
    feed.send(_start(node, feed, sub, 0))  # said again: counted once
    received = sub.stats().received
    feed.send(feed.frame(payload, 11))
    eventually(lambda: sub.stats().received == received + 1, 5, "the next frame")
    assert sub.stats().drops == 5
    # Another subscriber's start (a key-wide sink sees every directed frame of its key) counts nothing.
    feed.sender = gecko.node.new_id()
    feed.send(*[feed.frame(payload, s) for s in range(6, 9)])
    body = wire.encode_control("start", 0)
    feed.send(wire.encode_header(wire.directed_channel(node.key, sub.id + 1), wire.FLAG_CONTROL, len(body), 0,
                                 feed.sender, 0, 0) + body)
    feed.send(feed.frame(payload, 9))
    eventually(lambda: sub.stats().received == received + 5, 5, "the other publisher's frames")
    assert sub.stats().drops == 5
    feed.close()


def test_a_start_told_before_any_message_counts_gaps_from_there(node):
    sub = node.subscriber("b", Float64, depth=100)
    feed = Feed(node, "b", Float64.__gecko_type__)
    payload = gecko.encode(Float64(data=1.0))
    linked(node, sub, feed, payload)
    feed.sender = gecko.node.new_id()
    feed.send(_start(node, feed, sub, 3), feed.frame(payload, 3), feed.frame(payload, 6), feed.frame(payload, 7))
    # 3 was in flight as the publisher saw us join: taken, no epoch; 4 and 5 lost.
    eventually(lambda: sub.stats().drops == 2, 5, "the gap after the start")
    s = sub.stats()
    assert s.epochs == 0
    feed.close()


def test_a_python_publisher_tells_each_subscriber_where_its_stream_began(rig):
    talker, listener = rig.node("talker"), rig.node("listener")
    sub = listener.subscriber("told", Float64, depth=100)
    pub = talker.publisher("told", Float64)
    assert pub.wait_for_subscribers(1, 20)
    # Told before any message: the subscriber knows the publisher, its stream beginning after 0.
    eventually(lambda: pub.id in sub.sink.publishers and sub.sink.publishers[pub.id][3], 20, "the publisher's start")
    assert sub.sink.publishers[pub.id][0] == 0
    for i in range(5):
        pub.publish(Float64(data=float(i)))
    eventually(lambda: sub.stats().received == 5, 20, "the five messages")
    assert sub.stats().drops == 0 and sub.stats().epochs == 0
