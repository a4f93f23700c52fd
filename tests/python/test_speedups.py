# SPDX-License-Identifier: Apache-2.0
"""The optional compiled helper (python/speedups/gecko_speedups.cpp): loaded
when ctest says it was built for this python3 (GECKO_EXPECT_SPEEDUPS=1), never
with GECKO_PYTHON_SPEEDUPS=0 (the pure-Python runs of every test file), and
its drain() takes what pyzmq's recv() would, in order, without blocking."""

import os
import subprocess

import pytest
import zmq

import gecko
from gecko import node as gnode

from conftest import python_exe


def test_loaded_as_the_build_says():
    if os.environ.get("GECKO_PYTHON_SPEEDUPS") == "0":
        assert gnode.speedups is None
    elif os.environ.get("GECKO_EXPECT_SPEEDUPS") == "1":
        assert gnode.speedups is not None, "gecko_speedups was built for this python3 but did not load"
        assert gnode.speedups.libzmq_path() and os.path.exists(gnode.speedups.libzmq_path())


def test_the_switch_turns_it_off():
    env = dict(os.environ, GECKO_PYTHON_SPEEDUPS="0")
    r = subprocess.run([python_exe(), "-c", "import gecko.node as n; print(n.speedups)"], env=env,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stdout.strip() == "None", r.stdout + r.stderr


def test_drain_takes_every_frame_in_order():
    if gnode.speedups is None:
        pytest.skip("gecko_speedups not loaded (pure-Python run)")
    ctx = gecko.node.context()
    pub = ctx.socket(zmq.PUB)
    sub = ctx.socket(zmq.SUB)
    try:
        pub.setsockopt(zmq.SNDHWM, 0)
        sub.setsockopt(zmq.RCVHWM, 0)
        sub.setsockopt(zmq.SUBSCRIBE, b"")
        pub.bind("inproc://test-speedups-drain")
        sub.connect("inproc://test-speedups-drain")
        drain = gnode.speedups.drain
        assert drain(sub.underlying, 10) == []  # nothing waits: at once, no exception
        sent = [b"", b"x" * 100000] + [b"%d" % i for i in range(5000)]
        # the subscription reaches the PUB asynchronously: a first frame proves it (bounded)
        for _ in range(2000):
            pub.send(b"probe")
            if sub.poll(5):
                break
        else:
            pytest.fail("the inproc subscription never arrived")
        while drain(sub.underlying, 100):
            pass
        for f in sent:
            pub.send(f)
        assert sub.poll(5000)
        first = drain(sub.underlying, 3)
        assert len(first) == 3  # at most `max` a call
        got = [f for f in first + drain(sub.underlying, 100000) if f != b"probe"]  # (a late probe, if any)
        assert got == sent
        with pytest.raises(ValueError):
            drain(0, 1)
        with pytest.raises(TypeError):
            drain(sub.underlying)
    finally:
        pub.close(0)
        sub.close(0)
