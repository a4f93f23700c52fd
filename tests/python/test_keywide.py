# SPDX-License-Identifier: Apache-2.0
"""Key-wide subscriptions and the channel directory against the real
programs: a Python Node.subscribe_all() hears C++ (gecko_test_node) and
Python publishers, also ones that start after it, each message named by its
topic and type; a filter takes only what it matches; a C++
Node::subscribe_all (gecko_test_node all) hears a Python publisher under
its topic's name and reads the schema it declared from its directory; the
directory seen from Python matches `gecko list`; a channel-id collision is
refused for a Python publisher and subscriber; python3 -m gecko echo takes
a glob."""

import json
import time

import pytest

from conftest import Core, bin_path, eventually, python_exe
from test_discovery import core_list

import gecko
from gecko import discovery, shm, wire
from gecko.msgs import Float64, Int64, String


def take(sub, n, timeout=20.0):
    """n (msg, info) from a key-wide subscriber, or fails."""
    out = []
    deadline = time.monotonic() + timeout
    while len(out) < n:
        got = sub.receive(timeout=max(0.01, deadline - time.monotonic()))
        assert got is not None, "%d of %d messages within %.0f s: %r" % (len(out), n, timeout, out)
        out.append(got)
    return out


def cpp_publisher(rig, topic, count=5, kind="int"):
    """gecko_test_node publishing `count` messages on `topic` once a subscriber is there."""
    return rig.spawn([bin_path("gecko_test_node"), "pub", "--topic", topic, "--type", kind, "--count", str(count),
                      "--rate", "50", "--wait-subs", "1", "--timeout-ms", "20000"], stdin=True)


def test_a_python_key_wide_subscriber_names_every_topic_and_type(rig):
    node = rig.node("py_recorder")
    everything = node.subscribe_all()
    py = rig.node("py_talker").publisher("arm1/joint", Float64)
    cpp_publisher(rig, "cpp/count", 3)
    assert py.wait_for_subscribers(1, 20)
    for i in range(3):
        py.publish(Float64(data=i))
    got = take(everything, 6)
    by_topic = {}
    for msg, info in got:
        by_topic.setdefault(info.topic, []).append((msg, info))
    assert sorted(by_topic) == ["arm1/joint", "cpp/count"]
    assert [m for m, _ in by_topic["arm1/joint"]] == [Float64(data=0.0), Float64(data=1.0), Float64(data=2.0)]
    assert [m for m, _ in by_topic["cpp/count"]] == [Int64(data=1), Int64(data=2), Int64(data=3)]
    msg, info = by_topic["cpp/count"][0]
    assert info.type_name == "gecko.msgs.Int64" and info.channel.topic == "cpp/count"
    assert info.channel.channel == wire.channel_of(rig.key, "cpp/count")
    assert info.channel.publishers[0].id == info.publisher_id and info.channel.schema is not None
    assert by_topic["arm1/joint"][0][1].channel.publishers[0].node == "py_talker"
    # a publisher that starts after the subscription, of a type Python does not know: plain dicts
    late = rig.node("py_late")
    Odd = gecko.define("test.Odd", [("n", gecko.message.I32)])
    odd = late.publisher("late/odd", Odd)
    assert odd.wait_for_subscribers(1, 20)
    odd.publish(Odd(n=7))
    msg, info = take(everything, 1)[0]
    assert (msg, info.topic, info.type_name) == ({"n": 7}, "late/odd", "test.Odd")
    assert info.channel.schema.find("test.Odd").field_list() == "n"
    s = everything.stats()
    assert s.delivered == 7 and s.unlisted == 0 and s.decode_errors == 0


def test_a_latched_value_reaches_a_key_wide_subscriber_named_by_its_topic(rig):
    pub = rig.node("py_map").publisher("map/latest", String, latched=True)
    pub.publish(String(data="the map"))
    everything = rig.node("py_late_recorder").subscribe_all()
    msg, info = take(everything, 1)[0]
    assert (msg, info.topic, info.latched) == (String(data="the map"), "map/latest", True)


def test_service_traffic_passes_a_key_wide_subscriber_by(rig):
    node = rig.node("py_both")
    everything = node.subscribe_all()
    node.service("add_one", Int64, Int64, lambda r: Int64(data=r.data + 1))
    node.spin_in_background()
    eventually(lambda: any(c.service and c.topic == "add_one" for c in node.directory(timeout=20)), 20,
               "the server registered")
    client = rig.node("py_caller").client("add_one", Int64, Int64)
    assert client.call(Int64(data=1), timeout=20) == Int64(data=2)
    assert everything.receive(timeout=0.5) is None
    s = everything.stats()
    assert s.received == 0 and s.malformed == 0 and s.unlisted == 0


def test_a_filter_takes_only_what_it_matches(rig):
    node = rig.node("py_arm_recorder")
    arm1 = node.subscribe_all(topics=("arm1/*",))
    strings = node.subscribe_all(types=("gecko.msgs.Str?ng",))
    talker = rig.node("py_arms")
    pubs = {t: talker.publisher(t, c) for t, c in (("arm1/a", Float64), ("arm2/a", Float64),
                                                   ("arm1/name", String), ("log", String))}
    for p in pubs.values():
        assert p.wait_for_subscribers(2, 20)
    deadline = time.monotonic() + 20
    seen1, seen2 = set(), set()
    while (seen1 != {"arm1/a", "arm1/name"} or seen2 != {"arm1/name", "log"}) and time.monotonic() < deadline:
        for t, p in pubs.items():
            p.publish(p.cls(data=1.0) if p.cls is Float64 else p.cls(data="x"))
        for sub, seen in ((arm1, seen1), (strings, seen2)):
            got = sub.receive(timeout=0.1)
            while got is not None:
                seen.add(got[1].topic)
                got = sub.receive(timeout=0)
    assert seen1 == {"arm1/a", "arm1/name"} and seen2 == {"arm1/name", "log"}


def test_cpp_subscribe_all_hears_a_python_publisher_and_its_schema(rig):
    cpp = rig.spawn([bin_path("gecko_test_node"), "all", "--topic", "py/*", "--count", "2", "--timeout-ms", "20000"])
    cpp.wait_line("^ready$", 20)
    node = rig.node("py_source")
    other = node.publisher("elsewhere", String)
    pub = node.publisher("py/pose", gecko.msgs.Pose)
    assert pub.wait_for_subscribers(1, 20)
    assert other.subscriber_count() == 1  # a key-wide subscriber hears the whole key; its filter drops the rest
    other.publish(String(data="not for it"))
    pub.publish(gecko.msgs.Pose())
    pub.publish(gecko.msgs.Pose())
    line = cpp.wait_line("^recv ", 20)
    assert line.startswith("recv py/pose gecko.msgs.Pose seq 1 fields position,orientation"), line
    assert cpp.wait(20) == 0, cpp.err


def test_the_directory_matches_gecko_list(rig):
    talker = rig.node("py_dir_talker")
    talker.publisher("chatter", String)
    talker.service("add", Int64, Int64, lambda r: r)
    cpp_publisher(rig, "cpp/nums")
    node = rig.node("py_dir_reader")
    events = []
    with node.watch_directory(events.append):
        eventually(lambda: {c.topic for c in node.directory(timeout=20)} >= {"chatter", "cpp/nums", "add"}, 20,
                   "the directory to list chatter, cpp/nums and add")
        entries = {(c.service, c.topic): c for c in node.directory()}
        ls = rig.spawn([bin_path("gecko"), "list", "--key", rig.key, "--json"])
        assert ls.wait(20) == 0, ls.err
        graph = json.loads("\n".join(ls.out))
        listed = {(False, t["name"]): t["type"] for t in graph["topics"]}
        listed.update({(True, s["name"]): s["type"] for s in graph["services"]})
        assert {k: c.type_name for k, c in entries.items()} == listed
        table = core_list(rig.core, rig.key)  # the core's own list answer carries the channel ids
        channels = {(False, t["name"]): t["channel"] for t in table["topics"]}
        channels.update({(True, s["name"]): s["channel"] for s in table["services"]})
        assert {k: c.channel for k, c in entries.items()} == channels
        for (service, name), c in entries.items():
            assert c.channel == (0 if service else wire.channel_of(rig.key, name))
            assert c.type_hash == wire.type_hash(c.type_name)
        assert entries[(True, "add")].schema.find("gecko.msgs.Int64").field_list() == "data"
        assert [p.node for p in entries[(False, "cpp/nums")].publishers] == ["test_pub"]
        # the watch hears what exists, from spin()
        eventually(lambda: node.spin_once(0.05) >= 0 and {e.channel.topic for e in events
                                                          if e.kind == "added"} >= {"chatter", "cpp/nums", "add"},
                   20, "the watch to hear every entry")
        talker.close()  # chatter and add go
        eventually(lambda: node.spin_once(0.05) >= 0 and {e.channel.topic for e in events
                                                          if e.kind == "removed"} == {"chatter", "add"},
                   20, "the watch to hear chatter and add go")


def test_no_directory_without_discovery():
    node = gecko.Node("keywide_test", "alone", discovery=False)
    try:
        with pytest.raises(gecko.Error, match="runs without discovery: there is no directory") as e:
            node.directory()
        assert e.value.code == "discovery"
        with pytest.raises(gecko.Error, match="watch_directory needs discovery"):
            node.watch_directory(print)
    finally:
        node.close()


def test_the_directory_is_asked_again_after_a_core_restart(rig):
    node = rig.node("py_dir_follower")
    source = rig.node("py_dir_source")
    source.publisher("persist", String)
    events = []
    node.watch_directory(events.append)

    def heard(kind, topic):
        node.spin_once(0.05)
        return any(e.kind == kind and e.channel.topic == topic for e in events)

    eventually(lambda: heard("added", "persist"), 20, "persist added")
    port = rig.core.port
    rig.core.stop()
    rig.core = Core(rig.key, listen="tcp://127.0.0.1:%d" % port)
    # a topic of the new core's: only a node that asked this core for its directory hears of it
    source.publisher("after", String)
    eventually(lambda: heard("added", "after"), 30, "a topic of the new core")
    assert not any(e.kind == "removed" for e in events)  # nothing is removed because the core went away


def test_a_channel_id_collision_is_refused(rig):
    # 'arm/joint217000' and 'arm/joint5676' hash alike (DISCOVERY.md 2.4's vector): frames could not tell them apart
    assert wire.fnv1a32("arm/joint217000") == wire.fnv1a32("arm/joint5676")
    first = rig.node("py_first").publisher("arm/joint5676", Float64)
    assert rig.node("py_first_check").wait_for_core(20)
    eventually(lambda: any(c.topic == "arm/joint5676" for c in rig.nodes[1].directory(timeout=20)), 20,
               "the first topic registered")
    node = rig.node("py_second")
    second = node.publisher("arm/joint217000", Float64)
    sub = node.subscriber("arm/joint217000", Float64)
    eventually(lambda: second.refused is not None and sub.refused is not None, 20, "the core's collision errors")
    with pytest.raises(gecko.Error, match="geckocore refused it: topic 'arm/joint217000' has the channel id of "
                                          "topic 'arm/joint5676'") as e:
        second.publish(Float64(data=1.0))
    assert e.value.code == "discovery"
    # the first keeps its name; the refused subscriber takes none of its messages
    for _ in range(20):
        first.publish(Float64(data=2.0))
    assert sub.receive(timeout=1.0) is None


@pytest.mark.skipif(shm.UNAVAILABLE != "", reason="no shared memory for Python")
def test_a_key_wide_subscriber_reads_cpp_publishers_over_shared_memory(rig):
    node = rig.node("py_shm_recorder")
    everything = node.subscribe_all()
    cpp_publisher(rig, "shm/words", 4, "string")
    got = take(everything, 4)
    assert [(m, i.topic, i.type_name) for m, i in got] == [
        (String(data=str(k)), "shm/words", "gecko.msgs.String") for k in range(1, 5)]
    assert node.shm_info()["frames"] >= 4
    assert "shm" in [s for _, s in node._links_report()]


def test_echo_a_glob(rig):
    talker = rig.node("py_globbed")
    pubs = [talker.publisher(t, String) for t in ("arm1/a", "arm1/b", "arm2/c")]
    echo = rig.spawn([python_exe(), "-m", "gecko", "echo", "--key", rig.key, "arm1/*", "--count", "4", "--json",
                      "--with-info"])
    for p in pubs:
        assert p.wait_for_subscribers(1, 20)
    for i in range(2):
        for p in pubs:
            p.publish(String(data="%s %d" % (p.topic, i)))
    assert echo.wait(20) == 0, echo.err
    lines = [json.loads(l) for l in echo.out]
    assert sorted((l["topic"], l["message"]["data"]) for l in lines) == [
        ("arm1/a", "arm1/a 0"), ("arm1/a", "arm1/a 1"), ("arm1/b", "arm1/b 0"), ("arm1/b", "arm1/b 1")]
    assert all(l["type"] == "gecko.msgs.String" for l in lines)
    eventually(lambda: pubs[2].subscriber_count() == 0, 20, "the first echo gone")
    text = rig.spawn([python_exe(), "-m", "gecko", "echo", "--key", rig.key, "*", "--count", "1"])
    eventually(lambda: pubs[2].subscriber_count() == 1, 20, "the second echo")
    pubs[2].publish(String(data="hi"))
    assert text.wait(20) == 0, text.err
    assert text.out[0].startswith("--- arm2/c #") and "gecko.msgs.String" in text.out[0] and text.out[1] == "data: hi"


def test_without_discovery_only_the_whole_key_comes_unnamed():
    node = gecko.Node("keywide_test", "alone", discovery=False)
    try:
        everything = node.subscribe_all()
        some = node.subscribe_all(topics=("a/*",))
        pub = node.publisher("a/b", String)
        assert pub.wait_for_subscribers(2, 20)
        pub.publish(String(data="x"))
        msg, info = everything.receive(timeout=20)
        assert (msg, info.topic, info.channel) == ({"data": "x"}, "", None)  # no directory: no name, no type
        assert some.receive(timeout=0.5) is None
    finally:
        node.close()


def test_an_older_core_keeps_no_directory():
    """A core before the directory answers watch_directory with unknown_type
    (DISCOVERY.md 4.1): directory() says so, the whole key comes unnamed."""
    node = gecko.Node("keywide_test", "old_core_user", core="127.0.0.1:9", multicast_enabled=False)
    try:
        everything = node.subscribe_all()
        answer = discovery.pack("error", s=node.session, instance=1, id=0, code="unknown_type",
                                message="unknown message type 'watch_directory'")
        node._reactor.post(lambda: node._discovery.on_message(answer, time.monotonic()))
        with pytest.raises(gecko.Error, match="^the geckocore of key 'keywide_test' keeps no channel directory "
                                              r"\(a version older than this node's\)$") as e:
            node.directory(timeout=20)
        assert e.value.code == "discovery"
        pub = node.publisher("t", String)
        assert pub.wait_for_subscribers(1, 20)
        pub.publish(String(data="x"))
        msg, info = everything.receive(timeout=20)
        assert info.topic == "" and info.channel is None
    finally:
        node.close()
