#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Checks the golden vectors with an implementation written from the
documents alone (docs/PROTOCOL.md, docs/DISCOVERY.md), not from the C++ code:
FNV-1a hashes, channels, the 48-byte frame header, announcements, control
frames, discovery messages, gecko.msgs payloads, and the payload decoding
rules (a decoder driven by schemas.json, against the rule.* vectors). It is also the smallest
example of how another implementation uses tests/conformance/vectors.

Usage: check_vectors.py [--docs DOCS_DIR] [VECTORS_DIR]
  VECTORS_DIR: default the vectors/ beside this file.
  --docs: also check that docs/PROTOCOL.md and docs/DISCOVERY.md name every
  vector, and that PROTOCOL.md's annotated frame is frames/plain.hex.
Needs: python3-msgpack. Exit status 0 when every vector checks out.
"""

import json
import os
import struct
import sys
import zlib

import msgpack

# ---- the hashes (PROTOCOL.md section 1) ------------------------------------------------------------


def fnv1a32(text):
    h = 2166136261
    for byte in text.encode():
        h = ((h ^ byte) * 16777619) & 0xFFFFFFFF
    return h


def fnv1a64(text):
    h = 14695981039346656037
    for byte in text.encode():
        h = ((h ^ byte) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return h


def channel_of(key, name):
    return fnv1a32(key) | (fnv1a32(name) << 32)


def directed_name(entity_id):
    return "#e:%016x" % entity_id


def mix(x):  # DISCOVERY.md section 2.6: the entity digest
    m = 0xFFFFFFFFFFFFFFFF
    x = (x + 0x9E3779B97F4A7C15) & m
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & m
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & m
    return x ^ (x >> 31)


def entity_digest(ids):
    d = 0
    for i in ids:
        d ^= mix(i)
    return d


# ---- the frame header (PROTOCOL.md section 2) ---------------------------------------------------------

HEADER = struct.Struct("<Q2sBBIQQqQ")  # channel, magic, version, flags, payload size, sequence, sender, time, type hash
FLAGS = {0x01: "compressed", 0x02: "reply", 0x04: "error", 0x08: "request", 0x10: "control", 0x20: "latched"}


def as_json(value):
    """A decoded msgpack value in index.json's conventions (bin as {"bin": hex})."""
    if isinstance(value, bytes):
        return {"bin": value.hex()}
    if isinstance(value, list):
        return [as_json(v) for v in value]
    if isinstance(value, dict):
        return {k: as_json(v) for k, v in value.items()}
    return value


def from_json(value):
    """The inverse of as_json: what a Python program would pack."""
    if isinstance(value, dict):
        if list(value) == ["bin"]:
            return bytes.fromhex(value["bin"])
        return {k: from_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [from_json(v) for v in value]
    return value


def unpack_exactly(data):
    """One msgpack value, no trailing bytes, str kept apart from bin."""
    return msgpack.unpackb(data, raw=False, strict_map_key=True)



# ---- the payload decoding rules (PROTOCOL.md section 3), from schemas.json ----------------------------


class Refused(Exception):
    pass


class Pairs(list):
    """A msgpack map as its (key, value) pairs, so that duplicates and non-str keys stay visible."""


def depth(value):
    """Levels of arrays and maps (a map counts as one)."""
    if isinstance(value, (list, Pairs)):
        items = [v for pair in value for v in pair] if isinstance(value, Pairs) else value
        return 1 + max([depth(v) for v in items] or [0])
    return 0


INT_RANGES = {"int%d" % b: (-(1 << (b - 1)), (1 << (b - 1)) - 1) for b in (8, 16, 32, 64)}
INT_RANGES.update({"uint%d" % b: (0, (1 << b) - 1) for b in (8, 16, 32, 64)})


class Decoder:
    def __init__(self, schemas):
        self.types = {t["type_name"]: t for t in schemas["types"]}

    def decode(self, type_name, data):
        try:
            value = msgpack.unpackb(data, raw=False, strict_map_key=False, object_pairs_hook=Pairs, use_list=True)
        except Exception as e:  # trailing bytes, truncation, lengths beyond the input, byte 0xc1
            raise Refused("not one msgpack value: %s" % e)
        if depth(value) > 64:
            raise Refused("nests more than 64 deep")
        t = self.types[type_name]
        return self.message(t["fields"], t["default"], value)

    def message(self, fields, default, value):
        if not isinstance(value, Pairs):
            raise Refused("a message is a map")
        out = dict(default)
        by_name = {f["name"]: f["type"] for f in fields}
        seen = set()
        for k, v in value:
            if not isinstance(k, str):
                raise Refused("a key that is not a str")
            if k in seen:
                raise Refused("a key given twice")
            seen.add(k)
            if k in by_name:
                out[k] = self.value(by_name[k], default[k], v)
        return out

    def value(self, shape, default, v):
        if isinstance(shape, str):
            if shape == "bool":
                if not isinstance(v, bool):
                    raise Refused("not a bool")
                return v
            if shape in INT_RANGES:
                lo, hi = INT_RANGES[shape]
                if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
                    raise Refused("not an int that fits %s" % shape)
                return v
            if shape in ("float32", "float64"):
                if isinstance(v, bool) or not isinstance(v, (int, float)):
                    raise Refused("not a number")
                return float(v)
            if shape == "str":
                if not isinstance(v, str):
                    raise Refused("not a str")
                return v
            if shape == "bin":
                if not isinstance(v, bytes):
                    raise Refused("not a bin")
                return {"bin": v.hex()}
            raise Refused("unknown wire type " + shape)
        if "optional" in shape:
            return None if v is None else self.value(shape["optional"], None, v)
        if "array" in shape:
            if shape["array"] == "uint8" and "size" in shape:  # std::array<uint8_t, N> is a bin
                shape = {"bin_size": shape["size"]}
            else:
                if not isinstance(v, list) or isinstance(v, Pairs):
                    raise Refused("not an array")
                if "size" in shape and len(v) != shape["size"]:
                    raise Refused("an array of %d elements, expected %d" % (len(v), shape["size"]))
                return [self.value(shape["array"], None, x) for x in v]
        if "bin_size" in shape:
            if not isinstance(v, bytes) or len(v) != shape["bin_size"]:
                raise Refused("not a bin of %d bytes" % shape["bin_size"])
            return {"bin": v.hex()}
        if "map" in shape:
            if not isinstance(v, Pairs):
                raise Refused("not a map")
            out, seen = {}, set()
            for k, x in v:
                if not isinstance(k, str) or k in seen:
                    raise Refused("a map key that is not a str, or given twice")
                seen.add(k)
                out[k] = self.value(shape["map"], None, x)
            return out
        if "enum" in shape:
            if isinstance(v, str) and v in shape["names"]:
                return v
            if isinstance(v, int) and not isinstance(v, bool) and v in shape["values"]:
                return shape["names"][shape["values"].index(v)]
            raise Refused("not a name or listed number of " + shape["enum"])
        if "message" in shape:
            t = self.types[shape["message"]]
            return self.message(t["fields"], t["default"] if default is None else default, v)
        if "struct" in shape:
            if default is None:  # an element of a container: the struct's own defaults
                default = {f["name"]: self.default_of(f["type"]) for f in shape["struct"]}
            return self.message(shape["struct"], default, v)
        raise Refused("unknown shape %r" % shape)

    def default_of(self, shape):
        """A default-constructed value, for struct elements of containers (no default in schemas.json)."""
        if isinstance(shape, str):
            return {"bool": False, "str": "", "bin": {"bin": ""}}.get(shape, 0.0 if shape.startswith("float") else 0)
        if "optional" in shape:
            return None
        if "array" in shape:
            return [self.default_of(shape["array"])] * shape["size"] if "size" in shape else []
        if "map" in shape:
            return {}
        if "enum" in shape:
            return shape["names"][shape["values"].index(0)] if 0 in shape["values"] else shape["names"][0]
        if "message" in shape:
            return self.types[shape["message"]]["default"]
        return {f["name"]: self.default_of(f["type"]) for f in shape["struct"]}


class Checker:
    def __init__(self, directory):
        self.directory = directory
        self.failures = []
        self.checks = 0

    def expect(self, ok, what):
        self.checks += 1
        if not ok:
            self.failures.append(what)

    def read(self, entry):
        with open(os.path.join(self.directory, entry["file"])) as f:
            return bytes.fromhex("".join(f.read().split()))

    def hashes(self, h):
        for e in h["fnv1a32"]:
            self.expect(fnv1a32(e["input"]) == e["value"], "fnv1a32(%r)" % e["input"])
        for e in h["fnv1a64"]:
            self.expect(fnv1a64(e["input"]) == e["value"], "fnv1a64(%r)" % e["input"])
        for e in h["directed_names"]:
            self.expect(directed_name(e["id"]) == e["name"], "directed name of %x" % e["id"])
        for e in h["channels"]:
            c = channel_of(e["key"], e["name"])
            self.expect(c == e["value"], "channel of %r/%r" % (e["key"], e["name"]))
            self.expect(struct.pack("<Q", c).hex() == e["bytes"], "channel bytes of %r" % e["name"])
        for e in h["key_prefixes"]:
            self.expect(struct.pack("<I", fnv1a32(e["key"])).hex() == e["bytes"], "key prefix of %r" % e["key"])
        for e in h["type_hashes"]:
            self.expect(fnv1a64(e["type_name"]) == e["value"], "type hash of %r" % e["type_name"])
        for e in h["entity_digests"]:
            self.expect(entity_digest(e["ids"]) == e["value"], "digest of %r" % e["ids"])

    def frame(self, e, data):
        h = e["header"]
        channel, magic, version, flags, size, sequence, sender, time, type_hash = HEADER.unpack_from(data)
        name = e["name"]
        self.expect(magic == b"GK" and version == 2, name + ": magic and version")
        self.expect(flags & ~0x3F == 0, name + ": only known flags")
        self.expect([FLAGS[b] for b in sorted(FLAGS) if flags & b] == h["flag_names"], name + ": flags")
        for field, value in (("channel", channel), ("flags", flags), ("payload_size", size), ("sequence", sequence),
                             ("sender_id", sender), ("send_time_ns", time), ("type_hash", type_hash)):
            self.expect(value == h[field], "%s: %s" % (name, field))
        self.expect(channel == channel_of(h["channel_of"]["key"], h["channel_of"]["name"]), name + ": channel hash")
        expected_type = 0 if h["type_name"] is None else fnv1a64(h["type_name"])
        self.expect(type_hash == expected_type, name + ": type hash of the type name")
        body = data[48:]
        if flags & 0x01:
            body = zlib.decompress(body)  # any zlib stream that inflates to exactly payload_size is valid
        self.expect(len(body) == size, name + ": payload size")
        payload = unpack_exactly(body)
        self.expect(as_json(payload) == e["payload"]["msgpack"], name + ": payload")
        if not flags & 0x01:
            self.expect(msgpack.packb(from_json(e["payload"]["msgpack"]), use_bin_type=True) == body,
                        name + ": a standard msgpack packer writes the same payload")
        if flags & 0x10:
            self.expect(payload["t"] in ("seq", "end", "start") and payload["last"] == sequence, name + ": control frame")
        if flags & 0x04:
            self.expect(isinstance(payload, str) and flags & 0x02, name + ": an error reply is a str in a reply")

    def announcement(self, e, data):
        name = e["name"]
        self.expect(data[8] == 0 and data[9] == 1, name + ": bytes 8 and 9")
        self.expect(len(data) <= 1024, name + ": at most 1024 bytes")
        (channel,) = struct.unpack_from("<Q", data)
        self.expect(channel == e["channel"], name + ": channel")
        m = unpack_exactly(data[10:])
        self.expect(as_json(m) == e["map"], name + ": map")
        self.expect(msgpack.packb(m, use_bin_type=True) == data[10:], name + ": a standard msgpack packer writes the same map")
        if m.get("wildcard"):
            self.expect(channel == fnv1a32("dalek"), name + ": a key-wide channel is the key's 4 bytes and 4 zero bytes")
        elif m["kind"] == "subscriber":
            self.expect(channel == channel_of("dalek", m["topic"]), name + ": a subscriber's channel is its topic's")
        else:
            self.expect(channel == channel_of("dalek", directed_name(m["id"])), name + ": a server or client's own channel")

    def rule(self, e, data):
        name = e["name"]
        try:
            value = self.decoder.decode(e["type_name"], data)
            accepted, why = True, ""
        except Refused as r:
            accepted, why = False, str(r)
        self.expect(accepted == e["accept"], "%s: %s here (%s), %s in C++ (%s)" % (
            name, "accepted" if accepted else "refused", why, "accepted" if e["accept"] else "refused", e.get("error", "")))
        if accepted and e["accept"]:
            self.expect(value == e["value"], "%s: decoded %r, C++ %r" % (name, value, e["value"]))

    def message(self, e, data):
        name = e["name"]
        m = unpack_exactly(data)
        self.expect(as_json(m) == e["map"], name + ": map")
        self.expect(msgpack.packb(m, use_bin_type=True) == data, name + ": a standard msgpack packer writes the same bytes")
        if e["name"].startswith("discovery."):
            self.expect(m["v"] == 2 and isinstance(m["t"], str), name + ": v and t")
            if m["t"] == "add" and "schema" in m:
                # PROTOCOL.md section 3.1: a schema's types are schemas.json's entries, field for field.
                for t in m["schema"]["types"]:
                    known = self.decoder.types.get(t["type_name"])
                    self.expect(known is not None and t["fields"] == known["fields"],
                                name + ": the schema of %s is schemas.json's" % t["type_name"])
            if m["t"] == "directory":  # DISCOVERY.md section 4.1
                for c in m["channels"]:
                    self.expect(c["channel"] == (0 if c["service"] else channel_of("dalek", c["name"])), name + ": channel id")
                    self.expect(c["type_hash"] == (fnv1a64(c["type"]) if c["type"] else 0), name + ": type hash")
        else:
            self.expect(fnv1a64(e["type_name"]) == e["type_hash"], name + ": type hash")
            self.expect(self.decoder.decode(e["type_name"], data) == e["map"], name + ": decodes by schemas.json")

    def run(self):
        with open(os.path.join(self.directory, "index.json")) as f:
            index = json.load(f)
        with open(os.path.join(self.directory, "schemas.json")) as f:
            self.decoder = Decoder(json.load(f))
        self.hashes(index["hashes"])
        for e in index["vectors"]:
            data = self.read(e)
            self.expect(len(data) == e["size"], e["name"] + ": size")
            kind = e["name"].split(".")[0]
            if kind == "frame":
                self.frame(e, data)
            elif kind == "announcement":
                self.announcement(e, data)
            elif kind == "rule":
                self.rule(e, data)
            else:
                self.message(e, data)
        return len(index["vectors"])


def check_docs(checker, docs):
    """The documents name every vector, and PROTOCOL.md's annotated frame is frames/plain.hex."""
    texts = {}
    for name in ("PROTOCOL.md", "DISCOVERY.md"):
        with open(os.path.join(docs, name)) as f:
            texts[name] = f.read()
    both = texts["PROTOCOL.md"] + texts["DISCOVERY.md"]
    with open(os.path.join(checker.directory, "index.json")) as f:
        index = json.load(f)
    for e in index["vectors"]:
        checker.expect(os.path.basename(e["file"]) in both, "docs: %s is not named in PROTOCOL.md or DISCOVERY.md" % e["file"])
    # The example after "Example (`frames/plain.hex`": an indented block, hex groups then a description.
    lines = texts["PROTOCOL.md"].split("\n")
    start = next((i for i, l in enumerate(lines) if l.startswith("Example (`frames/plain.hex`")), None)
    checker.expect(start is not None, "docs: PROTOCOL.md has no annotated frames/plain.hex")
    if start is None:
        return
    hexdigits = set("0123456789abcdef")
    block, i = "", start + 1
    while i < len(lines) and not lines[i].startswith("    "):
        i += 1
    while i < len(lines) and lines[i].startswith("    "):
        for token in lines[i].split():
            if not set(token) <= hexdigits or len(token) % 2:
                break
            block += token
        i += 1
    entry = next(e for e in index["vectors"] if e["name"] == "frame.plain")
    checker.expect(bytes.fromhex(block) == checker.read(entry), "docs: PROTOCOL.md's annotated frame is not frames/plain.hex")


def main():
    args = sys.argv[1:]
    docs = None
    if len(args) >= 2 and args[0] == "--docs":
        docs, args = args[1], args[2:]
    directory = args[0] if args else os.path.join(os.path.dirname(os.path.abspath(__file__)), "vectors")
    checker = Checker(directory)
    count = checker.run()
    if docs:
        check_docs(checker, docs)
    for failure in checker.failures:
        print("FAILED:", failure)
    print("%d vectors, %d checks, %d failed" % (count, checker.checks, len(checker.failures)))
    return 1 if checker.failures else 0


if __name__ == "__main__":
    sys.exit(main())
