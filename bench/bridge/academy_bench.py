#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# academy_bench.py: gecko-bridge's academy endpoints (docs/ACADEMY.md), as a
# page sees them, against real programs on loopback: geckocore, gecko-bridge
# --academy-sim-command (its open starts gecko-sim --robots arm --joints 2),
# and the brain runner the bridge starts. The page is a WebSocket client
# (python3-websockets); nothing is simulated.
#
#   acks       each manager order sent -> its answer received on the client's
#              socket, p50/p99 over --presses orders each (open: --opens, since
#              each one ends gecko-sim and starts it again). Baselines: Ping on
#              the same socket (answered at once on the bridge's I/O thread:
#              the WebSocket round trip), and the simulation's control service
#              called directly from Gecko's Python package (what the service
#              itself costs, with no bridge).
#   brain      a brain that reads the arm's angles and sets its targets, at
#              10, 50, 100 and 500 Hz requested: the frequency the runner's
#              #freq reports give (mean over --seconds), and the CPU of the
#              brain runner, the bridge and gecko-sim over that span (% of one
#              core). Baseline: the same code loaded, not playing (the runner's
#              HAL still steps the simulation at 100 Hz).
#   gui        a brain publishing a 640x480 rgb8 image (a moving gradient, new
#              each iteration) at 30 Hz, one GUI page reading every frame:
#              frames/s delivered, new images among them, KiB per frame, the
#              bridge's CPU; next to the images/s the brain published (its
#              #freq report), at GUI frequencies of 10, 30 and 60 Hz.
#
# Run from a source tree with a build (Debian's python3: websockets, zmq, msgpack):
#   PYTHONPATH=python /usr/bin/python3 bench/bridge/academy_bench.py --bin build/bin [--markdown]
# Every wait is bounded (30 s); a side that stalls ends the run with status 2.
import argparse
import asyncio
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))

try:
    import websockets
except ImportError as err:
    sys.exit(f"academy_bench: needs python3-websockets in {sys.executable}: {err}")

import gecko  # noqa: E402
from gecko.msgs.sim import ControlReply, ControlRequest  # noqa: E402

WAIT = 30.0  # s: a hang guard
TICK = os.sysconf("SC_CLK_TCK")


def fail(why):
    print(f"academy_bench: {why}", file=sys.stderr)
    sys.exit(2)


def percentile(values, p):
    v = sorted(values)
    return v[min(len(v) - 1, int(p * len(v)))]


def cpu_seconds(pid):
    """User + system CPU time of process `pid` (all its threads), s."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def child_of(parent, needle):
    """The pid of a child of `parent` whose command line contains `needle`."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmdline = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if ppid == parent and needle in cmdline:
            return int(entry)
    return None


class Cpu:
    """CPU % of one core of some processes over a span."""

    def __init__(self, pids):
        self.pids = pids
        self.t0 = time.monotonic()
        self.c0 = {name: cpu_seconds(pid) for name, pid in pids.items()}

    def percent(self):
        span = time.monotonic() - self.t0
        return {name: 100.0 * (cpu_seconds(pid) - self.c0[name]) / span for name, pid in self.pids.items()}


class Socket:
    """An academy WebSocket; keeps what it was sent, with arrival times."""

    def __init__(self, ws):
        self.ws = ws
        self.seen = []

    async def send(self, text):
        await self.ws.send(text if isinstance(text, str) else json.dumps(text))

    async def expect(self, matches, what, seconds=WAIT):
        deadline = time.monotonic() + seconds
        while True:
            for i, (t, m) in enumerate(self.seen):
                if matches(m):
                    del self.seen[: i + 1]
                    return t, m
            self.seen.clear()
            left = deadline - time.monotonic()
            if left <= 0:
                fail(f"no {what} within {seconds} s")
            try:
                m = await asyncio.wait_for(self.ws.recv(), left)
            except asyncio.TimeoutError:
                continue
            self.seen.append((time.perf_counter(), m))


def answer_to(command):
    def matches(m):
        try:
            return json.loads(m).get("data", {}).get("command") == command
        except ValueError:
            return False
    return matches


async def order(manager, command):
    """Sends an order; returns (ms to its answer, the answer)."""
    t0 = time.perf_counter()
    await manager.send({"command": command, "data": {}})
    t1, m = await manager.expect(answer_to(command), f"answer to {command}")
    answer = json.loads(m)
    if answer["command"] != "PingDone":
        fail(f"{command} refused: {answer}")
    return 1000.0 * (t1 - t0), answer


def table(title, header, rows, markdown):
    if markdown:
        print(f"\n#### {title}\n")
        print("| " + " | ".join(header) + " |")
        print("| " + " | ".join(["---"] + ["---:"] * (len(header) - 1)) + " |")
        for r in rows:
            print("| " + " | ".join(r) + " |")
    else:
        print(f"\n{title}")
        widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
        for r in [header] + rows:
            print("  ".join(str(x).rjust(w) if i else str(x).ljust(w) for i, (x, w) in enumerate(zip(r, widths))))


ARM_BRAIN = """\
import HAL
target = [0.6, -0.4]
while True:
    angles = HAL.get_joint_angles()
    HAL.set_joint_targets([a + 0.2 * (t - a) for a, t in zip(angles, target)])
"""

# A 640x480 gradient that moves each iteration: every image is new.
CAMERA_BRAIN = """\
import GUI
W, H = 640, 480
base = bytes(((x * 255) // W) for x in range(W)) * 2
n = 0
while True:
    n = (n + 8) % W
    row = bytes(v for x in range(W) for v in (base[x + n], 128, 255 - base[x + n]))
    GUI.show_image(row * H, width=W, height=H)
"""


async def load_and_play(code, brain, hz):
    await code.send('#freq{"brain": %d}' % hz)
    await code.expect(lambda m: m.startswith("#freq"), "#freq answer")
    await code.send("#code" + brain)
    await code.expect(lambda m: m == "#exec" or m.startswith("#erro"), "#exec")
    await code.send("#play")
    await code.expect(lambda m: m == "#play", "#play")


async def stop_brain(code):
    await code.send("#stop")
    await code.expect(lambda m: m == "#stop", "#stop")


async def frequency_reports(code, seconds):
    """The #freq reports of a span of `seconds` (after the next one)."""
    await code.expect(lambda m: m.startswith("#freq{") and '"brain_target"' in m, "a #freq report")
    reports = []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        _, m = await code.expect(lambda m: m.startswith("#freq{") and '"brain_target"' in m, "#freq reports")
        reports.append(json.loads(m[5:]))
    return reports


async def run(args):
    bin_dir = args.bin
    for name in ("geckocore", "gecko-bridge", "gecko-sim"):
        if not os.path.exists(os.path.join(bin_dir, name)):
            fail(f"{bin_dir}/{name} is missing: build it first")
    key = f"academy-bench-{os.getpid()}"
    ipc = tempfile.mkdtemp(prefix="gecko-academy-bench-")
    base = {k: v for k, v in os.environ.items() if not k.startswith("GECKO_")}
    python_path = os.path.join(HERE, "..", "..", "python")
    base["PYTHONPATH"] = python_path + (os.pathsep + base["PYTHONPATH"] if base.get("PYTHONPATH") else "")
    procs = []
    try:
        core = subprocess.Popen([os.path.join(bin_dir, "geckocore"), "--key", key, "--listen", "tcp://127.0.0.1:*",
                                 "--no-multicast", "--door", "0"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                text=True, env=base)
        procs.append(core)
        m = re.search(r"listening on tcp://([0-9.]+:\d+)", core.stdout.readline())
        if not m:
            fail("geckocore did not say where it listens")
        env = {**base, "GECKO_KEY": key, "GECKO_CORE": m.group(1), "GECKO_NO_MULTICAST": "1", "GECKO_IPC_DIR": ipc}
        sim_command = f"{shlex.quote(os.path.join(bin_dir, 'gecko-sim'))} --robots arm --joints 2"
        bridge = subprocess.Popen([os.path.join(bin_dir, "gecko-bridge"), "--listen", "127.0.0.1:0",
                                   "--academy-sim-command", sim_command, "--academy-python", sys.executable],
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
        procs.append(bridge)
        port = None
        deadline = time.monotonic() + WAIT
        while port is None and time.monotonic() < deadline:
            line = bridge.stdout.readline()
            if not line:
                fail("gecko-bridge exited")
            m = re.search(r"serving https?://127\.0\.0\.1:(\d+)/", line)
            port = m and m.group(1)
        if port is None:
            fail("gecko-bridge did not say where it serves")
        url = f"ws://127.0.0.1:{port}/academy"
        node = gecko.Node(key, "academy_bench", core=env["GECKO_CORE"], multicast_enabled=False, ipc_directory=ipc)
        try:
            async with websockets.connect(url + "/manager") as m_ws, websockets.connect(url + "/code") as c_ws:
                manager, code = Socket(m_ws), Socket(c_ws)
                await acks(args, manager, node)
                await brain(args, manager, code, bridge.pid)
                await gui(args, code, url, bridge.pid)
        finally:
            node.close()
    finally:
        for p in reversed(procs):
            p.terminate()
            try:
                p.wait(20)
            except subprocess.TimeoutExpired:
                p.kill()
        shutil.rmtree(ipc, ignore_errors=True)


async def acks(args, manager, node):
    opens = [(await order(manager, "open"))[0] for _ in range(args.opens)]
    times = {"stop": [], "resume": [], "reset": [], "Ping": []}
    for _ in range(args.presses):
        for command in times:
            times[command].append((await order(manager, command))[0])
    # Baseline: the control services without the bridge, from Gecko's Python package.
    direct = {}
    for command in ("stop", "resume", "reset"):
        client = node.client("sim/control/" + command, ControlRequest, ControlReply)
        client.call(ControlRequest(requester="academy_bench"), timeout=WAIT)  # connected
        direct[command] = []
        for _ in range(args.presses):
            t0 = time.perf_counter()
            reply = client.call(ControlRequest(requester="academy_bench"), timeout=WAIT)
            direct[command].append(1000.0 * (time.perf_counter() - t0))
            if not reply.ok:
                fail(f"sim/control/{command}: {reply.error}")
    rows = []
    for command, label in (("open", "Start (open)"), ("stop", "Pause (stop)"), ("resume", "Resume"), ("reset", "Reset")):
        t = opens if command == "open" else times[command]
        d = direct.get(command)
        rows.append([label, f"{percentile(t, 0.5):.2f}", f"{percentile(t, 0.99):.2f}",
                     f"{percentile(d, 0.5):.2f}" if d else "–", f"{percentile(d, 0.99):.2f}" if d else "–", str(len(t))])
    rows.append(["Ping (the socket's round trip)", f"{percentile(times['Ping'], 0.5):.2f}",
                 f"{percentile(times['Ping'], 0.99):.2f}", "–", "–", str(len(times["Ping"]))])
    table("Acknowledgement latency: order sent -> answer at the client's socket, ms",
          ["order", "p50", "p99", "service direct p50", "service direct p99", "orders"], rows, args.markdown)


async def brain(args, manager, code, bridge_pid):
    await order(manager, "resume")  # the runner's HAL steps it while the brain runs, as in RoboticsAcademy
    await code.send('#freq{"brain": 10}')
    await code.send("#code" + ARM_BRAIN)
    await code.expect(lambda m: m == "#exec", "#exec")
    runner, sim = child_of(bridge_pid, "gecko.academy.runner"), child_of(bridge_pid, "gecko-sim")
    if not runner or not sim:
        fail(f"the brain runner ({runner}) or gecko-sim ({sim}) is not a child of the bridge")
    pids = {"runner": runner, "bridge": bridge_pid, "sim": sim}
    rows = []
    await asyncio.sleep(1.0)  # settle: the span measured is the benchmark's, not a synchronisation
    cpu = Cpu(pids)
    await asyncio.sleep(args.seconds)
    c = cpu.percent()
    rows.append(["loaded, not playing (baseline)", "–", "–", f"{c['runner']:.1f}", f"{c['bridge']:.1f}", f"{c['sim']:.1f}"])
    for hz in (10, 50, 100, 500):
        await load_and_play(code, ARM_BRAIN, hz)
        cpu = Cpu(pids)
        reports = await frequency_reports(code, args.seconds)
        c = cpu.percent()
        achieved = sum(r["brain"] for r in reports) / len(reports)
        rows.append([f"{hz} Hz", f"{achieved:.1f}", f"{100.0 * achieved / hz:.1f} %", f"{c['runner']:.1f}",
                     f"{c['bridge']:.1f}", f"{c['sim']:.1f}"])
        await stop_brain(code)
    table(f"Brain frequency: requested -> achieved (mean of the #freq reports over {args.seconds:.0f} s), CPU % of one core",
          ["brain", "achieved Hz", "of requested", "runner CPU", "bridge CPU", "gecko-sim CPU"], rows, args.markdown)


async def gui(args, code, url, bridge_pid):
    rows = []
    for gui_hz in (10, 30, 60):
        await code.send('#freq{"gui": %d}' % gui_hz)
        async with websockets.connect(url + "/gui", max_size=None) as g:
            await load_and_play(code, CAMERA_BRAIN, 30)
            frames, images, size, last_frame = 0, 0, 0, None
            # Until the first frame with an image: the runner and the feed are up.
            deadline = time.monotonic() + WAIT
            while True:
                m = await asyncio.wait_for(g.recv(), WAIT)
                if '"image"' in m:
                    break
                if time.monotonic() > deadline:
                    fail("no #gui frame with an image")
            published = []  # the brain's #freq reports meanwhile: images it showed per second

            async def reports():
                async for r in code.ws:
                    if r.startswith("#freq{") and '"brain_target"' in r:
                        published.append(json.loads(r[5:])["brain"])
            reader = asyncio.ensure_future(reports())
            cpu = Cpu({"bridge": bridge_pid})
            end = time.monotonic() + args.seconds
            last_image = None
            while time.monotonic() < end:
                try:
                    m = await asyncio.wait_for(g.recv(), WAIT)
                except asyncio.TimeoutError:
                    fail("#gui frames stopped")
                f = json.loads(m[4:])
                frames += 1
                size += len(m)
                if f.get("image") and f["image"] != last_image:
                    images += 1
                    last_image = f["image"]
                last_frame = f
            reader.cancel()
            try:
                await reader
            except asyncio.CancelledError:
                pass
            c = cpu.percent()
            if last_frame is None or last_frame.get("shape") != [480, 640, 3]:
                fail(f"the frames are not 640x480: {last_frame and last_frame.get('shape')}")
            camera = sum(published) / len(published) if published else float("nan")
            rows.append([f"{gui_hz} Hz", f"{camera:.1f}", f"{frames / args.seconds:.1f}", f"{images / args.seconds:.1f}",
                         f"{size / max(frames, 1) / 1024:.0f}", f"{c['bridge']:.1f}"])
            await stop_brain(code)
    table(f"GUI: 640x480 frames/s delivered to one page over {args.seconds:.0f} s, next to the images/s the brain publishes",
          ["GUI frequency", "images published/s", "frames/s delivered", "new images/s delivered", "KiB/frame",
           "bridge CPU %"], rows, args.markdown)


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--bin", default="build/bin", help="where geckocore, gecko-bridge and gecko-sim are")
    p.add_argument("--presses", type=int, default=50, help="orders of each kind (stop, resume, reset, Ping)")
    p.add_argument("--opens", type=int, default=10, help="opens (each restarts gecko-sim)")
    p.add_argument("--seconds", type=float, default=5.0, help="span of each brain and GUI row")
    p.add_argument("--markdown", action="store_true")
    args = p.parse_args()
    print(f"academy_bench: {args.presses} orders each, {args.opens} opens, {args.seconds:.0f} s a row; "
          f"load average {os.getloadavg()[0]:.2f}")
    asyncio.run(run(args))


if __name__ == "__main__":
    main()
