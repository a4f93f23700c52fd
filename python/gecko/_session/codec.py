# SPDX-License-Identifier: Apache-2.0
"""What a publisher, subscriber or service was given as a type, and a
message's payload as it goes on the wire."""

import msgpack

from .. import message as msgmod
from .. import msgs
from ..errors import Error


def resolve_type(t):
    """(class or None, type name) of what a publisher/subscriber was given:
    a message class, a type name (its class if gecko.msgs knows it), or
    None / "*" / "" for any type."""
    if t is None or t in ("", "*"):
        return None, ""
    if isinstance(t, str):
        return msgs.by_name(t), t
    if msgmod.is_message_class(t):
        return t, t.__gecko_type__
    raise Error("invalid_argument", "%r is not a message type (a class from gecko.msgs or gecko.define(), or a "
                                    "type name)" % (t,))


def encode_payload(cls, type_name, msg):
    if isinstance(msg, (bytes, bytearray, memoryview)):
        return bytes(msg)  # already msgpack
    if cls is not None:
        if isinstance(msg, cls):
            return msgmod.encode(msg)
        if isinstance(msg, dict):
            return msgmod.encode(msgmod.from_dict(cls, msg))
        raise Error("invalid_argument", "publisher of %s got a %s" % (type_name, type(msg).__name__))
    return msgpack.packb(msgmod.to_plain(msg), use_bin_type=True)
