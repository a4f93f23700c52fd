# SPDX-License-Identifier: Apache-2.0
"""Every bad-input case of the C++ suite against a Python subscriber: a raw
ZeroMQ peer (an XPUB, so the test knows when the subscriber is there) sends
malformed, truncated, oversized, zip-bomb, wrong-type, wrong-version and
undecodable frames; each is counted under its reason, logged once, and the
subscriber goes on: a good frame after them all is delivered."""

import zlib

import msgpack
import pytest
import zmq

import gecko
from gecko import wire
from gecko.msgs import Float64, String

KEY = "badinput"


@pytest.fixture
def peer():
    ctx = zmq.Context.instance()
    xpub = ctx.socket(zmq.XPUB)
    xpub.setsockopt(zmq.LINGER, 0)
    xpub.bind("tcp://127.0.0.1:*")
    node = gecko.Node(KEY, "py_victim", discovery=False, transports=("tcp",))
    yield node, xpub
    node.close()
    xpub.close()


def wait_subscribed(xpub, channel):
    poller = zmq.Poller()
    poller.register(xpub, zmq.POLLIN)
    want = wire.channel_bytes(channel)
    while poller.poll(5000):
        m = xpub.recv()
        if m[0] == 1 and m[1:] == want:
            return
    raise AssertionError("the subscriber never subscribed")


def frame(channel, payload, seq, type_name="gecko.msgs.Float64", flags=0, size=None, version=2):
    h = bytearray(wire.encode_header(channel, flags, len(payload) if size is None else size, seq, 77, gecko.now_ns(),
                                     wire.type_hash(type_name)))
    h[10] = version
    return bytes(h) + payload


def test_bad_frames_are_counted_and_the_subscriber_goes_on(peer):
    node, xpub = peer
    sub = node.subscriber("value", Float64, depth=64, max_message_size=4096)
    node.connect(xpub.getsockopt_string(zmq.LAST_ENDPOINT))
    ch = wire.channel_of(KEY, "value")
    wait_subscribed(xpub, ch)
    good = gecko.encode(Float64(2.5))
    bad = [
        wire.channel_bytes(ch) + b"XX" + bytes(40),                           # bad magic: malformed
        frame(ch, good, 1)[:30],                                             # truncated header: malformed
        frame(ch, good, 2, size=100),                                        # shorter than it says: malformed
        frame(ch, good, 3, version=3),                                       # another version
        frame(ch, bytes(5000), 4, size=5000),                                # above max_message_size
        frame(ch, zlib.compress(bytes(1 << 20)), 5, flags=wire.FLAG_COMPRESSED, size=100),  # zip bomb
        frame(ch, b"not zlib", 6, flags=wire.FLAG_COMPRESSED, size=10),      # corrupt stream
        frame(ch, gecko.encode(String("x")), 7, type_name="gecko.msgs.String"),  # another type
        frame(ch, msgpack.packb({"data": "a string"}), 8),                   # does not decode as Float64
        frame(ch, b"\xc1", 9),                                               # not msgpack
        frame(ch, good + b"\x00", 10, size=len(good) + 1),                   # trailing bytes
        frame(ch, good, 11, flags=0x80),                                     # unknown flags
    ]
    for f in bad:
        xpub.send(f)
    xpub.send(frame(ch, good, 12))
    got = sub.receive(timeout=5.0)
    while got is not None and got != Float64(2.5):
        got = sub.receive(timeout=5.0)
    assert got == Float64(2.5)
    s = sub.stats()
    assert s.malformed == 4           # bad magic, truncated x2, unknown flags
    assert s.unsupported_version == 1
    assert s.oversized == 1
    assert s.type_mismatches == 1
    assert s.decode_errors == 5       # zip bomb, corrupt stream, wrong field type, not msgpack, trailing bytes
    assert s.delivered == 1


def test_zip_bomb_is_bounded():
    bomb = zlib.compress(bytes(64 << 20))   # 64 MiB of zeros in ~64 KiB
    with pytest.raises(wire.FrameError):
        wire.inflate(bomb, 1000)


def test_a_locator_naming_a_host_is_skipped_with_a_reason(peer, log_lines):
    # Issue 25, item 6: libzmq resolves a host name on its one I/O thread (5 s
    # per try while a DNS server does not answer), which stalls every link of
    # the process. Like the C++ node, the Python node hands libzmq numeric
    # hosts only, whoever gave it the locator (a core, Node.connect).
    node, xpub = peer
    sub = node.subscriber("value", Float64, depth=64)
    for bad in ("tcp://gecko-no-such-host.invalid:5555", "tcp://*:5555", "tcp://127.0.0.1:0", "tcp://::1:5555"):
        node.connect(bad)
    node.connect(xpub.getsockopt_string(zmq.LAST_ENDPOINT))
    ch = wire.channel_of(KEY, "value")
    wait_subscribed(xpub, ch)
    xpub.send(frame(ch, gecko.encode(Float64(4.5)), 1))
    assert sub.receive(timeout=5.0) == Float64(4.5)
    said = [text for level, text in log_lines if "gecko-no-such-host.invalid" in text]
    assert said and "is not a numeric address" in said[0], log_lines
    assert not any(level == "ERROR" for level, _ in log_lines), log_lines
    assert "tcp://gecko-no-such-host.invalid:5555" not in node._inbound.connections


@pytest.mark.parametrize("locator,problem", [
    ("tcp://127.0.0.1:5555", ""), ("tcp://[::1]:5555", ""), ("ipc:///tmp/gecko-x.sock", ""), ("inproc://gecko-1", ""),
    ("tcp://robot.local:5555", "is not a numeric address"), ("tcp://::1:5555", "is not a numeric address"),
    ("tcp://1.2.3:5555", "is not a numeric address"), ("tcp://*:5555", "wildcard"), ("tcp://0.0.0.0:5555", "wildcard"),
    ("tcp://127.0.0.1:0", "1-65535"), ("tcp://127.0.0.1:http", "not a number"), ("tcp://127.0.0.1", "needs a host"),
    ("ipc://" + "/x" * 60, "at most 107"), ("tcp://127.0.0.1:5555 ", "printable"), ("udp://1.2.3.4:5", "unknown scheme"),
    ("", "1-256 bytes"), ("tcp://" + "1" * 300, "1-256 bytes"),
])
def test_locator_problem_is_the_cpp_check(locator, problem):
    from gecko.names import locator_problem
    why = locator_problem(locator)
    assert (problem in why) if problem else why == "", why
