# SPDX-License-Identifier: Apache-2.0
"""MCAP records, read and written in pure Python (the specification in
foxglove/mcap website/docs/spec/, format version 0), for gecko.bag.

A file is <magic><Header><data section ... DataEnd>[<summary>][<summary
offsets>]<Footer><magic>; a record is <u8 opcode><u64 length><content>,
integers little-endian, a string a u32 byte length and UTF-8, a map a u32
byte length and its entries. Chunks are compressed with zstd or lz4 (frame
format) when Debian's python3-zstandard / python3-lz4 are there; without
them the writer writes uncompressed chunks and the reader says which
chunks it cannot inflate. CRCs are CRC-32/IEEE (zlib.crc32).

The reader is written for damaged files, as the C++ one is (bag/src/reader.cpp):
a record longer than the file, a chunk whose CRC is wrong or that claims
more than max_chunk_size, a message before its channel, are reported as
Problems naming the offset and the record kind, and reading goes on with
what is valid (or stops there, for a cut). Unknown and private opcodes are
skipped, as the specification asks. Only a file that does not start with
the magic and a Header raises gecko.Error("decode").
"""

import collections
import io
import struct
import zlib

from .errors import Error

try:
    import zstandard as _zstd
except ImportError:  # pragma: no cover - Debian 12: python3-zstandard
    _zstd = None
try:
    import lz4.frame as _lz4
except ImportError:  # pragma: no cover - Debian 12: python3-lz4
    _lz4 = None

MAGIC = b"\x89MCAP0\r\n"

HEADER, FOOTER, SCHEMA, CHANNEL, MESSAGE, CHUNK, MESSAGE_INDEX, CHUNK_INDEX = 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08
ATTACHMENT, ATTACHMENT_INDEX, STATISTICS, METADATA, METADATA_INDEX, SUMMARY_OFFSET, DATA_END = (
    0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x0E, 0x0F)

NAMES = {HEADER: "Header", FOOTER: "Footer", SCHEMA: "Schema", CHANNEL: "Channel", MESSAGE: "Message", CHUNK: "Chunk",
         MESSAGE_INDEX: "Message Index", CHUNK_INDEX: "Chunk Index", ATTACHMENT: "Attachment",
         ATTACHMENT_INDEX: "Attachment Index", STATISTICS: "Statistics", METADATA: "Metadata",
         METADATA_INDEX: "Metadata Index", SUMMARY_OFFSET: "Summary Offset", DATA_END: "Data End"}

FOOTER_SIZE = 1 + 8 + 8 + 8 + 4  # opcode, length, summary_start, summary_offset_start, summary_crc


def record_name(op):
    if op in NAMES:
        return NAMES[op]
    return "private record 0x%02x" % op if op >= 0x80 else "unknown record 0x%02x" % op


def compressions():
    """The chunk compressions this Python can write and read, besides none ("")."""
    return [name for name, lib in (("zstd", _zstd), ("lz4", _lz4)) if lib is not None]


# ---- records as values -----------------------------------------------------------------------

Header = collections.namedtuple("Header", "profile library")
Schema = collections.namedtuple("Schema", "id name encoding data")
Channel = collections.namedtuple("Channel", "id schema_id topic message_encoding metadata")
Message = collections.namedtuple("Message", "channel_id sequence log_time publish_time data")
ChunkIndex = collections.namedtuple(
    "ChunkIndex", "message_start_time message_end_time chunk_start_offset chunk_length message_index_offsets "
                  "message_index_length compression compressed_size uncompressed_size")
Statistics = collections.namedtuple(
    "Statistics", "message_count schema_count channel_count attachment_count metadata_count chunk_count "
                  "message_start_time message_end_time channel_message_counts")
Metadata = collections.namedtuple("Metadata", "name metadata")
MetadataIndex = collections.namedtuple("MetadataIndex", "offset length name")
AttachmentIndex = collections.namedtuple("AttachmentIndex", "offset length log_time create_time data_size name media_type")
Attachment = collections.namedtuple("Attachment", "log_time create_time name media_type data")


class Problem(collections.namedtuple("Problem", "offset record message fatal")):
    """Where and why part of a file could not be read."""

    def __str__(self):
        return "offset %d: %s record: %s" % (self.offset, self.record, self.message)


class _Bad(Exception):
    """A record's content that does not parse (its fields run past its length)."""


# ---- writing ---------------------------------------------------------------------------------

_U16, _U32, _U64 = struct.Struct("<H"), struct.Struct("<I"), struct.Struct("<Q")
_REC = struct.Struct("<BQ")
_MSG = struct.Struct("<HIQQ")


def _str(s):
    b = s.encode("utf-8") if isinstance(s, str) else bytes(s)
    return _U32.pack(len(b)) + b


def _str_map(m):
    body = b"".join(_str(k) + _str(v) for k, v in sorted(m.items()))
    return _U32.pack(len(body)) + body


def record(op, content):
    return _REC.pack(op, len(content)) + content


def header_record(h):
    return record(HEADER, _str(h.profile) + _str(h.library))


def schema_record(s):
    return record(SCHEMA, _U16.pack(s.id) + _str(s.name) + _str(s.encoding) + _U32.pack(len(s.data)) + bytes(s.data))


def channel_record(c):
    return record(CHANNEL, _U16.pack(c.id) + _U16.pack(c.schema_id) + _str(c.topic) + _str(c.message_encoding) +
                  _str_map(c.metadata))


def message_record(channel_id, sequence, log_time, publish_time, data):
    return _REC.pack(MESSAGE, 22 + len(data)) + _MSG.pack(channel_id, sequence, log_time, publish_time) + data


def chunk_record(start, end, uncompressed_size, crc, compression, records):
    return record(CHUNK, struct.pack("<QQQI", start, end, uncompressed_size, crc) + _str(compression) +
                  _U64.pack(len(records)) + records)


def message_index_record(channel_id, entries):
    body = b"".join(struct.pack("<QQ", t, o) for t, o in entries)
    return record(MESSAGE_INDEX, _U16.pack(channel_id) + _U32.pack(len(body)) + body)


def chunk_index_record(ci):
    offsets = b"".join(struct.pack("<HQ", ch, off) for ch, off in sorted(ci.message_index_offsets.items()))
    return record(CHUNK_INDEX, struct.pack("<QQQQ", ci.message_start_time, ci.message_end_time, ci.chunk_start_offset,
                                           ci.chunk_length) + _U32.pack(len(offsets)) + offsets +
                  _U64.pack(ci.message_index_length) + _str(ci.compression) +
                  struct.pack("<QQ", ci.compressed_size, ci.uncompressed_size))


def statistics_record(s):
    counts = b"".join(struct.pack("<HQ", ch, n) for ch, n in sorted(s.channel_message_counts.items()))
    return record(STATISTICS, struct.pack("<QHIIIIQQ", s.message_count, s.schema_count, s.channel_count,
                                          s.attachment_count, s.metadata_count, s.chunk_count, s.message_start_time,
                                          s.message_end_time) + _U32.pack(len(counts)) + counts)


def metadata_record(m):
    return record(METADATA, _str(m.name) + _str_map(m.metadata))


def metadata_index_record(i):
    return record(METADATA_INDEX, struct.pack("<QQ", i.offset, i.length) + _str(i.name))


def attachment_record(a, crc=True):
    body = struct.pack("<QQ", a.log_time, a.create_time) + _str(a.name) + _str(a.media_type) + \
        _U64.pack(len(a.data)) + bytes(a.data)
    return record(ATTACHMENT, body + _U32.pack(zlib.crc32(body) if crc else 0))


def attachment_index_record(i):
    return record(ATTACHMENT_INDEX, struct.pack("<QQQQQ", i.offset, i.length, i.log_time, i.create_time, i.data_size) +
                  _str(i.name) + _str(i.media_type))


def summary_offset_record(op, start, length):
    return record(SUMMARY_OFFSET, struct.pack("<BQQ", op, start, length))


def data_end_record(crc):
    return record(DATA_END, _U32.pack(crc))


def footer_record(summary_start, summary_offset_start, crc):
    return record(FOOTER, struct.pack("<QQI", summary_start, summary_offset_start, crc))


def compress(compression, data, level=0):
    if compression == "":
        return data
    if compression == "zstd" and _zstd is not None:
        return _zstd.ZstdCompressor(level=level or 3).compress(data)
    if compression == "lz4" and _lz4 is not None:
        return _lz4.compress(data, compression_level=level)
    raise Error("invalid_argument", "chunk compression %r is not available (zstd: python3-zstandard, "
                                    "lz4: python3-lz4; '' for none)" % compression)


# ---- reading ---------------------------------------------------------------------------------

class _Fields:
    """Reads a record's content field by field; running past its end raises _Bad."""
    __slots__ = ("b", "i", "end")

    def __init__(self, b, i=0, end=None):
        self.b, self.i, self.end = b, i, len(b) if end is None else end

    def take(self, n):
        if n > self.end - self.i:
            raise _Bad("a field runs past the record's end")
        v = self.b[self.i:self.i + n]
        self.i += n
        return v

    def u8(self):
        return self.take(1)[0]

    def u16(self):
        return _U16.unpack(self.take(2))[0]

    def u32(self):
        return _U32.unpack(self.take(4))[0]

    def u64(self):
        return _U64.unpack(self.take(8))[0]

    def str(self):
        try:
            return bytes(self.take(self.u32())).decode("utf-8")
        except UnicodeDecodeError:
            raise _Bad("a string is not UTF-8")

    def bytes32(self):
        return bytes(self.take(self.u32()))

    def str_map(self):
        length = self.u32()
        inner = _Fields(self.b, self.i, self.i + length)
        if inner.end > self.end:
            raise _Bad("a map runs past the record's end")
        self.i = inner.end
        out = {}
        while inner.i < inner.end:
            k = inner.str()
            out[k] = inner.str()
        return out

    def pairs(self, fmt):
        length = self.u32()
        body = self.take(length)
        size = struct.calcsize(fmt)
        if length % size:
            raise _Bad("a map or array of %d bytes is not a whole number of entries" % length)
        return list(struct.iter_unpack(fmt, body))

    def rest(self):
        v = self.b[self.i:self.end]
        self.i = self.end
        return v


def parse_header(c):
    f = _Fields(c)
    return Header(f.str(), f.str())


def parse_schema(c):
    f = _Fields(c)
    return Schema(f.u16(), f.str(), f.str(), f.bytes32())


def parse_channel(c):
    f = _Fields(c)
    return Channel(f.u16(), f.u16(), f.str(), f.str(), f.str_map())


def parse_message(c):
    if len(c) < 22:
        raise _Bad("%d bytes: a message has at least 22" % len(c))
    channel_id, sequence, log_time, publish_time = _MSG.unpack_from(c, 0)
    return Message(channel_id, sequence, log_time, publish_time, bytes(c[22:]))


def parse_chunk(c):
    """(start, end, uncompressed_size, crc, compression, records)."""
    f = _Fields(c)
    start, end, size, crc, compression = f.u64(), f.u64(), f.u64(), f.u32(), f.str()
    n = f.u64()
    return start, end, size, crc, compression, f.take(n)


def parse_chunk_index(c):
    f = _Fields(c)
    start, end, offset, length = f.u64(), f.u64(), f.u64(), f.u64()
    offsets = dict(f.pairs("<HQ"))
    return ChunkIndex(start, end, offset, length, offsets, f.u64(), f.str(), f.u64(), f.u64())


def parse_statistics(c):
    f = _Fields(c)
    head = [f.u64(), f.u16(), f.u32(), f.u32(), f.u32(), f.u32(), f.u64(), f.u64()]
    return Statistics(*head, dict(f.pairs("<HQ")))


def parse_metadata(c):
    f = _Fields(c)
    return Metadata(f.str(), f.str_map())


def parse_metadata_index(c):
    f = _Fields(c)
    return MetadataIndex(f.u64(), f.u64(), f.str())


def parse_attachment_index(c):
    f = _Fields(c)
    return AttachmentIndex(f.u64(), f.u64(), f.u64(), f.u64(), f.u64(), f.str(), f.str())


def parse_attachment(c):
    f = _Fields(c)
    log_time, create_time, name, media_type = f.u64(), f.u64(), f.str(), f.str()
    data = bytes(f.take(f.u64()))
    crc = f.u32()
    if crc and zlib.crc32(bytes(c[:f.i - 4])) != crc:
        raise _Bad("its CRC does not match")
    return Attachment(log_time, create_time, name, media_type, data)


def parse_footer(c):
    f = _Fields(c)
    return f.u64(), f.u64(), f.u32()


def records(buf, start, end):
    """(offset, opcode, content) of each whole record of buf[start:end]; then, if the
    last one does not fit, (offset, opcode or None, None): the cut."""
    i = start
    while i < end:
        if end - i < 9:
            yield i, None, None
            return
        op, length = _REC.unpack_from(buf, i)
        if length > end - i - 9:
            yield i, op, None
            return
        yield i, op, buf[i + 9:i + 9 + length]
        i += 9 + length


def inflate(compression, data, size, max_size):
    """The records of a chunk, at most `size` bytes (what it claims) and never more than max_size."""
    if size > max_size:
        raise _Bad("claims %d bytes uncompressed, more than the %d this reader takes" % (size, max_size))
    if compression == "":
        out = bytes(data)
    elif compression == "zstd":
        if _zstd is None:
            raise _Bad("zstd chunk, and python3-zstandard is not installed")
        try:  # read as it inflates: memory follows what comes out, not what a header says
            with _zstd.ZstdDecompressor().stream_reader(io.BytesIO(bytes(data))) as r:
                parts, got = [], 0
                while got <= size:
                    part = r.read(size + 1 - got)
                    if not part:
                        break
                    parts.append(part)
                    got += len(part)
            out = b"".join(parts)
        except _zstd.ZstdError as e:
            raise _Bad("zstd: %s" % e)
    elif compression == "lz4":
        if _lz4 is None:
            raise _Bad("lz4 chunk, and python3-lz4 is not installed")
        try:
            d = _lz4.LZ4FrameDecompressor()
            out = d.decompress(bytes(data), max_length=size + 1)
        except RuntimeError as e:
            raise _Bad("lz4: %s" % e)
    else:
        raise _Bad("unknown compression '%s'" % compression)
    if len(out) != size:
        raise _Bad("inflates to %s bytes, not the %d it claims" % ("more" if len(out) > size else len(out), size))
    return out
