# SPDX-License-Identifier: Apache-2.0
"""Sealed discovery datagrams in the Python package (docs/SECURITY.md §6):
the test vector, each reason a datagram is refused, the sealed queries a
Finder sends, the decision a secured node takes when only refused datagrams
come; then against C++ geckocore: a secured node finds a secured core by
multicast, a forged plain answer does not keep it from the real core, and a
plain core or one with another secret is named.

The tests marked NEEDS_SEALING_CORE need a geckocore that seals its own
datagrams (the C++ side of §6); with an older one they fail, saying so."""

import os
import random
import select
import socket
import threading
import time
import types

import pytest

from conftest import Proc, bin_path, child_env, private_multicast, python_exe

import gecko
import gecko.msgs
from gecko import discovery as disc
from gecko import security
from gecko._datagram_seal import MAC_MARKER, REASONS, DatagramGuard, seal, wall_clock_ms

VECTOR_SECRET = bytes(range(32))
VECTOR_FIELDS = [("v", 2), ("t", "announce"), ("key", "dalek"), ("instance", 1),
                 ("endpoint", "tcp://192.0.2.1:40000"), ("host", "h"), ("pid", 7), ("secured", True)]
VECTOR_HEX = ("8ca17602a174a8616e6e6f756e6365a36b6579a564616c656ba8696e7374616e636501"
              "a8656e64706f696e74b57463703a2f2f3139322e302e322e313a3430303030a4686f73"
              "74a168a370696407a773656375726564c3a27473cf000001a3185c5000a56e6f6e6365"
              "2aa26670b062376261623964363734306138613736a36d6163c420d42b445b328426c7"
              "ba91bfb4bd36ea4de3c2ec680b624073c378df610f044981")
VECTOR_TS = 1800000000000

# tcp only, no shared memory, as test_security_curve.py
TCP_ONLY = dict(transports=("inproc", "tcp"), shared_memory="off", tcp_address="127.0.0.1")

NEEDS_SEALING_CORE = pytest.mark.needs_sealing_core  # the C++ side of §6 (see sealing_core_or_fail)


class Log:
    """What a Finder logs, by level."""

    def __init__(self):
        self.lines = []

    def _add(self, level, fmt, *args):
        self.lines.append((level, fmt % args if args else fmt))

    def error(self, fmt, *args):
        self._add("ERROR", fmt, *args)

    def warning(self, fmt, *args):
        self._add("WARNING", fmt, *args)

    def info(self, fmt, *args):
        self._add("INFO", fmt, *args)

    def debug(self, fmt, *args):
        self._add("DEBUG", fmt, *args)

    def at(self, level):
        return [t for lvl, t in self.lines if lvl == level]


def key_security(secret, path="/keys/k.secret"):
    """The KeySecurity a node of key "k" holding `secret` (at `path`) has."""
    return security.KeySecurity(security.curve_keys("k", secret), security.fingerprint(secret), path,
                                security.derive(secret, security.MAC))


def guard_of(secret, log=None):
    return DatagramGuard(security.derive(secret, security.MAC), security.fingerprint(secret), log)


def write_secret(path, secret=None):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.write(fd, ((secret or os.urandom(32)).hex() + "\n").encode())
    finally:
        os.close(fd)
    os.chmod(path, 0o600)
    return str(path)


# ---- the seal and the guard ----

def test_seal_gives_the_test_vector_of_security_md():
    data = seal(VECTOR_FIELDS, security.derive(VECTOR_SECRET, security.MAC), security.fingerprint(VECTOR_SECRET),
                VECTOR_TS, 42)
    assert len(data) == 164
    assert data.hex() == VECTOR_HEX
    assert data[-38:-32] == MAC_MARKER
    m = disc.parse(data)
    assert [k for k in m] == [k for k, _ in VECTOR_FIELDS] + ["ts", "nonce", "fp", "mac"]
    verdict = guard_of(VECTOR_SECRET).check(data, m, "192.0.2.1:7650", VECTOR_TS)
    assert verdict.authentic and verdict.fingerprint == "b7bab9d6740a8a76" and verdict.skew_ms == 0, verdict


def test_a_map_of_sixteen_fields_or_more_is_sealed_with_a_map16_header():
    fields = [("v", 2), ("t", "query")] + [("f%d" % i, i) for i in range(12)]  # 14 + 4 sealed fields
    secret = os.urandom(32)
    data = seal(fields, security.derive(secret, security.MAC), security.fingerprint(secret))
    assert data[:3] == b"\xde\x00\x12"
    assert guard_of(secret).check(data, disc.parse(data)).authentic


def _vector_now():
    """The vector's fields sealed with the vector's secret at this host's time, with a fresh nonce."""
    return seal(VECTOR_FIELDS, security.derive(VECTOR_SECRET, security.MAC), security.fingerprint(VECTOR_SECRET))


def test_each_reason_of_refusal_is_counted_and_its_first_logged():
    log = Log()
    guard = guard_of(VECTOR_SECRET, log)
    mac_key, fp = security.derive(VECTOR_SECRET, security.MAC), security.fingerprint(VECTOR_SECRET)
    now = wall_clock_ms()

    def check(data, at=now):
        return guard.check(data, disc.parse(data), "192.0.2.9:7650", at).refused

    # unsigned: a plain datagram, or one whose mac is not the 32-byte bin at its end
    plain = disc.pack("announce", key="dalek", instance=1, endpoint="tcp://192.0.2.1:40000", host="h", pid=7)
    assert check(plain) == "unsigned"
    assert check(disc.pack("announce", key="dalek", secured=True, ts=now, nonce=1, fp=fp, mac=bytes(31))) == "unsigned"
    # other secret: another fingerprint (checked before the MAC: the error names both)
    other = _vector_now().replace(fp.encode(), b"1122334455667788")
    assert guard.check(other, disc.parse(other), "x", now) == ("other secret", "1122334455667788",
                                                                disc.parse(other)["ts"] - now)
    # bad mac: one byte of P flipped (the host "h" becomes "i")
    good = _vector_now()
    flipped = good.replace(b"\xa4host\xa1h", b"\xa4host\xa1i")
    assert flipped != good and check(flipped) == "bad mac"
    # stale: 31 s either way; 29 s is fine
    assert check(seal(VECTOR_FIELDS, mac_key, fp, now - 31000)) == "stale"
    assert check(seal(VECTOR_FIELDS, mac_key, fp, now + 31000)) == "stale"
    assert check(seal(VECTOR_FIELDS, mac_key, fp, now - 29000)) == ""
    # replayed: the same datagram twice
    assert check(good) == ""
    assert check(good) == "replayed"
    assert guard.refused == {"unsigned": 2, "other secret": 1, "bad mac": 1, "stale": 2, "replayed": 1}
    assert guard.refused_total() == 7
    assert guard.describe_refused() == "unsigned 2, other secret 1, bad mac 1, stale 2, replayed 1"
    # the first of each reason is logged, naming the sender; the next are only counted
    warnings = log.at("WARNING")
    assert len(warnings) == len(REASONS), warnings
    assert all("192.0.2.9:7650" in w or "from x:" in w for w in warnings), warnings
    stale = [w for w in warnings if "stale" in w]
    assert len(stale) == 1 and "31.0 s behind this host's clock" in stale[0] and "synchronise the clocks" in stale[0]
    assert any("fingerprint 1122334455667788; this program's is b7bab9d6740a8a76" in w for w in warnings), warnings


def test_a_nonce_is_remembered_for_60_s_and_the_memory_is_bounded():
    guard = guard_of(VECTOR_SECRET)
    mac_key, fp = security.derive(VECTOR_SECRET, security.MAC), security.fingerprint(VECTOR_SECRET)
    t0 = wall_clock_ms()
    first = seal(VECTOR_FIELDS, mac_key, fp, t0, 7)
    assert guard.check(first, disc.parse(first), "x", t0).authentic
    again = seal(VECTOR_FIELDS, mac_key, fp, t0 + 59000, 7)  # the same nonce, a new time
    assert guard.check(again, disc.parse(again), "x", t0 + 59000).refused == "replayed"
    later = seal(VECTOR_FIELDS, mac_key, fp, t0 + 61000, 7)
    assert guard.check(later, disc.parse(later), "x", t0 + 61000).authentic
    for nonce in range(1000, 6000):
        d = seal(VECTOR_FIELDS, mac_key, fp, t0 + 61000, nonce)
        assert guard.check(d, disc.parse(d), "x", t0 + 61000).authentic
    assert len(guard._accepted) <= 4096


def test_the_queries_of_a_secured_finder_are_sealed_and_a_plain_one_is_not():
    secret = os.urandom(32)
    rx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    rx.bind(("127.0.0.1", 0))
    rx.settimeout(5)
    sent = []
    try:
        for sec in (key_security(secret), security.KeySecurity(path="/nowhere/k.secret")):
            opts = types.SimpleNamespace(key="k", name="n", multicast_enabled=False, find_timeout=1.5,
                                         group="127.0.0.1", port=rx.getsockname()[1])
            finder = disc.Finder(opts, Log(), sec)
            finder.sender = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            try:
                finder.tick(time.monotonic())
                sent.append(rx.recvfrom(disc.MAX_DATAGRAM)[0])
            finally:
                finder.sender.close()
    finally:
        rx.close()
    sealed, plain = sent
    m = disc.parse(sealed)
    assert list(m) == ["v", "t", "key", "node", "host", "pid", "ts", "nonce", "fp", "mac"]
    assert m["t"] == "query" and m["key"] == "k" and m["node"] == "n" and m["pid"] == os.getpid()
    assert abs(m["ts"] - wall_clock_ms()) < 5000 and m["fp"] == security.fingerprint(secret)
    assert guard_of(secret).check(sealed, m, "x").authentic
    assert guard_of(os.urandom(32)).check(sealed, m, "x").refused == "other secret"
    assert plain == disc.query_msg("k", "n", socket.gethostname(), os.getpid())
    assert "mac" not in disc.parse(plain)


# ---- a secured Finder's decision, with datagrams of the test's own ----

CORE_FIELDS = [("key", "k"), ("instance", 7), ("endpoint", "tcp://127.0.0.1:4000"), ("host", "h"), ("pid", 1)]


class FinderRig:
    """A secured Finder reading datagrams the test sends to a socket of its own."""

    def __init__(self, secret, find_timeout=0.3):
        self.log = Log()
        self.security = key_security(secret)
        self.finder = disc.Finder(types.SimpleNamespace(key="k", multicast_enabled=False, find_timeout=find_timeout,
                                                        core=""),
                                  self.log, self.security)
        self.rx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.rx.bind(("127.0.0.1", 0))
        self.rx.setblocking(False)
        self.tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)

    def send(self, data):
        self.tx.sendto(data, self.rx.getsockname())

    def read(self, count):
        """The answers the Finder accepts among the next `count` datagrams."""
        answers = []
        before = self.finder.answers + sum(self.finder.refused.values())
        deadline = time.monotonic() + 10
        while self.finder.answers + sum(self.finder.refused.values()) < before + count:
            assert time.monotonic() < deadline, "the datagrams never arrived"
            select.select([self.rx], [], [], 0.5)
            answers += self.finder.read(self.rx)
        return answers

    def close(self):
        self.rx.close()
        self.tx.close()


@pytest.fixture
def finder_rig():
    rigs = []

    def make(secret, find_timeout=0.3):
        rigs.append(FinderRig(secret, find_timeout))
        return rigs[-1]

    yield make
    for r in rigs:
        r.close()


def sealed_core(secret, **extra):
    fields = [("v", 2), ("t", "core")] + CORE_FIELDS + [("secured", True)] + list(extra.items())
    return seal(fields, security.derive(secret, security.MAC), security.fingerprint(secret))


def test_a_forged_plain_answer_loses_to_the_authentic_one(finder_rig):
    secret = os.urandom(32)
    r = finder_rig(secret)
    r.send(disc.pack("core", **dict(CORE_FIELDS, endpoint="tcp://127.0.0.1:6666")))
    assert r.read(1) == []
    assert r.finder.decide(time.monotonic()) is not None  # decided later, not now
    assert not r.finder.security_error
    r.send(sealed_core(secret))
    assert r.read(1) == [("tcp://127.0.0.1:4000", 7)]
    # the authentic answer came in time: nothing to say, ever
    assert r.finder.decide(time.monotonic() + 10) is None and not r.finder.security_error
    assert r.finder.refused["unsigned"] == 1 and r.finder.answers == 1
    assert not r.log.at("ERROR")


def test_a_plain_core_is_named_after_find_timeout(finder_rig):
    r = finder_rig(os.urandom(32), find_timeout=0.3)
    r.send(disc.pack("core", **dict(CORE_FIELDS)))
    t0 = time.monotonic()
    assert r.read(1) == []
    assert r.finder.decide(t0) is not None and not r.finder.security_error
    assert r.finder.decide(t0 + 1.0) is None
    expected = ("geckocore for key 'k' (at tcp://127.0.0.1:4000 on h) is not secured, but this node has the key's "
                "secret (/keys/k.secret): a secured node never talks to a plain core. Give that core the secret too")
    assert r.finder.security_error == expected
    assert r.log.at("ERROR") == ["discovery: " + expected]
    assert "refused 1 datagram (unsigned 1)" in r.finder.describe()


def test_a_core_with_another_secret_is_named_after_find_timeout(finder_rig):
    ours, theirs = os.urandom(32), os.urandom(32)
    r = finder_rig(ours, find_timeout=0.3)
    r.send(sealed_core(theirs))
    t0 = time.monotonic()
    assert r.read(1) == []
    assert not r.finder.security_error
    r.finder.decide(t0 + 1.0)
    assert r.finder.security_error == (
        "geckocore for key 'k' (at tcp://127.0.0.1:4000 on h) holds another secret (fingerprint %s) than this node "
        "(fingerprint %s, /keys/k.secret): copy the same secret to every machine of the key"
        % (security.fingerprint(theirs), security.fingerprint(ours)))
    assert r.finder.refused["other secret"] == 1


def test_forged_stale_and_replayed_datagrams_are_only_counted(finder_rig):
    secret = os.urandom(32)
    r = finder_rig(secret, find_timeout=0.3)
    mac_key, fp = security.derive(secret, security.MAC), security.fingerprint(secret)
    fields = [("v", 2), ("t", "announce")] + CORE_FIELDS + [("secured", True)]
    r.send(disc.pack("core", secured=True, **dict(CORE_FIELDS)))            # unsigned, but says secured
    r.send(seal(fields, mac_key, fp).replace(b"\xa1h", b"\xa1i"))          # bad mac
    r.send(seal(fields, mac_key, fp, wall_clock_ms() - 40000))             # stale
    good = seal(fields, mac_key, fp)
    r.send(good)
    r.send(good)                                                           # replayed
    assert r.read(5) == [("tcp://127.0.0.1:4000", 7)]
    r.finder.restart()  # searching again: the refusals since decide nothing
    r.send(good)
    assert r.read(1) == []
    r.finder.decide(time.monotonic() + 1.0)
    assert not r.finder.security_error and not r.log.at("ERROR")
    assert r.finder.refused == {"unsigned": 1, "other secret": 0, "bad mac": 1, "stale": 1, "replayed": 2}
    assert len(r.log.at("WARNING")) == 4, r.log.lines


def test_a_node_without_the_secret_reads_secured_and_is_told_at_once(finder_rig):
    """Unchanged (§5): a plain node reads a sealed datagram as before."""
    log = Log()
    finder = disc.Finder(types.SimpleNamespace(key="k", multicast_enabled=False, find_timeout=1.5), log,
                         security.KeySecurity(path="/nowhere/k.secret"))
    r = finder_rig(os.urandom(32))
    r.send(sealed_core(os.urandom(32)))
    deadline = time.monotonic() + 10
    while not finder.security_error and time.monotonic() < deadline:
        select.select([r.rx], [], [], 0.5)
        assert finder.read(r.rx) == []
    assert finder.security_error.startswith("geckocore for key 'k' (at tcp://127.0.0.1:4000 on h) requires "
                                            "authentication; no secret found at /nowhere/k.secret")
    assert finder.refused == dict.fromkeys(REASONS, 0)


# ---- against C++ geckocore ----

class CoreByMulticast:
    """A geckocore of the test's own on a multicast group of its own, holding the secret at `secret_file` ("": none)."""

    def __init__(self, key, secret_file, group):
        args = [bin_path("geckocore"), "--key", key, "--listen", "tcp://127.0.0.1:*", "--door", "0",
                "--multicast", group]
        self.proc = Proc(args, env=child_env(key, GECKO_SECRET_FILE=secret_file) if secret_file else child_env(key))
        line = self.proc.wait_line("listening on", 10)
        assert ("secured (secret " in line) == bool(secret_file), line
        self.endpoint = line.split("listening on ", 1)[1].split(",", 1)[0]

    def stop(self):
        self.proc.stop()


def sealing_core_or_fail(key, group, secret):
    """Asks the core of `key` on `group` with a sealed query; fails the test
    (never skips it) when its `core` answer is not sealed: that geckocore
    predates the C++ side of docs/SECURITY.md §6."""
    host, port = disc.parse_multicast(group)
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        s.bind(("0.0.0.0", 0))
        s.settimeout(0.5)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            s.sendto(disc.query_msg(key, "seal_probe", "probe", 0, key_security(secret)), (host, port))
            try:
                data = s.recvfrom(disc.MAX_DATAGRAM)[0]
            except socket.timeout:
                continue
            m = disc.parse(data)
            if m and m["t"] == "core" and m.get("key") == key:
                if data[-38:-32] != MAC_MARKER:
                    pytest.fail("the geckocore in GECKO_BIN_DIR (%s) does not seal its `core` datagrams: it predates "
                                "the C++ side of docs/SECURITY.md §6, which this test needs" % bin_path("geckocore"))
                assert guard_of(secret).check(data, m, "core").authentic, "the core's seal does not verify"
                return
        pytest.fail("no `core` answer from geckocore on %s within 10 s" % group)
    finally:
        s.close()


@pytest.fixture
def key_and_group(tmp_path, monkeypatch):
    """A key of the test's own, its secret (GECKO_SECRET_FILE for the test's nodes) and a multicast group."""
    k = types.SimpleNamespace()
    k.key = "pyseal%d_%06x" % (os.getpid(), random.getrandbits(24))
    k.secret = os.urandom(32)
    k.secret_file = write_secret(tmp_path / "key.secret", k.secret)
    k.group = private_multicast()
    monkeypatch.setenv("GECKO_SECRET_FILE", k.secret_file)
    k.stops = []
    yield k
    for stop in reversed(k.stops):
        stop()


def node_of(k, name, **kw):
    n = gecko.Node(k.key, name, multicast=k.group, **dict(TCP_ONLY, **kw))
    k.stops.append(n.close)
    return n


def core_of(k, secret_file):
    c = CoreByMulticast(k.key, secret_file, k.group)
    k.stops.append(c.stop)
    return c


@NEEDS_SEALING_CORE
def test_a_secured_node_finds_a_secured_cpp_core_by_multicast(key_and_group):
    k = key_and_group
    core = core_of(k, k.secret_file)
    sealing_core_or_fail(k.key, k.group, k.secret)
    node = node_of(k, "py_sealed")
    assert node.wait_for_core(10), node._discovery.finder.describe()
    finder = node._discovery.finder
    assert finder.answers >= 1 and finder.refused == dict.fromkeys(REASONS, 0), finder.refused
    # the core verified the node's sealed queries: it logged none as "not authentic"
    time.sleep(0.2)  # bounded: lets a refusal line the core might print arrive
    assert not [l for l in core.proc.out + core.proc.err if "not authentic" in l], core.proc.out + core.proc.err


@NEEDS_SEALING_CORE
def test_a_forged_plain_answer_does_not_keep_a_secured_node_from_the_real_core(key_and_group):
    k = key_and_group
    # find_timeout 5 s: the real core has time to start after the first forgery, on a loaded machine too
    node = node_of(k, "py_forged_first", find_timeout=5.0)
    finder = node._discovery.finder
    sender_port = finder.sender.getsockname()[1]
    group, port = disc.parse_multicast(k.group)
    forged = disc.pack("core", key=k.key, instance=1, endpoint="tcp://127.0.0.1:9", host="forger", pid=1)
    stop = threading.Event()

    def forge():
        tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            while not stop.is_set():
                tx.sendto(forged, ("127.0.0.1", sender_port))
                tx.sendto(disc.pack("announce", key=k.key, instance=1, endpoint="tcp://127.0.0.1:9", host="forger",
                                    pid=1), (group, port))
                stop.wait(0.1)
        finally:
            tx.close()

    forger = threading.Thread(target=forge, daemon=True)
    forger.start()
    k.stops.append(lambda: (stop.set(), forger.join(5)))
    deadline = time.monotonic() + 10
    while finder.refused["unsigned"] == 0:  # the forgery came first
        assert time.monotonic() < deadline, "the forged datagrams never reached the node"
        time.sleep(0.01)
    core = core_of(k, k.secret_file)
    sealing_core_or_fail(k.key, k.group, k.secret)
    assert node.wait_for_core(10), finder.describe()
    assert node._discovery.core_endpoint == core.endpoint
    assert not node._discovery.security_error
    assert finder.refused["unsigned"] >= 1


def test_a_secured_node_names_a_plain_core_after_find_timeout(key_and_group, log_lines):
    k = key_and_group
    core = core_of(k, "")
    t0 = time.monotonic()
    node = node_of(k, "py_secured_plain_core")
    with pytest.raises(gecko.Error) as e:
        node.wait_for_core(10)
    elapsed = time.monotonic() - t0
    assert e.value.code == "security"
    assert str(e.value).startswith("geckocore for key '%s' (at %s on " % (k.key, core.endpoint)), str(e.value)
    assert ("is not secured, but this node has the key's secret (%s): a secured node never talks to a plain core"
            % k.secret_file) in str(e.value)
    assert elapsed >= 1.4, "said after %.2f s: not after find_timeout (1.5 s)" % elapsed
    assert node._discovery.finder.refused["unsigned"] >= 1
    # one warning for the first unsigned datagram, one ERROR, and no "still trying" before it
    assert len([t for lvl, t in log_lines if lvl == "WARNING" and "it is not sealed" in t]) == 1, log_lines
    assert [t for lvl, t in log_lines if lvl == "ERROR"] == ["discovery: " + str(e.value)], log_lines
    assert not [t for lvl, t in log_lines if "still trying" in t], log_lines


@NEEDS_SEALING_CORE
def test_a_secured_node_names_a_core_with_another_secret(key_and_group, tmp_path):
    k = key_and_group
    theirs = os.urandom(32)
    core = core_of(k, write_secret(tmp_path / "theirs.secret", theirs))
    sealing_core_or_fail(k.key, k.group, theirs)
    node = node_of(k, "py_other_secret")
    with pytest.raises(gecko.Error) as e:
        node.wait_for_core(10)
    assert e.value.code == "security"
    assert str(e.value).startswith("geckocore for key '%s' (at %s on " % (k.key, core.endpoint)), str(e.value)
    assert str(e.value).endswith(
        ") holds another secret (fingerprint %s) than this node (fingerprint %s, %s): copy the same secret to every "
        "machine of the key" % (security.fingerprint(theirs), security.fingerprint(k.secret), k.secret_file)), \
        str(e.value)
    assert node._discovery.finder.refused["other secret"] >= 1


@NEEDS_SEALING_CORE
def test_python_list_finds_a_secured_core_by_multicast(key_and_group):
    k = key_and_group
    core_of(k, k.secret_file)
    sealing_core_or_fail(k.key, k.group, k.secret)
    node = node_of(k, "py_listed_sealed")
    node.publisher("sealed_topic", gecko.msgs.String)
    assert node.wait_for_core(10)
    ls = Proc([python_exe(), "-m", "gecko", "list", "--key", k.key],
              env=child_env(k.key, GECKO_SECRET_FILE=k.secret_file, GECKO_MULTICAST=k.group))
    k.stops.append(ls.stop)
    assert ls.wait(20) == 0, ls.err
    assert any(l.startswith("sealed_topic ") for l in ls.out), ls.out


def test_python_list_with_the_secret_names_a_plain_core(key_and_group):
    k = key_and_group
    core_of(k, "")
    ls = Proc([python_exe(), "-m", "gecko", "list", "--key", k.key],
              env=child_env(k.key, GECKO_SECRET_FILE=k.secret_file, GECKO_MULTICAST=k.group))
    k.stops.append(ls.stop)
    assert ls.wait(20) == 1, (ls.out, ls.err)
    assert any("is not secured, but this node has the key's secret" in l for l in ls.err), ls.err
