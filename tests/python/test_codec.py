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
