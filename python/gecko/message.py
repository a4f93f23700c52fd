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

from ._msgpack_tree import MAX_DEPTH, OddMap as _OddMap, type_word as _type_word, unpack as _unpack_tree
from ._msgpack_tree import unpack_value as unpack  # untyped reading: a key twice is an error at any depth
from .errors import DecodeError

_packer = msgpack.Packer(use_bin_type=True, unicode_errors="surrogateescape", autoreset=True)
_pack = _packer.pack
_F64 = struct.Struct(">Bd")
_F32 = struct.Struct(">Bf")


# ===========================================================================
# Field types
# ===========================================================================

class FieldType:
    """How one field travels: encode(value, out) appends bytes to the list
    `out`; read(tree_value) returns the Python value or raises DecodeError."""
    name = "?"

    def default(self):
        raise NotImplementedError

    def encode(self, v, out):
        raise NotImplementedError

    def read(self, v):
        raise NotImplementedError

    def fast(self, v):
        """read() of the fast tree (see decode()): maps there are tuples
        of (key, value) pairs; raises anything (_Bail, DecodeError) where
        read() of the exact tree could do otherwise than return the same value."""
        return self.read(v)

    def __repr__(self):
        return self.name


def _fail_type(v, expected):
    raise DecodeError("has msgpack type %s, expected %s" % (_type_word(v), expected))


class _Bool(FieldType):
    name = "bool"

    def default(self):
        return False

    def encode(self, v, out):
        out.append(b"\xc3" if v else b"\xc2")

    def read(self, v):
        if v.__class__ is not bool:
            _fail_type(v, "a bool")
        return v

    fast = read


class _Int(FieldType):
    def __init__(self, bits, signed):
        self.name = ("int%d" if signed else "uint%d") % bits
        self.lo = -(1 << (bits - 1)) if signed else 0
        self.hi = (1 << (bits - 1)) - 1 if signed else (1 << bits) - 1

    def default(self):
        return 0

    def encode(self, v, out):
        if v.__class__ is not int:
            if isinstance(v, bool) or not hasattr(v, "__index__"):
                raise TypeError("%s field: %r is not an integer" % (self.name, v))
            v = v.__index__()
        if not self.lo <= v <= self.hi:
            raise ValueError("%d is out of range for %s" % (v, self.name))
        out.append(_pack(v))

    def read(self, v):
        if v.__class__ is not int:
            _fail_type(v, "an integer")
        if not self.lo <= v <= self.hi:
            raise DecodeError("holds %d, out of range for %s" % (v, self.name))
        return v

    fast = read


class _Float(FieldType):
    def __init__(self, single):
        self.name = "float32" if single else "float64"
        self.single = single

    def default(self):
        return 0.0

    def encode(self, v, out):
        out.append(_f32(v) if self.single else _F64.pack(0xCB, v))

    def read(self, v):
        c = v.__class__
        if c is float:
            return v
        if c is int:
            return float(v)
        _fail_type(v, "a number")

    # an exact float as it is; anything else (an int too) goes the exact way, which judges it
    fast = staticmethod(float.__float__)


def _f32(v):
    try:
        return _F32.pack(0xCA, v)
    except OverflowError:  # C++ rounds a double beyond float's range to infinity
        return _F32.pack(0xCA, float("inf") if v > 0 else float("-inf"))


class _Str(FieldType):
    name = "str"

    def default(self):
        return ""

    def encode(self, v, out):
        if v.__class__ is not str:
            raise TypeError("str field: %r is not a str" % (v,))
        out.append(_pack(v))

    def read(self, v):
        if v.__class__ is not str:
            _fail_type(v, "a str")
        return v

    fast = staticmethod(str.__str__)  # a str as it is; TypeError for anything else


class _Bytes(FieldType):
    name = "bytes"

    def default(self):
        return b""

    def encode(self, v, out):
        if v.__class__ is not bytes:
            if isinstance(v, str):
                raise TypeError("bytes field: a str is not bytes (encode it)")
            v = bytes(v)
        out.append(_pack(v))

    def read(self, v):
        if v.__class__ is not bytes:
            _fail_type(v, "a bin")
        return v

    fast = read


BOOL = _Bool()
I8, I16, I32, I64 = (_Int(b, True) for b in (8, 16, 32, 64))
U8, U16, U32, U64 = (_Int(b, False) for b in (8, 16, 32, 64))
F32 = _Float(True)
F64 = _Float(False)
STR = _Str()
BYTES = _Bytes()


def _array_header(n):
    if n < 16:
        return bytes((0x90 | n,))
    if n < 0x10000:
        return struct.pack(">BH", 0xDC, n)
    return struct.pack(">BI", 0xDD, n)


def _map_header(n):
    if n < 16:
        return bytes((0x80 | n,))
    if n < 0x10000:
        return struct.pack(">BH", 0xDE, n)
    return struct.pack(">BI", 0xDF, n)


@functools.lru_cache(maxsize=256)
def _float_run(n, single):
    return struct.Struct(">" + ("Bf" if single else "Bd") * n)


def _read_elements(elem, seq):
    out = []
    i = 0
    try:
        for i, x in enumerate(seq):
            out.append(elem.read(x))
    except DecodeError as e:
        raise e.nest("[%d]" % i)
    return out


class List(FieldType):
    """A variable-length array of `elem`."""

    def __init__(self, elem):
        self.elem = field_type(elem)
        self.name = "list[%s]" % self.elem.name

    def default(self):
        return []

    def encode(self, v, out):
        n = len(v)
        out.append(_array_header(n))
        if not n:
            return
        elem = self.elem
        if isinstance(elem, _Float):
            tag = 0xCA if elem.single else 0xCB
            args = []
            for x in v:
                args.append(tag)
                args.append(x)
            try:
                out.append(_float_run(n, elem.single).pack(*args))
                return
            except (OverflowError, struct.error):
                pass
        for x in v:
            elem.encode(x, out)

    def read(self, v):
        if v.__class__ is not list:
            _fail_type(v, "an array")
        elem = self.elem
        if elem.__class__ is _Float:
            for x in v:
                if x.__class__ is not float:
                    break
            else:
                return v
        return _read_elements(elem, v)

    def fast(self, v):
        if v.__class__ is not list:
            raise _Bail
        if not v:
            return v
        return list(map(self.elem.fast, v))  # C-level loop; elem.fast raises where it would not accept


class Array(List):
    """An array of exactly `size` elements (C++ std::array)."""

    def __init__(self, elem, size):
        super().__init__(elem)
        self.size = size
        self.name = "array[%s, %d]" % (self.elem.name, size)

    def default(self):
        return [self.elem.default() for _ in range(self.size)]

    def encode(self, v, out):
        if len(v) != self.size:
            raise ValueError("%s field: %d elements given" % (self.name, len(v)))
        super().encode(v, out)

    def read(self, v):
        if v.__class__ is list and len(v) != self.size:
            raise DecodeError("is an array of %d elements, expected %d" % (len(v), self.size))
        return super().read(v)

    def fast(self, v):
        if v.__class__ is not list or len(v) != self.size:
            raise _Bail
        return List.fast(self, v)


class ByteArray(_Bytes):
    """Exactly `size` bytes (C++ std::array<std::uint8_t, N>), a bin."""

    def __init__(self, size):
        self.size = size
        self.name = "bytes[%d]" % size

    def default(self):
        return bytes(self.size)

    def read(self, v):
        v = super().read(v)
        if len(v) != self.size:
            raise DecodeError("is a bin of %d bytes, expected %d" % (len(v), self.size))
        return v

    fast = read


class Optional(FieldType):
    """nil when None."""

    def __init__(self, elem):
        self.elem = field_type(elem)
        self.name = "optional[%s]" % self.elem.name

    def default(self):
        return None

    def encode(self, v, out):
        if v is None:
            out.append(b"\xc0")
        else:
            self.elem.encode(v, out)

    def read(self, v):
        return None if v is None else self.elem.read(v)

    def fast(self, v):
        return None if v is None else self.elem.fast(v)


def _sort_key(k):
    return k.encode("utf-8", "surrogateescape")


def _check_map(v):
    if v.__class__ is _OddMap:
        p = v.problem
        if isinstance(p, tuple):
            raise DecodeError("appears twice in the map").nest(_printable(p[1]))
        raise DecodeError(p)


def _printable(text):
    s = "".join(c if " " <= c <= "~" else "?" for c in text[:64])
    return s + ("..." if len(text) > 64 else "")


class Map(FieldType):
    """A map from str to `elem` (C++ std::map<std::string, T>): sorted on the wire."""

    def __init__(self, elem):
        self.elem = field_type(elem)
        self.name = "map[str, %s]" % self.elem.name

    def default(self):
        return {}

    def encode(self, v, out):
        out.append(_map_header(len(v)))
        for k in sorted(v, key=_sort_key):
            if k.__class__ is not str:
                raise TypeError("%s field: key %r is not a str" % (self.name, k))
            out.append(_pack(k))
            self.elem.encode(v[k], out)

    def read(self, v):
        if v.__class__ is not dict:
            if v.__class__ is _OddMap:
                _check_map(v)
            _fail_type(v, "a map")
        elem = self.elem
        out = {}
        for k, x in v.items():
            try:
                out[k] = elem.read(x)
            except DecodeError as e:
                raise e.nest(_printable(k))
        return out

    def fast(self, v):
        if v.__class__ is not tuple:
            raise _Bail
        f = self.elem.fast
        out = {_str_str(k): f(x) for k, x in v}  # TypeError for a key that is no str
        if len(out) != len(v):
            raise _Bail  # a key twice
        return out


class _MessageField(FieldType):
    def __init__(self, cls):
        self.cls = cls
        self.name = cls.__gecko_type__ or cls.__name__
        # The class's generated reader (one Python frame per nested message), else the generic one.
        self.fast = cls.__dict__.get("__gecko_reader__") or functools.partial(_fast_message, cls)

    def default(self):
        return self.cls()

    def encode(self, v, out):
        if not isinstance(v, self.cls):
            if isinstance(v, dict):
                v = from_dict(self.cls, v)
            else:
                raise TypeError("%s field: %r is not a %s" % (self.name, v, self.cls.__name__))
        _encode_message(v, out)

    def read(self, v):
        return _read_message(self.cls, v)


class _EnumField(FieldType):
    def __init__(self, cls):
        self.cls = cls
        self.name = cls.__name__
        # by name (as C++ writes enums); a number or an unknown name raises, and the exact way judges it
        self.fast = cls.__gecko_by_name__.__getitem__

    def default(self):
        return next(iter(self.cls))

    def encode(self, v, out):
        out.append(_pack(_enum_member(self.cls, v).wire))

    def read(self, v):
        cls = self.cls
        if v.__class__ is str:
            m = cls.__gecko_by_name__.get(v)
            if m is None:
                raise DecodeError("is %s, not a name of %s (%s)" % (
                    '"%s"' % _printable(v), cls.__name__, ", ".join(x.wire for x in cls)))
            return m
        if v.__class__ is int:
            try:
                return cls(v)
            except ValueError:
                raise DecodeError("is %d, not the number of a %s enumerator" % (v, cls.__name__))
        raise DecodeError("has msgpack type %s, expected a str (a name of %s)" % (_type_word(v), cls.__name__))


def _enum_member(cls, v):
    if isinstance(v, cls):
        return v
    if isinstance(v, str):
        m = cls.__gecko_by_name__.get(v)
        if m is None:
            try:
                m = cls[v]
            except KeyError:
                raise ValueError("%r is not a %s (%s)" % (v, cls.__name__, ", ".join(x.wire for x in cls)))
        return m
    return cls(v)


def field_type(t):
    """The FieldType for `t`: a FieldType, a message class or an enum class."""
    if isinstance(t, FieldType):
        return t
    if isinstance(t, type) and hasattr(t, "__gecko_fields__"):
        return _MessageField(t)
    if isinstance(t, type) and hasattr(t, "__gecko_by_name__"):
        return _EnumField(t)
    raise TypeError("not a field type: %r" % (t,))


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


class _Bail(Exception):
    """The fast decode met something only the exact one may judge."""


_new = object.__new__
_str_str = str.__str__


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
