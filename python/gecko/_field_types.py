# SPDX-License-Identifier: Apache-2.0
"""The field types of gecko.message: scalars, lists, arrays, optionals, maps,
nested messages and enums, each with its wire form (encode), its exact reader (read) and its fast
reader (fast). gecko.message re-exports them; see its docstring for the table
of types and the decoding rules."""

import functools
import struct

import msgpack

from ._msgpack_tree import MAX_DEPTH, OddMap as _OddMap, type_word as _type_word
from .errors import DecodeError

_packer = msgpack.Packer(use_bin_type=True, unicode_errors="surrogateescape", autoreset=True)
_pack = _packer.pack
_F64 = struct.Struct(">Bd")
_F32 = struct.Struct(">Bf")


_str_str = str.__str__


class _Bail(Exception):
    """The fast decode met something only the exact one may judge."""




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


# ===========================================================================
# Message and enum fields
# ===========================================================================

class _MessageField(FieldType):
    def __init__(self, cls):
        self.cls = cls
        self.name = cls.__gecko_type__ or cls.__name__
        # The class's generated reader (one Python frame per nested message), else the generic one.
        self.fast = cls.__dict__.get("__gecko_reader__") or functools.partial(_message._fast_message, cls)

    def default(self):
        return self.cls()

    def encode(self, v, out):
        if not isinstance(v, self.cls):
            if isinstance(v, dict):
                v = _message.from_dict(self.cls, v)
            else:
                raise TypeError("%s field: %r is not a %s" % (self.name, v, self.cls.__name__))
        _message._encode_message(v, out)

    def read(self, v):
        return _message._read_message(self.cls, v)


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


# What message and enum fields call when used (never at import): gecko.message imports this module first.
from . import message as _message  # noqa: E402
