# SPDX-License-Identifier: Apache-2.0
"""Gecko's recordings (MCAP files, docs/RECORDING.md) in pure Python: what
`gecko record` writes and `gecko play` and `gecko bag` read, and what C++
gecko::bag::Writer / Reader write and read.

    from gecko import bag
    from gecko.msgs import Imu

    with bag.Writer("spine.mcap") as w:                  # zstd chunks (python3-zstandard), else uncompressed
        ch = w.add_channel("imu", Imu)                   # msgpack, the type's name, hash and schema
        w.write(ch, Imu(stamp_ns=5), log_time=gecko.now_ns())
        w.add_metadata("run", {"robot": "dalek"})

    with bag.Reader("run.mcap") as r:                    # `gecko record`'s files, or any MCAP file
        for m in r.messages(topics=["imu", "arm/*"]):    # start=, end=: log times (ns), inclusive
            print(m.topic, m.log_time, m.decode())       # a gecko.msgs type, else the msgpack as dicts
        for p in r.problems:                             # what could not be read, and where
            print(p)

A file with a summary is read through its chunk indexes; one without (a
recorder killed with -9) by scanning it up to where it is cut. Chunks are
zstd or lz4 with Debian's python3-zstandard / python3-lz4; without them the
writer writes uncompressed chunks and the reader reports the chunks it
cannot inflate.
"""

import fnmatch
import json
import mmap
import os
import zlib

from . import _mcap
from . import message as msgmod
from . import msgs
from . import schema as schemamod
from . import wire
from .errors import Error
from ._mcap import Problem, Schema, Channel, Metadata, Statistics, ChunkIndex, compressions  # noqa: F401
from .runtime import now_ns

__all__ = ["Writer", "Reader", "BagMessage", "Problem", "Channel", "Schema", "Metadata", "Statistics", "keys",
           "MSGPACK", "type_name_of", "schema_of", "channel_metadata", "compressions"]

MSGPACK = "msgpack"
LIBRARY = "gecko-bag-python 0.2.0"


class keys:
    """Channel metadata keys and record names of Gecko's files (C++ gecko::bag::keys)."""
    type_name = "gecko.type_name"        # e.g. "gecko.msgs.Imu"
    type_hash = "gecko.type_hash"        # fnv1a64 of the type name, 16 hex digits
    schema = "gecko.schema"              # the declared fields as JSON
    publisher_id = "gecko.publisher_id"  # 16 hex digits
    node = "gecko.node"
    host = "gecko.host"
    latched = "gecko.latched"            # "true" or "false"
    twin_of = "gecko.twin_of"            # a json twin: the topic it transcodes
    file_record = "gecko"                # the file's Metadata record
    drops_record = "gecko.drops"         # what the recorder could not keep


def type_name_of(channel):
    """The Gecko type a channel carries ("" if its metadata does not say)."""
    return channel.metadata.get(keys.type_name, "")


def schema_of(channel):
    """The gecko.Schema in a channel's metadata, or None (none, or unreadable)."""
    text = channel.metadata.get(keys.schema, "")
    if not text:
        return None
    try:
        return schemamod.Schema.from_tree(json.loads(text))
    except (ValueError, Error):
        return None  # a schema this version cannot read: the messages still read as msgpack


def channel_metadata(type_name, schema=None):
    """Channel metadata for a Gecko type (and its gecko.Schema, if any)."""
    m = {keys.type_name: type_name}
    if type_name:
        m[keys.type_hash] = "%016x" % wire.type_hash(type_name)
    if schema:
        m[keys.schema] = json.dumps(schema.to_tree(), separators=(",", ":"), ensure_ascii=False)
    return m


class BagMessage:
    """A message as read: its channel (topic, encoding, metadata), sequence,
    log_time and publish_time (ns), and data (its bytes: msgpack for Gecko)."""
    __slots__ = ("channel", "sequence", "log_time", "publish_time", "data", "_reader")

    def __init__(self, channel, sequence, log_time, publish_time, data, reader):
        self.channel, self.sequence, self.log_time, self.publish_time = channel, sequence, log_time, publish_time
        self.data, self._reader = data, reader

    @property
    def topic(self):
        return self.channel.topic

    @property
    def type_name(self):
        return type_name_of(self.channel)

    def decode(self, cls=None):
        """The message as `cls`; without it, as the class of its recorded type
        (gecko.msgs, or one given to Reader(types=...)), else the msgpack as
        Python values (dicts), as a key-wide subscriber gives it. A json
        channel: the parsed JSON. Raises gecko.DecodeError if it does not decode."""
        return self._reader._decode(self, cls)

    def __repr__(self):
        return "BagMessage(%r, sequence=%d, log_time=%d, %d bytes)" % (self.topic, self.sequence, self.log_time,
                                                                         len(self.data))


# ==============================================================================================
# Writing
# ==============================================================================================

class Writer:
    """Writes an MCAP file as C++ gecko::bag::Writer does: records in chunks
    (compression "zstd", "lz4" or "" for none; chunk_size uncompressed bytes
    each), schemas and channels in the chunk of their first message, a
    message index per channel after each chunk, metadata outside chunks,
    then at close() the summary (schemas, channels, chunk, attachment and
    metadata indexes, statistics), its offsets and the footer, every CRC
    filled in (crc=False: none)."""

    def __init__(self, path, compression=None, chunk_size=1 << 20, crc=True, profile="", library=LIBRARY,
                 compression_level=0):
        if compression is None:
            compression = "zstd" if "zstd" in compressions() else ""
        if compression not in ("", "none") and compression not in compressions():
            raise Error("invalid_argument", "chunk compression %r is not available here (have: none%s)" %
                        (compression, "".join(", " + c for c in compressions())))
        self.path = path
        self._compression = "" if compression == "none" else compression
        self._level = compression_level
        self._chunk_size = chunk_size
        self._crc = crc
        try:
            self._f = open(path, "wb")
        except OSError as e:
            raise Error("invalid_argument", "cannot create '%s': %s" % (path, e.strerror))
        self._pos = 0
        self._data_crc = 0
        self._closed = False
        self._schemas, self._channels = {}, {}
        self._chunk = bytearray()
        self._index = {}
        self._chunk_start = self._chunk_end = None
        self._chunk_indexes, self._metadata_indexes, self._attachment_indexes = [], [], []
        self._count, self._start, self._end, self._per_channel = 0, 0, 0, {}
        self._sequences = {}
        self._emit(_mcap.MAGIC + _mcap.header_record(_mcap.Header(profile, library)))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def add_schema(self, name, encoding, data):
        """A Schema record; its id (an identical one already added: that one's)."""
        data = bytes(data)
        for s in self._schemas.values():
            if (s.name, s.encoding, s.data) == (name, encoding, data):
                return s.id
        sid = next(i for i in range(1, 65536) if i not in self._schemas)
        s = self._schemas[sid] = Schema(sid, name, encoding, data)
        self._chunk += _mcap.schema_record(s)
        return sid

    def add_channel(self, topic, msg_type=None, message_encoding=MSGPACK, schema_id=0, metadata=None):
        """A Channel record; its id. `msg_type`: a message class (gecko.msgs, or
        made with gecko.define): msgpack, with the type's name, hash and
        schema in the metadata, as `gecko record` describes a publisher's
        topic. Otherwise `message_encoding` and `metadata` as given."""
        md = dict(metadata or {})
        if msg_type is not None:
            name = msgmod.type_name_of(msg_type)
            md = {**channel_metadata(name, schemamod.schema_of(msg_type) if name else None), **md}
            message_encoding = MSGPACK
        if schema_id and schema_id not in self._schemas:
            raise Error("invalid_argument", "channel '%s' names schema %d, which was not added" % (topic, schema_id))
        for c in self._channels.values():
            if (c.topic, c.message_encoding, c.schema_id, c.metadata) == (topic, message_encoding, schema_id, md):
                return c.id
        if len(self._channels) >= 65536:
            raise Error("invalid_argument", "a file holds at most 65536 channels")
        cid = next(i for i in range(65536) if i not in self._channels)
        c = self._channels[cid] = Channel(cid, schema_id, topic, message_encoding, md)
        self._chunk += _mcap.channel_record(c)
        return cid

    def write(self, channel_id, message, log_time=None, publish_time=None, sequence=None):
        """Appends a message: `message` is bytes (written as they are) or a
        message instance (encoded as msgpack). log_time defaults to now
        (gecko.now_ns()), publish_time to log_time, sequence to the
        channel's previous one + 1."""
        if self._closed:
            raise Error("closed", "'%s' is closed" % self.path)
        if channel_id not in self._channels:
            raise Error("invalid_argument", "no channel %d in '%s'" % (channel_id, self.path))
        data = bytes(message) if isinstance(message, (bytes, bytearray, memoryview)) else msgmod.encode(message)
        if log_time is None:
            log_time = now_ns()
        if publish_time is None:
            publish_time = log_time
        if sequence is None:
            sequence = self._sequences.get(channel_id, 0) + 1
        self._sequences[channel_id] = sequence
        self._index.setdefault(channel_id, []).append((log_time, len(self._chunk)))
        self._chunk += _mcap.message_record(channel_id, sequence & 0xFFFFFFFF, log_time, publish_time, data)
        if self._chunk_start is None:
            self._chunk_start = self._chunk_end = log_time
        else:
            self._chunk_start, self._chunk_end = min(self._chunk_start, log_time), max(self._chunk_end, log_time)
        self._start = log_time if self._count == 0 else min(self._start, log_time)
        self._end = max(self._end, log_time)
        self._count += 1
        self._per_channel[channel_id] = self._per_channel.get(channel_id, 0) + 1
        if len(self._chunk) >= self._chunk_size:
            self.flush()

    def add_metadata(self, name, metadata):
        """A Metadata record (outside chunks), indexed in the summary."""
        self._check_open()
        b = _mcap.metadata_record(Metadata(name, dict(metadata)))
        self._metadata_indexes.append(_mcap.MetadataIndex(self._pos, len(b), name))
        self._emit(b)

    def add_attachment(self, name, data, media_type="application/octet-stream", log_time=0, create_time=0):
        """An Attachment record (outside chunks), indexed in the summary."""
        self._check_open()
        a = _mcap.Attachment(log_time, create_time, name, media_type, bytes(data))
        b = _mcap.attachment_record(a, self._crc)
        self._attachment_indexes.append(_mcap.AttachmentIndex(self._pos, len(b), log_time, create_time, len(a.data),
                                                              name, media_type))
        self._emit(b)

    def flush(self):
        """Writes the current chunk, if it has anything, and its message indexes."""
        if not self._chunk or self._closed:
            return
        raw = bytes(self._chunk)
        records = _mcap.compress(self._compression, raw, self._level)
        start = self._chunk_start if self._chunk_start is not None else 0
        end = self._chunk_end if self._chunk_end is not None else 0
        chunk = _mcap.chunk_record(start, end, len(raw), zlib.crc32(raw) if self._crc else 0, self._compression, records)
        at = self._pos
        tail, offsets = bytearray(), {}
        for cid, entries in sorted(self._index.items()):
            offsets[cid] = at + len(chunk) + len(tail)
            tail += _mcap.message_index_record(cid, entries)
        self._chunk_indexes.append(ChunkIndex(start, end, at, len(chunk), offsets, len(tail), self._compression,
                                              len(records), len(raw)))
        self._emit(chunk + bytes(tail))
        self._chunk = bytearray()
        self._index = {}
        self._chunk_start = self._chunk_end = None

    def close(self):
        """flush(), then the data end, the summary and the footer. Idempotent."""
        if self._closed:
            return
        self.flush()
        self._emit(_mcap.data_end_record(self._data_crc if self._crc else 0))
        self._closed = True
        summary_start = self._pos
        s, groups = bytearray(), []

        def group(op, blobs):
            before = len(s)
            for b in blobs:
                s.extend(b)
            if len(s) > before:
                groups.append((op, summary_start + before, len(s) - before))

        group(_mcap.SCHEMA, [_mcap.schema_record(x) for _, x in sorted(self._schemas.items())])
        group(_mcap.CHANNEL, [_mcap.channel_record(x) for _, x in sorted(self._channels.items())])
        group(_mcap.CHUNK_INDEX, [_mcap.chunk_index_record(x) for x in self._chunk_indexes])
        group(_mcap.ATTACHMENT_INDEX, [_mcap.attachment_index_record(x) for x in self._attachment_indexes])
        group(_mcap.METADATA_INDEX, [_mcap.metadata_index_record(x) for x in self._metadata_indexes])
        stats = Statistics(self._count, len(self._schemas), len(self._channels), len(self._attachment_indexes),
                           len(self._metadata_indexes), len(self._chunk_indexes), self._start, self._end,
                           dict(self._per_channel))
        group(_mcap.STATISTICS, [_mcap.statistics_record(stats)])
        offsets_start = summary_start + len(s)
        for g in groups:
            s += _mcap.summary_offset_record(*g)
        footer = _mcap.footer_record(summary_start, offsets_start, 0)
        crc = zlib.crc32(footer[:-4], zlib.crc32(bytes(s))) if self._crc else 0
        s += _mcap.footer_record(summary_start, offsets_start, crc) + _mcap.MAGIC
        self._f.write(s)
        self._f.close()

    def _check_open(self):
        if self._closed:
            raise Error("closed", "'%s' is closed" % self.path)

    def _emit(self, b):
        if self._crc:
            self._data_crc = zlib.crc32(b, self._data_crc)
        self._f.write(b)
        self._pos += len(b)


# ==============================================================================================
# Reading
# ==============================================================================================

class Reader:
    """Reads an MCAP file: its summary when it ends with a valid one
    (schemas, channels, statistics, chunk_indexes at once), and its messages
    a chunk at a time. `types`: message classes to decode with (besides
    gecko.msgs). Raises gecko.Error ("invalid_argument") when the file
    cannot be opened, ("decode") when it is not MCAP at all; anything else
    is read as far as it is valid and said in `problems`."""

    def __init__(self, path, types=(), verify_crcs=True, max_chunk_size=1 << 30, use_index=True):
        self.path = path
        self.verify_crcs = verify_crcs
        self.max_chunk_size = max_chunk_size
        self.problems = []
        self.schemas, self.channels = {}, {}
        self.statistics = None
        self.chunk_indexes, self.metadata_indexes, self.attachment_indexes = [], [], []
        self._classes = {msgmod.type_name_of(c): c for c in types}
        self._decoders = {}
        self._unnamed = set()
        try:
            self._file = open(path, "rb")
        except OSError as e:
            raise Error("invalid_argument", "cannot open '%s': %s" % (path, e.strerror))
        self.size = os.fstat(self._file.fileno()).st_size
        self._map = mmap.mmap(self._file.fileno(), 0, access=mmap.ACCESS_READ) if self.size else b""
        self._buf = memoryview(self._map)
        head = next(_mcap.records(self._buf, 8, self.size), None) if self.size >= 8 else None
        if bytes(self._buf[:8]) != _mcap.MAGIC or head is None or head[1] != _mcap.HEADER or head[2] is None:
            self.close()
            raise Error("decode", "'%s' is not an MCAP file (no magic and Header at its start)" % path)
        try:
            self.header = _mcap.parse_header(head[2])
        except _mcap._Bad as e:
            self.close()
            raise Error("decode", "'%s': its Header does not read: %s" % (path, e))
        self._data_start = 8 + 9 + len(head[2])
        self.has_summary = use_index and self._read_summary()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        if getattr(self, "_buf", None) is not None:
            self._buf.release()
            self._buf = None
        if isinstance(getattr(self, "_map", None), mmap.mmap):
            try:
                self._map.close()
            except BufferError:
                pass  # a message view still held: the map closes when it goes
        if getattr(self, "_file", None) is not None:
            self._file.close()
            self._file = None

    # ---- messages ----

    def messages(self, topics=None, start=None, end=None):
        """Each message (BagMessage) whose topic `topics` takes (names or
        globs; None: all) and whose log time is within [start, end], in file order."""
        lo = 0 if start is None else start
        hi = (1 << 64) - 1 if end is None else end

        def wanted(ch):
            return topics is None or any(p == ch.topic or fnmatch.fnmatchcase(ch.topic, p) for p in topics)

        if self.has_summary and self.chunk_indexes:
            for ci in sorted(self.chunk_indexes, key=lambda c: c.chunk_start_offset):
                if ci.message_end_time < lo or ci.message_start_time > hi:
                    continue
                rec = next(_mcap.records(self._buf, ci.chunk_start_offset, min(self.size, ci.chunk_start_offset +
                                                                                ci.chunk_length)), None)
                if rec is None or rec[1] != _mcap.CHUNK or rec[2] is None:
                    self._problem(ci.chunk_start_offset, "Chunk", "the chunk index points at no whole chunk")
                    continue
                yield from self._chunk_messages(ci.chunk_start_offset, rec[2], wanted, lo, hi, indexed=True)
            return
        yield from self._scan(wanted, lo, hi)

    def metadata(self):
        """Every Metadata record, in file order (through the summary's index, else by scanning)."""
        out = []
        if self.has_summary:
            for mi in self.metadata_indexes:
                rec = next(_mcap.records(self._buf, mi.offset, min(self.size, mi.offset + mi.length)), None)
                if rec and rec[1] == _mcap.METADATA and rec[2] is not None:
                    out.append(self._parse(mi.offset, _mcap.METADATA, rec[2]))
            return [m for m in out if m is not None]
        for off, op, c in self._records(self._buf, self._data_start, self.size, top=True):
            if op == _mcap.METADATA:
                m = self._parse(off, op, c)
                if m is not None:
                    out.append(m)
            elif op == _mcap.DATA_END:
                break
        return out

    def _decode(self, m, cls):
        enc = m.channel.message_encoding
        if cls is not None:
            return msgmod.decode(cls, m.data)
        if enc == "json":
            return json.loads(m.data)
        if enc != MSGPACK:
            raise Error("decode", "%s: message encoding '%s' is not msgpack" % (m.topic, enc))
        name = type_name_of(m.channel)
        d = self._decoders.get(name)
        if d is None:
            c = self._classes.get(name) or msgs.by_name(name)
            d = self._decoders[name] = msgmod.decoder(c) if c is not None else msgmod.unpack
        return d(m.data)

    # ---- the file's parts ----

    def _read_summary(self):
        if self.size < 8 + _mcap.FOOTER_SIZE + 8 or bytes(self._buf[-8:]) != _mcap.MAGIC:
            return False
        at = self.size - 8 - _mcap.FOOTER_SIZE
        if self._buf[at] != _mcap.FOOTER:
            return False
        summary_start, offsets_start, crc = _mcap.parse_footer(self._buf[at + 9:at + _mcap.FOOTER_SIZE])
        if summary_start == 0 or summary_start > at or offsets_start > at or summary_start < self._data_start:
            return False
        if crc and self.verify_crcs and zlib.crc32(self._buf[summary_start:at + _mcap.FOOTER_SIZE - 4]) != crc:
            self._problem(summary_start, "Footer", "the summary's CRC does not match: read by scanning instead")
            return False
        got = {}
        for off, op, c in _mcap.records(self._buf, summary_start, offsets_start or at):
            if c is None:
                self._problem(off, _mcap.record_name(op) if op else "summary", "cut short: read by scanning instead")
                return False
            got.setdefault(op, []).append((off, c))
        try:
            schemas = [_mcap.parse_schema(c) for _, c in got.get(_mcap.SCHEMA, [])]
            channels = [_mcap.parse_channel(c) for _, c in got.get(_mcap.CHANNEL, [])]
            self.chunk_indexes = [_mcap.parse_chunk_index(c) for _, c in got.get(_mcap.CHUNK_INDEX, [])]
            self.metadata_indexes = [_mcap.parse_metadata_index(c) for _, c in got.get(_mcap.METADATA_INDEX, [])]
            self.attachment_indexes = [_mcap.parse_attachment_index(c) for _, c in got.get(_mcap.ATTACHMENT_INDEX, [])]
            stats = got.get(_mcap.STATISTICS)
            self.statistics = _mcap.parse_statistics(stats[0][1]) if stats else None
        except _mcap._Bad as e:
            self._problem(summary_start, "summary", "%s: read by scanning instead" % e)
            self.chunk_indexes, self.metadata_indexes, self.attachment_indexes, self.statistics = [], [], [], None
            return False
        self.schemas = {s.id: s for s in schemas}
        self.channels = {c.id: c for c in channels}
        return True

    def _problem(self, offset, record, message, fatal=False):
        if len(self.problems) < 1000:
            self.problems.append(Problem(offset, record, message, fatal))

    def _parse(self, offset, op, content):
        """A record's value, or None (a problem is said)."""
        parse = {_mcap.SCHEMA: _mcap.parse_schema, _mcap.CHANNEL: _mcap.parse_channel,
                 _mcap.MESSAGE: _mcap.parse_message, _mcap.METADATA: _mcap.parse_metadata}[op]
        try:
            return parse(content)
        except _mcap._Bad as e:
            self._problem(offset, _mcap.record_name(op), str(e))
            return None

    def _records(self, buf, start, stop, top):
        """The records of buf[start:stop), a cut said (as a fatal problem at the top level)."""
        for off, op, c in _mcap.records(buf, start, stop):
            if c is None:
                where = "file" if top else "chunk"
                if op is None:
                    self._problem(off, where, "%d bytes left, less than a record's opcode and length: cut short" %
                                  (stop - off), fatal=top)
                else:
                    self._problem(off, _mcap.record_name(op), "claims more bytes than the %s has left (%d): cut short"
                                  % (where, stop - off), fatal=top)
                return
            if op == 0:
                self._problem(off, "record", "opcode 0 is not a record" + (": reading stops" if top else ""),
                              fatal=top)
                return
            yield off, op, c

    def _scan(self, wanted, lo, hi):
        for off, op, c in self._records(self._buf, self._data_start, self.size, top=True):
            if op == _mcap.DATA_END or op == _mcap.FOOTER:
                return
            if op == _mcap.CHUNK:
                yield from self._chunk_messages(off, c, wanted, lo, hi)
            elif op in (_mcap.SCHEMA, _mcap.CHANNEL, _mcap.MESSAGE):
                m = self._known(off, op, c)
                if m is not None and wanted(m.channel) and lo <= m.log_time <= hi:
                    yield m

    def _chunk_messages(self, offset, content, wanted, lo, hi, indexed=False):
        try:
            start, end, size, crc, compression, records = _mcap.parse_chunk(content)
            if indexed and (end < lo or start > hi):
                return  # (a scan reads it all the same: it may name channels later chunks use)
            raw = _mcap.inflate(compression, records, size, self.max_chunk_size)
        except _mcap._Bad as e:
            self._problem(offset, "Chunk", str(e) + ": skipped")
            return
        if crc and self.verify_crcs and zlib.crc32(raw) != crc:
            self._problem(offset, "Chunk", "its CRC does not match: skipped")
            return
        for off, op, c in self._records(raw, 0, len(raw), top=False):
            if op in (_mcap.SCHEMA, _mcap.CHANNEL, _mcap.MESSAGE):
                m = self._known(offset, op, c)
                if m is not None and wanted(m.channel) and lo <= m.log_time <= hi:
                    yield m

    def _known(self, offset, op, content):
        """Learns a Schema or Channel; a Message becomes a BagMessage (None before its channel)."""
        if op == _mcap.MESSAGE:
            if len(content) < 22:
                self._problem(offset, "Message", "%d bytes: a message has at least 22" % len(content))
                return None
            m = _mcap.parse_message(content)
            ch = self.channels.get(m.channel_id)
            if ch is None:
                if m.channel_id not in self._unnamed:
                    self._unnamed.add(m.channel_id)
                    self._problem(offset, "Message", "a message of channel %d before its Channel record: skipped "
                                                     "(said once per channel)" % m.channel_id)
                return None
            return BagMessage(ch, m.sequence, m.log_time, m.publish_time, m.data, self)
        r = self._parse(offset, op, content)
        if isinstance(r, Channel):
            self.channels.setdefault(r.id, r)
        elif isinstance(r, Schema):
            self.schemas.setdefault(r.id, r)
        return None
