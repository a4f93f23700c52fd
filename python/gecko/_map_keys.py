# SPDX-License-Identifier: Apache-2.0
"""A map with the same key twice, found in msgpack bytes as C++
gecko::wire::Value::check_maps finds it (gecko/wire/src/value.cpp), with
its error text and path (docs/PROTOCOL.md §3).

Keys are the same when they are equal values: str and bin by their bytes,
integers by value whatever their width, any other key by its encoded bytes
(so float32 1.0 and float64 1.0 are two keys, as 1 and 1.0 and "1" are).
Decoded Python values cannot tell all of that (the width of a float or an
ext, the encoding inside an array key), so this reads the bytes. It is the
slow path of gecko._msgpack_tree.unpack(unique=True), taken only for a map
whose decoded keys may repeat; the bytes were checked by msgpack first
(well formed, within the depth limit)."""

from .errors import DecodeError

_PAIRWISE = 16  # maps up to this many entries compare their keys pairwise; larger ones sort them (as C++)

# first byte -> (kind, bytes of the length field, or fixed size of what follows)
_STR, _BIN, _EXT, _ARRAY, _MAP, _INT, _OTHER = range(7)


def _head(data, i):
    """(kind, n, start) of the value at i: n is a str/bin/ext's length (an
    ext's includes its type byte), an array's items, a map's entries, or
    the bytes of a scalar after its first byte; start where they begin."""
    b = data[i]
    if b <= 0x7f or b >= 0xe0:
        return _INT, 0, i + 1
    if b <= 0x8f:
        return _MAP, b & 0x0f, i + 1
    if b <= 0x9f:
        return _ARRAY, b & 0x0f, i + 1
    if b <= 0xbf:
        return _STR, b & 0x1f, i + 1
    if b in (0xc0, 0xc2, 0xc3):
        return _OTHER, 0, i + 1
    if 0xc4 <= b <= 0xc6:
        w = 1 << (b - 0xc4)
        return _BIN, int.from_bytes(data[i + 1:i + 1 + w], "big"), i + 1 + w
    if 0xc7 <= b <= 0xc9:
        w = 1 << (b - 0xc7)
        return _EXT, int.from_bytes(data[i + 1:i + 1 + w], "big") + 1, i + 1 + w
    if b == 0xca or b == 0xcb:
        return _OTHER, 4 if b == 0xca else 8, i + 1
    if 0xcc <= b <= 0xd3:
        return _INT, 1 << ((b - 0xcc) & 3), i + 1
    if 0xd4 <= b <= 0xd8:
        return _EXT, (1 << (b - 0xd4)) + 1, i + 1
    if 0xd9 <= b <= 0xdb:
        w = 1 << (b - 0xd9)
        return _STR, int.from_bytes(data[i + 1:i + 1 + w], "big"), i + 1 + w
    w = 2 if b in (0xdc, 0xde) else 4
    return (_ARRAY if b <= 0xdd else _MAP), int.from_bytes(data[i + 1:i + 1 + w], "big"), i + 1 + w


def _skip(data, i):
    """Where the value at i ends."""
    left = 1
    while left:
        kind, n, i = _head(data, i)
        left -= 1
        if kind == _ARRAY:
            left += n
        elif kind == _MAP:
            left += 2 * n
        else:
            i += n
    return i


def _type_word(data, i):
    """The msgpack type of the value at i, as C++ wire::to_string names it."""
    b = data[i]
    if b == 0xc0:
        return "nil"
    if b in (0xc2, 0xc3):
        return "bool"
    if b == 0xca:
        return "float32"
    if b == 0xcb:
        return "float64"
    return ("str", "bin", "ext", "array", "map", "int")[_head(data, i)[0]]


def _key(data, i, end):
    """The key at [i, end) as compared: (rank, value), ranked str, bin,
    integers, anything else (by its bytes); within a rank as C++ orders them."""
    kind, n, start = _head(data, i)
    if kind == _STR:
        return 0, bytes(data[start:start + n])
    if kind == _BIN:
        return 1, bytes(data[start:start + n])
    if kind == _INT:
        b = data[i]
        if n == 0:
            return 2, b - 0x100 if b >= 0xe0 else b
        return 2, int.from_bytes(data[start:start + n], "big", signed=b >= 0xd0)
    return 3, bytes(data[i:end])


def _printable(raw):
    """A key as a path step: printable ASCII kept, any other byte '?', cut at 64 bytes (C++ nest_field)."""
    step = "".join(chr(c) if 0x20 <= c <= 0x7e else "?" for c in raw[:64])
    return step + ("..." if len(raw) > 64 else "")


def _twice(data, i, key):
    rank, value = key
    if rank == 0:
        return DecodeError("appears twice in the map").nest(_printable(value))
    if rank == 2:
        return DecodeError("appears twice in the map").nest(str(value))
    return DecodeError("has the same %s key twice" % _type_word(data, i))


def _check_keys(data, entries):
    """DecodeError for the repeated key of a map's entries [(key start, key end, value end)], or None."""
    keys = [_key(data, k, e) for k, e, _ in entries]
    if len(keys) <= _PAIRWISE:
        for j, key in enumerate(keys):
            if key in keys[:j]:
                return _twice(data, entries[j][0], key)
        return None
    order = sorted(range(len(keys)), key=keys.__getitem__)
    for a, b in zip(order, order[1:]):
        if keys[a] == keys[b]:
            return _twice(data, entries[b][0], keys[b])
    return None


def _check(data, i):
    """Where the value at i ends; DecodeError (with its path) for a map in it with a key twice."""
    kind, n, start = _head(data, i)
    if kind == _ARRAY:
        j = start
        for index in range(n):
            try:
                j = _check(data, j)
            except DecodeError as e:
                raise e.nest("[%d]" % index)
        return j
    if kind != _MAP:
        return _skip(data, i)
    entries = []
    j = start
    for _ in range(n):
        key_end = _skip(data, j)
        value_end = _skip(data, key_end)
        entries.append((j, key_end, value_end))
        j = value_end
    e = _check_keys(data, entries)
    if e is not None:
        raise e
    for key_at, key_end, _ in entries:
        _check(data, key_at)  # a map used as a key is checked too (its path is its own)
        try:
            _check(data, key_end)
        except DecodeError as e:
            key_kind, key_n, key_start = _head(data, key_at)
            raise e.nest(_printable(data[key_start:key_start + key_n]) if key_kind == _STR
                         else "<%s key>" % _type_word(data, key_at))
    return j


def check_unique_keys(data):
    """Raises DecodeError if a map in `data` (one well-formed msgpack value)
    has a key twice, at any depth: "field 'x[0].k' appears twice in the
    map", "the message has the same bin key twice"."""
    _check(memoryview(data).cast("B") if not isinstance(data, bytes) else data, 0)
