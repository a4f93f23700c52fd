# SPDX-License-Identifier: Apache-2.0
"""The Python package against the golden vectors of tests/conformance/vectors
(written by the C++ code): hashes, frames, announcements, the discovery
messages a node sends (byte for byte) and receives, message payloads, and
schemas.json against gecko.msgs."""

import json
import os

import msgpack
import pytest

import gecko
from gecko import discovery, message, wire
from gecko.msgs import by_name

VECTORS = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "conformance", "vectors"))
if not os.path.exists(os.path.join(VECTORS, "index.json")):
    pytest.skip("tests/conformance/vectors is not there", allow_module_level=True)
INDEX = json.load(open(os.path.join(VECTORS, "index.json")))
SCHEMAS = json.load(open(os.path.join(VECTORS, "schemas.json")))
BY_NAME = {v["name"]: v for v in INDEX["vectors"]}


def data(name):
    with open(os.path.join(VECTORS, BY_NAME[name]["file"])) as f:
        return bytes.fromhex("".join(f.read().split()))


def plain(v):
    """The index's JSON form of msgpack values back to Python values ({"bin": hex} -> bytes)."""
    if isinstance(v, dict):
        if list(v) == ["bin"]:
            return bytes.fromhex(v["bin"])
        return {k: plain(x) for k, x in v.items()}
    if isinstance(v, list):
        return [plain(x) for x in v]
    return v


def test_hashes():
    for h in INDEX["hashes"]["fnv1a32"]:
        assert wire.fnv1a32(h["input"]) == h["value"]
    for h in INDEX["hashes"]["fnv1a64"]:
        assert wire.fnv1a64(h["input"]) == h["value"]


@pytest.mark.parametrize("name", [n for n in BY_NAME if n.startswith("frame.")])
def test_frames(name):
    v = BY_NAME[name]
    b = data(name)
    h, body = wire.parse_frame(b, 1 << 20)
    e = v["header"]
    assert (h.channel, h.flags, h.payload_size, h.sequence, h.sender_id, h.send_time_ns, h.type_hash) == (
        e["channel"], e["flags"], e["payload_size"], e["sequence"], e["sender_id"], e["send_time_ns"], e["type_hash"])
    assert h.channel == wire.channel_of(e["channel_of"]["key"], e["channel_of"]["name"])
    if e.get("type_name"):
        assert h.type_hash == wire.type_hash(e["type_name"])
    payload = wire.inflate(body, h.payload_size) if h.flags & wire.FLAG_COMPRESSED else bytes(body)
    assert message.unpack(payload) == plain(v["payload"]["msgpack"])
    if not h.flags & wire.FLAG_COMPRESSED:
        assert wire.encode_header(h.channel, h.flags, h.payload_size, h.sequence, h.sender_id, h.send_time_ns,
                                  h.type_hash) + payload == b


@pytest.mark.parametrize("name", [n for n in BY_NAME if n.startswith("announcement.")])
def test_announcements(name):
    v = BY_NAME[name]
    m = v["map"]
    b = wire.encode_announcement(wire.channel_of(v["channel_of"]["key"], v["channel_of"]["name"]), m["id"], m["kind"],
                                 m["topic"], m["type"], m["node"], m["session"], m["depth"],
                                 wildcard=m.get("wildcard", False))
    assert b == data(name)
    a = wire.parse_announcement(data(name))
    assert (a.id, a.kind, a.topic, a.type, a.depth, a.wildcard) == (
        m["id"], m["kind"], m["topic"], m["type"], m["depth"], m.get("wildcard", False))


def test_node_messages_byte_for_byte():
    m = lambda n: BY_NAME["discovery." + n]["map"]  # noqa: E731
    q = m("query")
    assert discovery.query_msg(q["key"], q["node"], q["host"], q["pid"]) == data("discovery.query")
    h = m("hello")
    assert discovery.hello_msg(h["s"], h["secret"], h["key"], h["node"], h["host"], h["hostid"], h["pid"],
                               h["pidns"], h["lease_ms"], h["ids"], h["locators"], h["tool"]) == data("discovery.hello")
    for n in ("add_publisher", "add_subscriber", "add_server", "add_client"):
        a = m(n)
        assert discovery.add_msg(a["s"], a["secret"], a) == data("discovery." + n), n
    r = m("remove")
    assert discovery.remove_msg(r["s"], r["secret"], r["id"]) == data("discovery.remove")
    b = m("bye")
    assert discovery.bye_msg(b["s"], b["secret"]) == data("discovery.bye")
    hb = m("hb")
    assert msgpack.unpackb(discovery.hb_msg(hb["s"], hb["secret"], [])) .keys() == hb.keys()
    st = m("stats")
    links = [(link["s"], link["via"]) for link in st["links"]]
    assert discovery.stats_msg(st["s"], st["secret"], st["stats"], links) == data("discovery.stats")


def test_core_messages_parse():
    for name, v in BY_NAME.items():
        if name.startswith("discovery.") and v["direction"].startswith("core"):
            assert discovery.parse(data(name)) == plain(v["map"]), name


def test_digest_matches_core_answer():
    # the core's hb answer carries n and the digest of the session's ids
    ans = BY_NAME["discovery.hb_answer"]["map"]
    assert "digest" in ans and "n" in ans


@pytest.mark.parametrize("name", [n for n in BY_NAME if n.startswith("msgs.")])
def test_payloads(name):
    v = BY_NAME[name]
    cls = by_name(v["type_name"])
    msg = gecko.decode(cls, data(name))
    assert gecko.encode(msg) == data(name)
    assert message.to_dict(msg) == plain(v["map"])
    assert cls.__gecko_type_hash__ == v["type_hash"]


def schema_type(ft):
    """A FieldType in schemas.json's notation."""
    if isinstance(ft, message.Array):
        return {"array": schema_type(ft.elem), "size": ft.size}
    if isinstance(ft, message.List):
        return {"array": schema_type(ft.elem)}
    if isinstance(ft, message.Optional):
        return {"optional": schema_type(ft.elem)}
    if isinstance(ft, message.Map):
        return {"map": schema_type(ft.elem)}
    if isinstance(ft, message._MessageField):
        return {"message": ft.name}
    if isinstance(ft, message._EnumField):
        return {"enum": ft.name}
    return {"bytes": "bin"}.get(ft.name, ft.name)


def test_schemas_json_matches_gecko_msgs():
    checked = 0
    for t in SCHEMAS["types"]:
        cls = by_name(t["type_name"])
        if cls is None:
            assert not t["type_name"].startswith("gecko.msgs"), "gecko.msgs lacks " + t["type_name"]
            continue
        assert cls.__gecko_type_hash__ == t["type_hash"]
        assert [f["name"] for f in t["fields"]] == [n for n, _ in message.fields_of(cls)]
        assert message.to_dict(cls()) == plain(t["default"]), t["type_name"]
        checked += 1
    assert checked >= 16
