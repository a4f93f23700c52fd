# SPDX-License-Identifier: Apache-2.0
"""A message type's fields as data (docs/PROTOCOL.md §3.1), as C++
gecko/wire/schema.hpp: what a consumer that does not know a type (a tool,
a bridge, a recorder, another language) needs to read it and to check what
a user typed against it.

A publisher declares its type's schema when it registers; geckocore keeps
it in the key's channel directory (docs/DISCOVERY.md §4.1) and hands it to
every consumer. On the wire a schema is one msgpack map, the shape
tests/conformance/vectors/schemas.json writes for the gecko.msgs types:

    {"types": [{"type_name": "gecko.msgs.Pose",
                "fields": [{"name": "position", "type": {"message": "gecko.msgs.Vector3"}}, ...]},
               {"type_name": "gecko.msgs.Vector3", "fields": [{"name": "x", "type": "float64"}, ...]}, ...]}

`types` holds the declared type first, then every message type its fields
name, so that a schema is complete by itself.

    s = gecko.schema.schema_of(gecko.msgs.Imu)
    data = s.encode()
    why = s.check("gecko.msgs.Imu", payload, strict=True)   # "" or why not
"""

import msgpack

from . import message as msgmod
from ._msgpack_tree import OddMap, type_word, unpack
from .errors import DecodeError, Error
from .names import type_name_problem

MAX_ENCODED_SIZE = 64 * 1024
MAX_TYPES = 256
MAX_FIELDS = 4096
MAX_DEPTH = 16
MAX_ENUM_NAMES = 4096

SCALARS = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float32", "float64",
           "str", "bin")
_INT_RANGES = {"int%d" % b: (-(1 << (b - 1)), (1 << (b - 1)) - 1) for b in (8, 16, 32, 64)}
_INT_RANGES.update({"uint%d" % b: (0, (1 << b) - 1) for b in (8, 16, 32, 64)})


class FieldType:
    """The type of one field as it travels. `kind`: one of SCALARS, or
    "array", "optional", "map", "message", "struct", "enum". `size`: an
    array's or bin's exact length (0: any); `item`: the item type (array,
    optional, map); `name`: the message's or enum's name; `fields`: a
    struct's; `names`, `values`: an enum's."""
    __slots__ = ("kind", "size", "item", "name", "fields", "names", "values")

    def __init__(self, kind, size=0, item=None, name="", fields=(), names=(), values=()):
        self.kind = kind
        self.size = size
        self.item = item
        self.name = name
        self.fields = list(fields)
        self.names = list(names)
        self.values = list(values)

    def to_tree(self):
        """As the schema map writes it: a str, or a map."""
        k = self.kind
        if k == "bin" and self.size:
            return {"bin": self.size}
        if k in SCALARS:
            return k
        if k in ("array", "optional", "map"):
            out = {k: self.item.to_tree()}
            if k == "array" and self.size:
                out["size"] = self.size
            return out
        if k == "message":
            return {"message": self.name}
        if k == "struct":
            return {"struct": _fields_tree(self.fields)}
        return {"enum": self.name, "names": list(self.names), "values": list(self.values)}

    def __str__(self):
        """As `gecko type` prints it: "float64", "float64[]", "float64[3]",
        "map<str, bool>", "float64 or nil", "enum Mode"."""
        k = self.kind
        if k == "bin":
            return "bin[%d]" % self.size if self.size else "bin"
        if k == "array":
            return "%s%s" % (self.item, "[%d]" % self.size if self.size else "[]")
        if k == "optional":
            return "%s or nil" % self.item
        if k == "map":
            return "map<str, %s>" % self.item
        if k == "message":
            return self.name
        if k == "enum":
            return "enum " + self.name
        return k

    def __eq__(self, other):
        return isinstance(other, FieldType) and self.to_tree() == other.to_tree()

    def __repr__(self):
        return "FieldType(%s)" % self


class SchemaField:
    __slots__ = ("name", "type")

    def __init__(self, name, type):
        self.name = name
        self.type = type

    def __repr__(self):
        return "%s: %s" % (self.name, self.type)


class MessageSchema:
    """One message type: its name and its fields, in wire order."""
    __slots__ = ("type_name", "fields")

    def __init__(self, type_name, fields=()):
        self.type_name = type_name
        self.fields = list(fields)

    def field(self, name):
        """The field `name`, or None."""
        for f in self.fields:
            if f.name == name:
                return f
        return None

    def field_list(self):
        """"x, y, z", or "(none)"."""
        return ", ".join(f.name for f in self.fields) or "(none)"

    def to_tree(self):
        return {"type_name": self.type_name, "fields": _fields_tree(self.fields)}

    def __repr__(self):
        return "MessageSchema(%s: %s)" % (self.type_name, self.field_list())


def _fields_tree(fields):
    return [{"name": f.name, "type": f.type.to_tree()} for f in fields]


class Schema:
    """The declared type first, then the types it refers to (MessageSchema each)."""

    def __init__(self, types=()):
        self.types = list(types)

    def find(self, type_name):
        """The MessageSchema of `type_name` in this schema, or None."""
        for t in self.types:
            if t.type_name == type_name:
                return t
        return None

    def merge(self, other):
        """Adds the types of `other` this schema lacks (a service's request and reply types in one)."""
        for t in other.types:
            if self.find(t.type_name) is None:
                self.types.append(t)

    def __bool__(self):
        return bool(self.types)

    def __eq__(self, other):
        return isinstance(other, Schema) and self.to_tree() == other.to_tree()

    def __repr__(self):
        return "Schema(%s)" % ", ".join(t.type_name for t in self.types)

    def to_tree(self):
        """The schema map as Python values (dicts in wire order)."""
        return {"types": [t.to_tree() for t in self.types]}

    def encode(self):
        """The msgpack map (exactly the bytes C++ Schema::encode writes)."""
        return msgpack.packb(self.to_tree(), use_bin_type=True)

    @staticmethod
    def decode(data):
        """A schema from its msgpack bytes, every part checked (C++
        Schema::decode's bounds: at most 64 KiB, 1-256 types, 4096 fields in
        all, nested 16 deep, names printable and 1-256 bytes, every
        {"message": NAME} among the types). Raises gecko.Error ("decode")."""
        if len(data) > MAX_ENCODED_SIZE:
            raise Error("decode", "schema: %d bytes (at most %d)" % (len(data), MAX_ENCODED_SIZE))
        try:
            tree = unpack(data)
        except DecodeError as e:
            raise Error("decode", "schema: not msgpack: the value %s" % e.detail)
        return Schema.from_tree(tree)

    @staticmethod
    def from_tree(tree):
        """decode() of an already unpacked map (a discovery message's `schema`)."""
        return _Decoder().schema(tree)

    def check(self, type_name, payload, strict=False):
        """"" if `payload` is one msgpack map a receiver decodes as
        `type_name`, else why not, naming the field path, e.g.
        "gecko.msgs.Imu: field 'accel.x' has msgpack type str, expected a
        number". strict (what a user typed): an unknown field is an error,
        "gecko.msgs.Imu has no field 'acel'; its fields are: ..."; otherwise
        (as_receiver) unknown fields are skipped. A type this schema lacks: ""."""
        m = self.find(type_name)
        if m is None:
            return ""
        try:
            tree = unpack(payload)
        except DecodeError as e:
            return "%s: not msgpack (the value %s)" % (type_name, e.detail)
        return _Checker(self, strict, type_name).fields(tree, m.fields, m.type_name, "")


# ---- a schema from a message class ------------------------------------------------------------

def schema_of(cls):
    """The schema of a message class (gecko.msgs, or made by gecko.define
    with a type name): the class's type first, then every message type its
    fields name, in the order C++ schema_of<M>() lists them."""
    if not msgmod.is_message_class(cls):
        raise Error("invalid_argument", "schema_of: %r is not a message type with a type name" % (cls,))
    types = []
    _add_message(cls, types)
    return Schema(types)


def _add_message(cls, types):
    name = cls.__gecko_type__
    if any(t.type_name == name for t in types):
        return
    m = MessageSchema(name)
    types.append(m)  # first, so that a type naming itself stops here
    m.fields = _fields_of(cls, types)


def _fields_of(cls, types):
    return [SchemaField(name, _field_type_of(ft, types)) for name, ft in msgmod.fields_of(cls)]


def _field_type_of(ft, types):
    if isinstance(ft, msgmod._Bool):
        return FieldType("bool")
    if isinstance(ft, msgmod._Int) or isinstance(ft, msgmod._Float):
        return FieldType(ft.name)
    if isinstance(ft, msgmod.ByteArray):
        return FieldType("bin", size=ft.size)
    if isinstance(ft, msgmod._Bytes):
        return FieldType("bin")
    if isinstance(ft, msgmod._Str):
        return FieldType("str")
    if isinstance(ft, msgmod.Array):
        return FieldType("array", size=ft.size, item=_field_type_of(ft.elem, types))
    if isinstance(ft, msgmod.List):
        return FieldType("array", item=_field_type_of(ft.elem, types))
    if isinstance(ft, msgmod.Optional):
        return FieldType("optional", item=_field_type_of(ft.elem, types))
    if isinstance(ft, msgmod.Map):
        return FieldType("map", item=_field_type_of(ft.elem, types))
    if isinstance(ft, msgmod._EnumField):
        members = list(ft.cls)
        return FieldType("enum", name=ft.cls.__name__, names=[m.wire for m in members],
                         values=[int(m) for m in members])
    if isinstance(ft, msgmod._MessageField):
        if ft.cls.__gecko_type__:
            _add_message(ft.cls, types)
            return FieldType("message", name=ft.cls.__gecko_type__)
        return FieldType("struct", fields=_fields_of(ft.cls, types))
    raise Error("invalid_argument", "schema_of: a field type the codec does not know: %r" % (ft,))


def schema_for(type_name, declared):
    """The complete schema of `type_name` ("A->B": of both) from `declared`
    (type name -> MessageSchema), listed as C++ NodeImpl::schema_for lists
    them; None when a part of it is not declared (a schema must be
    complete) or it encodes above 64 KiB."""
    roots = type_name.split("->", 1) if "->" in type_name else [type_name]
    types = []
    seen = set()
    todo = list(reversed(roots))
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        m = declared.get(name)
        if m is None:
            return None
        types.append(m)
        stack = [f.type for f in m.fields]
        while stack:
            t = stack.pop()
            if t.kind == "message":
                todo.append(t.name)
            if t.item is not None:
                stack.append(t.item)
            stack.extend(f.type for f in t.fields)
    s = Schema(types)
    return s if len(s.encode()) <= MAX_ENCODED_SIZE else None


# ---- decoding ---------------------------------------------------------------------------------

def _bad(where, what):
    raise Error("decode", "schema: %s: %s" % (where, what))


def _printable(text):
    return "".join(c if " " <= c <= "~" else "\\x%02x" % (ord(c) & 0xFF) for c in text)


class _Decoder:
    def __init__(self):
        self.n_fields = 0

    def text(self, v, where):
        if not isinstance(v, str):
            _bad(where, "is %s, expected a str" % type_word(v))
        raw = v.encode("utf-8", "surrogateescape")
        if not raw or len(raw) > 256:
            _bad(where, "is empty or longer than 256 bytes")
        if any(c < 0x20 or c == 0x7F for c in raw):
            _bad(where, "has a control character")
        return v

    def count(self, v, where):
        if v.__class__ is not int or not 0 < v <= 1 << 30:
            _bad(where, "is not a count from 1 to 2^30")
        return v

    def type(self, v, where, depth):
        if depth > MAX_DEPTH:
            _bad(where, "nests more than 16 levels deep")
        if isinstance(v, str):
            if v in SCALARS:
                return FieldType(v)
            _bad(where, "unknown type '%s'" % _printable(v))
        if not isinstance(v, dict):
            _bad(where, "is %s, expected a str or a map" % type_word(v))
        if "array" in v:
            t = FieldType("array", item=self.type(v["array"], where, depth + 1))
            if "size" in v:
                t.size = self.count(v["size"], where + ".size")
            return t
        for k in ("optional", "map"):
            if k in v:
                return FieldType(k, item=self.type(v[k], where, depth + 1))
        if "bin" in v:
            return FieldType("bin", size=self.count(v["bin"], where + ".bin"))
        if "message" in v:
            name = self.text(v["message"], where + ".message")
            why = type_name_problem(name)
            if why:
                _bad(where, why)
            return FieldType("message", name=name)
        if "struct" in v:
            return FieldType("struct", fields=self.field_list(v["struct"], where, depth + 1))
        if "enum" in v:
            t = FieldType("enum", name=self.text(v["enum"], where + ".enum"))
            names, values = v.get("names"), v.get("values")
            if (not isinstance(names, list) or not isinstance(values, list) or len(names) != len(values)
                    or not names or len(names) > MAX_ENUM_NAMES):
                _bad(where, "an enum needs 'names' and 'values', arrays of one length (1 to 4096)")
            for n in names:
                t.names.append(self.text(n, where + ".names"))
                if t.names.count(t.names[-1]) > 1:
                    _bad(where, "enum name '%s' twice" % t.names[-1])
            for x in values:
                if x.__class__ is not int or not -(1 << 63) <= x < 1 << 63:
                    _bad(where + ".values", "holds something other than an integer")
                t.values.append(x)
            return t
        _bad(where, "a map type needs one of array, optional, map, bin, message, struct, enum")

    def field_list(self, v, where, depth):
        if not isinstance(v, list):
            _bad(where, "'fields' is not an array")
        out = []
        seen = set()
        for f in v:
            self.n_fields += 1
            if self.n_fields > MAX_FIELDS:
                _bad(where, "more than 4096 fields in all")
            if not isinstance(f, dict):
                _bad(where, "a field is not a map")
            if "name" not in f or "type" not in f:
                _bad(where, "a field needs 'name' and 'type'")
            name = self.text(f["name"], where + " field name")
            if name in seen:
                _bad(where, "field '%s' twice" % name)
            seen.add(name)
            out.append(SchemaField(name, self.type(f["type"], where + "." + name, depth)))
        return out

    def schema(self, tree):
        if not isinstance(tree, dict):
            _bad("the schema", "is %s, expected a map" % type_word(tree))
        types = tree.get("types")
        if not isinstance(types, list):
            _bad("the schema", "has no array 'types'")
        if not 0 < len(types) <= MAX_TYPES:
            _bad("the schema", "'types' holds 1 to 256 types")
        out = []
        names = set()
        for t in types:
            if not isinstance(t, dict):
                _bad("a type", "is not a map")
            if "type_name" not in t or "fields" not in t:
                _bad("a type", "needs 'type_name' and 'fields'")
            name = self.text(t["type_name"], "type_name")
            why = type_name_problem(name)
            if why:
                _bad("type '%s'" % _printable(name), why)
            if name in names:
                _bad("type '%s'" % name, "appears twice")
            names.add(name)
            out.append(MessageSchema(name, self.field_list(t["fields"], name, 0)))
        named = set()
        for m in out:
            _collect_messages(m.fields, named)
        for n in sorted(named - names):
            _bad("the schema", "a field names message type '%s', which 'types' does not hold" % n)
        return Schema(out)


def _collect_messages(fields, out):
    for f in fields:
        t = f.type
        while t is not None:
            if t.kind == "message":
                out.add(t.name)
            _collect_messages(t.fields, out)
            t = t.item


# ---- checking a payload -----------------------------------------------------------------------

class _Checker:
    def __init__(self, schema, strict, root):
        self.schema = schema
        self.strict = strict
        self.root = root

    def fail(self, path, what):
        return "%s: field '%s' %s" % (self.root, path, what)

    @staticmethod
    def join(path, name):
        return name if not path else path + "." + name

    def fields(self, v, fields, type_name, path):
        if not isinstance(v, dict):
            if not path:
                return "not a msgpack map (a message) but " + type_word(v)
            return self.fail(path, "has msgpack type %s, expected a map" % type_word(v))
        if v.__class__ is OddMap:
            p = v.problem
            if isinstance(p, tuple):
                return "%s: field '%s' appears twice" % (self.root, self.join(path, _printable(p[1])))
            return "%s: a key of %s is not a str" % (self.root, "the message" if not path else "'%s'" % path)
        by_name = {f.name: f for f in fields}
        for name, value in v.items():
            f = by_name.get(name)
            if f is None:
                if not self.strict:
                    continue
                head = type_name if type_name else "%s '%s'" % (self.root, path)
                return "%s has no field '%s'; its fields are: %s" % (
                    head, _printable(name), ", ".join(x.name for x in fields) or "(none)")
            why = self.value(value, f.type, self.join(path, f.name))
            if why:
                return why
        return ""

    def value(self, v, t, path):
        k = t.kind
        got = type_word(v)

        def wrong(expected):
            return self.fail(path, "has msgpack type %s, expected %s" % (got, expected))

        if k == "bool":
            return "" if v.__class__ is bool else wrong("a bool")
        if k in _INT_RANGES:
            if v.__class__ is not int:
                return self.fail(path, "has msgpack type %s, expected an integer" % got)
            lo, hi = _INT_RANGES[k]
            if not lo <= v <= hi:
                return self.fail(path, "does not fit its type (%d to %d)" % (lo, hi))
            return ""
        if k in ("float32", "float64"):
            return "" if v.__class__ in (int, float) else wrong("a number")
        if k == "str":
            return "" if v.__class__ is str else wrong("a str")
        if k == "bin":
            if v.__class__ is not bytes:
                return wrong("a bin")
            if t.size and len(v) != t.size:
                return self.fail(path, "has %d bytes, expected exactly %d" % (len(v), t.size))
            return ""
        if k == "array":
            if v.__class__ is not list:
                return wrong("an array")
            if t.size and len(v) != t.size:
                return self.fail(path, "has %d items, expected exactly %d" % (len(v), t.size))
            for i, item in enumerate(v):
                why = self.value(item, t.item, "%s[%d]" % (path, i))
                if why:
                    return why
            return ""
        if k == "optional":
            return "" if v is None else self.value(v, t.item, path)
        if k == "map":
            if not isinstance(v, dict):
                return wrong("a map")
            if v.__class__ is OddMap:
                p = v.problem
                if isinstance(p, tuple):
                    return self.fail(path, "has the key '%s' twice" % _printable(p[1]))
                return self.fail(path, "has a key that is not a str")
            for key, item in v.items():
                why = self.value(item, t.item, "%s['%s']" % (path, _printable(key)))
                if why:
                    return why
            return ""
        if k == "message":
            m = self.schema.find(t.name)
            return "" if m is None else self.fields(v, m.fields, t.name, path)
        if k == "struct":
            return self.fields(v, t.fields, "", path)
        # enum
        if v.__class__ is str:
            if v in t.names:
                return ""
        elif v.__class__ is int:
            if v in t.values:
                return ""
        else:
            return wrong("a str (one of the enum's names)")
        return self.fail(path, "is not one of %s's names: %s" % (t.name, ", ".join(t.names)))
