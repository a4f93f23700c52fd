# SPDX-License-Identifier: Apache-2.0
"""Discovery of a Python node against a real geckocore: by multicast on a
group of the test's own, by GECKO_CORE when multicast gets no answer,
re-registration after the core is killed (-9) and restarted, and the
goodbye on close."""

import signal
import time

import msgpack
import zmq

from conftest import Core, bin_path, eventually, private_multicast

import gecko
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
