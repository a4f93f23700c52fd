# SPDX-License-Identifier: Apache-2.0
"""The msgpack codec: golden bytes written by C++ (tests/wire/golden_test.cpp)
decode and re-encode byte for byte, and the decoding rules of
gecko/message.hpp hold (each with a C++-worded error)."""

import math
import os
import re
import struct

import msgpack
import pytest

import gecko
from gecko import message
from gecko.msgs import (Bytes, Empty, Float64, Image, Imu, Int64, JointState, Lidar, Quaternion, String,
                        Vector3, click)

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def golden_vectors():
    text = open(os.path.join(ROOT, "tests", "wire", "golden_test.cpp"), encoding="utf-8").read()
    out = {}
    for m in re.finditer(r"const Bytes (\w+) = \{(.*?)\};", text, re.S):
        out[m.group(1)] = bytes(int(x, 16) for x in re.findall(r"0x([0-9a-f]{2})", m.group(2)))
    return out


GOLDEN = golden_vectors()
TYPES = {"vector3": Vector3, "imu": Imu, "bytes": Bytes, "joint_state": JointState, "lidar": Lidar,
         "image": Image, "int64": Int64, "string": String, "empty": Empty, "click_reset": click.Reset,
         "click_sensor_value": click.SensorValue, "click_control": click.Control,
         "click_handshake": click.Handshake, "click_sensor": click.Sensor}


def test_golden_vectors_found():
    assert set(TYPES) <= set(GOLDEN), "tests/wire/golden_test.cpp changed its vectors"


@pytest.mark.parametrize("name", sorted(TYPES))
def test_golden_round_trip(name):
    cls = TYPES[name]
    msg = message.from_tree(cls, message.unpack(GOLDEN[name])) if cls.__gecko_type__ is None else gecko.decode(cls, GOLDEN[name])
    assert gecko.encode(msg) == GOLDEN[name]


def test_golden_values():
    imu = gecko.decode(Imu, GOLDEN["imu"])
    assert imu.stamp_ns == 1700000000123456789 and imu.frame_id == "imu_link"
    assert imu.accel == Vector3(0.11, -0.02, 9.81)
    lidar = gecko.decode(Lidar, GOLDEN["lidar"])
    assert lidar.ranges[1] == math.inf and math.copysign(1, lidar.ranges[2]) < 0
    # msgpack-c once wrote integral doubles as ints: still read, written as float64 now
    before = gecko.decode(click.Sensor, GOLDEN["click_sensor_before"])
    assert gecko.encode(before) == GOLDEN["click_sensor"]
    hs = gecko.decode(click.Handshake, GOLDEN["click_handshake"])
    assert hs.control_type == click.ValueType.multiple
    assert hs.objects["r"].control_types_in_order == [click.ValueType.angle, click.ValueType.torque_1d]


def err(cls, obj_or_bytes):
    data = obj_or_bytes if isinstance(obj_or_bytes, bytes) else msgpack.packb(obj_or_bytes, use_bin_type=True)
    with pytest.raises(gecko.DecodeError) as e:
        gecko.decode(cls, data)
    assert e.value.code == "decode"
    return str(e.value)


def test_rules_numbers():
    assert gecko.decode(Float64, msgpack.packb({"data": 2})).data == 2.0  # an int in a float field
    assert err(Int64, {"data": 2.0}) == "gecko.msgs.Int64: field 'data' has msgpack type float, expected an integer"
    assert "out of range for uint32" in err(Image, {"width": -1})
    assert "out of range for int64" in err(Int64, {"data": 2 ** 63})
    assert err(Imu, {"accel": {"x": "1"}}) == "gecko.msgs.Imu: field 'accel.x' has msgpack type str, expected a number"
    assert "expected a bool" in err(click.Control, {"objects": {"r": {"control_events": {"g": 1}}}})


def test_rules_str_bin_nil():
    assert "has msgpack type bin, expected a str" in err(String, {"data": b"x"})
    assert "has msgpack type str, expected a bin" in err(Bytes, {"data": "x"})
    assert "has msgpack type nil" in err(String, {"data": None})
    assert gecko.decode(click.Sensor, msgpack.packb({"simulated_time": None})).simulated_time is None
    assert gecko.decode(click.Sensor, msgpack.packb({"simulated_time": 1.5})).simulated_time == 1.5


def test_rules_maps():
    dup = b"\x82\xa4data\x01\xa4data\x02"
    assert err(Int64, dup) == "gecko.msgs.Int64: field 'data' appears twice in the map"
    assert "expected str" in err(Int64, {1: 2})
    assert "expected a map (a message)" in err(Int64, [1])
    assert "field 'objects.r.control_events' has msgpack type array" in err(
        click.Control, {"objects": {"r": {"control_events": []}}})
    # unknown keys are skipped, absent ones get their default (Quaternion w = 1)
    assert gecko.decode(Quaternion, msgpack.packb({"x": 0.5, "later": [1, {"a": None}]})) == Quaternion(1.0, 0.5, 0, 0)
    # a duplicate inside an unknown (skipped) value is not the message's concern
    assert gecko.decode(Int64, b"\x82\xa4data\x01\xa3odd\x82\xa1a\x01\xa1a\x02").data == 1


def untyped(data):
    try:
        message.unpack(bytes(data))
        return "accepted"
    except gecko.DecodeError as e:
        assert e.code == "decode"
        return str(e)


def test_untyped_reading_refuses_a_key_twice_at_any_depth():
    # PROTOCOL.md 3: the cases of tests/wire/value_test.cpp, with its texts
    assert untyped(b"\x82\xa1a\x01\xa1a\x02") == "field 'a' appears twice in the map"
    assert untyped(b"\x82\xa1a\x01\xd9\x01a\x02") == "field 'a' appears twice in the map"  # fixstr, str8
    assert untyped(b"\x82\x01\xc0\xcd\x00\x01\xc0") == "field '1' appears twice in the map"  # 1, uint16 1
    assert untyped(b"\x82\xff\xc0\xd0\xff\xc0") == "field '-1' appears twice in the map"      # -1, int8 -1
    assert untyped(b"\x82\xc4\x01b\x01\xc4\x01b\x02") == "the message has the same bin key twice"
    assert untyped(b"\x81\xa1x\x91\x82\xa1k\x01\xa1k\x02") == "field 'x[0].k' appears twice in the map"
    assert untyped(b"\x81\x82\x01\x01\x01\x02\xc0") == "field '1' appears twice in the map"  # in a map key
    # keys that only look alike are different keys: str "1", int 1, float64 1.0, bin "1"
    assert untyped(b"\x84\xa11\x01\x01\x02\xcb\x3f\xf0\x00\x00\x00\x00\x00\x00\x03\xc4\x011\x04") == "accepted"

    def big(n, repeat):
        pk = msgpack.Packer()
        out = pk.pack_map_header(n)
        for i in range(n):
            out += pk.pack("key%d" % (repeat if i == n - 1 and repeat >= 0 else i)) + pk.pack(i)
        return out
    assert untyped(big(1000, -1)) == "accepted"
    assert untyped(big(1000, 3)) == "field 'key3' appears twice in the map"
    assert untyped(big(17, 0)) == untyped(big(16, 0)) == "field 'key0' appears twice in the map"

    # other keys by their bytes: float32 1.0 and float64 1.0 differ, float64 1.0 twice does not
    f32, f64 = b"\xca\x3f\x80\x00\x00", b"\xcb\x3f\xf0" + bytes(6)
    assert untyped(b"\x82" + f32 + b"\x01" + f64 + b"\x02") == "accepted"
    assert untyped(b"\x82" + f64 + b"\x01" + f64 + b"\x02") == "the message has the same float64 key twice"
    assert untyped(b"\x82\x91\x01\x01\x91\xcc\x01\x02") == "accepted"  # [1] and [uint8 1]
    assert untyped(b"\x82\xc0\x01\xc0\x02") == "the message has the same nil key twice"
    # the path through a key that is no str, and through an array
    assert untyped(b"\x81\x07\x82\xa1a\x01\xa1a\x02") == "field '<int key>.a' appears twice in the map"
    assert untyped(b"\x92\x80\x82\x01\xc0\x01\xc0") == "field '[1].1' appears twice in the map"
    # a map's own keys are checked before what its values hold
    assert untyped(b"\x83\xa1x\x82\xa1k\x01\xa1k\x02\xa1y\x01\xa1y\x02") == "field 'y' appears twice in the map"
    # typed reading skips an unknown field whatever it holds, as before
    assert gecko.decode(Int64, b"\x82\xa4data\x01\xa3odd\x82\xa1a\x01\xa1a\x02").data == 1
    assert untyped(b"\x82\xa4data\x01\xa3odd\x82\xa1a\x01\xa1a\x02") == "field 'odd.a' appears twice in the map"
    assert message.unpack(b"\x82\xa4data\x01\x01\x02") == {"data": 1, 1: 2}


def test_rules_enums_arrays_structure():
    assert gecko.decode(click.Reset, msgpack.packb({"direction": 1})).direction == click.Direction.answer
    assert 'is "sideways", not a name of Direction (request, answer)' in err(click.Reset, {"direction": "sideways"})
    assert "is 7, not the number of a Direction enumerator" in err(click.Reset, {"direction": 7})
    sensor = {"objects": {"o": {"force_sensors": [[1.0, 2.0]]}}}
    assert "field 'objects.o.force_sensors[0]' is an array of 2 elements, expected 3" in err(click.Sensor, sensor)
    assert "trailing" in err(Int64, msgpack.packb({"data": 1}) + b"\x00")
    assert "cut short" in err(Int64, msgpack.packb({"data": "abcdef"})[:-2])
    deep = b"\x81\xa1z" + b"\x91" * 64 + b"\x01"
    assert "nests arrays and maps more than 64 deep" in err(Int64, deep)
    ok = b"\x81\xa1z" + b"\x91" * 62 + b"\x01"   # 63 levels plus the message map
    assert gecko.decode(Int64, ok).data == 0
    assert "0xc1" in err(Int64, b"\xc1") or "not msgpack" in err(Int64, b"\xc1")


def test_encode_forms():
    assert gecko.encode(Float64(data=1)) == b"\x81\xa4data\xcb" + struct.pack(">d", 1.0)
    assert gecko.encode(Lidar(ranges=[1.5]))[-5:] == b"\xca" + struct.pack(">f", 1.5)
    assert gecko.encode(Lidar(ranges=[1e40]))[-4:] == struct.pack(">f", math.inf)
    with pytest.raises((TypeError, ValueError)):
        gecko.encode(Image(width=-1))
    # map keys are sorted as std::map sorts them
    c = click.Control(objects={"b": click.ControlObject(), "a": click.ControlObject()})
    assert list(gecko.decode(click.Control, gecko.encode(c)).objects) == ["a", "b"]
    assert gecko.encode(c).index(b"\xa1a") < gecko.encode(c).index(b"\xa1b")


def test_dict_form_and_enum_names():
    r = message.from_dict(click.Reset, {"direction": "answer", "answers": 3})
    assert r == click.Reset(direction=click.Direction.answer, answers=3)
    assert message.to_dict(r) == {"direction": "answer", "request_id": 0, "answers": 3}
    assert message.unpack(gecko.encode(Vector3(1, 2, 3))) == {"x": 1.0, "y": 2.0, "z": 3.0}


# ---- the generated readers (message._make_reader) against the generic and exact decoders ----

def _message_classes():
    import importlib
    import pkgutil
    import gecko.msgs as pkg
    seen = {}
    for mod in [pkg] + [importlib.import_module("gecko.msgs." + m.name) for m in pkgutil.iter_modules(pkg.__path__)]:
        for v in vars(mod).values():
            if isinstance(v, type) and issubclass(v, message.Message) and v.__gecko_fields__:
                seen[id(v)] = v
    return sorted(seen.values(), key=lambda c: (c.__gecko_type__ or "", c.__name__))


def _random_value(ft, rnd, depth=0):
    c = ft.__class__
    if c is message._Bool:
        return rnd.random() < 0.5
    if c is message._Int:
        return rnd.choice([ft.lo, ft.hi, 0, rnd.randint(ft.lo, ft.hi)])
    if c is message._Float:
        x = rnd.choice([0.0, -1.5, 1e300, rnd.uniform(-1e6, 1e6)])
        return struct.unpack(">f", struct.pack(">f", min(x, 3e38)))[0] if ft.single else x
    if c is message._Str:
        return rnd.choice(["", "a", "joint_1", "é"])
    if c is message._Bytes:
        return bytes(rnd.randrange(256) for _ in range(rnd.randrange(4)))
    if c is message.ByteArray:
        return bytes(rnd.randrange(256) for _ in range(ft.size))
    if c is message._EnumField:
        return rnd.choice(list(ft.cls))
    if c is message.Optional:
        return None if rnd.random() < 0.3 or depth > 3 else _random_value(ft.elem, rnd, depth + 1)
    if c is message.Array:
        return [_random_value(ft.elem, rnd, depth + 1) for _ in range(ft.size)]
    if c is message.List:
        return [_random_value(ft.elem, rnd, depth + 1) for _ in range(0 if depth > 3 else rnd.randrange(3))]
    if c is message.Map:
        return {"k%d" % i: _random_value(ft.elem, rnd, depth + 1) for i in range(0 if depth > 3 else rnd.randrange(3))}
    if c is message._MessageField:
        return _random_message(ft.cls, rnd, depth + 1)
    raise AssertionError("no generator for %r" % (ft,))


def _random_message(cls, rnd, depth=0):
    return cls(**{name: _random_value(ft, rnd, depth) for name, ft, _ in cls.__gecko_fields__})


def _outcome(fn):
    try:
        return ("ok", fn())
    except gecko.DecodeError as e:
        return ("error", str(e))


def _mutations(tree, rnd):
    """Maps as dicts, as message.unpack gives them: variants that the exact decoder judges."""
    yield tree
    if isinstance(tree, dict) and tree:
        keys = list(tree)
        yield dict(reversed(list(tree.items())))                       # another order
        yield {k: v for k, v in tree.items() if k != keys[0]}          # a field missing
        yield dict(tree, later=[1, {"a": None}])                       # an unknown field
        k = rnd.choice(keys)
        v = tree[k]
        for other in (1, 2.5, "x", b"x", None, [], {}, True, [1.0, "x"], 2 ** 64 - 1, -2 ** 63):
            if other != v:
                yield dict(tree, **{k: other})                         # a value of another type or range


@pytest.mark.parametrize("cls", _message_classes(), ids=lambda c: c.__gecko_type__ or c.__name__)
def test_generated_readers_agree_with_the_exact_decoder(cls):
    import random
    rnd = random.Random(hash(cls.__name__) & 0xFFFF)
    assert cls.__gecko_reader__ is not None or cls.__gecko_fast__ is None
    for _ in range(30):
        m = _random_message(cls, rnd)
        data = gecko.encode(m)
        assert gecko.decode(cls, data) == m
        assert message.decode(cls, data) == message.from_tree(cls, message.unpack(data))
        for variant in _mutations(message.unpack(data), rnd):
            try:
                vdata = msgpack.packb(variant, use_bin_type=True)
            except (TypeError, OverflowError):
                continue
            fast = _outcome(lambda: gecko.decode(cls, vdata))
            exact = _outcome(lambda: message.from_tree(cls, message.unpack(vdata)))
            assert fast == exact, (cls.__name__, variant)
            if cls.__gecko_reader__ is not None:  # the generated reader and the generic one read the tree alike
                tree = message._fast_tree(vdata)
                got = _outcome_any(lambda: cls.__gecko_reader__(tree))
                generic = _outcome_any(lambda: message._fast_message(cls, tree))
                assert got == generic, (cls.__name__, variant)


def _outcome_any(fn):
    try:
        return ("ok", fn())
    except Exception:
        return ("bail", None)
