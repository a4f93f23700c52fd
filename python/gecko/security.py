# SPDX-License-Identifier: Apache-2.0
"""One secret per key (docs/SECURITY.md §2, §3), as C++ gecko::security.

A key's secret is 32 bytes kept as one line of 64 hexadecimal digits in a
file found by the key alone. When it is there, every ZeroMQ link of the
key's nodes is CurveZMQ with key pairs derived from it; when it is not,
everything is plain. A secret file that is there but unusable is an error,
never a silent "no security".

    security = gecko.security.KeySecurity.find("dalek")
    if security.secured:
        print(security.fingerprint, security.curve.zap_domain)
"""

import collections
import hashlib
import os
import stat

import zmq
from zmq.utils import z85

from .errors import Error

SECRET_SIZE = 32

# The subkey ids (§3): fixed forever, a new use takes a new id.
FINGERPRINT = 0
CURVE_SERVER = 1
CURVE_CLIENT = 2
MAC = 3
SHM_MAC = 4
BRIDGE_TOKEN = 5

_MAX_FILE_SIZE = 256  # more than one line of digits and some whitespace: not a secret file

CurveKeys = collections.namedtuple(
    "CurveKeys", "zap_domain server_public server_secret client_public client_secret")
CurveKeys.__doc__ = """The CurveZMQ keys of a key (Z85 bytes, as libzmq takes them): the server pair
(subkey 1), the client pair (subkey 2), and the ZAP domain "gecko/" + key."""


def _error(text):
    return Error("security", text)


def _env(name):
    return os.environ.get(name) or None


def _file_name_of(key):
    """One file name per key: bytes that could mean something to a path (or
    hide the file) are written %XX."""
    out = []
    for i, c in enumerate(key.encode("utf-8")):
        ch = chr(c)
        plain = (ch.isascii() and ch.isalnum()) or ch in "_-" or (ch == "." and i > 0)
        out.append(ch if plain else "%%%02X" % c)
    return "".join(out) + ".secret"


def secret_path(key):
    """Where the secret of `key` is kept: GECKO_SECRET_FILE, else
    $XDG_CONFIG_HOME/gecko/keys/KEY.secret, else $HOME/.config/gecko/keys/KEY.secret."""
    named = _env("GECKO_SECRET_FILE")
    if named:
        return named
    config = _env("XDG_CONFIG_HOME")
    if not config:
        home = _env("HOME")
        if not home:
            raise _error("cannot tell where the secret of key '%s' is kept: neither XDG_CONFIG_HOME nor HOME is "
                         "set (set GECKO_SECRET_FILE)" % key)
        config = os.path.join(home, ".config")
    return os.path.join(config, "gecko", "keys", _file_name_of(key))


def read_secret_file(path):
    """The 32 bytes of the secret file at `path`. Like ssh with its private
    keys, refuses a file that is not a regular file, is a symbolic link,
    belongs to another user, or that group or others may read or write."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
    except OSError as e:
        if os.path.islink(path):
            raise _error("the secret file %s is a symbolic link; name the file itself" % path)
        raise _error("cannot read the secret file %s: %s" % (path, e.strerror))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise _error("the secret file %s is not a regular file" % path)
        if st.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
            raise _error("the secret file %s can be read or written by other users (mode %04o); run `chmod 600 "
                         "'%s'` (a secret others can read is no secret)" % (path, st.st_mode & 0o7777, path))
        if st.st_uid != os.geteuid():
            raise _error("the secret file %s belongs to another user (uid %d); each user keeps their own copy"
                         % (path, st.st_uid))
        data = b""
        while len(data) <= _MAX_FILE_SIZE:
            chunk = os.read(fd, _MAX_FILE_SIZE + 1 - len(data))
            if not chunk:
                break
            data += chunk
    except OSError as e:
        raise _error("cannot read the secret file %s: %s" % (path, e.strerror))
    finally:
        os.close(fd)
    digits = data.strip(b" \t\r\n")
    if len(data) > _MAX_FILE_SIZE or len(digits) != 2 * SECRET_SIZE or not all(
            c in b"0123456789abcdefABCDEF" for c in digits):
        raise _error("the secret file %s does not hold a secret: it must be one line of %d hexadecimal digits "
                     "(`gecko keygen` writes one)" % (path, 2 * SECRET_SIZE))
    return bytes.fromhex(digits.decode("ascii"))


def find_secret(key):
    """The secret of `key`, or None when it has no secret file. Raises
    gecko.Error ("security") when GECKO_SECRET_FILE names a missing file, or
    the file is there but unusable (read_secret_file)."""
    path = secret_path(key)
    if not os.path.lexists(path):
        if _env("GECKO_SECRET_FILE"):
            raise _error("GECKO_SECRET_FILE names %s, which does not exist" % path)
        return None
    return read_secret_file(path)


def derive(secret, subkey_id):
    """The 32-byte subkey `subkey_id` of `secret` (libsodium's
    crypto_kdf_derive_from_key with the context "geckokey")."""
    if len(secret) != SECRET_SIZE:
        raise _error("a secret is %d bytes, not %d" % (SECRET_SIZE, len(secret)))
    return hashlib.blake2b(b"", digest_size=32, key=bytes(secret), salt=subkey_id.to_bytes(8, "little") + bytes(8),
                           person=b"geckokey" + bytes(8)).digest()


def fingerprint(secret):
    """The secret's fingerprint: the first 8 bytes of subkey 0, in hexadecimal."""
    return derive(secret, FINGERPRINT)[:8].hex()


def curve_key_pair(secret, subkey_id):
    """(public, secret) Z85 CurveZMQ keys whose secret key is subkey `subkey_id`."""
    secret_z85 = z85.encode(derive(secret, subkey_id))
    return zmq.curve_public(secret_z85), secret_z85


def curve_keys(key, secret):
    """The CurveKeys of `key` from its secret."""
    server_public, server_secret = curve_key_pair(secret, CURVE_SERVER)
    client_public, client_secret = curve_key_pair(secret, CURVE_CLIENT)
    return CurveKeys("gecko/" + key, server_public, server_secret, client_public, client_secret)


class KeySecurity:
    """A key's security as this process finds it: a secret (then CURVE on
    every ZeroMQ link) or none (plain)."""

    def __init__(self, curve=None, fingerprint="", path="", mac_key=None, shm_key=None):
        self.curve = curve              # CurveKeys, or None when not secured
        self.fingerprint = fingerprint  # "" when not secured
        self.path = path                # where the secret was looked for ("" if no path could be made)
        self.mac_key = mac_key          # subkey 3, which seals discovery datagrams (§6); None when not secured
        self.shm_key = shm_key          # subkey 4, which seals shared-memory segment headers (§8); None when not secured

    @property
    def secured(self):
        return self.curve is not None

    @classmethod
    def find(cls, key):
        """Looks the key's secret up (find_secret). Raises gecko.Error
        ("security") when a secret file is there but unusable: a secret
        that is there is never ignored."""
        try:
            path = secret_path(key)
        except Error:
            return cls()  # neither XDG_CONFIG_HOME nor HOME: no store, so no secret
        secret = find_secret(key)
        if secret is None:
            return cls(path=path)
        return cls(curve_keys(key, secret), fingerprint(secret), path, derive(secret, MAC), derive(secret, SHM_MAC))
