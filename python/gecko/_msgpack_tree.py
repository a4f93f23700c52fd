# SPDX-License-Identifier: Apache-2.0
"""Decoding msgpack into a tree (dicts, lists, str, bytes, numbers), with
the structural rules of C++ gecko::wire::decode: bounded by the input and
MAX_DEPTH; a map with a key that is not a str, or a key twice, kept as an
OddMap (fine to skip, an error where a message or a str-keyed map is read),
or for untyped reading (unique=True, as C++ wire::Value) a key twice
refused at any depth. gecko.message reads message types out of such trees."""

import itertools

import msgpack

from ._map_keys import check_unique_keys
from .errors import DecodeError

MAX_DEPTH = 64


class OddMap(dict):
    """A map with a duplicate key or a key that is not a str: fine to skip,
    an error where a message or a str-keyed map is read."""
    __slots__ = ("problem",)


def _pairs(pairs):
    d = {}
    problem = None
    for k, v in pairs:
        if k.__class__ is not str:
            if problem is None:
                problem = "has a map key of msgpack type %s, expected str keys" % type_word(k)
            try:
                hash(k)
            except TypeError:
                k = ("$unhashable", id(k))
        if k in d and problem is None:
            problem = ("dup", k)
        d[k] = v
    if problem is None:
        return d
    m = OddMap(d)
    m.problem = problem
    return m


_CONTAINERS = (list, dict, OddMap)
_chain = itertools.chain.from_iterable


def type_word(v):
    """The msgpack type of a tree's value, for error messages ("str", "map", ...)."""
    c = v.__class__
    if v is None:
        return "nil"
    if c is bool:
        return "bool"
    if c is int:
        return "int"
    if c is float:
        return "float"
    if c is str:
        return "str"
    if c is bytes:
        return "bin"
    if c is list:
        return "array"
    if c is dict or c is OddMap:
        return "map"
    return "ext"


def _may_repeat(pairs):
    """Whether two keys of a map (an OddMap's pairs) may be the same key as
    C++ compares keys: for str, bin, integers, nil and bool the decoded
    values tell; floats, ext, arrays and maps only by their bytes."""
    seen = set()
    for k, _ in pairs:
        c = k.__class__
        if c is str or c is bytes or c is int or c is bool or k is None:
            ident = (c, k)
        elif c is float:
            ident = (float, repr(k))  # float32 1.0 and float64 1.0 are two keys: the bytes say
        else:
            ident = (list,)           # ext, arrays and maps: the bytes say
        if ident in seen:
            return True
        seen.add(ident)
    return False


def unpack(data, unique=False):
    """Decodes exactly one msgpack value from `data` into Python objects (maps
    as dicts, arrays as lists, bin as bytes, str as str), bounded: lengths by
    the input, nesting by MAX_DEPTH. Raises DecodeError.

    unique (untyped reading, as C++ wire::Value): a map with a key twice, at
    any depth, is an error naming its path ("field 'x[0].k' appears twice
    in the map"). Without it such a map is an OddMap, an error only where a
    message or a str-keyed map is read (typed reading skips unknown fields)."""
    data = bytes(data)
    maybe_twice = []
    pairs_of = _pairs
    if unique:
        def pairs_of(pairs):
            r = _pairs(pairs)
            if r.__class__ is OddMap and not maybe_twice and _may_repeat(pairs):
                maybe_twice.append(True)
            return r
    hooks = {}
    if len(data) > MAX_DEPTH + 1:  # shorter input cannot nest deeper than MAX_DEPTH
        depth = {}
        get = depth.get

        def depth_over(items):
            """1 + the depth of the deepest array or map among `items` (each seen before its container)."""
            m = 0
            for x in items:
                if x.__class__ in _CONTAINERS:
                    d = get(id(x), 1)
                    if d > m:
                        m = d
            if m >= MAX_DEPTH:
                raise DecodeError("nests arrays and maps more than %d deep" % MAX_DEPTH)
            return m + 1

        def list_hook(lst):
            depth[id(lst)] = depth_over(lst)
            return lst

        def pairs_hook(pairs):
            d = depth_over(_chain(pairs))  # keys and values
            r = pairs_of(pairs)
            depth[id(r)] = d
            return r

        hooks = {"list_hook": list_hook, "object_pairs_hook": pairs_hook}
    else:
        hooks = {"object_pairs_hook": pairs_of}
    try:
        tree = msgpack.unpackb(data, raw=False, strict_map_key=False, unicode_errors="surrogateescape",
                               timestamp=0, **hooks)
    except DecodeError:
        raise
    except msgpack.ExtraData as e:
        n = len(e.extra)
        raise DecodeError("is followed by %d byte%s of trailing data" % (n, "" if n == 1 else "s"))
    except msgpack.StackError:
        raise DecodeError("nests arrays and maps more than %d deep" % MAX_DEPTH)
    except (ValueError, msgpack.FormatError) as e:
        text = str(e)
        if "incomplete" in text or not data:
            raise DecodeError("is cut short: the input ends inside a value")
        raise DecodeError("is not msgpack (%s)" % text)
    except Exception as e:  # anything else msgpack may raise on hostile input
        raise DecodeError("is not msgpack (%s: %s)" % (type(e).__name__, e))
    if maybe_twice:
        check_unique_keys(data)
    return tree


def unpack_value(data):
    """Untyped reading, as C++ wire::Value reads (what a subscriber of no
    type, a key-wide subscriber and `python3 -m gecko echo` give): unpack()
    that refuses a map with a key twice at any depth."""
    return unpack(data, unique=True)
