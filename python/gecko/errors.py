# SPDX-License-Identifier: Apache-2.0
"""The one exception type of the package, with the codes of C++ gecko::Errc.

    try:
        reply = client.call(request, timeout=0.5)
    except gecko.Error as e:
        if e.code == "timeout": ...
"""

CODES = (
    "invalid_argument",  # a bad option, name or endpoint passed by the caller
    "transport",         # the transport refused (bind, connect, send)
    "timeout",           # a bounded wait ran out
    "no_peer",           # nobody to talk to (no service server, no core)
    "type_mismatch",     # the two sides disagree on a message type
    "decode",            # bytes could not be decoded into the requested type
    "remote",            # the other side answered with an error
    "protocol",          # a peer broke the protocol (wrong order, unknown message)
    "discovery",         # the discovery core could not be found or refused us
    "closed",            # the Node this handle belongs to was closed
    "security",          # a secret is missing, unreadable or unsafe, or a peer failed to prove it
)


class Error(RuntimeError):
    """What went wrong: `code` for programs (one of CODES), the message for people."""

    def __init__(self, code, message):
        if code not in CODES:
            raise ValueError("unknown gecko.Error code %r" % (code,))
        super().__init__(message)
        self.code = code


class DecodeError(Error):
    """Bytes that did not decode into a message type.

    str(e) reads as in C++: "gecko.msgs.Imu: field 'accel.x' has msgpack type
    str, expected a number". `type_name`, `path` and `detail` are its parts.
    """

    def __init__(self, detail, path="", type_name=""):
        self.detail = detail
        self.path = path
        self.type_name = type_name
        super().__init__("decode", self._text())

    def _text(self):
        where = "field '%s'" % self.path if self.path else "the message"
        head = self.type_name + ": " if self.type_name else ""
        return "%s%s %s" % (head, where, self.detail)

    def nest(self, step):
        """Prefixes the path with a field name or an index ("[3]")."""
        if self.path and not self.path.startswith("["):
            step += "."
        self.path = step + self.path
        self.args = (self._text(),)
        return self

    def named(self, type_name):
        self.type_name = type_name
        self.args = (self._text(),)
        return self

    def __str__(self):
        return self._text()
