# SPDX-License-Identifier: Apache-2.0
"""The frame header, hashes, announcements and control frames, against the
C++ definitions (gecko/wire/include/gecko/wire/*.hpp)."""

import struct
import zlib

import pytest

from gecko import wire


def test_fnv_reference_values():
    # http://www.isthe.com/chongo/tech/comp/fnv/ test vectors
    assert wire.fnv1a32("") == 0x811C9DC5
    assert wire.fnv1a32("a") == 0xE40C292C
    assert wire.fnv1a32("foobar") == 0xBF9CF968
    assert wire.fnv1a64("") == 0xCBF29CE484222325
    assert wire.fnv1a64("a") == 0xAF63DC4C8601EC8C
    assert wire.fnv1a64("foobar") == 0x85944171F73967E8


def test_channel_layout():
    c = wire.channel_of("dalek", "imu")
    b = wire.channel_bytes(c)
    assert b[:4] == struct.pack("<I", wire.fnv1a32("dalek"))
    assert b[4:] == struct.pack("<I", wire.fnv1a32("imu"))
    assert wire.key_part(c) == wire.fnv1a32("dalek")
    assert wire.directed_name(0xAB) == "#e:00000000000000ab"
    assert wire.type_hash("gecko.msgs.Imu") == wire.fnv1a64("gecko.msgs.Imu")


def frame(payload=b"\x80", **kw):
    args = dict(channel=wire.channel_of("k", "t"), payload=payload, sequence=7, sender_id=9,
                send_time_ns=123, type_hash_=wire.type_hash("gecko.msgs.Empty"))
    args.update(kw)
    return wire.encode_frame(**args)


def test_header_layout():
    f = frame()
    assert len(f) == 49 and f[8:10] == b"GK" and f[10] == 2 and f[11] == 0
    assert struct.unpack_from("<I", f, 12)[0] == 1
    assert struct.unpack_from("<QQqQ", f, 16) == (7, 9, 123, wire.type_hash("gecko.msgs.Empty"))
    h, body = wire.parse_frame(f, 1 << 20)
    assert (h.sequence, h.sender_id, h.send_time_ns, h.payload_size, bytes(body)) == (7, 9, 123, 1, b"\x80")
    assert wire.peek_sender(f) == (9, 7)


@pytest.mark.parametrize("mutate,reason", [
    (lambda f: f[:10], "truncated"),
    (lambda f: f[:8] + b"XX" + f[10:], "bad_magic"),
    (lambda f: f[:10] + b"\x03" + f[11:], "unsupported_version"),
    (lambda f: f[:40], "truncated"),
    (lambda f: f[:11] + b"\x80" + f[12:], "unknown_flags"),
    (lambda f: f + b"\x00", "size_mismatch"),
    (lambda f: f[:12] + struct.pack("<I", 5) + f[16:], "truncated"),
    (lambda f: f[:12] + struct.pack("<I", 1 << 30) + f[16:], "oversized"),
])
def test_frame_errors(mutate, reason):
    with pytest.raises(wire.FrameError) as e:
        wire.parse_frame(mutate(frame()), 1 << 20)
    assert e.value.reason == reason


def test_compressed_and_zip_bomb():
    payload = b"\xc4\xff" + bytes(255)
    f = frame(payload=payload, compress_level=6)
    h, body = wire.parse_frame(f, 1 << 20)
    assert h.flags & wire.FLAG_COMPRESSED and h.payload_size == len(payload)
    assert wire.inflate(body, h.payload_size) == payload
    with pytest.raises(wire.FrameError):  # inflates to more than declared
        wire.inflate(zlib.compress(bytes(1 << 20)), 1000)
    with pytest.raises(wire.FrameError):  # less than declared
        wire.inflate(zlib.compress(b"abc"), 4)
    with pytest.raises(wire.FrameError):  # not zlib
        wire.inflate(b"not zlib", 4)


def test_announcement_round_trip():
    c = wire.channel_of("k", "imu")
    a = wire.encode_announcement(c, 42, "subscriber", "imu", "gecko.msgs.Imu", "n", 5, 16)
    assert a[:8] == wire.channel_bytes(c) and a[8:10] == b"\x00\x01"
    p = wire.parse_announcement(a)
    assert (p.channel, p.id, p.kind, p.topic, p.type, p.node, p.session, p.depth, p.wildcard) == (
        c, 42, "subscriber", "imu", "gecko.msgs.Imu", "n", 5, 16, False)
    w = wire.parse_announcement(wire.encode_announcement(c, 43, "subscriber", "*", "", "n", 5, 1, wildcard=True))
    assert w.wildcard and w.channel == wire.key_part(c) and w.type == "*"
    assert wire.parse_announcement(wire.channel_bytes(c)) is None
    assert wire.parse_announcement(frame()[:30]) is None


def test_control():
    assert wire.parse_control(wire.encode_control("end", 12)) == ("end", 12)
    assert wire.parse_control(b"\x81\xa1x\x01") is None
