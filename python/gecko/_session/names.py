# SPDX-License-Identifier: Apache-2.0
"""Entity and session ids; the checks of names (topics, services, types, keys)."""

import random

from ..errors import Error

_rng = random.SystemRandom()


def new_id():
    """A random nonzero 64-bit id (a session, an entity)."""
    while True:
        v = _rng.getrandbits(64)
        if v:
            return v


def check_printable(name, what, limit=256):
    if not isinstance(name, str) or not name:
        raise Error("invalid_argument", "%s is empty" % what)
    raw = name.encode("utf-8", "surrogateescape")
    if len(raw) > limit:
        raise Error("invalid_argument", "%s is %d bytes long (at most %d)" % (what, len(raw), limit))
    for i, c in enumerate(raw):
        if c < 0x21 or c > 0x7E:
            raise Error("invalid_argument", "%s has a space or a non-printable byte (0x%02x) at byte %d; names are "
                                            "printable ASCII" % (what, c, i))


def check_topic(name, what="the topic name"):
    check_printable(name, what)
    if name.startswith("#"):
        raise Error("invalid_argument", "%s starts with '#', which Gecko reserves" % what)
