# SPDX-License-Identifier: Apache-2.0
"""What a topic, service, type or key name may be, and the patterns of a
filter, as C++ gecko/wire/names.hpp (docs/PROTOCOL.md §1):

- topic and service names: 1-256 bytes of printable ASCII, not starting
  with '#', without '*' or '?' (they match names in filters: 'arm1/*');
- type names: 1-256 bytes of printable ASCII, without '*' or '?';
- patterns (filters): a name, or a glob where '*' matches any run of
  characters ('/' included, the empty run too) and '?' any one character.
"""

import socket

from .errors import Error

MAX_LOCATOR = 256


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


def is_glob(pattern):
    """Whether `pattern` has a wildcard ('*' or '?')."""
    return "*" in pattern or "?" in pattern


def check_topic(name, what="the topic name"):
    check_printable(name, what)
    if name.startswith("#"):
        raise Error("invalid_argument", "%s starts with '#', which Gecko reserves" % what)
    if is_glob(name):
        raise Error("invalid_argument", "%s has '*' or '?', which match names in filters (e.g. 'arm1/*')" % what)


def check_type(name, what="the type name"):
    check_printable(name, what)
    if is_glob(name):
        raise Error("invalid_argument", "%s has '*' or '?', which match names in filters" % what)


def type_name_problem(name):
    """"" if `name` is a valid type name, else why not (C++ wire::check_type_name)."""
    try:
        check_type(name)
    except Error as e:
        return str(e)
    return ""


def _is_numeric_host(host):
    bracketed = len(host) > 2 and host[0] == "[" and host[-1] == "]"
    try:
        socket.inet_pton(socket.AF_INET6 if bracketed else socket.AF_INET, host[1:-1] if bracketed else host)
    except (OSError, ValueError):
        return False
    return True


def locator_problem(locator):
    """"" if another node's `locator` may be handed to a transport, else why
    not (C++ wire::check_locator). A tcp host is an address, never a name:
    libzmq would resolve a name on its one I/O thread, and every link of the
    process would wait while a DNS server does not answer."""
    if not isinstance(locator, str) or not locator or len(locator.encode("utf-8", "surrogateescape")) > MAX_LOCATOR:
        return "a locator is 1-%d bytes" % MAX_LOCATOR
    if any(ord(c) <= 0x20 or ord(c) >= 0x7F for c in locator):
        return "a locator is printable ASCII without spaces"
    scheme, sep, rest = locator.partition("://")
    if not sep:
        return "a locator is SCHEME://ADDRESS"
    if not rest:
        return "the locator has no address"
    if scheme == "ipc":
        return "" if len(rest) <= 107 else "an ipc path is at most 107 bytes"
    if scheme in ("inproc", "mem", "shm"):
        return ""
    if scheme != "tcp":
        return "unknown scheme '%s' (tcp, ipc, inproc, mem, shm)" % scheme
    host, colon, port = rest.rpartition(":")
    if not colon or not host:
        return "tcp://HOST:PORT needs a host and a port"
    if host in ("*", "0.0.0.0"):
        return "tcp host is a wildcard; a locator names an address others can reach"
    if not _is_numeric_host(host):
        return ("tcp host '%s' is not a numeric address (IPv4 a.b.c.d, or IPv6 in brackets); locators name no "
                "host names" % host)
    if not port or len(port) > 5 or not port.isdigit() or not port.isascii():
        return "tcp port is not a number"
    if not 1 <= int(port) <= 65535:
        return "tcp port is not 1-65535"
    return ""


def check_pattern(pattern, what="the pattern"):
    check_printable(pattern, what)


def glob_match(pattern, text):
    """Whether `text` matches `pattern`: '*' any run of characters ('/'
    included, the empty run too), '?' any one character, anything else
    itself. Greedy with one backtrack point (a later '*' supersedes an
    earlier one): at most len(pattern) x len(text) steps."""
    p = t = 0
    star = -1
    resume = 0
    np, nt = len(pattern), len(text)
    while t < nt:
        if p < np and (pattern[p] == "?" or pattern[p] == text[t]):
            p += 1
            t += 1
        elif p < np and pattern[p] == "*":
            star = p
            p += 1
            resume = t
        elif star >= 0:
            p = star + 1
            resume += 1
            t = resume
        else:
            return False
    while p < np and pattern[p] == "*":
        p += 1
    return p == np
