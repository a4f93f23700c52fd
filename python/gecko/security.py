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
    "CurveKeys", "zap_domain server_public server_secret client_public client_secret fingerprint "
                 "accepted_fingerprint accepted_server_public accepted_client_public",
    defaults=("", "", None, None))
CurveKeys.__doc__ = """The CurveZMQ keys of a key (Z85 bytes, as libzmq takes them): the server pair
(subkey 1), the client pair (subkey 2), the ZAP domain "gecko/" + key, the
secret's fingerprint, and during a rotation (§9) the accepted secret's
fingerprint and public keys ("" and None outside one)."""


def server_public_for(curve, peer_fingerprint):
    """The server key to expect of a peer whose secret has `peer_fingerprint`:
    the accepted secret's when it names that one, else the key's own."""
    if curve.accepted_fingerprint and peer_fingerprint == curve.accepted_fingerprint:
        return curve.accepted_server_public
    return curve.server_public


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
    """The 32 bytes of the secret the file at `path` holds on its first line
    (what a program uses; read_secret_file_both for a rotation's second)."""
    return read_secret_file_both(path)[0]


def read_secret_file_both(path):
    """(own, accepted) secrets of the file at `path`: its first line, and
    during a rotation (docs/SECURITY.md §9) its second (else None). Like ssh with its private
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
    lines = data.split()
    if len(data) > _MAX_FILE_SIZE or not 1 <= len(lines) <= 2 or not all(
            len(line) == 2 * SECRET_SIZE and all(c in b"0123456789abcdefABCDEF" for c in line) for line in lines) \
            or len(data.strip(b" \t\r\n").splitlines()) != len(lines):
        raise _error("the secret file %s does not hold a secret: it must be one line of %d hexadecimal digits "
                     "(`gecko keygen` writes one), and during a rotation a second such line" % (path, 2 * SECRET_SIZE))
    secrets = [bytes.fromhex(line.decode("ascii")) for line in lines]
    if len(secrets) == 2 and secrets[0] == secrets[1]:
        raise _error("the secret file %s holds the same secret on both lines: a rotation's second line is another "
                     "secret" % path)
    return secrets[0], (secrets[1] if len(secrets) == 2 else None)


def find_secret(key):
    """The secret of `key`, or None when it has no secret file. Raises
    gecko.Error ("security") when GECKO_SECRET_FILE names a missing file, or
    the file is there but unusable (read_secret_file)."""
    both = find_secrets(key)
    return both[0] if both else None


def find_secrets(key):
    """(own, accepted) as read_secret_file_both, or None when `key` has no
    secret file; raises as find_secret."""
    path = secret_path(key)
    if not os.path.lexists(path):
        if _env("GECKO_SECRET_FILE"):
            raise _error("GECKO_SECRET_FILE names %s, which does not exist" % path)
        return None
    return read_secret_file_both(path)


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


fingerprint_of = fingerprint  # for KeySecurity, whose attribute of that name hides the function


def bridge_token(secret):
    """The token gecko-bridge asks of its clients in a key with this secret
    (docs/SECURITY.md §10): the first 16 bytes of subkey 5, in hexadecimal.

        token = gecko.security.bridge_token(gecko.security.find_secret("dalek"))
        url = "ws://127.0.0.1:8765/?token=" + token
    """
    return derive(secret, BRIDGE_TOKEN)[:16].hex()


def curve_key_pair(secret, subkey_id):
    """(public, secret) Z85 CurveZMQ keys whose secret key is subkey `subkey_id`."""
    secret_z85 = z85.encode(derive(secret, subkey_id))
    return zmq.curve_public(secret_z85), secret_z85


def curve_keys(key, secret, accepted=None):
    """The CurveKeys of `key` from its secret (and, during a rotation, the
    public keys of the secret it accepts too)."""
    server_public, server_secret = curve_key_pair(secret, CURVE_SERVER)
    client_public, client_secret = curve_key_pair(secret, CURVE_CLIENT)
    if accepted is None:
        return CurveKeys("gecko/" + key, server_public, server_secret, client_public, client_secret, fingerprint(secret))
    return CurveKeys("gecko/" + key, server_public, server_secret, client_public, client_secret, fingerprint(secret),
                     fingerprint(accepted), curve_key_pair(accepted, CURVE_SERVER)[0],
                     curve_key_pair(accepted, CURVE_CLIENT)[0])


class KeySecurity:
    """A key's security as this process finds it: a secret (then CURVE on
    every ZeroMQ link) or none (plain)."""

    def __init__(self, curve=None, fingerprint="", path="", mac_key=None, shm_key=None, accepted=None):
        self.curve = curve              # CurveKeys, or None when not secured
        self.fingerprint = fingerprint  # "" when not secured
        self.path = path                # where the secret was looked for ("" if no path could be made)
        self.mac_key = mac_key          # subkey 3, which seals discovery datagrams (§6); None when not secured
        self.shm_key = shm_key          # subkey 4, which seals shared-memory segment headers (§8); None when not secured
        # During a rotation (§9), the secret accepted beside it: its fingerprint and subkeys 3 and 4 ("", None outside one).
        self.accepted_fingerprint = fingerprint_of(accepted) if accepted is not None else ""
        self.accepted_mac_key = derive(accepted, MAC) if accepted is not None else None
        self.accepted_shm_key = derive(accepted, SHM_MAC) if accepted is not None else None

    @property
    def shm_keys(self):
        """The subkeys 4 a shared-memory reader accepts a segment's seal from (None when not secured)."""
        if self.shm_key is None:
            return None
        return (self.shm_key,) + ((self.accepted_shm_key,) if self.accepted_shm_key is not None else ())

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
        both = find_secrets(key)
        if both is None:
            return cls(path=path)
        secret, accepted = both
        return cls(curve_keys(key, secret, accepted), fingerprint(secret), path, derive(secret, MAC),
                   derive(secret, SHM_MAC), accepted)
