# SPDX-License-Identifier: Apache-2.0
"""One secret per key in the Python package (docs/SECURITY.md): the key
store and the derivation, and CurveZMQ with a ZAP handler between Python
nodes, C++ programs (pub_imu, gecko echo) and a secured geckocore of the
test's own, over tcp. A node without the secret is told why it cannot join;
a socket without the key's client key gets nothing."""

import json
import os
import re
import socket
import time

import pytest
import zmq
from zmq.utils import z85

from conftest import Proc, bin_path, child_env, eventually, private_multicast, python_exe

import gecko
from gecko import security, shm
from gecko._transport import zap_counters
from gecko.msgs import Imu, String

# tcp only, no shared memory: every link between processes is CURVE over tcp.
TCP_ONLY = dict(transports=("inproc", "tcp"), shared_memory="off", tcp_address="127.0.0.1")
TCP_ONLY_ENV = dict(GECKO_TRANSPORTS="tcp", GECKO_SHM="off", GECKO_TCP_ADDRESS="127.0.0.1")


def write_secret(path, secret=None, mode=0o600):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    try:
        os.write(fd, ((secret or os.urandom(32)).hex() + "\n").encode())
    finally:
        os.close(fd)
    os.chmod(path, mode)  # whatever the umask took away
    return str(path)


class SecuredCore:
    """A geckocore of the test's own holding the secret at `secret_file` ("": none)."""

    def __init__(self, key, secret_file, multicast=None):
        args = [bin_path("geckocore"), "--key", key, "--listen", "tcp://127.0.0.1:*", "--door", "0"]
        args += ["--multicast", multicast] if multicast else ["--no-multicast"]
        self.proc = Proc(args, env=child_env(key, GECKO_SECRET_FILE=secret_file))
        line = self.proc.wait_line("listening on", 10)
        assert "secured (secret " in line, line
        self.endpoint = re.search(r"listening on (tcp://[0-9.]+:\d+)", line).group(1)
        self.address = self.endpoint[len("tcp://"):]

    def stop(self):
        self.proc.stop()


@pytest.fixture
def secured(tmp_path, monkeypatch):
    """A key with a secret file (GECKO_SECRET_FILE for the test's nodes too),
    its secured core, and what is started against it, stopped at the end."""

    class Key:
        pass

    k = Key()
    k.key = "pysec%d_%06x" % (os.getpid(), int.from_bytes(os.urandom(3), "little"))
    k.secret_file = write_secret(tmp_path / "key.secret")
    monkeypatch.setenv("GECKO_SECRET_FILE", k.secret_file)
    k.core = SecuredCore(k.key, k.secret_file)
    k.nodes, k.procs = [], []

    def node(name, **kw):
        opts = dict(core=k.core.address, multicast_enabled=False, **TCP_ONLY)
        opts.update(kw)
        n = gecko.Node(k.key, name, **opts)
        k.nodes.append(n)
        return n

    def spawn(args, **env):
        env = dict(TCP_ONLY_ENV, **env)
        p = Proc(args, env=child_env(k.key, GECKO_SECRET_FILE=k.secret_file, GECKO_CORE=k.core.address,
                                     GECKO_NO_MULTICAST="1", **env))
        k.procs.append(p)
        return p

    k.node, k.spawn = node, spawn
    yield k
    for n in k.nodes:
        n.close()
    for p in k.procs:
        p.stop()
    k.core.stop()


# ---- the secret and what is derived from it ----

def test_derivation_matches_the_vectors_of_security_md():
    secret = bytes(range(32))
    subkeys = ["b7bab9d6740a8a7645cc21f302f4ca304b956323b3f86a1a90b8753c757a7ecb",
               "158343a05096a123b3e5d6208d3ea7df7a14708d90040c501707d917e40b8926",
               "db9673337fa400c0e406bedde648d57c01d2ab6080726a9ea22c29a5bc4f78a0",
               "1a48fac296161c7c96cae0fb8371d0be5998cf7d139acf0c91bb94f6f28acf47",
               "4f21350a1ad34be55473aa8d317231db15d07ff687e038a92b5708500f76f750",
               "1652a88e4f44c6f0243fc1f8727987dafaa3e2b39c29d0cec6a43ed158c7110b"]
    assert [security.derive(secret, i).hex() for i in range(6)] == subkeys
    assert security.fingerprint(secret) == "b7bab9d6740a8a76"
    assert security.bridge_token(secret) == "1652a88e4f44c6f0243fc1f8727987da"  # as C++ Secret::bridge_token
    keys = security.curve_keys("dalek", secret)
    assert keys.zap_domain == "gecko/dalek"
    assert keys.server_public == b"1LwLYiTHqqFkx<jV{cWCif^6dvOoU9oBo0>AtB9:"
    assert keys.client_public == b"I:e!5fi00EJDgkJ@hKqo0jpX@N/1!pmCdvUt3)?j"
    assert z85.decode(keys.server_secret).hex() == subkeys[1]
    assert z85.decode(keys.client_secret).hex() == subkeys[2]


def test_key_store_rules(tmp_path, monkeypatch):
    monkeypatch.delenv("GECKO_SECRET_FILE", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    # no file: no secret, and where it was looked for (the key's bytes %XX-escaped)
    s = security.KeySecurity.find("arm 1/x")
    assert not s.secured and s.path == str(tmp_path / "config" / "gecko" / "keys" / "arm%201%2Fx.secret")
    assert security.secret_path(".k") == str(tmp_path / "config" / "gecko" / "keys" / "%2Ek.secret")
    monkeypatch.delenv("XDG_CONFIG_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert security.secret_path("k") == str(tmp_path / "home" / ".config" / "gecko" / "keys" / "k.secret")

    # the store's file is found by the key alone, and agrees with `gecko keygen --fingerprint`
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    os.makedirs(tmp_path / "config" / "gecko" / "keys", mode=0o700)
    write_secret(tmp_path / "config" / "gecko" / "keys" / "k.secret", bytes(range(32)))
    s = security.KeySecurity.find("k")
    assert s.secured and s.fingerprint == "b7bab9d6740a8a76"
    keygen = Proc([bin_path("gecko"), "keygen", "--key", "k", "--fingerprint"],
                  env=child_env("k", XDG_CONFIG_HOME=str(tmp_path / "config")))
    assert keygen.wait(10) == 0
    assert "b7bab9d6740a8a76" in "\n".join(keygen.out + keygen.err)

    # GECKO_SECRET_FILE names a file on purpose: missing is an error, not "no security"
    missing = str(tmp_path / "missing.secret")
    monkeypatch.setenv("GECKO_SECRET_FILE", missing)
    with pytest.raises(gecko.Error) as e:
        security.KeySecurity.find("k")
    assert e.value.code == "security" and "GECKO_SECRET_FILE names %s, which does not exist" % missing in str(e.value)
    with pytest.raises(gecko.Error) as e:
        gecko.Node("k", "py_missing_secret", discovery=False)
    assert e.value.code == "security"

    # group or others may read it: refused, and the error says what to run
    loose = write_secret(tmp_path / "loose.secret", mode=0o644)
    monkeypatch.setenv("GECKO_SECRET_FILE", loose)
    with pytest.raises(gecko.Error) as e:
        security.KeySecurity.find("k")
    assert "(mode 0644)" in str(e.value) and "chmod 600 '%s'" % loose in str(e.value)

    # a symbolic link, a directory, a file that holds no secret
    link = str(tmp_path / "link.secret")
    os.symlink(tmp_path / "config" / "gecko" / "keys" / "k.secret", link)
    monkeypatch.setenv("GECKO_SECRET_FILE", link)
    with pytest.raises(gecko.Error, match="is a symbolic link; name the file itself"):
        security.KeySecurity.find("k")
    monkeypatch.setenv("GECKO_SECRET_FILE", str(tmp_path / "config"))
    with pytest.raises(gecko.Error, match="is not a regular file"):
        security.KeySecurity.find("k")
    short = tmp_path / "short.secret"
    fd = os.open(short, os.O_WRONLY | os.O_CREAT, 0o600)
    os.write(fd, b"abcd\n")
    os.close(fd)
    monkeypatch.setenv("GECKO_SECRET_FILE", str(short))
    with pytest.raises(gecko.Error, match="must be one line of 64 hexadecimal digits"):
        security.KeySecurity.find("k")



# ---- CurveZMQ with C++ programs through a secured core ----

def write_rotation(path, own, accepted):
    """A secret file during a rotation (docs/SECURITY.md §9): `own` used, `accepted` accepted too."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.write(fd, (own.hex() + "\n" + accepted.hex() + "\n").encode())
    finally:
        os.close(fd)
    return str(path)


@pytest.mark.parametrize("scheme", ["tcp", "shm"])
def test_during_a_rotation_a_python_node_on_the_new_secret_talks_to_cpp_on_the_old(scheme, tmp_path, monkeypatch):
    if scheme == "shm" and shm.UNAVAILABLE:
        pytest.fail("no shared memory for Python: " + shm.UNAVAILABLE)
    old, new = os.urandom(32), os.urandom(32)
    unswitched = write_rotation(tmp_path / "unswitched.secret", old, new)  # round 1: old, accepting new
    switched = write_rotation(tmp_path / "switched.secret", new, old)      # round 2: new, accepting old
    key = "pyrot%d_%06x" % (os.getpid(), int.from_bytes(os.urandom(3), "little"))
    core = SecuredCore(key, unswitched)
    nodes, procs = [], []
    try:
        monkeypatch.setenv("GECKO_SECRET_FILE", switched)
        transports = ("inproc", "tcp") if scheme == "tcp" else ("inproc", "ipc")
        node = gecko.Node(key, "py_rotated", core=core.address, multicast_enabled=False, transports=transports,
                          shared_memory="off" if scheme == "tcp" else "auto", tcp_address="127.0.0.1",
                          ipc_directory=str(tmp_path))
        nodes.append(node)
        assert node.security.fingerprint == security.fingerprint(new)
        assert node.security.accepted_fingerprint == security.fingerprint(old)
        # GECKO_CORE names no secret: the node's own is refused, then the old one (which it accepts) joins.
        assert node.wait_for_core(20), "the core on the old secret never acknowledged the switched Python node"
        sub = node.subscriber("imu", Imu, depth=64)
        pub_env = dict(GECKO_TRANSPORTS="tcp", GECKO_SHM="off") if scheme == "tcp" else \
            dict(GECKO_TRANSPORTS="shm,ipc", GECKO_SHM="auto", GECKO_IPC_DIR=str(tmp_path))
        imu = Proc([bin_path("pub_imu"), "--key", key], env=child_env(
            key, GECKO_SECRET_FILE=unswitched, GECKO_CORE=core.address, GECKO_NO_MULTICAST="1", **pub_env))
        procs.append(imu)
        assert sub.receive(timeout=20.0) is not None, "no Imu from pub_imu on the old secret:\n" + "\n".join(imu.err)
        eventually(lambda: [s for _, s in node._links_report()] == [scheme], 10, "a %s link" % scheme)
        if scheme == "shm":
            assert node.shm_info()["unsealed"] == 0  # sealed with the old secret, which it accepts

        # The other way: a Python publisher on the new secret, gecko echo on the old one (ZAP admits its old client key).
        pub = node.publisher("chatter", String)
        echo = Proc([bin_path("gecko"), "echo", "--key", key, "chatter", "--count", "3", "--json"], env=child_env(
            key, GECKO_SECRET_FILE=unswitched, GECKO_CORE=core.address, GECKO_NO_MULTICAST="1", **pub_env))
        procs.append(echo)
        assert pub.wait_for_subscribers(1, timeout=20.0), "gecko echo never subscribed:\n" + "\n".join(echo.err)
        for i in range(3):
            pub.publish(String(data="turn %d" % i))
        assert echo.wait(20) == 0, "\n".join(echo.err)
        assert [json.loads(l) for l in echo.out] == [{"data": "turn %d" % i} for i in range(3)]
    finally:
        for n in nodes:
            n.close()
        for p in procs:
            p.stop()
        core.stop()


@pytest.mark.parametrize("scheme", ["tcp", "ipc"])
def test_python_publisher_to_gecko_echo_over_curve(secured, scheme, tmp_path):
    node = secured.node("py_secured_chatter", transports=("inproc", scheme), ipc_directory=str(tmp_path))
    assert node.security.secured
    assert node.wait_for_core(10), "the secured geckocore never acknowledged the Python node"
    pub = node.publisher("chatter", String)
    admitted = zap_counters()[0]
    echo = secured.spawn([bin_path("gecko"), "echo", "--key", secured.key, "chatter", "--count", "3", "--json"],
                         GECKO_TRANSPORTS=scheme, GECKO_IPC_DIR=str(tmp_path))
    assert pub.wait_for_subscribers(1, timeout=10.0), "gecko echo never subscribed:\n" + "\n".join(echo.err)
    for i in range(3):
        pub.publish(String(data="hello %d" % i))
    assert echo.wait(10) == 0, "\n".join(echo.err)
    assert [json.loads(l) for l in echo.out] == [{"data": "hello %d" % i} for i in range(3)]
    # gecko echo's SUB came over tcp or ipc, through this process's ZAP handler
    assert zap_counters()[0] > admitted


@pytest.mark.parametrize("scheme", ["tcp", "ipc"])
def test_pub_imu_to_python_subscriber_over_curve(secured, scheme, tmp_path):
    node = secured.node("py_secured_imu", transports=("inproc", scheme), ipc_directory=str(tmp_path))
    sub = node.subscriber("imu", Imu, depth=64)
    assert node.wait_for_core(10)
    pub = secured.spawn([bin_path("pub_imu"), "--key", secured.key], GECKO_TRANSPORTS=scheme,
                        GECKO_IPC_DIR=str(tmp_path))
    got = []
    while len(got) < 3:
        m = sub.receive(timeout=10.0)
        assert m is not None, "no Imu from pub_imu within 10 s:\n" + "\n".join(pub.err)
        got.append(m)
    assert got[-1].frame_id == "imu_link" and got[-1].accel.z == 9.81
    links = node._links_report()
    assert links and all(via == scheme for _, via in links), links


@pytest.mark.skipif(shm.UNAVAILABLE != "", reason="no shared memory for Python: " + shm.UNAVAILABLE)
def test_a_secured_python_node_maps_only_segments_sealed_with_its_secret(secured, tmp_path):
    node = secured.node("py_secured_shm", transports=("inproc", "ipc"), shared_memory="auto",
                        ipc_directory=str(tmp_path))
    sub = node.subscriber("imu", Imu, depth=64)
    assert node.wait_for_core(10)
    pub = secured.spawn([bin_path("pub_imu"), "--key", secured.key], GECKO_TRANSPORTS="shm,ipc", GECKO_SHM="auto",
                        GECKO_IPC_DIR=str(tmp_path))
    assert sub.receive(timeout=10.0) is not None, "no Imu from pub_imu within 10 s:\n" + "\n".join(pub.err)
    eventually(lambda: [s for _, s in node._links_report()] == ["shm"], 10, "a shared-memory link")
    assert node.shm_info()["unsealed"] == 0
    # pub_imu's segment, read by ports of their own: the key's subkey 4 maps it, another secret's does not
    names = [n for n in os.listdir("/dev/shm") if n.startswith("gecko-") and not n.startswith("gecko-in-")
             and not n.endswith(".bell")]
    locators = []
    for name in names:
        try:
            with open(os.path.join("/dev/shm", name), "rb") as f:
                head = f.read(40)
        except OSError:
            continue
        if len(head) == 40 and int.from_bytes(head[32:40], "little") == pub.p.pid:
            locators.append("shm://" + name)
    assert len(locators) == 1, names
    right = security.KeySecurity.find(secured.key).shm_key
    wrong = security.derive(os.urandom(32), security.SHM_MAC)
    for key, expected in ((right, ""), (wrong, "is sealed with another secret than this node's"), (None, "")):
        port = shm.ShmInPort(seal_key=key)
        try:
            why = port.connect(locators[0])
            assert (why == "") if expected == "" else (expected in why), why
            assert port.info()["unsealed"] == (0 if expected == "" else 1)
        finally:
            port.close()


def test_python_list_queries_a_secured_core(secured):
    node = secured.node("py_secured_lister")
    node.publisher("listed", String)
    assert node.wait_for_core(10)
    ls = secured.spawn([python_exe(), "-m", "gecko", "list", "--key", secured.key])
    assert ls.wait(20) == 0, ls.err
    assert any(l.startswith("listed ") and "py_secured_lister@" in l for l in ls.out), ls.out
    fp = security.KeySecurity.find(secured.key).fingerprint
    assert ", secured (secret %s): every tcp and ipc link is CurveZMQ" % fp in ls.out[0], ls.out


def test_a_secured_python_node_and_list_reach_their_core_through_the_plain_host_door(tmp_path, monkeypatch):
    key = "pydoor%d_%06x" % (os.getpid(), int.from_bytes(os.urandom(3), "little"))
    secret_file = write_secret(tmp_path / "key.secret")
    monkeypatch.setenv("GECKO_SECRET_FILE", secret_file)
    with socket.socket() as s:  # a free port for the door (the core binds it a moment later)
        s.bind(("127.0.0.1", 0))
        door = s.getsockname()[1]
    core = Proc([bin_path("geckocore"), "--key", key, "--listen", "tcp://127.0.0.1:*", "--door", str(door),
                 "--no-multicast"], env=child_env(key, GECKO_SECRET_FILE=secret_file))
    node = None
    try:
        core.wait_line("holding the host door", 10)
        # The door is plain and only names the core: the node asks it plainly, then joins the core over CURVE.
        node = gecko.Node(key, "py_through_door", core="127.0.0.1:%d" % door, multicast_enabled=False, **TCP_ONLY)
        assert node.wait_for_core(20), "the secured Python node never joined its core through the host door"
        node.publisher("through_door", String)
        ls = Proc([python_exe(), "-m", "gecko", "list", "--key", key, "--core", "127.0.0.1:%d" % door],
                  env=child_env(key, GECKO_SECRET_FILE=secret_file, GECKO_NO_MULTICAST="1"))
        assert ls.wait(20) == 0, ls.err
        fp = security.KeySecurity.find(key).fingerprint
        assert ", secured (secret %s)" % fp in ls.out[0], ls.out
        assert any(l.startswith("through_door ") for l in ls.out), ls.out
    finally:
        if node is not None:
            node.close()
        core.stop()


def test_python_list_given_a_secured_cores_address_without_its_secret_says_why(secured, tmp_path):
    base = dict(GECKO_NO_MULTICAST="1", XDG_CONFIG_HOME=str(tmp_path / "empty"))
    args = [python_exe(), "-m", "gecko", "list", "--key", secured.key, "--core", secured.core.address]
    none = Proc(args, env=child_env(secured.key, **base))
    assert none.wait(20) != 0
    assert any("refuses this program's handshake: it requires authentication" in l for l in none.err), none.err
    other = Proc(args, env=child_env(secured.key, GECKO_SECRET_FILE=write_secret(tmp_path / "other.secret"), **base))
    assert other.wait(20) != 0
    assert any("refuses this program's CURVE handshake: it holds another secret than" in l for l in other.err), other.err


# ---- mixed configurations ----

def test_node_without_the_secret_is_told_and_receives_nothing(tmp_path, monkeypatch):
    group = private_multicast()
    key = "pysec_nosecret_%06x" % int.from_bytes(os.urandom(3), "little")
    secret_file = write_secret(tmp_path / "key.secret")
    core = SecuredCore(key, secret_file, multicast=group)
    pub = Proc([bin_path("pub_imu"), "--key", key],
               env=child_env(key, GECKO_SECRET_FILE=secret_file, GECKO_MULTICAST=group, **TCP_ONLY_ENV))
    monkeypatch.delenv("GECKO_SECRET_FILE", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "empty"))
    node = gecko.Node(key, "py_no_secret", multicast=group, **TCP_ONLY)
    try:
        assert not node.security.secured
        sub = node.subscriber("imu", Imu)
        with pytest.raises(gecko.Error) as e:
            node.wait_for_core(10)
        expected = ("geckocore for key '%s' (at %s on " % (key, core.endpoint))
        assert e.value.code == "security" and str(e.value).startswith(expected), str(e.value)
        assert ("requires authentication; no secret found at %s (copy the key's secret there, or name it with "
                "GECKO_SECRET_FILE)" % (tmp_path / "empty" / "gecko" / "keys" / (key + ".secret"))) in str(e.value)
        assert sub.receive(timeout=1.0) is None  # bounded: nothing can arrive, it never joined
        assert not node.core_connected()
    finally:
        node.close()
        pub.stop()
        core.stop()


def test_node_with_a_secret_refuses_a_plain_core(mrig, tmp_path, monkeypatch, log_lines):
    secret_file = write_secret(tmp_path / "key.secret")
    monkeypatch.setenv("GECKO_SECRET_FILE", secret_file)
    node = mrig.node("py_secret_plain_core")
    with pytest.raises(gecko.Error) as e:
        node.wait_for_core(10)
    assert "is not secured, but this node has the key's secret (%s): a secured node never talks to a plain " \
           "core" % secret_file in str(e.value)
    assert [t for lvl, t in log_lines if lvl == "ERROR" and "is not secured" in t], log_lines


def test_sockets_without_the_client_key_get_nothing(tmp_path, monkeypatch, log_lines):
    key = "pysec_zap_%06x" % int.from_bytes(os.urandom(3), "little")
    secret = os.urandom(32)
    monkeypatch.setenv("GECKO_SECRET_FILE", write_secret(tmp_path / "key.secret", secret))
    keys = security.curve_keys(key, secret)
    node = gecko.Node(key, "py_zap", discovery=False, **TCP_ONLY)
    ctx = zmq.Context()
    socks = []

    def sub(curve_client=None):
        s = ctx.socket(zmq.SUB)
        s.setsockopt(zmq.LINGER, 0)
        if curve_client is not None:
            s.setsockopt(zmq.CURVE_SERVERKEY, keys.server_public)
            s.setsockopt(zmq.CURVE_PUBLICKEY, curve_client[0])
            s.setsockopt(zmq.CURVE_SECRETKEY, curve_client[1])
        s.setsockopt(zmq.SUBSCRIBE, b"")
        socks.append(s)
        return s

    try:
        pub = node.publisher("chatter", String)
        tcp = [l for l in node.locators if l.startswith("tcp://")][0]
        plain = sub()
        failed = plain.get_monitor_socket(zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL | zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL
                                          | zmq.EVENT_HANDSHAKE_FAILED_AUTH)
        plain.connect(tcp)
        refused = zap_counters()[1]
        stranger = sub(zmq.curve_keypair())
        stranger.connect(tcp)
        # the positive control: the key's own client pair is admitted and hears the publisher
        member = sub((keys.client_public, keys.client_secret))
        member.connect(tcp)
        # the plain SUB fails its handshake (a NULL client meets a CURVE server)
        assert failed.poll(10000), "no handshake failure reported to the plain SUB within 10 s"
        # the stranger (a CURVE client without the key's client key) is refused by the ZAP handler
        eventually(lambda: zap_counters()[1] > refused, 10, "the ZAP handler's refusal")
        # a raw SUB is no announced subscriber: publish until the member's link is up
        deadline = time.monotonic() + 10
        while not member.poll(50):
            assert time.monotonic() < deadline, "the key's own client got nothing within 10 s"
            pub.publish(String(data="hello"))
        assert plain.poll(0) == 0 and stranger.poll(0) == 0
        failed.close(0)
        eventually(lambda: any("refused a connection from 127.0.0.1: its key is not the client key of 'gecko/%s'"
                               % key in t for _, t in log_lines), 5, "the refusal's log line")
    finally:
        for s in socks:
            s.close(0)
        ctx.term()
        node.close()


def test_a_node_given_gecko_core_reads_the_refused_handshake(secured, tmp_path, monkeypatch, log_lines):
    # no secret, a secured core reached with GECKO_CORE (no datagram says it is secured)
    monkeypatch.delenv("GECKO_SECRET_FILE")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "empty"))
    node = secured.node("py_no_secret_explicit")
    with pytest.raises(gecko.Error) as e:
        node.wait_for_core(10)
    assert str(e.value) == ("geckocore for key '%s' at %s refuses this node's handshake: it requires "
                            "authentication; no secret found at %s" % (
                                secured.key, secured.core.endpoint,
                                tmp_path / "empty" / "gecko" / "keys" / (secured.key + ".secret")))
    # another secret than the core's (asked as a host door too, it refuses a plain connection: a secured core)
    monkeypatch.setenv("GECKO_SECRET_FILE", write_secret(tmp_path / "other.secret"))
    node = secured.node("py_other_secret_explicit")
    with pytest.raises(gecko.Error, match="refuses this node's CURVE handshake: it holds "
                                          "another secret than .*other.secret \\(compare `gecko keygen"):
        node.wait_for_core(10)
    assert len([t for lvl, t in log_lines if lvl == "ERROR" and "refuses this node" in t]) == 2, log_lines
