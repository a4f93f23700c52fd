# SPDX-License-Identifier: Apache-2.0
"""Message types and the msgpack codec, with the rules of C++ gecko/message.hpp.

A message is a msgpack map from field name to value, in declaration order.
Declare one with `define()`:

    Status = define("my_robot.Status", [
        ("stamp_ns", I64),
        ("mode", Mode),                 # an Enum made with enum_type()
        ("battery_cells", List(F64)),
    ])
    s = Status(stamp_ns=5, battery_cells=[3.7, 3.8])
    data = encode(s)
    back = decode(Status, data)

Field types and their wire form (as C++ writes them):

| field type                 | msgpack                               | Python value |
| -------------------------- | ------------------------------------- | ------------ |
| BOOL                       | true / false                          | bool |
| I8..I64, U8..U64           | int, smallest form                    | int |
| F32, F64                   | float32 / float64, always             | float |
| STR                        | str                                   | str |
| BYTES, ByteArray(N)        | bin                                   | bytes |
| List(T), Array(T, N)       | array                                 | list |
| Optional(T)                | nil when None, else the value         | T or None |
| Map(T)                     | map with str keys (sorted on the wire)| dict |
| a nested type (define())   | map                                   | instance |
| an enum (enum_type())      | str: the value's wire name            | member |

Decoding (decode()) follows C++ gecko::wire::decode:
- keys are matched by name; unknown keys are skipped; absent fields get their default;
- a float field accepts any int or float; an integer field only an int that fits
  (a float there, even 2.0, is an error); str is not bin and bin is not str;
  nil only where the field is Optional;
- a message map's keys must be str, and a field may appear only once;
- an enum accepts one of its names, or the number of one of its values;
- an Array(T, N) needs exactly N elements;
- arrays and maps nest at most MAX_DEPTH deep, unknown fields included;
- nothing may follow the message.
Every error is a gecko.DecodeError naming the type and the field path.
"""

import dataclasses
import enum
import functools
import struct

import msgpack

from ._field_types import (  # noqa: F401  (re-exported: the field types are part of this module's API)
    FieldType, BOOL, I8, I16, I32, I64, U8, U16, U32, U64, F32, F64, STR, BYTES, List, Array, ByteArray, Optional, Map,
    field_type, _Bail, _Bool, _Int, _Float, _Str, _Bytes, _MessageField, _EnumField, _check_map, _fail_type, _map_header,
    _pack, _printable)
from ._msgpack_tree import MAX_DEPTH, OddMap as _OddMap, type_word as _type_word, unpack as _unpack_tree
from ._msgpack_tree import unpack_value as unpack  # untyped reading: a key twice is an error at any depth
from .errors import DecodeError


# ===========================================================================
# Enums and message classes
# ===========================================================================

def enum_type(name, members):
    """An IntEnum whose values travel as names: members is [(py_name, number,
    wire_name), ...] (wire_name defaults to py_name). `member.wire` is its wire name."""
    items = [(m[0], m[1]) for m in members]
    cls = enum.IntEnum(name, items)
    by_name = {}
    for m in members:
        member = cls[m[0]]
        wire = m[2] if len(m) > 2 else m[0]
        member.wire = wire
        by_name[wire] = member
    cls.__gecko_by_name__ = by_name
    return cls


class Message:
    """Base of every message class made by define()."""
    __gecko_type__ = None
    __gecko_fields__ = ()
    __gecko_fast__ = None

    def to_dict(self):
        return to_dict(self)

    def encode(self):
        return encode(self)

    @classmethod
    def decode(cls, data):
        return decode(cls, data)


def define(type_name, fields, class_name=None, doc=None, module=None):
    """A dataclass for a message type. `fields` lists (name, field type[,
    default]) in wire order; `type_name` is its stable name ("gecko.msgs.Imu"),
    or None for a type that is only nested in others."""
    specs = []
    dc_fields = []
    for f in fields:
        name, ft = f[0], field_type(f[1])
        if len(f) > 2:
            dv = f[2]
            dc_fields.append((name, object, dataclasses.field(default_factory=(lambda dv=dv: _copy_default(dv)))))
        else:
            dc_fields.append((name, object, dataclasses.field(default_factory=ft.default)))
        specs.append((name, ft, _pack(name)))
    cname = class_name or (type_name.rsplit(".", 1)[-1] if type_name else "Nested")
    cls = dataclasses.make_dataclass(cname, dc_fields, bases=(Message,), eq=True)
    cls.__gecko_type__ = type_name
    cls.__gecko_fields__ = tuple(specs)
    cls.__gecko_names__ = {s[0]: s for s in specs}
    cls.__gecko_map_header__ = _map_header(len(specs))
    cls.__gecko_type_hash__ = None
    if type_name:
        from .wire import type_hash
        cls.__gecko_type_hash__ = type_hash(type_name)
    if doc:
        cls.__doc__ = doc
    if module:
        cls.__module__ = module
    cls.__gecko_defaults__ = None
    cls.__gecko_fast__ = {name: ft.fast for name, ft, _ in specs}
    # cls(**every field) only stores them (make_dataclass, no __post_init__): the
    # fast decode may store them itself. Not inherited (a subclass may do more).
    cls.__gecko_plain__ = True
    cls.__gecko_reader__ = None
    if _schema_depth(_MessageField(cls)) > MAX_DEPTH:
        cls.__gecko_fast__ = None
    else:
        cls.__gecko_reader__ = _make_reader(cls)
    return cls


def _copy_default(v):
    if isinstance(v, (list, dict)):
        return type(v)(v)
    if isinstance(v, Message):
        return dataclasses.replace(v)
    return v


def type_name_of(cls_or_msg):
    return cls_or_msg.__gecko_type__


def is_message_class(cls):
    return isinstance(cls, type) and issubclass(cls, Message) and cls.__gecko_type__ is not None


# ===========================================================================
# Encoding and decoding whole messages
# ===========================================================================

def _encode_message(msg, out):
    out.append(msg.__gecko_map_header__)
    for name, ft, key in msg.__gecko_fields__:
        out.append(key)
        try:
            ft.encode(getattr(msg, name), out)
        except (TypeError, ValueError, struct.error) as e:
            raise TypeError("%s field '%s': %s" % (msg.__gecko_type__ or type(msg).__name__, name, e))


def encode(msg):
    """The msgpack bytes of a message (exactly what C++ writes for it)."""
    out = []
    _encode_message(msg, out)
    return b"".join(out)


def _read_message(cls, tree):
    if tree.__class__ is not dict:
        if tree.__class__ is _OddMap:
            _check_map(tree)
        _fail_type(tree, "a map (a message)")
    names = cls.__gecko_names__
    values = {}
    for k, v in tree.items():
        spec = names.get(k)
        if spec is None:
            continue  # an unknown field: a newer writer
        try:
            values[k] = spec[1].read(v)
        except DecodeError as e:
            raise e.nest(k)
    return cls(**values)



_new = object.__new__


def _fast_message(cls, v):
    if v.__class__ is not tuple:
        raise _Bail
    readers = cls.__gecko_fast__
    values = {}
    for k, x in v:
        r = readers.get(k)  # None for an unknown field (its depth is unchecked here) and a key that is no str
        if r is None:
            raise _Bail
        values[k] = r(x)
    n = len(values)
    if n != len(v):
        raise _Bail  # a key twice
    if n == len(readers) and cls.__dict__.get("__gecko_plain__"):
        # Every field given (as C++ writes them): what cls(**values) makes, without its __init__.
        m = _new(cls)
        m.__dict__ = values
        return m
    return cls(**values)


def _bail():
    raise _Bail


def _field_expr(ft, x, consts):
    """Python source reading the fast-tree value named `x` as field type
    `ft` does (its fast()), inline where that is a type check; names of
    what it needs go into `consts`."""
    c = ft.__class__
    if c is _Str or c is _Float or c is _Bool or c is _Bytes:
        py = {_Str: "str", _Float: "float", _Bool: "bool", _Bytes: "bytes"}[c]
        return "(%s if %s.__class__ is %s else _bail())" % (x, x, py)
    if c is _Int:
        return "(%s if %s.__class__ is int and %d <= %s <= %d else _bail())" % (x, x, ft.lo, x, ft.hi)
    if c is Optional:
        return "(None if %s is None else %s)" % (x, _field_expr(ft.elem, x, consts))
    if c is List or c is Array:
        name = "_e%d" % len(consts)
        consts[name] = ft.elem.fast  # map() calls it from C: a float's or str's check costs no Python frame
        size = " and len(%s) == %d" % (x, ft.size) if c is Array else ""
        return "(list(map(%s, %s)) if %s.__class__ is list%s else _bail())" % (name, x, x, size)
    name = "_f%d" % len(consts)
    consts[name] = ft.fast  # a message's generated reader, an enum's lookup, a list's C-level map
    return "%s(%s)" % (name, x)


def _make_reader(cls):
    """A reader of the fast tree for a plain message class (define() makes
    only such), generated for its fields: when the map holds exactly its
    fields in wire order (as C++ and
    this module write them), the pairs are unpacked and each value checked
    inline, with no Python call per field; anything else takes
    _fast_message. The same result and the same bail-outs as _fast_message."""
    specs = cls.__gecko_fields__
    n = len(specs)
    if not n:
        return functools.partial(_fast_message, cls)
    consts = {"_bail": _bail, "_Bail": _Bail, "_new": _new, "_cls": cls,
              "_generic": functools.partial(_fast_message, cls)}
    pairs = ", ".join("(k%d, x%d)" % (i, i) for i in range(n))
    keys = " or ".join("k%d != %r" % (i, spec[0]) for i, spec in enumerate(specs))
    values = ", ".join("%r: %s" % (spec[0], _field_expr(spec[1], "x%d" % i, consts)) for i, spec in enumerate(specs))
    src = ("def read(v):\n"
           "    if v.__class__ is not tuple or len(v) != %d:\n"
           "        return _generic(v)\n"
           "    try:\n"
           "        %s%s = v\n"
           "    except (TypeError, ValueError):\n"
           "        raise _Bail\n"
           "    if %s:\n"
           "        return _generic(v)\n"
           "    m = _new(_cls)\n"
           "    m.__dict__ = {%s}\n"
           "    return m\n") % (n, pairs, "," if n == 1 else "", keys, values)
    exec(compile(src, "<gecko reader of %s>" % (cls.__gecko_type__ or cls.__name__), "exec"), consts)
    return consts["read"]


def _schema_depth(ft, seen=()):
    """How deep arrays and maps nest in a value of field type `ft`, at most."""
    if isinstance(ft, _MessageField):
        if ft.cls in seen:
            return MAX_DEPTH + 1
        return 1 + max([_schema_depth(f[1], seen + (ft.cls,)) for f in ft.cls.__gecko_fields__] or [0])
    if isinstance(ft, (List, Map)):
        return 1 + _schema_depth(ft.elem, seen)
    if isinstance(ft, Optional):
        return _schema_depth(ft.elem, seen)
    return 0


def _fast_tree(data):
    return msgpack.unpackb(data, raw=False, strict_map_key=False, unicode_errors="surrogateescape", timestamp=0,
                           object_pairs_hook=tuple)


def decode(cls, data):
    """The message of type `cls` in `data`. Raises gecko.DecodeError.

    Two ways, one result: first msgpack's C unpacker with maps as tuples of
    pairs (no Python call per map or array) read by the fields' fast();
    anything that way does not accept as is (an unknown field, a duplicate
    or non-str key, a type error, malformed input) is decoded again the exact
    way (unpack, then read()), which gives the result or the error. A
    schema that nests deeper than MAX_DEPTH is only decoded the exact way."""
    if cls.__gecko_fast__ is not None:
        read = cls.__dict__.get("__gecko_reader__")  # the class's own, never a base's (a subclass may do more)
        try:
            tree = _fast_tree(data)
            return read(tree) if read else _fast_message(cls, tree)
        except Exception:
            pass
    try:
        return _read_message(cls, _unpack_tree(data))
    except DecodeError as e:
        raise e.named(cls.__gecko_type__ or cls.__name__)


def decoder(cls, offset=0):
    """A function buffer -> message of `cls` decoded from buffer[offset:]:
    the same result and errors as decode(cls, buffer[offset:]) (a
    subscriber passes whole frames, offset 48: no payload copy first). A
    type whose only field is a BYTES (gecko.msgs.Bytes) has a fast path: the
    payload as C++ writes it, {key: bin 8}, is recognised by its bytes and
    the bin sliced out, without building a msgpack tree; any other payload
    takes decode()."""
    fields = cls.__gecko_fields__
    if len(fields) != 1 or fields[0][1].__class__ is not _Bytes or not cls.__dict__.get("__gecko_plain__"):
        if not offset:
            return functools.partial(decode, cls)
        return lambda data: decode(cls, data[offset:])
    prefix = cls.__gecko_map_header__ + fields[0][2]
    head = prefix + b"\xc4"              # ... then bin 8: one length byte, the bytes
    at_length = offset + len(head)       # where the length byte is
    at_data = at_length + 1              # where the bytes start
    name = fields[0][0]
    new = object.__new__  # the instance cls(v) makes, without the dataclass __init__'s frame

    def decode_bytes_message(data):
        if data.__class__ is bytes and data.startswith(head, offset) and len(data) > at_length \
                and data[at_length] == len(data) - at_data:
            m = new(cls)
            m.__dict__ = {name: data[at_data:]}
            return m
        return decode(cls, data[offset:] if offset else data)  # bin 16/32, a memoryview, or not this shape

    return decode_bytes_message


def from_tree(cls, tree):
    """A message of `cls` from an already unpacked tree (dicts, lists)."""
    try:
        return _read_message(cls, tree)
    except DecodeError as e:
        raise e.named(cls.__gecko_type__ or cls.__name__)


def from_dict(cls, d):
    """A message of `cls` from a dict, checked as decode() checks bytes
    (enum members and nested messages may be given as such)."""
    return decode(cls, _pack(to_plain(d)))


def to_plain(v):
    """Messages and enums to dicts and wire names, recursively."""
    if isinstance(v, Message):
        return {name: to_plain(getattr(v, name)) for name, _, _ in v.__gecko_fields__}
    if isinstance(v, enum.Enum) and hasattr(v, "wire"):
        return v.wire
    if isinstance(v, dict):
        return {k: to_plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [to_plain(x) for x in v]
    return v


def to_dict(msg):
    """A message as plain dicts, lists and values (enums as their wire names)."""
    return to_plain(msg)


def fields_of(cls):
    """[(name, FieldType)] of a message class, in wire order."""
    return [(s[0], s[1]) for s in cls.__gecko_fields__]
