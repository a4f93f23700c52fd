# SPDX-License-Identifier: Apache-2.0
"""Cross-language pub/sub with real processes on loopback: C++ publishers
(pub_imu, pub_lidar_compressed, gecko pub) into Python subscribers, Python
publishers into C++ subscribers (gecko echo, sub_imu), found through a
geckocore of the test's own."""

import json
import math
import subprocess

from conftest import bin_path, eventually

import gecko
from gecko.msgs import Imu, Lidar, String, Float64


def test_cpp_publisher_to_python_subscriber(rig):
    node = rig.node("py_imu_monitor")
    sub = node.subscriber("imu", Imu, depth=64)
    rig.spawn([bin_path("pub_imu"), "--key", rig.key])
    got = []
    while len(got) < 5:
        m = sub.receive(timeout=10.0, with_info=True)
        assert m is not None, "no Imu from pub_imu within 10 s"
        got.append(m)
    msg, info = got[-1]
    assert isinstance(msg, Imu) and msg.frame_id == "imu_link" and msg.accel.z == 9.81
    assert info.type_name == "gecko.msgs.Imu" and info.sequence > got[0][1].sequence
    s = sub.stats()
    assert s.delivered == 5 and s.malformed == 0 and s.type_mismatches == 0 and s.decode_errors == 0


def test_python_publisher_to_gecko_echo(rig):
    node = rig.node("py_chatter")
    pub = node.publisher("chatter", String)
    echo = rig.spawn([bin_path("gecko"), "echo", "--key", rig.key, "chatter", "--count", "3", "--json"])
    assert pub.wait_for_subscribers(1, timeout=10.0), "gecko echo never subscribed"
    for i in range(3):
        pub.publish(String(data="hello %d" % i))
    assert echo.wait(10) == 0
    assert [json.loads(l) for l in echo.out] == [{"data": "hello %d" % i} for i in range(3)]
    assert pub.stats()["messages"] == 3


def test_compressed_both_ways(rig):
    node = rig.node("py_lidar")
    sub = node.subscriber("scan", Lidar)
    rig.spawn([bin_path("pub_lidar_compressed"), "--key", rig.key])
    msg, info = sub.receive(timeout=10.0, with_info=True)
    assert info.compressed and len(msg.ranges) == len(msg.angles) > 0
    # the other way: a compressed Python frame read by gecko echo
    pub = node.publisher("big", String, compress_above=64)
    echo = rig.spawn([bin_path("gecko"), "echo", "--key", rig.key, "big", "--count", "1", "--json"])
    assert pub.wait_for_subscribers(1, timeout=10.0)
    pub.publish(String(data="x" * 5000))
    assert echo.wait(10) == 0
    assert json.loads(echo.out[0]) == {"data": "x" * 5000}
    assert pub.stats()["compressed"] == 1


def test_gecko_pub_to_python_and_dict_form(rig):
    node = rig.node("py_any")
    typed = node.subscriber("cmd", Float64)
    anything = node.subscriber("cmd")  # any type: dicts, as a tool reads
    rig.spawn([bin_path("gecko"), "pub", "--key", rig.key, "cmd", "--type", "gecko.msgs.Float64",
               '{"data": 1.5}', "--rate", "20", "--count", "100"])
    assert typed.receive(timeout=10.0) == Float64(1.5)
    d, info = anything.receive(timeout=10.0, with_info=True)
    assert d == {"data": 1.5}
    eventually(lambda: node._type_name_of(info.publisher_id) == "gecko.msgs.Float64", 5, "the publisher's type")


def test_callbacks_in_spin(rig):
    node = rig.node("py_cb")
    seen = []
    node.subscriber("imu", Imu, callback=seen.append)
    rig.spawn([bin_path("pub_imu"), "--key", rig.key])
    deadline_spins = 200
    while len(seen) < 3 and deadline_spins:
        node.spin_once(0.05)
        deadline_spins -= 1
    assert len(seen) >= 3 and all(isinstance(m, Imu) for m in seen)


def test_python_publisher_to_cpp_sub_imu(rig):
    node = rig.node("py_imu_driver")
    pub = node.publisher("imu", Imu)
    sub = rig.spawn([bin_path("sub_imu"), "--key", rig.key, "--count", "3"])
    assert pub.wait_for_subscribers(1, timeout=10.0)
    rate = gecko.Rate(100)
    while sub.p.poll() is None and pub.stats()["messages"] < 2000:
        pub.publish(Imu(stamp_ns=gecko.now_ns(), frame_id="py", accel=gecko.msgs.Vector3(z=9.81)))
        rate.sleep()
    assert sub.wait(10) == 0
    assert any("9.81" in l for l in sub.out), sub.out


def test_python_subscriber_reports_its_link(rig):
    """A Python node reports its links with its figures (DISCOVERY.md 2.7), as
    C++ nodes do: `gecko nodes` shows the C++ publisher in its RECEIVES FROM
    column, `gecko list --json` lists the link with its transport (one host:
    shm, or ipc where this Python cannot read shared memory), `gecko info`
    says how the topic reaches it."""
    node = rig.node("py_link_monitor")
    sub = node.subscriber("imu", Imu)
    rig.spawn([bin_path("pub_imu"), "--key", rig.key])
    assert sub.receive(timeout=10.0) is not None, "no Imu from pub_imu within 10 s"
    gecko_cli = bin_path("gecko")
    scheme = "shm" if node.shm_info() is not None else "ipc"

    def run(*args):
        p = subprocess.run([gecko_cli] + list(args), env=rig.env(), capture_output=True, text=True, timeout=10)
        assert p.returncode == 0, p.stderr
        return p.stdout.splitlines()

    def listed_link():
        for n in json.loads("\n".join(run("list", "--json")))["nodes"]:
            if n["name"] == "py_link_monitor":
                return [(l["node"], l["transport"]) for l in n["links"]]
        return []
    # Figures go to the core every 3 s: the first report with the link.
    eventually(lambda: ("imu_driver", scheme) in listed_link(), 15, "the Python node's link in gecko list --json")
    lines = run("nodes")
    assert any("RECEIVES FROM" in l for l in lines), lines
    assert any(l.startswith("py_link_monitor") and "imu_driver over " + scheme in l for l in lines), lines
    assert any("from imu_driver over " + scheme in l for l in run("info", "imu")), "gecko info imu shows no link"
