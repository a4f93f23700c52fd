# SPDX-License-Identifier: Apache-2.0
"""Schemas, name rules and the channel directory's merge, without processes:
the schema Python builds for each gecko.msgs type against schemas.json
(byte for byte, encoded the same way) and against the golden discovery
vectors (add_publisher_typed, add_key_wide, watch_directory,
directory_full, directory_delta), the decode bounds and the payload check
in the C++ wording, glob matching, and the directory's merge rules
(docs/DISCOVERY.md §4.1)."""

import json
import os

import msgpack
import pytest

from conftest import ROOT

import gecko
from gecko import discovery, msgs, names, wire
from gecko._session.directory import KNOWN, UNKNOWN, Directory, TopicFilter
from gecko.schema import Schema, schema_for, schema_of

VECTORS = os.path.join(ROOT, "tests", "conformance", "vectors")
INDEX = json.load(open(os.path.join(VECTORS, "index.json")))
BY_NAME = {v["name"]: v for v in INDEX["vectors"]}
SCHEMAS = json.load(open(os.path.join(VECTORS, "schemas.json")))


def data(name):
    with open(os.path.join(VECTORS, BY_NAME[name]["file"])) as f:
        return bytes.fromhex("".join(f.read().split()))


# ---- schemas ----

@pytest.mark.parametrize("entry", [t for t in SCHEMAS["types"] if msgs.by_name(t["type_name"])],
                         ids=lambda t: t["type_name"])
def test_the_schema_of_each_gecko_msgs_type_is_schemas_json_s(entry):
    built = schema_of(msgs.by_name(entry["type_name"]))
    assert built.types[0].type_name == entry["type_name"]
    want = msgpack.packb({"type_name": entry["type_name"], "fields": entry["fields"]}, use_bin_type=True)
    assert msgpack.packb(built.types[0].to_tree(), use_bin_type=True) == want
    # complete by itself: every message type a field names is among its types, and it decodes back
    assert Schema.decode(built.encode()) == built


def test_every_gecko_msgs_type_is_in_schemas_json():
    listed = {t["type_name"] for t in SCHEMAS["types"]}
    assert {cls.__gecko_type__ for cls in msgs.ALL} <= listed


def test_the_typed_add_vector_carries_the_schema_python_builds_for_string():
    v = BY_NAME["discovery.add_publisher_typed"]["map"]
    assert schema_of(msgs.String).to_tree() == v["schema"]
    reg = dict(v, schema=schema_of(msgs.String).to_tree())
    assert discovery.add_msg(v["s"], v["secret"], reg) == data("discovery.add_publisher_typed")


def test_the_key_wide_add_and_watch_directory_vectors():
    v = BY_NAME["discovery.add_key_wide"]["map"]
    assert discovery.add_msg(v["s"], v["secret"], v) == data("discovery.add_key_wide")
    w = BY_NAME["discovery.watch_directory"]["map"]
    assert discovery.watch_directory_msg(w["s"], w["secret"]) == data("discovery.watch_directory")
    # a filter of everything travels as empty arrays
    every = discovery.parse(discovery.add_msg(1, 2, {"id": 3, "kind": "subscriber", "topic": "*", "type": "",
                                                     "wildcard": True, "filter": {}}))
    assert every["wildcard"] is True and every["filter"] == {"topics": [], "types": []}


def test_a_service_schema_holds_both_types_and_every_nested_one():
    declared = {}
    for cls in (msgs.Imu, msgs.Pose):
        for t in schema_of(cls).types:
            declared.setdefault(t.type_name, t)
    s = schema_for("gecko.msgs.Imu->gecko.msgs.Pose", declared)
    assert [t.type_name for t in s.types] == ["gecko.msgs.Imu", "gecko.msgs.Vector3", "gecko.msgs.Quaternion",
                                              "gecko.msgs.Pose"]
    assert schema_for("gecko.msgs.Imu->my.Undeclared", declared) is None  # a schema must be complete


def test_define_d_types_and_every_field_kind():
    Mode = gecko.enum_type("Mode", [("idle", 0), ("run", 3, "Run")])
    Inner = gecko.define(None, [("k", gecko.message.U8)])
    Leaf = gecko.define("t.Leaf", [("v", gecko.message.F32)])
    M = gecko.define("t.All", [
        ("b", gecko.message.BOOL), ("i", gecko.message.I16), ("u", gecko.message.U64), ("s", gecko.message.STR),
        ("raw", gecko.message.BYTES), ("fixed", gecko.message.ByteArray(4)), ("l", gecko.message.List(Leaf)),
        ("a", gecko.message.Array(gecko.message.F64, 3)), ("o", gecko.message.Optional(gecko.message.I8)),
        ("m", gecko.message.Map(Inner)), ("mode", Mode)])
    s = schema_of(M)
    assert [t.type_name for t in s.types] == ["t.All", "t.Leaf"]
    assert [str(f.type) for f in s.types[0].fields] == [
        "bool", "int16", "uint64", "str", "bin", "bin[4]", "t.Leaf[]", "float64[3]", "int8 or nil",
        "map<str, struct>", "enum Mode"]
    assert s.types[0].fields[-1].type.to_tree() == {"enum": "Mode", "names": ["idle", "Run"], "values": [0, 3]}
    assert Schema.decode(s.encode()) == s
    good = M(fixed=b"1234", mode=Mode.run).encode()
    assert s.check("t.All", good, strict=True) == ""


@pytest.mark.parametrize("tree,says", [
    ({"types": []}, "'types' holds 1 to 256 types"),
    ({"types": [{"type_name": "a.B", "fields": [{"name": "x", "type": "float16"}]}]}, "unknown type 'float16'"),
    ({"types": [{"type_name": "a.B", "fields": [{"name": "x", "type": {"message": "a.C"}}]}]},
     "a field names message type 'a.C', which 'types' does not hold"),
    ({"types": [{"type_name": "a.*", "fields": []}]}, "has '*' or '?'"),
    ({"types": [{"type_name": "a.B", "fields": [{"name": "x", "type": "str"}, {"name": "x", "type": "str"}]}]},
     "field 'x' twice"),
    ({"types": [{"type_name": "a.B", "fields": [{"name": "x", "type": {"optional": "str"} if False else
                                                 {"array": {"array": {"array": {"array": {"array": {"array": {
                                                     "array": {"array": {"array": {"array": {"array": {"array": {
                                                         "array": {"array": {"array": {"array": {"array": "str"}}}}}}}}}}}}}}}}}}]}]},
     "nests more than 16 levels deep"),
    ({"types": [{"type_name": "a.B", "fields": [{"name": "e", "type": {"enum": "E", "names": ["a"], "values": []}}]}]},
     "an enum needs 'names' and 'values'"),
])
def test_a_schema_that_does_not_decode_says_why(tree, says):
    with pytest.raises(gecko.Error, match="^schema: .*" + says.replace("(", r"\(").replace(")", r"\)")
                       .replace("*", r"\*").replace("?", r"\?")) as e:
        Schema.decode(msgpack.packb(tree))
    assert e.value.code == "decode"


def test_a_schema_above_64_kib_is_refused():
    big = {"types": [{"type_name": "a.B", "fields": [{"name": "f%05d" % i + "x" * 200, "type": "str"}
                                                     for i in range(400)]}]}
    with pytest.raises(gecko.Error, match=r"schema: \d+ bytes \(at most 65536\)"):
        Schema.decode(msgpack.packb(big))


def test_the_payload_check_in_the_cpp_wording():
    s = schema_of(msgs.Imu)
    assert s.check("gecko.msgs.Imu", msgpack.packb({"acel": {}}), strict=True) == (
        "gecko.msgs.Imu has no field 'acel'; its fields are: stamp_ns, frame_id, accel, gyro, mag, orientation")
    assert s.check("gecko.msgs.Imu", msgpack.packb({"acel": {}})) == ""  # as a receiver: skipped
    assert s.check("gecko.msgs.Imu", msgpack.packb({"accel": {"x": "a"}})) == (
        "gecko.msgs.Imu: field 'accel.x' has msgpack type str, expected a number")
    assert s.check("gecko.msgs.Imu", msgpack.packb({"accel": {"y": 1, "q": 1}}), strict=True) == (
        "gecko.msgs.Vector3 has no field 'q'; its fields are: x, y, z")
    assert s.check("gecko.msgs.Imu", msgpack.packb({"stamp_ns": 2.0})) == (
        "gecko.msgs.Imu: field 'stamp_ns' has msgpack type float, expected an integer")
    assert s.check("gecko.msgs.Imu", msgpack.packb([1])) == "not a msgpack map (a message) but array"
    assert s.check("other.Type", b"\xc1") == ""  # not in this schema: nothing to check against
    sensor = schema_of(msgs.click.Sensor)
    assert sensor.check("gecko.msgs.click.Sensor", msgpack.packb({"objects": {"o": {"force_sensors": [[1, 2]]}}})) == (
        "gecko.msgs.click.Sensor: field 'objects['o'].force_sensors[0]' has 2 items, expected exactly 3")
    reset = schema_of(msgs.click.Reset)
    assert reset.check("gecko.msgs.click.Reset", msgpack.packb({"direction": "Answer"})) == (
        "gecko.msgs.click.Reset: field 'direction' is not one of Direction's names: request, answer")
    assert reset.check("gecko.msgs.click.Reset", msgpack.packb({"direction": 1})) == ""


# ---- names ----

@pytest.mark.parametrize("bad", ["arm1/*", "a?b", "*"])
def test_names_refuse_globs(bad, rig_less_node):
    with pytest.raises(gecko.Error, match=r"has '\*' or '\?', which match names in filters") as e:
        rig_less_node.publisher(bad, msgs.String)
    assert e.value.code == "invalid_argument"
    with pytest.raises(gecko.Error, match=r"has '\*' or '\?'"):
        rig_less_node.subscriber(bad, msgs.String)
    with pytest.raises(gecko.Error, match=r"the type name has '\*' or '\?', which match names in filters"):
        rig_less_node.publisher("fine", "my." + bad)


@pytest.fixture
def rig_less_node():
    n = gecko.Node("schema_test", "names", discovery=False)
    yield n
    n.close()


@pytest.mark.parametrize("pattern,text,match", [
    ("*", "", True), ("*", "arm1/joint/3", True), ("arm1/*", "arm1/joint", True), ("arm1/*", "arm2/joint", False),
    ("arm?", "arm1", True), ("arm?", "arm12", False), ("*joint*", "arm/joint5", True), ("a*b*c", "aXbYbZc", True),
    ("a*b*c", "aXbYbZ", False), ("imu", "imu", True), ("imu", "imu2", False), ("**", "x", True),
])
def test_glob_match(pattern, text, match):
    assert names.glob_match(pattern, text) is match


def test_a_filter_s_patterns_are_checked():
    assert TopicFilter(("arm1/*",), ("gecko.msgs.*",)).matches("arm1/a", "gecko.msgs.Imu")
    assert not TopicFilter(("arm1/*",), ("gecko.msgs.*",)).matches("arm1/a", "my.Imu")
    with pytest.raises(gecko.Error, match="key-wide subscription: pattern 'a b': the pattern has a space"):
        TopicFilter(("a b",))
    with pytest.raises(gecko.Error, match="needs at least one topic and one type pattern"):
        TopicFilter(())


# ---- the directory's merge ----

def _message(name):
    return discovery.parse(data(name))


def test_the_directory_merges_the_vectors():
    d = Directory()
    full = _message("discovery.directory_full")
    events = d.apply(full["partial"], full["channels"], [])
    assert d.state == KNOWN
    assert [(e.kind, e.channel.topic, e.channel.service) for e in events] == [
        ("added", "chatter", False), ("added", "add", True)]
    chatter = d.topic("chatter")
    assert chatter.channel == wire.channel_of("dalek", "chatter") and chatter.type_name == "gecko.msgs.String"
    assert chatter.type_hash == wire.type_hash("gecko.msgs.String") and chatter.schema is None
    assert chatter.publishers[0] == (72623859790382856, "talker", "robot1", "gecko.msgs.String", False)
    assert [c.topic for c in d.snapshot()] == ["chatter", "add"]  # topics, then services
    delta = _message("discovery.directory_delta")
    events = d.apply(delta["partial"], delta["channels"], [])
    assert [(e.kind, e.channel.topic, e.channel.publishers) for e in events] == [("changed", "chatter", ())]
    assert d.apply(delta["partial"], delta["channels"], []) == []  # a change that leaves it as it was
    # a delta that removes; a name in `gone` and among the entries stays
    events = d.apply(True, [], [(True, "add"), (False, "nothing")])
    assert [(e.kind, e.channel.topic) for e in events] == [("removed", "add")]
    # a full set replaces what was known
    events = d.apply(False, [dict(full["channels"][1])], [])
    assert sorted((e.kind, e.channel.topic) for e in events) == [("added", "add"), ("removed", "chatter")]


def test_the_directory_is_unknown_until_a_full_set_and_decodes_schemas():
    d = Directory()
    entry = dict(_message("discovery.directory_full")["channels"][0], schema=schema_of(msgs.String).to_tree())
    d.apply(True, [entry], [])  # warm-up: partial, nothing known for sure yet
    assert d.state == UNKNOWN and d.wait(0.01) == UNKNOWN
    assert d.topic("chatter").schema == schema_of(msgs.String)
    d.apply(False, [entry], [])
    assert d.state == KNOWN
    bad = dict(entry, schema={"types": "no"})  # one that does not decode is left out, not trusted
    events = d.apply(True, [bad], [])
    assert events[0].kind == "changed" and events[0].channel.schema is None
