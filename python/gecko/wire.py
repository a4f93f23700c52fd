# SPDX-License-Identifier: Apache-2.0
"""What travels on the wire, byte for byte: the data frame (version 2), the
names a frame carries as numbers (channel, type hash), subscriber
announcements and in-band control frames.

The C++ definitions are the reference: gecko/wire/include/gecko/wire/
(frame.hpp, hash.hpp, announcement.hpp, control.hpp); docs/PROTOCOL.md is the
specification. All integers of the frame header are little-endian:

    offset size field
    0      8    channel: fnv1a32(key) | fnv1a32(topic) << 32
    8      2    magic "GK"
    10     1    version (2)
    11     1    flags (FLAG_*)
    12     4    payload size before compression (u32)
    16     8    sequence (u64): per publisher from 1; services: the request id
    24     8    sender id (u64): the publishing, calling or answering entity
    32     8    send time, ns since the Unix epoch (i64)
    40     8    type hash: fnv1a64(type name) (0 for control frames)
    48     ...  payload: msgpack, or a zlib stream of it when FLAG_COMPRESSED
"""

import struct
import zlib
from collections import namedtuple

import msgpack

FRAME_VERSION = 2
HEADER_SIZE = 48
MAGIC = b"GK"

FLAG_COMPRESSED = 0x01  # the payload is a zlib stream (RFC 1950)
FLAG_REPLY = 0x02       # a service reply; sequence = the request id
FLAG_ERROR = 0x04       # with FLAG_REPLY: the payload is a msgpack str giving the reason
FLAG_REQUEST = 0x08     # a service request; sequence = the request id
FLAG_CONTROL = 0x10     # a control frame: payload {"t": ..., "last": N}, type hash 0
FLAG_LATCHED = 0x20     # a publisher's last value, replayed to a late subscriber
FLAGS_KNOWN = 0x3F

_HEADER = struct.Struct("<Q2sBBIQQqQ")
assert _HEADER.size == HEADER_SIZE

# The whole header in one call: (channel, magic, version, flags, payload_size,
# sequence, sender_id, send_time_ns, type_hash) of a frame of >= 48 bytes.
unpack_header = _HEADER.unpack_from

# The receive path's check: the header without its channel (already routed),
# magic, version and flags as one u32: (magic_version_flags, payload_size,
# sequence, sender_id, send_time_ns, type_hash).
_CHECK = struct.Struct("<8xIIQQqQ")
unpack_check = _CHECK.unpack_from


def magic_version_flags(flags):
    """The u32 unpack_check gives for a frame of this version with `flags`."""
    return int.from_bytes(MAGIC + bytes((FRAME_VERSION, flags)), "little")


# ---- hashes ---------------------------------------------------------------------------

def fnv1a32(text):
    """32-bit FNV-1a of a str (UTF-8) or bytes."""
    if isinstance(text, str):
        text = text.encode("utf-8", "surrogateescape")
    h = 2166136261
    for b in text:
        h = ((h ^ b) * 16777619) & 0xFFFFFFFF
    return h


def fnv1a64(text):
    """64-bit FNV-1a of a str (UTF-8) or bytes."""
    if isinstance(text, str):
        text = text.encode("utf-8", "surrogateescape")
    h = 14695981039346656037
    for b in text:
        h = ((h ^ b) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return h


def channel_of(key, name):
    """The channel (a u64) of topic or directed name `name` under `key`."""
    return fnv1a32(key) | (fnv1a32(name) << 32)


def key_part(channel):
    """The key's half of a channel: what a key-wide subscription matches."""
    return channel & 0xFFFFFFFF


def directed_name(entity_id):
    """"#e:" + 16 lowercase hex digits: where frames for one entity go."""
    return "#e:%016x" % entity_id


def directed_channel(key, entity_id):
    return channel_of(key, directed_name(entity_id))


def type_hash(type_name):
    """The type hash a frame carries for messages of `type_name`."""
    return fnv1a64(type_name)


def channel_bytes(channel):
    return struct.pack("<Q", channel)


# ---- frames ---------------------------------------------------------------------------

FrameHeader = namedtuple(
    "FrameHeader", "channel version flags payload_size sequence sender_id send_time_ns type_hash")


class FrameError(Exception):
    """A frame that was refused. `reason` is one of REASONS (counted under it)."""

    REASONS = {
        "truncated": "truncated frame",
        "bad_magic": "not a Gecko frame (bad magic)",
        "unsupported_version": "unsupported frame version",
        "unknown_flags": "unknown frame flags",
        "size_mismatch": "payload size does not match the header",
        "oversized": "message larger than the configured maximum",
        "decompress_failed": "corrupt compressed payload",
    }

    def __init__(self, reason, detail="", header=None):
        self.reason = reason
        self.header = header
        text = self.REASONS[reason]
        super().__init__(text + (" (" + detail + ")" if detail else ""))


def encode_header(channel, flags, payload_size, sequence, sender_id, send_time_ns, type_hash_):
    return _HEADER.pack(channel, MAGIC, FRAME_VERSION, flags, payload_size, sequence, sender_id,
                        send_time_ns, type_hash_)


def encode_frame(channel, payload, sequence, sender_id, send_time_ns, type_hash_, flags=0,
                 compress_level=None):
    """A whole frame. With `compress_level` (1..9) the payload is deflated."""
    size = len(payload)
    if size > 0xFFFFFFFF:
        raise ValueError("a payload of %d bytes does not fit a frame (at most 4 GiB)" % size)
    if compress_level is not None:
        payload = zlib.compress(payload, compress_level)
        flags |= FLAG_COMPRESSED
    return _HEADER.pack(channel, MAGIC, FRAME_VERSION, flags, size, sequence, sender_id,
                        send_time_ns, type_hash_) + payload


def parse_frame(data, max_payload):
    """Checks a frame in the order of C++ parse_frame; returns (header, body).

    `body` is the payload as on the wire (still compressed if the flag says
    so). Raises FrameError naming the first check that failed."""
    size = len(data)
    if size < 11:
        raise FrameError("truncated", "%d bytes" % size)
    if data[8:10] != MAGIC:
        raise FrameError("bad_magic", "%d bytes" % size)
    if data[10] != FRAME_VERSION:
        raise FrameError("unsupported_version",
                         "version %d, this package reads version %d" % (data[10], FRAME_VERSION))
    if size < HEADER_SIZE:
        raise FrameError("truncated", "%d bytes, the header alone is %d" % (size, HEADER_SIZE))
    c, _, v, flags, psize, seq, sender, t, th = _HEADER.unpack_from(data)
    h = FrameHeader(c, v, flags, psize, seq, sender, t, th)
    if h.flags & ~FLAGS_KNOWN:
        raise FrameError("unknown_flags", "flags 0x%02x" % h.flags, h)
    body_size = size - HEADER_SIZE
    if h.payload_size > max_payload or body_size > max_payload:
        raise FrameError("oversized", "payload %d bytes%s, the limit is %d" % (
            h.payload_size, " once inflated" if h.flags & FLAG_COMPRESSED else "", max_payload), h)
    if not h.flags & FLAG_COMPRESSED and body_size != h.payload_size:
        raise FrameError("truncated" if body_size < h.payload_size else "size_mismatch",
                         "%d payload bytes, the header says %d" % (body_size, h.payload_size), h)
    return h, memoryview(data)[HEADER_SIZE:]


def header_of(data):
    """The FrameHeader of a frame already checked by parse_frame (or the
    receive path's equivalent fast check)."""
    c, _, v, flags, psize, seq, sender, t, th = _HEADER.unpack_from(data)
    return FrameHeader(c, v, flags, psize, seq, sender, t, th)


def peek_sender(data):
    """(sender_id, sequence) of a frame whose 48-byte header is there with the
    right magic and version, else None: a server answers a broken request."""
    if len(data) < HEADER_SIZE or data[8:10] != MAGIC or data[10] != FRAME_VERSION:
        return None
    h = _HEADER.unpack_from(data)
    return h[6], h[5]


def inflate(body, expected_size):
    """Inflates a compressed body that must give exactly `expected_size` bytes.

    Never produces more than expected_size + 1 bytes whatever the stream says
    (a zip bomb stops there). Raises FrameError("decompress_failed")."""
    d = zlib.decompressobj()
    try:
        out = d.decompress(bytes(body), expected_size + 1)
    except zlib.error as e:
        raise FrameError("decompress_failed", str(e))
    if len(out) != expected_size or not d.eof or d.unconsumed_tail or d.unused_data:
        raise FrameError("decompress_failed", "the stream does not inflate to the %d bytes declared" % expected_size)
    return out


# ---- subscriber announcements -------------------------------------------------------------

ANNOUNCEMENT_VERSION = 1
MAX_ANNOUNCEMENT = 1024

Announcement = namedtuple("Announcement", "channel wildcard id kind topic type node session depth")


def encode_announcement(channel, entity_id, kind, topic, type_name, node, session, depth, wildcard=False):
    """The bytes a subscribing entity subscribes with (without ZeroMQ's 0x01)."""
    body = {"id": entity_id, "kind": kind, "topic": topic, "type": type_name or "*", "node": node,
            "session": session, "depth": depth}
    if wildcard:
        body["wildcard"] = True
        channel = key_part(channel)
    return struct.pack("<Q", channel) + b"\x00" + bytes([ANNOUNCEMENT_VERSION]) + msgpack.packb(body)


def parse_announcement(data):
    """An Announcement, or None if `data` is not one (a plain data prefix)."""
    if len(data) < 11 or len(data) > MAX_ANNOUNCEMENT or data[8] != 0 or data[9] != ANNOUNCEMENT_VERSION:
        return None
    try:
        m = msgpack.unpackb(bytes(data[10:]), raw=False, strict_map_key=False)
    except Exception:
        return None
    if not isinstance(m, dict):
        return None

    def s(k, default):
        v = m.get(k)
        return v if isinstance(v, str) else default

    def u(k):
        v = m.get(k)
        return v if type(v) is int and v >= 0 else None

    ident = u("id")
    if not ident:
        return None
    typ = s("type", "*") or "*"
    w = m.get("wildcard")
    return Announcement(struct.unpack_from("<Q", data)[0], w is True, ident, s("kind", "subscriber"),
                        s("topic", ""), typ, s("node", ""), u("session") or 0, min(u("depth") or 0, 0xFFFFFFFF))


# ---- control frames -----------------------------------------------------------------------

def encode_control(kind, last):
    return msgpack.packb({"t": kind, "last": last})


def parse_control(body):
    """(t, last) of a control payload, or None if it is not one."""
    if len(body) > 4096:
        return None
    try:
        m = msgpack.unpackb(bytes(body), raw=False, strict_map_key=False)
    except Exception:
        return None
    if not isinstance(m, dict) or not isinstance(m.get("t"), str):
        return None
    last = m.get("last")
    return m["t"], (last if type(last) is int and last >= 0 else 0)


def error_reason(body):
    """The reason of an error reply (a msgpack str)."""
    if not len(body):
        return "(no reason given)"
    try:
        v = msgpack.unpackb(bytes(body), raw=False, unicode_errors="replace")
    except Exception:
        return "(unreadable reason)"
    return v if isinstance(v, str) else "(unreadable reason)"
