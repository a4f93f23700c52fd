# SPDX-License-Identifier: Apache-2.0
"""Discovery of a Python node against a real geckocore: by multicast on a
group of the test's own, by GECKO_CORE when multicast gets no answer,
re-registration after the core is killed (-9) and restarted, the
goodbye on close, and ids that are never 0 (the core refuses session 0)."""

import signal
import time

import msgpack
import zmq

from conftest import Core, bin_path, eventually, private_multicast

import gecko
from gecko import discovery as disc
from gecko._session import names as gecko_names
from gecko.msgs import Imu, String


def core_list(core, key):
    """The core's table ({v, t: "list", nodes, topics, ...}), asked as a tool asks."""
    s = zmq.Context.instance().socket(zmq.REQ)
    s.setsockopt(zmq.LINGER, 0)
    s.setsockopt(zmq.RCVTIMEO, 3000)
    try:
        s.connect(core.endpoint)
        s.send(msgpack.packb({"v": 2, "t": "list", "key": key}))
        return msgpack.unpackb(s.recv(), raw=False, strict_map_key=False)
    finally:
        s.close()


def node_names(core, key):
    return sorted(n["node"] for n in core_list(core, key)["nodes"])


def test_found_by_multicast(mrig):
    node = mrig.node("py_mc")
    assert node.wait_for_core(10), "no answer on the test's multicast group"
    sub = node.subscriber("imu", Imu)
    mrig.spawn([bin_path("pub_imu"), "--key", mrig.key])
    assert sub.receive(timeout=10.0) is not None


def test_fallback_to_gecko_core_when_multicast_is_silent(rig):
    # multicast on, but on a group nobody answers: the explicit core is used after find_timeout
    node = rig.node("py_fallback", multicast_enabled=True, multicast=private_multicast(), find_timeout=0.3)
    assert node.wait_for_core(10)
    assert "py_fallback" in node_names(rig.core, rig.key)


def test_bye_on_close_and_lease(rig):
    node = rig.node("py_bye")
    node.publisher("chatter", String)
    assert node.wait_for_core(10)
    eventually(lambda: "py_bye" in node_names(rig.core, rig.key), 5, "the node in the core's table")
    node.close()
    # gone at once (bye), long before the 3 s lease
    eventually(lambda: "py_bye" not in node_names(rig.core, rig.key), 1.5, "the node to leave the table")


def test_core_restart_kill9(rig):
    node = rig.node("py_restart", lease=1.0)
    sub = node.subscriber("imu", Imu)
    assert node.wait_for_core(10)
    first = rig.core
    first.stop(signal.SIGKILL)
    # a new core on the same endpoint: the node registers again without being told
    rig.core = Core(rig.key, listen=first.endpoint)
    eventually(lambda: "py_restart" in node_names(rig.core, rig.key), 10, "re-registration after the restart")

    # The hello puts the node in the table; its subscriber follows in an 'add'
    # right after the welcome.
    def subscribers_of_imu():
        topics = {t["name"]: t for t in core_list(rig.core, rig.key)["topics"]}
        return len(topics["imu"]["subscribers"]) if "imu" in topics else 0

    eventually(lambda: subscribers_of_imu() == 1, 10, "the subscriber re-registered after the restart")
    # a publisher that starts after the restart is found
    rig.spawn([bin_path("pub_imu"), "--key", rig.key])
    assert sub.receive(timeout=10.0) is not None


def test_python_to_python_through_the_core(rig):
    a = rig.node("py_a")
    b = rig.node("py_b")
    pub = a.publisher("chatter", String, latched=True)
    pub.publish(String("latched hello"))
    sub = b.subscriber("chatter", String)
    msg, info = sub.receive(timeout=10.0, with_info=True)
    assert msg == String("latched hello") and info.latched
    pub.publish(String("next"))
    assert sub.receive(timeout=10.0) == String("next")
    a.close()  # the publisher says "end"
    eventually(lambda: sub.stats().drops == 0 and not sub.sink.publishers, 5, "the end control frame")


def test_the_core_refuses_session_id_0(rig):
    # DISCOVERY.md 2.2 step 3: ids are non-zero; a hello with s 0 is malformed, and nobody joins
    s = zmq.Context.instance().socket(zmq.REQ)
    s.setsockopt(zmq.LINGER, 0)
    s.setsockopt(zmq.RCVTIMEO, 20000)
    try:
        s.connect(rig.core.endpoint)
        s.send(disc.hello_msg(0, 7, rig.key, "py_zero", "localhost", "", 1, "", 3000, [], []))
        answer = msgpack.unpackb(s.recv(), raw=False)
    finally:
        s.close()
    assert (answer["t"], answer["code"], answer["id"]) == ("error", "malformed", 0), answer
    assert answer["message"] == "'hello' with session id 0 (session ids are non-zero)"
    assert node_names(rig.core, rig.key) == []


def test_ids_are_never_0(monkeypatch):
    # a session, its secret and every entity: a random u64 drawn again when it is 0
    class ZeroFirst:
        def __init__(self):
            self.next = 10

        def getrandbits(self, bits):
            assert bits == 64
            self.next += 1
            return 0 if self.next % 2 else self.next

    monkeypatch.setattr(gecko_names, "_rng", ZeroFirst())
    with gecko.Node("ids", "py_ids", discovery=False) as node:
        ids = [node.session, node.secret,
               node.publisher("a", String).id, node.subscriber("a", String).id, node.subscribe_all().id,
               node.service("s", String, String, lambda r: r).id, node.client("s", String, String).id]
    assert 0 not in ids and len(set(ids)) == len(ids), ids


def test_a_secured_core_is_not_joined_without_a_secret_and_said_once():
    """docs/SECURITY.md §5: a node without the key's secret never joins a core
    that says `secured`; it says why with one ERROR, not failed handshakes."""
    import select
    import socket
    import types

    class Log:
        def __init__(self):
            self.errors = []

        def error(self, fmt, *args):
            self.errors.append(fmt % args)

    log = Log()
    from gecko.security import KeySecurity
    finder = disc.Finder(types.SimpleNamespace(key="k", multicast_enabled=False), log,
                         KeySecurity(path="/nowhere/k.secret"))
    rx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        rx.bind(("127.0.0.1", 0))
        rx.setblocking(False)
        fields = dict(key="k", instance=7, endpoint="tcp://127.0.0.1:4000", host="h", pid=1)
        for _ in range(2):
            tx.sendto(disc.pack("core", secured=True, **fields), rx.getsockname())
        tx.sendto(disc.pack("core", **fields), rx.getsockname())
        answers = []
        deadline = time.monotonic() + 10
        while not answers and time.monotonic() < deadline:  # the plain answer comes last
            select.select([rx], [], [], 1.0)
            answers += finder.read(rx)
        assert answers == [("tcp://127.0.0.1:4000", 7)]
        assert len(log.errors) == 1
        assert log.errors[0] == ("discovery: geckocore for key 'k' (at tcp://127.0.0.1:4000 on h) requires "
                                 "authentication; no secret found at /nowhere/k.secret (copy the key's secret "
                                 "there, or name it with GECKO_SECRET_FILE)")
    finally:
        rx.close()
        tx.close()
