# SPDX-License-Identifier: Apache-2.0
"""gecko.Options: a node's options, from arguments and GECKO_* variables."""

import os

from . import discovery as disc
from . import env as envmod
from .errors import Error

_SHM_MODES = ("auto", "off", "require")  # NodeOptions::shared_memory, GECKO_SHM
_BYTE_SHIFTS = {"": 0, "K": 10, "M": 20, "G": 30}


def parse_bytes(name, value):
    """A byte count as C++ nodes read it: digits, then K, M or G (e.g. 32M), up to 1 TiB."""
    digits = value[:len(value) - len(value.lstrip("0123456789"))] if value[:1].isdigit() else ""
    suffix = value[len(digits):]
    if not digits or not digits.isascii() or suffix not in _BYTE_SHIFTS or int(digits) > (1 << 40) >> _BYTE_SHIFTS[suffix]:
        raise Error("invalid_argument", "%s='%s': expected bytes, or with K, M or G (e.g. 32M); 0: no bound"
                    % (name, value))
    return int(digits) << _BYTE_SHIFTS[suffix]


class Options:
    """A node's options; from_env() reads the GECKO_* variables (as C++ NodeOptions::from_env)."""

    def __init__(self, key="", name="", core="", multicast="", interface="", multicast_enabled=True,
                 discovery=True, lease=3.0, find_timeout=1.5, ipc_directory="", tcp_address="0.0.0.0",
                 transports=("inproc", "ipc", "tcp"), peers=(), send_queue=1000, receive_queue=1000,
                 max_message_size=64 << 20, shared_memory="auto", shm_directory="/dev/shm", shm_group=False,
                 spin=0, send_queue_bytes=8 << 20):
        self.key = key
        self.name = name
        self.core = core
        self.interface = interface
        self.multicast_enabled = multicast_enabled
        self.discovery = discovery
        self.lease = lease
        self.find_timeout = find_timeout
        self.ipc_directory = ipc_directory or "/tmp"
        self.tcp_address = tcp_address
        self.transports = tuple(transports)
        self.peers = tuple(peers)
        self.send_queue = send_queue
        if not isinstance(send_queue_bytes, int) or send_queue_bytes < 0:
            raise Error("invalid_argument", "send_queue_bytes=%r: expected bytes, 0 for no bound" % (send_queue_bytes,))
        self.send_queue_bytes = send_queue_bytes  # bytes queued per subscriber node before drops (GECKO_SEND_QUEUE_BYTES)
        self.receive_queue = receive_queue
        self.max_message_size = max_message_size
        if shared_memory not in _SHM_MODES:
            raise Error("invalid_argument", "shared_memory='%s': expected auto, off or require" % shared_memory)
        self.shared_memory = shared_memory  # reading shm:// links of C++ publishers on this host
        self.shm_directory = shm_directory
        self.shm_group = shm_group
        if not 0 <= spin <= 1000000:
            raise Error("invalid_argument", "spin=%r: expected microseconds, 0 to 1000000" % spin)
        self.spin = spin  # us a waiting in-port busy-polls its shm links before it sleeps (GECKO_SPIN_US)
        self.group, self.port = disc.parse_multicast(multicast) if multicast else (disc.DEFAULT_GROUP, disc.DEFAULT_PORT)

    @classmethod
    def from_env(cls, **overrides):
        env = os.environ.get
        o = dict(key=env("GECKO_KEY", ""), name=env("GECKO_NODE", ""), core=env("GECKO_CORE", ""),
                 multicast=env("GECKO_MULTICAST", ""), interface=env("GECKO_INTERFACE", ""),
                 multicast_enabled=not envmod.flag("GECKO_NO_MULTICAST", False),
                 discovery=envmod.flag("GECKO_DISCOVERY", True),
                 ipc_directory=env("GECKO_IPC_DIR", ""), tcp_address=env("GECKO_TCP_ADDRESS", "") or "0.0.0.0")
        if env("GECKO_SHM"):
            v = env("GECKO_SHM").strip().lower()
            o["shared_memory"] = {"0": "off"}.get(v, v)
            if o["shared_memory"] not in _SHM_MODES:
                raise Error("invalid_argument", "GECKO_SHM='%s': expected auto, off or require" % v)
        o["shm_group"] = envmod.flag("GECKO_SHM_GROUP", False)
        if env("GECKO_SPIN_US"):
            try:
                o["spin"] = int(env("GECKO_SPIN_US"))
            except ValueError:
                raise Error("invalid_argument", "GECKO_SPIN_US='%s': expected microseconds, 0 to 1000000"
                            % env("GECKO_SPIN_US"))
        if env("GECKO_SEND_QUEUE_BYTES"):
            o["send_queue_bytes"] = parse_bytes("GECKO_SEND_QUEUE_BYTES", env("GECKO_SEND_QUEUE_BYTES"))
        if env("GECKO_TRANSPORTS"):
            o["transports"] = [t.strip() for t in env("GECKO_TRANSPORTS").split(",") if t.strip()]
        for k, v in overrides.items():
            if v is not None:
                o[k] = v
        if o["core"] and not disc.normalize_core_address(o["core"]):
            raise Error("invalid_argument", "GECKO_CORE='%s': not host, host:port or tcp://host:port" % o["core"])
        try:
            return cls(**o)
        except ValueError as e:
            raise Error("invalid_argument", "GECKO_MULTICAST='%s': %s" % (o["multicast"], e))

