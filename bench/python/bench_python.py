#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# bench_python.py: the Python package next to raw pyzmq, in one run.
#
#   1. Click lockstep: steps/s of gecko.click.Controller driving gecko-sim (C++)
#      next to a raw pyzmq REQ/REP round trip of the same sizes (the frames of
#      a Control request out, of a Sensor answer back) against a Python REP
#      echo process, over ipc as the Gecko nodes on one host link.
#      Gecko per step: check and encode the Control request, publish it, wait
#      for the answer, decode it into a gecko.msgs.click.Answer; raw: send the
#      request's number of bytes, recv the answer's number of bytes. Also the
#      controller thread's CPU time per step (time.thread_time): Python's own
#      work, apart from waiting for the other process.
#   2. 64 B pub/sub into a Python subscriber. The same sender for both sides:
#      a Python process with a raw pyzmq PUB socket (tcp, loopback) sending,
#      for --seconds, gecko frames of a gecko.msgs.Bytes of 64 bytes (48 B
#      header + 72 B msgpack = 120 B, sequence numbers 1, 2, ..., built a
#      thousand at a time, so the sender runs as fast for every row). Rows:
#        raw pyzmq SUB      recv() per message in a loop (bytes, nothing checked)
#        gecko receive()    Subscriber.receive(timeout) per message in a loop:
#                           header checked, sequence/drop accounting, keep-last-N
#                           queue, decoded into a gecko.msgs.Bytes
#        gecko receive_payload()  the same loop and checks, no decode: the
#                           msgpack payload as bytes
#      msgs/s counts the messages the loop got between the first and the last
#      (a subscriber that cannot keep up loses the rest: the raw SUB at its
#      queue limit, Gecko's keep-last-N queue by overwriting its oldest; the
#      counts are printed); "sender" is the rate the sender achieved in that
#      row (a row cannot beat it); "CPU/msg" is the subscriber process's CPU
#      time (all its threads) per message the loop got. A last row has a
#      gecko Publisher (Python) as the sender over ipc: both ends Gecko.
#
# Run from a build tree (needs geckocore and gecko-sim):
#   PYTHONPATH=python /usr/bin/python3 bench/python/bench_python.py --bin build/bin [--steps 5000] [--seconds 3]
# With the optional compiled helper (build/python/gecko_speedups*.so, built by
# CMake where python3-dev is installed), put build/python on PYTHONPATH too:
#   PYTHONPATH=python:build/python ...        (GECKO_PYTHON_SPEEDUPS=0: without it)
# The first line printed says which path the subscriber's node takes.
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
    s.bind("ipc://" + os.path.join(os.path.dirname(endpoint_file), "rep.sock"))  # ipc: as the Gecko nodes link
    with open(endpoint_file, "w") as f:
        f.write(s.getsockopt_string(zmq.LAST_ENDPOINT))
    reply = bytes(reply_size)
    while True:
        m = s.recv()
        if m == b"stop":
            s.send(b"")
            return
        s.send(reply)


def child_frames(endpoint_file, key, seconds):
    """The sender of the pub/sub rows: gecko frames from a raw PUB socket."""
    ctx = zmq.Context()
    s = ctx.socket(zmq.PUB)
    s.setsockopt(zmq.SNDHWM, 100000)
    s.bind("tcp://127.0.0.1:*")
    with open(endpoint_file, "w") as f:
        f.write(s.getsockopt_string(zmq.LAST_ENDPOINT))
    header = gecko.wire._HEADER
    channel = gecko.wire.channel_of(key, "bench64")
    type_hash = gecko.wire.type_hash(Bytes.__gecko_type__)
    payload = gecko.encode(Bytes(bytes(64)))
    sender = gecko.node.new_id()
    time.sleep(0.5)  # the subscriber connects (a raw PUB cannot know when)
    send = s.send
    seq = 0
    start = time.monotonic()
    end = start + seconds
    while time.monotonic() < end:
        t = time.time_ns()
        chunk = [header.pack(channel, b"GK", 2, 0, len(payload), seq + i, sender, t, type_hash) + payload
                 for i in range(1, 1001)]
        seq += 1000
        for f in chunk:
            send(f)
    elapsed = time.monotonic() - start
    print("%d %.6f" % (seq, elapsed), flush=True)
    s.close(1000)


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

def lockstep(bin_dir, steps, spin_us=None):
    key = "pybench_ls_%d" % os.getpid()
    core, addr = start_core(bin_dir, key)
    env = dict(os.environ, GECKO_CORE=addr, GECKO_NO_MULTICAST="1")
    sim = subprocess.Popen([os.path.join(bin_dir, "gecko-sim"), "--key", key], env=env, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
    try:
        with gecko.Node(key, "bench_ctl", core=addr, multicast_enabled=False) as node:
            kw = {} if spin_us is None else {"spin_us": spin_us}
            ctl = gecko.click.Controller(node, "sim", connect_timeout=10, **kw)
            ctl.handshake()
            control = ctl.make_control()
            for _ in range(200):  # warm-up
                ctl.step(control)
            c = time.thread_time()
            t = time.perf_counter()
            for _ in range(steps):
                r = ctl.step(control)
            dt = time.perf_counter() - t
            cpu = time.thread_time() - c
            mc = gecko.msgs.click
            # the frames as they travelled: 48 B header + the request / answer
            req_size = gecko.wire.HEADER_SIZE + len(gecko.encode(mc.Request(
                controller_id=ctl.id, request_id=ctl._last_id, kind=mc.RequestKind.control,
                answer_subscriber=ctl._answers.id, control=control)))
            rep_size = gecko.wire.HEADER_SIZE + len(gecko.encode(mc.Answer(
                controller_id=ctl.id, answers=ctl._last_id, kind=mc.AnswerKind.sensor, simulation="sim",
                sensor=r.sensor)))
            ctl.error("bench done")
            info = node.shm_info()
            transport = "shm" if info and info["frames"] else "ipc"
    finally:
        sim.terminate()
        sim.wait(5)
        core.terminate()
        core.wait(5)
    return steps / dt, cpu / steps * 1e6, req_size, rep_size, transport


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
        c = time.thread_time()
        t = time.perf_counter()
        for _ in range(steps):
            s.send(req)
            s.recv()
        dt = time.perf_counter() - t
        cpu = time.thread_time() - c
        s.send(b"stop")
        s.recv()
        s.close(0)
        child.wait(5)
    return steps / dt, cpu / steps * 1e6


def gecko_pubsub(bin_dir, seconds):
    """Both ends Gecko: a Python Publisher process -> Subscriber.receive()."""
    key = "pybench_ps_%d" % os.getpid()
    core, addr = start_core(bin_dir, key)
    try:
        with gecko.Node(key, "bench_sub", core=addr, multicast_enabled=False, receive_queue=100000) as node:
            sub = node.subscriber("bench64", Bytes, depth=100000)
            child = subprocess.Popen([sys.executable, __file__, "--child", "gecko_pub", key, addr, str(seconds)])
            first = sub.receive(timeout=20)
            assert first is not None, "no message from the publisher"
            n = 0
            c = time.process_time()
            t = time.perf_counter()
            receive = sub.receive
            while receive(timeout=1.0) is not None:
                n += 1
            dt = time.perf_counter() - t - 1.0
            cpu = time.process_time() - c
            child.wait(10)
            stats = sub.stats()
    finally:
        core.terminate()
        core.wait(5)
    return {"rate": n / dt, "cpu_us": cpu / max(n, 1) * 1e6, "stats": stats, "sender": None}


def _with_sender(seconds, key, measure):
    """Starts child_frames, runs measure(endpoint) -> (n, dt, cpu, extra), returns the row."""
    with tempfile.TemporaryDirectory() as d:
        ep_file = os.path.join(d, "ep")
        child = subprocess.Popen([sys.executable, __file__, "--child", "frames", ep_file, key, str(seconds)],
                                 stdout=subprocess.PIPE, text=True)
        while not os.path.exists(ep_file) or not open(ep_file).read():
            time.sleep(0.01)
        n, dt, cpu, extra = measure(open(ep_file).read())
        sent, elapsed = child.stdout.read().split()
        child.wait(10)
    return {"rate": n / dt, "cpu_us": cpu / max(n, 1) * 1e6, "sender": int(sent) / float(elapsed), "n": n,
            "sent": int(sent), "stats": extra}


def raw_pubsub(seconds):
    def measure(endpoint):
        s = zmq.Context.instance().socket(zmq.SUB)
        s.setsockopt(zmq.RCVHWM, 100000)
        s.setsockopt(zmq.SUBSCRIBE, b"")
        s.setsockopt(zmq.RCVTIMEO, 20000)
        s.connect(endpoint)
        s.recv()
        s.setsockopt(zmq.RCVTIMEO, 1000)
        n = 0
        recv = s.recv
        c = time.process_time()
        t = time.perf_counter()
        try:
            while True:
                recv()
                n += 1
        except zmq.Again:
            pass
        dt = time.perf_counter() - t - 1.0
        cpu = time.process_time() - c
        s.close(0)
        return n, dt, cpu, None
    return _with_sender(seconds, "pybench_raw", measure)


def gecko_subscriber(seconds, api):
    """A gecko Subscriber fed by child_frames; api: "receive" or "receive_payload"."""
    key = "pybench_sub_%d" % os.getpid()

    def measure(endpoint):
        with gecko.Node(key, "bench_sub", discovery=False, receive_queue=100000) as node:
            sub = node.subscriber("bench64", Bytes, depth=100000)
            node.connect(endpoint)
            receive = getattr(sub, api)
            assert receive(timeout=20) is not None, "no message from the sender"
            n = 0
            c = time.process_time()
            t = time.perf_counter()
            while receive(timeout=1.0) is not None:
                n += 1
            dt = time.perf_counter() - t - 1.0
            cpu = time.process_time() - c
            return n, dt, cpu, sub.stats()
    return _with_sender(seconds, key, measure)


def main():
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        kind, rest = sys.argv[2], sys.argv[3:]
        if kind == "rep":
            return child_rep(rest[0], int(rest[1]))
        if kind == "frames":
            return child_frames(rest[0], rest[1], float(rest[2]))
        if kind == "gecko_pub":
            return child_gecko_pub(rest[0], rest[1], float(rest[2]))
    p = argparse.ArgumentParser(description="the Python package next to raw pyzmq")
    p.add_argument("--bin", required=True, help="the build's bin directory (geckocore, gecko-sim)")
    p.add_argument("--steps", type=int, default=5000)
    p.add_argument("--seconds", type=float, default=3.0)
    p.add_argument("--rounds", type=int, default=3, help="rounds of each part (lockstep: gecko then raw)")
    a = p.parse_args()
    sp = gecko.node.speedups
    print("gecko %s: in-port drain by %s" % (gecko.__file__, "gecko_speedups (%s)" % sp.__file__ if sp else
                                            "pyzmq (pure Python)"))
    print("lockstep, %d steps per row, rounds alternate gecko (the Controller's default: it busy-polls for an "
          "answer up to spin_us=50 before it sleeps) / gecko with spin_us=0 / raw; requests travel over ipc, "
          "answers as the row says:" % a.steps)
    ls = []
    for i in range(a.rounds):
        gecko_steps, gecko_cpu, req_size, rep_size, transport = lockstep(a.bin, a.steps)
        sleep_steps, sleep_cpu, _, _, _ = lockstep(a.bin, a.steps, spin_us=0)
        raw_steps, raw_cpu = raw_reqrep(a.steps, req_size, rep_size)
        ls.append((gecko_steps, sleep_steps, raw_steps))
        print("  round %d: gecko.click.Controller -> gecko-sim (%s)          %7.0f steps/s  %6.1f us/step  "
              "(controller CPU %5.1f us)   gecko/raw per step: %.2fx" % (
                  i + 1, transport, gecko_steps, 1e6 / gecko_steps, gecko_cpu, raw_steps / gecko_steps))
        print("           gecko.click.Controller(spin_us=0) -> gecko-sim  %7.0f steps/s  %6.1f us/step  "
              "(controller CPU %5.1f us)   gecko/raw per step: %.2fx" % (
                  sleep_steps, 1e6 / sleep_steps, sleep_cpu, raw_steps / sleep_steps))
        print("           raw pyzmq REQ/REP %d B / %d B -> echo           %7.0f steps/s  %6.1f us/step  "
              "(requester CPU %5.1f us)" % (req_size, rep_size, raw_steps, 1e6 / raw_steps, raw_cpu))
    g, z, r = (sorted(x[k] for x in ls)[len(ls) // 2] for k in range(3))
    print("  medians over %d rounds: gecko %.0f steps/s (%.1f us), spin_us=0 %.0f (%.1f us), raw %.0f (%.1f us): "
          "gecko/raw per step %.2fx (spin_us=0: %.2fx)" % (a.rounds, g, 1e6 / g, z, 1e6 / z, r, 1e6 / r, r / g, r / z))
    print("  for comparison (quoted, not measured here): Click's documentation gives 160-250 us per step for its "
          "pclick (Python) <-> C++ demo pair; gecko here %.1f us" % (1e6 / g))
    print("pub/sub 64 B (120 B frames) into a Python subscriber, %g s per row, rounds of raw / receive() / "
          "receive_payload():" % a.seconds)
    print("  %-50s %9s %9s %9s %s" % ("subscriber (API)", "msgs/s", "sender/s", "CPU/msg", "vs raw (same round)"))

    def row(name, r, raw_rate, note=""):
        sender = "%9.0f" % r["sender"] if r["sender"] else "%9s" % "-"
        print("  %-50s %9.0f %s %6.2f us  %5.2fx%s" % (name, r["rate"], sender, r["cpu_us"], r["rate"] / raw_rate,
                                                       note))
    rows = {"raw": [], "receive": [], "receive_payload": []}
    for i in range(a.rounds):
        raw = raw_pubsub(a.seconds)
        rows["raw"].append(raw)
        row("round %d: raw pyzmq SUB: recv()" % (i + 1), raw, raw["rate"])
        for api, name in (("receive", "gecko Subscriber.receive() -> Bytes"),
                          ("receive_payload", "gecko Subscriber.receive_payload() -> bytes")):
            r = gecko_subscriber(a.seconds, api)
            rows[api].append(r)
            s = r["stats"]
            row("         " + name, r, raw["rate"], "  (received %d, drops %d, overwritten %d)" % (
                s.received, s.drops, s.overwritten))
    e2e = gecko_pubsub(a.bin, a.seconds)
    s = e2e["stats"]
    row("gecko Publisher (Python) -> receive(), ipc", e2e, rows["raw"][-1]["rate"],
        "  (vs the last raw row; drops %d, overwritten %d)" % (s.drops, s.overwritten))

    def median(api, key):
        v = sorted(r[key] for r in rows[api])
        return v[len(v) // 2]
    raw_rate, raw_cpu = median("raw", "rate"), median("raw", "cpu_us")
    print("  medians over %d rounds: raw %.0f msgs/s, %.2f us CPU/msg" % (a.rounds, raw_rate, raw_cpu))
    for api in ("receive", "receive_payload"):
        print("    %-16s %9.0f msgs/s (%.2fx raw), %.2f us CPU/msg (%.1fx raw)" % (
            api + "()", median(api, "rate"), median(api, "rate") / raw_rate, median(api, "cpu_us"),
            median(api, "cpu_us") / raw_cpu))


if __name__ == "__main__":
    sys.exit(main())
