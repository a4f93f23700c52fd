#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# bench_python.py: the Python package next to raw pyzmq, in one run.
#
#   1. Click lockstep: steps/s of gecko.click.Controller driving gecko-sim (C++)
#      next to a raw pyzmq REQ/REP round trip of the same sizes (a Control
#      request out, a Sensor answer back) against a REP echo process.
#   2. 64 B pub/sub: messages/s received by a Python subscriber (a gecko.msgs.Bytes
#      of 64 bytes from a Python publisher process) next to raw pyzmq PUB -> SUB
#      of 64-byte messages.
#
# Run from a build tree (needs geckocore and gecko-sim):
#   PYTHONPATH=python /usr/bin/python3 bench/python/bench_python.py --bin build/bin [--steps 5000] [--seconds 3]
import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))

import zmq  # noqa: E402

import gecko  # noqa: E402
import gecko.click  # noqa: E402
from gecko.msgs import Bytes  # noqa: E402


def start_core(bin_dir, key):
    p = subprocess.Popen([os.path.join(bin_dir, "geckocore"), "--key", key, "--listen", "tcp://127.0.0.1:*",
                          "--no-multicast", "--door", "0"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                         text=True)
    line = p.stdout.readline()
    return p, re.search(r"listening on tcp://([0-9.]+:\d+)", line).group(1)


# ---- children ----

def child_rep(endpoint_file, reply_size):
    ctx = zmq.Context()
    s = ctx.socket(zmq.REP)
    s.bind("tcp://127.0.0.1:*")
    with open(endpoint_file, "w") as f:
        f.write(s.getsockopt_string(zmq.LAST_ENDPOINT))
    reply = bytes(reply_size)
    while True:
        m = s.recv()
        if m == b"stop":
            s.send(b"")
            return
        s.send(reply)


def child_raw_pub(endpoint_file, seconds):
    ctx = zmq.Context()
    s = ctx.socket(zmq.PUB)
    s.setsockopt(zmq.SNDHWM, 100000)
    s.bind("tcp://127.0.0.1:*")
    with open(endpoint_file, "w") as f:
        f.write(s.getsockopt_string(zmq.LAST_ENDPOINT))
    msg = bytes(64)
    time.sleep(0.5)  # the subscriber connects (a raw PUB cannot know when)
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        for _ in range(1000):
            s.send(msg)
    s.close(0)


def child_gecko_pub(key, core, seconds):
    with gecko.Node(key, "bench_pub", core=core, multicast_enabled=False) as node:
        pub = node.publisher("bench64", Bytes)
        pub.wait_for_subscribers(1, 10)
        payload = gecko.encode(Bytes(bytes(64)))
        end = time.monotonic() + seconds
        publish = pub.publish_payload
        while time.monotonic() < end:
            for _ in range(1000):
                publish(payload)


# ---- measurements ----

def lockstep(bin_dir, steps):
    key = "pybench_ls_%d" % os.getpid()
    core, addr = start_core(bin_dir, key)
    env = dict(os.environ, GECKO_CORE=addr, GECKO_NO_MULTICAST="1")
    sim = subprocess.Popen([os.path.join(bin_dir, "gecko-sim"), "--key", key], env=env, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
    try:
        with gecko.Node(key, "bench_ctl", core=addr, multicast_enabled=False) as node:
            ctl = gecko.click.Controller(node, "sim", connect_timeout=10)
            ctl.handshake()
            control = ctl.make_control()
            sizes = (len(gecko.encode(gecko.msgs.click.Request(control=control))), 0)
            for _ in range(200):  # warm-up
                ctl.step(control)
            t = time.perf_counter()
            for _ in range(steps):
                r = ctl.step(control)
            dt = time.perf_counter() - t
            sensor_size = len(gecko.encode(gecko.msgs.click.Answer(sensor=r.sensor)))
            ctl.error("bench done")
    finally:
        sim.terminate()
        sim.wait(5)
        core.terminate()
        core.wait(5)
    return steps / dt, sizes[0], sensor_size


def raw_reqrep(steps, req_size, rep_size):
    with tempfile.TemporaryDirectory() as d:
        ep_file = os.path.join(d, "ep")
        child = subprocess.Popen([sys.executable, __file__, "--child", "rep", ep_file, str(rep_size)])
        while not os.path.exists(ep_file) or not open(ep_file).read():
            time.sleep(0.01)
        ctx = zmq.Context.instance()
        s = ctx.socket(zmq.REQ)
        s.connect(open(ep_file).read())
        req = bytes(req_size)
        for _ in range(200):
            s.send(req)
            s.recv()
        t = time.perf_counter()
        for _ in range(steps):
            s.send(req)
            s.recv()
        dt = time.perf_counter() - t
        s.send(b"stop")
        s.recv()
        s.close(0)
        child.wait(5)
    return steps / dt


def gecko_pubsub(bin_dir, seconds):
    key = "pybench_ps_%d" % os.getpid()
    core, addr = start_core(bin_dir, key)
    try:
        with gecko.Node(key, "bench_sub", core=addr, multicast_enabled=False) as node:
            sub = node.subscriber("bench64", Bytes, depth=100000)
            child = subprocess.Popen([sys.executable, __file__, "--child", "gecko_pub", key, addr, str(seconds)])
            first = sub.receive(timeout=20)
            assert first is not None, "no message from the publisher"
            n = 0
            t = time.perf_counter()
            receive = sub.receive
            while receive(timeout=1.0) is not None:
                n += 1
            dt = time.perf_counter() - t - 1.0
            child.wait(10)
            stats = sub.stats()
    finally:
        core.terminate()
        core.wait(5)
    return n / dt, stats


def raw_pubsub(seconds):
    with tempfile.TemporaryDirectory() as d:
        ep_file = os.path.join(d, "ep")
        child = subprocess.Popen([sys.executable, __file__, "--child", "raw_pub", ep_file, str(seconds)])
        while not os.path.exists(ep_file) or not open(ep_file).read():
            time.sleep(0.01)
        s = zmq.Context.instance().socket(zmq.SUB)
        s.setsockopt(zmq.RCVHWM, 100000)
        s.setsockopt(zmq.SUBSCRIBE, b"")
        s.setsockopt(zmq.RCVTIMEO, 20000)
        s.connect(open(ep_file).read())
        s.recv()
        s.setsockopt(zmq.RCVTIMEO, 1000)
        n = 0
        t = time.perf_counter()
        try:
            while True:
                s.recv()
                n += 1
        except zmq.Again:
            pass
        dt = time.perf_counter() - t - 1.0
        child.wait(10)
        s.close(0)
    return n / dt


def main():
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        kind, rest = sys.argv[2], sys.argv[3:]
        if kind == "rep":
            return child_rep(rest[0], int(rest[1]))
        if kind == "raw_pub":
            return child_raw_pub(rest[0], float(rest[1]))
        if kind == "gecko_pub":
            return child_gecko_pub(rest[0], rest[1], float(rest[2]))
    p = argparse.ArgumentParser(description="the Python package next to raw pyzmq")
    p.add_argument("--bin", required=True, help="the build's bin directory (geckocore, gecko-sim)")
    p.add_argument("--steps", type=int, default=5000)
    p.add_argument("--seconds", type=float, default=3.0)
    a = p.parse_args()
    gecko_steps, req_size, rep_size = lockstep(a.bin, a.steps)
    raw_steps = raw_reqrep(a.steps, req_size, rep_size)
    print("lockstep: gecko.click.Controller -> gecko-sim  %8.0f steps/s  %6.1f us/step" % (
        gecko_steps, 1e6 / gecko_steps))
    print("          raw pyzmq REQ/REP (%d B / %d B)     %8.0f round trips/s  %6.1f us  (gecko/raw per step: %.2fx)" % (
        req_size, rep_size, raw_steps, 1e6 / raw_steps, raw_steps / gecko_steps))
    g_rate, stats = gecko_pubsub(a.bin, a.seconds)
    r_rate = raw_pubsub(a.seconds)
    print("pub/sub 64 B: gecko Python -> Python subscriber %8.0f msgs/s (drops %d, overwritten %d)" % (
        g_rate, stats.drops, stats.overwritten))
    print("              raw pyzmq PUB -> SUB                %8.0f msgs/s  (gecko/raw: %.2fx)" % (
        r_rate, g_rate / r_rate))


if __name__ == "__main__":
    sys.exit(main())
